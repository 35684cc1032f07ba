"""nFL-GBDT over Flower (fedgauss.flower.flower_run): three data owners on SuperNodes (Flower's simulation engine, and a
real deployment on 127.0.0.1), each seeded as the estimator seeds that party (`party_rngs_`: the owners' shares of the
secret hash functions, the default), give the simulator's model — the same trees and predictions — and the same
messages, counts and bytes by kind; a node with no rows or other columns stops the run at its data check, before any
message.
TFL, F-GBDT-G and FederBoost, whose parties draw (Laplace noise, Diffie-Hellman secrets), on the simulation engine with
each node seeded as the estimator seeds that party (`party_rngs_`): the estimator's trees, predictions and messages.
Skipped when the `flower` extra (flwr[simulation], cryptography) is not installed; the deployment only with
FEDGAUSS_FLOWER_DEPLOY=1 (it takes ~2 min here). Small data and few trees: each relay pass is one round trip to the nodes."""

import copy, importlib.util, os, shutil, tempfile

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('flwr', 'ray', 'cryptography')),
    reason="the flower extra is not installed: pip install 'fedgauss[flower]'",
)

from sklearn.datasets import make_classification

from fedgauss.federation import label_skew_split
from fedgauss.gbdt import forest_margin
from fedgauss.nflgbdt import (
    FederBoostClassifier,
    FGBDTGClassifier,
    NFLGBDTClassifier,
    SimFLClassifier,
    TFLClassifier,
    tree_from_message,
    tree_message,
)
from fedgauss.smc import run_protocol

KW = dict(n_estimators=4, max_depth=2, rng=0)
COLS = ['round', 'sender', 'receiver', 'kind', 'bytes']


@pytest.fixture(scope='module')
def setup():
    X, y = make_classification(300, 5, n_informative=3, random_state=0)
    clients = label_skew_split(X, y, n_clients=3, theta=0.8, rng=0)
    est = NFLGBDTClassifier(**KW).fit(clients)
    spec, datas, cfg = est.protocol_inputs(clients)  # the same inputs and party generators as the fit (rng=0)
    return est, spec, datas, cfg, clients, X


def by_kind(t):
    return t.groupby('kind')['bytes'].agg(['size', 'sum'])


def check_equal(out, est, spec, datas, cfg, X):
    "The Flower run's model, margins and transcript against the estimator's and the relay-mode simulator's."
    res = out['results']
    assert res['aggregator']['similar_counts'].tolist() == est.similar_counts_.tolist()
    lay = est.binner_.layout_
    for t, b in enumerate(est.builders_):  # every party holds every tree: structure and leaf values as the builder's
        for p in cfg['parties']:
            got, ref = res[p]['trees'][t], tree_message(est.trees_[t])
            got = got if isinstance(got, dict) else tree_message(got)  # a node may report its trees as messages
            assert got.keys() == ref.keys() and all(np.array_equal(got[k], ref[k]) for k in ref)
    trees = [tree_from_message(t if isinstance(t, dict) else tree_message(t), lay) for t in res['party1']['trees']]
    np.testing.assert_array_equal(res['party1']['base_margin'] + forest_margin(trees, X), est.decision_function(X))
    pd.testing.assert_frame_equal(by_kind(out['channel'].transcript), by_kind(est.channel_.transcript))
    _, rounds, ch = run_protocol(spec, datas, cfg, rngs=copy.deepcopy(est.party_rngs_), bsp=True)
    pd.testing.assert_frame_equal(out['channel'].transcript[COLS], ch.transcript[COLS])
    assert out['rounds'] == rounds


def test_a_bad_node_stops_the_run_before_any_message(setup):
    # first of the module's Flower simulations: in one process, a simulation after a seeded one fails at its hello
    # pass (WireError 'a dict key of type bytes', fedgauss.flower), which would hide the data check's message
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, flower_run, local_nodes

    est, spec, datas, cfg, _, X = setup
    bad = dict(datas, party1={'X': datas['party1']['X'][:, :4], 'y': datas['party1']['y']})
    with pytest.raises(FlowerRunError, match='party1.*5 columns'):
        flower_run(spec, bad, cfg, timeout=60)
    d = tempfile.mkdtemp()  # the same relay without Flower: its channel shows that nothing was sent
    empty = dict(datas, party2={'X': datas['party2']['X'][:0], 'y': datas['party2']['y'][:0]})
    ncs, kw = local_nodes(d, {p: empty[p] for p in cfg['parties']}, 'aggregator')
    relay = Relay(LocalGrid(ncs), 3, **kw)
    with pytest.raises(FlowerRunError, match='party2 has no rows'):
        relay.run(spec, cfg)
    assert len(relay.channel.transcript) == 0


def test_flower_simulation_equals_the_simulator(setup):
    from fedgauss.flower import flower_run

    est, spec, datas, cfg, _, X = setup
    assert cfg['lsh'] is None  # the owners draw the hash functions: each node is seeded as the estimator seeds it
    out = flower_run('nflgbdt', datas, cfg, seeds=est.party_rngs_, timeout=60)
    check_equal(out, est, spec, datas, cfg, X)


@pytest.mark.skipif(
    shutil.which('flower-superlink') is None or os.environ.get('FEDGAUSS_FLOWER_DEPLOY') != '1',
    reason='a real deployment (~2 min here): set FEDGAUSS_FLOWER_DEPLOY=1 (needs flower-superlink on PATH)',
)
def test_flower_deployment_equals_the_simulator(setup):
    from fedgauss.flower import flower_run

    est, spec, datas, cfg, _, X = setup
    out = flower_run(spec, datas, cfg, engine='deployment', seeds=est.party_rngs_, timeout=60)
    check_equal(out, est, spec, datas, cfg, X)


@pytest.mark.parametrize('cls', [SimFLClassifier, FederBoostClassifier])
def test_pausing_protocols_on_the_relay(cls, setup):
    """SimFL and FederBoost (whose programs pause between phases) through the Flower relay's code on in-process nodes:
    SimFL's nodes seeded as the estimator seeds its parties (the owners' shares of the secret hash functions);
    FederBoost's nodes draw their own masks, which cancel (and its grid's sums are exact)."""
    from fedgauss.flower import LocalGrid, Relay, local_nodes

    *_, clients, X = setup
    est = cls(**KW).fit(clients)
    spec, datas, cfg = cls(**KW).protocol_inputs(clients)
    d = tempfile.mkdtemp()
    seeded = cls is SimFLClassifier
    ncs, kw = local_nodes(d, {p: datas[p] for p in cfg['parties']}, 'aggregator', test_seeds=seeded)
    seeds = est.party_rngs_ if seeded else None
    out = Relay(LocalGrid(ncs, forget=False), 3, **kw).run(spec, cfg, seeds=seeds)
    res = out['results']
    trees = res['aggregator']['trees'] if cls is FederBoostClassifier else res['party2']['trees']
    trees = [tree_from_message(t, est.binner_.layout_) if isinstance(t, dict) else t for t in trees]
    np.testing.assert_array_equal(res['party2']['base_margin'] + forest_margin(trees, X), est.decision_function(X))
    a, b = by_kind(out['channel'].transcript), by_kind(est.channel_.transcript)
    pd.testing.assert_series_equal(a['size'], b['size'])
    drawn = a.index.isin(['public key', 'public keys'])  # other secrets: a key with leading zero bytes is shorter
    pd.testing.assert_series_equal(a['sum'][~drawn], b['sum'][~drawn])
    rngs = copy.deepcopy(est.party_rngs_) if seeded else None
    assert out['rounds'] == run_protocol(spec, datas, cfg, rngs=rngs, bsp=True)[1]


def as_message(t):
    return t if isinstance(t, dict) else tree_message(t)  # a node reports its trees as messages


@pytest.mark.parametrize('cls', [TFLClassifier, FGBDTGClassifier, FederBoostClassifier])
def test_parties_with_private_streams_over_flower_simulation(cls, setup):
    """Each node seeded with its party's generator of the estimator (`party_rngs_`): the estimator's trees (DP leaves
    included), decision function and messages — counts and bytes by kind, and the bsp simulator's transcript."""
    from fedgauss.flower import flower_run

    *_, clients, X = setup
    est = cls(**KW).fit(clients)
    m = cls(**KW)
    spec, datas, cfg = m.protocol_inputs(clients)
    out = flower_run(spec, datas, cfg, seeds=m.party_rngs_, timeout=60)
    res, lay = out['results'], est.binner_.layout_
    if cls is FederBoostClassifier:  # the model is the aggregator's
        got = [[as_message(t) for t in res['aggregator']['trees']]]
    else:  # every party holds every tree
        got = [[as_message(t) for t in res[p]['trees']] for p in cfg['parties']]
        if cls is FGBDTGClassifier:
            assert res['aggregator']['chosen'] == est.builders_.tolist()
    for trees in got:
        assert len(trees) == len(est.trees_)
        for a, b in zip(trees, map(tree_message, est.trees_)):
            assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in b)
    margin = res['party2']['base_margin'] + forest_margin([tree_from_message(t, lay) for t in got[-1]], X)
    np.testing.assert_array_equal(margin, est.decision_function(X))
    pd.testing.assert_frame_equal(by_kind(out['channel'].transcript), by_kind(est.channel_.transcript))
    _, rounds, ch = run_protocol(spec, datas, cfg, rngs=copy.deepcopy(m.party_rngs_), bsp=True)
    pd.testing.assert_frame_equal(out['channel'].transcript[COLS], ch.transcript[COLS])
    assert out['rounds'] == rounds


@pytest.mark.parametrize(
    'cls', [FederBoostClassifier, NFLGBDTClassifier, SimFLClassifier, TFLClassifier, FGBDTGClassifier]
)
def test_three_classes_on_the_relay(cls):
    """Three classes through the Flower relay's code on in-process nodes (typed messages checked against the schemas),
    each node seeded as the estimator seeds its party: the estimator's model and the same messages by kind."""
    from fedgauss.flower import LocalGrid, Relay, local_nodes
    from fedgauss.nflgbdt import class_skew_split

    X, y = make_classification(300, 5, n_informative=3, n_classes=3, random_state=0)
    clients = class_skew_split(X, y, 3, 0.8, rng=0)
    lsh = {'lsh_scale': 'standard'} if cls in (NFLGBDTClassifier, SimFLClassifier) else {}
    est = cls(**KW, **lsh).fit(clients)
    spec, datas, cfg = cls(**KW, **lsh).protocol_inputs(clients)
    ncs, kw = local_nodes(tempfile.mkdtemp(), {p: datas[p] for p in cfg['parties']}, 'aggregator', test_seeds=True)
    out = Relay(LocalGrid(ncs, forget=False), 3, **kw).run(spec, cfg, seeds=est.party_rngs_)
    res, lay = out['results'], est.binner_.layout_
    trees = res['aggregator']['trees'] if cls is FederBoostClassifier else res['party2']['trees']
    trees = [tree_from_message(as_message(t), lay) for t in trees]
    assert len(trees) == len(est.trees_) == 3 * KW['n_estimators']
    margin = np.column_stack([forest_margin(trees[k::3], X) for k in range(3)]) + res['party2']['base_margin']
    np.testing.assert_array_equal(margin, est.decision_function(X))
    a, b = by_kind(out['channel'].transcript), by_kind(est.channel_.transcript)
    pd.testing.assert_series_equal(a['size'], b['size'])
    drawn = a.index.isin(['public key', 'public keys'])  # a key with leading zero bytes is shorter
    pd.testing.assert_series_equal(a['sum'][~drawn], b['sum'][~drawn])
