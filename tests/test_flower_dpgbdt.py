"""DP federated GBDT over Flower (fedgauss.flower.flower_run with the 'dpgbdt' ProtocolSpec): three clients, each a
SuperNode with its own .npz; the model equals the simulator's with the same per-party seeds, the transcript is the
simulator's message for message (counts and bytes by kind too), the server receives only masked vectors, and a node
with other columns stops the run before any message. Skipped without the `flower` extra; loopback only; bounded
(the deployment test only with FEDGAUSS_FLOWER_DEPLOY=1). The relay alone (no Flower) runs whenever `cryptography` is there."""

import importlib.util, os, shutil, time

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification

from fedgauss.dpgbdt import DPGBDT_PROTOCOL, DPGBDTClassifier
from fedgauss.smc import run_protocol

needs_flower = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('flwr', 'ray', 'cryptography')),
    reason="needs the 'flower' extra (flwr, ray, cryptography)",
)

X, y = make_classification(300, 4, n_informative=2, random_state=0)


def _inputs(**kw):
    est = DPGBDTClassifier(
        n_estimators=3, max_depth=3, n_clients=3, n_candidates=8, rng=0, feature_bounds=(-6, 6), max_rows=300, **kw
    )
    datas, cfg, _ = est.protocol_inputs(X, y, predrawn=False)  # each node draws its own secrets and noise shares...
    return datas, cfg


def _seeds(cfg):  # ...from its seed, a testing option that makes the run comparable with the simulator's
    return {p: 100 + i for i, p in enumerate(cfg['parties'] + ['server'])}


def _ray_start_failed(e):
    while e is not None:
        if 'timed out during startup' in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


def _flower_run(*args, **kw):
    "flower_run, started again (at most twice) when Ray's node could not start in its fixed 30 s (a loaded machine)."
    from fedgauss.flower import flower_run

    for attempt in range(3):
        try:
            return flower_run(*args, **kw)
        except RuntimeError as e:
            if attempt == 2 or not _ray_start_failed(e):
                raise


def _check_equal(fl, datas, cfg):
    res, rounds, ch = run_protocol(DPGBDT_PROTOCOL, datas, cfg, rngs=_seeds(cfg), bsp=True)
    for k in ('features', 'thresholds', 'leaves', 'candidates'):
        assert np.array_equal(fl['results']['server'][k], res['server'][k]), k
    pd.testing.assert_frame_equal(fl['channel'].transcript, ch.transcript)  # message for message, with rounds
    by_kind = lambda c: c.transcript.groupby('kind').bytes.agg(['size', 'sum'])
    ref = run_protocol(DPGBDT_PROTOCOL, datas, cfg, rngs=_seeds(cfg))[2]  # the simulator without relay passes
    assert by_kind(fl['channel']).equals(by_kind(ref))
    assert all(fl['results'][p] is None for p in cfg['parties'])  # a node sends back nothing of its own


@needs_flower
def test_over_flower_simulation_engine():
    datas, cfg = _inputs(split_method='hist')  # noisy histograms at every level, and IH histograms
    fl = _flower_run('dpgbdt', datas, cfg, seeds=_seeds(cfg), timeout=120)
    _check_equal(fl, datas, cfg)
    # the server received only masked vectors: alone each looks uniform on 64 bits; a release's sum is the noisy total
    up = [m for m in fl['channel'].messages if m.receiver == 'server' and m.kind.startswith('noisy ')]
    assert {m.kind for m in up} == {'noisy histograms', 'noisy hessian histogram'}
    bits = np.concatenate([np.unpackbits(m.payload.view(np.uint8)) for m in up])
    assert abs(bits.mean() - 0.5) < 0.01
    for i in range(0, len(up), 3):
        rel = [m.payload for m in up[i : i + 3]]
        assert len({m.kind for m in up[i : i + 3]}) == 1 and np.abs(sum(rel).view(np.int64)).max() < 2**40
        assert all(np.median(np.abs(v.view(np.int64))) > 2**55 for v in rel)


@needs_flower
def test_a_node_with_other_columns_stops_the_run_before_any_message():
    from fedgauss.flower import FlowerRunError

    datas, cfg = _inputs()
    datas['client1'] = dict(datas['client1'], X=datas['client1']['X'][:, :3])
    with pytest.raises(FlowerRunError, match=r'client1 .*keys and data check.*client1 has 3 columns, expected 4'):
        _flower_run('dpgbdt', datas, cfg, seeds=_seeds(cfg), timeout=120)


@needs_flower
@pytest.mark.skipif(
    shutil.which('flower-superlink') is None or not os.environ.get('FEDGAUSS_FLOWER_DEPLOY'),
    reason='a deployment takes 1-4 min on a loaded machine: set FEDGAUSS_FLOWER_DEPLOY=1 (needs flower-superlink on PATH)',
)
def test_over_a_flower_deployment():
    from fedgauss.flower import flower_run

    datas, cfg = _inputs()  # totally random trees: few passes
    t = time.time()
    fl = flower_run('dpgbdt', datas, cfg, engine='deployment', seeds=_seeds(cfg), timeout=120)
    _check_equal(fl, datas, cfg)
    assert time.time() - t < 180


@pytest.mark.skipif(importlib.util.find_spec('cryptography') is None, reason='needs cryptography')
@pytest.mark.parametrize('forget', [False, True])
def test_the_relay_without_flower(tmp_path, forget):
    """The ServerApp's relay over fedgauss.flower.LocalGrid (nodes in this process, no Flower): the same model and
    transcript; with `forget` every node rebuilds its program at every step from its inbox log; a node with other
    columns stops the run at the data check."""
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, local_nodes

    datas, cfg = _inputs(split_method='partially_random')

    def run(datas):
        ncs, kw = local_nodes(str(tmp_path), {p: datas[p] for p in cfg['parties']}, test_seeds=True)
        return Relay(LocalGrid(ncs, forget=forget), len(ncs), **kw).run('dpgbdt', cfg, seeds=_seeds(cfg))

    _check_equal(run(datas), datas, cfg)
    datas['client2'] = dict(datas['client2'], X=datas['client2']['X'][:, :3])
    with pytest.raises(FlowerRunError, match=r'client2 .*keys and data check.*client2 has 3 columns, expected 4'):
        run(datas)


@pytest.mark.skipif(importlib.util.find_spec('cryptography') is None, reason='needs cryptography')
@pytest.mark.parametrize('fault', ['client1:3:die', 'client2:8:die'])
def test_the_relay_goes_on_without_a_silent_client(tmp_path, fault):
    """Issue 30: with `dropout_tolerance` (every release a secure aggregation), a node that stops answering is a
    dropout over the relay, not a failure: the fit finishes, and it is the simulator's fit with that client dropping
    where it did (the same trees, noise and releases); without a tolerance the same silence stops the run."""
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, local_nodes

    def run(cfg):
        ncs, kw = local_nodes(
            str(tmp_path / ('plain' if cfg['secagg'] is None else 'tolerant')),
            {p: datas[p] for p in cfg['parties']},
            test_seeds=True,
        )
        return Relay(LocalGrid(ncs, forget=False), len(ncs), timeout=5, **kw).run(
            'dpgbdt', cfg, seeds=_seeds(cfg), fault=fault
        )

    datas, cfg = _inputs(split_method='partially_random', dropout_tolerance=0.34)
    out = run(cfg)
    srv, who = out['results']['server'], fault.split(':')[0]
    assert list(srv['dropped']) == [who] and list(out['gone']) == [who]
    res, _, _ = run_protocol(DPGBDT_PROTOCOL, datas, dict(cfg, drop=srv['dropped']), rngs=_seeds(cfg), bsp=True)
    assert res['server']['dropped'] == srv['dropped']
    for k in ('features', 'thresholds', 'leaves', 'releases'):
        same = str(srv[k]) == str(res['server'][k]) if k == 'releases' else np.array_equal(srv[k], res['server'][k])
        assert same, k
    datas, cfg = _inputs(split_method='partially_random')
    with pytest.raises(FlowerRunError, match=rf'{who} \(node \d+\) did not answer'):
        run(dict(cfg))


# ---- K classes (issue 29) ----
y3 = np.digitize(X[:, 0] + X[:, 1], [-0.7, 0.7])  # three classes


def _inputs3(**kw):
    est = DPGBDTClassifier(
        n_estimators=3, max_depth=3, n_clients=3, n_candidates=8, rng=0, feature_bounds=(-6, 6), max_rows=300, **kw
    )
    datas, cfg, _ = est.protocol_inputs(X, y3, predrawn=False)
    assert cfg['n_outputs'] == 3
    return datas, cfg


@pytest.mark.skipif(importlib.util.find_spec('cryptography') is None, reason='needs cryptography')
@pytest.mark.parametrize('split_method', ['totally_random', 'hist', 'partially_random'])
def test_three_classes_over_the_relay_without_flower(tmp_path, split_method):
    "The K class trees of a round travel flat (the schemas of nb50 unchanged): the relay's fit is the simulator's."
    from fedgauss.flower import LocalGrid, Relay, local_nodes

    datas, cfg = _inputs3(split_method=split_method)
    ncs, kw = local_nodes(str(tmp_path), {p: datas[p] for p in cfg['parties']}, test_seeds=True)
    fl = Relay(LocalGrid(ncs, forget=False), len(ncs), **kw).run('dpgbdt', cfg, seeds=_seeds(cfg))
    _check_equal(fl, datas, cfg)
    assert fl['results']['server']['leaves'].shape == (3 * 3, 8)  # T rounds of K = 3 trees, 2^3 leaves


@needs_flower
def test_three_classes_over_flower_simulation_engine():
    datas, cfg = _inputs3(split_method='hist')
    fl = _flower_run('dpgbdt', datas, cfg, seeds=_seeds(cfg), timeout=180)
    _check_equal(fl, datas, cfg)
    up = {m.kind for m in fl['channel'].messages if m.receiver == 'server' and m.kind.startswith('noisy ')}
    assert up == {'noisy histograms', 'noisy hessian histogram'}
