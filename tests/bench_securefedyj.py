"""Benchmark: SecureFedYJ with 5 clients on 100,000 x 30 skewed features against pooled ExpYJ on the same data, in one
process. Prints the wall-clock and CPU times of both (median of `--repeat` runs, the two fits alternating), their ratio,
the bytes per client per ExpYJ step and in total (from the transcript), and where the protocol's time goes.

    python tests/bench_securefedyj.py [--n 100000] [--d 30] [--clients 5] [--t-max 32] [--repeat 3]

Goal (issue 6): the protocol takes at most 2x the pooled fit — the SMC work is per feature and step, not per row;
issue 32: at most 1.5x. It also prints the SHA-256 of every message of the last run (`payload_digest`): a change made
for speed that keeps the protocol must keep that digest (and the lambdas).

`--ab [--pairs 7] [--old-ref b03ea9a]`: the simulator before and after the per-party-program restructure (issue 17: at
most 10 % slower). The old single driver runs from a `git worktree` of `--old-ref` (default: the last commit before
`run_programs` became SecureFedYJ's driver; made under the system's temp folder if absent, or `--old-dir`), the current
code from this checkout, each in a long-lived worker process on the same data; fits alternate old/new, new/old, ...
(paired). Prints each pair's CPU and wall seconds, their ratio new/old, the median ratio, and checks that both give the
same lambdas and the same message count and bytes by kind.

    python tests/bench_securefedyj.py --ab [--pairs 7] [--n 100000] [--d 30] [--clients 5] [--t-max 32]

`--passes`: relay passes (bulk-synchronous schedule) on breast cancer in 3 label-skewed parts (the Flower demo's split),
at t_max=4 and to convergence, with the step of `comparison='bits'` (before issue 32) and the default (dealer tables),
the passes per search step, and whether the lambdas are identical (issue 32: at most 8 per step, same lambdas).

    python tests/bench_securefedyj.py --passes

`--branching B` (main benchmark): the SecureFedYJ fits take B search steps per round (issue 32; default 1: the
protocol whose SHA-256 guard is printed). `--rounds`: on the Flower demo's split, to convergence, for b = 1..6: relay
passes, search rounds, MiB and seconds in-process (bulk-synchronous), and whether path and lambdas equal b = 1's.

    python tests/bench_securefedyj.py --branching 4 --repeat 1
    python tests/bench_securefedyj.py --rounds

`--phases [--old-ref d20c3ad]`: on the Flower demo's split (b = 5, to convergence), relay passes, MiB and in-process
seconds per phase (setup, search, final), for this checkout and for `--old-ref` (default: main before the one-pass setup
and final round; run from a `git worktree` of it, made under the system's temp folder if absent, or `--old-dir`).
The setup's passes are those of the setup programs alone; the final round's, those of a run with t_max = 0 minus them.

    python tests/bench_securefedyj.py --phases

`--step`: the CPU time of one secure search step alone (5 clients, 30 features, random totals), bitwise comparison
against dealer tables: what the fewer passes cost in one process.

    python tests/bench_securefedyj.py --step

`--ab --old-ref d20c3ad --pairs 5` (issue 32, speed without a protocol change): the same paired A/B against main before the
speed-up; each pair also fits pooled `exp_yj` in this process, so the table gives the best-of CPU seconds of old, new
and pooled and both ratios to pooled; every pair must have the same SHA-256 of the payloads (`payload_digest`).
`--digest`: the SHA-256 of the payloads of seeded fits (rng=0) at b = 1 and b = 5 on the default data, against the
digests recorded on main before the speed-up (d20c3ad).

    python tests/bench_securefedyj.py --digest

`--parts [--fits 6]`: where a fit's CPU goes, by a CPU-time sampler (SIGPROF): (a) the clients' local sums and
anchors (`YJData`), (b) the per-step public work (frame, exact statistics, replay), (c1) the SMC's ring arithmetic,
tables and openings, (c2) secret randomness (ChaCha20), (d) the channel and the programs' routing, (e) the rest.

    python tests/bench_securefedyj.py --parts [--csv nbs/12_securefedyj_parts.csv]

`--deployment [--csv nbs/12_securefedyj_deployment.csv]` (issue 32, "fast where users wait"): at b = 1 and b = 5 search
steps a round, the protocol run as a relay runs it (bulk-synchronous passes), every party's step clocked (`run_programs(..., clock=...)`): each party's
CPU, their total (what one process simulating all of them costs, as the main benchmark measures) and the critical path
(`fedgauss.smc.critical_path`: the sum over passes of the slowest party's step, what a deployment with one machine per
party computes before the network's round trips), each against pooled ExpYJ's CPU; then the round trip above which
b = 5 (fewer passes, more work a pass) finishes first. The main benchmark prints the critical path at its own b.

    python tests/bench_securefedyj.py --deployment --repeat 5 [--csv nbs/12_securefedyj_deployment.csv]

`--local`: the clients' local sums against pooled ExpYJ's on the same lambdas and brackets (those of the pooled
search): `YJData` built and `_group_sums` called for the pooled rows and for each client's, and for clients of 200 rows
(what a call costs whatever its rows), best of 5 CPU seconds.

    python tests/bench_securefedyj.py --local

`--calls [--fits 3]`: the clients' per-step work function by function (thread CPU seconds a fit, calls a fit, and
microseconds a call, nested times included; `YJData`'s passes and evaluations, nb12's frame and exact statistics):
which part is a pass over the rows and which is per-call Python overhead.

    python tests/bench_securefedyj.py --calls
"""

import argparse, hashlib, json, os, subprocess, sys, tempfile, time, warnings
from collections import defaultdict
from pathlib import Path

os.environ.setdefault('OMP_NUM_THREADS', '1')
import numpy as np
import pandas as pd

import fedgauss.securefedyj as S
from fedgauss.data import make_skewed_features
from fedgauss.yeojohnson import YJData, YeoJohnsonWarning, exp_yj


def timed(f):
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return time.perf_counter() - w, time.process_time() - c, out


def payload_digest(channel) -> str:
    "SHA-256 of every message in order (round, sender, receiver, kind and the payload's bytes): the guard that a change of speed changed no message."
    h = hashlib.sha256()
    for m in channel.messages:
        h.update(repr((m.round, m.sender, m.receiver, m.kind)).encode())
        p = m.payload
        if hasattr(p, 'ring_bits'):  # RingElements: fixed width, as on the wire
            w = -(-p.ring_bits // 8)
            h.update(b''.join(int(v).to_bytes(w, 'little') for v in np.asarray(p.values).ravel()))
        elif isinstance(p, np.ndarray):
            h.update(p.dtype.str.encode() + repr(p.shape).encode() + np.ascontiguousarray(p).tobytes())
        else:
            h.update(repr(p).encode())
    return h.hexdigest()


def clocked(datas: dict, cfg: dict, parties: list, r: int) -> list:
    "SecureFedYJ's programs run bulk-synchronously (seed `r`), every step clocked: the clock (the result: `clocked.res`)."
    from fedgauss.smc import run_protocol

    clock = []
    clocked.res, _, _ = run_protocol(S.SECUREFEDYJ, datas, cfg, rngs=S.yj_party_rngs(r, parties), bsp=True, clock=clock)
    return clock


def deployment(clients, fed, pooled_cpu: float, t_max: int, branching: int = 1, repeat: int = 3):
    """What a deployment computes: the fit's protocol run bulk-synchronously (as over a relay) with every step's CPU
    clocked (`run_programs(..., clock=...)`); `critical_path` gives the sum over passes of the slowest party's step (one
    machine per party, no network) and the total (one machine for all). Median of `repeat` runs, against `pooled_cpu`.
    Each party computes its own public frames (`own_frames`: the simulator's cache shared between parties is off)."""
    from fedgauss.smc import critical_path

    parties = [f'client{k}' for k in range(len(clients))]
    cfg = S.securefedyj_config(fed.feature_names_, parties, fed.precision_, t_max, branching=branching)
    datas = {p: {'X': x} for p, x in zip(parties, clients)}
    with S.own_frames():  # every party computes its own public frames, as on its own machine
        got = [critical_path(clocked(datas, cfg, parties, r)) for r in range(repeat)]
    res = clocked.res
    same = np.array_equal(res['client0']['lambdas'], fed.lambdas_)
    med = lambda f: float(np.median([f(g) for g in got]))
    crit, total = med(lambda g: g['critical']), med(lambda g: g['total'])
    parties_s = {p: med(lambda g, p=p: g['parties'][p]) for p in got[0]['parties']}
    print(
        f"\na deployment, one machine per party (bulk-synchronous passes, as over a relay; median of {repeat}; "
        f"lambdas identical to the fit's: {same}):"
    )
    print(f"  {got[0]['passes']} passes; every party's CPU: " + ', '.join(f'{p} {t:.3f}' for p, t in parties_s.items()))
    print(f"  total over the parties (one machine)   {total:7.3f} s   {total / pooled_cpu:5.2f}x pooled ExpYJ's CPU")
    print(
        f"  critical path (the sum over passes of the slowest party's step)   {crit:7.3f} s   "
        f"{crit / pooled_cpu:5.2f}x pooled   [goal, issue 32: <= 1.5x]"
    )
    print("  the network adds its round trip once a pass (a relay pass over Flower: nb50)")
    rows = [('pooled ExpYJ', pooled_cpu)] + [(f'SecureFedYJ: {p} alone', t) for p, t in parties_s.items()]
    rows += [('SecureFedYJ: every party on one machine', total), ('SecureFedYJ: critical path', crit)]
    return pd.DataFrame(
        [
            {'fit': k, 'cpu_s': round(v, 4), 'per_pooled': round(v / pooled_cpu, 3), 'passes': got[0]['passes']}
            for k, v in rows
        ]
    )


def deployment_table(X, clients, args):
    """`--deployment`: pooled ExpYJ's CPU (best of `--repeat`), then `deployment` at b = 1 and b = 5 search steps a
    round (one fit each for the configuration), and the round trip above which b = 5's fewer passes win."""
    pooled = min(timed(lambda: exp_yj(X, t_max=args.t_max, full_output=True))[1] for _ in range(args.repeat))
    tables = []
    for b in (1, 5):
        fed = S.SecureFedYJ(t_max=args.t_max, rng=0, branching=b).fit(clients)
        tables.append(deployment(clients, fed, pooled, args.t_max, b, args.repeat).assign(branching=b))
    crit = [t.set_index('fit').loc['SecureFedYJ: critical path'] for t in tables]
    rtt = (crit[1]['cpu_s'] - crit[0]['cpu_s']) / (crit[0]['passes'] - crit[1]['passes'])
    print(
        f"\nb = 5 takes {crit[0]['passes'] - crit[1]['passes']} passes fewer for {crit[1]['cpu_s'] - crit[0]['cpu_s']:.3f} s"
    )
    print(f"more on the critical path: it is faster whenever a pass's round trip exceeds {1e3 * rtt:.1f} ms")
    t = pd.concat(tables, ignore_index=True)
    t['load'] = round(os.getloadavg()[0], 2)
    if args.csv:
        t.to_csv(args.csv, index=False)
    return t


def where_the_time_goes(clients, t_max, branching=1):
    "One protocol run with its phases timed (wall seconds): local float sums, exact maps to the public frame, and the rest (SMC)."
    T = defaultdict(float)
    import fedgauss.smc as smc

    orig = {
        'local sums (float64, as pooled ExpYJ)': (YJData, '_group_sums'),
        'exact public-frame statistics': (S, 'public_frame_sums'),
    }
    secret = {  # the draws of secret randomness (ChaCha20: shares, triples, dealt bits), counted as one line
        f'secret randomness ({a})': (smc, a) for a in ('secret_ints', 'secret_bits', 'secret_bytes') if hasattr(smc, a)
    }
    orig.update(secret)
    saved = {}
    for name, (obj, attr) in orig.items():
        f = getattr(obj, attr)
        saved[name] = f

        def wrap(*a, _f=f, _n=name, **k):
            t = time.perf_counter()
            r = _f(*a, **k)
            T[_n] += time.perf_counter() - t
            return r

        setattr(obj, attr, wrap)
    try:
        w, _, fed = timed(lambda: S.SecureFedYJ(t_max=t_max, rng=0, branching=branching).fit(clients))
    finally:
        for name, (obj, attr) in orig.items():
            setattr(obj, attr, saved[name])
    T['exact public-frame statistics'] -= T['local sums (float64, as pooled ExpYJ)']
    T['secret randomness (ChaCha20 draws: shares, triples, bits)'] = sum(T.pop(k) for k in secret)
    T['SMC (per-party programs, routing), setup, final round, checks'] = w - sum(T.values())
    return w, T


def data_arguments(doc: str, t_max: int) -> argparse.ArgumentParser:
    "The benchmark data's command line (also used by bench_flower.py): rows, columns, clients, t_max, seed."
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--n', type=int, default=100_000)
    ap.add_argument('--d', type=int, default=30)
    ap.add_argument('--clients', type=int, default=5)
    ap.add_argument('--t-max', type=int, default=t_max)
    ap.add_argument('--seed', type=int, default=0)
    return ap


def benchmark_data(args):
    "Skewed features (fedgauss.data.make_skewed_features) and their IID split over `args.clients` clients."
    warnings.simplefilter('ignore', YeoJohnsonWarning)
    X = make_skewed_features(args.n, args.d, rng=args.seed)
    parts = np.array_split(np.random.default_rng(args.seed).permutation(args.n), args.clients)
    return X, parts, [X[p] for p in parts]


OLD_REF = (
    'b03ea9a'  # the last commit whose SecureFedYJ ran as one driver (the next, d55c203, made it per-party programs)
)
ROOT = Path(__file__).resolve().parents[1]


def old_checkout(ref: str, where: str | None) -> Path:
    "A `git worktree` of `ref` (detached) at `where` (default: <tmp>/fedgauss-<ref>), made if absent."
    d = Path(where or Path(tempfile.gettempdir()) / f'fedgauss-{ref}')
    if not (d / 'fedgauss' / 'securefedyj.py').exists():
        subprocess.run(['git', '-C', str(ROOT), 'worktree', 'add', '--detach', str(d), ref], check=True)
    return d


def worker(data: str):
    "A/B worker: loads the data (`data`.npz), then fits SecureFedYJ once per line `<rng>` on stdin; one JSON line out each."
    import fedgauss.securefedyj as S

    warnings.simplefilter('ignore')
    z = np.load(data)
    clients = [z[f'c{k}'] for k in range(int(z['k']))]
    t_max = int(z['t_max'])
    print(json.dumps(dict(module=S.__file__)), flush=True)
    for line in sys.stdin:
        getattr(S, '_FRAMES', {}).clear()  # the frame cache is per run: each run computes its own public frames
        w, c, fed = timed(lambda: S.SecureFedYJ(t_max=t_max, rng=int(line)).fit(clients))
        t = fed.channel_.transcript
        kinds = {k: [int(n), int(b)] for k, (n, b) in t.groupby('kind')['bytes'].agg(['size', 'sum']).iterrows()}
        lam = hashlib.sha256(np.ascontiguousarray(fed.lambdas_).tobytes()).hexdigest()[:16]
        out = dict(wall=w, cpu=c, lambdas=lam, kinds=kinds, rounds=len(fed.rounds_['search']))
        print(json.dumps(out | dict(digest=payload_digest(fed.channel_))), flush=True)


def start_worker(src: Path, data: str) -> subprocess.Popen:
    "A worker process that imports fedgauss from `src` (a checkout)."
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS='1')
    cmd = [sys.executable, str(Path(__file__).resolve()), '--worker', data]
    p = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir()
    )
    mod = json.loads(p.stdout.readline())['module']
    if not Path(mod).resolve().is_relative_to(src.resolve()):
        raise RuntimeError(f"the worker for {src} imported {mod}")
    return p


def ask(p: subprocess.Popen, rng: int) -> dict:
    "One fit in worker `p`."
    p.stdin.write(f'{rng}\n')
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def ab(args, clients, X):
    "Paired A/B: an older checkout (`--old-ref`) against this one, alternating, in two worker processes; pooled ExpYJ too."
    old = old_checkout(args.old_ref, args.old_dir)
    pooled = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, 'data.npz')
        np.savez(data, k=len(clients), t_max=args.t_max, **{f'c{k}': c for k, c in enumerate(clients)})
        W = {'old': start_worker(old, data), 'new': start_worker(ROOT, data)}
        try:
            for p in W.values():
                ask(p, 0)  # warm-up (imports, first-call caches), not counted
            rows = []
            for i in range(args.pairs):
                order = ['old', 'new'] if i % 2 == 0 else ['new', 'old']
                r = {k: ask(W[k], i) for k in order}
                pooled.append(timed(lambda: exp_yj(X, t_max=args.t_max, full_output=True))[1])
                rows.append(r)
                o, n = r['old'], r['new']
                print(
                    f"pair {i + 1}: old {o['cpu']:.3f} / new {n['cpu']:.3f} CPU s (ratio {n['cpu'] / o['cpu']:.3f}); "
                    f"wall {o['wall']:.3f} / {n['wall']:.3f} ({n['wall'] / o['wall']:.3f})",
                    flush=True,
                )
        finally:
            for p in W.values():
                p.stdin.close()
                p.wait()
    med = lambda k, f: float(np.median([f(r[k]) for r in rows]))
    rc = float(np.median([r['new']['cpu'] / r['old']['cpu'] for r in rows]))
    rw = float(np.median([r['new']['wall'] / r['old']['wall'] for r in rows]))
    print(f"\n{'':34s}{'CPU s':>8s}{'wall s':>8s}   (medians of {args.pairs} pairs)")
    print(
        f"{'old (' + args.old_ref + ')':34s}{med('old', lambda x: x['cpu']):8.3f}{med('old', lambda x: x['wall']):8.3f}"
    )
    print(f"{'new (this checkout)':34s}{med('new', lambda x: x['cpu']):8.3f}{med('new', lambda x: x['wall']):8.3f}")
    goal = (
        '   [goal: <= 1.10]' if args.old_ref == OLD_REF else ''
    )  # issue 17's A/B: the restructure at most 10 % slower
    print(f"median paired ratio new/old: {rc:.3f} (CPU), {rw:.3f} (wall){goal}")
    same = all(r['old'][k] == r['new'][k] for r in rows for k in ('lambdas', 'kinds', 'rounds'))
    print(f"same lambdas, search rounds, and message count and bytes by kind (every pair): {same}")
    same = all(r['old']['digest'] == r['new']['digest'] for r in rows)
    print(f"same SHA-256 of every payload (every pair, rng = 0..{args.pairs - 1}): {same}")
    best = {k: min(r[k]['cpu'] for r in rows) for k in ('old', 'new')} | {'pooled': min(pooled)}
    print(
        f"best of {args.pairs} CPU s: old {best['old']:.3f}, new {best['new']:.3f}, pooled ExpYJ {best['pooled']:.3f}"
    )
    print(
        f"ratio to pooled (best of each): old {best['old'] / best['pooled']:.2f}, new {best['new'] / best['pooled']:.2f}"
        f"   [goal: <= 1.5]; new/old {best['new'] / best['old']:.3f}"
    )


# `payload_digest` of SecureFedYJ(t_max=32, rng=0, branching=b) on the default data: on main d20c3ad (before issue 32's
# speed-ups), then on the one-pass setup and final round (branch yjpass, which changed those rounds' messages)
DIGESTS = {
    1: 'c829e056da8c936bd66b83b024c352638e156c123bc79120a686b7e8adae134c',
    5: 'e10e44761c42ea9d729411a896fc8d1419c8ea4666497b4a7957e99131af637a',
}
DIGESTS_ONE_PASS = {
    1: '5bcbcce3e66cc7fda040440a976351673640a282c0c99fea90129f51cbd3d910',
    5: 'af93908d47e82aca1b5bdab851ea206741f16b905ce567777a632e7782f74611',
}


def digests(clients):
    "The payload digests of seeded fits at b = 1 and b = 5 against the ones recorded before the speed-ups."
    for b, want in DIGESTS_ONE_PASS.items():
        fed = S.SecureFedYJ(t_max=32, rng=0, branching=b).fit(clients)
        got = payload_digest(fed.channel_)
        print(
            f"b = {b}: {got[:32]}...  same as the one-pass setup's (yjpass): {got == want}; "
            f"as main d20c3ad's (the old setup): {got == DIGESTS[b]}"
        )


def passes():
    "Relay passes at t_max=4 and to convergence, before (comparison='bits') and after (tables); the lambdas compared."
    import io
    from fedgauss.smc import run_protocol
    from fedgauss.yjcli import breast_cancer_split

    warnings.simplefilter('ignore', YeoJohnsonWarning)
    X, splits = breast_cancer_split(3, 0.8, 0, 'SuperNode', io.StringIO())
    parties = [f'client{k}' for k in range(3)]
    datas = {p: {'X': np.asarray(Xk, dtype=np.float64)} for p, (Xk, _) in zip(parties, splits)}
    print(f"{'step':8s}{'t_max=4':>9s}{'converged':>11s}{'steps':>7s}{'per step':>10s}{'MiB':>7s}   lambdas")
    lam = {}
    for comparison in ('bits', 'tables'):
        out = []
        for t_max in (4, 128):
            cfg = S.securefedyj_config(list(X.columns), parties, 96, t_max, comparison=comparison)
            res, rounds, ch = run_protocol(S.SECUREFEDYJ, datas, cfg, rngs=S.yj_party_rngs(0, parties), bsp=True)
            out.append((rounds['passes'][0], len(rounds['search']), ch.summary()['total_bytes'], res['client0']))
        (p4, s4, _, r4), (pc, sc, bc, rc) = out
        lam[comparison] = rc['lambdas']
        pooled = np.array_equal(r4['lambdas'], exp_yj(np.asarray(X, dtype=float), t_max=4, full_output=True).lambdas)
        same = 'identical to bits' if comparison == 'tables' and np.array_equal(rc['lambdas'], lam['bits']) else ''
        print(
            f"{comparison:8s}{p4:9d}{pc:11d}{sc:7d}{(pc - p4) / (sc - s4):10.1f}{bc / 2**20:7.1f}   "
            f"t_max=4 pooled ExpYJ's: {pooled} {same}"
        )


def rounds_table(bs=range(1, 7)):
    "Passes, rounds, MiB and seconds to convergence for b steps per round, on the Flower demo's split (in-process)."
    import io
    from fedgauss.smc import run_protocol
    from fedgauss.yjcli import breast_cancer_split

    warnings.simplefilter('ignore', YeoJohnsonWarning)
    X, splits = breast_cancer_split(3, 0.8, 0, 'SuperNode', io.StringIO())
    parties = [f'client{k}' for k in range(3)]
    datas = {p: {'X': np.asarray(Xk, dtype=np.float64)} for p, (Xk, _) in zip(parties, splits)}
    print(
        f"{'b':>2s}{'passes':>8s}{'rounds':>8s}{'steps':>7s}{'MiB':>8s}{'seconds':>9s}   same path and lambdas as b = 1"
    )
    for b in bs:
        cfg = S.securefedyj_config(list(X.columns), parties, 96, 128, branching=b)
        w, _, (res, rounds, ch) = timed(
            lambda: run_protocol(S.SECUREFEDYJ, datas, cfg, rngs=S.yj_party_rngs(0, parties), bsp=True)
        )
        r = res['client0']
        if b == 1:
            one = r
        same = np.array_equal(r['path'], one['path']) and np.array_equal(r['lambdas'], one['lambdas'])
        print(
            f"{b:2d}{rounds['passes'][0]:8d}{len(rounds['search']):8d}{len(r['signs']):7d}"
            f"{ch.summary()['total_bytes'] / 2**20:8.1f}{w:9.1f}   {same}"
        )


PHASES_REF = 'd20c3ad'  # main before the one-pass setup and final round (issue 32)


def demo_split():
    "The Flower demo's data: breast cancer in 3 label-skewed parts; (columns, {client: data}, clients)."
    import io
    from fedgauss.yjcli import breast_cancer_split

    warnings.simplefilter('ignore', YeoJohnsonWarning)
    X, splits = breast_cancer_split(3, 0.8, 0, 'SuperNode', io.StringIO())
    parties = [f'client{k}' for k in range(3)]
    return list(X.columns), {p: {'X': np.asarray(Xk, dtype=np.float64)} for p, (Xk, _) in zip(parties, splits)}, parties


def phase_counts(b: int = 5) -> dict:
    "{phase: (passes, MiB)} and the seconds of a whole fit, for the code this process imports (the demo's split)."
    from fedgauss.federation import Channel
    from fedgauss.smc import Program, run_programs, run_protocol

    names, datas, parties = demo_split()
    cfg = S.securefedyj_config(names, parties, 96, 128, branching=b)
    rngs = S.yj_party_rngs(0, parties)
    progs = []
    for p in parties + ['server']:
        ctx = S.yj_context(p, cfg, rngs[p])
        client = S.YJClient(p, None, datas[p]['X']) if p != 'server' else None
        progs.append(Program(p, ctx, S.yj_setup_program(ctx, client, len(names), 3, None)))
    _, r = run_programs(progs, Channel(), dealer='server', bsp=True)
    setup = r['passes'][0]
    _, r0, _ = run_protocol(S.SECUREFEDYJ, datas, dict(cfg, t_max=0), rngs=S.yj_party_rngs(0, parties), bsp=True)
    w, _, (res, rounds, ch) = timed(
        lambda: run_protocol(S.SECUREFEDYJ, datas, cfg, rngs=S.yj_party_rngs(0, parties), bsp=True)
    )
    t = ch.transcript
    phase = t['round'].map({x: k for k, v in rounds.items() if k != 'passes' for x in v})
    mib = (t.groupby(phase)['bytes'].sum() / 2**20).to_dict()
    total, sf = rounds['passes'][0], r0['passes'][0]
    out = {'setup': (setup, mib['setup']), 'search': (total - sf, mib['search']), 'final': (sf - setup, mib['final'])}
    out['total'] = (total, sum(mib.values()))
    return dict(phases=out, seconds=w, mean=res['client0']['mean'].tolist(), var=res['client0']['var'].tolist())


def phases(ref: str, where: str | None):
    "The per-phase table for `ref` (in a worker process importing it) and for this checkout."
    old = old_checkout(ref, where)
    env = dict(os.environ, PYTHONPATH=str(old), OMP_NUM_THREADS='1')
    cmd = [sys.executable, str(Path(__file__).resolve()), '--phases-json']
    got = {ref: json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)}
    got['this checkout'] = phase_counts()
    print(f"{'':16s}{'phase':>8s}{'passes':>8s}{'MiB':>8s}")
    for who, g in got.items():
        for k, (n, m) in g['phases'].items():
            print(f"{who:16s}{k:>8s}{n:8d}{m:8.2f}")
        print(f"{who:16s}{'seconds':>8s}{g['seconds']:16.2f}   (in-process, bulk-synchronous, b = 5)")
    a, b = got[ref], got['this checkout']
    rel = lambda k: max(abs(x - y) / abs(x) for x, y in zip(a[k], b[k]))
    print(f"largest relative difference of the fitted mean / variance: {rel('mean'):.1e} / {rel('var'):.1e}")


def step_cpu(K=5, d=30, f=96, max_rows=2**20, repeat=7):
    "Best CPU seconds of one search step (`party_secure_step`) on random totals, for each comparison."
    from fedgauss.federation import Channel
    from fedgauss.smc import PartySMC, Program, run_programs

    g = np.random.default_rng(0)
    n = [g.integers(1000, 20000, d) for _ in range(K)]
    ints = [
        np.array(
            [[int(v) for v in (nk if i == 0 else g.integers(-nk, nk) << (s * f) >> 1)] for i, s in enumerate(S.SCALES)]
        )
        for nk in n
    ]

    def prog(smc, k, comparison):
        T = S.party_shared_totals(smc, None if k is None else np.asarray(ints[k], dtype=object), d, f, max_rows)
        return (yield from S.party_secure_step(smc, T, K, f, comparison))

    for comparison in ('bits', 'tables'):
        best = np.inf
        for _ in range(repeat):
            names = [f'c{k}' for k in range(K)]
            ctx = [
                PartySMC(p, names, 'server', S.ring_bits_for(K, max_rows, f), 40, j)
                for j, p in enumerate(names + ['server'])
            ]
            progs = [Program(c.me, c, prog(c, j if j < K else None, comparison)) for j, c in enumerate(ctx)]
            c0 = time.process_time()
            run_programs(progs, Channel(), dealer='server', bsp=True)
            best = min(best, time.process_time() - c0)
        print(
            f"one search step, {K} clients, {d} features, comparison={comparison!r}: {1e3 * best:.1f} ms CPU (best of {repeat})"
        )


PARTS = [  # (part, functions whose presence on the stack puts a sample there), in this order
    ('a local sums and local anchors (YJData)', {'_group_sums', 'YJData.__init__', '_log_distances', 'from_columns'}),
    (
        'b per-step public work (frame, exact statistics, replay)',
        {
            'public_frame_sums',
            'public_frame',
            'exp_replay',
            'exp_update',
            '_check_stat_bounds',
            'tree_sums',
            'frame_coefficients',
        },
    ),
    ('c2 secret randomness (ChaCha20 draws, table expansion)', {'entropy.py', 'table_share'}),
]


def cpu_parts(clients, t_max: int, fits: int = 6, csv: str | None = None):
    "The CPU of `fits` fits by part (`PARTS`, SMC arithmetic, routing, rest) by SIGPROF samples; `csv`: as a table."
    import signal

    counts, on = defaultdict(int), [False]

    def part(frame):
        names, leaf = set(), None
        while frame is not None:
            co, fn = frame.f_code, os.path.basename(frame.f_code.co_filename)
            names |= {fn, co.co_qualname if hasattr(co, 'co_qualname') else co.co_name, co.co_name}
            if leaf is None and fn in ('smc.py', 'securefedyj.py', 'federation.py', 'yeojohnson.py'):
                leaf = (fn, co.co_name)
            frame = frame.f_back
        for name, marks in PARTS:
            if names & marks:
                return name
        if leaf and (leaf[0] == 'federation.py' or leaf[1] in ('run_programs', 'step', 'recv', 'send', '_next_phase')):
            return 'd channel and program routing'
        return (
            'c1 SMC arithmetic (ring, tables, openings)' if leaf and leaf[0] == 'smc.py' else 'e setup, final, checks'
        )

    def sample(sig, frame):
        if on[0]:
            counts[part(frame)] += 1

    S.SecureFedYJ(t_max=t_max, rng=0).fit(clients)  # warm-up
    old = signal.signal(signal.SIGPROF, sample)
    signal.setitimer(signal.ITIMER_PROF, 0.001, 0.001)
    cpu = 0.0
    try:
        for r in range(fits):
            getattr(S, '_FRAMES', {}).clear()
            on[0] = True
            cpu += timed(lambda: S.SecureFedYJ(t_max=t_max, rng=r).fit(clients))[1]
            on[0] = False
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        signal.signal(signal.SIGPROF, old)
    n = sum(counts.values())
    print(f"CPU per fit by part (mean of {fits} fits, {n} samples):")
    for k in sorted(counts):
        print(f"  {k:58s}{cpu / fits * counts[k] / n:7.3f} s {100 * counts[k] / n:5.1f} %")
    print(f"  {'total':58s}{cpu / fits:7.3f} s")
    if csv:  # each part's CPU seconds a fit and share, and the load average at the end of the run
        import pandas as pd

        rows = [dict(part=k, cpu_s=cpu / fits * counts[k] / n, share=counts[k] / n) for k in sorted(counts)]
        pd.DataFrame(rows).assign(load=round(os.getloadavg()[0], 2)).round(3).to_csv(csv, index=False)
        print(f"written to {csv}")


def local_sums(X, clients, t_max: int, repeat: int = 5, csv: str | None = None):
    """Where SecureFedYJ stands against pooled ExpYJ like for like (best CPU s of `repeat`): the pooled fit with and
    without its certified signs (which need all the rows), the same search over the clients' `YJData` without any
    SMC (their local sums alone), and SecureFedYJ; then `YJData` and `_group_sums` at the pooled search's lambdas,
    pooled rows against the clients' (the per-call cost that grows with the number of holders)."""
    from fedgauss.yeojohnson import YJAnchors, exp_yj_search

    calls, f0, c0 = [], YJData._group_sums, YJData._certify

    def record(self, lam, bracket=None, accelerate=True, **kw):
        calls.append((np.array(lam), None if bracket is None else tuple(np.array(b) for b in bracket)))
        return f0(self, lam, bracket, accelerate, **kw)

    def uncertified(f):  # ExpYJ as before the certified signs: every sign-only pass made
        def run():
            YJData._certify = lambda self, cand, ls, lo, lg=None: np.zeros(len(ls), np.int8)
            try:
                return f()
            finally:
                YJData._certify = c0

        return run

    YJData._group_sums = record
    try:
        exp_yj(X, t_max=t_max, full_output=True)
    finally:
        YJData._group_sums = f0
    A, T = YJAnchors.from_data(X), defaultdict(list)
    fits = {
        'pooled ExpYJ': lambda: exp_yj(X, t_max=t_max),
        'pooled ExpYJ without certified signs': uncertified(lambda: exp_yj(X, t_max=t_max)),
        "the clients' search, no SMC (local sums alone)": lambda: exp_yj_search(
            [YJData(x, YJAnchors.merge(*[YJAnchors.from_data(c) for c in clients])) for x in clients], t_max=t_max
        ),
        'SecureFedYJ': lambda: S.SecureFedYJ(t_max=t_max, rng=0).fit(clients),
    }
    for _ in range(repeat):
        for k, f in fits.items():
            T[k].append(timed(f)[1])
        for name, parts in (('pooled', [X]), ('clients', clients), ('clients of 200 rows', [c[:200] for c in clients])):
            w, c, ds = timed(lambda: [YJData(x, A) for x in parts])
            T[f'{name}: YJData'].append(c)
            T[f'{name}: _group_sums'].append(timed(lambda: [d._group_sums(*a) for a in calls for d in ds])[1])
        # (a pass over the rows a client made before its YJData, until YJClient took its anchors from that YJData's)
        T["clients: YJAnchors.from_data (no longer made)"].append(
            timed(lambda: [YJAnchors.from_data(x) for x in clients])[1]
        )
    best = {k: min(v) for k, v in T.items()}
    print(f"best of {repeat} CPU s, {len(clients)} clients, t_max = {t_max}:")
    for k in fits:
        print(f"  {k:50s}{best[k]:7.3f}")
    sf, un = best['SecureFedYJ'], best['pooled ExpYJ without certified signs']
    print(
        f"  SecureFedYJ / pooled ExpYJ: {sf / best['pooled ExpYJ']:.2f}x; like for like (no certified signs): "
        f"{sf / un:.2f}x; the clients' local sums alone / that pooled fit: "
        f"{best[list(fits)[2]] / un:.2f}x   [goal, issue 32: <= 1.5x]"
    )
    print(f"{len(calls)} calls of _group_sums per holder (the pooled search's lambdas):")
    for k in list(T)[len(fits) :]:
        print(f"  {k:50s}{best[k]:7.3f}")
    if csv:  # the fits, each as a ratio to both pooled fits, and the load average at the end of the run
        import pandas as pd

        pooled = best['pooled ExpYJ']
        rows = [dict(fit=k, cpu_s=best[k], per_pooled=best[k] / pooled, per_uncertified=best[k] / un) for k in fits]
        pd.DataFrame(rows).assign(load=round(os.getloadavg()[0], 2)).round(3).to_csv(csv, index=False)
        print(f"written to {csv}")


def calls_table(clients, t_max: int, fits: int = 3):
    "Thread CPU s a fit, calls a fit and us a call of the clients' local sums and per-step public work (nested)."
    import fedgauss.yeojohnson as Y

    T, N, saved = defaultdict(float), defaultdict(int), []

    def wrap(obj, name):
        f = getattr(obj, name)

        def g(*a, **k):
            t = time.thread_time()
            try:
                return f(*a, **k)
            finally:
                T[name] += time.thread_time() - t
                N[name] += 1

        saved.append((obj, name, f))
        setattr(obj, name, g)

    for name in ('_group_sums', '_fresh_groups', '_fresh', '_series_groups', '_cached_groups', '_need_P', '_need_lo'):
        wrap(YJData, name)
    for name in ('_add_sums', '_add_moments'):
        wrap(Y, name)
    for name in ('public_frame_sums', '_frame_values', '_fx', '_public_components', 'public_frame', 'normalization'):
        wrap(S, name)
    wrap(S, 'exp_replay')  # (b > 1: the replay of a round; b = 1 steps by exp_update alone)
    wrap(Y, 'exp_update')
    try:
        S.SecureFedYJ(t_max=t_max, rng=0).fit(clients)  # warm-up
        T.clear(), N.clear()
        cpu = sum(timed(lambda r=r: S.SecureFedYJ(t_max=t_max, rng=r + 1).fit(clients))[1] for r in range(fits)) / fits
    finally:
        for obj, name, f in reversed(saved):
            setattr(obj, name, f)
    print(f"{len(clients)} clients, mean of {fits} fits: {cpu:.3f} CPU s a fit (timers included); nested times")
    for k in sorted(T, key=T.get, reverse=True):
        print(f"  {k:22s}{T[k] / fits:7.3f} s {N[k] / fits:7.0f} calls {1e6 * T[k] / N[k]:8.0f} us a call")


def main():
    os.environ.setdefault('FEDGAUSS_NUMBA', '1')  # the kernels, as a process that has loaded them runs them
    if sys.argv[1:2] == ['--step']:
        return step_cpu()
    if sys.argv[1:2] == ['--passes']:
        return passes()
    if sys.argv[1:2] == ['--rounds']:
        return rounds_table()
    if sys.argv[1:2] == ['--phases-json']:
        return print(json.dumps(phase_counts()))
    if sys.argv[1:2] == ['--phases']:
        ap = argparse.ArgumentParser()
        ap.add_argument('--phases', action='store_true')
        ap.add_argument('--old-ref', default=PHASES_REF)
        ap.add_argument('--old-dir', default=None)
        a = ap.parse_args()
        return phases(a.old_ref, a.old_dir)
    if sys.argv[1:2] == ['--worker']:
        return worker(sys.argv[2])
    ap = data_arguments(__doc__, t_max=32)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--ab', action='store_true', help='old single driver against per-party programs, paired')
    ap.add_argument('--pairs', type=int, default=7)
    ap.add_argument('--old-ref', default=OLD_REF)
    ap.add_argument('--old-dir', default=None)
    ap.add_argument('--branching', type=int, default=1, help='SecureFedYJ search steps per round (default 1)')
    ap.add_argument('--digest', action='store_true', help='payload digests at b = 1 and 5 against main d20c3ad')
    ap.add_argument('--parts', action='store_true', help="a fit's CPU by part (a CPU-time sampler)")
    ap.add_argument('--fits', type=int, default=6, help='fits sampled by --parts (--calls: 3 is enough)')
    ap.add_argument(
        '--calls', action='store_true', help="the clients' per-step work by function (CPU, calls, us a call)"
    )
    ap.add_argument(
        '--csv',
        default=None,
        help='with --local: its table of fits, as CSV (nbs/12_securefedyj_cost.csv); with --parts: the parts; '
        'with --deployment: its table (nbs/12_securefedyj_deployment.csv)',
    )
    ap.add_argument(
        '--local', action='store_true', help="like for like: pooled ExpYJ without certified signs, the local sums"
    )
    ap.add_argument(
        '--deployment', action='store_true', help='the critical path: one machine per party, passes as over a relay'
    )
    args = ap.parse_args()
    if args.ab:
        X, _, clients = benchmark_data(args)
        return ab(args, clients, X)
    if args.digest:
        return digests(benchmark_data(args)[2])
    if args.local:
        X, _, clients = benchmark_data(args)
        return local_sums(X, clients, args.t_max, args.repeat, args.csv)
    if args.deployment:
        X, _, clients = benchmark_data(args)
        return deployment_table(X, clients, args)
    if args.calls:
        return calls_table(benchmark_data(args)[2], args.t_max, args.fits)
    if args.parts:
        return cpu_parts(benchmark_data(args)[2], args.t_max, args.fits, args.csv)
    X, parts, clients = benchmark_data(args)
    print(
        f"data: {args.n:,} x {args.d} skewed features (fedgauss.data.make_skewed_features), {args.clients} clients "
        f"(IID, {len(parts[0]):,} rows each), t_max = {args.t_max}, branching = {args.branching}"
    )
    res = {'pooled ExpYJ': [], 'SecureFedYJ': []}
    for r in range(args.repeat):
        order = [
            ('pooled ExpYJ', lambda: exp_yj(X, t_max=args.t_max, full_output=True)),
            ('SecureFedYJ', lambda: S.SecureFedYJ(t_max=args.t_max, rng=r, branching=args.branching).fit(clients)),
        ]
        if r % 2:
            order.reverse()
        for name, f in order:
            w, c, out = timed(f)
            res[name].append((w, c))
            if name == 'SecureFedYJ':
                fed = out
            else:
                ref = out
    med = {k: np.median(np.array(v), axis=0) for k, v in res.items()}
    print(f"\n{'':14s}{'wall s':>9s}{'CPU s':>9s}")
    for k, (w, c) in med.items():
        print(f"{k:14s}{w:9.3f}{c:9.3f}")
    ratio_w, ratio_c = med['SecureFedYJ'][0] / med['pooled ExpYJ'][0], med['SecureFedYJ'][1] / med['pooled ExpYJ'][1]
    print(f"ratio SecureFedYJ / pooled: {ratio_w:.2f} (wall), {ratio_c:.2f} (CPU)   [goal: <= 1.5, issue 32]")
    same = (fed.signs_ == ref.signs).all()
    print(
        f"same sign sequence as pooled ExpYJ: {same}; max |lambda difference|: {np.max(np.abs(fed.lambdas_ - ref.lambdas)):.1e}; "
        f"max relative difference of the variance: {np.max(np.abs(fed.var_ - ref.var) / ref.var):.1e}"
    )
    print(f"SHA-256 of the payloads of the last run (rng={args.repeat - 1}): {payload_digest(fed.channel_)[:32]}")
    c = S.communication_table(fed)
    cl = c.drop(index='server')
    s = fed.channel_.summary()
    print(
        f"\ncommunication: ring of {fed.ring_bits_} bits; {s['n_messages']:,} messages over {s['n_rounds']} rounds; "
        f"{s['total_bytes'] / 2**20:.1f} MiB in total"
    )
    print(
        f"  per client and ExpYJ step: {cl['sent / step'].mean() / 1024:.0f} KiB sent, {cl['received / step'].mean() / 1024:.0f} KiB received"
        f" (client0, the king of the openings: {c.loc['client0', 'sent / step'] / 1024:.0f} / {c.loc['client0', 'received / step'] / 1024:.0f})"
    )
    print(
        f"  per client in total: {(cl['total sent'] + cl['total received']).mean() / 2**20:.1f} MiB sent + received; "
        f"the server (dealer) sent {c.loc['server', 'total sent'] / 2**20:.1f} MiB and received {c.loc['server', 'total received']}"
    )
    deployment(clients, fed, med['pooled ExpYJ'][1], args.t_max, args.branching, args.repeat)
    w, T = where_the_time_goes(clients, args.t_max, args.branching)
    print(f"\nwhere the protocol's time goes (one run, {w:.2f} s wall):")
    for k, v in T.items():
        print(f"  {k:58s}{v:7.2f} s  {100 * v / w:4.0f} %")


if __name__ == '__main__':
    main()
