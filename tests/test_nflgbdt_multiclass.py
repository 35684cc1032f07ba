"""Multi-class nFL-GBDT and its baselines (issue 29): K trees per round as the core's softmax. FederBoost equals the
pooled core (`GBDTClassifier`, `multi:softprob`) to the bit, with and without NaN, text labels, dropout tolerance;
nFL-GBDT's vector of leaf weights against the pooled Newton leaves recomputed here; SimFL, TFL and F-GBDT-G fit, learn
and keep their privacy accounts (ε / K per tree); labels of any type in `classes_` order; label skew with K classes."""

import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.datasets import load_digits, load_iris

from fedgauss.data import make_seven_classes
from fedgauss.federation import class_shares, label_skew_split
from fedgauss.gbdt import GBDTClassifier, newton_weight
from fedgauss.nflgbdt import (
    FederBoostClassifier,
    FGBDTGClassifier,
    LSHCollapseWarning,
    NFLGBDTClassifier,
    SimFLClassifier,
    TFLClassifier,
    class_skew_split,
    pooled,
)

ALL = [FederBoostClassifier, NFLGBDTClassifier, SimFLClassifier, TFLClassifier, FGBDTGClassifier]
KW = dict(n_estimators=4, max_depth=3, rng=0)


@pytest.fixture(scope='module')
def seven():
    X, y = make_seven_classes(1500, seed=1)
    return class_skew_split(X[:1200], y[:1200], 3, 0.8, rng=0), X[1200:], y[1200:]


def fit(cls, clients, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', LSHCollapseWarning)
        return cls(**dict(KW, **kw)).fit(clients)


def assert_same_model(a, b, X):
    "The same trees (features, bins, default directions, leaf values) and margins, to the bit."
    assert len(a.trees_) == len(b.trees_)
    for s, t in zip(a.trees_, b.trees_):
        for f in ('feature', 'bin', 'default_left', 'left', 'right', 'value'):
            np.testing.assert_array_equal(getattr(s, f), getattr(t, f))
    np.testing.assert_array_equal(a.base_margin_, b.base_margin_)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))


@pytest.mark.parametrize('nan', [False, True], ids=['no-missing', 'nan'])
def test_federboost_is_the_pooled_core(seven, nan):
    clients, Xte, _ = seven
    if nan:
        g = np.random.default_rng(0)
        clients = [(np.where(g.random(X.shape) < 0.1, np.nan, X), y) for X, y in clients]
    fb = fit(FederBoostClassifier, clients, n_estimators=6)
    core = GBDTClassifier(n_estimators=6, max_depth=3).fit(*pooled(clients))
    assert_same_model(fb, core, Xte)
    assert len(fb.trees_) == 6 * 7


def test_federboost_is_the_pooled_core_with_text_labels_and_digits():
    X, y = load_digits(return_X_y=True)
    names = np.array(['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'], dtype=object)
    clients = class_skew_split(X[:900], names[y[:900]], 2, 0.7, rng=0)
    fb = fit(FederBoostClassifier, clients)
    core = GBDTClassifier(n_estimators=4, max_depth=3).fit(*pooled(clients))
    assert list(fb.classes_) == sorted(names) == list(core.classes_)
    assert_same_model(fb, core, X[900:])
    np.testing.assert_array_equal(fb.predict(X[900:]), core.predict(X[900:]))
    np.testing.assert_array_equal(fb.predict_proba(X[900:]), core.predict_proba(X[900:]))


def test_federboost_with_dropout_tolerance_is_the_pooled_core_and_survives_a_drop(seven):
    clients, Xte, _ = seven
    core = GBDTClassifier(n_estimators=3, max_depth=3).fit(*pooled(clients))
    assert_same_model(fit(FederBoostClassifier, clients, n_estimators=3, dropout_tolerance=0.4), core, Xte)
    fb = fit(FederBoostClassifier, clients, n_estimators=3, dropout_tolerance=0.4, drop={2: (5, 'mask')})
    assert fb.dropped_ == {2: (5, 'mask')}
    np.testing.assert_allclose(fb.predict_proba(Xte).sum(1), 1)


def test_federboost_grid_is_one_exponent_per_class(seven):
    clients, *_ = seven
    fb = fit(FederBoostClassifier, clients, n_estimators=2)
    grids = [m.payload for m in fb.channel_.messages if m.kind == 'grid']
    assert len(grids) == 2 * 3 and all(g.shape == (7,) and g.dtype == np.int32 for g in grids)
    counts = [m.payload for m in fb.channel_.messages if m.kind == 'class counts']
    assert [c.tolist() for c in counts] == [[len(y)] + np.bincount(y, minlength=7).tolist() for _, y in clients]
    fx = fit(FederBoostClassifier, clients, n_estimators=2, frac_bits=30)  # the paper's fixed point: close, not equal
    np.testing.assert_allclose(fx.decision_function(seven[1]), fb.decision_function(seven[1]), atol=1e-6)


def test_nflgbdt_leaf_weights_are_the_pooled_newton_leaves(seven):
    """With `leaf_weighting='sum'`, every tree after the first round has, in each leaf, the pooled Newton weight of
    its class's gradients at the current margins — recomputed here from the parties' rows, round by round."""
    clients, *_ = seven
    m = fit(NFLGBDTClassifier, clients, leaf_weighting='sum', lsh_scale='standard')
    X, y = np.vstack([p._X for p in m.parties_]), np.concatenate([p._y for p in m.parties_]).astype(int)
    K, codes = 7, m.binner_.transform(X)
    margin = np.tile(m.base_margin_, (len(y), 1))
    for t in range(m.n_estimators):
        p = softmax(margin, axis=1)
        g, h = p - np.eye(K)[y], np.maximum(2 * p * (1 - p), 1e-16)
        for k, tree in enumerate(m.trees_[t * K : (t + 1) * K]):
            leaf = tree.apply_binned(codes, m.binner_.n_bins_)
            if t:
                G, H = (np.bincount(leaf, v[:, k], minlength=tree.n_nodes) for v in (g, h))
                want = 0.3 * newton_weight(G, H, 1.0, 0.0)
                np.testing.assert_allclose(tree.value[tree.is_leaf], want[tree.is_leaf], rtol=1e-9, atol=1e-12)
            margin[:, k] += tree.value[leaf]


@pytest.mark.parametrize('cls', ALL)
def test_every_method_learns_digits(cls):
    "Ten classes, labels of any order and type: `classes_` sorted, probabilities summing to 1, better than chance."
    X, y = load_digits(return_X_y=True)
    y = np.array([3, 7, 11, 13, 17, 19, 23, 29, 31, 37])[y]  # integer labels, not 0 .. 9
    clients = class_skew_split(X[:1200], y[:1200], 3, 0.8, rng=0)
    kw = dict(lsh_scale='standard') if cls in (NFLGBDTClassifier, SimFLClassifier) else {}
    kw = dict(epsilon=1e6) if cls in (TFLClassifier, FGBDTGClassifier) else kw  # noise negligible: the trees learn
    m = fit(cls, clients, n_estimators=5, **kw)
    assert list(m.classes_) == [3, 7, 11, 13, 17, 19, 23, 29, 31, 37]
    assert len(m.trees_) == 50
    P = m.predict_proba(X[1200:])
    assert P.shape == (len(X) - 1200, 10)
    np.testing.assert_allclose(P.sum(1), 1)
    np.testing.assert_array_equal(m.predict(X[1200:]), m.classes_[P.argmax(1)])
    assert np.mean(m.predict(X[1200:]) == y[1200:]) > 0.6


def test_dp_budget_is_split_over_the_k_trees_of_a_round(seven):
    clients, *_ = seven
    tfl = fit(TFLClassifier, clients, n_estimators=6, epsilon=3.0)
    np.testing.assert_allclose(tfl.epsilon_per_tree_, 3.0 / np.bincount(tfl.builders_) / 7)
    fg = fit(FGBDTGClassifier, clients, n_estimators=6, epsilon=3.0)
    np.testing.assert_allclose(fg.epsilon_per_tree_, 3.0 / 6 / 7)
    assert len(fg.builders_) == 6 and len(fg.trees_) == 42
    # F-GBDT-G's aggregator gets one score per candidate (a candidate: K trees) and the chosen is the smallest sum
    rounds = {}
    for msg in fg.channel_.messages:
        if msg.kind == 'scores':
            rounds.setdefault(msg.round, []).append(msg.payload)
    chosen = [int(np.argmin(sum(s))) for _, s in sorted(rounds.items())]
    assert chosen == fg.builders_.tolist() and all(len(s[0]) == 3 for s in rounds.values())


def test_binary_labels_keep_the_binary_model():
    "Two classes stay on the logistic loss: one tree per round, a number as base margin, (n,) margins."
    X, y = load_iris(return_X_y=True)
    X, y = X[y > 0], y[y > 0]
    for cls in ALL:
        m = fit(cls, label_skew_split(X, y, 2, 0.7, rng=0), n_estimators=3)
        assert len(m.trees_) == 3 and np.ndim(m.base_margin_) == 0 and m.decision_function(X).shape == (len(y),)


def test_class_skew_split():
    X = np.arange(1200.0)[:, None]
    y = np.arange(1200) % 4
    parts = class_skew_split(X, y, 3, 0.7, rng=0)
    shares = class_shares(parts).values
    np.testing.assert_array_equal(shares, [[210, 45, 45, 210], [45, 210, 45, 45], [45, 45, 210, 45]])  # owner j mod D
    rows = np.sort(np.concatenate([p[0][:, 0] for p in parts]))
    np.testing.assert_array_equal(rows, X[:, 0])  # a partition
    for Xk, yk in parts:
        np.testing.assert_array_equal(yk, y[Xk[:, 0].astype(int)])  # rows and labels together, in their order
    two = class_skew_split(X, y % 2, 2, 0.8, rng=3)
    np.testing.assert_array_equal(class_shares(two).values, class_shares(label_skew_split(X, y % 2, 2, 0.8, 3)).values)
    with pytest.raises(ValueError, match='empty'):
        class_skew_split(X[:4], y[:4] % 2, 3, 1.0, rng=0)  # two classes, three clients: client 2 owns none
    with pytest.raises(ValueError, match='2 classes or more'):
        class_skew_split(X, np.zeros(1200), 2)


def softmax_reference(fb, clients, grid_out, hist_out):
    """The K-class model grown from the pooled rows with owner c's rows left out of round t's grid scales
    (`grid_out[t]`) and histograms (`hist_out[t]`), from the core's building blocks: the rounds' trees."""
    from fedgauss.gbdt import LocalHistograms, SoftmaxLoss, grid_exponent, grow_trees, snap_to_grid
    from fedgauss.nflgbdt import class_blocks

    X = np.vstack([c[0] for c in clients])
    y = np.searchsorted(fb.classes_, np.concatenate([c[1] for c in clients]))
    owner = np.repeat(np.arange(len(clients)), [len(c[0]) for c in clients])
    codes, layout, K = fb.binner_.transform(X), fb.binner_.layout_, len(fb.classes_)
    loss = SoftmaxLoss(K)
    margin, provider, trees = (
        np.tile(loss.init_margin(y), (len(y), 1)),
        LocalHistograms(np.tile(codes, (K, 1)), layout),
        [],
    )
    for t in range(fb.n_estimators):
        gh = loss.gradients(y, margin)
        in_grid = ~np.isin(owner, list(grid_out.get(t, ())))
        for c in range(K):
            k = grid_exponent(float(np.abs(gh[in_grid, c]).sum(axis=0).max()), len(y))
            gh[:, c, 0], gh[:, c, 1], _ = snap_to_grid(gh[:, c, 0], gh[:, c, 1], k)
        gh[np.isin(owner, list(hist_out.get(t, ())))] = 0.0  # rows that are not there add nothing to a sum
        provider.start_trees(class_blocks(gh), K)
        for c, tree in enumerate(grow_trees(provider, layout, K, **fb._grow_kw())):
            margin[:, c] += tree.value[tree.apply_binned(codes, fb.binner_.n_bins_)]
            trees.append(tree)
    return trees


def test_federboost_drop_inside_a_round_restarts_its_k_trees(seven):
    """An owner that drops in a level's sum of round 1: the aggregator grows the round's K trees again from their roots
    on the survivors' rows; the model is the pooled softmax model without that owner's rows where it missed them."""
    clients, Xte, _ = seven
    probe = fit(FederBoostClassifier, clients, n_estimators=3, dropout_tolerance=0.4)
    for a, b in zip(probe.trees_, softmax_reference(probe, clients, {}, {})):  # nobody drops: the reference is the fit
        np.testing.assert_array_equal(a.value, b.value)
    j = probe.sums_.index('tree 1 grid') + 2  # round 1, second level
    fb = fit(FederBoostClassifier, clients, n_estimators=3, dropout_tolerance=0.4, drop={0: (j, 'mask')})
    assert fb.dropped_ == {0: (j, 'mask')}
    ref = softmax_reference(fb, clients, grid_out={2: {0}}, hist_out={1: {0}, 2: {0}})
    assert len(fb.trees_) == len(ref) == 21
    for a, b in zip(fb.trees_, ref):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.value, b.value)
    assert (fb.channel_.transcript.kind == 'restart').sum() == 2  # to the two owners left
