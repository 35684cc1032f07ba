"""ExpYJ (fedgauss.yeojohnson) against independent mpmath references, scikit-learn's estimator checks,
federated additivity of the sums, the fixed-point bounds, and a catalogue of bad inputs."""

import warnings

import mpmath
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import NotFittedError, SkipTestWarning
from sklearn.preprocessing import PowerTransformer
from sklearn.utils.estimator_checks import check_estimator

from fedgauss.data import load_breast_cancer
from fedgauss.federation import iid_split
from fedgauss.yeojohnson import (
    YMAX,
    ExpSearchState,
    YeoJohnsonTransformer,
    YeoJohnsonWarning,
    YJAnchors,
    YJData,
    YJSums,
    exp_update,
    exp_yj,
    exp_yj_search,
    yeo_johnson,
    yeo_johnson_dlambda,
    yeo_johnson_inverse,
    yj_dloglik,
    yj_dloglik_sign,
    yj_frame,
    yj_log_likelihood,
    yj_sign_from_sums,
    yj_sum_bounds,
    yj_sums,
)
from fedgauss.testing import MPYeoJohnson, adversarial_inputs, mp_overflow_bound, mp_psi, mp_yj_mle, overflow_inputs

RTOL = 1e-6  # the accuracy claim: relative error to the maximum-likelihood lambda


@pytest.fixture(autouse=True)
def same_searches_as_recorded(monkeypatch, request):
    "Every ExpYJ search of the test has the lambdas, path and signs recorded before the sums became BLAS products."
    from yj_paths import check_paths

    yield from check_paths(monkeypatch, request.module)


@pytest.fixture(scope='module')
def bc():
    X, _ = load_breast_cancer()
    return X


@pytest.fixture(scope='module')
def bc_reference(bc):
    "mpmath maximum-likelihood lambda of every breast-cancer feature (computed here, ~7 s)."
    X = bc.to_numpy()
    guess = (
        PowerTransformer().fit(X).lambdas_
    )  # a peer's estimate as the starting guess: the reference does not start from ours
    return np.array([mp_yj_mle(X[:, j], guess[j]) for j in range(X.shape[1])])


def rel(a, b):
    return np.abs(np.asarray(a) - b) / np.abs(b)


# ------------------------------------------------------------------ the transform
@pytest.mark.parametrize('lam', [-3.0, -0.5, 0.0, 1e-12, 0.7, 1.0, 2.0, 2 - 1e-12, 4.5])
def test_transform_matches_mpmath(lam):
    xs = np.r_[-1e3, -7.5, -1, -1e-9, 0, 1e-12, 0.3, 2, 1e4]
    ours = yeo_johnson(xs, lam)
    ref = np.array([mp_psi(v, lam) for v in xs])
    np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=0)
    ok = (
        np.abs(np.where(xs >= 0, lam, 2 - lam) * np.log1p(np.abs(xs))) < 10
    )  # not saturated: the inverse is well conditioned
    np.testing.assert_allclose(yeo_johnson_inverse(ours, lam)[ok], xs[ok], rtol=1e-12, atol=1e-300)


def test_dlambda_matches_mpmath_derivative():
    for lam in [-2.5, 0.0, 1e-9, 0.8, 2.0, 3.3]:
        for x in [-40.0, -1.5, -1e-7, 0.0, 1e-7, 0.6, 25.0]:
            with mpmath.workdps(80):
                ref = float(
                    mpmath.diff(
                        lambda L: (
                            (mpmath.power(1 + mpmath.mpf(x), L) - 1) / L
                            if x >= 0
                            else -(mpmath.power(1 - mpmath.mpf(x), 2 - L) - 1) / (2 - L)
                        ),
                        lam + mpmath.mpf('1e-25'),
                    )
                )
            got = float(yeo_johnson_dlambda(x, lam))
            assert abs(got - ref) <= 1e-12 * max(abs(ref), 1e-300), (lam, x, got, ref)


# ------------------------------------------------------------------ the likelihood and its derivative
@pytest.mark.parametrize('name', ['mean area', 'worst texture', 'fractal dimension error'])
def test_dloglik_and_loglik_match_mpmath(bc, name):
    x = bc[name].to_numpy()
    mp = MPYeoJohnson(x)
    for lam in [-60.0, -8.0, -0.3, 0.0, 1e-6, 1.5, 20.0, 45.0]:
        ref = float(mp.dloglik(lam))
        got = yj_dloglik(x, lam)
        assert abs(got - ref) <= 1e-9 * max(1.0, abs(ref)), (lam, got, ref)
        assert yj_dloglik_sign(x, lam) == np.sign(ref)
        assert abs(yj_log_likelihood(x, lam) - float(mp.loglik(lam))) <= 1e-9 * abs(float(mp.loglik(lam)))


@pytest.mark.parametrize('name', list(adversarial_inputs()))
def test_dloglik_matches_mpmath_on_adversarial_inputs(name):
    x = adversarial_inputs()[name]
    mp = MPYeoJohnson(x)
    for lam in [-20.0, -1.0, 0.0, 0.5, 1.9, 2.0, 3.0, 30.0]:
        ref = float(mp.dloglik(lam))
        got = yj_dloglik(x, lam)
        assert abs(got - ref) <= 1e-8 * max(1.0, abs(ref)), (lam, got, ref)


# ------------------------------------------------------------------ the accuracy claims
def test_breast_cancer_lambdas_match_mpmath(bc, bc_reference):
    ours = exp_yj(bc)
    err = rel(ours, bc_reference)
    assert err.max() <= RTOL
    assert err.max() <= 1e-10, err.max()  # what ExpYJ actually achieves (float64 resolution of the search)


@pytest.mark.parametrize('name', list(adversarial_inputs()))
def test_adversarial_lambdas_match_mpmath(name):
    x = adversarial_inputs()[name]
    with warnings.catch_warnings():
        warnings.simplefilter('error', YeoJohnsonWarning)  # representable maximizer: no bound, no warning
        ours = exp_yj(x)
    ref = mp_yj_mle(
        x, 0.0 if not np.isfinite(ours) else ours * (1 + 1e-3)
    )  # start off ours: the bracket search must find the root
    assert rel(ours, ref) <= RTOL
    assert rel(ours, ref) <= 1e-10


@pytest.mark.parametrize('case', overflow_inputs(), ids=lambda c: c[0])
def test_overflow_is_bounded_with_a_warning(case):
    _, x, side = case
    with pytest.warns(YeoJohnsonWarning, match='bounded'):
        res = exp_yj(x, full_output=True)
    lam = res.lambdas[0]
    bound = mp_overflow_bound(np.abs(x).max(), YMAX)
    bound = bound if side > 0 else 2 - bound
    assert rel(lam, bound) <= 1e-12
    # the unbounded maximizer (mpmath) lies beyond the bound: Psi there would exceed YMAX
    star = mp_yj_mle(x, bound * (1 + 1e-3 * side))
    assert (star - bound) * side > 0 and abs(yeo_johnson(x, star)).max() > YMAX
    assert res.path[-1, 0] == lam and res.converged[0]  # the search stayed within the bound and settled there
    out = yeo_johnson(x, lam)
    assert np.isfinite(out).all() and np.abs(out).max() <= YMAX * (1 + 1e-9)
    with pytest.warns(YeoJohnsonWarning):
        z = YeoJohnsonTransformer().fit_transform(x[:, None])
    assert np.isfinite(z).all()


def test_values_beyond_ymax_on_both_sides_warn_and_stay_finite():
    x = np.r_[np.random.default_rng(0).normal(size=20), 1e200, -1e180]
    with pytest.warns(YeoJohnsonWarning, match='minimizes max'):
        res = exp_yj(x, full_output=True)
    psi = yeo_johnson(x, res.lambdas[0])
    assert np.isfinite(psi).all() and np.isclose(np.log(psi.max()), np.log(-psi.min()), rtol=1e-9)


def test_no_silent_inf_or_nan_on_extreme_data():
    r = np.random.default_rng(3)
    for x in [
        np.r_[1e-300, 2e-300, 5e-300],
        np.r_[r.normal(size=50), 1e308],
        -np.r_[1.7e308, 1.0, 2.0],
        np.r_[0.0, 1e-320, 1.0],
    ]:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', YeoJohnsonWarning)
            lam = exp_yj(x)
            z = YeoJohnsonTransformer().fit_transform(x[:, None])
        assert np.isfinite(lam) and np.isfinite(yeo_johnson(x, lam)).all() and np.isfinite(z).all(), x


# ------------------------------------------------------------------ federated additivity
def _clear(path, lam):
    "steps whose lambda_t is clearly away from the maximizer (where rounding cannot flip the sign)"
    return np.abs(path[:-1] - lam) / np.maximum(np.abs(lam), 1e-300) > 1e-9


@pytest.mark.parametrize('K', [2, 5, 10])
def test_pooled_equivalence_across_splits(bc, K):
    X = bc.to_numpy()
    pooled = exp_yj(X, full_output=True)
    rng = np.random.default_rng(K)
    splits = {
        'iid': [Xk for Xk, _ in iid_split(X, None, K, rng=rng)],
        'unequal': np.split(
            X[rng.permutation(len(X))], np.sort(rng.choice(np.arange(1, len(X)), K - 1, replace=False))
        ),
        'single rows': [X[i : i + 1] for i in range(K - 1)] + [X[K - 1 :]],
    }
    for how, parts in splits.items():
        anchors = YJAnchors.from_data(parts[0]).merge(*(YJAnchors.from_data(p) for p in parts[1:]))
        assert anchors == YJAnchors.from_data(X)
        holders = [YJData(p, anchors) for p in parts]
        for lam in [0.0, -0.4, 2.5]:
            added = sum(h.sums(lam) for h in holders)
            ref = yj_sums(X, lam)
            for k in YJSums.STATS:
                np.testing.assert_allclose(
                    getattr(added, k), getattr(ref, k), rtol=1e-11, atol=1e-11 * np.abs(getattr(ref, k)).max()
                )
        fed = exp_yj_search(holders)
        c = _clear(pooled.path, pooled.lambdas)
        np.testing.assert_array_equal(fed.signs[c], pooled.signs[c], err_msg=how)
        np.testing.assert_allclose(fed.lambdas, pooled.lambdas, rtol=1e-10, err_msg=how)
        np.testing.assert_allclose(fed.mean, pooled.mean, rtol=1e-9, err_msg=how)
        np.testing.assert_allclose(fed.var, pooled.var, rtol=1e-9, err_msg=how)


def test_mixed_and_negative_features_split():
    r = np.random.default_rng(11)
    X = np.c_[
        r.normal(size=800) * 3 + 1,
        -r.lognormal(size=800),
        np.r_[np.zeros(100), r.exponential(size=700)],
        r.standard_t(3, size=800),
        np.r_[-r.exponential(size=400), r.gamma(0.5, size=400)],
    ]
    X[r.random(X.shape) < 0.05] = np.nan
    pooled = exp_yj(X, full_output=True)
    parts = np.array_split(X, [3, 50, 400])
    anchors = YJAnchors.from_data(parts[0]).merge(*(YJAnchors.from_data(p) for p in parts[1:]))
    fed = exp_yj_search([YJData(p, anchors) for p in parts])
    c = _clear(pooled.path, pooled.lambdas)
    np.testing.assert_array_equal(fed.signs[c], pooled.signs[c])
    np.testing.assert_allclose(fed.lambdas, pooled.lambdas, rtol=1e-10)
    for j in range(X.shape[1]):
        x = X[:, j]
        x = x[~np.isnan(x)]
        assert rel(pooled.lambdas[j], mp_yj_mle(x, pooled.lambdas[j])) <= 1e-10


def test_acceleration_does_not_change_the_fit(bc):
    a = exp_yj(bc, full_output=True)
    b = exp_yj(bc, full_output=True, accelerate=False)
    c = _clear(a.path, a.lambdas)
    np.testing.assert_array_equal(a.signs[c], b.signs[c])
    np.testing.assert_allclose(a.lambdas, b.lambdas, rtol=1e-11)


def test_coarser_public_anchors_give_the_same_lambda(bc):
    "Any anchors below the smallest / above the largest |x| are valid (a federation may publish rounded extremes)."
    X = bc.to_numpy()
    A = YJAnchors.from_data(X)
    lo = np.where(A.pos_lo > 0, 2.0 ** np.floor(np.log2(np.where(A.pos_lo > 0, A.pos_lo, 1.0))), 0.0)
    coarse = YJAnchors(lo, 2.0 ** np.ceil(np.log2(A.pos_hi)), A.neg_lo, A.neg_hi)  # rounded to powers of two
    assert coarse.covers(A).all()
    a = exp_yj(X)
    b = exp_yj_search([YJData(X, coarse)]).lambdas
    np.testing.assert_allclose(b, a, rtol=1e-9)
    for lam in [-3.0, 0.2, 4.0]:  # and the derivative has the same sign in both frames
        np.testing.assert_array_equal(yj_dloglik_sign_from(X, lam, coarse), yj_dloglik_sign_from(X, lam, A))


def yj_dloglik_sign_from(X, lam, anchors):
    return yj_sign_from_sums(YJData(X, anchors).sums(lam))


# ------------------------------------------------------------------ fixed-point bounds
def test_sum_bounds_hold(bc):
    r = np.random.default_rng(5)
    X = np.c_[
        bc.to_numpy()[:, :6],
        r.normal(size=569) * 4,
        -r.lognormal(size=569),
        np.r_[np.zeros(69), r.exponential(size=500)],
    ]
    A = YJAnchors.from_data(X)
    for lam in np.r_[-80.0, -5.0, -0.2, 0.0, 1e-5, 0.7, 2.0, 2.5, 12.0, 60.0, r.uniform(-10, 10, 10)]:
        S, B = yj_sums(X, lam), yj_sum_bounds(len(X), lam, A)
        for k in ('s_phi', 's_psi', 's_psi2', 's_dpsi', 's_psi_dpsi'):
            assert (np.abs(getattr(S, k)) <= B[k] * (1 + 1e-12) + 1e-300).all(), (lam, k)
        D = S.n * S.s_psi2 - S.s_psi**2
        C = S.n * S.s_psi_dpsi - S.s_psi * S.s_dpsi
        assert (np.abs(D) <= B['D'] * (1 + 1e-12)).all() and (np.abs(C) <= B['C'] * (1 + 1e-12)).all()
        assert (np.abs(S.s_phi * D - S.n * C) <= B['sign_expr'] * (1 + 1e-12)).all()
        assert np.isfinite(
            np.c_[[B[k] for k in ('s_phi', 's_psi', 's_psi2', 's_dpsi', 's_psi_dpsi', 'sign_expr')]]
        ).all()


def test_frames_are_public_functions_of_lambda_and_anchors(bc):
    X = bc.to_numpy()
    A = YJAnchors.from_data(X)
    for lam in [-2.0, 0.0, 0.3]:
        assert yj_sums(X[:100], lam, A).frame == yj_frame(lam, A) == yj_sums(X[100:], lam, A).frame
    with pytest.raises(ValueError, match='different lambdas'):
        yj_sums(X, 0.1) + yj_sums(X, 0.2)


# ------------------------------------------------------------------ the search
def test_exp_update_is_algorithm_2():
    lam, lo, hi = exp_update(
        [0, 0, 3, -5], [-np.inf, -np.inf, 2, -np.inf], [np.inf, np.inf, np.inf, -4], [1, -1, -1, 1]
    )
    np.testing.assert_array_equal(lam, [1, -1, 2.5, -4.5])
    np.testing.assert_array_equal(lo, [0, -np.inf, 2, -5])
    np.testing.assert_array_equal(hi, [np.inf, 0, 3, -4])
    s = ExpSearchState.start(1)
    for _ in range(5):
        s = s.update([1])
    assert s.lmbda[0] == 16 and s.t == 5  # doubling phase: 0, 1, 2, 4, 8, 16
    s = s.update([-1])
    assert s.lmbda[0] == 12 and (s.lo[0], s.hi[0]) == (8, 16)


def test_t_max_is_the_number_of_revealed_signs(bc):
    for t in (0, 1, 7, 30):
        r = exp_yj(bc, t_max=t, full_output=True)
        assert r.signs.shape == (t, 30) and r.path.shape == (t + 1, 30)


# ------------------------------------------------------------------ the transformer
def test_check_estimator():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        warnings.simplefilter('ignore', SkipTestWarning)
        check_estimator(YeoJohnsonTransformer())


def test_transformer_pandas_nan_and_roundtrip(bc):
    t = YeoJohnsonTransformer().set_output(transform='pandas')
    Z = t.fit_transform(bc)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns) == list(bc.columns) and (Z.index == bc.index).all()
    np.testing.assert_allclose(Z.mean(), 0, atol=1e-12)
    np.testing.assert_allclose(Z.std(ddof=0), 1, rtol=1e-12)
    np.testing.assert_allclose(
        t.inverse_transform(Z), bc.to_numpy(), rtol=1e-9, atol=1e-12
    )  # exact zeros come back as +-1e-17
    pt = PowerTransformer().fit(bc)
    np.testing.assert_allclose(Z.to_numpy(), pt.transform(bc), atol=2e-5)  # scikit-learn is within ~1e-7 in lambda here
    Xn = bc.iloc[:, :4].copy()
    Xn.iloc[::5, 2] = np.nan
    tn = YeoJohnsonTransformer().fit(Xn)
    assert np.isclose(tn.lambdas_[2], exp_yj(Xn.iloc[:, 2].dropna()), rtol=1e-12)
    np.testing.assert_array_equal(np.isnan(tn.transform(Xn)), Xn.isna().to_numpy())
    raw = YeoJohnsonTransformer(standardize=False).fit(bc)
    np.testing.assert_allclose(raw.transform(bc), yeo_johnson(bc.to_numpy(), raw.lambdas_), rtol=1e-15)
    np.testing.assert_allclose(raw.inverse_transform(raw.transform(bc)), bc.to_numpy(), rtol=1e-9)


def test_transformer_standardizes_exactly_where_psi_collapses():
    x = np.r_[np.full(326, 0.48), np.full(10, 1.0)][:, None]
    z = YeoJohnsonTransformer().fit_transform(x)
    np.testing.assert_allclose(np.unique(z), [-np.sqrt(10 / 326), np.sqrt(326 / 10)], rtol=1e-12)
    assert np.unique(yeo_johnson(x, exp_yj(x[:, 0]))).size == 1  # while the raw Psi values are all one float


# ------------------------------------------------------------------ bad input
BAD = {
    'inf': (lambda X: X.assign(**{'mean area': np.r_[np.inf, X['mean area'].to_numpy()[1:]]}), "'mean area'"),
    '-inf': (
        lambda X: X.assign(**{'mean smoothness': -np.r_[np.inf, X['mean smoothness'].to_numpy()[1:]]}),
        "'mean smoothness'",
    ),
    'non-numeric column': (lambda X: X.assign(hospital='A'), "'hospital'"),
    'all-NaN column': (lambda X: X.assign(empty=np.nan), "'empty' has no finite value"),
    'no rows': (lambda X: X.iloc[:0], 'sample'),
    'no columns': (lambda X: X.iloc[:, :0], 'feature'),
}


@pytest.mark.parametrize('case', list(BAD))
def test_bad_input_raises_naming_the_problem(bc, case):
    make, msg = BAD[case]
    X = make(bc.iloc[:, :5].copy())
    before = X.copy()
    with pytest.raises(ValueError, match=msg):
        YeoJohnsonTransformer().fit(X)
    pd.testing.assert_frame_equal(X, before)
    if case not in ('no rows', 'no columns'):
        with pytest.raises(ValueError, match=msg.split(' has')[0] if 'NaN' in case else msg):
            exp_yj(X)


def test_more_bad_input(bc):
    X = bc.iloc[:, :3]
    with pytest.raises(ValueError, match='no rows'):
        exp_yj(np.empty((0, 3)))
    with pytest.raises(ValueError, match='no columns'):
        exp_yj(np.empty((5, 0)))
    with pytest.raises(ValueError, match='dimensions'):
        exp_yj(np.ones((2, 2, 2)))
    for t in (-1, 2.5, True, '10'):
        with pytest.raises(ValueError, match='t_max'):
            exp_yj(X, t_max=t)
    for y in (0.5, -1, np.inf, np.nan):
        with pytest.raises(ValueError, match='ymax'):
            exp_yj(X, ymax=y)
    with pytest.raises(ValueError, match='NaN'):
        yeo_johnson([1.0], np.nan)
    with pytest.raises(NotFittedError):
        YeoJohnsonTransformer().transform(X)
    t = YeoJohnsonTransformer().fit(X)
    with pytest.raises(ValueError, match='feature'):
        t.transform(bc.iloc[:, :4])
    with pytest.raises(ValueError, match='inf'):
        t.transform(X.assign(**{'mean radius': np.inf}))
    with pytest.raises(ValueError, match='outside the agreed anchors'):
        YJData(X.to_numpy() * 10, YJAnchors.from_data(X))
    with pytest.raises(ValueError, match='same'):
        exp_yj_search([YJData(X.to_numpy()[:100]), YJData(X.to_numpy()[100:])])
    with pytest.raises(ValueError, match='shape'):
        ExpSearchState.start(3).update([1, 1])


def test_constant_column_gets_lambda_one_with_a_warning(bc):
    X = bc.iloc[:, :2].assign(const=7.0, negconst=-2.0)
    with pytest.warns(YeoJohnsonWarning, match="'const', 'negconst'"):
        t = YeoJohnsonTransformer().fit(X)
    np.testing.assert_array_equal(t.lambdas_[2:], 1.0)
    Z = t.transform(X)
    assert (Z[:, 2:] == 0).all() and np.isfinite(Z).all()
    np.testing.assert_array_equal(t.inverse_transform(Z)[:, 2:], X.to_numpy()[:, 2:])


def test_caller_data_untouched_and_readonly_input_works(bc):
    X = bc.to_numpy().copy()
    X.setflags(write=False)
    keep = X.copy()
    t = YeoJohnsonTransformer().fit(X)
    t.transform(X)
    exp_yj(X)
    YJData(X).sums(0.3)
    np.testing.assert_array_equal(X, keep)


# ------------------------------------------------------------------ properties
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    x=arrays(np.float64, st.integers(3, 40), elements=finite),
    cut=st.integers(1, 39),
    lam=st.floats(-6, 8, allow_nan=False),
)
def test_property_sums_add_and_sign_matches_finite_difference(x, cut, lam):
    if np.unique(x).size < 2:
        return
    cut = min(cut, len(x) - 1)
    A = YJAnchors.from_data(x)
    S = yj_sums(x, lam)
    P = yj_sums(x[:cut], lam, A) + yj_sums(x[cut:], lam, A)
    for k in YJSums.STATS:
        np.testing.assert_allclose(
            getattr(P, k), getattr(S, k), rtol=1e-9, atol=1e-9 * np.abs(getattr(S, k)).max() + 1e-300
        )
    d = yj_dloglik(x, lam)
    h = 1e-6 * max(1, abs(lam))
    fd = (yj_log_likelihood(x, lam + h) - yj_log_likelihood(x, lam - h)) / (2 * h)
    if abs(fd) > 1e-4 * max(1, abs(yj_log_likelihood(x, lam))):  # well above the finite difference's rounding error
        assert np.sign(fd) == yj_dloglik_sign(x, lam), (d, fd)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    x=arrays(
        np.float64,
        st.integers(2, 60),
        elements=st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False, width=64),
    )
)
def test_property_fit_is_finite_and_maximizes(x):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always', YeoJohnsonWarning)
        res = exp_yj(x, full_output=True)  # at every scale: measured in its unit, the derivative is computable
        t = YeoJohnsonTransformer().fit(x[:, None])
        z = t.transform(x[:, None])
    lam = res.lambdas[0]
    assert np.isfinite(lam) and np.isfinite(res.mean).all() and np.isfinite(z).all() and np.isfinite(t.scale_).all()
    assert np.isfinite(yeo_johnson(x, lam)).all()
    if not res.constant[0] and not any(
        'minimizes max |Psi|' in str(m.message) for m in w
    ):  # else |x| > ymax on both sides (documented)
        assert np.isfinite(res.var).all() and np.abs(yeo_johnson(x, lam)).max() <= YMAX * (1 + 1e-9)
    if not res.constant[0] and not res.bounded[0] and abs(lam) < 1e15:
        # the derivative is >= 0 a little to the left and <= 0 a little to the right: by convexity lam is the maximizer
        step = 1e-6 * abs(lam) + 1e-9
        dl = yj_dloglik(x, np.array([lam - step, lam + step]))
        noise = 1e-8 * len(x) * max(1.0, float(np.log1p(np.abs(x)).max()))
        assert dl[0] > -noise and dl[1] < noise, (lam, dl)


@settings(max_examples=60, deadline=None)
@given(
    x=arrays(np.float64, st.integers(1, 30), elements=st.floats(-1e3, 1e3, allow_nan=False, width=64)),
    lam=st.floats(-2, 4, allow_nan=False),
)
def test_property_inverse_roundtrip(x, lam):
    np.testing.assert_allclose(yeo_johnson_inverse(yeo_johnson(x, lam), lam), x, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(
    'x', [[1e-300, 0.0], [1e-300, -1e-300, 0.0], [5e-200, 0.0, 1e-200], [3e-300, 1e-300, 2e-300, 7e-300]]
)
def test_tiny_features_have_their_exact_lambda(x):
    "Found by hypothesis: a spread whose square underflows float64 (once declared constant); in its unit, the exact lambda."
    x = np.array(x)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always', YeoJohnsonWarning)
        res = exp_yj(x, full_output=True)
        z = YeoJohnsonTransformer().fit(x[:, None]).transform(x[:, None])
    assert not res.constant[0] and np.isfinite(res.mean).all() and np.isfinite(z).all()
    if res.bounded[0]:  # two distinct values: the likelihood grows without end, so lambda stops at the overflow bound
        assert any('bounded' in str(m.message) for m in w)
    else:  # exact to 1e-12, or to float64's resolution 2**-52 / extent where the derivative's leading term vanishes
        ref, E = mp_yj_mle(x, res.lambdas[0], dps=400), YJAnchors.from_data(x).extent[0]  # 1 + 1e-300 needs 300 digits
        assert abs(res.lambdas[0] - ref) <= 1e-12 * abs(ref) + 2.0**-50 / E, (res.lambdas[0], ref)
    np.testing.assert_allclose(z.mean(), 0, atol=1e-12)
    np.testing.assert_allclose(z.std(), 1, rtol=1e-12)


@pytest.mark.parametrize('x', [[1e-303, 0.0], [1e-303, -1e-303, 0.0]])
def test_numerically_constant_feature(x):
    "An extent below 2**-1000 on the log1p scale: lambda* (of order 1/extent) is no float64, the feature is constant."
    x = np.array(x)
    with pytest.warns(YeoJohnsonWarning, match='constant'):
        res = exp_yj(x, full_output=True)
    assert res.constant[0] and res.lambdas[0] == 1.0 and np.isfinite(res.mean).all()


# ------------------------------------------------------------------ every scale (issue 31)
_SCALE_BASE = np.random.default_rng(31).lognormal(size=150)
_SCALE_KINDS = {'positive': _SCALE_BASE, 'negative': -_SCALE_BASE[::-1] * 1.3, 'mixed': _SCALE_BASE - 1.4}


@pytest.mark.parametrize('kind', list(_SCALE_KINDS))
@pytest.mark.parametrize('scale', [1e-300, 1e-100, 1e-20, 1e100, 1e300])
def test_exact_lambda_at_every_scale(scale, kind):
    "ExpYJ's lambda equals the mpmath MLE at 1e-300 ... 1e300, both signs and mixed (unless bounded by ymax, and said)."
    x = _SCALE_KINDS[kind] * scale
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        res = exp_yj(x, full_output=True)
        z = YeoJohnsonTransformer().fit_transform(x[:, None])
    assert not [m for m in w if issubclass(m.category, RuntimeWarning)]
    assert res.converged[0] and np.isfinite(z).all()  # in at most 60 steps below 1e-20, 112 at 1e-20
    if res.bounded[0]:
        assert scale == 1e300 and kind == 'mixed' and any('bounded' in str(m.message) for m in w)
        return
    ref = mp_yj_mle(x, res.lambdas[0])
    assert abs(res.lambdas[0] - ref) <= 1e-12 * abs(ref), (res.lambdas[0], ref)
    np.testing.assert_allclose([z.mean(), z.std()], [0, 1], atol=1e-12)
    # the frame's mean and variance of Psi agree with Psi itself where Psi is a float64 with room to spare
    if 1e-100 <= scale <= 1e100:
        psi = yeo_johnson(x, res.lambdas[0])
        np.testing.assert_allclose(res.mean[0], psi.mean(), rtol=1e-9, atol=1e-12 * np.abs(psi).max())
        np.testing.assert_allclose(res.var[0], psi.var(), rtol=1e-6)


# ------------------------------------------------------------------ tiles change no bit (issue 32)
import fedgauss.yeojohnson as _yjmod
from fedgauss.data import make_skewed_features
from fedgauss.testing import adversarial_inputs
from fedgauss.yeojohnson import K1


def _untiled_fresh(h, rows, lo_frame, ls, moments):
    "A fresh pass as before the tiles (main at d6fdfff): all groups of a block at once, new buffers; the reference."
    r, n = len(rows), h.n_rows
    out, mom = np.zeros((4, r)), np.zeros((2, K1 + 2, r))
    if lo_frame:
        h._need_lo(rows)
    src = h.D_lo if lo_frame else h.D_hi
    ch = h._chunk(r)
    for s0 in range(0, n, ch):
        d = src[rows, s0 : s0 + ch]
        zz = d * ls[:, None]
        EE = np.exp(zz)
        ee = EE - 1
        tt = zz * EE
        tt = tt - ee
        out += [ee.sum(1), np.einsum('ij,ij->i', ee, ee), tt.sum(1), np.einsum('ij,ij->i', ee, tt)]
        if moments:
            dm = d * h._irho[rows, None] if h._scaled else d
            mom[0, 0] += EE.sum(1)
            mom[1, 0] += (EE * EE).sum(1)
            pp = EE * dm
            for k in range(1, K1 + 2):
                mom[0, k] += pp.sum(1)
                mom[1, k] += np.einsum('ij,ij->i', pp, EE)
                pp = pp * dm
    return out, mom if moments else None


def _untiled_log_distances(h, X):
    "D_hi, the membership and P_1..P_3 as before the tiles (a contiguous copy of X.T, all groups of a block at once)."
    XT = np.ascontiguousarray(np.asarray(X, dtype=np.float64).reshape(h.n_rows, -1).T)
    G, n = len(h.g_col), h.n_rows
    D, memb, P = np.empty((G, n)), np.empty((G, n), bool), np.zeros((3, G))
    ch = h._chunk(G)
    for s0 in range(0, n, ch):
        aa = XT[h.g_col, s0 : s0 + ch]
        mm = ~np.isnan(aa)
        mx = slice(h.n_one, G)
        with np.errstate(invalid='ignore'):
            mm[mx] &= np.where(h.g_s[mx, None] > 0, aa[mx] >= 0, aa[mx] < 0)
            a = np.abs(aa)
            rr = (a - h.g_hi[:, None]) * (1 / (1 + h.g_hi[:, None]))
            nn = rr > -0.5
            a = np.log1p(np.where(nn, rr, a))
        a = np.where(nn, a, a - h.g_chi[:, None])
        a[~mm] = 0.0
        D[:, s0 : s0 + ch], memb[:, s0 : s0 + ch] = a, mm
        a = a * h._irho[:, None] if h._scaled else a
        P += [a.sum(1), (a * a).sum(1), np.einsum('ij,ij->i', a * a, a)]
    return D, memb, P


def _tile_inputs():
    "Data sets with one-signed, negative, mixed, tiny-scale (group units rho != 1) and NaN features, and one feature alone."
    g = np.random.default_rng(32)
    X = make_skewed_features(20_000, 20, rng=1)
    X[g.random(X.shape) < 0.02] = np.nan
    adv = adversarial_inputs()
    return {
        'skewed 20,000 x 20 with NaN': X,
        'breast cancer': load_breast_cancer()[0].to_numpy(),
        'tiny scales': np.c_[1e-20 * g.lognormal(size=(5000, 3)), 1e-200 * g.normal(size=5000), g.lognormal(size=5000)],
        **{f'adversarial: {k}': v for k, v in list(adv.items())[::3]},
    }


@pytest.mark.parametrize('name', list(_tile_inputs()))
def test_tiled_passes_are_bit_identical(name):
    "The tiled passes (any tile size) give the very bits of the untiled ones: log-distances, moments, fresh sums."
    X = _tile_inputs()[name]
    h = YJData(X)
    D, memb, P = _untiled_log_distances(h, X)
    assert np.array_equal(h.D_hi, D) and np.array_equal(h.memb, memb) and np.array_equal(h.P[1:4], P)
    g = np.random.default_rng(0)
    G = len(h.g_col)
    subsets = [np.arange(G), np.sort(g.choice(G, max(1, G // 3), replace=False)), np.r_[G - 1], np.arange(G)[1::2]]
    for rows in subsets:
        if not len(rows):
            continue
        for lo_frame, lam in ((False, 0.7), (False, 3.0), (True, -0.4), (True, -2.5)):
            ls = np.full(len(rows), lam)
            ref = _untiled_fresh(h, rows, lo_frame, ls, True)
            for values in (1, 4096, _yjmod.TILE_VALUES, 10**12):
                S, mom = h._fresh(rows, lo_frame, ls, True, values=values)
                assert np.array_equal(S, ref[0], equal_nan=True) and np.array_equal(mom, ref[1], equal_nan=True)
            S, mom = h._fresh(rows, lo_frame, ls, False)
            assert mom is None and np.array_equal(S, ref[0], equal_nan=True)


@pytest.mark.parametrize('rows', [1, 16384, 10**9])
def test_preparation_does_not_depend_on_its_segments(rows, monkeypatch):
    """D_hi, the membership and P_1..P_3 are the bits of the untiled reference whatever the segments of the preparation,
    also for one group alone and for blocks of more than 8,192 rows (where np.einsum's one-row kernel adds differently)."""
    monkeypatch.setattr(_yjmod, '_SEGMENT_ROWS', rows)
    g = np.random.default_rng(7)
    inputs = {k: _tile_inputs()[k] for k in ('skewed 20,000 x 20 with NaN', 'tiny scales')}
    inputs['one group, 300,000 rows'] = g.lognormal(size=300_000)
    inputs['two groups, 300,000 rows'] = g.lognormal(size=(300_000, 2)) * [1, -1]
    for name, X in inputs.items():
        h = YJData(X)
        D, memb, P = _untiled_log_distances(h, X)
        assert np.array_equal(h.D_hi, D) and np.array_equal(h.memb, memb) and np.array_equal(h.P[1:4], P), name


@pytest.mark.parametrize('values', [1, 10**12])
def test_exp_yj_does_not_depend_on_the_tiles(values, monkeypatch):
    "ExpYJ's lambdas, means, variances and signs are the same bits with tiles of 2 groups, or one tile per block."
    X = np.c_[make_skewed_features(30_000, 20, rng=3), load_breast_cancer()[0].to_numpy()[np.arange(30_000) % 569, :6]]
    ref = exp_yj(X, full_output=True)
    tiles = _yjmod._tiles
    monkeypatch.setattr(_yjmod, '_tiles', lambda r, m, v=None: tiles(r, m, values))
    res = exp_yj(X, full_output=True)
    for k in ('lambdas', 'mean', 'var', 'signs'):
        assert np.array_equal(getattr(res, k), getattr(ref, k)), k


# ------------------------------------------------------------------ b steps per round (issue 32)
def _branching_cases():
    "Data sets for the b-step: breast cancer, constant and NaN columns, the overflow bounds, mixed signs, tiny scales."
    r = np.random.default_rng(32)
    X, _ = load_breast_cancer()
    mixed = np.c_[r.normal(size=200), r.lognormal(size=200) - 1.0, np.r_[r.lognormal(size=199), np.nan]]
    bounds = np.c_[np.r_[r.normal(size=30), 1e300], -np.r_[r.lognormal(size=30), 1e250], np.full(31, 7.0)]
    tiny = np.c_[r.lognormal(size=60), -r.lognormal(size=60)] * 1e-200
    return {'breast cancer': X.to_numpy(), 'mixed and NaN': mixed, 'bounds and constant': bounds, 'tiny': tiny}


@pytest.mark.parametrize('name', list(_branching_cases()))
@pytest.mark.parametrize('t_max', [128, 13])
def test_branching_is_today_search_bit_for_bit(name, t_max):
    "b steps per round: lambda, path, signs, bracket and moments equal to b = 1, also at a t_max that is no multiple of b."
    X = _branching_cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        one = exp_yj_search([YJData(X)], t_max=t_max)
        for b in (2, 3, 5, 6):
            got = exp_yj_search([YJData(X)], t_max=t_max, branching=b)
            for k in ('lambdas', 'path', 'signs', 'mean', 'var', 'converged', 'bounded', 'constant'):
                np.testing.assert_array_equal(getattr(got, k), getattr(one, k), err_msg=f'{k} at b={b}')
    assert len(one.signs) <= t_max


def test_branching_over_several_holders_is_bit_for_bit():
    "Holders' sums added at every tree point, each holder's cache put back per feature: the same as b = 1."
    X, _ = load_breast_cancer()
    X = X.to_numpy()
    parts = lambda: [YJData(P) for P in np.array_split(X, 4)]
    anchors = YJAnchors.from_data(X)
    parts = lambda: [YJData(P, anchors) for P in np.array_split(X, 4)]
    one = exp_yj_search(parts())
    four = exp_yj_search(parts(), branching=4)
    np.testing.assert_array_equal(four.path, one.path)
    np.testing.assert_array_equal(four.lambdas, one.lambdas)


def test_branching_reveals_what_the_path_implies():
    """The signs at every tree point, recomputed from the path's signs alone (concavity), equal the evaluated ones,
    round after round (breast cancer, b = 4) — wherever the bracket is wider than 1e-11 relative: in the last rounds the
    rounding of the sums decides the sign, and an off-path sign there can differ (it reveals that rounding)."""
    from fedgauss.yeojohnson import exp_replay, implied_signs, search_depth, tree_sums, yj_lambda_bounds, yj_search_unit

    X, _ = load_breast_cancer()
    data = YJData(X.to_numpy())
    const = data.anchors.constant
    state = ExpSearchState.start(X.shape[1], *yj_lambda_bounds(data.anchors), yj_search_unit(data.anchors))
    rounds = covered = 0
    while not (state.converged() | const).all():
        tree = search_depth(state, 4, 128, const)
        vals, caches = tree_sums(data, tree)
        sg = np.array([yj_sign_from_sums(S) for S in vals]).astype(np.int8)
        states, picks = exp_replay(tree, sg)
        imp = implied_signs(sg, picks)
        wide = (state.hi - state.lo > 1e-11 * np.maximum(1, np.abs(state.lmbda)))[None, :] & (imp != 0)
        np.testing.assert_array_equal(imp[wide], sg[wide])
        covered += wide.sum()
        if caches is not None:
            data.restore_cache(caches, picks[-1])
        state, rounds = states[-1], rounds + 1
    assert rounds >= 14 and covered >= 10 * 15 * X.shape[1]  # ten rounds of 15 signs per feature at least


@pytest.mark.parametrize('b', [0, -1, 1.5, True, '2', 17, None])
def test_branching_must_be_a_positive_integer(b):
    X, _ = load_breast_cancer()
    with pytest.raises(ValueError, match='branching must be a positive integer'):
        exp_yj(X.iloc[:, :2], branching=b)


# ---- issue 32: ExpYJ's per-step cost without changing a bit ----
def test_cached_expansion_from_its_coefficients_is_bit_for_bit_expand():
    "The expansion's coefficients, computed once at the build, give exactly the floats `_expand` computes per step."
    from fedgauss.yeojohnson import expand_sums

    X = np.random.default_rng(11).lognormal(size=(5000, 4)) * np.r_[1, -1, 1, 1]
    X[:, 3] -= 1.5  # a mixed feature: two sign groups
    data = YJData(X)
    exp_yj_search([data])  # builds every group's expansion
    i = np.flatnonzero(~np.isnan(data._cache_ls))
    assert len(i) == len(data.g_col)
    lr, rho = data._cache_ls[i], data.g_rho[i]
    for h in (0.0, 1e-9, -3e-4, 0.02):
        hh = np.full(len(i), h) * rho
        old = data._expand(data._cache_mom[:, :, i], data._cache_base[:, i], lr * rho, hh)
        np.testing.assert_array_equal(expand_sums(data._cache_coef[:, :, i], data._cache_base[:, i], hh), old)


def test_frame_constants_are_kept_per_anchors():
    "yj_frame reads the anchors' constants once per anchors object: equal anchors, equal frames; others, their own."
    import dataclasses

    X, _ = load_breast_cancer()
    A = YJAnchors.from_data(X.to_numpy())
    lam = np.linspace(-3, 3, A.kind.size)
    f1 = yj_frame(lam, A)
    assert yj_frame(lam, A) == f1 == yj_frame(lam, dataclasses.replace(A))  # a copy: computed again, the same
    B = YJAnchors.from_data(-X.to_numpy()[:, :5])
    fb = yj_frame(lam[:5], B)
    assert (fb.sign == -1).all() and (f1.sign == 1).all()
    fb.sign[:] = 0  # a frame's arrays are its own: the kept constants are not changed through them
    assert (yj_frame(lam[:5], B).sign == -1).all()


def test_one_step_rounds_are_the_tree_of_one_node():
    "branching=1 (a step without a tree) and the tree's replay give the same search on breast cancer, step for step."
    from fedgauss.yeojohnson import _search, search_depth, yj_lambda_bounds, yj_search_unit

    X, _ = load_breast_cancer()
    data = YJData(X.to_numpy())
    A = data.anchors
    start = ExpSearchState.start(A.kind.size, *yj_lambda_bounds(A), yj_search_unit(A))
    const = A.constant
    state, failed, at, path, signs = _search([data], start, const, 128, True, 1)
    ref, s = [start.lmbda], start
    data2 = YJData(X.to_numpy())
    while s.t < 128 and not (s.converged() | const).all():
        assert len(search_depth(s, 1, 128, const)) == 1
        sg = np.where(const, 0, yj_sign_from_sums(data2.sums(s.lmbda, s.bracket))).astype(np.int8)
        s = s.update(sg)
        ref.append(s.lmbda)
    np.testing.assert_array_equal(np.array(path), np.array(ref))
    assert not failed.any() and state.t == s.t


# ------------------------------------------------------------------ the searches as recorded (issue 32, exp_yj) ----
from yj_paths import NAMES, compare_named, named_input


@pytest.mark.parametrize('name', NAMES)
def test_named_data_keep_their_lambdas_path_and_signs(name):
    """The bench's 100,000 x 50 (and SecureFedYJ's 100,000 x 30), breast cancer and the numeric columns of Adult, credit
    default and bank: lambdas, search path and signs equal, bit for bit, to those recorded on main f6b38cd, before the
    sums' reductions became matrix products (tests/yj_paths.py)."""
    assert compare_named(name, named_input(name)) == ''


# ------------------------------------------------------------------ certified signs (issue 32, exp_yj) ------------
def _uncertified_search(monkeypatch, X, **kw):
    "exp_yj_search as before the certified signs: every sign-only pass made (`certified_sums` certifies nothing)."
    with monkeypatch.context() as m:
        m.setattr(_yjmod.YJData, '_certify', lambda self, cand, ls, lo, lg=None: np.zeros(len(ls), np.int8))
        return exp_yj_search([YJData(X)], **kw)


def _certified_cases():
    "Data sets for the certificates: the tiles' and b-steps' inputs (NaN, tiny scales, constants, bounds, mixed)."
    return {**_tile_inputs(), **{f'b-step: {k}': v for k, v in _branching_cases().items()}}


@pytest.mark.parametrize('name', list(_certified_cases()))
def test_certified_search_is_the_search_bit_for_bit(name, monkeypatch):
    "The pooled search that skips certified passes has the lambdas, path, signs, means and variances of the one without."
    X = _certified_cases()[name]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        h = YJData(X)
        got = exp_yj_search([h])
        ref = _uncertified_search(monkeypatch, X)
    for k in ('lambdas', 'path', 'signs', 'mean', 'var', 'converged'):
        np.testing.assert_array_equal(getattr(got, k), getattr(ref, k), err_msg=k)


def test_certified_signs_skip_passes_on_skewed_data(monkeypatch):
    "On skewed data most sign-only evaluations are certified (no pass), mixed features' too; the others are the passes."
    X = make_skewed_features(20_000, 20, rng=5)
    h = YJData(X)
    exp_yj_search([h])
    monkeypatch.setattr(_yjmod.YJData, '_certify', lambda self, cand, ls, lo, lg=None: np.zeros(len(ls), np.int8))
    r = YJData(X)
    exp_yj_search([r])
    assert r.counts['certified'] == 0 and h.counts['certified'] >= r.counts['fresh'] / 2
    assert h.counts['fresh'] + h.counts['certified'] == r.counts['fresh']


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    x=arrays(np.float64, st.integers(3, 200), elements=st.floats(-1e6, 1e6, allow_nan=False, width=64)),
    signs=st.sampled_from(['mixed', 'positive', 'negative']),
    lam=st.floats(-40, 40, allow_nan=False),
)
def test_property_certified_sign_is_the_computed_sign(x, signs, lam):
    "Wherever a histogram certifies a sign, it is the sign the float sums give (one-signed or mixed data, any lambda)."
    x = {'mixed': x, 'positive': np.abs(x), 'negative': -np.abs(x)}[signs]
    if np.unique(x).size < 2:
        return
    with np.errstate(all='ignore'):
        S, sg = YJData(x).certified_sums(lam)
        ref = yj_sign_from_sums(YJData(x).sums(lam))
    if sg[0]:
        assert sg[0] == ref[0] and np.isnan(S.s_psi[0])


def test_no_sign_is_certified_at_the_maximizer(bc):
    "At the fitted lambda (within the rounding of the sums) the derivative is ~0: the guard certifies nothing there."
    X = bc.to_numpy()
    lam = exp_yj(X)
    h = YJData(X)
    for dl in (0.0, 1e-13, -1e-13):
        _, sg = h.certified_sums(lam * (1 + dl))
        assert (sg == 0).all()


@pytest.mark.parametrize('case', ['mixed, no NaN', 'mixed, NaN in some segments', 'mixed, with inf', 'bench data'])
def test_preparation_is_the_reference_bit_for_bit(case):
    """The preparation zeroes a mixed feature's other-sign rows by a product where no NaN or inf is in a segment, and
    takes the anchors from the float bits (`sign_ends`): D_hi (signed zeros included), the membership and P_1..P_3 are
    the bytes of the untiled reference with masks, and the anchors are the masked reductions' values."""
    g = np.random.default_rng(11)
    if case == 'bench data':
        X = make_skewed_features(40_000, 12, rng=0)
    else:
        X = np.c_[
            g.standard_normal((40_000, 3)) * [1, 50, 1e-3], g.lognormal(size=40_000) - 1, g.lognormal(size=40_000)
        ]
        if case == 'mixed, NaN in some segments':
            X[g.integers(0, 40_000, 30), :3] = np.nan
        if case == 'mixed, with inf':
            X[[5, 20_000], 0], X[7, 1] = np.inf, -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)
        h = YJData(X)
    D, memb, P = _untiled_log_distances(h, X)
    assert h.D_hi.tobytes() == D.tobytes() and np.array_equal(h.memb, memb) and h.P[1:4].tobytes() == P.tobytes()
    XT = np.asarray(X, float).T
    with np.errstate(invalid='ignore'), warnings.catch_warnings():
        warnings.simplefilter('ignore', RuntimeWarning)
        mixed = np.flatnonzero(np.nanmin(XT, 1) < 0)
        lo = np.where(XT[mixed] >= 0, XT[mixed], np.inf).min(1)
        neg = -np.where(XT[mixed] < 0, XT[mixed], -np.inf).max(1)
    np.testing.assert_array_equal(h.anchors.pos_lo[mixed], np.where(np.isinf(lo), np.nan, lo))
    np.testing.assert_array_equal(h.anchors.neg_lo[mixed], neg)


@pytest.mark.parametrize('block', [1, 7, 4096, 10**9])
def test_transform_in_blocks_with_values_of_the_unseen_sign(block):
    """The transform works in blocks of rows and takes the frame formula of a one-signed feature unless a block holds a
    value of the sign the fit did not see (then those values go through Psi): whatever the block, every value equals
    (Psi(lambda, x) - mean_) / scale_, unseen signs, zeros, NaN and the mixed features included, and the bits do not
    depend on the block."""
    g = np.random.default_rng(4)
    X = make_skewed_features(3000, 12, rng=2)
    est = YeoJohnsonTransformer().fit(X)
    B = X.copy()
    B[g.random(B.shape) < 0.01] *= -2.0  # the other sign, in a few blocks only at small blocks
    B[g.random(B.shape) < 0.02] = np.nan
    B[10], B[11] = 0.0, -0.0
    f = est.frame_
    T = _yjmod._to_frame(B, f, est._mean_t, est._scale_t, block=block)
    ref = (yeo_johnson(B, est.lambdas_) - est.mean_) / est.scale_
    np.testing.assert_allclose(T, ref, rtol=1e-10, atol=1e-12)
    assert T.tobytes() == _yjmod._to_frame(B, f, est._mean_t, est._scale_t, block=64).tobytes()


# ------------------------------------------------------------------ the search's rest, same bits (issue 32, expyj4)
def _rest_inputs():
    "Skewed one-signed and mixed features, NaN in some rows, and a group of every row (the D_lo frame's cases)."
    g = np.random.default_rng(11)
    X = make_skewed_features(30_000, 12, rng=3)
    X[:, 10] = g.standard_normal(30_000) * 5  # mixed
    X[:, 11] = g.lognormal(size=30_000) - 1.5  # mixed, most rows negative
    X[g.integers(0, 30_000, 40), 3] = np.nan
    return X


@pytest.mark.parametrize('rows', ['all', 'run', 'scattered', 'one'])
def test_lo_block_is_need_lo_bit_for_bit(rows):
    "D_lo block by block (`_lo_block`, what the passes use) has the bits of the whole rows `_need_lo` keeps."
    h = YJData(_rest_inputs())
    G = len(h.g_col)
    r = {'all': np.arange(G), 'run': np.arange(3, 9), 'scattered': np.r_[0, 2, 7, G - 3, G - 1], 'one': np.r_[G - 1]}
    r = r[rows]
    h._need_lo(r)
    run = len(r) == 1 or bool((np.diff(r) == 1).all())
    for s0, m in ((0, 4096), (4096, 13_107), (29_000, 1000)):
        out = np.empty((len(r), m))
        h._lo_block(r, s0, m, out, run)
        assert out.tobytes() == h.D_lo[r, s0 : s0 + m].tobytes()


def test_histograms_are_one_bincount_over_each_row():
    "The histograms, built 16,384 rows at a time, have the counts and the bins' means of one bincount over each row."
    h = YJData(_rest_inputs())
    G, B = len(h.g_col), _yjmod.CERT_BINS
    h._need_hist(np.arange(G))
    for g in range(G):
        k = np.maximum(h.D_hi[g] * (B / h.g_R[g]) + B, 0).astype(np.intp)  # main's index (with its clip at 0)
        c, s = np.bincount(k, minlength=B + 1), np.bincount(k, h.D_hi[g], B + 1)
        c[-2] += c[-1] - (h.n_rows - h.g_n[g])
        with np.errstate(all='ignore'):
            mean = np.where(c[:-1] > 0, s[:-1] / c[:-1], 0.0)
        assert np.array_equal(h._H[g], c[:-1]) and h._Hm[g].tobytes() == mean.tobytes()
    np.testing.assert_array_equal(h._Hc, h._H.reshape(G, _yjmod.COARSE_BINS, -1).sum(2))


def test_coarse_and_fine_certificates_are_the_computed_signs():
    "Each histogram alone, the coarse one too, certifies only the sign the pass computes (one-signed and mixed)."
    X = _rest_inputs()
    h, r = YJData(X), YJData(X)
    G, nm = len(h.g_col), (len(h.g_col) - h.n_one) // 2
    one = np.arange(h.n_one)
    h._need_hist(np.arange(G))
    settled = 0
    for lam in np.r_[-6.0, -2.0, -0.7, 0.3, 1.1, 2.5, 7.0, np.random.default_rng(2).uniform(-4, 4, 12)]:
        lg = np.full(G, lam)
        ls = np.where(h.g_s > 0, lg, 2 - lg)
        lo = ls < 0
        ref = yj_sign_from_sums(r.sums(np.full(X.shape[1], lam), accelerate=False))
        f = yj_frame(np.full(X.shape[1], lam), h.anchors)
        p = np.arange(h.n_one, h.n_one + nm)
        for coarse in (True, False):
            sF = h._sign_F(one, ls, lo, coarse)
            got = h.g_s[one] * np.sign(ls[one]) * sF
            assert np.array_equal(got[sF != 0], ref[h.g_col[one]][sF != 0])
            sm = h._sign_mixed(p, f, ls, lo, coarse)
            assert np.array_equal(sm[sm != 0], ref[h.g_col[p]][sm != 0])
            settled += int((sF != 0).sum() + (sm != 0).sum())
    assert settled > 0


def test_fit_names_infinite_columns_from_the_anchors():
    "`fit` reads infinity from the anchors (no pass of its own): the same error, naming the same columns, as before."
    X = pd.DataFrame(make_skewed_features(500, 8, rng=1), columns=[f'c{j}' for j in range(8)])
    X.iloc[3, 2], X.iloc[9, 6] = np.inf, -np.inf
    with pytest.raises(ValueError, match=r"^'c2', 'c6' contain\(s\) inf: Yeo-Johnson needs finite values$"):
        YeoJohnsonTransformer().fit(X)
    with pytest.raises(ValueError, match=r"^'c2', 'c6' contain\(s\) inf"):
        exp_yj(X)
