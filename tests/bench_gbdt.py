"""Benchmark: 100 trees of depth 6 with 256 bins on Adult (train 32,561 rows x 14 features, NaN for missing categories),
fedgauss against XGBoost (n_jobs=1), LightGBM (single thread) and scikit-learn's HistGradientBoosting (one thread), in
one process. Prints fit times (best of `--repeat` runs; wall clock and CPU time), their ratios to XGBoost, and test AUC;
then where fedgauss spends its time.

With `--multiclass`: fedgauss against XGBoost alone, the binary fit above next to a multi-class one (the synthetic
7-class set of nb30, 100,000 rows x 20 features, `multi:softprob`: 100 rounds of 7 trees of depth 6), CPU seconds as
the best of `--repeat` interleaved fits, each ratio to XGBoost; `--out FILE.csv` keeps the table (nb30 prints it).

    python tests/bench_gbdt.py [--repeat 3] [--trees 100]
    python tests/bench_gbdt.py --multiclass [--repeat 3] [--rows 100000] [--out nbs/30_gbdt_multiclass_bench.csv]

With `--ab REV` (a git revision, e.g. `main`, or the path of an older `gbdt.py`): the core before and after, on Adult
and a9a (LIBSVM, 32,561 rows x 123 binary features), each next to XGBoost (`n_jobs=1`) in the same run: CPU seconds
as the best of `--repeat` interleaved fits, the ratios to XGBoost, and whether the old and new trees are identical
(`--out FILE.csv` keeps the table; nb30 prints it).

    python tests/bench_gbdt.py --ab main [--repeat 5] [--out nbs/30_gbdt_speed.csv]

With `--profile`: where the gap to XGBoost lies on Adult (fedgauss and XGBoost `n_jobs=1`, 100 trees of depth 6): CPU
seconds of fits on the first 2,000 ... 32,561 rows (a fixed shuffle) with a least-squares line `a + b * rows` per
library (`a`: the work that does not grow with the rows; `b`: the work per row); and, for one full fit of each, the
Python-to-C calls (`sys.setprofile`'s `c_call` events: NumPy/SciPy functions and methods, XGBoost's `ctypes` calls;
NumPy operators such as `a * b` are not counted), the time inside the compiled kernels that do the per-row work
(fedgauss: SciPy's sparse products that build the histograms; XGBoost: its `ctypes` calls into libxgboost), and the
fixed cost of one small NumPy call. `--out FILE.csv` keeps the summary table (nb30 prints it).

    python tests/bench_gbdt.py --profile [--repeat 3] [--out nbs/30_gbdt_profile.csv]

With `--per-tree`: the setup and the cost of one tree, fedgauss and XGBoost (one thread), from the best CPU seconds of
fits of 1 and of `--trees` trees on Adult.

    python tests/bench_gbdt.py --per-tree [--repeat 7] [--out FILE.csv]

With `--level-calls`: the calls from Python into C of one tree's growth on Adult (the fourth tree of a fit), by the
function and line they come from, per level of the tree: what a level pays in calls, whatever the number of rows.

    FEDGAUSS_NUMBA=0 python tests/bench_gbdt.py --level-calls [--out nbs/30_gbdt_level_calls.csv]  # the NumPy code's

With numba installed (the fast extra), 'fedgauss' runs the core's compiled kernels (forced, as in a process that has
loaded them: `FEDGAUSS_NUMBA=1` unless set; by default a process loads them only once they pay, `fedgauss.fast.
kernels_for`) and, in the default and `--per-tree` tables, 'fedgauss-numpy' its NumPy code (the same trees);
`FEDGAUSS_NUMBA=0` runs the NumPy code everywhere.
"""

import argparse
import os
import textwrap
import time
from collections import defaultdict

os.environ.setdefault('OMP_NUM_THREADS', '1')  # before numpy / sklearn / lightgbm start their thread pools
os.environ.setdefault('FEDGAUSS_NUMBA', '1')  # the kernels, as a process that has loaded them runs them
for _v in ('OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_v, '1')
_shared = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'datasets')
if 'FEDGAUSS_DATA' not in os.environ and os.path.isdir(_shared):  # the repository's sibling shared/datasets
    os.environ['FEDGAUSS_DATA'] = os.path.abspath(_shared)

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits

import fedgauss.gbdt as G
from fedgauss.data import load_adult, load_libsvm
from fedgauss.fast import numba_enabled, use_numba


def numeric(X):
    "Categoricals as their codes with NaN for missing (what every library gets), numbers as floats."
    return G._as_numeric_frame(X).to_numpy(float)


class NumpyOnly:
    "A fedgauss estimator fitted with the compiled kernels off (`use_numba(False)`): the core's NumPy code."

    def __init__(self, est):
        self.est = est

    def fit(self, *a, **k):
        with use_numba(False):
            self.est.fit(*a, **k)
        return self

    def predict_proba(self, X):
        return self.est.predict_proba(X)


def kernels_line():
    "Which code the row 'fedgauss' runs."
    if numba_enabled():
        return "'fedgauss' runs the compiled kernels (numba, the fast extra); 'fedgauss-numpy' the NumPy code"
    return "'fedgauss' runs the NumPy code (numba is not installed, or FEDGAUSS_NUMBA=0)"


def models(n_trees, depth, bins, lr=0.3):
    try:
        import lightgbm as lgb
        import xgboost as xgb
    except ImportError as e:  # the peers: pip install -e '.[bench]'
        raise SystemExit(f"{e}: the benchmark's peers come with the bench extra: pip install -e '.[bench]'") from None
    from sklearn.ensemble import HistGradientBoostingClassifier

    ours = lambda: G.GBDTClassifier(
        n_estimators=n_trees, max_depth=depth, learning_rate=lr, max_bins=bins, base_score=0.5
    )
    numpy_only = {'fedgauss-numpy': lambda: NumpyOnly(ours())} if numba_enabled() else {}
    return {
        'fedgauss': ours,
        **numpy_only,
        'xgboost': lambda: xgb.XGBClassifier(
            n_estimators=n_trees,
            max_depth=depth,
            learning_rate=lr,
            max_bin=bins,
            base_score=0.5,
            tree_method='hist',
            n_jobs=1,
        ),
        'lightgbm': lambda: lgb.LGBMClassifier(
            n_estimators=n_trees,
            max_depth=depth,
            num_leaves=2**depth,
            learning_rate=lr,
            max_bin=bins - 1,
            reg_lambda=1.0,
            min_child_weight=1.0,
            min_child_samples=1,
            n_jobs=1,
            verbose=-1,
        ),
        'sklearn-hgb': lambda: HistGradientBoostingClassifier(
            max_iter=n_trees,
            max_depth=depth,
            max_leaf_nodes=None,
            learning_rate=lr,
            max_bins=min(bins - 1, 255),
            l2_regularization=1.0,
            min_samples_leaf=1,
            early_stopping=False,
        ),
    }


def profile_fedgauss(X, y, n_trees, depth, bins):
    "Fit once with the phases of tree growth timed (CPU seconds)."
    T = defaultdict(float)
    saved = {}

    def wrap(obj, name, key):
        f = getattr(obj, name)
        saved[(obj, name)] = f

        def w(*a, **k):
            t = time.process_time()
            r = f(*a, **k)
            T[key] += time.process_time() - t
            return r

        setattr(obj, name, w)

    hist = saved[(G.LocalHistograms, 'histograms')] = G.LocalHistograms.histograms

    def histograms(self, nodes):  # the root from all rows; then only the smaller children
        key = 'histograms (root)' if self._at_root else 'histograms (smaller children)'
        t = time.process_time()
        r = hist(self, nodes)
        T[key] += time.process_time() - t
        return r

    G.LocalHistograms.histograms = histograms
    wrap(G.LocalHistograms, 'split', 'row partition')
    wrap(G, '_best_splits', 'split finding')
    wrap(G.LogisticLoss, 'gradients', 'gradients')
    wrap(G.Binner, 'fit', 'binning (once)')
    wrap(G.Binner, 'transform', 'binning (once)')
    t = time.process_time()
    G.GBDTClassifier(n_estimators=n_trees, max_depth=depth, max_bins=bins, base_score=0.5).fit(X, y)
    T['total'] = time.process_time() - t
    for (obj, name), f in saved.items():
        setattr(obj, name, f)
    T['other (tree bookkeeping, margins)'] = T['total'] - sum(v for k, v in T.items() if k != 'total')
    return T


def cpu_runs(fits, repeat):
    "CPU seconds of `repeat` rounds of interleaved fits (so that load changes hit every library alike), per fit."
    cpu = defaultdict(list)
    for _ in range(repeat):
        for name, fit in fits.items():
            c0 = time.process_time()
            fit()
            cpu[name].append(time.process_time() - c0)
    return cpu


def best_cpu(fits, repeat):
    "Best CPU seconds of `repeat` rounds of interleaved fits."
    return {k: min(v) for k, v in cpu_runs(fits, repeat).items()}


def multiclass(a):
    "fedgauss / XGBoost CPU ratios: Adult (binary) and the synthetic 7-class set (softprob), one thread each."
    import xgboost as xgb
    from test_gbdt_multiclass import seven_classes

    p = {'n_estimators': a.trees, 'max_depth': a.depth, 'learning_rate': 0.3}
    X, y = load_adult('train')
    A = numeric(X)
    X7, y7 = seven_classes(a.rows)
    tasks = {'binary (Adult)': (A, y.to_numpy()), '7 classes (synthetic)': (X7, y7)}
    rows = []
    with threadpool_limits(1):
        for task, (Xt, yt) in tasks.items():
            fits = {
                'fedgauss': lambda Xt=Xt, yt=yt: G.GBDTClassifier(max_bins=a.bins, **p).fit(Xt, yt),
                'xgboost': lambda Xt=Xt, yt=yt: xgb.XGBClassifier(
                    tree_method='hist', max_bin=a.bins, n_jobs=1, **p
                ).fit(Xt, yt),
            }
            t = best_cpu(fits, a.repeat)
            k = len(np.unique(yt))
            rows.append(
                {'task': task, 'rows': len(yt), 'features': Xt.shape[1], 'trees': a.trees * (k if k > 2 else 1)}
            )
            rows[-1].update({'fedgauss_cpu_s': t['fedgauss'], 'xgboost_cpu_s': t['xgboost']})
            rows[-1]['ratio'] = t['fedgauss'] / t['xgboost']
    df = pd.DataFrame(rows)
    print(f"{a.trees} rounds of depth {a.depth}, {a.bins} bins, one thread; CPU s, best of {a.repeat} interleaved fits")
    print(df.round(3).to_string(index=False))
    if a.out:
        df.to_csv(a.out, index=False)


def old_core(rev):
    "The module `fedgauss.gbdt` as it was at git revision `rev` (or in the file `rev`), imported under another name."
    import importlib.util
    import subprocess
    import sys
    import tempfile

    path = rev
    if not os.path.isfile(rev):
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
        src = subprocess.run(
            ['git', '-C', root, 'show', f'{rev}:fedgauss/gbdt.py'], capture_output=True, check=True
        ).stdout
        path = os.path.join(tempfile.mkdtemp(), 'gbdt_old.py')
        with open(path, 'wb') as f:
            f.write(src)
    # a module of the `fedgauss` package, so that its relative imports (`from .fast import ...`) find today's helpers
    spec = importlib.util.spec_from_file_location('fedgauss._gbdt_old', path)
    mod = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
    mod.__package__ = 'fedgauss'
    spec.loader.exec_module(mod)
    return mod


def tree_arrays(m):
    "Every array of every tree of a fitted model, for an exact comparison."
    atts = ('feature', 'threshold', 'bin', 'default_left', 'left', 'right', 'value', 'gain', 'sum_grad', 'sum_hess')
    return [getattr(t, a) for t in m.trees_ for a in atts]


def load_average():
    "The machine's 1-minute load average (the benchmarks share it with whatever else runs), as text."
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, 'getloadavg') else 'unknown'


def ab(a):
    "The core at `a.ab` (before) and now (after) on Adult and a9a, each next to XGBoost in the same run (CPU s)."
    import xgboost as xgb

    load0 = load_average()
    print(kernels_line().replace("'fedgauss'", "'after'").split(';')[0])
    old = old_core(a.ab)
    X, y = load_adult('train')
    Xa, ya = load_libsvm('a9a')
    tasks = {'Adult': (numeric(X), y.to_numpy()), 'a9a': (Xa.to_numpy(float), ya.to_numpy())}
    p = {'n_estimators': a.trees, 'max_depth': a.depth, 'learning_rate': 0.3, 'base_score': 0.5}
    rows = []
    with threadpool_limits(1):
        for task, (Xt, yt) in tasks.items():
            fitted = {}
            fits = {
                'before': lambda fitted=fitted, Xt=Xt, yt=yt: fitted.__setitem__(
                    'before', old.GBDTClassifier(max_bins=a.bins, **p).fit(Xt, yt)
                ),
                'after': lambda fitted=fitted, Xt=Xt, yt=yt: fitted.__setitem__(
                    'after', G.GBDTClassifier(max_bins=a.bins, **p).fit(Xt, yt)
                ),
                'xgboost': lambda Xt=Xt, yt=yt: xgb.XGBClassifier(
                    tree_method='hist', max_bin=a.bins, n_jobs=1, **p
                ).fit(Xt, yt),
            }
            runs = {k: np.array(v) for k, v in cpu_runs(fits, a.repeat).items()}
            t = {k: v.min() for k, v in runs.items()}
            same = all(np.array_equal(u, v, equal_nan=True) for u, v in zip(*map(tree_arrays, fitted.values())))
            rows.append({'data': task, 'rows': len(yt), 'features': Xt.shape[1], 'xgboost_cpu_s': t['xgboost']})
            rows[-1].update(before_cpu_s=t['before'], after_cpu_s=t['after'])
            rows[-1].update(before_ratio=t['before'] / t['xgboost'], after_ratio=t['after'] / t['xgboost'])
            # the median over rounds of each round's ratio (the fits of a round ran back to back, under the same load)
            rows[-1]['after_ratio_median'] = float(np.median(runs['after'] / runs['xgboost']))
            rows[-1]['trees_identical'] = same
    df = pd.DataFrame(rows)
    print(f"{a.trees} trees of depth {a.depth}, {a.bins} bins, one thread; CPU s, best of {a.repeat} interleaved fits")
    print("(after_ratio_median: the median of the rounds' after / xgboost);")
    print(f"before: fedgauss.gbdt at {a.ab}; after: this tree's; ratios to XGBoost hist (n_jobs=1) in the same run")
    print(f"load average (1 min): {load0} at the start, {load_average()} at the end")
    print(df.round(3).to_string(index=False))
    if a.out:
        df.to_csv(a.out, index=False)


def count_calls(fit):
    "Run `fit()` once under `sys.setprofile`: the number of Python-to-C calls and of Python function calls."
    import sys

    n = defaultdict(int)

    def tracer(frame, event, arg):
        n[event] += 1

    sys.setprofile(tracer)
    try:
        fit()
    finally:
        sys.setprofile(None)
    return n['c_call'], n['call']


class _Timed:
    "Stand-in for an object whose callables (e.g. the `ctypes` functions of a shared library) are timed and counted."

    def __init__(self, obj, names=None):
        self._obj, self._names, self.spent, self.calls = obj, names, 0.0, 0

    def __getattr__(self, name):
        f = getattr(self._obj, name)
        if not callable(f) or (self._names is not None and name not in self._names):
            return f

        def w(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                self.spent += time.process_time() - t
                self.calls += 1

        return w


def timed_kernels(fit, modules, attr, names=None):
    """CPU seconds of one `fit()`, the part of it inside the callables of `module.<attr>` (for every module given, the
    same object), and how many calls were made into them."""
    import sys

    mods = [sys.modules[m] for m in modules if m in sys.modules and hasattr(sys.modules[m], attr)]
    timed = _Timed(getattr(mods[0], attr), names)
    for m in mods:
        setattr(m, attr, timed)
    try:
        c = time.process_time()
        fit()
        total = time.process_time() - c
    finally:
        for m in mods:
            setattr(m, attr, timed._obj)
    return total, timed.spent, timed.calls


def small_call_us():
    "CPU microseconds of one NumPy call on 8 elements (a gather, an in-place ufunc, a reduction): its fixed cost."
    import timeit

    a, i, b = np.arange(8.0), np.arange(8), np.ones(8)
    stmts = [lambda: np.take(a, i), lambda: np.add(a, b, out=b), lambda: a.max()]
    cpu = [min(timeit.repeat(s, timer=time.process_time, number=20000, repeat=5)) for s in stmts]
    return float(np.mean(cpu)) / 20000 * 1e6


def profile(a):
    "The fit's cost split into the part that grows with the rows and the part that does not, and the calls into C."
    import xgboost as xgb

    load0 = load_average()
    X, y = load_adult('train')
    A, y = numeric(X), y.to_numpy()
    order = np.random.default_rng(0).permutation(len(y))
    p = {'n_estimators': a.trees, 'max_depth': a.depth, 'learning_rate': 0.3, 'base_score': 0.5}
    ours = lambda Xs, ys: G.GBDTClassifier(max_bins=a.bins, **p).fit(Xs, ys)
    theirs = lambda Xs, ys: xgb.XGBClassifier(tree_method='hist', max_bin=a.bins, n_jobs=1, **p).fit(Xs, ys)
    sizes = [1000, 2000, 4000, 8000, 16000, 24000, len(y)]
    rows = []
    with threadpool_limits(1):
        for m in sizes:
            Xs, ys = A[order[:m]], y[order[:m]]
            t = best_cpu(
                {'fedgauss': lambda Xs=Xs, ys=ys: ours(Xs, ys), 'xgboost': lambda Xs=Xs, ys=ys: theirs(Xs, ys)},
                a.repeat,
            )
            n_f = sum(tr.n_nodes for tr in ours(Xs, ys).trees_)
            n_x = len(theirs(Xs, ys).get_booster().trees_to_dataframe())
            rows.append({'rows': m, 'fedgauss_nodes': n_f, 'xgboost_nodes': n_x, 'fedgauss_cpu_s': t['fedgauss']})
            rows[-1].update(xgboost_cpu_s=t['xgboost'], ratio=t['fedgauss'] / t['xgboost'])
        scale = pd.DataFrame(rows)
        sparse = type('sparse', (), {'_csc_matvec': G._csc_matvec, '_csr_matvec': G._csr_matvec})  # scipy's kernels

        def ours_timed():  # the module-level names `_csc_matvec` / `_csr_matvec` of fedgauss.gbdt, timed
            t = _Timed(sparse)
            G._csc_matvec, G._csr_matvec = t._csc_matvec, t._csr_matvec
            try:
                c = time.process_time()
                ours(A, y)
                return time.process_time() - c, t.spent, t.calls
            finally:
                G._csc_matvec, G._csr_matvec = sparse._csc_matvec, sparse._csr_matvec

        tot_f, ker_f, k_f = min(ours_timed() for _ in range(a.repeat))
        xmods = [m for m in list(__import__('sys').modules) if m.startswith('xgboost')]
        tot_x, ker_x, k_x = min(timed_kernels(lambda: theirs(A, y), xmods, '_LIB') for _ in range(a.repeat))
        c_f, py_f = count_calls(lambda: ours(A, y))
        c_x, py_x = count_calls(lambda: theirs(A, y))
        small = order[: sizes[0]]
        c_f0, _ = count_calls(lambda: ours(A[small], y[small]))
        c_x0, _ = count_calls(lambda: theirs(A[small], y[small]))
        us = small_call_us()
    print(f"Adult's first rows (fixed shuffle), {a.trees} trees of depth {a.depth}, {a.bins} bins, one thread;")
    print(
        f"CPU s, best of {a.repeat} interleaved fits; load average (1 min) {load0} at the start, "
        f"{load_average()} at the end"
    )
    print(scale.round(3).to_string(index=False))
    n = scale['rows'].iloc[-1]
    summary = []
    for k, tot, ker, kc, c, c0, py in (
        ('fedgauss', tot_f, ker_f, k_f, c_f, c_f0, py_f),
        ('xgboost', tot_x, ker_x, k_x, c_x, c_x0, py_x),
    ):
        per_row, fixed = np.polyfit(scale['rows'], scale[f'{k}_cpu_s'], 1)  # cpu = fixed + per_row * rows
        summary.append({'library': k, 'fit_cpu_s': scale[f'{k}_cpu_s'].iloc[-1], 'fixed_s': fixed})
        summary[-1].update(per_row_us=per_row * 1e6, rows_s=per_row * n, kernel_share=ker / tot, kernel_calls=kc)
        summary[-1].update({'c_calls': c, f'c_calls_{sizes[0]}_rows': c0, 'python_calls': py})
        summary[-1].update(small_call_us=us, c_calls_x_small_call_s=c * us * 1e-6)
    df = pd.DataFrame(summary).set_index('library')
    notes = (
        "cpu = fixed_s + per_row_us * rows (least squares through the table); rows_s: the second term at the full "
        "size; kernel_share: the part of a full fit spent inside the compiled kernels (fedgauss: scipy's sparse "
        "products that build the histograms; xgboost: libxgboost); c_calls: Python-to-C calls of one full fit "
        f"({c_f0} for fedgauss on {sizes[0]:,} rows); one NumPy call on 8 elements costs {us:.2f} CPU us"
    )
    print('\n' + textwrap.fill(notes, 116))
    print(df.round(4).T.to_string())
    f, x = df.loc['fedgauss'], df.loc['xgboost']
    as_x = (x.fixed_s + f.rows_s) / (x.fixed_s + x.rows_s)
    per_row = f.per_row_us / x.per_row_us
    print(f"\nper row: fedgauss {per_row:.2f}x XGBoost; fixed: {f.fixed_s:.3f} s against {x.fixed_s:.3f} s")
    now = f.fit_cpu_s / x.fit_cpu_s
    print(f"with XGBoost's fixed cost, fedgauss's fit would be {as_x:.2f}x XGBoost's (now {now:.2f}x)")
    if a.out:
        df.reset_index().to_csv(a.out, index=False)
        scale.to_csv(a.out.replace('.csv', '_rows.csv'), index=False)


def level_calls(a):
    "The Python-to-C calls of one tree's `_grow_levels` on Adult, per level, by function and line (most first)."
    import sys

    X, y = load_adult('train')
    A, y = numeric(X), y.to_numpy()
    calls, grown, orig = [], [], G._grow_levels

    def tracer(frame, event, arg):
        if event == 'c_call':
            calls.append((frame.f_code.co_name, frame.f_lineno, getattr(arg, '__name__', '?')))

    def traced(*args):
        if len(grown) != 3:  # the fourth tree: past the first tree's one-off tables
            grown.append(None)
            return orig(*args)
        grown.append(None)
        sys.setprofile(tracer)
        try:
            out = orig(*args)
        finally:
            sys.setprofile(None)
        grown[-1] = len(out[3])  # levels of nodes: the splits' levels + 1
        return out

    G._grow_levels = traced
    try:
        G.GBDTClassifier(n_estimators=4, max_depth=a.depth, max_bins=a.bins, base_score=0.5).fit(A, y)
    finally:
        G._grow_levels = orig
    levels = grown[3] - 1
    df = pd.Series([f'{f}:{line} {name}' for f, line, name in calls]).value_counts().rename('calls').to_frame()
    df['per_level'] = df['calls'] / levels
    print(
        f"one tree of depth {a.depth} on Adult: {len(calls)} calls into C in {levels} levels of splits, "
        f"{len(calls) / levels:.0f} per level; by call site (function:line callee):"
    )
    print(df.round(2).to_string())
    if a.out:
        df.rename_axis('call_site').reset_index().assign(levels=levels).to_csv(a.out, index=False)


def per_tree(a):
    """Setup against per-tree cost, fedgauss and XGBoost (one thread) on Adult: the best CPU seconds of fits of 1 and of
    `a.trees` trees (interleaved); a tree's cost is their difference over `a.trees - 1`, the setup (binning, tables,
    the first tree's one-off work) what the 1-tree fit spends beyond one tree."""
    import xgboost as xgb

    X, y = load_adult('train')
    A, yv = numeric(X), y.to_numpy()
    p = {'max_depth': a.depth, 'learning_rate': 0.3, 'base_score': 0.5}
    fits = {}
    libs = ('fedgauss', 'fedgauss-numpy', 'xgboost') if numba_enabled() else ('fedgauss', 'xgboost')
    for n in (1, a.trees):
        fits[('fedgauss', n)] = lambda n=n: G.GBDTClassifier(n_estimators=n, max_bins=a.bins, **p).fit(A, yv)
        if 'fedgauss-numpy' in libs:
            fits[('fedgauss-numpy', n)] = lambda n=n: NumpyOnly(
                G.GBDTClassifier(n_estimators=n, max_bins=a.bins, **p)
            ).fit(A, yv)
        fits[('xgboost', n)] = lambda n=n: xgb.XGBClassifier(
            n_estimators=n, max_bin=a.bins, tree_method='hist', n_jobs=1, **p
        ).fit(A, yv)
    with threadpool_limits(1):
        t = best_cpu(fits, a.repeat)
    rows = []
    for lib in libs:
        tree = (t[(lib, a.trees)] - t[(lib, 1)]) / (a.trees - 1)
        rows.append({'library': lib, 'fit_1_s': t[(lib, 1)], f'fit_{a.trees}_s': t[(lib, a.trees)]})
        rows[-1].update({'per_tree_ms': 1e3 * tree, 'setup_s': t[(lib, 1)] - tree})
    df = pd.DataFrame(rows).set_index('library')
    ratios = [(df.loc[lib] / df.loc['xgboost']).rename(f'{lib} / xgboost').to_frame().T for lib in libs[:-1]]
    print(
        f"Adult, depth {a.depth}, {a.bins} bins, one thread; CPU s, best of {a.repeat} interleaved fits; load {load_average()}"
    )
    print(kernels_line())
    print(pd.concat([df, *ratios]).round(4).to_string())
    if a.out:
        df.to_csv(a.out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--multiclass', action='store_true', help='binary and 7-class fits against XGBoost, as ratios')
    ap.add_argument('--profile', action='store_true', help='fixed and per-row costs against XGBoost, calls into C')
    ap.add_argument('--level-calls', action='store_true', help="one tree's calls into C per level, by call site")
    ap.add_argument('--per-tree', action='store_true', help='setup and per-tree CPU against XGBoost (1 and --trees)')
    ap.add_argument('--ab', default=None, help='git revision (or gbdt.py file) of the core to compare with')
    ap.add_argument('--rows', type=int, default=100_000, help='rows of the synthetic 7-class set (--multiclass)')
    ap.add_argument('--out', default=None, help='CSV file for the --multiclass, --ab, --profile or --level-calls table')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--trees', type=int, default=100)
    ap.add_argument('--depth', type=int, default=6)
    ap.add_argument('--bins', type=int, default=256)
    a = ap.parse_args()
    if a.multiclass:
        return multiclass(a)
    if a.profile:
        return profile(a)
    if a.level_calls:
        return level_calls(a)
    if a.per_tree:
        return per_tree(a)
    if a.ab:
        return ab(a)
    X, y = load_adult('train')
    Xt, yt = load_adult('test')
    A, At = numeric(X), numeric(Xt)
    make = models(a.trees, a.depth, a.bins)
    wall, cpu, auc = defaultdict(list), defaultdict(list), {}
    with threadpool_limits(1):
        for r in range(a.repeat):  # interleave the libraries so load changes hit all of them
            for name, mk in make.items():
                m = mk()
                t0, c0 = time.perf_counter(), time.process_time()
                m.fit(A, y)
                wall[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
                auc[name] = roc_auc_score(yt, m.predict_proba(At)[:, 1])
        rows = []
        for name in make:
            rows.append({'library': name, 'wall_s': min(wall[name]), 'cpu_s': min(cpu[name]), 'auc': auc[name]})
        df = pd.DataFrame(rows).set_index('library')
        df['wall / xgboost'] = df['wall_s'] / df.loc['xgboost', 'wall_s']
        df['cpu / xgboost'] = df['cpu_s'] / df.loc['xgboost', 'cpu_s']
        df['auc - xgboost'] = df['auc'] - df.loc['xgboost', 'auc']
        print(
            f"Adult: {a.trees} trees, depth {a.depth}, {a.bins} bins, learning rate 0.3, one thread; best of {a.repeat} fits"
        )
        print(kernels_line())
        print(df.round(4).to_string())
        T = profile_fedgauss(A, y, a.trees, a.depth, a.bins)
        print('\nfedgauss fit, CPU seconds by phase:')
        tot = T.pop('total')
        for k, v in sorted(T.items(), key=lambda kv: -kv[1]):
            print(f"  {k:40s} {v:6.3f}  {v / tot:5.1%}")
        print(f"  {'total':40s} {tot:6.3f}")


if __name__ == '__main__':
    main()
