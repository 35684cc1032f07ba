"""FederBoost that survives dropouts (issue 30 §2): with `dropout_tolerance` every secure sum of the fit is a
dropout-tolerant secure aggregation (`fedgauss.secagg`), and an owner that stops is left out of that sum and every
later one. The reference is independent of the protocol: the core's own building blocks (`LocalHistograms`,
`grow_tree`, `snap_to_grid`) on the pooled rows, with the dropped owner's rows taken out of exactly the sums it missed.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from fedgauss.federation import label_skew_split
from fedgauss.gbdt import GBDTClassifier, LocalHistograms, LogisticLoss, grid_exponent, grow_tree, snap_to_grid
from fedgauss.nflgbdt import FederBoostClassifier
from fedgauss.smc import DropoutError

KW = dict(n_estimators=4, max_depth=3)
K = 5


@pytest.fixture(scope='module')
def data():
    X, y = make_classification(1500, 8, n_informative=5, random_state=0)
    return label_skew_split(X[:1200], y[:1200], n_clients=K, theta=0.8, rng=1), X[1200:]


def reference(fb, clients, counts_out=(), grid_out=None, hist_out=None, given=None):
    """The model grown from the pooled rows where owner c's rows are left out of the class counts (`counts_out`), of
    tree t's grid scale (`grid_out[t]`) and of tree t's histograms (`hist_out[t]`): (base margin, trees). A tree of
    `given` ({t: tree}) is taken as it is instead of grown."""
    grid_out, hist_out = grid_out or {}, hist_out or {}
    X = np.vstack([c[0] for c in clients])
    y = np.concatenate([c[1] for c in clients]).astype(float)
    owner = np.repeat(np.arange(len(clients)), [len(c[0]) for c in clients])
    codes, layout = fb.binner_.transform(X), fb.binner_.layout_
    keep = ~np.isin(owner, list(counts_out))
    n, pos = keep.sum(), y[keep].sum()
    loss = LogisticLoss()
    base = loss.init_margin(np.array([0.0, 1.0]), np.array([n - pos, pos]))
    margin, provider, trees = np.full(len(y), base), LocalHistograms(codes, layout), []
    for t in range(fb.n_estimators):
        gh = loss.gradients(y, margin)
        in_grid = ~np.isin(owner, list(grid_out.get(t, ())))
        k = grid_exponent(float(np.abs(gh[in_grid]).sum(axis=0).max()), len(y))
        g, h, _ = snap_to_grid(gh[:, 0], gh[:, 1], k)
        gh = np.c_[g, h]
        gh[np.isin(owner, list(hist_out.get(t, ())))] = 0.0  # rows that are not there add nothing to a sum
        if t in (given or {}):
            tree = given[t]
            margin = margin + tree.value[tree.apply_binned(codes, fb.binner_.n_bins_)]
        else:
            provider.start_tree(gh)
            tree = grow_tree(provider, layout, **fb._grow_kw())
            margin = margin + provider.row_values(tree.value)
        trees.append(tree)
    return base, trees


def assert_same_model(fb, base, trees):
    assert fb.base_margin_ == base
    assert len(fb.trees_) == len(trees)
    for a, b in zip(fb.trees_, trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.bin, b.bin)
        np.testing.assert_array_equal(a.value, b.value)


def test_without_dropouts_the_pooled_core_to_the_bit(data):
    "At rho > 0 and nobody dropping, the model is the pooled core's (and today's protocol's), to the bit."
    clients, Xte = data
    fb = FederBoostClassifier(rng=0, dropout_tolerance=0.4, **KW).fit(clients)
    core = GBDTClassifier(**KW).fit(np.vstack([c[0] for c in clients]), np.concatenate([c[1] for c in clients]))
    np.testing.assert_array_equal(fb.decision_function(Xte), core.decision_function(Xte))
    assert_same_model(fb, *reference(fb, clients))
    assert fb.dropped_ == {}
    # one sum for the counts, then per tree one for the grid and one per level
    assert fb.sums_[0] == 'class counts' and fb.sums_.count('tree 0 grid') == 1
    t = fb.channel_.transcript
    from_owners = set(t[t.receiver == 'aggregator'].kind)
    assert from_owners == {'keys', 'shares', 'masked input', 'unmasking shares'}  # never a count in the clear


@pytest.mark.parametrize('stage', ['advertise', 'share', 'mask'])
def test_a_drop_in_the_first_sum_is_the_fit_without_that_owner(data, stage):
    "An owner that drops in the class counts' sum is as if its rows had never been there (the candidates are public)."
    clients, _ = data
    fb = FederBoostClassifier(rng=0, dropout_tolerance=0.2, drop={2: (0, stage)}, **KW).fit(clients)
    assert fb.dropped_ == {2: (0, stage)}
    every = {t: {2} for t in range(KW['n_estimators'])}
    assert_same_model(fb, *reference(fb, clients, counts_out={2}, grid_out=every, hist_out=every))


@pytest.mark.parametrize('stage', ['advertise', 'share', 'mask', 'unmask'])
def test_a_drop_mid_fit_leaves_the_owner_out_of_every_later_sum(data, stage):
    """An owner dropping in tree 2's grid sum: trees 0-1 had its rows, tree 2's grid scale has them only if it dropped
    after sending its masked input ('unmask'), and from tree 2's histograms on they are gone."""
    clients, _ = data
    probe = FederBoostClassifier(rng=0, dropout_tolerance=0.2, **KW).fit(clients)
    j = probe.sums_.index('tree 2 grid')
    fb = FederBoostClassifier(rng=0, dropout_tolerance=0.2, drop={3: (j, stage)}, **KW).fit(clients)
    assert fb.dropped_ == {3: (j, stage)}
    later = {t: {3} for t in range(2, KW['n_estimators'])}
    grid = later if stage != 'unmask' else {t: {3} for t in range(3, KW['n_estimators'])}
    assert_same_model(fb, *reference(fb, clients, grid_out=grid, hist_out=later))
    assert_gone_after(fb.channel_.transcript, 'party3')


def assert_gone_after(t, party):
    "The owner's last message is its `gone` notice, and nobody sends it anything after it."
    own = t[t.sender == party]
    assert own.kind.iloc[-1] == 'gone' and (own.kind == 'gone').sum() == 1
    after = t.loc[own.index[-1] :]
    assert not (after.receiver == party).any()


@pytest.mark.parametrize('stage', ['share', 'mask', 'unmask'])
def test_a_drop_inside_a_tree_finishes_the_fit(data, stage):
    """An owner that drops in a level's histogram sum: the aggregator grows that tree again from its root on the
    survivors' rows (a `restart`), so no tree mixes sums with and without them."""
    clients, Xte = data
    probe = FederBoostClassifier(rng=0, dropout_tolerance=0.2, **KW).fit(clients)
    j = probe.sums_.index('tree 1 grid') + 2  # tree 1, second level
    fb = FederBoostClassifier(rng=0, dropout_tolerance=0.2, drop={0: (j, stage)}, **KW).fit(clients)
    assert fb.dropped_ == {0: (j, stage)} and len(fb.trees_) == KW['n_estimators']
    # tree 1's grid scale had its rows; the tree was grown again from its root without them
    grid = {t: {0} for t in range(2, KW['n_estimators'])}
    hist = {t: {0} for t in range(1, KW['n_estimators'])}
    assert_same_model(fb, *reference(fb, clients, grid_out=grid, hist_out=hist))
    t = fb.channel_.transcript
    assert (t.kind == 'restart').sum() == K - 1 and set(t[t.kind == 'restart'].sender) == {'aggregator'}
    assert_gone_after(fb.channel_.transcript, 'party0')
    assert np.isfinite(fb.decision_function(Xte)).all()


def test_rho_k_dropouts_are_tolerated_and_one_more_stops_the_fit(data):
    clients, _ = data
    two = {1: (0, 'share'), 4: (3, 'mask')}
    fb = FederBoostClassifier(rng=0, dropout_tolerance=0.4, drop=two, **KW).fit(clients)  # floor(0.4 * 5) = 2
    assert fb.dropped_ == {1: (0, 'share'), 4: (3, 'mask')}
    three = {**two, 2: (5, 'advertise')}
    with pytest.raises(DropoutError, match=r'3 of 5 owners dropped .*party2 \(sum 5, advertise\).*tolerates \(2\)'):
        FederBoostClassifier(rng=0, dropout_tolerance=0.4, drop=three, **KW).fit(clients)


@pytest.mark.parametrize(
    'kw, message',
    [
        (dict(dropout_tolerance=-0.1), r'dropout_tolerance must be a number in \[0, 1\)'),
        (dict(dropout_tolerance=1.0), r'dropout_tolerance must be a number in \[0, 1\)'),
        (dict(dropout_tolerance=True), r'dropout_tolerance must be a number'),
        (dict(dropout_tolerance='0.1'), r'dropout_tolerance must be a number'),
        (dict(drop={0: (0, 'mask')}), r'drop simulates owners .* needs dropout_tolerance > 0'),
        (dict(dropout_tolerance=0.2, drop={9: (0, 'mask')}), r'client index in \[0, 5\)'),
        (dict(dropout_tolerance=0.2, drop={0: (0, 'later')}), r"a sum index >= 0 and a stage of \('advertise'"),
        (dict(dropout_tolerance=0.2, drop={0: (-1, 'mask')}), r'a sum index >= 0'),
        (dict(dropout_tolerance=0.2, drop=[0]), r'drop must be a dict'),
    ],
)
def test_bad_dropout_parameters_are_named(data, kw, message):
    clients, _ = data
    with pytest.raises(ValueError, match=message):
        FederBoostClassifier(rng=0, **KW, **kw).fit(clients)


@pytest.mark.parametrize('fault', ['party1:6:die', 'party3:14:die'])
def test_over_flower_a_silent_node_is_a_dropout(data, tmp_path, fault):
    """Over Flower's relay (in-process nodes): with a dropout tolerance, a node that stops answering is gone, not fatal
    (`tolerates_dropouts`); the fit finishes, and it is the simulator's fit with that owner dropping where it did."""
    pytest.importorskip('flwr')
    from fedgauss.flower import LocalGrid, Relay, local_nodes

    clients, Xte = data
    est = FederBoostClassifier(rng=0, dropout_tolerance=0.2, **KW)
    spec, datas, cfg = est.protocol_inputs(clients)
    ncs, kw = local_nodes(str(tmp_path / 'fed'), {p: datas[p] for p in cfg['parties']}, 'aggregator', test_seeds=True)
    out = Relay(LocalGrid(ncs, forget=False), K, timeout=5, **kw).run(spec, cfg, fault=fault)
    agg = out['results']['aggregator']
    who = fault.split(':')[0]
    assert list(agg['dropped']) == [who] and list(out['gone']) == [who]
    (j, stage), c = agg['dropped'][who], int(who[5:])
    sim = FederBoostClassifier(rng=0, dropout_tolerance=0.2, drop={c: (j, stage)}, **KW).fit(clients)
    assert sim.dropped_ == {c: (j, stage)}
    for a, b in zip(agg['trees'], sim.trees_):
        np.testing.assert_array_equal(a.value, b.value)
    assert agg['base_margin'] == sim.base_margin_


def test_over_flower_without_a_tolerance_a_silent_node_stops_the_run(data, tmp_path):
    pytest.importorskip('flwr')
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, local_nodes

    clients, _ = data
    spec, datas, cfg = FederBoostClassifier(rng=0, **KW).protocol_inputs(clients)
    ncs, kw = local_nodes(str(tmp_path / 'fed'), {p: datas[p] for p in cfg['parties']}, 'aggregator', test_seeds=True)
    with pytest.raises(FlowerRunError, match=r'party1 \(node \d+\) did not answer'):
        Relay(LocalGrid(ncs, forget=False), K, timeout=5, **kw).run(spec, cfg, fault='party1:6:die')
