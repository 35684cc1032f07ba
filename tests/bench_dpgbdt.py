"""Benchmark of fedgauss.dpgbdt (not collected by pytest): "DP-TR Newton IH EBM", T = 100, depth 4, on Adult with
10 clients, secure aggregation and distributed discrete Gaussian noise included — seconds, AUC, and bytes per client
from the transcript — next to the non-private fedgauss.gbdt.GBDTClassifier on the same split.

    FEDGAUSS_DATA=/work/shared/datasets python tests/bench_dpgbdt.py [--repeat 3]
"""

import argparse, time

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from fedgauss.data import load_adult
from fedgauss.dpgbdt import DPGBDTClassifier
from fedgauss.gbdt import GBDTClassifier


def best_of(f, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(repeat=3):
    X, y = load_adult('train')
    keep = X.notna().all(axis=1)
    X, y = X[keep], y[keep]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=1)
    dp = lambda: DPGBDTClassifier.preset(
        'DP-TR Newton IH EBM', epsilon=1.0, n_estimators=100, max_depth=4, n_clients=10, rng=1
    ).fit(Xtr, ytr)
    npv = lambda: GBDTClassifier(n_estimators=100, max_depth=4, max_bins=32).fit(Xtr, ytr)
    t_dp, m = best_of(dp, repeat)
    t_np, g = best_of(npv, repeat)
    auc_dp = roc_auc_score(yte, m.predict_proba(Xte)[:, 1])
    auc_np = roc_auc_score(yte, g.predict_proba(Xte)[:, 1])
    b = m.channel_.bytes_by_party()
    cl = b[b.index.str.startswith('client')]
    print(f"Adult ({len(Xtr)} train rows, {X.shape[1]} features), 10 clients, T = 100, depth 4, epsilon = 1")
    print(
        f"DP-TR Newton IH EBM   fit {t_dp:6.2f} s   AUC {auc_dp:.4f}   eps spent {m.privacy_spent_[0]:.4f}   z {m.noise_multiplier_:.1f}"
    )
    print(f"GBDTClassifier (np)   fit {t_np:6.2f} s   AUC {auc_np:.4f}")
    print(f"ratio DP / non-private: {t_dp / t_np:.1f}x")
    print(
        f"per client: {cl.bytes_sent.mean() / 1024:.1f} KiB sent, {cl.bytes_received.mean() / 1024:.1f} KiB received, "
        f"{cl.messages_sent.mean():.0f} messages sent; server received {b.loc['server', 'bytes_received'] / 1024:.1f} KiB"
    )


if __name__ == '__main__':
    p = argparse.ArgumentParser()
    p.add_argument('--repeat', type=int, default=3)
    main(p.parse_args().repeat)
