"""fedgauss.flower: registered protocols (SecureFedYJ, Fed-mv-PPCA and DP-Fed-mv-PPCA) over Flower give the simulator's
results and transcript with the same seeds — on Flower's simulation engine and on a real deployment (a SuperLink and one
SuperNode per party as processes on 127.0.0.1); a node with bad data stops the run before any message, a killed
SuperNode stops it with an error naming the node and the round, a node whose ClientApp thread dies stops it at
once naming the node, a task taken before its message is stored no longer stalls it (issue 32), the launchers keep
a node's state out of Flower's context and run the starting process's `fedgauss` (issue 32), and every process
started is ended. Skipped when the
`flower` extra (flwr[simulation], cryptography) is not installed."""

import importlib.util, shutil, warnings

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('flwr', 'ray', 'cryptography')),
    reason="the flower extra is not installed: pip install 'fedgauss[flower]'",
)

from fedgauss.data import load_breast_cancer
from fedgauss.mvppca import MVPPCA, FedMVPPCA, mvppca_config, mvppca_party_rngs
from fedgauss.securefedyj import SECUREFEDYJ, SecureFedYJ, securefedyj_config, yj_party_rngs
from fedgauss.smc import run_protocol
from fedgauss.yeojohnson import YeoJohnsonWarning

T_DEPLOY = 1  # search steps: 25 relay passes on breast cancer in 3 parts (~0.7-3 s each on a shared 2-core machine)
T_DEPLOY_PASSES = 25  # round trips (the hello included) of one search round, whatever its steps (`branching`); 95
# before the one-pass setup and final round (issue 32)
PARTIES = ['client0', 'client1', 'client2']


@pytest.fixture(scope='module')
def parts():
    X, _ = load_breast_cancer()
    return np.array_split(X.to_numpy(), 3)


@pytest.fixture(scope='module')
def centers():
    g = np.random.default_rng(5)
    return [
        {v: g.normal(size=(n, d)) @ g.normal(size=(d, d)) for v, d in (('a', 4), ('b', 3)) if v in has}
        for n, has in ((30, 'ab'), (25, 'a'), (40, 'ab'))
    ]


def mv_cfg(**kw):
    return mvppca_config(['center0', 'center1', 'center2'], {'a': 4, 'b': 3}, 2, 3, 6, 4, **kw)


def mvppca_deployment(centers, timeout: float, **deployment) -> tuple:
    """Fed-mv-PPCA on a fresh 3-node `FlowerDeployment` (test seeds; `deployment`: its other arguments, e.g. `workdir`
    to keep the logs): the run, and the simulator's rounds on the same data and seeds."""
    from fedgauss.flower import FlowerDeployment

    cfg = mv_cfg()
    datas = dict(zip(cfg['parties'], centers))
    _, sim_rounds, _ = run_protocol(MVPPCA, datas, cfg, rngs=mvppca_party_rngs(3, cfg['parties']), bsp=True)
    with FlowerDeployment(3, test_seeds=True, **deployment) as d:
        fl = d.run('mvppca', datas, cfg, seeds=mvppca_party_rngs(3, cfg['parties']), timeout=timeout)
    return fl, sim_rounds


def by_kind(t):
    return t.groupby('kind')['bytes'].agg(['size', 'sum'])


def in_order(t):  # the simulator's default delivery may order a round's messages otherwise; the rows are the same
    return t.sort_values(['round', 'sender', 'receiver', 'kind'], kind='stable').reset_index(drop=True)


def assert_same_global(got, ref):
    assert list(got) == list(ref)
    for v in ref:
        for k in ('mu', 'W', 'sigma2', 's_mu', 's_W', 'alpha', 'beta'):
            if ref[v][k] is None:
                assert got[v][k] is None
            else:
                np.testing.assert_allclose(got[v][k], ref[v][k], rtol=0, atol=1e-10)


def test_dp_mvppca_on_the_simulation_engine_equals_the_simulator(centers):
    from fedgauss.flower import flower_run

    dp = dict(epsilon=2.0, delta=1e-5)
    ref = FedMVPPCA(2, 3, 4, 6, dp=dp, rng=3).fit(centers)
    cfg = mv_cfg(dp=dp)
    fl = flower_run('mvppca', dict(zip(cfg['parties'], centers)), cfg, seeds=mvppca_party_rngs(3, cfg['parties']))
    assert_same_global(fl['results']['master']['global_'], ref.global_)
    pd.testing.assert_frame_equal(fl['channel'].transcript, ref.channel_.transcript)
    assert fl['wire_bytes'] > fl['channel'].summary()['total_bytes']  # pickling, sealing and requests on top


# --- a real deployment: `flower-superlink` and 3 SuperNodes as processes on 127.0.0.1, serving every run below --------
@pytest.fixture(scope='module')
def dep():
    if shutil.which('flower-superlink') is None or shutil.which('flwr') is None:
        pytest.skip('flwr console scripts (flower-superlink, flwr) not on PATH')
    from fedgauss.flower import FlowerDeployment

    with FlowerDeployment(3, test_seeds=True) as d:  # TLS, SuperNode authentication; nodes that accept test seeds
        yield d
    assert all(p.poll() is not None for p in d.procs)  # every process started was ended


def test_securefedyj_deployment_equals_the_simulator(dep, parts):
    cfg = securefedyj_config([f'x{j}' for j in range(30)], PARTIES, f=96, t_max=T_DEPLOY)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        ref = SecureFedYJ(t_max=T_DEPLOY, precision=96, rng=0).fit(parts)
        fl = dep.run(SECUREFEDYJ, dict(zip(PARTIES, [{'X': X} for X in parts])), cfg, yj_party_rngs(0, PARTIES))
    for p in PARTIES:
        np.testing.assert_array_equal(fl['results'][p]['lambdas'], ref.lambdas_)
    assert by_kind(fl['channel'].transcript).equals(by_kind(ref.channel_.transcript))
    pd.testing.assert_frame_equal(in_order(fl['channel'].transcript), in_order(ref.channel_.transcript))


def test_securefedyj_deployment_with_branching_equals_the_simulator(dep, parts):
    """Three search steps in one round (branching=3: the 7 points of their tree compared at once, issue 32): the
    simulator's transcript, and the lambdas and path of three rounds of one step; 94 passes, as one step costs."""
    cfg = securefedyj_config([f'x{j}' for j in range(30)], PARTIES, f=96, t_max=3, branching=3)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        ref = SecureFedYJ(t_max=3, precision=96, rng=0, branching=3).fit(parts)
        one = SecureFedYJ(t_max=3, precision=96, rng=0).fit(parts)
        fl = dep.run(SECUREFEDYJ, dict(zip(PARTIES, [{'X': X} for X in parts])), cfg, yj_party_rngs(0, PARTIES))
    for p in PARTIES:
        np.testing.assert_array_equal(fl['results'][p]['lambdas'], one.lambdas_)
        np.testing.assert_array_equal(fl['results'][p]['path'], one.path_)
    pd.testing.assert_frame_equal(in_order(fl['channel'].transcript), in_order(ref.channel_.transcript))
    assert fl['round_trips'] == T_DEPLOY_PASSES  # one round of the search, whatever b


def test_flower_demo_refuses_a_bad_branching_before_starting_anything(capsys):
    from fedgauss.cli import main

    assert main(['flower-demo', '--branching', '0']) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and '--branching' in err[0]


def test_mvppca_deployment_equals_the_simulator(dep, centers):
    cfg = mv_cfg()
    datas = dict(zip(cfg['parties'], centers))
    ref = FedMVPPCA(2, 3, 4, 6, rng=3).fit(centers)
    _, sim_rounds, _ = run_protocol(MVPPCA, datas, cfg, rngs=mvppca_party_rngs(3, cfg['parties']), bsp=True)
    fl = dep.run('mvppca', datas, cfg, seeds=mvppca_party_rngs(3, cfg['parties']))
    assert_same_global(fl['results']['master']['global_'], ref.global_)
    assert by_kind(fl['channel'].transcript).equals(by_kind(ref.channel_.transcript))
    pd.testing.assert_frame_equal(fl['channel'].transcript, ref.channel_.transcript)
    assert fl['rounds'] == sim_rounds


def test_a_center_with_other_views_stops_the_run_before_any_message(dep, centers):
    from fedgauss.flower import FlowerRunError

    cfg = mv_cfg()
    bad = dict(zip(cfg['parties'], centers), center1={'a': centers[1]['a'][:, :3]})
    with pytest.raises(FlowerRunError, match=r"center1 \(node \d+\), round 0 \(keys and data check\).*3 features"):
        dep.run('mvppca', bad, cfg, timeout=30)


def test_the_deployments_polls_reach_its_processes(dep):
    "Each node's longest idle wait and the SuperExec's task poll, as `FlowerDeployment` set them (flwr's defaults)."
    from fedgauss.flower import _tree

    assert (dep.idle_poll, dep.task_poll) == (1.0, 1.0)

    def read(pid, what):  # b'' for a process that has ended since (e.g. a finished run's ServerApp)
        try:
            with open(f'/proc/{pid}/{what}', 'rb') as fh:
                return fh.read()
        except OSError:
            return b''

    def environ(pid):
        return dict(v.split(b'=', 1) for v in read(pid, 'environ').split(b'\0') if b'=' in v)

    procs = {q: read(q, 'cmdline') for p in dep.procs for q in _tree(p.pid)}
    nodes = [q for q, cmd in procs.items() if b'node_main' in cmd]
    execs = [q for q, cmd in procs.items() if b'flower-superexec' in cmd]
    assert len(nodes) == 3 and execs
    assert all(environ(q)[b'FEDGAUSS_FLOWER_IDLE_POLL'] == b'1.0' for q in nodes)
    assert all(environ(q)[b'FLWR_SUPEREXEC_TASK_POLL_INTERVAL'] == b'1.0' for q in execs)


def test_a_killed_supernode_stops_the_run_naming_node_and_round(dep, centers):  # the last test: it kills a node
    from fedgauss.flower import FlowerRunError

    cfg = mv_cfg()
    # center1's SuperNode process exits (os._exit) at its 2nd protocol step; the relay waits `timeout` s for its reply
    with pytest.raises(FlowerRunError, match=r'center1 \(node \d+\) did not answer within 20 s in round 2'):
        dep.run('mvppca', dict(zip(cfg['parties'], centers)), cfg, timeout=20, fault='center1:2:die')
    assert dep.procs[2].poll() is not None  # node 1 (center1) is gone
    dep.close()
    assert all(p.poll() is not None for p in dep.procs)


def test_a_dead_clientapp_thread_stops_the_run_naming_the_node(centers):
    """center1's ClientApp thread ends at its 2nd step (`SystemExit`, which a thread swallows silently): its node says
    so and exits (`_watch_clientapps`), and the run stops on that at once, naming the node and its party — not after
    the pass's `timeout` with "did not answer"."""
    if shutil.which('flower-superlink') is None or shutil.which('flwr') is None:
        pytest.skip('flwr console scripts (flower-superlink, flwr) not on PATH')
    from fedgauss.flower import CLIENTAPP_DIED, FlowerDeployment, FlowerRunError

    cfg = mv_cfg()
    with FlowerDeployment(3, test_seeds=True) as d:
        with pytest.raises(FlowerRunError) as e:
            d.run('mvppca', dict(zip(cfg['parties'], centers)), cfg, timeout=120, fault='center1:2:crash')
        assert d.procs[2].poll() == CLIENTAPP_DIED  # node 1's process, ended by its watchdog
    msg = str(e.value)
    assert msg.startswith('SuperNode 1 (center1, pid ') and 'did not answer' not in msg
    assert 'the ClientApp thread of SuperNode partition-id=1 died (SystemExit: center1 crashes' in msg


SLOW_STORE = '''import os
if os.environ.get('FG_SLOW_STORE'):  # widen a SuperNode's window between creating a task and storing its message
    import time
    from flwr.supernode.nodestate import in_memory_nodestate as m

    _store = m.InMemoryNodeState.store_message

    def store_message(self, message):
        if not message.metadata.reply_to_message_id:
            time.sleep(float(os.environ['FG_SLOW_STORE']))
        return _store(self, message)

    m.InMemoryNodeState.store_message = store_message
'''


def test_a_task_taken_before_its_message_is_stored_does_not_stall_the_run(centers, tmp_path, monkeypatch):
    """flwr's SuperNode creates a message's task before it stores the message. A ClientApp thread that asks for tasks
    on its own clock (the launcher's polling loop before issue 32) could take the task in between, find no message
    (`pull_task_input`: "No messages received from Runtime API") and die silently, its node never answering again:
    the stall ("client1 did not answer within 60 s") seen under load. With the window widened to 0.1 s in every node,
    the run still finishes: the thread asks only once its node has stored the message."""
    if shutil.which('flower-superlink') is None or shutil.which('flwr') is None:
        pytest.skip('flwr console scripts (flower-superlink, flwr) not on PATH')
    import os

    (tmp_path / 'sitecustomize.py').write_text(SLOW_STORE)
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    monkeypatch.setenv('FG_SLOW_STORE', '0.1')
    fl, sim_rounds = mvppca_deployment(centers, 30, workdir=str(tmp_path / 'dep'))
    logs = ''.join((tmp_path / 'dep' / f'node{k}.log').read_text() for k in range(3))
    assert fl['rounds'] == sim_rounds
    assert 'No messages received' not in logs and 'Traceback' not in logs


CTX_LOG = '''import os
if os.environ.get('FG_CTX_LOG'):  # record the bytes of every context a ClientApp hands back to its SuperNode
    import flwr.supernode.runtime.run_clientapp as rc
    from flwr.common.serde import context_to_proto

    _push = rc.push_task_output

    def push_task_output(c, ctx, *args, **kwargs):
        with open(os.path.join(os.environ['FG_CTX_LOG'], f'{os.getpid()}.txt'), 'a') as fh:
            fh.write(f"{context_to_proto(ctx).ByteSize() if ctx is not None else 0}\\n")
        return _push(c, ctx, *args, **kwargs)

    rc.push_task_output = push_task_output
'''


def _logged_deployment(centers, tmp_path, monkeypatch, hook, var):
    """Run the Fed-mv-PPCA deployment with `hook` as every process's `sitecustomize` and its log folder in env `var`:
    returns (the Flower result, the simulator's rounds, the log folder)."""
    import os

    (tmp_path / 'sitecustomize.py').write_text(hook)
    (log := tmp_path / 'log').mkdir()
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    monkeypatch.setenv(var, str(log))
    return (*mvppca_deployment(centers, 60), log)


def test_the_launchers_keep_the_node_state_out_of_flowers_context(centers, tmp_path, monkeypatch):
    """The launchers' ClientApp thread keeps its node's state in the SuperNode's process (`client_app(memory={})`), so
    the context it hands back to its SuperNode after every message carries no state (before issue 32's change it
    carried the pickled state — the party's checkpoint and the inboxes since — after every message, both ways through
    the node's Runtime API: on SecureFedYJ's demo, 3.5 times the bytes of the messages). Same results as before."""
    if shutil.which('flower-superlink') is None or shutil.which('flwr') is None:
        pytest.skip('flwr console scripts (flower-superlink, flwr) not on PATH')
    fl, sim_rounds, log = _logged_deployment(centers, tmp_path, monkeypatch, CTX_LOG, 'FG_CTX_LOG')
    assert fl['rounds'] == sim_rounds
    sizes = [int(v) for f in log.iterdir() for v in f.read_text().split()]
    assert len(sizes) >= fl['round_trips']  # every node's every message: at least one a pass
    assert max(sizes) < 1024, f"a context of {max(sizes):,} bytes: the node's state went through Flower's context"


def test_the_nodes_run_the_fedgauss_of_the_process_that_starts_them(centers, tmp_path, monkeypatch):
    """A SuperNode launcher is `python -c ...`, which puts the current folder first on its path: started from a folder
    holding another `fedgauss` (another checkout: a benchmark comparing two trees), the nodes imported that one while
    the ServerApp ran this one (issue 32: an A/B with main's tree on the path measured this tree's nodes). The nodes now
    run the `fedgauss` of the process that starts them: here the folder's one cannot even be imported."""
    if shutil.which('flower-superlink') is None or shutil.which('flwr') is None:
        pytest.skip('flwr console scripts (flower-superlink, flwr) not on PATH')

    (tmp_path / 'fedgauss').mkdir()
    (tmp_path / 'fedgauss' / '__init__.py').write_text("raise ImportError('the fedgauss of the current folder')\n")
    monkeypatch.chdir(tmp_path)
    fl, sim_rounds = mvppca_deployment(centers, 60, workdir=str(tmp_path / 'dep'))
    logs = ''.join((tmp_path / 'dep' / f'node{k}.log').read_text() for k in range(3))
    assert fl['rounds'] == sim_rounds
    assert 'the fedgauss of the current folder' not in logs


REQ_LOG = '''import os
if os.environ.get('FG_REQ_LOG'):  # log the path of every HTTP request this process's ASGI servers serve
    import sys
    import starlette.applications as sa

    _call, _who = sa.Starlette.__call__, 'node ' if sys.argv[0] == '-c' else 'other '  # a launcher: `python -c`

    async def call(self, scope, receive, send):
        if scope.get('type') == 'http':
            with open(os.path.join(os.environ['FG_REQ_LOG'], f'{os.getpid()}.txt'), 'a') as fh:
                fh.write(_who + scope['path'] + '\\n')
        return await _call(self, scope, receive, send)

    sa.Starlette.__call__ = call
'''


def test_a_clientapp_calls_its_nodes_runtime_api_without_http(centers, tmp_path, monkeypatch):
    """The launchers' ClientApp thread lives in its SuperNode's process and calls the node's Runtime API there
    (`NodeRuntime`: flwr's own handlers on the node's state). Before issue 32's change each message took 13 HTTP
    requests from the thread to its own node (take the task, its input, the message, its objects, a confirmation; the
    reply, its objects, the task's output; one more to find no other task): now none, and the same run."""
    if shutil.which('flower-superlink') is None or shutil.which('flwr') is None:
        pytest.skip('flwr console scripts (flower-superlink, flwr) not on PATH')
    fl, sim_rounds, log = _logged_deployment(centers, tmp_path, monkeypatch, REQ_LOG, 'FG_REQ_LOG')
    assert fl['rounds'] == sim_rounds
    served = [ln for f in log.iterdir() for ln in f.read_text().splitlines()]
    assert any(s.startswith('other /v1/fleet/pull-messages') for s in served)  # the log saw the SuperLink's requests
    node = [s for s in served if s.startswith('node ')]
    assert node == [], f"{len(node)} HTTP requests to the nodes' Runtime API, e.g. {node[:3]}"


def test_a_run_error_names_the_supernodes_that_ended_and_how(tmp_path):
    """A run that fails because a node is missing ("3 of 4 nodes connected within 60 s", seen once in CI under load)
    names, for its operator, each SuperNode process that has ended: its code and the last line of its log."""
    import subprocess, sys

    from fedgauss.flower import FlowerRunError, _free_ports, _with_nodes_gone

    logs = [tmp_path / f'node{k}.log' for k in range(3)]
    code = ["import time; time.sleep(30)", "print('address already in use'); raise SystemExit(3)", "pass"]
    procs = [subprocess.Popen([sys.executable, '-c', "import time; time.sleep(30)"])]  # the SuperLink, running
    for log, c in zip(logs, code):
        with open(log, 'w') as fh:
            procs.append(subprocess.Popen([sys.executable, '-c', c], stdout=fh, stderr=subprocess.STDOUT))
    try:
        procs[2].wait(20), procs[3].wait(20)
        err = _with_nodes_gone(FlowerRunError('3 of 4 nodes connected within 60 s'), str(tmp_path), procs)
        msg = str(err)
        assert isinstance(err, FlowerRunError) and msg.startswith('3 of 4 nodes connected within 60 s; ')
        assert 'SuperNode 1 (pid' in msg and 'ended with code 3: address already in use' in msg
        assert 'SuperNode 2 (pid' in msg and 'ended with code 0' in msg and 'SuperNode 0' not in msg
        other = ValueError('not a run error')
        assert _with_nodes_gone(other, str(tmp_path), procs) is other  # other errors pass through unchanged
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert len(set(_free_ports(64))) == 64


# --- what waiting costs (issue 32): the two polls an idle deployment pays for, set by `FlowerDeployment` --------------
def test_an_idle_node_waits_a_tenth_of_its_wait_up_to_its_idle_poll():
    from fedgauss.flower import FlowerDeployment, _FastTime

    ft = _FastTime(0.005, idle_cap=3.0)  # `FlowerDeployment(idle_poll=3)`
    for waited, wait in ((0.01, 0.005), (5.0, 0.5), (20.0, 2.0), (600.0, 3.0)):
        assert ft.wait_at(ft.since + waited) == pytest.approx(wait)
    for bad in (0, -1, 61, True, 'x', float('nan')):
        with pytest.raises(ValueError, match='idle_poll must be a number of seconds from 0.01 to 60'):
            FlowerDeployment(2, idle_poll=bad)
