"""Benchmark: SecureBoost per-tree time on 10,000 x 20 synthetic data (no exact zeros), 10 features per party, depth 6,
32 bins: fedgauss (2048-bit Paillier keys, obfuscator generation included) against FedTree 1.0.5's vertical federated
GBDT with homomorphic encryption (its Python API: 512-bit keys), both single-threaded, in one process. Also bytes per
party per tree (from our channel's transcript) and test AUC next to the centralized GBDTClassifier.

    python tests/bench_secureboost.py [--trees 2] [--key 2048] [--repeat 1]
    python tests/bench_secureboost.py --ab OLD_SRC [--n 4000] [--pairs 6] [--trees 2] [--key 1024] [--depth 5]

`--ab OLD_SRC` (issue 17): paired CPU time of one fit (the first `--n` rows, fixed seed) with the fedgauss package
found in folder OLD_SRC (e.g. `git archive 4a56a6b fedgauss | tar -x -C /tmp/old`: the single driver) against this
checkout's (the per-party programs), each in a fresh process, alternating which runs first; prints the median ratio.

FedTree (`apt-get install -y libntl44 && pip install fedtree`) is skipped with a message when it is not installed.
Its Python wrapper turns X into a sparse matrix, so exact zeros would become missing values: the data has none.
"""

import argparse, os, subprocess, sys, time

for _v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_v, '1')

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from fedgauss.federation import vertical_split
from fedgauss.gbdt import GBDTClassifier
from fedgauss.secureboost import SecureBoostClassifier


def data(n=10_000, F=20, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(2 * n, F))
    X[X == 0] = 1e-12  # FedTree reads exact zeros as missing
    w = r.normal(size=F)
    y = (X @ w + 0.5 * np.sin(3 * X[:, 0]) + r.logistic(size=2 * n) > 0).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def ours(X, y, Xt, yt, trees, key, depth, bins):
    parts = vertical_split(X, 2, y)
    m = SecureBoostClassifier(n_estimators=trees, max_depth=depth, max_bins=bins, key_size=key, learning_rate=0.3)
    t0 = time.perf_counter()
    m.fit(parts)
    total = time.perf_counter() - t0
    sec = np.array(m.tree_seconds_)
    tr = m.channel_.transcript
    tr = tr[tr['round'] > 1]  # round 1 is the setup (keys, bin counts)
    per_tree = tr.groupby('sender')['bytes'].sum() / trees
    auc = roc_auc_score(yt, m.predict_proba([Xt[:, : X.shape[1] // 2], Xt[:, X.shape[1] // 2 :]])[:, 1])
    return dict(wall_per_tree=sec[:, 0].mean(), cpu_per_tree=sec[:, 1].mean(), fit_incl_keygen=total, auc=auc), per_tree


def fedtree_run(X, y, Xt, yt, trees, depth, bins):
    try:
        from fedtree import FLClassifier
    except Exception as e:  # not installed, or libntl missing
        print(f"FedTree skipped: {type(e).__name__}: {e} (apt-get install -y libntl44 && pip install fedtree)")
        return None
    clf = FLClassifier(
        n_trees=trees,
        n_parties=2,
        mode='vertical',
        partition_mode='vertical',
        privacy_tech='he',
        max_depth=depth,
        max_num_bin=bins,
        learning_rate=0.3,
        lambda_ft=1,
        gamma=0,
        min_child_weight=1,
        verbose=0,
        n_device=1,
    )
    t0, c0 = time.perf_counter(), time.process_time()
    clf.fit(X, y)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    p = np.asarray(clf.predict_proba(Xt), float)[:, 1]  # (its predict() returns class 0 for every row)
    return dict(wall_per_tree=wall / trees, cpu_per_tree=cpu / trees, fit_incl_keygen=wall, auc=roc_auc_score(yt, p))


def _fit_cpu(n, trees, key, depth, bins):
    "CPU seconds of one fit (all threads), for `--ab`."
    X, y, _, _ = data(n)
    m = SecureBoostClassifier(n_estimators=trees, max_depth=depth, max_bins=bins, key_size=key, rng=0)
    c0 = time.process_time()
    m.fit(vertical_split(X, 2, y))
    return time.process_time() - c0


def ab(old, a):
    "Paired runs, old and new package alternately first, each in its own process: the median CPU ratio new/old."
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = f"import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, {os.path.dirname(__file__)!r}); "
    code += f"import bench_secureboost as b; print(b._fit_cpu({a.n}, {a.trees}, {a.key}, {a.depth}, {a.bins}))"
    run = lambda src: float(
        subprocess.run([sys.executable, '-c', code, src], capture_output=True, text=True, check=True).stdout
    )
    ratios = []
    for i in range(a.pairs):
        got = {}
        for which in ('old', 'new') if i % 2 else ('new', 'old'):
            got[which] = run(old if which == 'old' else here)
        ratios.append(got['new'] / got['old'])
        print(f"pair {i}: old {got['old']:.2f} s, new {got['new']:.2f} s CPU, ratio {ratios[-1]:.3f}", flush=True)
    print(f"median CPU ratio new/old over {a.pairs} pairs: {np.median(ratios):.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--ab', metavar='OLD_SRC', help='paired CPU ratio against the fedgauss package in OLD_SRC')
    ap.add_argument('--n', type=int, default=4000)
    ap.add_argument('--pairs', type=int, default=6)
    ap.add_argument('--trees', type=int, default=2)
    ap.add_argument('--key', type=int, default=2048)
    ap.add_argument('--depth', type=int, default=6)
    ap.add_argument('--bins', type=int, default=32)
    ap.add_argument('--repeat', type=int, default=1)
    a = ap.parse_args()
    if a.ab:
        return ab(a.ab, a)
    X, y, Xt, yt = data()
    rows = {}
    for rep in range(a.repeat):
        r, per_tree = ours(X, y, Xt, yt, a.trees, a.key, a.depth, a.bins)
        rows[f'fedgauss {a.key}-bit #{rep}'] = r
        f = fedtree_run(X, y, Xt, yt, a.trees, a.depth, a.bins)
        if f is not None:
            rows[f'FedTree 1.0.5 HE 512-bit #{rep}'] = f
    cen = GBDTClassifier(n_estimators=a.trees, max_depth=a.depth, max_bins=a.bins).fit(X, y)
    rows['centralized GBDTClassifier'] = dict(auc=roc_auc_score(yt, cen.predict_proba(Xt)[:, 1]))
    t = pd.DataFrame(rows).T
    ft = [k for k in rows if k.startswith('FedTree')]
    if ft:
        for c in ('wall_per_tree', 'cpu_per_tree'):
            t[c + ' / FedTree'] = t[c] / np.mean([rows[k][c] for k in ft])
    print(
        f"{len(X):,} x {X.shape[1]} synthetic, 10 features per party, depth {a.depth}, {a.bins} bins, {a.trees} trees, one thread"
    )
    print(t.round(3).to_string())
    print("\nfedgauss bytes sent per party per tree (transcript, after the setup round):")
    print(per_tree.astype(int).to_string())


if __name__ == '__main__':
    main()
