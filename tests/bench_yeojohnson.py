"""Benchmark and accuracy report for ExpYJ (fedgauss.yeojohnson) against scikit-learn and SciPy.

    python tests/bench_yeojohnson.py                 # 100,000 x 50 skewed features: time ratio + lambda accuracy vs mpmath
    python tests/bench_yeojohnson.py --accuracy      # also: breast cancer + adversarial inputs, counts of peer failures
    python tests/bench_yeojohnson.py --n 20000 --d 20 --repeat 5 --ref-features 50
    python tests/bench_yeojohnson.py --digest --no-bench  # SHA-256 of ExpYJ's lambda, mean, var (bench data, breast cancer)
    python tests/bench_yeojohnson.py --profile --no-bench # where one fit's time goes: steps x passes x cost per pass
    python tests/bench_yeojohnson.py --first-fit --no-bench  # fresh processes' first fits: compile, cache, default, rent
    python tests/bench_yeojohnson.py --first-fit --no-bench --csv nbs/10_yeojohnson_first_fit.csv  # nb10's table
    python tests/bench_yeojohnson.py --ab /work/main --no-bench --repeat 7  # A/B: another checkout's ExpYJ, alternating
    python tests/bench_yeojohnson.py --ab DIR --no-bench --repeat 7 --csv nbs/10_yeojohnson_speed.csv  # nb10's table

Timings are wall-clock and CPU on whatever machine runs this (shared machines are noisy): the two fits run in one process,
alternately, and the ratio of the medians is reported (issue 32: ExpYJ at most 0.15x scikit-learn's time). `--digest` is
the guard of a change made for speed: ExpYJ's lambdas, means and variances must keep their bits. Accuracy is relative error to the maximum-likelihood lambda
computed with mpmath (fedgauss.testing), on `--ref-features` of the benchmark's features (about 40 s each at
100,000 rows) and on every breast-cancer feature and adversarial input with --accuracy.
"""

import argparse, hashlib, os, sys, time, warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fedgauss.testing import adversarial_inputs, mp_yj_mle  # noqa: E402

from scipy import stats  # noqa: E402
from sklearn.preprocessing import PowerTransformer  # noqa: E402
from fedgauss.yeojohnson import TILE_VALUES, YJData, YeoJohnsonTransformer, exp_yj, exp_yj_search  # noqa: E402
from fedgauss.yeojohnson import K1, LAMBDA_RTOL, _running_total, _tiles  # noqa: E402  (--blas only)
from fedgauss.data import SKEWED_FAMILIES, make_skewed_features  # noqa: E402
from fedgauss.fast import KERNEL_RENTS  # noqa: E402

FAMILIES = SKEWED_FAMILIES


def skewed_features(n=100_000, d=50, seed=0):
    "n x d skewed features (fedgauss.data.make_skewed_features: ten families, random scales 1e-2 .. 1e4)."
    return make_skewed_features(n, d, rng=seed)


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def cpu_timed(f):
    "(wall s, CPU s, result)."
    t, c = time.perf_counter(), time.process_time()
    out = f()
    return time.perf_counter() - t, time.process_time() - c, out


def digest(args):
    "SHA-256 of ExpYJ's (lambdas, mean, var) on the benchmark data and on breast cancer: equal digests, equal bits."
    from fedgauss.data import load_breast_cancer

    X = skewed_features(args.n, args.d, args.seed)
    B = load_breast_cancer()[0].to_numpy()
    for name, A in ((f'{args.n:,} x {args.d} skewed (seed {args.seed})', X), ('breast cancer', B)):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            r = exp_yj(A, full_output=True)
        h = hashlib.sha256(
            b''.join(np.ascontiguousarray(v, dtype=np.float64).tobytes() for v in (r.lambdas, r.mean, r.var))
        )
        print(f"SHA-256 of ExpYJ's lambda, mean, var on {name}: {h.hexdigest()[:32]}")


class _Timed(YJData):
    "A YJData that records every pass over its rows: (step, groups, D_lo frame, with moments, seconds)."

    def __init__(self, X):
        self.log, self.step = [], 0
        super().__init__(X)

    def _group_sums(self, *a, **k):  # once per step (`sums` or `certified_sums`)
        self.step += 1
        return super()._group_sums(*a, **k)

    def _fresh(self, rows, lo_frame, ls, moments, values=TILE_VALUES):
        t = time.perf_counter()
        out = super()._fresh(rows, lo_frame, ls, moments, values)
        self.log.append((self.step, len(rows), bool(lo_frame), bool(moments), time.perf_counter() - t))
        return out


def best(f, repeat=5):
    "Best wall time of `repeat` calls of f (s)."
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return min(ts)


def profile(args):
    "One fit taken apart: steps, passes over the data per step, the cost of a pass, and the floor (np.exp alone)."
    X = skewed_features(args.n, args.d, args.seed)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        YeoJohnsonTransformer().fit(X)  # warm up
        t0 = time.perf_counter()
        A = YeoJohnsonTransformer()._validate(X, reset=True, finite=False)[0]  # as `fit` (infinity: from the anchors)
        t1 = time.perf_counter()
        data = _Timed(A)
        t2 = time.perf_counter()
        res = exp_yj_search([data])
        t3 = time.perf_counter()
    G, n, steps, log = len(data.g_col), data.n_rows, len(res.signs), list(data.log)
    fresh = sum(r for _, r, _, m, _ in log if not m)
    built = sum(r for _, r, _, m, _ in log if m)
    t_fresh = sum(s for *_, m, s in log if not m)
    t_built = sum(s for *_, m, s in log if m)
    rows = np.arange(G)
    one_pass = best(lambda: data._fresh(rows, False, np.full(G, 0.7), False))
    one_build = best(lambda: data._fresh(rows, False, np.full(G, 0.7), True), 3)
    D, out = np.ascontiguousarray(data.D_hi), np.empty(data.D_hi.shape)
    floor = best(lambda: np.exp(D, out=out))
    print(f"profile of one fit: {n:,} x {args.d} ({G} sign groups: {G * n:,} values), {steps} search steps")
    print(
        f"  input checks {1e3 * (t1 - t0):7.1f} ms;  YJData (anchors, log-distances) {1e3 * (t2 - t1):7.1f} ms;  search {1e3 * (t3 - t2):7.1f} ms"
    )
    print(f"  steps with a pass: {len({s for s, *_ in log})} of {steps}; group evaluations: {data.counts}")
    print(f"  fresh passes (sign only): {fresh / G:5.2f} x all groups, {1e3 * t_fresh:6.1f} ms")
    print(f"  builds (pass + moments):  {built / G:5.2f} x all groups, {1e3 * t_built:6.1f} ms")
    print(
        f"  rest of the search (series, cached expansion, D_lo, P_k, histograms and certificates, bookkeeping): {1e3 * (t3 - t2 - t_fresh - t_built):6.1f} ms"
    )
    print(
        f"  one fresh pass over all groups {1e3 * one_pass:6.1f} ms ({1e9 * one_pass / (G * n):.2f} ns a value); "
        f"one build {1e3 * one_build:6.1f} ms ({1e9 * one_build / (G * n):.2f} ns a value)"
    )
    print(
        f"  floor: one np.exp over the same {G * n:,} float64 values {1e3 * floor:6.1f} ms ({1e9 * floor / (G * n):.2f} ns a value)"
    )
    print("  per step (groups by a fresh pass / built, lo = the D_lo frame):")
    for s in sorted({s for s, *_ in log}):
        parts = [f"{'build' if m else 'fresh'}{' lo' if lo else ''} {r}" for t, r, lo, m, _ in log if t == s]
        print(f"    step {s - 1:3d}: {', '.join(parts)}")


def numba_line():
    "Whether ExpYJ's compiled kernels run in this process (nb10, `fedgauss.fast`)."
    from fedgauss.fast import HAVE_NUMBA, numba_enabled
    from fedgauss.yeojohnson import fast_kernels

    if numba_enabled() and not fast_kernels():
        return "numba kernels: off (they do not add as this NumPy does): the NumPy code"
    if numba_enabled():
        import numba

        return (
            f"numba kernels: on (numba {numba.__version__}; FEDGAUSS_NUMBA=0 turns them off); a process's first fit "
            "also imports numba and loads (or compiles) them: see --first-fit"
        )
    return f"numba kernels: off ({'FEDGAUSS_NUMBA=0' if HAVE_NUMBA else 'numba is not installed'}): the NumPy code"


def first_fit(args):
    "The first fits of fresh processes: numba's import and compilation (empty cache), then its cache, then numba off."
    import os, subprocess, tempfile

    code = (
        f"import sys, time, warnings; sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "from bench_yeojohnson import skewed_features\n"
        "from fedgauss.yeojohnson import YeoJohnsonTransformer\n"
        f"X = skewed_features({args.n}, {args.d}, {args.seed})\n"
        "warnings.simplefilter('ignore')\n"
        "for _ in range(3):\n"
        "    t = time.perf_counter(); YeoJohnsonTransformer().fit(X); print(time.perf_counter() - t)\n"
    )
    print(
        f"first fits of fresh processes, {args.n:,} x {args.d} (s: the first fit, then two more in the same process):"
    )
    with tempfile.TemporaryDirectory() as cache:
        on = {'NUMBA_CACHE_DIR': cache, 'FEDGAUSS_NUMBA': '1'}
        runs = [('numba, empty cache (compiles)', on), ('numba, cache written (loads it)', on)]
        runs += [('numba, cache written (loads it)', on), ('numba off (FEDGAUSS_NUMBA=0)', {'FEDGAUSS_NUMBA': '0'})]
        runs += [('default (NumPy until its work pays)', {'NUMBA_CACHE_DIR': cache, 'FEDGAUSS_NUMBA': None})]
        rows = []
        for what, env in runs:
            env = {k: v for k, v in dict(os.environ, **env).items() if v is not None}
            out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True)
            t = [float(v) for v in out.stdout.split()]
            rows.append([what, f'{t[0]:.3f}', f'{min(t[1:]):.3f}', f'{t[0] - min(t[1:]):.3f}'])
            print(f"  {what:36s} first {t[0]:6.3f}, then {t[1]:6.3f}, {t[2]:6.3f};", end=' ')
            print(f"first - best later {t[0] - min(t[1:]):6.3f}")
    load = np.mean([float(r[3]) for r in rows[1:3]]) - float(rows[3][3])  # loading the kernels, a process
    saved = (float(rows[3][2]) - np.mean([float(r[2]) for r in rows[1:3]])) / (args.n * args.d)  # a fit, per cell
    print(f"  loading costs {load:.3f} s; a fit saves {saved * 1e9:.2f} s per 10^9 cells: they pay after ", end='')
    print(f"{load / saved:.3g} cells of NumPy fits (KERNEL_RENTS['expyj'] = {KERNEL_RENTS['expyj']:.3g})")
    if args.csv and not args.ab:  # the first-fit table of nb10's speed section
        import csv

        with open(args.csv, 'w', newline='') as f:
            csv.writer(f).writerows([['process', 'first fit s', 'best later fit s', 'first - best later s'], *rows])
        print(f"  written to {args.csv}")


def ab(args):
    "A/B in one process: the ExpYJ of another checkout (`--ab DIR`) and this one, alternating with scikit-learn."
    import importlib.util, os

    spec = importlib.util.spec_from_file_location(
        'fedgauss.yeojohnson_ab', os.path.join(args.ab, 'fedgauss', 'yeojohnson.py')
    )
    other = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = other
    spec.loader.exec_module(other)
    X = skewed_features(args.n, args.d, args.seed)
    fits = {
        'A (' + args.ab + ')': lambda: other.YeoJohnsonTransformer().fit(X),
        'B (this checkout)': lambda: YeoJohnsonTransformer().fit(X),
        'scikit-learn': lambda: PowerTransformer(method='yeo-johnson').fit(X),
    }
    wall, cpu, est = {k: [] for k in fits}, {k: [] for k in fits}, {}
    for r in range(args.repeat):
        for k in list(fits) if r % 2 == 0 else list(fits)[::-1]:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                dt, dc, est[k] = cpu_timed(fits[k])
            wall[k].append(dt)
            cpu[k].append(dc)
    (a, b, sk) = fits
    print(f"A/B, {args.n:,} x {args.d}, {args.repeat} rounds alternating (best / median of wall s, median of CPU s):")
    print(f"  B: {numba_line()}")
    for k in fits:
        print(f"  {k:40s} {min(wall[k]):7.3f} {np.median(wall[k]):7.3f}   CPU {np.median(cpu[k]):7.3f}")
    for k in (a, b):
        print(
            f"  {k:40s} / scikit-learn: best {min(wall[k]) / min(wall[sk]):.3f}x, median {np.median(wall[k]) / np.median(wall[sk]):.3f}x"
            f" (wall), {np.median(cpu[k]) / np.median(cpu[sk]):.3f}x (CPU)"
        )
    print(
        f"  B / A: best {min(wall[b]) / min(wall[a]):.3f}, median {np.median(wall[b]) / np.median(wall[a]):.3f} (wall)"
    )
    same = all(np.array_equal(getattr(est[a], f), getattr(est[b], f)) for f in ('lambdas_', 'mean_', 'scale_'))
    print(f"  lambdas, means and scales identical bit for bit: {same}")
    if args.csv:  # the table nb10's speed section shows
        import csv
        import subprocess

        ref = subprocess.run(
            ['git', '-C', args.ab, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True, check=False
        )
        names = {a: f'ExpYJ before ({ref.stdout.strip() or args.ab})', b: 'ExpYJ (this checkout)', sk: 'scikit-learn'}
        with open(args.csv, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['fit', 'best wall s', 'median wall s', 'median CPU s', 'CPU / scikit-learn', 'load'])
            for k in fits:
                c = np.median(cpu[k])
                w.writerow(
                    [
                        names[k],
                        f'{min(wall[k]):.3f}',
                        f'{np.median(wall[k]):.3f}',
                        f'{c:.3f}',
                        f'{c / np.median(cpu[sk]):.3f}',
                        f'{os.getloadavg()[0]:.2f}',
                    ]
                )
        print(f"  written to {args.csv}")


def bench(args):
    X = skewed_features(args.n, args.d, args.seed)
    print(f"data: {args.n:,} x {args.d} skewed features ({', '.join(FAMILIES)}), seed {args.seed}")
    print(numba_line())
    ours, theirs, cpu = [], [], {'ours': [], 'sk': []}
    for r in range(args.repeat):
        pair = [
            ('ours', lambda: YeoJohnsonTransformer().fit(X)),
            ('sk', lambda: PowerTransformer(method='yeo-johnson').fit(X)),
        ]
        if r % 2:
            pair.reverse()
        for name, f in pair:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                dt, dc, est = cpu_timed(f)
            (ours if name == 'ours' else theirs).append(dt)
            cpu[name].append(dc)
            if name == 'ours':
                yt = est
            else:
                pt = est
    dt_o, Z = timed(lambda: yt.transform(X))
    dt_s, _ = timed(lambda: pt.transform(X))
    to, ts = np.median(ours), np.median(theirs)
    print(f"\n{'':28s}{'ExpYJ (fedgauss)':>18s}{'scikit-learn':>16s}{'ratio':>9s}")
    print(f"{'fit, median of ' + str(args.repeat) + ' (s)':28s}{to:18.3f}{ts:16.3f}{ts / to:8.1f}x")
    print(
        f"{'fit, all runs (s)':28s}ExpYJ {' '.join(f'{v:.2f}' for v in ours)};  scikit-learn {' '.join(f'{v:.2f}' for v in theirs)}"
    )
    print(f"{'transform (s)':28s}{dt_o:18.3f}{dt_s:16.3f}{dt_s / dt_o:8.1f}x")
    co, cs = np.median(cpu['ours']), np.median(cpu['sk'])
    print(
        f"fit time ExpYJ / scikit-learn: {to / ts:.3f}x (wall), {co / cs:.3f}x (CPU: {co:.3f} s / {cs:.3f} s)   "
        f"[goal, issue 32: <= 0.15x]"
    )
    lo, ls = yt.lambdas_, pt.lambdas_
    d = np.abs(lo - ls) / np.abs(lo)
    print(
        f"\n|lambda_ours - lambda_sklearn|/|lambda_ours| over {args.d} features: median {np.median(d):.1e}, max {d.max():.1e}"
        f" (feature {int(d.argmax())}, {FAMILIES[int(d.argmax()) % 10]})"
    )
    # every feature where the two disagree by more than 1e-6 gets an mpmath reference: which one is wrong?
    cand = np.flatnonzero(d > 1e-6)
    if len(cand) and not args.no_screen:
        t0 = time.perf_counter()
        refs = {int(j): mp_yj_mle(X[:, j], lo[j], dps=40) for j in cand}
        bad_sk = [j for j, r in refs.items() if abs(ls[j] - r) / abs(r) > 1e-6 and abs(lo[j] - r) / abs(r) <= 1e-6]
        bad_o = [j for j, r in refs.items() if abs(lo[j] - r) / abs(r) > 1e-6]
        print(
            f"\n{len(cand)} of {args.d} features disagree by > 1e-6 (relative); mpmath on each ({time.perf_counter() - t0:.0f} s):"
        )
        for j, r in refs.items():
            print(
                f"  feature {j:3d} {FAMILIES[j % 10]:32s} lambda* {r:.12g}: rel. error ExpYJ {abs(lo[j] - r) / abs(r):.1e}, scikit-learn {abs(ls[j] - r) / abs(r):.1e}"
            )
        print(
            f"features where scikit-learn is off by > 1e-6 and ExpYJ is not: {len(bad_sk)} of {args.d}; ExpYJ off by > 1e-6: {len(bad_o)}"
            f" (on the other {args.d - len(cand)} the two agree to 1e-6)"
        )
    m = min(args.ref_features, args.d)
    if m:
        # one feature per family first, then the rest; always include the largest disagreement
        order = list(dict.fromkeys([int(d.argmax())] + list(range(args.d))))[:m]
        rows = []
        t0 = time.perf_counter()
        for j in order:
            ref = mp_yj_mle(X[:, j], lo[j], dps=40)
            rows.append((j, ref, abs(lo[j] - ref) / abs(ref), abs(ls[j] - ref) / abs(ref)))
        print(f"\nlambda accuracy vs mpmath on {m} features ({time.perf_counter() - t0:.0f} s of mpmath):")
        print(f"{'feature':>8s} {'family':32s}{'lambda* (mpmath)':>20s}{'rel.err ExpYJ':>15s}{'rel.err sklearn':>17s}")
        for j, ref, eo, es in rows:
            print(f"{j:8d} {FAMILIES[j % 10]:32s}{ref:20.12g}{eo:15.1e}{es:17.1e}")
        eo = np.array([r[2] for r in rows])
        es = np.array([r[3] for r in rows])
        print(f"{'':41s}{'max':>20s}{eo.max():15.1e}{es.max():17.1e}")
        print(f"{'':41s}{'median':>20s}{np.median(eo):15.1e}{np.median(es):17.1e}")
        print(
            f"features with rel. error > 1e-6: ExpYJ {int((eo > 1e-6).sum())}, scikit-learn {int((es > 1e-6).sum())} (of {m})"
        )


def accuracy():
    from fedgauss.data import load_breast_cancer

    X, _ = load_breast_cancer()
    A = X.to_numpy()
    print("\nbreast cancer (569 x 30) and adversarial inputs: relative error to the mpmath maximum-likelihood lambda")
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        ours = exp_yj(A)
        sk = PowerTransformer().fit(A).lambdas_
        sp = np.array([stats.yeojohnson_normmax(A[:, j]) for j in range(30)])
        spb = np.array([stats.yeojohnson_normmax(A[:, j], brack=(-2, 2)) for j in range(30)])
    rows = [(c, mp_yj_mle(A[:, j], sk[j]), ours[j], sk[j], sp[j], spb[j]) for j, c in enumerate(X.columns)]
    for name, x in adversarial_inputs().items():
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')
            o = exp_yj(x)
            s = PowerTransformer().fit(x[:, None]).lambdas_[0]
            p = stats.yeojohnson_normmax(x)
            pb = stats.yeojohnson_normmax(x, brack=(-2, 2))
        rows.append((name, mp_yj_mle(x, o), o, s, p, pb))
    print(f"{'input':40s}{'lambda*':>16s}{'ExpYJ':>10s}{'sklearn':>10s}{'SciPy':>10s}{'SciPy brent':>12s}")
    err = lambda v, r: abs(v - r) / abs(r)
    E = []
    for i, (name, ref, o, s, p, pb) in enumerate(rows):
        e = [err(o, ref), err(s, ref), err(p, ref), err(pb, ref)]
        E.append(e)
        if i == 30:
            print('-' * 98)
        print(f"{name[:39]:40s}{ref:16.9g}" + ''.join(f"{v:10.1e}" for v in e[:3]) + f"{e[3]:12.1e}")
    E = np.array(E)
    for lab, sl in (
        ('breast cancer (30 features)', slice(0, 30)),
        (f'adversarial ({len(rows) - 30} inputs)', slice(30, None)),
    ):
        e = E[sl]
        print(
            f"\n{lab}: max rel. error ExpYJ {e[:, 0].max():.1e}, scikit-learn {e[:, 1].max():.1e}, SciPy {e[:, 2].max():.1e}, "
            f"SciPy brent {e[:, 3].max():.1e}"
        )
        for k, peer in (
            (1, 'scikit-learn'),
            (2, 'SciPy yeojohnson_normmax'),
            (3, 'SciPy yeojohnson_normmax(brack=(-2, 2))'),
        ):
            print(f"  off by > 1e-6 where ExpYJ is not: {peer}: {int(((e[:, k] > 1e-6) & (e[:, 0] <= 1e-6)).sum())}")
        print(f"  ExpYJ off by > 1e-6: {int((e[:, 0] > 1e-6).sum())}")


# ------------------------------------------------------------------ --blas: the sums as matrix products (issue 32)
class _ProductData(YJData):
    """A YJData whose passes take their sums as matrix products (BLAS) instead of one NumPy reduction per sum: `where`
    'passes' (the sign-only passes), 'builds' (the build passes: the four sums and the 2 (K1 + 2) expansion moments)
    or 'both'. The experiment behind nb10's note on BLAS; not the library's arithmetic (the last bits differ)."""

    ROWS = 2048  # rows per block at most
    SPLIT = (6, 4)  # moments: d^(P j + i) = d^(P j) d^i, i < P, j < Q (P Q >= K1 + 2)

    def __init__(self, X, where='both'):
        self.where = where
        super().__init__(X)

    @staticmethod
    def _sums(part, W, E):
        "W: k x 3 x m, rows (1, e, t) with z in row 2 on entry; E: work. One product per group: sums e, e^2, t, e t."
        z, e = W[:, 2], W[:, 1]
        np.exp(z, out=E)
        np.subtract(E, 1, out=e)
        z *= E
        z -= e  # t = z E - e, as `_add_sums`
        G = np.matmul(W[:, :2], W[:, 1:].transpose(0, 2, 1)).reshape(-1, 4)  # (sum e, sum t, sum e^2, sum e t)
        part[...] = G.T[[0, 2, 1, 3]]

    def _moments(self, part, E, d, R, L):
        "A_k = sum E d^k, C_k = sum E^2 d^k (k <= K1 + 1) by one product per group: (E d^(Pj), E^2 d^(Pj)) x d^i."
        P, Q = self.SPLIT
        R[:, 0], R[:, 1] = 1.0, d
        for i in range(2, P):
            np.multiply(R[:, i - 1], d, out=R[:, i])
        L[:, 0] = E
        np.multiply(E, E, out=L[:, Q])
        dP = np.multiply(R[:, P // 2], R[:, P - P // 2], out=L[:, Q - 1])  # d^P, in the row written last
        for j in range(1, Q):
            np.multiply(L[:, Q + j - 1], dP, out=L[:, Q + j])
        for j in range(1, Q):  # (the last product overwrites d^P elementwise: no value is read after its write)
            np.multiply(L[:, j - 1], dP, out=L[:, j])
        M = np.matmul(L, R.transpose(0, 2, 1))  # (k, 2Q, P): [w Q + j, i] = sum W_w d^(P j + i)
        part[...] = M.reshape(-1, 2, Q * P)[:, :, : K1 + 2].transpose(1, 2, 0)

    def _fresh(self, rows, lo_frame, ls, moments, values=TILE_VALUES):
        if self.where != 'both' and (self.where == 'builds') != bool(moments):
            return super()._fresh(rows, lo_frame, ls, moments, values)
        r, n = len(rows), self.n_rows
        if lo_frame:
            self._need_lo(rows)
        src = self.D_lo if lo_frame else self.D_hi
        ch = min(self._chunk(r), self.ROWS)  # short blocks: the products' buffers stay in cache for few groups too
        nb = -(-n // ch)
        part = np.zeros((4, nb + 1, r))
        mpart = np.zeros((2, K1 + 2, nb + 1, r)) if moments else None
        for b, s0 in enumerate(range(0, n, ch), 1):
            m = min(ch, n - s0)
            for t in _tiles(r, m, values // 4):  # (the buffers of the moments hold 15 rows a group)
                k = t.stop - t.start
                W, E, R, L = self._product_buffers(k, m)
                W[:, 0] = 1.0
                d = src[rows[t], s0 : s0 + m]
                np.multiply(d, ls[t, None], out=W[:, 2])
                self._sums(part[:, b, t], W, E)
                if moments:
                    dm = d * self._irho[rows[t], None] if self._scaled else d
                    self._moments(mpart[:, :, b, t], E, dm, R, L)
        return _running_total(part), None if mpart is None else _running_total(mpart)

    def _product_buffers(self, k, m):
        "Work buffers W (k x 3 x m), E (k x m), R (k x P x m), L (k x 2Q x m), kept between tiles."
        key = (k, m)
        if getattr(self, '_pb_key', None) != key:
            self._pb_key = key
            P, Q = self.SPLIT
            self._pb = (np.empty((k, 3, m)), np.empty((k, m)), np.empty((k, P, m)), np.empty((k, 2 * Q, m)))
        return self._pb


def blas(args):
    "The sums as matrix products: the cost of a pass and of a build, and what the fit's lambdas, path and signs do."
    X = skewed_features(args.n, args.d, args.seed)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        h, hp = YJData(X), _ProductData(X)
        G, n = len(h.g_col), h.n_rows
        rows, ls = np.arange(G), np.full(G, 0.7)
        print(
            f"sums as matrix products (OpenBLAS dgemm), {n:,} x {args.d} ({G} sign groups), one pass over all groups:"
        )
        for mom, what in ((False, 'sign-only pass'), (True, 'build (sums + moments)')):
            a, b = h._fresh(rows, False, ls, mom), hp._fresh(rows, False, ls, mom)
            T = {0: [], 1: []}
            for r in range(args.repeat):
                for i in (0, 1) if r % 2 == 0 else (1, 0):
                    T[i].append(timed(lambda: (h, hp)[i]._fresh(rows, False, ls, mom))[0])
            rel = max(np.max(np.abs(x - y) / np.abs(x)) for x, y in zip(a, b) if x is not None)
            print(
                f"  {what:24s} reductions {1e9 * min(T[0]) / (G * n):6.2f} ns a value, products {1e9 * min(T[1]) / (G * n):6.2f}"
                f" (best of {args.repeat}); largest relative difference of a sum or moment {rel:.1e}"
            )
        fits = {'reductions (library)': None, 'products in sign-only passes': 'passes', 'products in builds': 'builds'}
        fits['products in both'] = 'both'
        res, T = {}, {k: [] for k in fits}
        for r in range(args.repeat):
            for k in list(fits) if r % 2 == 0 else list(fits)[::-1]:
                mk = (lambda: YJData(X)) if fits[k] is None else (lambda: _ProductData(X, fits[k]))
                dt, res[k] = timed(lambda: exp_yj_search([mk()]))
                T[k].append(dt)
    ref = res['reductions (library)']
    print(f"ExpYJ fits (preparation + search, best of {args.repeat}), and their search against the library's:")
    for k, r in res.items():
        d = (r.signs != ref.signs).any(0) if r.signs.shape == ref.signs.shape else np.ones(args.d, bool)
        d |= r.lambdas != ref.lambdas
        dl = np.abs(r.lambdas - ref.lambdas) / np.maximum(1, np.abs(ref.lambdas))
        print(
            f"  {k:30s} {min(T[k]):6.3f} s; features whose signs or lambda differ: {int(d.sum()):3d} of {args.d}; "
            f"largest |lambda difference| / max(1, |lambda|) {dl.max():.1e} ({dl.max() / LAMBDA_RTOL:.1f} x LAMBDA_RTOL)"
        )


if __name__ == '__main__':
    os.environ.setdefault('FEDGAUSS_NUMBA', '1')  # the kernels, as a process that has loaded them runs them
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--n', type=int, default=100_000)
    ap.add_argument('--d', type=int, default=50)
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument(
        '--ref-features', type=int, default=4, help='features checked against mpmath (~40 s each at 100,000 rows)'
    )
    ap.add_argument('--accuracy', action='store_true', help='also report breast cancer and adversarial inputs')
    ap.add_argument('--no-bench', action='store_true')
    ap.add_argument(
        '--digest', action='store_true', help="SHA-256 of ExpYJ's lambda, mean, var (bench data, breast cancer)"
    )
    ap.add_argument('--ab', metavar='DIR', help="A/B against the ExpYJ of another checkout (e.g. /work/main)")
    ap.add_argument('--csv', metavar='PATH', help="with --ab: write the A/B table there (nbs/10_yeojohnson_speed.csv)")
    ap.add_argument('--profile', action='store_true', help="where one fit's time goes: steps, passes, cost per pass")
    ap.add_argument('--first-fit', action='store_true', help="fresh processes' first fits: numba's compile, its cache")
    ap.add_argument(
        '--blas', action='store_true', help='the sums as matrix products: cost, and the change of the search'
    )
    ap.add_argument(
        '--no-screen',
        action='store_true',
        help='skip the mpmath check of the features where ExpYJ and scikit-learn disagree',
    )
    args = ap.parse_args()
    if not args.no_bench:
        bench(args)
    if args.accuracy:
        accuracy()
    if args.digest:
        digest(args)
    if args.profile:
        profile(args)
    if args.blas:
        blas(args)
    if args.ab:
        ab(args)
    if args.first_fit:
        first_fit(args)
