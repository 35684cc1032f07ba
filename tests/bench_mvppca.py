"""Benchmark of Fed-mv-PPCA.

Default: 3 IID centers of the synthetic data, 100 rounds x 15 local iterations (30 in round 1). Prints the wall time of
a whole fit (best of 3), the bytes per round read from the transcript, and side-by-side ratios:
  - the local EM on sufficient statistics (what a center runs) vs the same updates on per-subject arrays
    (posterior means of every subject recomputed each iteration, vectorised over subjects);
  - DP-Fed-mv-PPCA vs Fed-mv-PPCA.
Run: python tests/bench_mvppca.py      (goal: a fit under 10 s on the 2-core CI machine)

`--centers 10 100 1000` (issue 32): synthetic (15, 8, 10) views, q = 5, the defaults (100 rounds), IID centers of
`--subjects` subjects each (at most `--max-rows` in all: 1,000 centers get 1,000 each). Prints one row per number of
centers: `FedMVPPCA.fit` (the centers' local EM of a round in one stacked call, `LocalEMPool`) against its peer in the
same process, the same per-party programs with each center's EM run on its own (`pool=None`, as a deployment runs
them; up to `--peer-max` centers), best of `--repeat`, wall and CPU seconds; and checks that both give the same
global parameters and transcript. `--old DIR` also times `FedMVPPCA.fit` of another checkout (e.g. a `git worktree`
of main before this change) in a subprocess on the same data. `--out FILE` writes the table as CSV. `--profile` prints the top of a cProfile of one fit at
the largest number of centers. BLAS runs on one thread (`OPENBLAS_NUM_THREADS=1` unless set), for every fit alike.
Run: python tests/bench_mvppca.py --centers 10 100 1000 [--old DIR] [--out nbs/40_mvppca_speed.csv]
(goal: 100 centers x 10,000 subjects in < 10 s)
"""

import argparse, cProfile, io, json, os, pstats, subprocess, sys, time

for _v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):  # before numpy starts its BLAS threads:
    os.environ.setdefault(_v, '1')  # on a shared, loaded machine BLAS threads spin (CenterStats' X'X costs 20x CPU)
import numpy as np
import pandas as pd

from fedgauss.federation import Channel
from fedgauss.mvppca import (
    CenterStats,
    FedMVPPCA,
    _init_params,
    local_em,
    make_multiview_synthetic,
    minmax_center,
    mvppca_programs,
    scenario_iid,
)
from fedgauss.smc import run_programs


def per_subject_em(center, params, n_iter):
    "The same ML-EM updates (no priors) computed from per-subject posterior moments each iteration (O(n) per iteration)."
    views = list(center)
    T = np.hstack([center[v] for v in views])
    n = len(T)
    d = [center[v].shape[1] for v in views]
    idx = np.cumsum([0] + d)
    W = np.vstack([params[v]['W'] for v in views])
    s2 = np.array([params[v]['sigma2'] for v in views])
    q = W.shape[1]
    for _ in range(n_iter):
        mu = T.mean(0)
        R = T - mu
        lam = np.repeat(1 / s2, d)
        M = np.linalg.inv(np.eye(q) + W.T @ (lam[:, None] * W))
        Ex = R @ (lam[:, None] * W) @ M  # (n, q): every subject's posterior mean
        Sxx = n * M + Ex.T @ Ex
        W = np.linalg.solve(Sxx, (R.T @ Ex).T).T
        res = (R * R).sum(0) - 2 * np.sum(W * (R.T @ Ex), 1) + np.sum((W @ Sxx) * W, 1)
        s2 = np.array([res[idx[k] : idx[k + 1]].sum() / (n * d[k]) for k in range(len(views))])
    return W, s2


def best_of(f, k=3):
    ts = []
    for _ in range(k):
        t0 = time.perf_counter()
        out = f()
        ts.append(time.perf_counter() - t0)
    return min(ts), out


def three_centers():
    V, g = make_multiview_synthetic(rng=0)
    centers = [minmax_center(c) for c in scenario_iid(V, g, 3, rng=1)[0]]
    t_fit, model = best_of(lambda: FedMVPPCA(5, n_rounds=100, n_local_iter=15, n_init_iter=30, rng=0).fit(centers))
    t_dp, mdp = best_of(
        lambda: FedMVPPCA(
            5, n_rounds=100, n_local_iter=15, n_init_iter=30, dp=dict(epsilon=10.0, delta=1e-5), rng=0
        ).fit(centers)
    )
    tr = model.channel_.transcript
    per_round = tr[tr['round'] > 1].groupby(['round', 'kind'])['bytes'].sum().unstack().mean()
    n_iter = 30 + 99 * 15
    st = CenterStats.from_views(centers[0])
    p0 = _init_params(st, 5, np.random.default_rng(0))
    t_ss, _ = best_of(lambda: local_em(st, p0, None, n_iter))
    t_rows, _ = best_of(lambda: per_subject_em(centers[0], p0, n_iter))

    print(f"Fed-mv-PPCA, 3 centers x ~133 subjects, views (15, 8, 10), q=5, 100 rounds x 15 local iterations")
    print(f"  fit: {t_fit:.2f} s (goal < 10 s), {t_fit / 100 * 1e3:.1f} ms per round")
    print(f"  DP-Fed-mv-PPCA fit: {t_dp:.2f} s")
    print(
        f"  bytes per round (rounds 2-100): centers -> master {per_round['local_params']:.0f}, master -> centers {per_round['global']:.0f}, "
        f"total {per_round.sum():.0f}; round 1: {tr[tr['round'] == 1]['bytes'].sum()}; whole fit {tr['bytes'].sum()} bytes, {len(tr)} messages"
    )
    rows = pd.DataFrame(
        [
            dict(
                what='one center local EM, 1515 iterations',
                ours='sufficient statistics',
                ours_s=t_ss,
                peer='per-subject arrays',
                peer_s=t_rows,
            ),
            dict(what='whole fit', ours='Fed-mv-PPCA', ours_s=t_fit, peer='DP-Fed-mv-PPCA', peer_s=t_dp),
        ]
    )
    rows['peer / ours'] = rows['peer_s'] / rows['ours_s']
    with pd.option_context('display.width', 200, 'display.float_format', '{:.3f}'.format):
        print(rows.to_string(index=False))


def timed(f):
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return time.perf_counter() - w, time.process_time() - c, out


def best(f, k):
    "(wall, cpu, result) of the fastest of `k` runs (by CPU time: the machine is shared)."
    runs = [timed(f) for _ in range(k)]
    return min(runs, key=lambda r: r[1])


def federation(C, n_per):
    "C IID centers of n_per subjects each of the synthetic (15, 8, 10) views, each min-max scaled."
    V, g = make_multiview_synthetic(n=C * n_per, n_shifted=C * n_per // 2, rng=0)
    return [minmax_center(c) for c in scenario_iid(V, g, C, rng=1)[0]]


def unpooled(centers):
    "The peer: the same per-party programs, each center's local EM run on its own (no pool)."
    ch = Channel()
    res, _ = run_programs(mvppca_programs(centers, 5, 100, 30, 15, rng=0), ch, 'master')
    return res['master']['global_'], ch


def max_rel(g1, g2):
    return max(
        float(np.max(np.abs(np.asarray(g1[v][k]) - g2[v][k]) / np.maximum(np.abs(g2[v][k]), 1e-300)))
        for v in g2
        for k in ('mu', 'W', 'sigma2', 's_mu', 's_W', 'alpha', 'beta')
    )


def old_fit(src, C, n_per):
    "Wall, CPU and global parameters of `FedMVPPCA.fit` from the checkout `src`, in a subprocess on the same data."
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    cmd = [sys.executable, os.path.abspath(__file__), '--worker', str(C), str(n_per)]
    out = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout.splitlines()[-1])
    return (
        out['wall'],
        out['cpu'],
        {v: {k: np.asarray(x, dtype=float) for k, x in g.items()} for v, g in out['g'].items()},
    )


def worker(C, n_per):
    "Run in a subprocess by `old_fit`: one fit of this interpreter's fedgauss, printed as JSON."
    import fedgauss.mvppca as M

    centers = federation(C, n_per)
    w, c, m = timed(lambda: M.FedMVPPCA(5, rng=0).fit(centers))
    keys = ('mu', 'W', 'sigma2', 's_mu', 's_W', 'alpha', 'beta')
    g = {v: {k: np.asarray(m.global_[v][k], dtype=float).tolist() for k in keys} for v in m.views_}
    print(json.dumps(dict(wall=w, cpu=c, g=g, module=M.__file__)))


def scaling(args):
    rows = []
    for C in args.centers:
        n_per = min(args.subjects, args.max_rows // C)
        centers = federation(C, n_per)
        w, c, m = best(lambda: FedMVPPCA(5, rng=0).fit(centers), args.repeat)
        t = m.channel_.transcript
        row = dict(centers=C, subjects=n_per, wall_s=w, cpu_s=c, messages=len(t), MB=t['bytes'].sum() / 1e6)
        if C <= args.peer_max:
            pw, pc, (pg, pch) = best(lambda: unpooled(centers), args.repeat)
            assert pch.transcript.equals(t), 'the transcripts differ'
            row.update(peer_wall_s=pw, peer_cpu_s=pc, peer_over_ours_cpu=pc / c, same_bits=max_rel(m.global_, pg) == 0)
        if args.old:
            ow, oc, og = old_fit(args.old, C, n_per)
            row.update(old_wall_s=ow, old_cpu_s=oc, old_over_ours_cpu=oc / c, old_max_rel_diff=max_rel(m.global_, og))
        rows.append(row)
        print(pd.DataFrame([row]).to_string(index=False, float_format='{:.3g}'.format), flush=True)
    print(
        f"\nFed-mv-PPCA, synthetic (15, 8, 10) views, q = 5, 100 rounds x 15 local iterations (30 in round 1), IID "
        f"centers; best of {args.repeat} by CPU time; peer: the same programs, each center's EM on its own"
    )
    with pd.option_context('display.width', 250, 'display.max_columns', 30):
        print(pd.DataFrame(rows).to_string(index=False, float_format='{:.3g}'.format))
    if args.out:
        pd.DataFrame(rows).to_csv(args.out, index=False)
    if args.profile:
        pr = cProfile.Profile()
        pr.runcall(lambda: FedMVPPCA(5, rng=0).fit(centers))
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats('tottime').print_stats(15)
        print(f"\ncProfile of one fit at {C} centers x {n_per} subjects (top 15 by own time):\n{s.getvalue()}")


if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--centers', type=int, nargs='*', help='numbers of centers of the scaling table (e.g. 10 100 1000)')
    ap.add_argument('--subjects', type=int, default=10_000, help='subjects per center')
    ap.add_argument('--max-rows', type=int, default=1_000_000, help='cap on centers x subjects (memory)')
    ap.add_argument('--repeat', type=int, default=3, help='runs of each fit; the fastest (CPU) is reported')
    ap.add_argument('--peer-max', type=int, default=100, help='largest number of centers the peer runs at')
    ap.add_argument('--old', help='a checkout (e.g. a git worktree of main) whose FedMVPPCA.fit is also timed')
    ap.add_argument('--out', help='also write the scaling table to this CSV (e.g. nbs/40_mvppca_speed.csv)')
    ap.add_argument('--profile', action='store_true', help='cProfile one fit at the largest number of centers')
    ap.add_argument('--worker', type=int, nargs=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(*a.worker)
    elif a.centers:
        scaling(a)
    else:
        three_centers()
