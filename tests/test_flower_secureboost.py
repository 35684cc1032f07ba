"""SecureBoost over Flower (issue 17): the `secureboost` per-party programs on A's relay — in process (`LocalGrid`),
on Flower's simulation engine and as a real deployment on 127.0.0.1 — give the simulator's trees and its transcript
message for message; a node whose columns do not fit stops the run at the data check, before any ciphertext leaves.
Then prediction, the `secureboost_predict` programs: each node's data its block of the rows to score and its part of
the model (`SecureBoostClassifier.model_parts`); margins, counts and bytes by kind are the estimator's; a node whose
lookup table or columns do not fit stops at the data check. Skipped without the `flower` extra (flwr, ray,
cryptography).

The runs use the estimator's own protocol: the relay steps a program that pauses (`PartySMC.pause`, between trees)
and ends a passive party's wait with `PeerFinished` when the active party has finished. (`cfg` options
`pause=False, end_message=True` exist for a transport without those rules.)"""

import importlib.util, os, shutil, tempfile

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('flwr', 'ray', 'cryptography')),
    reason="needs the flower extra: pip install -e '.[flower]'",
)

from fedgauss.federation import vertical_split
from fedgauss.secureboost import (
    SECUREBOOST,
    SECUREBOOST_PREDICT,
    SecureBoostClassifier,
    part_model,
    secureboost_part,
    secureboost_report,
)
from fedgauss.smc import run_protocol

NAMES = ['passive0', 'active', 'passive2']  # labels with the middle party, as nb33
GROUPS = [list(range(0, 10)), list(range(10, 20)), list(range(20, 30))]
# n_jobs=1: a node hosted by Ray's simulation (a ClientAppActor with some 20 native threads) that forks its Paillier
# workers can deadlock (a forked worker once hung on a futex here); the results are the same on every core
PARAMS = dict(n_estimators=2, max_depth=3, max_bins=16, key_size=512, unsafe=True, n_jobs=1)
COLS = ['round', 'sender', 'receiver', 'kind', 'bytes']


def make_job(names=NAMES, groups=GROUPS, label_party=1, **params):
    "The parties' data, the public configuration, the simulator's bsp run and the estimator, on breast cancer."
    X, y = load_breast_cancer(return_X_y=True)
    datas = {p: dict(X=X[:, g]) for p, g in zip(names, groups)}
    datas['active']['y'] = y.astype(float)
    est = SecureBoostClassifier(rng=0, **dict(PARAMS, **params))  # the active party keyed by seed 0, as its node
    cfg = est.protocol_config(names, [len(g) for g in groups], len(y))
    # a node started for tests keys its party with the seed it is sent (`secret_rng(0)`): the simulator gets the same
    res, rounds, ch = run_protocol(SECUREBOOST, datas, cfg, rngs={'active': 0}, bsp=True)
    est.fit(vertical_split(X, groups, y, label_party=label_party))
    return dict(X=X, y=y, names=names, datas=datas, cfg=cfg, res=res, rounds=rounds, ch=ch, est=est)


@pytest.fixture(scope='module')
def job():
    return make_job()


def assert_same_run(fl, job):
    "The Flower run's trees are the simulator's and the estimator's; its transcript is the simulator's, message for message."
    got, want = fl['results'], job['res']
    for t, u, e in zip(got['active']['trees'], want['active']['trees'], job['est'].trees_):
        for att in ('feature', 'bin', 'default_left', 'left', 'right', 'value', 'gain', 'sum_grad', 'sum_hess'):
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att))
            np.testing.assert_array_equal(getattr(t, att), getattr(e, att))
    for k in ('owners', 'records', 'train_leaves'):
        for a, b in zip(got['active'][k], want['active'][k]):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(got['active']['train_margin'], job['est'].train_margin_)
    passive = [p for p in job['names'] if p != 'active']  # a passive node reports its record count, keeps its table
    assert [got[p] for p in passive] == [secureboost_report(want[p], {}) for p in passive]
    assert fl['channel'].transcript[COLS].values.tolist() == job['ch'].transcript[COLS].values.tolist()
    assert fl['rounds'] == job['rounds']
    rows = lambda ch: sorted(map(tuple, ch.transcript[COLS].values.tolist()))
    assert rows(fl['channel']) == rows(job['est'].channel_)  # the estimator's messages, round by round
    by_kind = lambda ch: ch.transcript.groupby('kind')['bytes'].agg(['count', 'sum']).to_dict()
    assert by_kind(fl['channel']) == by_kind(job['ch'])


def test_relay_in_process_equals_the_simulator(job):
    from fedgauss.flower import LocalGrid, Relay, local_nodes

    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, {p: job['datas'][p] for p in NAMES}, test_seeds=True)
        fl = Relay(LocalGrid(ncs, forget=False), len(NAMES), **kw).run('secureboost', job['cfg'], seeds={'active': 0})
    assert_same_run(fl, job)


@pytest.fixture(scope='module')
def flower_fit(job, tmp_path_factory):
    """Training on Flower's simulation engine (once for the module: the simulation's start-up is slow); each node keeps
    its whole result next to its data (`keep=True`)."""
    from fedgauss.flower import flower_run

    d = str(tmp_path_factory.mktemp('sb-nodes'))
    return flower_run('secureboost', job['datas'], job['cfg'], seeds={'active': 0}, timeout=240, keep=True, workdir=d)


def test_flower_simulation_equals_the_simulator(job, flower_fit):
    assert_same_run(flower_fit, job)


def test_a_node_with_other_columns_stops_before_any_ciphertext(job):
    "The relay's hello pass runs every node's `secureboost_check` (the same node code on every engine): no message leaves."
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, local_nodes

    bad = dict(job['datas'], passive2=dict(X=job['X'][:, 20:29]))
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, {p: bad[p] for p in NAMES}, test_seeds=True)
        relay = Relay(LocalGrid(ncs, forget=False), len(NAMES), **kw)
        with pytest.raises(FlowerRunError, match='passive2 has 9 columns; the federation expects 10'):
            relay.run('secureboost', job['cfg'], seeds={'active': 0})
        assert len(relay.channel.messages) == 0  # stopped at the data check: not even the public key left


@pytest.mark.skipif(
    shutil.which('flower-superlink') is None or shutil.which('flwr') is None,
    reason='needs flower-superlink and flwr on PATH',
)
def test_deployment_equals_the_simulator(tmp_path):
    """Two SuperNodes and a SuperLink on 127.0.0.1; one tree of depth 2 keeps the passes (and the time) few. The passive
    node keeps its lookup table in its own folder (`keep=True`): the simulator's passive party's part."""
    from fedgauss.flower import flower_run, load_party_result

    small = make_job(['active', 'passive1'], [list(range(15)), list(range(15, 30))], 0, n_estimators=1, max_depth=2)
    fl = flower_run(
        'secureboost',
        small['datas'],
        small['cfg'],
        engine='deployment',
        seeds={'active': 0},
        timeout=240,
        keep=True,
        workdir=str(tmp_path),
    )
    assert_same_run(fl, small)
    assert fl['kept']['passive1'].startswith(str(tmp_path / 'node1'))
    kept, want = secureboost_part(load_party_result(fl['kept']['passive1'])), small['res']['passive1']['part']
    assert sorted(kept) == sorted(want) and all(np.array_equal(kept[k], want[k]) for k in want)


# ----------------------------------------------------------------------------- prediction
@pytest.fixture(scope='module')
def pjob(job):
    """Rows to score (every fourth row of breast cancer, 5% of the values missing), each party's data for them
    (`predict_inputs`: its block and its part of the model), the estimator's margins and prediction messages (on a
    copy: the training tests read the estimator's channel), and the simulator's bsp run of `secureboost_predict`."""
    import copy

    est = copy.deepcopy(job['est'])
    rows = job['X'][::4].copy()
    rows[np.random.default_rng(1).random(rows.shape) < 0.05] = np.nan
    blocks = [rows[:, g] for g in GROUPS]
    datas, cfg = est.predict_inputs(blocks)
    n0 = len(est.channel_.messages)
    margin = est.decision_function(blocks)
    res, rounds, ch = run_protocol(SECUREBOOST_PREDICT, datas, cfg, bsp=True)
    return dict(est=est, datas=datas, cfg=cfg, margin=margin, sent=est.channel_.messages[n0:], res=res, ch=ch)


def assert_same_prediction(fl, pjob):
    """The run's margins are the estimator's bit for bit, its messages the estimator's (count and bytes by kind, and by
    sender and receiver), its transcript the simulator's bsp run's; a passive node reports only how many it answered."""
    np.testing.assert_array_equal(fl['results']['active']['margin'], pjob['margin'])
    assert [fl['results'][p] for p in NAMES if p != 'active'] == [pjob['res'][p] for p in NAMES if p != 'active']
    by_kind = lambda msgs: sorted(
        (k, sum(m.nbytes for m in msgs if m.kind == k), sum(m.kind == k for m in msgs)) for k in {m.kind for m in msgs}
    )
    assert by_kind(fl['channel'].messages) == by_kind(pjob['sent'])
    assert {m.kind for m in pjob['sent']} == {'query', 'answer'}
    pairs = lambda msgs: sorted((m.sender, m.receiver, m.kind, m.nbytes) for m in msgs)
    assert pairs(fl['channel'].messages) == pairs(pjob['sent'])
    assert fl['channel'].transcript[COLS].values.tolist() == pjob['ch'].transcript[COLS].values.tolist()


def test_prediction_relay_in_process_equals_the_estimator(pjob):
    from fedgauss.flower import LocalGrid, Relay, local_nodes

    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, {p: pjob['datas'][p] for p in NAMES})
        fl = Relay(LocalGrid(ncs, forget=False), len(NAMES), **kw).run('secureboost_predict', pjob['cfg'])
    assert_same_prediction(fl, pjob)


def test_train_then_predict_on_flower_simulation(job, flower_fit, pjob):
    """Train on Flower, then predict on Flower from what the training left: the active party's part from the model it
    returned, each passive party's from the result its node kept (`keep=True`: its lookup table never left the node).
    The parts are the estimator's (`model_parts`), array for array, and the margins its margins."""
    from fedgauss.flower import flower_run, load_party_result

    kept = {p: load_party_result(f) for p, f in flower_fit['kept'].items()}
    assert 'part' not in flower_fit['results']['passive0'] and 'part' in kept['passive0']
    parts = {p: secureboost_part(flower_fit['results']['active'] if p == 'active' else kept[p]) for p in NAMES}
    for p in NAMES:
        want = {k: v for k, v in pjob['datas'][p].items() if k != 'X'}
        assert sorted(parts[p]) == sorted(want)
        for k in want:
            np.testing.assert_array_equal(parts[p][k], want[k])
    datas = {p: dict(parts[p], X=pjob['datas'][p]['X']) for p in NAMES}
    fl = flower_run('secureboost_predict', datas, pjob['cfg'], timeout=240)
    assert_same_prediction(fl, pjob)


@pytest.mark.parametrize(
    'party, change, match',
    [
        ('passive2', lambda d: dict(d, lookup_threshold=d['lookup_threshold'][:-1]), "passive2's lookup table has"),
        ('passive0', lambda d: dict(d, X=d['X'][:, :9]), 'passive0 has 9 columns; the federation expects 10'),
        ('active', lambda d: dict(d, X=d['X'][:-1]), 'active has 142 rows; the federation expects 143'),
    ],
)
def test_a_prediction_node_that_does_not_fit_stops_at_the_check(pjob, party, change, match):
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, local_nodes

    bad = dict(pjob['datas'], **{party: change(pjob['datas'][party])})
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, {p: bad[p] for p in NAMES}, test_seeds=True)
        relay = Relay(LocalGrid(ncs, forget=False), len(NAMES), **kw)
        with pytest.raises(FlowerRunError, match=match):
            relay.run('secureboost_predict', pjob['cfg'])
        assert len(relay.channel.messages) == 0


@pytest.mark.skipif(
    os.environ.get('FEDGAUSS_FLOWER_DEPLOY') != '1' or shutil.which('flower-superlink') is None,
    reason='opt-in (FEDGAUSS_FLOWER_DEPLOY=1): a SuperLink and three SuperNodes on 127.0.0.1',
)
def test_prediction_deployment_equals_the_estimator(pjob):
    from fedgauss.flower import flower_run

    fl = flower_run('secureboost_predict', pjob['datas'], pjob['cfg'], engine='deployment', timeout=240)
    assert_same_prediction(fl, pjob)


# ----------------------------------------------------------------------------- PSI first, the regressor (issues 29, 30)
def _psi_job(**params):
    """Three parties holding partly overlapping rows of breast cancer under string IDs (each a random 85 %, shuffled),
    the `secureboost` programs with `cfg['psi']`: PSI then the trees in one run; every party keyed by its test seed."""
    X, y = load_breast_cancer(return_X_y=True)
    r, datas, ids = np.random.default_rng(3), {}, {}
    for p, g in zip(NAMES, GROUPS):
        at = r.permutation(np.flatnonzero(r.random(len(X)) < 0.85))
        ids[p] = np.array([f'p{i:04d}' for i in at])
        datas[p] = dict(X=X[at][:, g], ids=ids[p])
    datas['active']['y'] = y[[int(s[1:]) for s in ids['active']]].astype(float)
    est = SecureBoostClassifier(rng=0, psi=True, **dict(PARAMS, **params))
    cfg = est.protocol_config(NAMES, [len(g) for g in GROUPS], None)
    cfg['psi'] = est.psi_config(NAMES, list(ids.values()))
    seeds = {p: k for k, p in enumerate(NAMES)}
    res, rounds, ch = run_protocol(SECUREBOOST, datas, cfg, rngs=seeds, bsp=True)
    return dict(X=X, y=y, datas=datas, cfg=cfg, res=res, rounds=rounds, ch=ch, seeds=seeds, ids=ids)


def test_psi_then_training_on_the_relay_in_process_equals_the_simulator():
    """Parties whose IDs overlap partly: one run on Flower's relay (`LocalGrid`), ECDH-PSI then the trees, gives the
    simulator's trees, rounds and transcript; the trees are the centralized core's on the common rows; a passive node
    reports its record count only (its rows of the intersection stay with it)."""
    from fedgauss.flower import LocalGrid, Relay, local_nodes
    from fedgauss.gbdt import GBDTClassifier

    job = _psi_job()
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, {p: job['datas'][p] for p in NAMES}, test_seeds=True)
        fl = Relay(LocalGrid(ncs, forget=False), len(NAMES), **kw).run('secureboost', job['cfg'], seeds=job['seeds'])
    got, want = fl['results'], job['res']
    for t, u in zip(got['active']['trees'], want['active']['trees']):
        for att in ('feature', 'bin', 'default_left', 'left', 'right', 'value', 'gain', 'sum_grad', 'sum_hess'):
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att))
    assert fl['channel'].transcript[COLS].values.tolist() == job['ch'].transcript[COLS].values.tolist()
    assert fl['rounds'] == job['rounds'] and job['rounds']['align'][0] < min(job['rounds']['tree'])
    for p in NAMES:
        assert ('psi_rows' in got[p]) == (p == 'active')
    common = [job['ids']['active'][i] for i in got['active']['psi_rows']]
    assert len(common) < min(len(v) for v in job['ids'].values())
    assert all(set(common) <= set(v) for v in job['ids'].values())
    rows = [int(s[1:]) for s in common]  # the centralized fit on the common rows, in PSI's order
    gb = GBDTClassifier(n_estimators=2, max_depth=3, max_bins=16).fit(job['X'][rows], job['y'][rows])
    for t, u in zip(got['active']['trees'], gb.trees_):
        np.testing.assert_array_equal(t.value, u.value)


def test_a_node_with_ids_of_another_type_stops_before_any_message():
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, local_nodes

    job = _psi_job()
    bad = dict(job['datas'], passive2=dict(job['datas']['passive2'], ids=np.arange(len(job['ids']['passive2']))))
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, {p: bad[p] for p in NAMES}, test_seeds=True)
        relay = Relay(LocalGrid(ncs, forget=False), len(NAMES), **kw)
        with pytest.raises(FlowerRunError, match='passive2'):
            relay.run('secureboost', job['cfg'], seeds=job['seeds'])
        assert len(relay.channel.messages) == 0


def test_regressor_on_the_relay_in_process_equals_the_estimator():
    """SecureBoostRegressor's programs (`objective='reg:squarederror'`) on Flower's relay: the estimator's trees and
    transcript, and the trees of GBDTRegressor on the same columns side by side."""
    from sklearn.datasets import load_diabetes
    from fedgauss.flower import LocalGrid, Relay, local_nodes
    from fedgauss.gbdt import GBDTRegressor
    from fedgauss.secureboost import SecureBoostRegressor

    X, y = load_diabetes(return_X_y=True)
    names, groups = ['active', 'passive1'], [list(range(5)), list(range(5, 10))]
    datas = {'active': dict(X=X[:, :5], y=y), 'passive1': dict(X=X[:, 5:])}
    est = SecureBoostRegressor(rng=0, **PARAMS)
    cfg = est.protocol_config(names, [5, 5], len(y))
    est.fit(vertical_split(X, groups, y, label_party=0))
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, datas, test_seeds=True)
        fl = Relay(LocalGrid(ncs, forget=False), len(names), **kw).run('secureboost', cfg, seeds={'active': 0})
    gb = GBDTRegressor(n_estimators=2, max_depth=3, max_bins=16).fit(X, y)
    for t, u, c in zip(fl['results']['active']['trees'], est.trees_, gb.trees_):
        for att in ('feature', 'bin', 'default_left', 'value', 'gain', 'sum_grad', 'sum_hess'):
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att))
            np.testing.assert_array_equal(getattr(t, att), getattr(c, att))
    np.testing.assert_array_equal(fl['results']['active']['train_margin'], est.train_margin_)
    rows = lambda ch: sorted(map(tuple, ch.transcript[COLS].values.tolist()))
    assert rows(fl['channel']) == rows(est.channel_)


@pytest.mark.parametrize('multi_output', [False, True])
def test_multiclass_on_the_relay_in_process_equals_the_estimator(multi_output):
    """K = 3 classes over Flower's relay (issue 29): one tree per class a round, or one multi-output tree with the three
    classes of a row packed in one ciphertext: the estimator's trees, margins and transcript."""
    from sklearn.datasets import load_wine
    from fedgauss.flower import LocalGrid, Relay, local_nodes

    X, y = load_wine(return_X_y=True)
    names, groups = ['active', 'passive1'], [list(range(7)), list(range(7, 13))]
    datas = {'active': dict(X=X[:, :7], y=y.astype(float)), 'passive1': dict(X=X[:, 7:])}
    est = SecureBoostClassifier(rng=0, multi_output=multi_output, **PARAMS)
    cfg = est.protocol_config(names, [7, 6], len(y), n_classes=3)
    assert cfg['objective'] == 'multi:softprob' and cfg['multi_output'] is multi_output
    est.fit(vertical_split(X, groups, y, label_party=0))
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, datas, test_seeds=True)
        fl = Relay(LocalGrid(ncs, forget=False), len(names), **kw).run('secureboost', cfg, seeds={'active': 0})
    assert len(fl['results']['active']['trees']) == len(est.trees_) == (2 if multi_output else 6)
    for t, u in zip(fl['results']['active']['trees'], est.trees_):
        for att in ('feature', 'bin', 'default_left', 'value', 'gain', 'sum_grad', 'sum_hess'):
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att))
    np.testing.assert_array_equal(fl['results']['active']['train_margin'], est.train_margin_)
    rows = lambda ch: sorted(map(tuple, ch.transcript[COLS].values.tolist()))
    assert rows(fl['channel']) == rows(est.channel_)
