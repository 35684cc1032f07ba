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

With `--dropouts`, the price of surviving dropouts (issue 30): the same fit at dropout_tolerance 0 (masks agreed
once), 0.1 and 0.3 (a dropout-tolerant secure aggregation per release), and with 1 and rho K = 3 clients stopping
mid-fit; wall and CPU seconds (best of --repeat), bytes and messages per client, the transcript's phases, AUC, the ε promised and spent:

    FEDGAUSS_DATA=/work/shared/datasets python tests/bench_dpgbdt.py --dropouts --repeat 3 \\
        [--out nbs/31_dropout_cost.csv]

With `--missing`, Adult with its missing values kept (issue 30, nb91): Adult's train and test files with every row,
70/30 stratified splits at nb91's seeds, epsilon = 1; the paper's protocol (the training rows with a missing value
dropped before the fit) next to missing = 'learn', 'impute' and 'probabilistic' on all the training rows, on the same
split and with the same rng; test AUC on the test rows without a missing value (every model scores them) and on all
test rows (only the models that keep missing values can):

    FEDGAUSS_DATA=/work/shared/datasets python tests/bench_dpgbdt.py --missing [--seeds 1 4 100 333 1002] \
        [--out nbs/91_repro_dpgbdt_missing.csv]

With `--multiclass`, the cost of K classes (issue 29): nb30's synthetic 7-class set (20 000 rows, 20 features), 10
clients, epsilon = 1, DP-TR Newton IH (T = 50) and the hist method (T = 10), depth 4; the 7-class fit (7 trees per
round, grown together) against the same fit on a binary label of the same rows, and against the authors' way of meeting
K classes (7 one-vs-all binary fits): seconds (CPU, best of --repeat) and bytes per client, per round and per tree:

    python tests/bench_dpgbdt.py --multiclass [--repeat 3] [--out nbs/31_multiclass_cost.csv]
"""

import argparse, importlib.util, sys, time

import numpy as np
import pandas as pd
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


def dp_fit(mod, Xtr, ytr, **kw):
    est = mod.DPGBDTClassifier.preset('DP-TR Newton IH EBM', epsilon=1.0, n_estimators=100, max_depth=4, n_clients=10)
    pub = adult_public(Xtr) if 'max_rows' in est.get_params() else {}  # an older module: bounds from the data
    return est.set_params(rng=1, **pub, **kw).fit(Xtr, ytr)


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


DROPOUT_RUNS = [  # (dropout_tolerance, {client: (release, stage)}): none, then one, then rho K = 3 clients stop mid-fit
    (0.0, {}),
    (0.1, {}),
    (0.3, {}),
    (0.1, {'client4': (40, 'mask')}),
    (0.3, {'client1': (10, 'advertise'), 'client4': (40, 'mask'), 'client8': (70, 'unmask')}),
]


def dropouts(repeat=3, out=None):
    "The same DP fit on Adult, 10 clients, without and with dropout tolerance, and with clients stopping mid-fit."
    Xtr, Xte, ytr, yte = adult()
    rows = []
    for rho, drop in DROPOUT_RUNS:
        t = cpu = np.inf
        for _ in range(repeat):  # wall and CPU time of the same fits (the simulator runs every party in this process)
            t0, c0 = time.perf_counter(), time.process_time()
            m = dp_fit(dpgbdt, Xtr, ytr, dropout_tolerance=rho, drop=drop)
            t, cpu = min(t, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
        T = m.channel_.transcript
        cl = T[T.sender.str.startswith('client')].groupby('sender')
        rows.append(
            dict(
                rho=rho,
                dropped=len(m.dropped_),
                wall_s=t,
                cpu_s=cpu,
                client_KiB_sent=cl.bytes.sum().mean() / 1024,
                client_messages=cl.size().mean(),
                phases=T['round'].nunique(),  # the transcript's rounds: setup, then one per release (or tree)
                auc=roc_auc_score(yte, m.predict_proba(Xte)[:, 1]),
                eps_promised=m.privacy_promised_[0],
                eps_spent=m.privacy_spent_[0],
            )
        )
    tab = pd.DataFrame(rows)
    base = tab.iloc[0]
    tab['cpu_ratio'], tab['bytes_ratio'] = tab.cpu_s / base.cpu_s, tab.client_KiB_sent / base.client_KiB_sent
    print(
        f"DP-TR Newton IH EBM, T = 100, depth 4, epsilon = 1, Adult ({len(Xtr)} rows), 10 clients, all in one process; "
        f"seconds: best of {repeat} (wall, and CPU: every party's work)"
    )
    print(tab.round(4).to_string(index=False))
    if out:
        tab.to_csv(out, index=False)
    return tab


MISSING_METHODS = [('DP-TR Newton IH EBM', 100), ('FEVERLESS', 50)]  # (preset, T): the paper's best, and a hist method
MISSING_ARMS = ['rows dropped', 'learn', 'impute', 'probabilistic']


def adult_all():
    "Adult's train and test files, every row (missing values kept as NaN), as nb91 loads them but without dropping."
    a, b = load_adult('train'), load_adult('test')
    return pd.concat([a[0], b[0]], ignore_index=True), pd.concat([a[1], b[1]], ignore_index=True)


def missing_study(seeds=(1, 4, 100, 333, 1002), out=None):
    "Each seed: one split; per method, the paper's protocol and the three ways of keeping missing values, same rng."
    X, y = adult_all()
    rows = []
    for seed in seeds:
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
        ok_tr, ok_te = Xtr.notna().all(axis=1).to_numpy(), Xte.notna().all(axis=1).to_numpy()
        for method, T in MISSING_METHODS:
            for arm in MISSING_ARMS:
                kw = dict(epsilon=1.0, n_estimators=T, max_depth=4, n_clients=10, rng=seed)
                est = dpgbdt.DPGBDTClassifier.preset(method, **kw).set_params(**adult_public(Xtr))
                keep = ok_tr if arm == 'rows dropped' else np.ones(len(Xtr), bool)
                t = time.perf_counter()
                m = est.set_params(missing=None if arm == 'rows dropped' else arm).fit(Xtr[keep], ytr[keep])
                sec = time.perf_counter() - t
                auc = lambda k: roc_auc_score(yte[k], m.predict_proba(Xte[k])[:, 1])
                rows.append(
                    dict(seed=seed, method=method, T=T, missing=arm, train_rows=int(keep.sum()), seconds=sec)
                    | dict(queries=sum(m.queries_.values()), eps_spent=m.privacy_spent_[0], z=m.noise_multiplier_)
                    | dict(auc_complete=auc(ok_te), auc_all=np.nan if arm == 'rows dropped' else auc(slice(None)))
                )
                print(rows[-1], flush=True)
    tab = pd.DataFrame(rows)
    if out:
        tab.to_csv(out, index=False)
    summary = tab.groupby(['method', 'missing'], sort=False)[['auc_complete', 'auc_all']].agg(['mean', 'std'])
    print(f"Adult, every row ({len(X)}; {1 - X.notna().all(axis=1).mean():.1%} with a missing value), epsilon = 1, "
          f"10 clients, seeds {list(seeds)}")  # fmt: skip
    print(summary.round(4).to_string())
    return tab


def seven_classes(n, seed=0):
    "nb30's synthetic 7-class set: 20 features (12 informative), rounded to multiples of 1/4."
    from sklearn.datasets import make_classification

    X, y = make_classification(n, n_features=20, n_informative=12, n_redundant=4, n_classes=7, random_state=seed)
    return np.round(X * 4) / 4, y


def _multiclass_arm(X, y, name, kw, arm, K=7):
    "The fits of one arm: the K-class fit, the binary fit on the same rows, or K one-vs-all binary fits at ε/K each."
    est = lambda **e: dpgbdt.DPGBDTClassifier.preset(name, **(kw | {'max_rows': len(X)} | e))
    if arm == '7 classes':
        return [est().fit(X, y)]
    if arm == 'binary':
        return [est().fit(X, y % 2)]
    return [est(epsilon=kw['epsilon'] / K, delta=1 / (K * len(X))).fit(X, y == c) for c in range(K)]


def multiclass_cost(repeat=3, out=None):
    "Cost per round and per tree of K = 7 classes against binary (same rows) and against 7 one-vs-all binary fits."
    X, y = seven_classes(20_000)
    rows = []
    for name, T in (('DP-TR Newton IH', 50), ('FEVERLESS', 10)):
        kw = {'epsilon': 1.0, 'n_estimators': T, 'max_depth': 4, 'n_clients': 10, 'rng': 1, 'feature_bounds': (-24, 24)}
        for arm in ('7 classes', 'binary', 'one-vs-all'):
            cpu = np.inf
            for _ in range(repeat):
                c0 = time.process_time()
                ms = _multiclass_arm(X, y, name, kw, arm)
                cpu = min(cpu, time.process_time() - c0)
            sent = lambda t: t[t.sender.str.startswith('client')].bytes.sum()
            kib = sum(sent(m.channel_.transcript) for m in ms) / 10 / 1024  # per client
            trees = sum(len(m.tree_leaves_) for m in ms)
            rows.append({'method': name, 'arm': arm, 'rounds': T, 'trees': trees, 'cpu_s': cpu, 'client_KiB': kib})
    tab = pd.DataFrame(rows)
    tab['cpu_ms_per_tree'] = 1000 * tab.cpu_s / tab.trees
    tab['client_KiB_per_tree'] = tab.client_KiB / tab.trees
    for col in ('cpu_s', 'client_KiB', 'cpu_ms_per_tree', 'client_KiB_per_tree'):
        base = tab[tab.arm == 'binary'].set_index('method')[col]
        tab[f'{col}/binary'] = tab[col] / tab.method.map(base)
    print(f"synthetic 7-class set ({len(X)} rows, 20 features), 10 clients, epsilon = 1, depth 4, all in one process; "
          f"CPU seconds: best of {repeat} (every party's work)")  # fmt: skip
    print(tab.round(3).to_string(index=False))
    if out:
        tab.to_csv(out, index=False)
    return tab


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
    p.add_argument('--dropouts', action='store_true', help='the cost of dropout_tolerance 0 / 0.1 / 0.3, and dropouts')
    p.add_argument('--missing', action='store_true', help="Adult with its missing values kept, against rows dropped")
    p.add_argument('--multiclass', action='store_true', help='K = 7 classes against binary and one-vs-all')
    p.add_argument('--seeds', type=int, nargs='+', default=[1, 4, 100, 333, 1002], help='with --missing: the splits')
    p.add_argument(
        '--out', default=None, help='with --dropouts, --missing or --multiclass: write the table to this CSV'
    )
    a = p.parse_args()
    if a.multiclass:
        multiclass_cost(a.repeat, a.out)
    elif a.dropouts:
        dropouts(a.repeat, a.out)
    elif a.missing:
        missing_study(a.seeds, a.out)
    elif a.crypto_cost:
        crypto_cost(a.repeat)
    else:
        paired(a.against, a.repeat) if a.against else main(a.repeat)
