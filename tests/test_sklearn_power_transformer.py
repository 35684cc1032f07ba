"""scikit-learn's own PowerTransformer tests (sklearn/preprocessing/tests/test_data.py, version 1.7), pointed at
fedgauss's `YeoJohnsonTransformer` and `FedYeoJohnsonTransformer` (two clients holding the rows).

Only the Yeo-Johnson cases apply (no Box-Cox here). Two deliberate differences, each tested for what it is:
- `inverse_transform` of a value outside the range of the transform returns +-inf (the limit), not NaN, with one
  `YeoJohnsonWarning` (a `UserWarning`), the same whether or not the transform standardizes;
- the optimisation test checks lambda against the exact MLE as well as scikit-learn's tolerance.
"""

import re, warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_almost_equal, assert_array_almost_equal, assert_array_equal
from sklearn import datasets
from sklearn.exceptions import NotFittedError
from sklearn.utils import shuffle

from fedgauss.securefedyj import FedYeoJohnsonTransformer
from fedgauss.yeojohnson import YeoJohnsonTransformer


@pytest.fixture(autouse=True)
def same_searches_as_recorded(monkeypatch, request):
    "Every ExpYJ search of the test has the lambdas, path and signs recorded before the sums became BLAS products."
    from yj_paths import check_paths

    yield from check_paths(monkeypatch, request.module)


iris = datasets.load_iris()
rng = np.random.RandomState(0)
n_features, n_samples = 30, 1000
offsets = rng.uniform(-1, 1, size=n_features)
scales = rng.uniform(1, 10, size=n_features)
X_2d = rng.randn(n_samples, n_features) * scales + offsets
X_1col = X_2d[:, 0].reshape(n_samples, 1)


class TwoClients(FedYeoJohnsonTransformer):
    "FedYeoJohnsonTransformer with PowerTransformer's fit signature: the rows of X split between two clients."

    def fit(self, X, y=None):
        X = np.asarray(X) if not isinstance(X, pd.DataFrame) else X
        h = max(len(X) // 2, 1)
        return super().fit([X[:h], X[h:]] if len(X) > 1 else [X])


TRANSFORMERS = [YeoJohnsonTransformer, lambda **kw: TwoClients(rng=0, **kw)]
IDS = ['pooled', 'federated']


@pytest.fixture(params=TRANSFORMERS, ids=IDS)
def PT(request):
    return request.param


def test_power_transformer_notfitted(PT):
    pt = PT()
    with pytest.raises(NotFittedError):
        pt.transform(X_1col)
    with pytest.raises(NotFittedError):
        pt.inverse_transform(X_1col)


@pytest.mark.parametrize('standardize', [True, False])
@pytest.mark.parametrize('X', [X_1col, X_2d], ids=['1col', '2d'])
def test_power_transformer_inverse(PT, standardize, X):
    pt = PT(standardize=standardize)
    assert_almost_equal(X, pt.inverse_transform(pt.fit_transform(X)))


@pytest.mark.parametrize(
    'X', [X_2d, np.abs(X_2d), -np.abs(X_2d), np.zeros(X_2d.shape)], ids=['mixed', 'pos', 'neg', 'zeros']
)
def test_power_transformer_yeojohnson_any_input(PT, X):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # the all-zero input warns: constant features
        Z = PT().fit_transform(X)
    assert np.isfinite(Z).all()


def test_power_transformer_shape_exception(PT):
    pt = PT().fit(np.abs(X_2d))
    msg = r"X has \d+ features, but \w+ is expecting \d+ features"
    with pytest.raises(ValueError, match=msg):
        pt.transform(np.abs(X_2d)[:, 0:1])
    with pytest.raises(ValueError, match=msg):
        pt.inverse_transform(np.abs(X_2d)[:, 0:1])


def test_power_transformer_lambda_one(PT):
    pt = PT(standardize=False).fit(np.abs(X_2d)[:, 0:1])
    pt.lambdas_ = np.array([1])
    assert_array_almost_equal(pt.transform(np.abs(X_2d)[:, 0:1]), np.abs(X_2d)[:, 0:1])


@pytest.mark.parametrize('lmbda', [0.1, 0.5, 1.0])
def test_optimization_power_transformer(PT, lmbda):
    r = np.random.RandomState(0)
    X = r.normal(loc=0, scale=1, size=(20000, 1))
    pt = PT(standardize=False).fit(np.abs(X))
    pt.lambdas_ = [lmbda]
    X_inv = pt.inverse_transform(X)
    pt = PT(standardize=False)
    X_inv_trans = pt.fit_transform(X_inv)
    assert_almost_equal(0, np.linalg.norm(X - X_inv_trans) / 20000, decimal=2)
    assert_almost_equal(0, X_inv_trans.mean(), decimal=1)
    assert_almost_equal(1, X_inv_trans.std(), decimal=1)


def test_yeo_johnson_darwin_example(PT):
    X = np.array([6.1, -8.4, 1.0, 2.0, 0.7, 2.9, 3.5, 5.1, 1.8, 3.6, 7.0, 3.0, 9.3, 7.5, -6.0]).reshape(-1, 1)
    assert np.allclose(PT().fit(X).lambdas_, 1.305, atol=1e-3)


def test_power_transformer_nans(PT):
    X = np.abs(X_1col)
    lmbda_no_nans = PT().fit(X).lambdas_[0]
    Xn = shuffle(np.concatenate([X, np.full_like(X, np.nan)]), random_state=0)
    pt = PT().fit(Xn)
    assert_almost_equal(lmbda_no_nans, pt.lambdas_[0], decimal=5)
    assert_array_equal(np.isnan(pt.transform(Xn)), np.isnan(Xn))


@pytest.mark.parametrize('standardize', [True, False])
def test_power_transformer_fit_transform(PT, standardize):
    pt = PT(standardize=standardize)
    assert_array_almost_equal(pt.fit(X_1col).transform(X_1col), pt.fit_transform(X_1col))


@pytest.mark.parametrize('standardize', [True, False])
def test_power_transformer_copy_True(PT, standardize):
    X = X_1col.copy()
    X_original = X.copy()
    pt = PT(standardize=standardize, copy=True)
    pt.fit(X)
    assert_array_almost_equal(X, X_original)
    assert pt.transform(X) is not X
    X_trans = pt.fit_transform(X)
    assert_array_almost_equal(X, X_original) and X_trans is not X
    assert pt.inverse_transform(X_trans) is not X_trans


@pytest.mark.parametrize('standardize', [True, False])
def test_power_transformer_copy_False(PT, standardize):
    X = X_1col.copy()
    X_original = X.copy()
    pt = PT(standardize=standardize, copy=False)
    pt.fit(X)
    assert_array_almost_equal(X, X_original)  # fit does not change X
    assert pt.transform(X) is X
    X = X_original.copy()
    X_trans = pt.fit_transform(X)
    assert X_trans is X
    assert pt.inverse_transform(X_trans) is X_trans


def test_power_transformer_significantly_non_gaussian(PT):
    X = 1e6 * np.array([0.6, 2.0, 3.0, 4.0] * 4 + [11, 12, 12, 16, 17, 20, 85, 90], dtype=np.float64).reshape(-1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter('error', RuntimeWarning)
        X_trans = PT().fit_transform(X)
    assert not np.any(np.isnan(X_trans))
    assert X_trans.mean() == pytest.approx(0.0) and X_trans.std() == pytest.approx(1.0)
    assert X_trans.min() > -2 and X_trans.max() < 2


def test_one_to_one_features(PT):
    tr = PT().fit(iris.data)
    assert_array_equal(tr.get_feature_names_out(iris.feature_names), iris.feature_names)


def test_one_to_one_features_pandas(PT):
    df = pd.DataFrame(iris.data, columns=iris.feature_names)
    tr = PT().fit(df)
    assert_array_equal(tr.get_feature_names_out(), iris.feature_names)
    assert_array_equal(tr.get_feature_names_out(iris.feature_names), iris.feature_names)
    with pytest.raises(ValueError, match=re.escape('input_features is not equal to feature_names_in_')):
        tr.get_feature_names_out(list('abcd'))


@pytest.mark.parametrize('standardize', [True, False])
def test_power_transformer_constant_feature(PT, standardize):
    X = np.array([[-2, 0, 2], [-2, 0, 2], [-2, 0, 2]], dtype=float)
    with pytest.warns(UserWarning, match='constant'):
        pt = PT(standardize=standardize).fit(X)
    assert_allclose(pt.lambdas_, [1, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        Xft = pt.fit_transform(X)
    for Xt_ in [Xft, pt.transform(X)]:
        if standardize:
            assert_allclose(Xt_, np.zeros_like(X), atol=1e-14)
        else:
            assert_allclose(Xt_, X)


@pytest.mark.parametrize('standardize', [True, False])
def test_yeo_johnson_inverse_transform_warning(PT, standardize):
    # the same data as scikit-learn's test; outside the range of the transform the inverse is +-inf, with one
    # warning, whether or not the transform standardizes (scikit-learn: NaN; fedgauss before: inf silently if standardized)
    trans = PT(standardize=standardize).fit(np.array([1, 1, 1e10]).reshape(-1, 1))
    assert trans.lambdas_[0] < 0
    psi = np.array([2 / abs(trans.lambdas_[0]) if not standardize else 1e3]).reshape(-1, 1)  # beyond -1/lambda
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        x_inv = trans.inverse_transform(psi).item()
    assert np.isposinf(x_inv)
    assert [str(x.message) for x in w] == [
        '1 value(s) lie outside the range of the fitted transform: their inverse is +-inf'
    ]


def test_power_transformer_no_warnings(PT):
    # scikit-learn asserts no warning at all. Here the exact MLE (mpmath: lambda* = 99.26) would make Psi overflow
    # ymax = 1e150, so lambda is bounded, and that -- and only that -- is said, once; no numerical warning.
    from fedgauss.testing import mp_yj_mle

    x = np.array([2003.0, 1950.0, 1997.0, 2000.0, 2009.0, 2009.0, 1980.0, 1999.0, 2007.0, 1991.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        pt = PT(standardize=True)
        Z = pt.fit_transform(x.reshape(-1, 1))
    msgs = [str(w.message) for w in caught]
    assert len(msgs) == 1 and 'lambda bounded to' in msgs[0] and caught[0].category.__name__ == 'YeoJohnsonWarning', (
        msgs
    )
    assert mp_yj_mle(x, guess=90.0) > pt.lambdas_[0] and np.isfinite(Z).all()


def test_inverse_of_an_array_after_fitting_a_frame_does_not_warn(PT):
    # transformed data often arrive as an array from the next step of a pipeline
    df = pd.DataFrame(iris.data, columns=iris.feature_names)
    tr = PT().fit(df)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        back = tr.inverse_transform(np.asarray(tr.transform(df)))
    assert_allclose(back, iris.data, rtol=1e-10)
