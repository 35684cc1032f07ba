"""ExpYJ's compiled kernels (nb10, the `fast` extra's numba) against its NumPy code (issue 32): a fit gives the same
lambdas, means, variances, scales, search path and signs, bit for bit, with and without numba, on skewed, mixed-sign,
missing (NaN), constant, far-from-zero, float32, single-column and real data; the kernels' Python source (numba's
`py_func`) computes what NumPy computes on small inputs, so their logic is checked even where numba is not installed."""

import warnings

import numpy as np
import pytest

import fedgauss.yeojohnson as Y
from fedgauss.data import load_breast_cancer, make_skewed_features
from fedgauss.fast import HAVE_NUMBA, use_numba

needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason='numba is not installed (the fast extra)')
FIELDS = ('lambdas', 'mean', 'var', 'path', 'signs', 'bounded', 'converged')


def data_sets():
    rng = np.random.default_rng(7)
    X = make_skewed_features(20_000, 12, rng=3)
    nan = X.copy()
    nan[rng.random(X.shape) < 0.2] = np.nan
    const = np.c_[X[:, :3], np.full(len(X), 2.5), X[:, 3:5]]
    far = np.c_[X[:, :2] + 1e6, 5e3 - X[:, 2:4], X[:, 4:6] * 1e-9]
    return {
        'skewed': X,
        'nan': nan,
        'constant': const,
        'far from zero': far,
        'float32': X[:, :6].astype(np.float32),
        'one column (one long row)': X[:, :1],
        'mixed, 300 rows': X[:300, 6:],
        'breast cancer': load_breast_cancer()[0].to_numpy(),
    }


def fit(X, on):
    with use_numba(on), warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return Y.exp_yj(X, full_output=True), Y.YeoJohnsonTransformer().fit(X)


@needs_numba
@pytest.mark.parametrize('name', list(data_sets()))
def test_fit_is_the_same_bits_with_and_without_numba(name):
    X = data_sets()[name]
    (r1, t1), (r0, t0) = fit(X, True), fit(X, False)
    for f in FIELDS:
        assert np.asarray(getattr(r1, f)).tobytes() == np.asarray(getattr(r0, f)).tobytes(), f
    for f in ('lambdas_', 'mean_', 'scale_'):
        assert getattr(t1, f).tobytes() == getattr(t0, f).tobytes(), f


@needs_numba
def test_build_moments_and_histograms_are_the_same_bits():
    X = data_sets()['nan']
    h = {}
    for on in (True, False):
        with use_numba(on):
            d = Y.YJData(X)
            G = np.arange(len(d.g_col))
            S = [d.sums(lam, bracket=(lam - 1e-3, lam + 1e-3)) for lam in (-1.5, 0.3, 1.2)]  # builds, both frames
            d._need_hist(G)
            h[on] = [d._cache_mom, d._cache_base, d._H, d._Hm, d._Hc, d._Hcm] + [s.s_psi for s in S]
    for a, b in zip(h[True], h[False]):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


@pytest.mark.parametrize('rows, m', [(1, 3), (2, 8), (3, 21), (2, 200), (1, 300), (4, 130)])
def test_moments_kernel_source_adds_as_numpy(rows, m):
    rng = np.random.default_rng(m)
    EE, d = np.exp(rng.normal(size=(rows, m))), -rng.exponential(2, size=(rows, m))
    d[:, ::5] = 0.0
    want, got = np.zeros((2, Y.K1 + 2, rows)), np.zeros((2, Y.K1 + 2, rows))
    Y._add_moments_np(want, EE, d, np.empty_like(EE), np.empty_like(EE))
    Y._moments_kernel.py_func(EE, d, *Y._pairwise_plan(m), 8192 if rows == 1 else m, got[0], got[1])
    assert got.tobytes() == want.tobytes()


def test_pairwise_plan_is_numpys_order():
    rng = np.random.default_rng(0)
    for m in (1, 7, 8, 9, 127, 128, 129, 255, 256, 1000, 2621):
        a = rng.normal(size=m) * 10.0 ** rng.integers(-8, 8, m)
        blocks, ops = Y._pairwise_plan(m)
        sums, st = [], []
        for s, n in blocks:
            full, r = n - n % 8, np.zeros(8)
            for j in range(s, s + full, 8):
                r += a[j : j + 8]
            x = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
            for v in a[s + full : s + n]:
                x += v
            sums.append(x)
        for o in ops:
            st.append(sums[o]) if o >= 0 else st.append(st.pop(-2) + st.pop())
        assert 0.0 + st[0] == np.add.reduce(a), m


def test_histogram_kernel_source_is_numpys():
    d = -np.random.default_rng(1).exponential(1, 5000)
    d[::3] = 0.0
    out = []
    for f in (Y._group_hist_np, Y._group_hist_kernel.py_func):
        h, hd = np.zeros(Y.CERT_BINS + 1, np.intp), np.zeros(Y.CERT_BINS + 1)
        f(d, Y.CERT_BINS / -d.min(), h, hd)
        out.append((h.tobytes(), hd.tobytes()))
    assert out[0] == out[1]


@needs_numba
def test_preparation_and_power_moments_are_the_same_bits():
    X = make_skewed_features(20_000, 8, rng=5)
    nan = X.copy()
    nan[np.random.default_rng(2).random(X.shape) < 0.1] = np.nan
    for A in (X, nan, X[:, :3] * 1e-12, X[:, 6:7], np.r_[X[:500, 6:8], [[np.inf, -1.0]]]):  # scaled units; mixed
        got = {}
        for on in (True, False):
            with use_numba(on):
                h = Y.YJData(A)
                h._need_P(np.arange(len(h.g_col)))  # the power moments too
            got[on] = [h.D_hi, h.memb, h.g_n, h.g_sd_hi, h.P, h.n]
        for a, b in zip(got[True], got[False]):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


SKI = """
import sys, warnings, numpy as np
import fedgauss.yeojohnson as Y, fedgauss.fast as F
from fedgauss.data import make_skewed_features
from fedgauss.fast import use_numba
warnings.simplefilter('ignore')
X = make_skewed_features(2_000, 5, rng=1)
F.KERNEL_RENTS['expyj'] = 3 * X.size + 1  # three fits stay in NumPy, the fourth loads the kernels
fits = []
for i in range(5):
    fits.append(Y.exp_yj(X, full_output=True) if i % 2 else Y.YeoJohnsonTransformer().fit(X).lambdas_)
    print(i, 'numba' in sys.modules, Y._segment_pre.loaded)
with use_numba(False):
    ref = Y.exp_yj(X, full_output=True)
lam = [f.lambdas if hasattr(f, 'lambdas') else f for f in fits]
print('same', all(l.tobytes() == ref.lambdas.tobytes() for l in lam))
print('small holder', Y.YJData(X[:10]).kernels)  # loaded: every later holder runs them, however small
"""


@needs_numba
def test_a_process_loads_the_kernels_once_its_numpy_fits_would_have_paid_for_them():
    """Each `YJData` decides as it is made (`kernels_pay`, ski rental), so `exp_yj` and the transformer's fit alike: in a
    fresh process with `FEDGAUSS_NUMBA` unset, fits run NumPy without importing numba until their work reaches `KERNEL_RENTS['expyj']`; then the kernels load and
    stay; the lambdas are the NumPy code's. `FEDGAUSS_NUMBA=1` loads them at the first fit."""
    import os, subprocess, sys

    env = {k: v for k, v in os.environ.items() if k != 'FEDGAUSS_NUMBA'}
    run = lambda e: subprocess.run([sys.executable, '-c', SKI], env=e, capture_output=True, text=True, check=True)
    lines = run(env).stdout.strip().splitlines()
    assert lines == [f'{i} {i >= 3} {i >= 3}' for i in range(5)] + ['same True', 'small holder True']
    forced = run(dict(env, FEDGAUSS_NUMBA='1')).stdout.strip().splitlines()
    assert forced == [f'{i} True True' for i in range(5)] + ['same True', 'small holder True']
    off = run(dict(env, FEDGAUSS_NUMBA='0')).stdout.strip().splitlines()
    assert off == [f'{i} False False' for i in range(5)] + ['same True', 'small holder False']
