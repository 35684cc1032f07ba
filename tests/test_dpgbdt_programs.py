"""DP federated GBDT as per-party programs (fedgauss.dpgbdt.DPGBDT_PROTOCOL): the estimator's transcripts are those of
the former single driver (pinned with values computed by that driver; trees and privacy pinned since issue 26), the
relay-mode (bsp) run of the programs equals the estimator, each program holds only its own data, and `check` stops a
bad party before any message leaves."""

import hashlib

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from fedgauss.dpgbdt import DPGBDT_PROTOCOL, DPGBDTClassifier, DPGBDTRegressor
from fedgauss.federation import Channel
from fedgauss.smc import PROTOCOLS, run_protocol

X, y = make_classification(600, 5, n_informative=3, random_state=0)
Xr, yr = make_regression(500, 4, noise=1.0, random_state=0)
yr = yr / np.abs(yr).max()
PUB = dict(feature_bounds=(-8, 8), max_rows=1000)  # public: the generators' features lie within ±8, at most 1000 rows

# config, transcript hash (in order; 'sorted': as a multiset) — computed with the single driver (main at 4a56a6b) and
# unchanged since —, then sum of the split features, sum of |leaves|, leaves[0, 0], epsilon spent, queries, re-pinned
# when the secrets moved to ChaCha20 generators and the bounds and delta became declared (issue 26)
PINS = [
    (
        {},
        'e4a9725320685775',
        184,
        26.85351726126272,
        -0.5228258701549943,
        0.9999999154563473,
        {'leaves': 12, 'hessian histogram': 25},
    ),
    ({'gh_release': 'vector'}, 'e4a9725320685775', 171, 16.852473743801077, 0.0, 0.9999997527349613, None),
    (
        {'split_candidates': 'uniform', 'feature_interaction': 'random', 'k': 2},
        '7e7bb44c55cbc194',
        144,
        22.063974231115296,
        0.0,
        0.9999998641046515,
        {'leaves': 12},
    ),
    (
        {
            'feature_interaction': 'cyclical',
            'k': 1,
            'full_cycles': True,
            'split_candidates': 'iterative_hessian',
            'ih_rounds': 2,
        },
        '126553f44529f15a',
        900,
        142.597662417356,
        0.0,
        0.999999644146408,
        None,
    ),
    (
        {'split_method': 'hist', 'split_candidates': 'uniform'},
        '54a23e80f9bfa497',
        167,
        19.325865058572234,
        0.6,
        0.9999998926510986,
        {'histograms': 240},
    ),
    (
        {'split_method': 'hist', 'gh_release': 'vector', 'ih_rounds': 1},
        'd2ffb9de21c265da',
        200,
        8.897333999724879,
        0.0,
        0.9999993176289027,
        None,
    ),
    (
        {'split_method': 'partially_random', 'split_candidates': 'uniform'},
        '09afb5c244556aff',
        154,
        23.941688276732595,
        0.0,
        0.9999993372924024,
        {'root': 12, 'left sums': 240},
    ),
    ({'noise': 'aggregator'}, 'sorted:09d1c044d28a12ef', 170, 26.5360619798697, 0.0, 0.9999999154563473, None),
    (
        {'noise': 'aggregator', 'split_method': 'hist'},
        'sorted:6d3563349416f446',
        165,
        21.557379402988772,
        0.0,
        0.9999992291315508,
        None,
    ),
    (
        {'weight_update': 'averaging', 'batch_size': 0.5},
        'e4a9725320685775',
        177,
        7.046988611781998,
        0.08451611421677385,
        0.999999915456347,
        None,
    ),
    (
        {'weight_update': 'gradient', 'batch_size': 3},
        'e4a9725320685775',
        187,
        4.218404372237678,
        0.018762953588580277,
        0.999999915456347,
        None,
    ),
    (
        {'accountant': 'exact', 'split_candidates': 'log'},
        '7e7bb44c55cbc194',
        169,
        26.04099476823674,
        0.0,
        0.9999999989192266,
        None,
    ),
    ({'REG': True}, '177f080fe6eb2225', 125, 13.16340003140278, 0.003313017729570988, 0.9999992319896132, None),
]


SEEDS = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14]  # the rng of each pinned fit


def _fit(i, kw):
    kw = dict(kw)
    reg = kw.pop('REG', False)
    est = (DPGBDTRegressor if reg else DPGBDTClassifier)(
        n_estimators=6, n_clients=3, rng=i, n_candidates=8, epsilon=1.0, **PUB, **kw
    )
    return est, (Xr, yr) if reg else (X, y)


def _hash(t, ordered=True):
    rows = t[t.kind != 'split candidates'][['sender', 'receiver', 'kind', 'bytes']].to_csv(index=False)
    rows = rows if ordered else '\n'.join(sorted(rows.splitlines()))
    return hashlib.sha256(rows.encode()).hexdigest()[:16]


@pytest.mark.parametrize('i', range(len(PINS)), ids=[str(p[0]) for p in PINS])
def test_identical_to_the_single_driver(i):
    kw, th, fsum, lsum, l00, eps, queries = PINS[i]
    est, (A, b) = _fit(SEEDS[i], kw)
    m = est.fit(A, b)
    t = m.channel_.transcript
    assert (th[7:] if th.startswith('sorted:') else th) == _hash(t, not th.startswith('sorted:'))
    assert int(m.tree_features_.sum()) == fsum
    assert float(np.abs(m.tree_leaves_).sum()) == pytest.approx(lsum, rel=1e-12, abs=1e-12)
    assert float(m.tree_leaves_[0, 0]) == pytest.approx(l00, rel=1e-12, abs=1e-12)
    assert m.privacy_spent_[0] == pytest.approx(eps, rel=1e-12)
    if queries is not None:
        assert m.queries_ == queries
    # rounds: the key agreement, then one per tree (the single driver left every message in round 0)
    assert sorted(t['round'].unique()) == list(range(1, len(m.tree_leaves_) + 2))
    if kw.get('split_method') == 'partially_random':  # new: the server sends the random candidates it tries
        assert (t.kind == 'split candidates').sum() == 6 * m.max_depth * 3


@pytest.mark.parametrize(
    'kw', [{}, dict(split_method='hist'), dict(split_method='partially_random'), dict(noise='aggregator')]
)
def test_relay_mode_equals_the_estimator(kw):
    est = DPGBDTClassifier(n_estimators=4, n_clients=3, rng=7, n_candidates=8, **PUB, **kw)
    datas, cfg, rng = est.protocol_inputs(X, y)
    res, rounds, ch = run_protocol(PROTOCOLS['dpgbdt'], datas, cfg, rngs={'server': rng}, bsp=True)
    m = est.fit(X, y)
    for k, a in (('features', 'tree_features_'), ('thresholds', 'tree_thresholds_'), ('leaves', 'tree_leaves_')):
        assert np.array_equal(res['server'][k], getattr(m, a))
    by_kind = lambda c: c.transcript.groupby(['sender', 'kind']).bytes.agg(['size', 'sum'])
    assert by_kind(ch).equals(by_kind(m.channel_))


def test_each_program_holds_only_its_own_data():
    est = DPGBDTClassifier(n_estimators=3, n_clients=3, rng=1, n_candidates=8, **PUB)
    datas, cfg, rng = est.protocol_inputs(X, y)
    assert DPGBDT_PROTOCOL.server.__code__.co_varnames[:2] == ('ctx', 'cfg')  # the aggregator gets no data
    assert not {'X', 'y', 'secret'} & set(cfg) and cfg['noise'] == 'distributed'  # cfg: public, no party's data
    assert all(np.size(v) < 200 for v in cfg.values())  # nothing row-sized (600 rows, 5 features)
    res, _, ch = run_protocol(DPGBDT_PROTOCOL, datas, dict(cfg, keep_party=True), Channel(), rngs={'server': rng})
    for p in cfg['parties']:
        assert res[p]._X is datas[p]['X']  # each client's program kept its own rows, nobody else's
    got = {m.kind for m in ch.messages if m.receiver == 'server'}
    assert got == {'public key', 'noisy leaves', 'noisy hessian histogram'}
    # what the server received, per release, is masked: alone each vector looks uniform; summed, the noisy total
    rel = [m.payload for m in ch.messages if m.kind == 'noisy leaves'][:3]
    assert np.abs(sum(rel).view(np.int64)).max() < 2**40
    assert all(np.abs(v.view(np.int64)).max() > 2**50 for v in rel)


def test_nodes_draw_their_own_randomness():
    est = DPGBDTClassifier(n_estimators=3, n_clients=3, rng=1, n_candidates=8, **PUB)
    datas, cfg, _ = est.protocol_inputs(X, y, predrawn=False)
    assert all(set(d) == {'X', 'y'} for d in datas.values())
    seeds = {p: 10 + i for i, p in enumerate(cfg['parties'] + ['server'])}
    res = run_protocol(DPGBDT_PROTOCOL, datas, cfg, rngs=seeds)[0]
    assert all(res[p] is None for p in cfg['parties'])  # a client returns nothing unless cfg['keep_party']
    a = res['server']['leaves']
    b = run_protocol(DPGBDT_PROTOCOL, datas, cfg, rngs=seeds, bsp=True)[0]['server']['leaves']
    c = run_protocol(DPGBDT_PROTOCOL, datas, cfg, rngs=dict(seeds, client1=99))[0]['server']['leaves']
    assert np.array_equal(a, b) and not np.array_equal(a, c)  # same seeds, same model; another client noise, another


def test_check_stops_a_bad_party_before_any_message():
    est = DPGBDTClassifier(n_estimators=2, n_clients=3, rng=1, **PUB)
    datas, cfg, rng = est.protocol_inputs(X, y)
    ch = Channel()
    bad = dict(datas, client2=dict(datas['client2'], X=datas['client2']['X'][:, :3]))
    with pytest.raises(ValueError, match='client2 has 3 columns, expected 5'):
        run_protocol(DPGBDT_PROTOCOL, bad, cfg, ch, rngs={'server': rng})
    assert ch.messages == []
    bad = dict(datas, client0=dict(X=np.zeros((0, 5)), y=np.zeros(0)))
    with pytest.raises(ValueError, match='client0 has no rows'):
        run_protocol(DPGBDT_PROTOCOL, bad, cfg, ch)
    assert PROTOCOLS['dpgbdt'] is DPGBDT_PROTOCOL
