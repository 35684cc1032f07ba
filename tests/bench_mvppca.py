"""Benchmark of Fed-mv-PPCA: 3 IID centers of the synthetic data, 100 rounds x 15 local iterations (30 in round 1).

Prints the wall time of a whole fit (best of 3), the bytes per round read from the transcript, and side-by-side ratios:
  - the local EM on sufficient statistics (what a center runs) vs the same updates on per-subject arrays
    (posterior means of every subject recomputed each iteration, vectorised over subjects);
  - DP-Fed-mv-PPCA vs Fed-mv-PPCA.
Run: python tests/bench_mvppca.py      (goal: a fit under 10 s on the 2-core CI machine)
"""

import time

import numpy as np
import pandas as pd

from fedgauss.mvppca import (
    CenterStats,
    FedMVPPCA,
    _init_params,
    local_em,
    make_multiview_synthetic,
    minmax_center,
    scenario_iid,
)


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


def main():
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


if __name__ == '__main__':
    main()
