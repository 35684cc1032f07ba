"""Benchmark: SecureFedYJ over Flower next to the in-process simulator, on the same data: wall time, round trips
(relay passes), bytes in the transcript (the same for both) and bytes on the wire over Flower (pickled requests and
replies, sealed shares). `--engine deployment` (default): a real `flower-superlink` and one SuperNode process per client
on 127.0.0.1 (`fedgauss.flower.flower_deploy`; the wall time includes starting them); `--engine simulation`: Flower's
simulation engine (virtual SuperNodes as Ray actors).

    python tests/bench_flower.py [--engine deployment] [--n 100000] [--d 30] [--clients 5] [--t-max 1]

`--secagg`: the dropout-tolerant secure aggregation (fedgauss.secagg, issue 30 §2) over the relay with nodes in this
process (`LocalGrid`: codec, sealing and every party's work, no transport), `--nodes` clients (10) summing `--length`
values each (10,000), as 0, 1 and 3 of the nodes stop answering at their third step (after their shares, before their
masked input: the costliest stage, the server rebuilds their keys and removes their pair masks); `rho = 0.3`. Seconds
(median of `--repeat` runs), passes, bytes in the transcript and on the wire, each against the run without dropout and
against the in-process simulator (`run_protocol`, the same programs, the same clients dropping via `drop=`).

    python tests/bench_flower.py --secagg [--nodes 10] [--length 10000] [--drops 0,1,3] [--repeat 3]

`--passes`: where a relay pass waits and what the deployment burns, on `fedgauss flower-demo`'s data (breast cancer in
3 parts, θ = 0.8, TLS and SuperNode authentication, `--t-max` 1): per run, the medians of `pass_timeline`'s split of a
pass (until the first node answered, the spread between the nodes, until the relay had every reply, its own work),
the CPU seconds per pass of every process (from /proc: the SuperLink, its SuperExec and ServerApp, the SuperNodes),
and the CPU share each burns while the deployment idles (`--idle` s, measured `--settle` s after it started).
`--stall N`: N back-to-back runs (fresh deployments) while `--load` busy loops load the CPU; every run's outcome and
the logs of a failed one (kept under `--logs`).

    python tests/bench_flower.py --passes [--repeat 3] [--json out.jsonl]
    python tests/bench_flower.py --stall 20 [--load 2] [--logs /tmp/fedgauss-stall]

`--demo`: `fedgauss flower-demo`'s run itself (`t_max` 128, `branching` 5 unless `--t-max`/`--branching` say
otherwise; TLS and SuperNode authentication), `--repeat` times on fresh deployments: passes, wall seconds (with the
start-up, as `flower-demo` prints them) and per pass (the passes alone, from the relay's timeline), CPU seconds per
pass summed over every process (and by kind), MiB on the wire and in the transcript, the load average before each.

    python tests/bench_flower.py --demo [--repeat 2] [--json out.jsonl]

`--requests`: the HTTP requests of a `--passes` run, counted where they are served (the SuperLink, and each
SuperNode's Runtime API), by endpoint, per pass: a test harness only, a `sitecustomize` put on the path of the
processes it starts that logs every request their ASGI servers serve (path, start, duration). Then the cost of one
request: the SuperLink's CPU per pass over its requests per pass, and its CPU per request while the deployment idles
(every request then is an empty poll: the nodes' pulls and the SuperExec's task polls).

    python tests/bench_flower.py --requests [--json out.jsonl]

`--idle-table`: what a deployment burns while it waits, against how late a run then starts: for each setting of
its two polls (`FlowerDeployment(task_poll=, idle_poll=)`: before issue 32's last change, the default, idle nodes
pulling every 3 s, and the polls all but off), `--repeat` fresh deployments (3 SuperNodes, TLS, authentication) left idle, settings alternating: the CPU
share of each process kind over `--idle` s, `--settle` s after start-up; then a SecureFedYJ run on `flower-demo`'s data
(`--t-max` 1): its wall seconds, which include up to one task poll (the run's start) and one idle poll (its first
message). Medians; `--csv` writes them (nb50 prints `nbs/50_flower_idle.csv`).

    python tests/bench_flower.py --idle-table [--repeat 3] [--settle 30] [--idle 30] [--csv nbs/50_flower_idle.csv]

`--micro`: each piece a payload goes through, per MiB (milliseconds, median of `--repeat` 5+ runs, in this process):
our codec on a 1 MiB share (448-bit ring elements, as SecureFedYJ sends them), sealing and opening it, pickling a node
state of that size, and flwr's side of one message carrying it (its object tree: serialising every object and its
SHA-256, as a push does) and of one context (to and from protobuf, as the Runtime API ships it).

    python tests/bench_flower.py --micro

Needs the flower extra: pip install 'fedgauss[flower]'.
"""

import os, time

os.environ.setdefault('OMP_NUM_THREADS', '1')
import numpy as np

from fedgauss.flower import flower_deploy, flower_simulation
from fedgauss.securefedyj import SecureFedYJ

from bench_securefedyj import benchmark_data, data_arguments  # the same data and command line


def secagg_runs(nodes: int, length: int, drops: list, repeat: int, seed: int = 0) -> list:
    "One row per dropout count: the relay over `LocalGrid` and the simulator, seconds (median), passes, bytes."
    import statistics, tempfile
    from fedgauss.entropy import party_rngs
    from fedgauss.flower import LocalGrid, Relay, local_nodes
    from fedgauss.secagg import SECAGG, secagg_config
    from fedgauss.smc import run_protocol

    names = [f'c{i}' for i in range(nodes)]
    g = np.random.default_rng(seed)
    datas = {c: {'x': g.normal(size=length)} for c in names}
    out = []
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, datas, test_seeds=True)
        for n_drop in drops:
            gone = names[1 : 1 + 3 * n_drop : 3][:n_drop]  # spread over the order: c1, c4, c7, ...
            cfg = secagg_config(names, (length,), rho=0.3)
            fault = ','.join(f'{c}:3:die' for c in gone) or None
            fl_s, sim_s = [], []
            for r in range(repeat):
                t = time.perf_counter()
                fl = Relay(LocalGrid(ncs), nodes, **kw).run(SECAGG, cfg, seeds=party_rngs(seed + r, names), fault=fault)
                fl_s.append(time.perf_counter() - t)
                t = time.perf_counter()
                sim, _, ch = run_protocol(
                    SECAGG, datas, dict(cfg, drop={c: 'mask' for c in gone}), rngs=party_rngs(seed + r, names), bsp=True
                )
                sim_s.append(time.perf_counter() - t)
            res = fl['results']['server']
            exact = np.sum([datas[c]['x'] for c in res['survivors']], axis=0)
            assert sorted(res['dropped']) == sorted(gone) and np.abs(res['sum'] - exact).max() < nodes * 2.0**-24
            assert np.array_equal(res['sum'], sim['server']['sum'])
            out.append(
                dict(dropouts=n_drop, seconds=statistics.median(fl_s), sim_seconds=statistics.median(sim_s),
                     passes=fl['round_trips'], transcript_bytes=int(fl['channel'].summary()['total_bytes']),
                     wire_bytes=fl['wire_bytes'], sim_bytes=int(ch.summary()['total_bytes']))
            )  # fmt: skip
    return out


def print_secagg(rows: list, nodes: int, length: int):
    "The table: each run against the one without dropout and against the simulator."
    base = rows[0]
    print(f"secagg over the relay, {nodes} nodes in this process (LocalGrid), {length:,} values each, rho = 0.3")
    head = f"{'dropouts':>8s}{'seconds':>9s}{'vs 0':>7s}{'sim s':>8s}{'vs sim':>8s}{'passes':>8s}"
    print(head + f"{'transcript kB':>15s}{'vs 0':>7s}{'wire kB':>10s}{'wire/transcript':>17s}{'= sim bytes':>13s}")
    for r in rows:
        print(
            f"{r['dropouts']:8d}{r['seconds']:9.3f}{r['seconds'] / base['seconds']:7.2f}{r['sim_seconds']:8.3f}"
            f"{r['seconds'] / r['sim_seconds']:8.2f}{r['passes']:8d}{r['transcript_bytes'] / 1e3:15.1f}"
            f"{r['transcript_bytes'] / base['transcript_bytes']:7.2f}{r['wire_bytes'] / 1e3:10.1f}"
            f"{r['wire_bytes'] / r['transcript_bytes']:17.2f}{str(r['transcript_bytes'] == r['sim_bytes']):>13s}"
        )


def _cpu(pid: int) -> tuple:
    "CPU seconds (user + system) of `pid` and what it runs, from /proc; (None, '') once it is gone."
    try:
        with open(f'/proc/{pid}/stat') as fh:
            f = fh.read().rsplit(')', 1)[1].split()
        with open(f'/proc/{pid}/cmdline', 'rb') as fh:
            cmd = fh.read().replace(b'\0', b' ').decode()
    except OSError:
        return None, ''
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK'), cmd


_KINDS = (
    'node_main',
    'flower-supernode',
    'serverapp',
    'superexec',
    'clientapp',
    'superlink',
)  # a node names its superlink


class CPUMeter:
    "CPU seconds of every process under `roots`, by kind (SuperLink, SuperExec, ServerApp, SuperNode), sampled."

    def __init__(self, roots: list):
        self.roots, self.kind, self.total = roots, {}, {}

    def sample(self) -> dict:
        from fedgauss.flower import _tree

        for q in [q for r in self.roots for q in _tree(r)]:
            c, cmd = _cpu(q)
            if c is not None and cmd:
                self.kind.setdefault(q, next((k for k in _KINDS if k in cmd), 'other'))
                self.total[q] = c
        out = {}
        for q, c in self.total.items():
            out[self.kind[q]] = out.get(self.kind[q], 0.0) + c
        return out


def sample_until(meter: CPUMeter, stop, info: dict):
    "Sample `meter` into `info['end']` every 50 ms, in a daemon thread, until the event `stop` is set."
    import threading

    def sample():
        while not stop.wait(0.05):
            info['end'] = meter.sample()

    threading.Thread(target=sample, daemon=True).start()


def demo_clients(seed: int = 0) -> tuple:
    "`fedgauss flower-demo`'s data: breast cancer in 3 parts (label skew 0.8); (column names, clients)."
    import io
    from fedgauss.yjcli import breast_cancer_split

    X, splits = breast_cancer_split(3, 0.8, seed, 'SuperNode', io.StringIO())
    return list(X.columns), [np.asarray(Xk, dtype=np.float64) for Xk, _ in splits]


def pass_run(t_max: int = 1, idle: float = 10.0, settle: float = 15.0, timeout: float = 60.0, **kw) -> dict:
    """One SecureFedYJ run on a fresh deployment: idle CPU shares by process kind (`idle` s, `settle` s after the
    processes started), then the run's timeline medians and CPU seconds per pass by kind."""
    import threading, warnings
    from fedgauss.flower import pass_timeline

    names, clients = demo_clients()
    info, stop = {}, threading.Event()

    def started(p):
        m = CPUMeter([p['superlink'].pid] + [q.pid for q in p['nodes']])
        time.sleep(settle)
        a, t = m.sample(), time.time()
        time.sleep(idle)
        b, dt = m.sample(), time.time() - t
        info['idle'] = {k: (b[k] - a.get(k, 0.0)) / dt for k in b}
        info['meter'], info['start'] = m, m.sample()
        sample_until(m, stop, info)

    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        fl = flower_deploy(clients, names=names, t_max=t_max, f=96, rng=0, timeout=timeout, on_started=started, **kw)
    stop.set()
    tl = pass_timeline(fl)
    st = tl[tl['what'] == 'protocol step'].groupby('pass')
    per = st.agg(s=('sent', 'first'), a=('answered', 'min'), b=('answered', 'max'), d=('done', 'first'))
    per['n'] = st['next_sent'].first()
    n = fl['round_trips']
    split = {'first': per['a'] - per['s'], 'spread': per['b'] - per['a'], 'back': per['d'] - per['b']}
    split.update(own=per['n'] - per['d'], passs=per['n'] - per['s'])
    run_cpu = {k: (v - info['start'].get(k, 0.0)) / n for k, v in info['end'].items()}
    return dict(load=load, passes=n, seconds=fl['seconds'], **{k: float(v.median()) for k, v in split.items()},
                idle=info['idle'], cpu_per_pass=run_cpu)  # fmt: skip


def demo_run(t_max: int = 128, branching: int = 5, timeout: float = 120.0) -> dict:
    """One `fedgauss flower-demo` run (its data, its defaults) on a fresh deployment: passes, seconds, CPU seconds of
    every process from the deployment's start to the run's end (by kind), bytes on the wire and in the transcript."""
    import threading, warnings

    names, clients = demo_clients()
    info, stop = {}, threading.Event()

    def started(p):
        m = CPUMeter([p['superlink'].pid] + [q.pid for q in p['nodes']])
        info['start'] = m.sample()
        sample_until(m, stop, info)

    load = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        fl = flower_deploy(
            clients, names=names, t_max=t_max, f=96, branching=branching, timeout=timeout, on_started=started
        )
    stop.set()
    n, tl = fl['round_trips'], fl['timeline']
    cpu = {k: v - info['start'].get(k, 0.0) for k, v in info['end'].items()}
    return dict(load=load, passes=n, seconds=fl['seconds'], pass_s=(tl[-1]['done'] - tl[0]['sent']) / n,
                cpu_per_pass=sum(cpu.values()) / n, cpu_by_kind={k: v / n for k, v in cpu.items()},
                wire_mib=fl['wire_bytes'] / 2**20, transcript_mib=fl['channel'].summary()['total_bytes'] / 2**20,
                converged=int(np.sum(fl['converged'])))  # fmt: skip


def print_demo(rows: list):
    "Each demo run: load, passes, wall s, s/pass, CPU s/pass (all processes, then by kind), MiB."
    kinds = sorted({k for r in rows for k in r['cpu_by_kind']})
    print(f"{'load':>5s}{'passes':>7s}{'wall s':>8s}{'s/pass':>7s}{'CPU s/pass':>11s}", end=' ')
    print(' '.join(f"{k[:9]:>9s}" for k in kinds), f"{'wire MiB':>9s}{'transcript MiB':>15s}{'converged':>10s}")
    for r in rows:
        print(
            f"{r['load']:5.1f}{r['passes']:7d}{r['seconds']:8.1f}{r['pass_s']:7.3f}{r['cpu_per_pass']:11.3f}", end=' '
        )
        print(' '.join(f"{r['cpu_by_kind'].get(k, 0):9.3f}" for k in kinds), end=' ')
        print(f"{r['wire_mib']:9.1f}{r['transcript_mib']:15.1f}{r['converged']:10d}")


def micro(repeat: int = 5) -> dict:
    "Milliseconds per MiB of each piece a 1 MiB payload goes through (median of `repeat` runs)."
    import pickle, statistics
    from fedgauss.entropy import secret_ints, secret_rng
    from fedgauss.smc import RingElements
    from fedgauss.wire import decode, encode, pair_key, new_keypair, seal, unseal

    def ms(f):
        f()
        out = []
        for _ in range(max(repeat, 5)):
            t = time.perf_counter()
            f()
            out.append(time.perf_counter() - t)
        return statistics.median(out) * 1e3

    share = RingElements(secret_ints(secret_rng(0), (2**20 // 56,), 448), 448)  # 1 MiB of 448-bit elements
    blob = encode(share)
    mib = len(blob) / 2**20
    priv, pub = new_keypair()
    key = pair_key(priv, new_keypair()[1], 'a', 'b')
    sealed = seal(key, share, 'run', 'a', 'b', 'share', 0)
    state = {'party': {'log': [[('a', 'share', share)]]}}
    out = {
        'encode (codec)': ms(lambda: encode(share)) / mib,
        'decode (codec)': ms(lambda: decode(blob)) / mib,
        'seal (codec + AES-GCM)': ms(lambda: seal(key, share, 'run', 'a', 'b', 'share', 0)) / mib,
        'unseal (AES-GCM + codec)': ms(lambda: unseal(key, sealed, 'run', 'a', 'b', 'share', 0)) / mib,
        'pickle.dumps of a node state': ms(lambda: pickle.dumps(state, protocol=5)) / mib,
        'pickle.loads of a node state': ms(lambda: pickle.loads(pickle.dumps(state, protocol=5))) / mib,
    }
    try:
        from flwr.app import ConfigRecord, Context, Message, RecordDict
        from flwr.common.serde import context_from_proto, context_to_proto
        from flwr.supercore.inflatable.inflatable_object import get_all_nested_objects, no_object_id_recompute
        from flwr.supercore.task_identity import TaskIdentity
    except ImportError:
        return out
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 1
    st = pickle.dumps(state, protocol=5)

    def push():  # what a push serialises and hashes: every object of the message, once
        m = Message(RecordDict({'fedgauss': ConfigRecord({'blob': sealed})}), dst_node_id=1, message_type='query')
        with no_object_id_recompute():
            return {k: v.deflate() for k, v in get_all_nested_objects(m).items()}

    ctx = Context(
        run_id=1, node_id=1, node_config={}, state=RecordDict({'f': ConfigRecord({'state': st})}), run_config={}
    )
    out['flwr: a message\'s objects (serialise + SHA-256)'] = ms(push) / mib
    out['flwr: context to protobuf + bytes'] = ms(lambda: context_to_proto(ctx).SerializeToString()) / mib
    out['flwr: context from protobuf'] = ms(lambda: context_from_proto(context_to_proto(ctx))) / mib
    return out


_REQLOG_HOOK = """import os
if os.environ.get('FEDGAUSS_REQLOG'):
    import sys, time
    import starlette.applications as _sa

    _call0, _log = _sa.Starlette.__call__, os.path.join(os.environ['FEDGAUSS_REQLOG'], f'req-{os.getpid()}.log')
    _fh = open(_log, 'a', buffering=1)
    _fh.write('#argv ' + ' '.join(sys.argv)[:300] + '\\n')

    async def _call(self, scope, receive, send):
        if scope.get('type') != 'http':
            return await _call0(self, scope, receive, send)
        t0 = time.time()
        try:
            return await _call0(self, scope, receive, send)
        finally:
            _fh.write(f"{t0:.6f}\\t{time.time() - t0:.6f}\\t{scope.get('path')}\\n")

    _sa.Starlette.__call__ = _call
"""


def _served(logdir: str, t0: float, t1: float) -> dict:
    "(server, endpoint) -> [requests, seconds served] between `t0` and `t1`, from the harness's logs."
    import glob

    out = {}
    for f in glob.glob(os.path.join(logdir, 'req-*.log')):
        lines = open(f).read().splitlines()
        argv = lines[0][6:] if lines and lines[0].startswith('#argv') else ''
        who = 'node' if argv.startswith('-c') else 'superlink' if 'flower-superlink' in argv else None
        for ln in lines[1:] if who else []:
            t, d, path = ln.split('\t')
            if t0 <= float(t) <= t1:
                r = out.setdefault((who, '/'.join(path.split('/')[-2:])), [0, 0.0])
                r[0], r[1] = r[0] + 1, r[1] + float(d)
    return out


def request_run(t_max: int = 1, idle: float = 10.0, settle: float = 15.0) -> dict:
    """One `--passes` run with every served request logged (a harness on the started processes' path): requests per
    pass by (server, endpoint), the SuperLink's CPU per pass and per request, and its CPU per empty request (idle)."""
    import tempfile, threading, warnings
    from fedgauss.flower import flower_deploy

    names, clients = demo_clients()
    info, stop = {}, threading.Event()
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, 'sitecustomize.py'), 'w') as fh:
            fh.write(_REQLOG_HOOK)
        env = {k: os.environ.get(k) for k in ('FEDGAUSS_REQLOG', 'PYTHONPATH')}
        os.environ['FEDGAUSS_REQLOG'] = d
        os.environ['PYTHONPATH'] = os.pathsep.join([d] + [p for p in [env['PYTHONPATH']] if p])

        def started(p):
            m = CPUMeter([p['superlink'].pid] + [q.pid for q in p['nodes']])
            time.sleep(settle)
            a, t = m.sample(), time.time()
            time.sleep(idle)
            b, info['idle_window'] = m.sample(), (t, time.time())
            info['idle_cpu'] = b.get('superlink', 0.0) - a.get('superlink', 0.0)
            info['start'] = m.sample()
            sample_until(m, stop, info)

        load = os.getloadavg()[0]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                fl = flower_deploy(clients, names=names, t_max=t_max, f=96, rng=0, timeout=60, on_started=started)
        finally:
            stop.set()
            for k, v in env.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        n, tl = fl['round_trips'], fl['timeline']
        run = _served(d, tl[0]['sent'], tl[-1]['done'])
        idle_req = sum(c for (who, _), (c, _) in _served(d, *info['idle_window']).items() if who == 'superlink')
    link_cpu = (info['end'].get('superlink', 0.0) - info['start'].get('superlink', 0.0)) / n
    link_req = sum(c for (who, _), (c, _) in run.items() if who == 'superlink') / n
    return dict(load=load, passes=n, pass_s=(tl[-1]['done'] - tl[0]['sent']) / n,
                per_pass={f'{w} {e}': c / n for (w, e), (c, _) in run.items()},
                ms_each={f'{w} {e}': s / c * 1e3 for (w, e), (c, s) in run.items()},
                link_cpu_per_pass=link_cpu, link_requests_per_pass=link_req,
                link_cpu_per_request=link_cpu / link_req, idle_requests=idle_req,
                idle_cpu_per_request=info['idle_cpu'] / max(idle_req, 1))  # fmt: skip


def print_requests(r: dict):
    "Requests per pass by server and endpoint, and the SuperLink's CPU per request."
    print(f"load {r['load']:.1f}: {r['passes']} passes, {r['pass_s'] * 1e3:.0f} ms a pass")
    print(f"{'served by':10s}{'endpoint':36s}{'per pass':>9s}{'ms each':>8s}")
    for k, c in sorted(r['per_pass'].items(), key=lambda kv: (kv[0].split()[0], -kv[1])):
        who, e = k.split(' ', 1)
        print(f"{who:10s}{e:36s}{c:9.2f}{r['ms_each'][k]:8.1f}")
    for who in ('superlink', 'node'):
        print(f"{who}: {sum(c for k, c in r['per_pass'].items() if k.startswith(who + ' ')):.1f} requests a pass")
    print(
        f"SuperLink CPU: {r['link_cpu_per_pass'] * 1e3:.0f} ms a pass, {r['link_cpu_per_request'] * 1e3:.1f} ms a "
        f"request; idle: {r['idle_cpu_per_request'] * 1e3:.1f} ms per empty request ({r['idle_requests']} requests)"
    )


def print_passes(rows: list):
    "Each run: the split of a pass (medians, ms), CPU ms per pass and idle CPU share by process kind."
    kinds = sorted({k for r in rows for k in r['cpu_per_pass']} | {k for r in rows for k in r['idle']})
    print(f"{'load':>5s}{'passes':>7s}{'pass ms':>8s}{'first':>7s}{'spread':>7s}{'back':>6s}{'own':>5s}", end='')
    print(f"{'CPU ms/pass':>12s}", ' '.join(f"{k[:9]:>9s}" for k in kinds), f"{'idle %':>7s}", ' '.join(kinds))
    for r in rows:
        ms = [r[k] * 1e3 for k in ('passs', 'first', 'spread', 'back', 'own')]
        print(f"{r['load']:5.1f}{r['passes']:7d}{ms[0]:8.0f}{ms[1]:7.0f}{ms[2]:7.0f}{ms[3]:6.0f}{ms[4]:5.0f}", end='')
        print(f"{sum(r['cpu_per_pass'].values()) * 1e3:12.0f}", end=' ')
        print(' '.join(f"{r['cpu_per_pass'].get(k, 0) * 1e3:9.0f}" for k in kinds), end=' ')
        print(f"{sum(r['idle'].values()) * 100:7.1f}", ' '.join(f"{r['idle'].get(k, 0) * 100:.1f}" for k in kinds))


def stall_runs(n: int, load: int, logs: str, t_max: int = 1, timeout: float = 60.0) -> list:
    """`n` runs back to back, each on a fresh deployment (its logs under `logs/run<k>`, removed when it succeeds),
    while `load` busy loops run; one row per run: ok, seconds, passes, or the error."""
    import shutil, subprocess, sys, warnings

    busy = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(load)]
    names, clients, out = *demo_clients(), []
    try:
        for k in range(n):
            wd = os.path.join(logs, f'run{k}')
            os.makedirs(wd, exist_ok=True)
            t = time.time()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore')
                    fl = flower_deploy(clients, names=names, t_max=t_max, f=96, rng=0, timeout=timeout, workdir=wd)
                out.append(
                    dict(run=k, ok=True, seconds=time.time() - t, passes=fl['round_trips'], load=os.getloadavg()[0])
                )
                shutil.rmtree(wd, ignore_errors=True)
            except Exception as e:
                out.append(dict(run=k, ok=False, seconds=time.time() - t, error=f'{type(e).__name__}: {e}'[:300]))
            print(out[-1], flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    return out


IDLE_SETTINGS = (  # (name, task_poll, idle_poll)
    ('before (task 0.25 s, idle 1 s)', 0.25, 1.0),
    ('default (task 1 s, idle 1 s)', 1.0, 1.0),
    ('idle pulls 3 s (task 1 s)', 1.0, 3.0),
    ('polls all but off (10 s, 30 s)', 10.0, 30.0),
)


def idle_run(task_poll: float, idle_poll: float, settle: float, idle: float, t_max: int = 1) -> dict:
    """A fresh deployment left idle: the CPU share of each process kind over `idle` s, `settle` s after it started;
    then one SecureFedYJ run on the demo's data: its wall seconds."""
    import warnings
    from fedgauss.flower import FlowerDeployment
    from fedgauss.securefedyj import SECUREFEDYJ, securefedyj_config

    names, clients = demo_clients()
    parties = [f'client{k}' for k in range(len(clients))]
    cfg = securefedyj_config(names, parties, t_max=t_max, f=96)
    with FlowerDeployment(len(clients), idle_poll=idle_poll, task_poll=task_poll) as d:
        m = CPUMeter([p.pid for p in d.procs])
        time.sleep(settle)
        a, t = m.sample(), time.time()
        time.sleep(idle)
        b, dt = m.sample(), time.time() - t
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            fl = d.run(SECUREFEDYJ, {p: {'X': X} for p, X in zip(parties, clients)}, cfg, timeout=60)
        run_s = time.time() - t0
    return dict(idle={k: (b[k] - a.get(k, 0.0)) / dt for k in b}, run_s=run_s, passes=fl['round_trips'])


def idle_table(repeat: int, settle: float, idle: float, t_max: int = 1, csv: str | None = None):
    "`idle_run` for each of `IDLE_SETTINGS`, `repeat` times (settings alternating): medians, as % of a core."
    import pandas as pd

    rows = []
    for r in range(repeat):
        for name, tp, ip in IDLE_SETTINGS:
            got = idle_run(tp, ip, settle, idle, t_max)
            row = dict(setting=name, load=os.getloadavg()[0], **{f'{k} %': v * 100 for k, v in got['idle'].items()})
            rows.append(dict(row, **{'idle CPU %': sum(got['idle'].values()) * 100, 'run s': got['run_s']}))
            print(rows[-1], flush=True)
    tab = pd.DataFrame(rows).groupby('setting', sort=False).median().fillna(0.0)
    print(f"\nidle deployment, {repeat} runs each, medians (% of one core; settle {settle:.0f} s, idle {idle:.0f} s):")
    print(tab.round(2).to_string())
    if csv:
        tab.round(3).to_csv(csv)
    return tab


def main():
    ap = data_arguments(__doc__, t_max=1)
    ap.add_argument('--engine', choices=['deployment', 'simulation'], default='deployment')
    ap.add_argument('--timeout', type=float, default=600)
    ap.add_argument('--secagg', action='store_true', help='secure aggregation with dropouts over LocalGrid')
    ap.add_argument('--nodes', type=int, default=10)
    ap.add_argument('--length', type=int, default=10_000)
    ap.add_argument('--drops', default='0,1,3')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument(
        '--passes', action='store_true', help="where a pass waits; CPU per pass and idle (flower-demo data)"
    )
    ap.add_argument('--requests', action='store_true', help='HTTP requests per pass by endpoint (a harness)')
    ap.add_argument('--micro', action='store_true', help='ms per MiB of each piece a payload goes through')
    ap.add_argument('--idle-table', action='store_true', help='idle CPU and run start for each setting of the polls')
    ap.add_argument('--csv', default=None, help='with --idle-table: its medians as CSV')
    ap.add_argument('--demo', action='store_true', help="fedgauss flower-demo's run: s/pass, CPU/pass, MiB")
    ap.add_argument('--branching', type=int, default=5)
    ap.add_argument('--idle', type=float, default=10.0)
    ap.add_argument('--settle', type=float, default=15.0)
    ap.add_argument('--json', default=None, help='append each --passes run as a JSON line to this file')
    ap.add_argument('--stall', type=int, default=0, help='this many back-to-back runs under load')
    ap.add_argument('--load', type=int, default=2)
    ap.add_argument('--logs', default='/tmp/fedgauss-stall')
    args = ap.parse_args()
    if args.micro:
        for k, v in micro(args.repeat).items():
            print(f"{k:48s}{v:8.1f} ms/MiB")
        return
    if args.requests:
        r = request_run(args.t_max, args.idle, args.settle)
        print_requests(r)
        if args.json:
            import json

            with open(args.json, 'a') as fh:
                fh.write(json.dumps(r) + '\n')
        return
    if args.demo:
        import sys, fedgauss

        t_max = args.t_max if '--t-max' in sys.argv else 128  # the demo's default unless --t-max says otherwise
        rows = []
        for _ in range(args.repeat):
            rows.append(demo_run(t_max, args.branching, args.timeout))
            print_demo(rows[-1:])
        if args.json:
            import json

            with open(args.json, 'a') as fh:
                fh.writelines(
                    json.dumps(dict(r, tree=os.path.dirname(os.path.dirname(fedgauss.__file__)))) + '\n' for r in rows
                )
        return
    if args.idle_table:
        idle_table(args.repeat, args.settle, args.idle, args.t_max, args.csv)
        return
    if args.passes:
        rows = [pass_run(args.t_max, args.idle, args.settle) for _ in range(args.repeat)]
        if args.json:
            import json

            with open(args.json, 'a') as fh:
                fh.writelines(json.dumps(r) + '\n' for r in rows)
        print_passes(rows)
        return
    if args.stall:
        rows = stall_runs(args.stall, args.load, args.logs, args.t_max)
        if args.json:
            import json

            with open(args.json, 'a') as fh:
                fh.writelines(json.dumps(r) + '\n' for r in rows)
        print(f"{sum(r['ok'] for r in rows)} of {len(rows)} runs finished under {args.load} busy loops")
        return
    if args.secagg:
        drops = [int(v) for v in args.drops.split(',')]
        print_secagg(secagg_runs(args.nodes, args.length, drops, args.repeat, args.seed), args.nodes, args.length)
        return
    X, parts, clients = benchmark_data(args)
    print(
        f"data: {args.n:,} x {args.d} skewed features, {args.clients} clients / nodes, t_max = {args.t_max}, precision 96"
    )
    t = time.perf_counter()
    sim = SecureFedYJ(t_max=args.t_max, precision=96, rng=args.seed).fit(clients)
    w_sim = time.perf_counter() - t
    t = time.perf_counter()
    run = flower_deploy if args.engine == 'deployment' else flower_simulation
    fl = run(clients, t_max=args.t_max, f=96, timeout=args.timeout, rng=args.seed)
    w_fl = time.perf_counter() - t
    by_kind = lambda T: T.groupby('kind')['bytes'].agg(['size', 'sum'])
    same = by_kind(fl['channel'].transcript).equals(by_kind(sim.channel_.transcript))
    tb = sim.channel_.summary()['total_bytes']
    print(f"\n{'':28s}{'wall s':>10s}{'round trips':>13s}{'transcript MiB':>16s}{'wire MiB':>10s}")
    label = 'Flower deployment' if args.engine == 'deployment' else 'Flower simulation engine'
    print(f"{'in-process simulator':28s}{w_sim:10.2f}{'-':>13s}{tb / 2**20:16.2f}{'-':>10s}")
    print(
        f"{label:28s}{w_fl:10.2f}{fl['round_trips']:13d}{fl['channel'].summary()['total_bytes'] / 2**20:16.2f}"
        f"{fl['wire_bytes'] / 2**20:10.2f}"
    )
    print(
        f"ratio Flower / simulator: {w_fl / w_sim:.1f}x wall; wire / transcript bytes: {fl['wire_bytes'] / tb:.2f}; "
        f"{w_fl / fl['round_trips'] * 1e3:.0f} ms per round trip"
    )
    print(
        f"lambdas identical: {np.array_equal(fl['lambdas'], sim.lambdas_)}; messages and bytes by kind identical: {same}"
    )


if __name__ == '__main__':
    main()
