"""The GBDT core's compiled kernels (nb30, the `fast` extra's numba) against its NumPy code: the estimators' trees are
the same bits with and without numba on binary, regression, multi-class, weighted, imputed and probabilistic fits with
missing values; the kernels' Python source (numba's `py_func`) computes what NumPy computes on small inputs, so their
logic is checked even where numba is not installed; `FEDGAUSS_NUMBA=0` turns them off."""

import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

import fedgauss.gbdt as G
from fedgauss.data import make_seven_classes
from fedgauss.fast import HAVE_NUMBA, numba_enabled, use_numba

needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason='numba is not installed (the fast extra)')
TREE_FIELDS = ('feature', 'bin', 'default_left', 'left', 'right', 'threshold', 'value', 'gain', 'sum_grad', 'sum_hess')


def assert_same_forest(a, b):
    assert len(a.trees_) == len(b.trees_)
    for k, (s, t) in enumerate(zip(a.trees_, b.trees_)):
        for f in TREE_FIELDS:
            assert getattr(s, f).tobytes() == getattr(t, f).tobytes(), f"tree {k}: {f}"
    assert np.asarray(a.train_margin_).tobytes() == np.asarray(b.train_margin_).tobytes()


def fit_both(make, X, y, **fit_kw):
    with use_numba(True):
        on = make().fit(X, y, **fit_kw)
    with use_numba(False):
        off = make().fit(X, y, **fit_kw)
    return on, off


def with_missing(X, frac, seed):
    X = np.array(X, float)
    X[np.random.default_rng(seed).random(X.shape) < frac] = np.nan
    return X


@needs_numba
@pytest.mark.parametrize(
    'params',
    [
        {},
        {'reg_lambda': 0.0, 'min_child_weight': 0.0},
        {'reg_lambda': 3.0, 'min_child_weight': 5.0, 'gamma': 0.5},
        {'max_depth': 9, 'max_bins': 32},
        {'missing': 'impute'},
        {'missing': 'probabilistic'},
    ],
)
def test_binary_trees_are_the_same_bits(params):
    X, y = load_breast_cancer(return_X_y=True)
    X = with_missing(X, 0.1, 1)
    on, off = fit_both(lambda: G.GBDTClassifier(n_estimators=15, **params), X, y)
    assert_same_forest(on, off)
    np.testing.assert_array_equal(on.predict_proba(X), off.predict_proba(X))


@needs_numba
def test_weighted_regression_trees_are_the_same_bits():
    X, y = load_diabetes(return_X_y=True)
    X = with_missing(X, 0.05, 2)
    w = np.random.default_rng(3).uniform(0.2, 3.0, len(y))
    on, off = fit_both(lambda: G.GBDTRegressor(n_estimators=12, max_depth=5), X, y, sample_weight=w)
    assert_same_forest(on, off)


@needs_numba
def test_multiclass_trees_are_the_same_bits():
    X, y = make_seven_classes(3000, 4, nan_frac=0.05)
    on, off = fit_both(lambda: G.GBDTClassifier(n_estimators=4, max_depth=5), X, y)
    assert_same_forest(on, off)


def kernel(f):
    "A kernel's Python source (numba's `py_func`), or the function itself without numba."
    return getattr(f, 'py_func', f)


def small_provider(seed, exact):
    rng = np.random.default_rng(seed)
    X = with_missing(rng.normal(size=(300, 4)).round(1), 0.1, seed)
    b = G.Binner(max_bins=6).fit(X)
    gh = np.column_stack([rng.normal(size=300), rng.uniform(0.1, 1, 300)])
    if exact:
        gh = np.ldexp(np.rint(np.ldexp(gh, 12)), -12)
    pv = G.LocalHistograms(b.transform(X), b.layout_, exact_sums=exact)
    pv.start_tree(gh)
    return pv, b.layout_


@pytest.mark.parametrize('exact', [True, False])
def test_python_source_of_the_row_kernels_is_the_numpy_code(exact, monkeypatch):
    "A tree's levels: histograms and routing by the kernels' Python source, against the NumPy code."
    results = []
    for source in (True, False):
        pv, layout = small_provider(5, exact)
        if source:  # the uncompiled kernels, made to run in place of the compiled ones
            monkeypatch.setattr(G, '_scatter_rows', kernel(G._scatter_rows))
            monkeypatch.setattr(G, '_route_rows', kernel(G._route_rows))
            monkeypatch.setattr(G, 'numba_enabled', lambda: True)
        hists = [pv.histograms([0])]
        pv.split([0], [1], [2], [True], [1], [2])
        hists.append(pv.histograms([1, 2]))
        pv.split([1, 2], [0, 3], [1, 3], [False, True], [3, 5], [4, 6])
        hists.append(pv.histograms([3, 6]))
        results.append((hists, pv.node.copy()))
        monkeypatch.undo()
    (h_src, n_src), (h_np, n_np) = results
    assert [h.tobytes() for h in h_src] == [h.tobytes() for h in h_np]
    np.testing.assert_array_equal(n_src, n_np)


def test_python_source_of_the_split_scan_is_find_best_splits(monkeypatch):
    "The scan's Python source on exact histograms with missing values, ties and lambda = 0."
    pv, layout = small_provider(7, True)
    pv.split([0], [2], [1], [False], [1], [2])
    h = np.concatenate([pv.histograms([1]), pv.histograms([2])])
    h = np.concatenate([h, h[:, :, :]])  # repeated nodes: the same answer twice
    totals = h[:, layout.ptr[0] : layout.ptr[1]].sum(axis=1)
    monkeypatch.setattr(G, '_scan_nodes', kernel(G._scan_nodes))
    for lam, mcw in ((1.0, 1.0), (0.0, 0.0), (0.3, 4.0)):
        a = G._exact_splits(h, layout, totals, lam, mcw)
        b = G.find_best_splits(h, layout, totals, reg_lambda=lam, min_child_weight=mcw)
        for f in ('gain', 'feature', 'bin', 'default_left', 'left_sum', 'right_sum'):
            assert getattr(a, f).tobytes() == getattr(b, f).tobytes(), (lam, mcw, f)


def test_the_environment_turns_the_kernels_off():
    code = 'from fedgauss.fast import numba_enabled; print(numba_enabled())'
    env = dict(os.environ, FEDGAUSS_NUMBA='0')
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == 'False'
    with use_numba(False):
        assert not numba_enabled()
    assert numba_enabled() == (HAVE_NUMBA and os.environ.get('FEDGAUSS_NUMBA', '1') != '0')


SKI = """
import sys, numpy as np
from sklearn.datasets import load_breast_cancer
import fedgauss.gbdt as G, fedgauss.fast as F
from fedgauss.fast import use_numba
X, y = load_breast_cancer(return_X_y=True)
F.KERNEL_RENTS['gbdt'] = 3 * X.size * 4 + 1  # three fits of 4 trees stay in NumPy, the fourth loads the kernels
loaded = lambda: [k.loaded for k in G._KERNELS]
fits = []
for i in range(5):
    fits.append(G.GBDTClassifier(n_estimators=4, max_depth=3).fit(X, y))
    print(i, 'numba' in sys.modules, loaded())
with use_numba(False):
    ref = G.GBDTClassifier(n_estimators=4, max_depth=3).fit(X, y)
same = all(a.value.tobytes() == b.value.tobytes() for f in fits for a, b in zip(f.trees_, ref.trees_))
print('same', same)
"""


@needs_numba
def test_a_process_loads_the_kernels_once_its_numpy_fits_would_have_paid_for_them():
    """`kernels_for` (ski rental): in a fresh process with `FEDGAUSS_NUMBA` unset, small fits run NumPy without
    importing numba until their work reaches `KERNEL_RENTS['gbdt']`; the next fit loads the kernels, later ones use them;
    every fit gives the NumPy code's trees. `FEDGAUSS_NUMBA=1` loads them at the first fit."""
    env = {k: v for k, v in os.environ.items() if k != 'FEDGAUSS_NUMBA'}
    out = subprocess.run([sys.executable, '-c', SKI], env=env, capture_output=True, text=True, check=True).stdout
    lines = out.strip().splitlines()
    assert lines[:3] == [f'{i} False [False, False, False]' for i in range(3)]
    assert lines[3] == '3 True [True, True, True]'
    assert lines[4] == '4 True [True, True, True]'
    assert lines[5] == 'same True'
    forced = subprocess.run(
        [sys.executable, '-c', SKI], env=dict(env, FEDGAUSS_NUMBA='1'), capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert forced[0] == '0 True [True, True, True]' and forced[5] == 'same True'


FEDERATED = """
import hashlib, sys, warnings
from sklearn.datasets import load_breast_cancer
import fedgauss.gbdt as G
from fedgauss.federation import iid_split, vertical_split
from fedgauss.nflgbdt import NFLGBDTClassifier
from fedgauss.secureboost import SecureBoostClassifier
warnings.simplefilter('ignore')
X, y = load_breast_cancer(return_X_y=True)
X = X[:, :6]
fits = dict(
    nflgbdt=lambda: NFLGBDTClassifier(n_estimators=3, max_depth=3, rng=0).fit(iid_split(X, y, 3, rng=0)),
    secureboost=lambda: SecureBoostClassifier(n_estimators=3, max_depth=3, key_size=512, unsafe=True, rng=0).fit(
        vertical_split(X, 2, y)
    ),
)
for name, fit in fits.items():
    m = fit()
    Xp = [X] if name == 'nflgbdt' else [X[:, :3], X[:, 3:]]
    digest = hashlib.sha256(m.predict_proba(Xp[0] if name == 'nflgbdt' else Xp).tobytes()).hexdigest()[:16]
    print(name, 'numba' in sys.modules, any(k.loaded for k in G._KERNELS), digest)
"""


@needs_numba
def test_federated_boosting_fits_load_the_kernels_only_when_they_pay():
    """`fit_kernels` around the federated fits (nFL-GBDT, SecureBoost; DP-GBDT too): in a fresh process, small fits run
    the core's NumPy code and never import numba; with `FEDGAUSS_NUMBA=1` they load the kernels; the models are the
    same bits either way."""
    env = {k: v for k, v in os.environ.items() if k != 'FEDGAUSS_NUMBA'}
    run = lambda e: subprocess.run([sys.executable, '-c', FEDERATED], env=e, capture_output=True, text=True, check=True)
    lazy, forced = (run(e).stdout.split('\n')[:2] for e in (env, dict(env, FEDGAUSS_NUMBA='1')))
    assert [r.split()[:3] for r in lazy] == [['nflgbdt', 'False', 'False'], ['secureboost', 'False', 'False']]
    assert [r.split()[:3] for r in forced] == [['nflgbdt', 'True', 'True'], ['secureboost', 'True', 'True']]
    assert [r.split()[3] for r in lazy] == [r.split()[3] for r in forced]
