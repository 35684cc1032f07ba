"""fedgauss.flower: SecureFedYJ on Flower's simulation engine (virtual SuperNodes as Ray actors, in this process's
machine only) gives the simulator's lambdas and transcript; a node that hangs or dies stops the run with an error naming
it and the round. Skipped when the `flower` extra (flwr[simulation], cryptography) is not installed."""

import importlib.util, os, shutil, warnings

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('flwr', 'ray', 'cryptography')),
    reason="the flower extra is not installed: pip install 'fedgauss[flower]'",
)

from fedgauss.data import load_breast_cancer
from fedgauss.securefedyj import SecureFedYJ
from fedgauss.yeojohnson import YeoJohnsonWarning

T_MAX = 4


@pytest.fixture(scope='module')
def parts():
    X, _ = load_breast_cancer()
    return np.array_split(X.to_numpy(), 3)


@pytest.fixture(scope='module')
def reference(parts):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        return SecureFedYJ(t_max=T_MAX, precision=96, rng=0).fit(parts)


def by_kind(t):
    return t.groupby('kind')['bytes'].agg(['size', 'sum'])


def test_flower_simulation_equals_the_simulator(parts, reference):
    from fedgauss.flower import flower_simulation

    fl = flower_simulation(parts, t_max=T_MAX, f=96, timeout=120)
    np.testing.assert_array_equal(fl['lambdas'], reference.lambdas_)
    np.testing.assert_allclose(fl['var'], reference.var_, rtol=1e-12)
    assert by_kind(fl['channel'].transcript).equals(by_kind(reference.channel_.transcript))
    assert (
        fl['rounds']['setup'] == [reference.rounds_['setup']] and fl['rounds']['search'] == reference.rounds_['search']
    )
    assert fl['wire_bytes'] > fl['channel'].summary()['total_bytes']  # pickling, sealing and requests on top


@pytest.mark.parametrize(
    'mode', ['die']
)  # 'hang' works (error after the timeout) but the simulation engine may then wait on the busy actor at shutdown
def test_a_node_that_stops_is_named_with_its_round(parts, mode, monkeypatch):
    from fedgauss.flower import FlowerRunError, flower_simulation

    monkeypatch.setenv('FEDGAUSS_FLOWER_FAULT', f'client1:12:{mode}')  # client1 stops at its 12th step (mid-setup)
    with pytest.raises(FlowerRunError, match=r'client1 \(node \d+\).*round \d+'):
        flower_simulation(parts, t_max=T_MAX, f=96, timeout=15)


def test_a_node_with_other_columns_stops_before_any_share(parts):
    from fedgauss.flower import FlowerRunError, flower_simulation

    bad = [parts[0], parts[1][:, :29], parts[2]]
    with pytest.raises(FlowerRunError, match=r'client1 .*29 columns; the federation has 30'):
        flower_simulation(bad, names=[f'x{j}' for j in range(30)], t_max=T_MAX, f=96, timeout=180)


# --- a real deployment: `flower-superlink` and one SuperNode per party as processes on 127.0.0.1 ---------------------
T_DEPLOY = 1  # search steps: keeps the run to a minute or two (passes take ~0.5-3 s on a shared 2-core machine)
needs_deploy = pytest.mark.skipif(
    shutil.which('flower-superlink') is None or shutil.which('flwr') is None,
    reason='flwr console scripts (flower-superlink, flwr) not on PATH',
)


def _ended(procs):
    return all(p.poll() is not None for p in procs)


@needs_deploy
def test_deployment_equals_the_simulator(parts):
    from fedgauss.flower import flower_deploy

    started = {}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        ref = SecureFedYJ(t_max=T_DEPLOY, precision=96, rng=0).fit(parts)
        fl = flower_deploy(parts, t_max=T_DEPLOY, f=96, rng=0, timeout=60, on_started=started.update)
    np.testing.assert_array_equal(fl['lambdas'], ref.lambdas_)
    assert by_kind(fl['channel'].transcript).equals(by_kind(ref.channel_.transcript))
    assert _ended([started['superlink'], *started['nodes']])


@needs_deploy
def test_a_killed_supernode_stops_the_run_naming_node_and_round(parts, monkeypatch):
    from fedgauss.flower import FlowerRunError, flower_deploy

    # client1's SuperNode process exits (os._exit) at its 5th protocol step; the relay waits `timeout` s for its reply
    monkeypatch.setenv('FEDGAUSS_FLOWER_FAULT', 'client1:5:die')
    started = {}
    with pytest.raises(FlowerRunError, match=r'client1 \(node \d+\) did not answer within 20 s in round \d+'):
        flower_deploy(parts, t_max=T_DEPLOY, f=96, rng=0, timeout=20, on_started=started.update)
    assert _ended([started['superlink'], *started['nodes']])
