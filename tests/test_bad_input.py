"""The bad-input catalogue: every public entry point (library and command line) against NaN, +-inf, empty
input, one row, constant columns, extreme scales from 1e-300 to 1e300 of both signs, mixed signs, integer,
nullable and object dtypes, mismatched columns, wrong lengths and out-of-range parameters.

Each case ends in one of two ways, and the table below says which:
- a clear error: an exception of an expected type whose message matches a pattern naming the problem;
- the correct result, checked against a reference (mpmath for Yeo-Johnson, the pooled fit for the federated
  one, the unscaled data for trees, a partition check for the partitioners, exact formulas for DP).
Whatever the ending, the caller's data are untouched, no numpy RuntimeWarning leaks out, and no warning is
printed twice by one call.
"""

import copy, re, warnings

import numpy as np
import pandas as pd
import pytest

from fedgauss.testing import run_cli

from fedgauss import dp, federation as fed, smc
from fedgauss.gbdt import Binner, GBDTClassifier, GBDTRegressor
from fedgauss.mvppca import FedMVPPCA, make_multiview_synthetic, make_scenario
from fedgauss.securefedyj import FedYeoJohnsonTransformer, FixedPointPrecisionError, SecureFedYJ
from fedgauss.smc import FixedPointOverflow
from fedgauss.testing import mp_yj_mle
from fedgauss.yeojohnson import YeoJohnsonTransformer, YeoJohnsonWarning, exp_yj, yeo_johnson, yeo_johnson_inverse

ERRORS = (
    ValueError,
    TypeError,
    FixedPointOverflow,
    FixedPointPrecisionError,
    dp.PrivacyBudgetExceeded,
    fed.ChannelError,
)


# ------------------------------------------------------------------------------------------------ harness
def _snapshot(obj):
    return copy.deepcopy(obj)


def _same(a, b):
    import scipy.sparse as sparse

    if sparse.issparse(a):
        return sparse.issparse(b) and a.shape == b.shape and (a != b).nnz == 0
    if isinstance(a, pd.DataFrame):
        return isinstance(b, pd.DataFrame) and a.equals(b) and (a.dtypes == b.dtypes).all()
    if isinstance(a, pd.Series):
        return isinstance(b, pd.Series) and a.equals(b)
    if isinstance(a, pd.api.extensions.ExtensionArray):
        return type(a) is type(b) and pd.Series(a).equals(pd.Series(b))
    if isinstance(a, np.ndarray):
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.all((a == b) | (pd.isna(a) & pd.isna(b)) if a.dtype != object else a.tolist() == b.tolist()))
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, '__dict__') and (type(a).__eq__ is object.__eq__ or hasattr(a, '__dataclass_fields__')):  # state
        return type(a) is type(b) and _same(vars(a), vars(b))
    return a == b or (a != a and b != b)


def outcome(f, *args):
    "Run f(*args); return ('error', exception) or ('ok', result), after checking the invariants."
    before = _snapshot(args)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        try:
            res = ('ok', f(*args))
        except ERRORS as e:
            res = ('error', e)
    numpy_noise = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
    assert not numpy_noise, f'numpy warnings leaked: {numpy_noise[:3]}'
    msgs = [str(x.message) for x in w]
    assert len(msgs) == len(set(msgs)), f'a warning was printed twice: {msgs}'
    assert _same(before, args), "the caller's data were modified"
    return res


def expect(f, args, want):
    "`want` is a regex (an error whose message matches it) or a callable checking the result."
    kind, val = outcome(f, *args)
    if isinstance(want, str):
        assert kind == 'error', f'expected an error matching {want!r}, got a result: {val!r:.200}'
        assert re.search(want, str(val)), f'error {type(val).__name__}: {val} does not match {want!r}'
    else:
        assert kind == 'ok', f'expected a result, got {type(val).__name__}: {val}'
        want(val)


# ------------------------------------------------------------------------------------------------ inputs
G = np.random.default_rng(0)
BASE = G.lognormal(0, 0.7, (40, 2))  # positive, skewed: every entry point accepts it


def variants():
    "name -> DataFrame (columns a, b): the catalogue of tabular inputs."
    B = pd.DataFrame(BASE, columns=['a', 'b'])
    v = {'base': B}
    v['nan'] = B.mask(np.eye(40, 2, dtype=bool))
    v['all-nan column'] = B.assign(b=np.nan)
    v['+inf'] = B.assign(a=np.r_[np.inf, B['a'][1:]])
    v['-inf'] = B.assign(b=np.r_[-np.inf, B['b'][1:]])
    v['empty'] = B.iloc[:0]
    v['one row'] = B.iloc[:1]
    v['constant column'] = B.assign(b=3.0)
    for s in (1e-300, 1e-100, 1e-20, 1e20, 1e100, 1e300):
        v[f'scale {s:.0e}'] = B * s
        v[f'scale -{s:.0e}'] = -B * s
    v['mixed signs'] = B - B.median()
    v['mixed 1e300'] = (B - B.median()) * 1e299
    v['int'] = (B * 10).round().astype(np.int64)
    v['nullable Int64 with NA'] = (B * 10).round().astype('Int64').mask(np.eye(40, 2, dtype=bool))
    v['bool'] = B > B.median()
    v['object (text)'] = B.assign(b=['x'] * 40)
    v['complex'] = B.assign(b=B['b'] + 1j)
    return v


V = variants()
SCALES = [k for k in V if k.startswith('scale') or k.startswith('mixed')]
label = (BASE[:, 0] > np.median(BASE[:, 0])).astype(int)
ERR = {  # the message expected for inputs that no entry point can use
    'all-nan column': r"'b' has no finite value|no finite value",
    '+inf': r"'a'.*inf",
    '-inf': r"'b'.*inf",
    'empty': r'no rows|0 sample|empty|has no',
    'object (text)': r"'b'.*(not numeric|non-numeric)|could not convert",
    'complex': r'[Cc]omplex',
}


# ------------------------------------------------------------------------------------------------ Yeo-Johnson
def _mle(col):
    x = col.to_numpy(dtype=np.float64, na_value=np.nan)
    x = x[~np.isnan(x)]
    return mp_yj_mle(x, exp_yj(x))


def lam_check(X):
    "The lambdas equal the mpmath MLE of each column (the reference) to 1e-9, or are 1 for a constant column."

    def check(lam):
        lam = np.atleast_1d(lam)
        for j, c in enumerate(X.columns):
            x = X[c].to_numpy(dtype=np.float64, na_value=np.nan)
            x = x[~np.isnan(x)]
            if np.ptp(x) == 0:
                assert lam[j] == 1.0
            else:
                ref = _mle(X[c])
                assert abs(lam[j] - ref) <= 1e-9 * max(1, abs(ref)), (c, lam[j], ref)

    return check


YJ_EXPECT = {
    **ERR,
    'one row': lam_check(V['one row']),
    'constant column': lam_check(V['constant column']),
    # every scale from 1e-300 to 1e300 (issue 31): the mpmath MLE, like any other input
}


@pytest.mark.parametrize('name', list(V))
def test_exp_yj(name):
    X = V[name]
    want = YJ_EXPECT.get(name) or lam_check(X)
    if name in ('scale 1e+300', 'scale -1e+300', 'mixed 1e300', 'bool'):  # bounded or two-valued: checked below
        want = lambda lam: np.isfinite(lam).all()
    expect(exp_yj, (X,), want)


def test_exp_yj_bounded_at_extreme_scales_is_said():
    X = V['mixed 1e300']  # both signs beyond ymax: no lambda keeps |Psi| <= ymax
    with pytest.warns(YeoJohnsonWarning, match='bounded|beyond ymax'):
        res = exp_yj(X, full_output=True)
    assert res.bounded.all() and np.isfinite(res.mean).all()
    with pytest.warns(YeoJohnsonWarning, match='bounded'):
        f = SecureFedYJ(rng=0).fit(_two_clients(X))
    assert f.bounded_.all() and np.isfinite(f.mean_).all()  # bounded too, by the public envelope's (coarser) bounds


@pytest.mark.parametrize('name', list(V))
def test_yeo_johnson_transformer(name):
    X = V[name]
    want = YJ_EXPECT.get(name)
    if want is None or callable(want):

        def want(Z, X=X):
            Z = np.asarray(Z, float)
            finite = ~np.isnan(_floats(X))
            assert np.isfinite(Z[finite]).all() and np.isnan(Z[~finite]).all()

    expect(lambda X: YeoJohnsonTransformer().fit_transform(X), (X,), want)


def _floats(X):
    return X.to_numpy(dtype=np.float64, na_value=np.nan)


def _two_clients(X):
    return [X.iloc[: len(X) // 2], X.iloc[len(X) // 2 :]]


FED_EXPECT = {
    **ERR,
    'empty': 'has no rows',
    'one row': 'has no rows',
    # tiny scales (issue 31): measured in a public unit, the pooled lambda (checked by _pooled_equal)
    'mixed 1e300': lambda lam: np.isfinite(
        lam
    ).all(),  # bounded: checked in test_exp_yj_bounded_at_extreme_scales_is_said
}


def _pooled_equal(X):
    "The federated lambdas equal pooled ExpYJ's (itself checked against mpmath above) to the float resolution of lambda."

    def check(lam):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', YeoJohnsonWarning)
            ref = exp_yj(X)
        np.testing.assert_allclose(lam, ref, rtol=1e-11, atol=1e-11)

    return check


@pytest.mark.parametrize('name', list(V))
def test_secure_fed_yj(name):
    X = V[name]
    want = FED_EXPECT.get(name) or _pooled_equal(X)
    expect(lambda cl: SecureFedYJ(rng=0).fit(cl).lambdas_, (_two_clients(X),), want)


@pytest.mark.parametrize('name', ['base', 'nan', 'int', 'nullable Int64 with NA', 'complex', 'object (text)', 'empty'])
def test_fed_yeo_johnson_transformer(name):
    X = V[name]
    first = _floats(_two_clients(X)[0]) if name not in ('complex', 'object (text)') else None
    want = FED_EXPECT.get(name) or (lambda Z: np.isfinite(np.asarray(Z, float)[~np.isnan(first)]).all())
    expect(lambda cl: FedYeoJohnsonTransformer(rng=0).fit(cl).transform(cl[0]), (_two_clients(X),), want)


CLIENT_SETS = {
    'mismatched column names': ([V['base'], V['base'].rename(columns={'b': 'c'})], 'mismatched columns'),
    'mismatched column count': ([V['base'], V['base'][['a']]], 'mismatched columns'),
    'an empty client': ([V['base'], V['base'].iloc[:0]], 'client 1 has no rows'),
    'a single DataFrame': (V['base'], 'list of client datasets'),
    'no client': ([], 'non-empty list'),
    'a 1-D client': ([V['base'], V['base']['a'].to_numpy()], '2-D'),
    'sparse client': (
        [V['base'], __import__('scipy.sparse', fromlist=['x']).csr_matrix(BASE)],
        'sparse input is not supported',
    ),
}


@pytest.mark.parametrize('name', list(CLIENT_SETS))
def test_secure_fed_yj_federations(name):
    clients, msg = CLIENT_SETS[name]
    expect(lambda c: SecureFedYJ(rng=0).fit(c), (clients,), msg)


@pytest.mark.parametrize(
    'kw,msg',
    [
        ({'t_max': -1}, 't_max'),
        ({'t_max': 2.5}, 't_max'),
        ({'precision': 0}, 'precision'),
        ({'precision': 191}, 'at most 190'),
        ({'envelope_bits': 0}, 'envelope_bits'),
        ({'max_rows': 10}, 'more than max_rows'),
        ({'bounds': [[0, 1]]}, 'bounds describe 1 features'),
        ({'bounds': [[1, 0], [0, 1]]}, 'low > high'),
        ({'bounds': [[0, np.inf], [0, 1]]}, 'finite'),
        ({'bounds': [[0, 0.5], [0, 0.5]]}, 'outside the public bounds'),
    ],
)
def test_secure_fed_yj_parameters(kw, msg):
    expect(lambda cl: SecureFedYJ(rng=0, **kw).fit(cl), (_two_clients(V['base']),), msg)


@pytest.mark.parametrize(
    'f,args,want',
    [
        (yeo_johnson, ([1.0, 2.0], np.inf), 'lmbda must be finite'),
        (yeo_johnson, ([1.0, 2.0], np.nan), 'NaN'),
        (yeo_johnson_inverse, ([1.0], -np.inf), 'lmbda must be finite'),
        (
            yeo_johnson,
            (np.array([np.inf, -np.inf, np.nan]), 0.5),
            lambda y: np.testing.assert_array_equal(y[:2], [np.inf, -np.inf]),
        ),
        (yeo_johnson, (np.array([1e300, -1e300]), 1.0), lambda y: np.testing.assert_array_equal(y, [1e300, -1e300])),
        (exp_yj, (V['base'], -1), 't_max'),
        (exp_yj, (V['base'], True), 't_max'),
        (exp_yj, (np.ones((2, 2, 2)),), 'dimensions'),
    ],
)
def test_yeo_johnson_functions(f, args, want):
    expect(f, args, want)


# ------------------------------------------------------------------------------------------------ trees
# fedgauss.gbdt (issue 31): both estimators in every `missing=` mode against every input, each case ending in a
# reference (an input the trees cannot tell apart, XGBoost, the fit on imputed data, a rescaled fit, a brute force) or in
# an error that names the problem; then the building blocks one by one.
from fractions import Fraction

from sklearn.exceptions import NotFittedError

from fedgauss import gbdt
from fedgauss.testing import expected_over_paths

ESTIMATORS = {'classifier': GBDTClassifier, 'regressor': GBDTRegressor}
MODES = gbdt.MISSING
Y_REAL = 3 * BASE[:, 0] - BASE[:, 1]  # the regressor's target
EYE = np.eye(40, 2, dtype=bool)


def _tree_variants():
    "The catalogue's tables plus what only trees meet: features at the ends of float64, categories, nullable dtypes, ..."
    B, v = V['base'], dict(V)
    v['sign 1e308'] = np.sign(B - B.median()) * 1e308
    v['max float'] = B.assign(a=np.r_[np.finfo(float).max, -np.finfo(float).max, B['a'][2:]])
    v['categorical'] = B.assign(b=pd.Categorical(np.where(B['b'] > B['b'].median(), 'hi', 'lo')))
    v['categorical with NaN'] = v['categorical'].assign(b=v['categorical']['b'].where(~EYE[:, 1]))
    v['object numbers'] = B.assign(b=B['b'].astype(object))
    v['float32'] = B.astype(np.float32)
    v['Float64 with NA'] = B.astype('Float64').mask(EYE)
    v['boolean with NA'] = (B > B.median()).astype('boolean').mask(EYE)
    v['string dtype'] = B.assign(b=pd.array(['x'] * 40, dtype='string'))
    v['datetime'] = B.assign(b=pd.date_range('2020', periods=40))
    v['duplicate names'] = pd.DataFrame(BASE, columns=['a', 'a'])
    v['ndarray'] = BASE.copy()
    return v


TV = _tree_variants()


def _twin(name):
    """An input the trees cannot tell from `TV[name]` (the same order of values in every column, the same missing
    entries, plain float64), or None when the case needs another reference."""
    B, X = V['base'], TV[name]
    if name.startswith('scale'):
        return -B if name.startswith('scale -') else B
    if name == 'mixed 1e300':
        return B - B.median()
    if name == 'sign 1e308':
        return np.sign(B - B.median())
    if name == 'max float':
        return B.assign(a=np.r_[B['a'].max() + 1, B['a'].min() - 1, B['a'][2:]])
    if name.startswith('categorical'):
        return X.assign(b=X['b'].cat.codes.where(X['b'].notna()).astype(float))
    if name in (
        'int',
        'nullable Int64 with NA',
        'bool',
        'object numbers',
        'float32',
        'Float64 with NA',
        'boolean with NA',
    ):
        return pd.DataFrame({c: X[c].to_numpy(dtype=float, na_value=np.nan) for c in X.columns})
    if name in ('all-nan column', 'constant column'):
        return X[['a']]  # a feature that cannot split changes nothing
    return None


TREE_ERRORS = {
    '+inf': "column 'a' contains infinity",
    '-inf': "column 'b' contains infinity",
    'empty': '0 sample',
    'object (text)': "column 'b' is not numeric.*astype\\('category'\\)",
    'string dtype': "column 'b' is not numeric",
    'complex': "column 'b' is complex",
    'datetime': "column 'b' has dtype datetime64",
    'duplicate names': "duplicate column names: 'a'",
}


def _predict(est, X):
    return est.predict_proba(X)[:, 1] if isinstance(est, GBDTClassifier) else est.predict(X)


def _fit_predict(Est, mode, **kw):
    def f(X, y):
        return _predict(Est(n_estimators=5, max_depth=3, missing=mode, **kw).fit(X, y), X)

    return f


def _tree_reference(name, Est, mode, y):
    "The check of the predictions on `TV[name]`: equal to the bit to those of the reference fit."
    twin = _twin(name)
    if twin is not None:
        ref = _fit_predict(Est, mode)(twin, y)
        return lambda p: np.testing.assert_array_equal(p, ref)
    X = TV[name]
    if name == 'one row':
        return lambda p: np.testing.assert_array_equal(p, y)  # one value: the model predicts it
    if name in ('nan', 'nullable Int64 with NA') and mode == 'impute':  # the fit on the data imputed by hand
        filled = X.astype(float).fillna(X.astype(float).mean())
        ref = _predict(Est(n_estimators=5, max_depth=3).fit(filled, y), filled)
        return lambda p: np.testing.assert_allclose(p, ref, rtol=1e-15)
    if name == 'nan' and mode == 'probabilistic':  # the expectation over both branches, path by path
        m = Est(n_estimators=5, max_depth=3, missing=mode).fit(X, y)
        xs = X.to_numpy(float)
        margin = m.base_margin_ + np.array([sum(expected_over_paths(t, x, t.count) for t in m.trees_) for x in xs])
        ref = 1 / (1 + np.exp(-margin)) if Est is GBDTClassifier else margin
        return lambda p: np.testing.assert_allclose(p, ref, rtol=1e-12)
    if name in ('base', 'nan', 'mixed signs', 'ndarray'):  # XGBoost's hist method (single precision)
        xgb = pytest.importorskip('xgboost')
        xs = np.asarray(X, float)
        kw = dict(n_estimators=5, max_depth=3, tree_method='hist', n_jobs=1)
        if Est is GBDTClassifier:
            ref = xgb.XGBClassifier(base_score=0.5, **kw).fit(xs, y).predict_proba(xs)[:, 1]
        else:
            ref = xgb.XGBRegressor(base_score=1.0, **kw).fit(xs, y).predict(xs)
        base = {'base_score': 0.5 if Est is GBDTClassifier else 1.0}
        ours = _fit_predict(Est, 'learn', **base)(X, y)
        return lambda p: (
            np.testing.assert_allclose(ours, ref, atol=2e-6, rtol=2e-6),
            np.testing.assert_array_equal(p, _fit_predict(Est, mode)(X, y)),
        )
    raise AssertionError(f'no reference for {name}')


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('est', list(ESTIMATORS))
@pytest.mark.parametrize('name', list(TV))
def test_gbdt_inputs(name, est, mode):
    Est, X = ESTIMATORS[est], TV[name]
    y = (label if est == 'classifier' else Y_REAL)[: len(X)]
    want = TREE_ERRORS.get(name)
    if want is None and name == 'one row' and est == 'classifier':
        want = 'needs two classes'
    expect(_fit_predict(Est, mode), (X, y), want or _tree_reference(name, Est, mode, y))


@pytest.mark.parametrize('mode', MODES)
@pytest.mark.parametrize('name', ['base', 'nan', 'sign 1e308', 'nullable Int64 with NA', 'categorical with NaN'])
def test_gbdt_predict_other_rows(name, mode):
    "Fitted on one half, predicting the other: the same as the reference input's model on the reference's other half."
    X, twin = TV[name], _twin(name)
    twin = X if twin is None else twin
    m = GBDTRegressor(n_estimators=5, max_depth=3, missing=mode)
    ref = GBDTRegressor(n_estimators=5, max_depth=3, missing=mode).fit(twin[:20], Y_REAL[:20]).predict(twin[20:])
    expect(lambda X: m.fit(X[:20], Y_REAL[:20]).predict(X[20:]), (X,), lambda p: np.testing.assert_array_equal(p, ref))


def _ref_y(y, **kw):
    return GBDTRegressor(n_estimators=5, max_depth=3, **kw).fit(V['base'], y).predict(V['base'])


@pytest.mark.parametrize('k', [-1000, -500, -60, -20, 20, 60, 500, 990])
def test_gbdt_regressor_is_scale_free_to_the_bit(k):
    "y times a power of two: the fit is the power of two times the fit on y, bit for bit (issue 31: the gain floor)."
    ref = _ref_y(Y_REAL)
    for sign in (1, -1):
        expect(
            lambda y: GBDTRegressor(n_estimators=5, max_depth=3).fit(V['base'], y).predict(V['base']),
            (np.ldexp(sign * Y_REAL, k),),
            lambda p: np.testing.assert_array_equal(p, np.ldexp(sign * ref, k)),
        )


@pytest.mark.parametrize('c', [1e-300, -1e-300, 1e-100, 1e-20, 1e-6, -1e-6, 1e-3, 1e3, 1e20, 1e100, -1e300, 1e300])
def test_gbdt_regressor_at_every_scale(c):
    "y times any c: c times the fit on y (issue 31: at 1e-6 the old floor of 1e-6 predicted a constant)."
    ref = _ref_y(Y_REAL)
    expect(
        lambda y: GBDTRegressor(n_estimators=5, max_depth=3).fit(V['base'], y).predict(V['base']),
        (Y_REAL * c,),
        lambda p: np.testing.assert_allclose(p / c, ref, rtol=1e-9),
    )


@pytest.mark.parametrize(
    'y,want',
    [
        (np.full(40, 1.5e308), 'beyond .*rescale y'),
        (np.r_[1e300, -1e300, np.zeros(38)], lambda p: np.isfinite(p).all()),
        (np.r_[np.nan, np.ones(39)], 'NaN'),
        (np.r_[np.inf, np.ones(39)], 'infinity'),
        (np.full(40, 1e-300), lambda p: np.testing.assert_allclose(p, 1e-300, rtol=1e-14)),
        (np.full(40, -1e300), lambda p: np.testing.assert_allclose(p, -1e300, rtol=1e-14)),
        (np.zeros(40), lambda p: np.testing.assert_array_equal(p, 0.0)),
        (np.ones(39), 'inconsistent'),
        (np.ones((40, 2)), '1d array'),
        (pd.array([1.0, None] * 20, dtype='Float64'), 'NaN'),
        (np.array(['a'] * 40, dtype=object), 'y must be real numbers'),
        (pd.Series(Y_REAL).astype('Float64'), lambda p: np.testing.assert_array_equal(p, _ref_y(Y_REAL))),
        (
            (Y_REAL * 1e4).round().astype(np.int64),
            lambda p: np.testing.assert_array_equal(p, _ref_y((Y_REAL * 1e4).round())),
        ),
    ],
)
def test_gbdt_regressor_targets(y, want):
    expect(lambda X, y: GBDTRegressor(n_estimators=5, max_depth=3).fit(X, y).predict(X), (V['base'], y), want)


def _ref_labels():
    return GBDTClassifier(n_estimators=5, max_depth=3).fit(V['base'], label).predict_proba(V['base'])


@pytest.mark.parametrize(
    'y,want',
    [
        (np.where(label, 'yes', 'no'), 'same'),
        (label.astype(bool), 'same'),
        (label.astype(float), 'same'),
        (np.where(label, 1, -1), 'same'),
        (pd.Categorical(np.where(label, 'b', 'a')), 'same'),
        (pd.array(label, dtype='Int64'), 'same'),
        (np.zeros(40, int), '1 class'),
        (np.arange(40) % 3, lambda p: np.testing.assert_allclose(p.sum(1), 1.0)),  # three classes: softmax
        (np.array(['yes', 1] * 20, dtype=object), 'mixes text and numbers'),
        (pd.array([0, 1, None, 1] * 10, dtype='Int64'), 'NaN'),
        (np.r_[np.nan, label[1:]], 'NaN'),
        (BASE[:, 0], 'Unknown label type'),
        (label[:39], 'inconsistent'),
    ],
)
def test_gbdt_classifier_labels(y, want):
    if want == 'same':
        want = lambda p: np.testing.assert_array_equal(p, _ref_labels())
    expect(lambda X, y: GBDTClassifier(n_estimators=5, max_depth=3).fit(X, y).predict_proba(X), (V['base'], y), want)


BAD_PARAMS = [
    ({'n_estimators': 0}, 'n_estimators'),
    ({'n_estimators': 2.5}, 'n_estimators'),
    ({'n_estimators': True}, 'n_estimators'),
    ({'n_estimators': '5'}, 'n_estimators'),
    ({'max_depth': 0}, 'max_depth'),
    ({'max_depth': -1}, 'max_depth'),
    ({'max_depth': None}, 'max_depth'),
    ({'learning_rate': 0}, 'learning_rate'),
    ({'learning_rate': -0.1}, 'learning_rate'),
    ({'learning_rate': np.nan}, 'learning_rate'),
    ({'learning_rate': np.inf}, 'learning_rate'),
    ({'learning_rate': '0.3'}, 'learning_rate'),
    ({'reg_lambda': -1}, 'reg_lambda'),
    ({'reg_lambda': np.nan}, 'reg_lambda'),
    ({'gamma': -0.1}, 'gamma'),
    ({'gamma': np.inf}, 'gamma'),
    ({'min_child_weight': -1}, 'min_child_weight'),
    ({'min_child_weight': np.nan}, 'min_child_weight'),
    ({'max_bins': 1}, 'max_bins'),
    ({'max_bins': 65536}, 'max_bins'),
    ({'max_bins': 2.5}, 'max_bins'),
    ({'max_bins': True}, 'max_bins'),
    ({'missing': 'guess'}, 'missing must be one of'),
    ({'missing': None}, 'missing must be one of'),
]


@pytest.mark.parametrize('est', list(ESTIMATORS))
@pytest.mark.parametrize('kw,msg', BAD_PARAMS, ids=[f'{k}={v!r}' for (d, _) in BAD_PARAMS for k, v in d.items()])
def test_gbdt_parameters(est, kw, msg):
    y = label if est == 'classifier' else Y_REAL
    expect(lambda: ESTIMATORS[est](**kw).fit(V['base'], y), (), msg)


@pytest.mark.parametrize(
    'est,b,msg',
    [
        ('classifier', 0.0, 'probability in \\(0, 1\\)'),
        ('classifier', 1.0, 'probability in \\(0, 1\\)'),
        ('classifier', np.nan, 'probability'),
        ('classifier', 'x', 'probability'),
        ('regressor', np.inf, 'finite number'),
        ('regressor', np.nan, 'finite number'),
        ('regressor', 'x', 'finite number'),
        ('regressor', 1e300, 'spreads of y away'),
    ],
)
def test_gbdt_base_score(est, b, msg):
    y = label if est == 'classifier' else Y_REAL
    expect(lambda: ESTIMATORS[est](base_score=b).fit(V['base'], y), (), msg)


@pytest.mark.parametrize('est', list(ESTIMATORS))
def test_gbdt_numpy_scalar_parameters_are_their_values(est):
    y = label if est == 'classifier' else Y_REAL
    kw = dict(n_estimators=np.int64(5), max_depth=np.int32(3), learning_rate=np.float32(0.25), max_bins=np.uint16(64))
    ref = _predict(
        ESTIMATORS[est](n_estimators=5, max_depth=3, learning_rate=0.25, max_bins=64).fit(V['base'], y), V['base']
    )
    expect(
        lambda: _predict(ESTIMATORS[est](**kw).fit(V['base'], y), V['base']),
        (),
        lambda p: np.testing.assert_array_equal(p, ref),
    )


@pytest.mark.parametrize('method', ['predict', 'predict_proba', 'decision_function', 'binner'])
def test_gbdt_before_fit(method):
    est = Binner() if method == 'binner' else GBDTClassifier()
    f = est.transform if method == 'binner' else getattr(est, method)
    with pytest.raises(NotFittedError, match='not fitted'):
        f(V['base'])
    if method == 'predict':
        with pytest.raises(NotFittedError, match='not fitted'):
            GBDTRegressor().predict(V['base'])


@pytest.mark.parametrize('est', list(ESTIMATORS))
def test_gbdt_fit_twice(est):
    "A second fit forgets the first: the same as a fresh fit, with nothing left from the first one's settings."
    Est, y = ESTIMATORS[est], (label if est == 'classifier' else Y_REAL)
    m = Est(n_estimators=5, max_depth=3, missing='impute').fit(TV['categorical with NaN'], y)
    m.set_params(missing='learn')
    expect(
        lambda X: _predict(m.fit(X, y), X),
        (V['nan'],),
        lambda p: np.testing.assert_array_equal(p, _fit_predict(Est, 'learn')(V['nan'], y)),
    )
    assert not hasattr(m, 'impute_values_') and m.categories_ == {} and list(m.feature_names_in_) == ['a', 'b']
    again = _predict(m.fit(V['nan'], y), V['nan'])
    np.testing.assert_array_equal(again, _fit_predict(Est, 'learn')(V['nan'], y))


PREDICT_FRAMES = {
    'renamed column': (V['base'].rename(columns={'b': 'c'}), 'feature names should match'),
    'reordered columns': (V['base'][['b', 'a']], 'same order'),
    'one column fewer': (V['base'][['a']], 'feature names should match|features'),
    'one column more': (V['base'].assign(c=1.0), 'feature names should match|features'),
    'a text column': (V['base'].assign(b='x'), "column 'b' is not numeric"),
    'inf': (V['+inf'], "column 'a' contains infinity"),
    'an array of 3 columns': (np.c_[BASE, BASE[:, :1]], 'expecting 2 features'),
    '1-d': (BASE[:, 0], '2D array'),
    'empty': (V['base'].iloc[:0], '0 sample'),
}


@pytest.mark.parametrize('name', list(PREDICT_FRAMES))
def test_gbdt_predict_on_other_columns(name):
    X, msg = PREDICT_FRAMES[name]
    m = GBDTClassifier(n_estimators=3).fit(V['base'], label)
    expect(m.predict_proba, (X,), msg)


def test_gbdt_predict_on_an_array_after_a_frame():
    "scikit-learn's convention: a warning (once), then the columns by position."
    m = GBDTClassifier(n_estimators=3).fit(V['base'], label)
    ref = m.predict_proba(V['base'])
    expect(m.predict_proba, (BASE,), lambda p: np.testing.assert_array_equal(p, ref))
    with pytest.warns(UserWarning, match='feature names'):
        m.predict_proba(BASE)


@pytest.mark.parametrize(
    'w,msg',
    [
        (np.ones(39), 'length 40'),
        (np.ones((40, 2)), 'length 40'),
        (np.r_[np.nan, np.ones(39)], 'NaN or infinity'),
        (np.r_[np.inf, np.ones(39)], 'NaN or infinity'),
        (np.r_[-1.0, np.ones(39)], 'non-negative'),
        (np.zeros(40), 'sums to zero'),
        (np.full(40, 1e300), 'scale the weights down'),
        (np.r_[np.zeros(20), np.ones(20)], None),  # the rows of weight 0 are left out
    ],
)
def test_gbdt_sample_weight(w, msg):
    f = lambda X, y, w: GBDTClassifier(n_estimators=3, max_depth=2).fit(X, y, sample_weight=w).predict_proba(X)
    if msg is None:
        ref = GBDTClassifier(n_estimators=3, max_depth=2).fit(V['base'][20:], label[20:]).predict_proba(V['base'])
        msg = lambda p: np.testing.assert_allclose(p, ref, rtol=1e-12)
    expect(f, (V['base'], label, w), msg)


@pytest.mark.parametrize(
    'name',
    [
        'base',
        'nan',
        'constant column',
        'all-nan column',
        'scale 1e+300',
        'scale -1e-300',
        'sign 1e308',
        'nullable Int64 with NA',
        'bool',
        '+inf',
        'empty',
        'object (text)',
    ],
)
@pytest.mark.parametrize('candidates', ['quantile', 'uniform', 'log'])
def test_binner(name, candidates):
    X = TV[name]
    want = {'+inf': 'inf', 'empty': '0 sample', 'object (text)': 'could not convert'}.get(name)
    twin = _twin(name)
    if want is None:

        def want(Z, X=X):
            assert Z.shape == X.shape
            codes = X.to_numpy(dtype=float, na_value=np.nan) if isinstance(X, pd.DataFrame) else X
            assert (
                Z[np.isnan(codes)]
                == Binner(max_bins=16, candidates=candidates).fit(X).n_bins_[np.nonzero(np.isnan(codes))[1]]
            ).all()
            if twin is not None and candidates == 'quantile':  # quantiles depend on the order only
                np.testing.assert_array_equal(Z[:, : twin.shape[1]], Binner(max_bins=16).fit_transform(twin))

    expect(lambda X: Binner(max_bins=16, candidates=candidates).fit_transform(X), (X,), want)


def _exact_uniform(lo, hi, n):
    return [float(Fraction(lo) + (Fraction(hi) - Fraction(lo)) * k / n) for k in range(1, n)]


def _mp_log(lo, hi, n):
    import mpmath

    with mpmath.workdps(60):
        return [float(mpmath.mpf(lo) - 1 + (mpmath.mpf(hi) - lo + 1) ** (mpmath.mpf(k) / n)) for k in range(1, n)]


@pytest.mark.parametrize(
    'f,args,want',
    [
        # split candidates: data-independent grids (against exact arithmetic) and quantiles
        (
            gbdt.uniform_candidates,
            (-1e308, 1e308, 4),
            lambda t: np.testing.assert_array_equal(t, _exact_uniform(-1e308, 1e308, 4)),
        ),
        (
            gbdt.uniform_candidates,
            (-1.7e308, 1.7e308, 7),
            lambda t: np.testing.assert_allclose(t, _exact_uniform(-1.7e308, 1.7e308, 7), rtol=1e-15),
        ),
        (
            gbdt.uniform_candidates,
            (0.0, 1e-300, 4),
            lambda t: np.testing.assert_allclose(t, _exact_uniform(0.0, 1e-300, 4), rtol=1e-15),
        ),
        (
            gbdt.log_candidates,
            (-1e308, 1e308, 4),
            lambda t: np.testing.assert_allclose(t, _mp_log(-1e308, 1e308, 4), rtol=1e-14),
        ),
        (
            gbdt.log_candidates,
            (1.0, 1e300, 5),
            lambda t: np.testing.assert_allclose(t, _mp_log(1.0, 1e300, 5), rtol=1e-12),
        ),
        (gbdt.uniform_candidates, (0.0, np.inf, 4), 'finite'),
        (gbdt.uniform_candidates, (1.0, 0.0, 4), 'below the upper bound'),
        (gbdt.log_candidates, (0.0, 1.0, 0), 'n_bins'),
        (gbdt.log_candidates, (0.0, 1.0, True), 'n_bins'),
        (gbdt.quantile_candidates, (np.array([1.0, np.inf]),), 'infinity'),
        (gbdt.quantile_candidates, (np.ones((3, 3)),), '1-d'),
        (gbdt.quantile_candidates, (np.arange(5.0), 2.5), 'max_bins'),
        (gbdt.quantile_candidates, (np.arange(5.0), 4, np.ones(3)), 'sample_weight has shape'),
        (gbdt.quantile_candidates, (np.array([np.nan, np.nan]),), lambda t: t.size == 0),
        (
            gbdt.quantile_candidates,
            (np.array([1e308, -1e308, 0.0]),),
            lambda t: np.testing.assert_array_equal(t, [0.0, 1e308]),
        ),
        # layout, histograms, splits
        (gbdt.HistLayout, ([3, 0],), 'positive'),
        (gbdt.HistLayout, ([3], [[1.0, 0.5]]), 'not sorted'),
        (gbdt.HistLayout, ([2], [[0.5, 1.0]]), 'n_bins - 1'),
        (gbdt.build_histograms, (np.zeros((5, 2), int), np.ones((4, 2))), 'gh has 4 rows'),
        (gbdt.build_histograms, (np.zeros((0, 2), int), np.ones((0, 2))), 'no rows'),
        (gbdt.build_histograms, (np.zeros((5, 1), int), np.ones((5, 2)), np.full(5, 3), 2), 'n_nodes'),
        (gbdt.build_histograms, (np.zeros((5, 1), int), np.ones((5, 2)), None, 1, None, 'loop'), 'method'),
        (lambda h: gbdt.find_best_splits(h, gbdt.HistLayout([2, 2])), (np.full((1, 6, 2), np.nan),), 'NaN or infinity'),
        (
            lambda h: gbdt.find_best_splits(h, gbdt.HistLayout([2, 2]), np.ones((3, 2))),
            (np.ones((2, 6, 2)),),
            'totals must',
        ),
        (lambda h: gbdt.find_best_splits(h, gbdt.HistLayout([2])), (np.zeros((1, 4, 2)),), 'slots'),
        (  # a negative Hessian (a noisy histogram): its candidates are masked, quietly
            lambda h: gbdt.find_best_splits(h, gbdt.HistLayout([2, 2])).gain,
            (np.array([[[1, -1], [1, 1], [0, 0], [1, 1], [1, 1], [0, 0.0]]]),),
            lambda g: g[0] > -np.inf,
        ),
        # closed forms at their edges
        (gbdt.structure_score, (1.0, 0.0, 0.0), lambda s: s == 0),
        (gbdt.structure_score, (1e200, 1.0), lambda s: s == np.inf),
        (gbdt.split_gain, (1.0, 0.0, 1.0, 0.0, 0.0), lambda s: s == 0),
        (gbdt.newton_weight, (1.0, 0.0, 0.0), lambda w: w == 0),
        (
            gbdt.LogisticLoss().link,
            (np.array([0.0, 1.0]),),
            lambda m: np.testing.assert_array_equal(m, [-np.inf, np.inf]),
        ),
        (gbdt.snap_to_grid, (np.array([np.nan]), np.ones(1)), 'finite'),
        (gbdt.snap_to_grid, (np.ones(3), np.ones(2)), 'shape'),
        (
            gbdt.snap_to_grid,
            (np.array([0.1, 0.2, -0.3]), np.array([0.25, 0.5, 0.125])),
            lambda r: r[0].sum() == 0 and r[1].sum() == 0.875,
        ),
        # data meet trees
        (
            gbdt.numeric_features,
            (pd.DataFrame({'t': pd.to_timedelta([1, 2], 'D')}),),
            "column 't' has dtype timedelta64",
        ),
        (gbdt.numeric_features, (np.array([[1.0, -np.inf]]),), 'column 1 of X contains infinity'),
        (gbdt.LocalHistograms, (np.zeros((5, 2), np.uint8), gbdt.HistLayout([2])), 'features'),
        (
            lambda: gbdt.PlainHistograms(np.zeros((5, 1), np.uint8), gbdt.HistLayout([2])).start_tree(np.ones((4, 2))),
            (),
            'gh must have shape',
        ),
        (
            lambda: gbdt.LocalHistograms(np.zeros((5, 1), np.uint8), gbdt.HistLayout([2])).start_tree(np.ones((5, 3))),
            (),
            'gh must have shape',
        ),
        (gbdt.probabilistic_margin, ([], np.ones((2, 2)), 'rows'), 'weights'),
        (gbdt.forest_margin, ([], np.ones((3, 2))), lambda m: np.testing.assert_array_equal(m, 0.0)),
    ],
)
def test_gbdt_building_blocks(f, args, want):
    expect(f, args, want)


@pytest.fixture(scope='module')
def trees():
    return GBDTClassifier(n_estimators=3, max_depth=2, missing='probabilistic').fit(V['base'], label).trees_


@pytest.mark.parametrize(
    'call,msg',
    [
        (lambda t: gbdt.forest_margin(t, np.ones((3, 0))), 'trees split feature'),
        (lambda t: gbdt.forest_margin(t, np.ones(3)), '2-d'),
        (lambda t: t[0].apply(np.ones((3, 0))), 'trees split feature'),
        (lambda t: t[0].apply_binned(np.zeros((3, 0), np.uint8), []), 'trees split feature'),
        (lambda t: gbdt.probabilistic_margin(t, np.ones((3, 0))), 'trees split feature'),
        (lambda t: gbdt.node_counts(t[0], np.zeros((3, 0), np.uint8), []), 'trees split feature'),
        (
            lambda t: gbdt.probabilistic_margin(
                [dict.__new__(dict)] and [gbdt.Tree(*[np.zeros(1)] * 11)], np.ones((1, 1))
            ),
            'no node counts',
        ),
        (lambda t: gbdt.forest_margin(t, np.full((2, 2), np.nan)), None),
    ],
)
def test_gbdt_trees_meet_rows(trees, call, msg):
    if msg is None:  # every row missing: each tree's default path
        t = trees
        want = lambda m: np.testing.assert_array_equal(m, sum(tr.value[tr.apply(np.full((2, 2), np.nan))] for tr in t))
    else:
        want = msg
    expect(call, (trees,), want)


# ------------------------------------------------------------------------------------------------ missing values
from fedgauss.missing import mask_mcar, mask_mnar, missing_value_models, missing_value_study  # noqa: E402

MASK_INPUTS = [
    'base',
    'nan',
    'int',
    'nullable Int64 with NA',
    'bool',
    'categorical with NaN',
    'Float64 with NA',
    'object (text)',
    'string dtype',
    'scale 1e+300',
    'sign 1e308',
    'one row',
    'empty',
    'ndarray',
]


def _mask_reference(X, rate, seed, mech):
    "The masked positions from the definition: one uniform draw per entry, column by column; MNAR by rank among observed."
    from scipy.stats import rankdata

    F = pd.DataFrame(X) if isinstance(X, np.ndarray) else X
    g = np.random.default_rng(seed)
    hit = np.zeros(F.shape, bool)
    for j, c in enumerate(F.columns):
        u = g.random(len(F))
        if mech == 'MCAR':
            hit[:, j] = u < rate
            continue
        col = F[c]
        v = col.cat.codes.where(col.notna()) if isinstance(col.dtype, pd.CategoricalDtype) else col
        obs = v.notna().to_numpy()
        k = np.zeros(len(F))
        k[obs] = rankdata(
            v[obs].to_numpy(dtype=float)
            if v.dtype.kind not in 'OU' and not isinstance(v.dtype, pd.StringDtype)
            else v[obs].to_numpy(),
            method='average',
        )
        hit[:, j] = u < np.minimum(1.0, 2 * rate * k / max(obs.sum(), 1))
    return hit


@pytest.mark.parametrize('mech', ['MCAR', 'MNAR'])
@pytest.mark.parametrize('name', MASK_INPUTS)
def test_masks(name, mech):
    X = TV[name]
    mask = mask_mcar if mech == 'MCAR' else mask_mnar

    def check(out):
        assert type(out) is type(X) and out.shape == X.shape
        F, O = (pd.DataFrame(X), pd.DataFrame(out)) if isinstance(X, np.ndarray) else (X, out)
        hit = _mask_reference(X, 0.3, 7, mech)
        np.testing.assert_array_equal(O.isna().to_numpy(), hit | F.isna().to_numpy())
        for c in F.columns:  # what is not masked is the input's
            keep = ~O[c].isna().to_numpy()
            np.testing.assert_array_equal(O[c][keep].to_numpy(object), F[c][keep].to_numpy(object))
            numpy_int = isinstance(F[c].dtype, np.dtype) and F[c].dtype.kind in 'biu'
            assert O[c].dtype == (np.float64 if numpy_int else F[c].dtype), (c, O[c].dtype)

    expect(lambda X: mask(X, 0.3, 7), (X,), check)


@pytest.mark.parametrize('mask', [mask_mcar, mask_mnar])
@pytest.mark.parametrize(
    'args,kw,msg',
    [
        ((np.float32(0.2), 0), {}, None),
        ((0.6, 0), {}, 'rate must be a number in \\[0, 0.5\\]; got 0.6'),
        ((-0.1, 0), {}, 'rate must be'),
        ((np.nan, 0), {}, 'rate must be'),
        ((True, 0), {}, 'rate must be'),
        (('0.2', 0), {}, 'rate must be'),
        ((0.2, 0), {'columns': ['zz']}, "unknown column\\(s\\) 'zz'"),
        ((0.2, 0), {'columns': ['a', 'a']}, "'a' more than once"),
        ((0.2, 0), {'columns': 'a'}, 'single'),
        ((0.2, 'seed'), {}, 'rng must be'),
    ],
)
def test_mask_parameters(mask, args, kw, msg):
    if msg is None:
        msg = lambda out: out.isna().to_numpy().any()
    elif msg == 'single':
        msg = lambda out: out['b'].notna().all() and out['a'].isna().any()
    expect(lambda X: mask(X, *args, **kw), (V['base'],), msg)


@pytest.mark.parametrize('mask', [mask_mcar, mask_mnar])
@pytest.mark.parametrize(
    'X,msg',
    [
        (V['base']['a'], 'got a Series'),
        (BASE[:, 0], 'must be 2-D'),
        (np.ones((2, 2, 2)), 'must be 2-D'),
        (pd.DataFrame(BASE, columns=['a', 'a']), 'duplicate column names'),
        (BASE, lambda out: isinstance(out, np.ndarray) and np.isnan(out).any()),
    ],
)
def test_mask_inputs(mask, X, msg):
    expect(lambda X: mask(X, 0.3, 1), (X,), msg)


_STUDY_X = pd.DataFrame({'a': BASE[:, 0], 'b': BASE[:, 1], 'c': np.sin(BASE[:, 0] * 5)})
STUDY = dict(rates=(0.3,), seeds=(0,), mechanisms=('MCAR',), n_estimators=3, max_depth=2)


def _study(X=None, y=None, Xt=None, yt=None, **kw):
    X = _STUDY_X if X is None else X
    return missing_value_study(
        X, label if y is None else y, X if Xt is None else Xt, label if yt is None else yt, **{**STUDY, **kw}
    )


def _study_reference(res):
    "One row by hand: the default direction, trained and tested on masks drawn with the study's seeds."
    from sklearn.metrics import roc_auc_score

    Xtr, Xte = mask_mcar(_STUDY_X, 0.3, 1), mask_mcar(_STUDY_X, 0.3, 2)
    p = GBDTClassifier(n_estimators=3, max_depth=2).fit(Xtr, label).predict_proba(Xte)[:, 1]
    row = res[(res['where'] == 'train and test') & (res['method'] == 'default direction')]
    assert row['auc'].item() == roc_auc_score(label, p)


@pytest.mark.parametrize(
    'call,want',
    [
        (lambda: _study(), _study_reference),
        (
            lambda: _study(X=_STUDY_X.to_numpy(), Xt=_STUDY_X.to_numpy()),
            lambda r: r['auc'].tolist() == _study()['auc'].tolist(),
        ),
        (
            lambda: _study(y=np.where(label, 'yes', 'no'), yt=np.where(label, 'yes', 'no')),
            lambda r: r['auc'].tolist() == _study()['auc'].tolist(),
        ),
        (lambda: _study(where=('always',)), "where: unknown 'always'"),
        (lambda: _study(mechanisms=('MAR',)), "mechanisms: unknown 'MAR'"),
        (lambda: _study(mechanisms='MCAR'), 'mechanisms must be a list or a tuple'),
        (lambda: _study(rates=(0.7,)), 'rate must be'),
        (lambda: _study(rates=()), 'rates is empty'),
        (lambda: _study(seeds=(0.5,)), 'seed must be a non-negative integer'),
        (lambda: _study(seeds=(-1,)), 'seed must be a non-negative integer'),
        (lambda: _study(n_estimators=0), 'n_estimators'),
        (lambda: _study(max_depth=2.5), 'max_depth'),
        (lambda: _study(y=np.array(['yes', 1] * 20, dtype=object)), 'y mixes text and numbers'),
        (lambda: _study(yt=np.zeros(40, int)), 'yt has 1 classes'),
        (lambda: _study(y=np.arange(40) % 3), 'y has 3 classes'),
        (lambda: _study(yt=label + 5), "yt's classes \\[5, 6\\] are not y's \\[0, 1\\]"),
        (lambda: _study(y=label[:30]), 'y has 30 labels for 40 rows'),
        (lambda: _study(y=np.r_[np.nan, label[1:]]), 'y has missing labels'),
        (lambda: _study(Xt=_STUDY_X.rename(columns={'c': 'z'})), "Xt's columns"),
        (lambda: _study(Xt=_STUDY_X[['a', 'b']]), "Xt's columns"),
        (lambda: _study(X=_STUDY_X['a']), 'got a Series'),
        (lambda: missing_value_models(0), 'n_estimators'),
        (lambda: missing_value_models(seed=-1), 'seed'),
    ],
)
def test_missing_value_study(call, want):
    expect(call, (), want)


# ------------------------------------------------------------------------------------------------ federation
def _partition(n):
    def check(splits):
        fed.check_partition(splits, n)

    return check


PARTITIONERS = {
    'iid_split': lambda X, y, **kw: fed.iid_split(X, y, n_clients=kw.get('k', 3), rng=0),
    'label_skew_split': lambda X, y, **kw: fed.label_skew_split(
        X, y, n_clients=kw.get('k', 2), theta=kw.get('theta', 0.8), rng=0
    ),
    'dirichlet_split': lambda X, y, **kw: fed.dirichlet_split(
        X, y, n_clients=kw.get('k', 3), alpha=kw.get('alpha', 1.0), rng=0
    ),
    'size_skew_split': lambda X, y, **kw: fed.size_skew_split(X, y, sizes=kw.get('sizes', (0.5, 0.3, 0.2)), rng=0),
}


@pytest.mark.parametrize('part', list(PARTITIONERS))
@pytest.mark.parametrize(
    'name', ['base', 'nan', '+inf', 'scale 1e+300', 'nullable Int64 with NA', 'object (text)', 'empty']
)
def test_partitioners_pass_any_values_through(part, name):
    X = V[name]
    y = label[: len(X)]
    want = 'no rows|empty|at least|fewer' if name == 'empty' else _partition(len(X))
    expect(lambda X, y: PARTITIONERS[part](X, y), (X, y), want)


@pytest.mark.parametrize(
    'part,kw,msg',
    [
        ('iid_split', {'k': 0}, 'n_clients'),
        ('iid_split', {'k': 41}, 'n_clients|rows'),
        ('iid_split', {'k': 2.5}, 'n_clients'),
        ('label_skew_split', {'theta': 1.5}, 'theta'),
        ('label_skew_split', {'theta': -0.1}, 'theta'),
        ('label_skew_split', {'theta': np.nan}, 'theta'),
        ('dirichlet_split', {'alpha': 0}, 'alpha'),
        ('dirichlet_split', {'alpha': -1}, 'alpha'),
        ('size_skew_split', {'sizes': (0.5, 0.6)}, 'sizes'),
        ('size_skew_split', {'sizes': (1.0, -0.1, 0.1)}, 'sizes'),
    ],
)
def test_partitioner_parameters(part, kw, msg):
    expect(lambda X, y: PARTITIONERS[part](X, y, **kw), (V['base'], label), msg)


@pytest.mark.parametrize('part', ['iid_split', 'label_skew_split', 'dirichlet_split'])
def test_partitioners_wrong_lengths(part):
    expect(lambda X, y: PARTITIONERS[part](X, y), (V['base'], label[:30]), 'length|rows|samples')


@pytest.mark.parametrize(
    'groups,msg',
    [
        ([['a'], ['b']], None),
        ([['a'], ['a', 'b']], 'more than one|twice|overlap'),
        ([['a'], ['zz']], 'zz'),
        ([['a']], 'b|every column|not assigned'),
        ([], 'group|part'),
    ],
)
def test_vertical_split(groups, msg):
    want = msg or (lambda parts: len(parts) == 2)
    expect(lambda X, y: fed.vertical_split(X, groups, y), (V['base'], label), want)


def test_channel_bad_use():
    ch = fed.Channel()
    expect(lambda: ch.receive('nobody', 'kind'), (), 'nobody|no message|pending')


# ------------------------------------------------------------------------------------------------ SMC
@pytest.mark.parametrize(
    'values,kw,want',
    [
        ({'a': np.array([1.5]), 'b': np.array([2.5])}, {}, lambda s: np.testing.assert_allclose(s, [4.0], atol=2**-20)),
        ({'a': np.array([1.5]), 'b': np.array([2.5])}, {'frac_bits': -5}, 'frac_bits'),
        ({'a': np.array([1.5]), 'b': np.array([2.5])}, {'frac_bits': 63}, 'frac_bits'),
        ({'a': np.array([1.5]), 'b': np.array([np.nan])}, {}, 'NaN or inf'),
        ({'a': np.array([1.5]), 'b': np.array([np.inf])}, {}, 'NaN or inf'),
        ({'a': np.array([1e300]), 'b': np.array([1.0])}, {}, 'too large'),
        ({'a': np.array([1.0]), 'b': np.array([1.0, 2.0])}, {}, 'shape'),
        ({'a': np.array([1.0])}, {}, 'at least 2 clients'),
        ({'a': np.array([1.0]), 'b': np.array([1.0])}, {'drop': ('zz',)}, 'unknown clients'),
        ({'a': np.array([1.0]), 'b': np.array([1.0])}, {'on_dropout': 'ignore'}, 'on_dropout'),
        (
            {'a': np.array([-(2.0**30)]), 'b': np.array([2.0**30])},
            {},
            lambda s: np.testing.assert_array_equal(s, [0.0]),
        ),
    ],
)
def test_secure_sum(values, kw, want):
    expect(lambda v: smc.secure_sum(v, rng=0, **kw), (values,), want)


@pytest.mark.parametrize(
    'x,want',
    [
        (np.array([1.25, -3.5]), lambda v: np.testing.assert_array_equal(smc.decode(v, 8, 64), [1.25, -3.5])),
        (np.array([np.nan]), 'NaN|finite'),
        (np.array([np.inf]), 'inf|finite'),
        (np.array([2.0**60]), 'overflow|too large|ring'),
    ],
)
def test_encode(x, want):
    expect(lambda x: smc.encode(x, 8, 64), (x,), want)


# ------------------------------------------------------------------------------------------------ DP
@pytest.mark.parametrize(
    'f,args,want',
    [
        (dp.gaussian_sigma, (1.0, 1e-5), lambda s: abs(s - 3.7306316348) < 1e-8),
        (dp.gaussian_sigma, (0.0, 1e-5), 'epsilon'),
        (dp.gaussian_sigma, (-1.0, 1e-5), 'epsilon'),
        (dp.gaussian_sigma, (np.nan, 1e-5), 'epsilon'),
        (dp.gaussian_sigma, (np.inf, 1e-5), 'epsilon'),
        (dp.gaussian_sigma, (1e300, 1e-5), 'beyond 1e\\+15'),
        (dp.gaussian_sigma, (1e15, 1e-5), lambda s: 0 < s < 1e-6),
        (dp.gaussian_sigma, (1.0, 0.0), 'delta'),
        (dp.gaussian_sigma, (1.0, 1.0), 'delta'),
        (dp.gaussian_sigma, (1.0, 1e-300), lambda s: np.isfinite(s)),
        (dp.gaussian_sigma, (1.0, 1e-5, -1.0), 'sensitivity'),
        (dp.gaussian_sigma, (1.0, 1e-5, 1.0, 'magic'), 'method'),
        (dp.gaussian_sigma, (2.0, 1e-5, 1.0, 'classic'), 'only valid for epsilon < 1'),
        (dp.gaussian_epsilon, (0.0, 1e-5), 'sigma'),
        (dp.gaussian_epsilon, (1e-300, 1e-5), lambda e: e > 1e10 or np.isinf(e)),
        (dp.gaussian_delta, (1.0, -1.0), 'epsilon'),
        (dp.gaussian_delta, (1e300, 1.0), lambda d: 0 <= d < 1e-100),
        (dp.calibrate_noise_multiplier, (1e-7, 1e-170), 'below what the RDP accountant can certify'),
        (dp.calibrate_noise_multiplier, (1.0, 1e-5, 0), 'count'),
        (dp.calibrate_noise_multiplier, (1.0, 1e-5, 2.5), 'count'),
        (dp.calibrate_noise_multiplier, (1e6, 1e-5), lambda z: 0 < z < 1),
        (dp.clopper_pearson, (5, 3), 'k <= n'),
        (dp.clopper_pearson, (-1, 3), 'k <= n'),
        (dp.clopper_pearson, (1.5, 3), 'integer'),
        (dp.clopper_pearson, (0, 0), 'n >= 1'),
        (dp.clopper_pearson, (1, 3, 1.5), 'alpha'),
        (dp.clopper_pearson, (0, 10), lambda r: r[0] == 0 and 0 < r[1] < 1),
        (dp.laplace_mechanism, (np.array([1.0, np.nan]), 1.0, 1.0), 'NaN|finite'),
        (dp.laplace_mechanism, (np.array([1.0]), 1.0, 0.0), 'epsilon'),
        (dp.gaussian_mechanism, (np.array([np.inf]), 1.0, 1.0, 1e-5), 'inf|finite'),
        (dp.discrete_gaussian, (0.0, 3), 'sigma'),
        (dp.discrete_gaussian, (np.inf, 3), 'sigma'),
        (dp.discrete_laplace, (-1.0, 3), 'scale'),
        (dp.discrete_gaussian, (1.0, -1), 'size|negative'),
        (dp.audit_epsilon_lower_bound, (np.array([]), np.array([1.0])), 'empty|sample'),
        (dp.audit_epsilon_lower_bound, (np.r_[np.ones(29), np.nan], np.ones(30)), 'finite'),
        (dp.PrivacyBudget, (0.0,), 'epsilon'),
        (dp.PrivacyBudget, (1.0, 1.5), 'delta'),
    ],
)
def test_dp_functions(f, args, want):
    expect(f, args, want)


def test_budget_refuses_overspending_and_records_nothing():
    b = dp.PrivacyBudget(1.0, 1e-5)
    b.spend(0.6, 0.0)
    expect(b.spend, (0.5, 0.0), 'exceed')
    assert abs(b.spent.epsilon - 0.6) < 1e-12


# ------------------------------------------------------------------------------------------------ Fed-mv-PPCA
def _centers():
    v, g = make_multiview_synthetic(rng=0)
    return make_scenario('IID', v, g, 3, rng=0)[0]


def _edit(edit):
    c = _centers()
    edit(c)
    return c


MV_CASES = {
    'nan in a view': (lambda c: c[0]['view1'].__setitem__((0, 0), np.nan), "center 0, view 'view1': contains NaN"),
    'inf in a view': (lambda c: c[1]['view2'].__setitem__((0, 0), np.inf), "center 1, view 'view2': contains inf"),
    'constant view': (
        lambda c: c[0].__setitem__('view2', np.ones_like(c[0]['view2'])),
        "center 0, view 'view2': every feature is constant",
    ),
    'mismatched view width': (
        lambda c: c[2].__setitem__('view3', c[2]['view3'][:, :4]),
        "view 'view3' has 10 features at one center and 4",
    ),
    'views of different lengths': (
        lambda c: c[0].__setitem__('view1', c[0]['view1'][:10]),
        'different numbers of subjects',
    ),
    'empty view': (lambda c: c[0].__setitem__('view1', c[0]['view1'][:0]), 'no subjects|different numbers'),
    'text view': (lambda c: c[0].__setitem__('view1', np.full(c[0]['view1'].shape, 'x')), 'numeric'),
    'scale 1e300': (lambda c: [v.__imul__(1e300) for cc in c for v in cc.values()], 'overflow|inf|too large|finite'),
}


@pytest.mark.parametrize('name', list(MV_CASES))
def test_fed_mvppca(name):
    edit, msg = MV_CASES[name]
    expect(lambda c: FedMVPPCA(n_components=2, n_rounds=2, rng=0).fit(c), (_edit(edit),), msg)


@pytest.mark.parametrize(
    'kw,msg',
    [
        ({'n_components': 0}, 'n_components'),
        ({'n_rounds': 0}, 'n_rounds'),
        ({'n_components': 100}, 'n_components|features'),
    ],
)
def test_fed_mvppca_parameters(kw, msg):
    expect(lambda c: FedMVPPCA(rng=0, **kw).fit(c), (_centers(),), msg)


# ------------------------------------------------------------------------------------------------ data
@pytest.mark.parametrize(
    'f,args,msg',
    [
        ('load_adult', ('validation',), 'split'),
        ('load_libsvm', ('higgs',), 'unknown LIBSVM'),
        ('load_bank', ('small',), 'variant'),
        ('fetch_file', ('nope.csv',), 'unknown data file'),
        ('download_datasets', ('higgs',), 'unknown dataset'),
        ('make_skewed_features', (0, 3), 'positive'),
        ('make_skewed_features', (10, -1), 'positive'),
    ],
)
def test_data_functions(f, args, msg):
    from fedgauss import data

    exc = (ValueError, KeyError)
    with pytest.raises(exc, match=msg):
        getattr(data, f)(*args)


# ------------------------------------------------------------------------------------------------ command line
_cli = run_cli  # the command in-process: (exit code, stdout, stderr)


def _csv(tmp_path, df, name='in.csv', **kw):
    p = tmp_path / name
    df.to_csv(p, index=False, **kw)
    return str(p)


CLI_CASES = {
    'missing file': (lambda t: ['yj', str(t / 'nope.csv'), '--clients', '2'], 'no such file'),
    'a directory': (lambda t: ['yj', str(t), '--clients', '2'], 'is a directory'),
    'a binary file': (
        lambda t: ['yj', (t / 'b.csv').write_bytes(bytes(range(256))) and str(t / 'b.csv'), '--clients', '2'],
        'binary',
    ),
    'an empty file': (lambda t: ['yj', (t / 'e.csv').write_text('') or str(t / 'e.csv'), '--clients', '2'], 'is empty'),
    'header only': (
        lambda t: ['yj', (t / 'h.csv').write_text('a,b\n') and str(t / 'h.csv'), '--clients', '2'],
        'no data rows',
    ),
    'output folder missing': (
        lambda t: ['yj', _csv(t, V['base']), '--clients', '2', '--out', str(t / 'x' / 'o.csv')],
        'does not exist',
    ),
    'output is the input': (
        lambda t: ['yj', _csv(t, V['base']), '--clients', '2', '--out', str(t / 'in.csv')],
        'overwrite the input',
    ),
    'figure not png': (
        lambda t: ['yj', _csv(t, V['base']), '--clients', '2', '--figure', str(t / 'f.pdf')],
        'must be a .png',
    ),
    'nan values': (lambda t: ['yj', _csv(t, V['nan']), '--clients', '2'], 'missing values'),
    'inf values': (lambda t: ['yj', _csv(t, V['+inf']), '--clients', '2'], 'infinite values'),
    'text column': (lambda t: ['yj', _csv(t, V['object (text)']), '--clients', '2'], 'non-numeric column'),
    'unknown column': (
        lambda t: ['yj', _csv(t, V['base']), '--clients', '2', '--columns', 'a,zz'],
        "unknown column\\(s\\) 'zz'",
    ),
    'unknown client column': (
        lambda t: ['yj', _csv(t, V['base']), '--client-column', 'site'],
        "unknown column\\(s\\) 'site'",
    ),
    'too many clients': (lambda t: ['yj', _csv(t, V['base']), '--clients', '99'], 'would have no rows'),
    'zero clients': (lambda t: ['yj', _csv(t, V['base']), '--clients', '0'], 'positive integer'),
    'negative t-max': (lambda t: ['yj', _csv(t, V['base']), '--clients', '2', '--t-max', '-1'], 't-max'),
    'many columns listed': (
        lambda t: [
            'yj',
            _csv(t, pd.DataFrame(np.ones((3, 20)), columns=[f'c{j}' for j in range(20)])),
            '--clients',
            '2',
            '--exclude',
            ','.join(f'z{j}' for j in range(9)),
        ],
        '… and 4 more',
    ),
    # 'tiny scale' now fits (issue 31): tests/test_bad_input_yj.py
    'demo out folder missing': (lambda t: ['demo', '--out', str(t / 'x' / 'd.png'), '--no-progress'], 'does not exist'),
    'demo zero clients': (lambda t: ['demo', '--clients', '0'], 'at least 1'),
    'datasets unknown': (lambda t: ['datasets', '--download', 'higgs', '--data-home', str(t)], 'unknown dataset'),
}


@pytest.mark.parametrize('name', list(CLI_CASES))
def test_cli(tmp_path, name):
    argv, msg = CLI_CASES[name]
    code, out, err = _cli(*argv(tmp_path))
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert lines and re.search(msg, lines[-1]), err
    assert lines[-1].startswith(f'fedgauss {argv(tmp_path)[0]}: error:') and 'Traceback' not in err
    assert all(l.startswith('fedgauss ') for l in lines)  # warnings, if any, are one line each
    assert not list(tmp_path.glob('*.yj.csv'))  # nothing written
