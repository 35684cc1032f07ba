"""Benchmark of fedgauss.dpgbdt (not collected by pytest): "DP-TR Newton IH EBM", T = 100, depth 4, on Adult with
10 clients, secure aggregation and distributed discrete Gaussian noise included — seconds, AUC, and bytes per client
from the transcript — next to the non-private fedgauss.gbdt.GBDTClassifier on the same split.

    FEDGAUSS_DATA=/work/shared/datasets python tests/bench_dpgbdt.py [--repeat 3]

With `--against OLD.py` (another version of the module, e.g. `git show <commit>:fedgauss/dpgbdt.py > /tmp/old.py`),
the same fit alternates between the two versions in this one process and the paired CPU-time ratio new / old is
printed (the models must be identical):

    FEDGAUSS_DATA=/work/shared/datasets python tests/bench_dpgbdt.py --against /tmp/old.py --repeat 12

With `--crypto-cost`, the cost of the secret randomness (issue 26): the same fit alternates between the ChaCha20
generators of fedgauss.entropy and numpy's PCG64 put in their place (same code, same plan), and the paired CPU-time
ratio is printed:

    FEDGAUSS_DATA=/work/shared/datasets python tests/bench_dpgbdt.py --crypto-cost --repeat 12
"""

import argparse, importlib.util, sys, time

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

import fedgauss.dpgbdt as dpgbdt
import fedgauss.dpgbdt_programs as dpgbdt_programs
from fedgauss.data import load_adult
from fedgauss.gbdt import GBDTClassifier


def best_of(f, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def adult():
    X, y = load_adult('train')
    keep = X.notna().all(axis=1)
    X, y = X[keep], y[keep]
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=1)


# Adult's public domains (UCI adult.names and the CPS coding: ages 17-90, top-coded gains 99 999, hours 1-99; the
# categorical codes 0 .. levels - 1), declared, never read from the data; delta = 1/max_rows with Adult's 48 842 rows
ADULT_BOUNDS = dict(
    age=(17, 90),
    fnlwgt=(0, 1_500_000),
    education_num=(1, 16),
    capital_gain=(0, 99_999),
    capital_loss=(0, 5_000),
    hours_per_week=(1, 99),
)


def adult_public(X):
    "feature_bounds and max_rows for Adult: the documented domains above, the categorical columns' codes."
    cat = {c: (0, len(X[c].cat.categories) - 1) for c in X.columns if c not in ADULT_BOUNDS}
    return dict(feature_bounds={c: (ADULT_BOUNDS | cat)[c] for c in X.columns}, max_rows=48_842)


def dp_fit(mod, Xtr, ytr):
    est = mod.DPGBDTClassifier.preset('DP-TR Newton IH EBM', epsilon=1.0, n_estimators=100, max_depth=4, n_clients=10)
    pub = adult_public(Xtr) if 'max_rows' in est.get_params() else {}  # an older module: bounds from the data
    return est.set_params(rng=1, **pub).fit(Xtr, ytr)


def paired(path, repeat):
    "Alternate the fit between this module and the one at `path`; print the paired CPU-time ratios."
    spec = importlib.util.spec_from_file_location('fedgauss._bench_old_dpgbdt', path)
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old
    spec.loader.exec_module(old)
    Xtr, Xte, ytr, yte = adult()
    a, b = dp_fit(old, Xtr, ytr), dp_fit(dpgbdt, Xtr, ytr)
    assert np.array_equal(a.tree_leaves_, b.tree_leaves_) and np.array_equal(a.tree_thresholds_, b.tree_thresholds_)
    t_old, t_new = [], []
    for i in range(repeat):
        for mod, ts in ((old, t_old), (dpgbdt, t_new)) if i % 2 == 0 else ((dpgbdt, t_new), (old, t_old)):
            t = time.process_time()
            dp_fit(mod, Xtr, ytr)
            ts.append(time.process_time() - t)
    r = np.array(t_new) / np.array(t_old)
    print(
        f"DP-TR Newton IH EBM, T = 100, Adult, 10 clients: identical models; CPU s per fit: old median "
        f"{np.median(t_old):.3f}, new median {np.median(t_new):.3f}"
    )
    print(
        f"paired ratio new / old: median {np.median(r):.3f} (quartiles {np.quantile(r, 0.25):.3f} - "
        f"{np.quantile(r, 0.75):.3f}, {repeat} pairs)"
    )


def crypto_cost(repeat):
    "Paired CPU time of the fit with the secret generators (ChaCha20) against PCG64 in their place."
    import fedgauss.entropy as ent

    Xtr, Xte, ytr, yte = adult()
    pcg = lambda seed=None, *labels: np.random.default_rng(
        None if seed is None else np.frombuffer(ent.derive_key(seed, *labels), '<u8')
    )
    real = {k: getattr(dpgbdt, k) for k in ('secret_rng', 'prg', 'secret_uint64', 'secret_bytes', 'party_rngs')}
    fake = dict(
        secret_rng=pcg,
        prg=lambda shared, label='mask': pcg(shared, label),
        secret_uint64=lambda g, n: g.integers(0, 2**64, size=n, dtype=np.uint64),
        secret_bytes=lambda g, n: np.frombuffer(g.bytes(n), np.uint8),
        party_rngs=lambda rng, names: {n: pcg(ent.experiment_key(rng), n) if rng is not None else pcg() for n in names},
    )
    ts = {True: [], False: []}
    mods = (dpgbdt, dpgbdt_programs)  # the estimator's module and the programs' (nb31a)
    for i in range(repeat):
        for crypto in (True, False) if i % 2 == 0 else (False, True):
            for k, v in (real if crypto else fake).items():
                for mod in mods:
                    if hasattr(mod, k):
                        setattr(mod, k, v)
            t = time.process_time()
            dp_fit(dpgbdt, Xtr, ytr)
            ts[crypto].append(time.process_time() - t)
    r = np.array(ts[True]) / np.array(ts[False])
    print(
        f"DP-TR Newton IH EBM, T = 100, Adult, 10 clients: CPU s per fit, ChaCha20 median {np.median(ts[True]):.3f}, "
        f"PCG64 median {np.median(ts[False]):.3f}; paired ratio median {np.median(r):.3f} "
        f"(quartiles {np.quantile(r, 0.25):.3f} - {np.quantile(r, 0.75):.3f}, {repeat} pairs)"
    )


def main(repeat=3):
    Xtr, Xte, ytr, yte = adult()
    dp = lambda: dp_fit(dpgbdt, Xtr, ytr)
    npv = lambda: GBDTClassifier(n_estimators=100, max_depth=4, max_bins=32).fit(Xtr, ytr)
    t_dp, m = best_of(dp, repeat)
    t_np, g = best_of(npv, repeat)
    auc_dp = roc_auc_score(yte, m.predict_proba(Xte)[:, 1])
    auc_np = roc_auc_score(yte, g.predict_proba(Xte)[:, 1])
    b = m.channel_.bytes_by_party()
    cl = b[b.index.str.startswith('client')]
    print(f"Adult ({len(Xtr)} train rows, {Xtr.shape[1]} features), 10 clients, T = 100, depth 4, epsilon = 1")
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
    p.add_argument('--against', default=None, help='another version of fedgauss/dpgbdt.py: paired CPU-time ratio')
    p.add_argument('--crypto-cost', action='store_true', help='paired CPU time: secret generators against PCG64')
    a = p.parse_args()
    crypto_cost(a.repeat) if a.crypto_cost else paired(a.against, a.repeat) if a.against else main(a.repeat)
