"""Cross-checks of fedgauss.dp against Google's dp-accounting and mpmath, exact-pmf tests of the discrete samplers,
property tests of the budget and the calibration, and a bad-input catalogue."""

import math

import dp_accounting
import mpmath as mp
import numpy as np
import pandas as pd
import pytest
from dp_accounting.rdp import rdp_privacy_accountant as dpa_rdp
from hypothesis import given, settings, strategies as st
from scipy import stats

from fedgauss.testing import chi2_pvalue
from fedgauss.dp import (
    GAUSSIAN_METHODS,
    PrivacyBudget,
    PrivacyBudgetExceeded,
    PrivacyCost,
    RDPAccountant,
    audit_epsilon_lower_bound,
    calibrate_noise_multiplier,
    clipped_sensitivity,
    clopper_pearson,
    discrete_gaussian,
    discrete_gaussian_mechanism,
    discrete_gaussian_pmf,
    discrete_laplace,
    discrete_laplace_mechanism,
    discrete_laplace_pmf,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mechanism,
    gaussian_rdp,
    gaussian_sigma,
    laplace_mechanism,
    laplace_rdp,
    matrix_normal_mechanism,
    parallel_composition,
    sequential_composition,
)

DELTA = 1e-5
NOISE_MULTIPLIERS = np.geomspace(0.5, 50, 13)
COUNTS = [1, 2, 5, 10, 30, 100, 300, 1000]


def dpacc_rdp_epsilon(events, delta):
    acc = dp_accounting.rdp.RdpAccountant()
    for ev, k in events:
        acc.compose(ev, k)
    return acc.get_epsilon(delta)


# ---------------------------------------------------------------- accountant vs dp-accounting and the exact epsilon
@pytest.mark.parametrize('z', NOISE_MULTIPLIERS, ids=[f'z={z:.3g}' for z in NOISE_MULTIPLIERS])
def test_gaussian_composition_between_exact_and_dp_accounting(z):
    for k in COUNTS:
        ours = RDPAccountant().add_gaussian(z, k).epsilon(DELTA)
        exact = gaussian_epsilon(z / math.sqrt(k), DELTA)  # k Gaussians = one with z / sqrt(k)
        theirs = dpacc_rdp_epsilon([(dp_accounting.GaussianDpEvent(z), k)], DELTA)
        their_exact = dp_accounting.get_epsilon_gaussian(z / math.sqrt(k), DELTA)
        assert exact >= 0 and math.isclose(exact, their_exact, rel_tol=1e-6, abs_tol=1e-9)
        assert ours >= exact, (z, k, ours, exact)
        assert ours <= theirs * (1 + 1e-12), (z, k, ours, theirs)


def test_mixed_gaussian_laplace_never_above_dp_accounting():
    for zg, kg, zl, kl in [(1.0, 10, 5.0, 3), (3.0, 200, 20.0, 50), (0.7, 1, 1.0, 1), (10.0, 1000, 2.0, 2)]:
        ours = RDPAccountant().add_gaussian(zg, kg).add_laplace(zl, kl).epsilon(DELTA)
        theirs = dpacc_rdp_epsilon(
            [(dp_accounting.GaussianDpEvent(zg), kg), (dp_accounting.LaplaceDpEvent(zl), kl)], DELTA
        )
        assert ours <= theirs * (1 + 1e-12)
        # and never below the exact epsilon of its Gaussian part alone
        assert ours >= gaussian_epsilon(zg / math.sqrt(kg), DELTA)


def test_rdp_curves_equal_dp_accounting_at_its_orders():
    """Our RDP curves, converted by dp-accounting's own compute_epsilon at its own orders, give its epsilon exactly:
    the curves agree order by order."""
    orders = np.array(dpa_rdp.DEFAULT_RDP_ORDERS, dtype=float)
    for zg, zl, k in [(1.3, 0.8, 4), (4.0, 10.0, 100), (0.6, 2.5, 1)]:
        ours = RDPAccountant().add_gaussian(zg, k).add_laplace(zl, k)
        theirs = dpacc_rdp_epsilon(
            [(dp_accounting.GaussianDpEvent(zg), k), (dp_accounting.LaplaceDpEvent(zl), k)], DELTA
        )
        eps_at_their_orders, _ = dpa_rdp.compute_epsilon(orders, ours.rdp(orders), DELTA)
        assert math.isclose(eps_at_their_orders, theirs, rel_tol=1e-10)
    for a in [1.0, 1.05, 2.0, 17.5, 1024.0]:
        assert math.isclose(float(laplace_rdp(a, 0.8)), dpa_rdp._laplace_rdp(1 / 0.8, a), rel_tol=1e-10)


def test_improved_conversion_beats_classic_and_dense_grids():
    acc = RDPAccountant().add_gaussian(2.0, 30)
    eps, alpha = acc.epsilon(DELTA, return_order=True)
    assert eps < acc.epsilon(DELTA, conversion='classic')
    grid = np.linspace(1.001, 400, 200_001)
    brute = acc.rdp(grid) + np.log1p(-1 / grid) - (math.log(DELTA) + np.log(grid)) / (grid - 1)
    assert eps <= brute.min() * (1 + 1e-12) and math.isclose(eps, brute.min(), rel_tol=1e-7)
    assert math.isclose(alpha, grid[np.argmin(brute)], rel_tol=1e-2)


# ---------------------------------------------------------------- analytic Gaussian vs dp-accounting and mpmath
@pytest.mark.parametrize('delta', [1e-3, 1e-5, 1e-8, 1e-10])
def test_analytic_sigma_matches_dp_accounting(delta):
    for eps in np.geomspace(0.01, 50, 17):
        ours = gaussian_sigma(eps, delta)
        theirs = dp_accounting.get_sigma_gaussian(eps, delta)
        assert math.isclose(ours, theirs, rel_tol=1e-6), (eps, delta, ours, theirs)
        assert gaussian_delta(ours, eps) <= delta
        # sensitivity scales sigma linearly
        assert math.isclose(gaussian_sigma(eps, delta, sensitivity=3.5), 3.5 * ours, rel_tol=1e-12)


def test_analytic_delta_against_mpmath():
    mp.mp.dps = 60
    rng = np.random.default_rng(0)
    for _ in range(200):
        z, eps = 10 ** rng.uniform(-1, 3), 10 ** rng.uniform(-3, 1.7)
        zz, ee = mp.mpf(z), mp.mpf(eps)
        exact = mp.ncdf(1 / (2 * zz) - ee * zz) - mp.exp(ee) * mp.ncdf(-1 / (2 * zz) - ee * zz)
        if exact < mp.mpf(10) ** -300:
            continue
        assert abs(gaussian_delta(z, eps) - float(exact)) <= 1e-12 * float(exact), (z, eps)


def test_calibrations_never_on_the_wrong_side_by_mpmath():
    "sigma from gaussian_sigma and epsilon from gaussian_epsilon satisfy delta_exact <= delta in 60-digit arithmetic."
    mp.mp.dps = 60

    def d_mp(z, eps):
        z, eps = mp.mpf(z), mp.mpf(eps)
        return mp.ncdf(1 / (2 * z) - eps * z) - mp.exp(eps) * mp.ncdf(-1 / (2 * z) - eps * z)

    rng = np.random.default_rng(4)
    for _ in range(150):
        eps, delta = 10 ** rng.uniform(-3, 4), 10 ** rng.uniform(-15, -1)
        z = gaussian_sigma(eps, delta)
        assert d_mp(z, eps) <= delta and d_mp(z * (1 - 1e-9), eps) > delta  # safe, and tight to 1e-9
        z2 = 10 ** rng.uniform(-2, 3)
        assert d_mp(z2, gaussian_epsilon(z2, delta)) <= delta


def test_zhao_is_valid_and_classic_refused_beyond_its_domain():
    for delta in [1e-3, 1e-6, 1e-9]:
        for eps in np.geomspace(0.01, 100, 25):
            sz = gaussian_sigma(eps, delta, method='zhao')
            assert gaussian_delta(sz, eps) <= delta and sz >= gaussian_sigma(eps, delta)
            if eps < 1:
                sc = gaussian_sigma(eps, delta, method='classic')
                assert gaussian_delta(sc, eps) <= delta
            else:
                with pytest.raises(ValueError, match='epsilon < 1'):
                    gaussian_sigma(eps, delta, method='classic')


def test_gaussian_epsilon_inverts_delta():
    for z in [0.3, 1.0, 7.0, 120.0]:
        for delta in [1e-2, 1e-6, 1e-11]:
            eps = gaussian_epsilon(z, delta)
            assert gaussian_delta(z, eps) <= delta
            if eps > 0:
                assert gaussian_delta(z, eps * (1 - 1e-9)) > delta


# ---------------------------------------------------------------- calibration
@settings(max_examples=25, deadline=None)
@given(eps=st.floats(0.05, 30), k=st.integers(1, 2000), logd=st.floats(-12, -2))
def test_calibrate_noise_multiplier_is_tight_and_safe(eps, k, logd):
    delta = 10.0**logd
    z = calibrate_noise_multiplier(eps, delta, k)
    assert RDPAccountant().add_gaussian(z, k).epsilon(delta) <= eps  # never above the target
    assert RDPAccountant().add_gaussian(z / 1.001, k).epsilon(delta) > eps  # within 0.1 %


def test_calibrate_with_prior_events():
    prior = RDPAccountant().add_laplace(epsilon=0.3, count=2).add_gaussian(8.0, 5)
    z = calibrate_noise_multiplier(2.0, 1e-6, 50, accountant=prior)
    assert prior.copy().add_gaussian(z, 50).epsilon(1e-6) <= 2.0
    assert prior.copy().add_gaussian(z / 1.001, 50).epsilon(1e-6) > 2.0
    assert len(prior.events) == 2  # the accountant is untouched


# ---------------------------------------------------------------- discrete samplers against their exact pmf
@pytest.mark.parametrize('sigma', [0.25, 0.3, 0.77, 1.0, 1.5, 3.3, 17.0, 250.0])
def test_discrete_gaussian_chi_square(sigma):
    x = discrete_gaussian(sigma, 150_000, rng=int(sigma * 1000))
    assert x.dtype == np.int64
    assert chi2_pvalue(x, lambda k: discrete_gaussian_pmf(k, sigma)) > 1e-4


@pytest.mark.parametrize('scale', [0.2, 1.0, 4.5, 100.0])
def test_discrete_laplace_chi_square(scale):
    x = discrete_laplace(scale, 150_000, rng=int(scale * 100))
    assert chi2_pvalue(x, lambda k: discrete_laplace_pmf(k, scale)) > 1e-4


def test_tiny_sigma_is_zero_and_rounding_only_adds_noise():
    assert (discrete_gaussian(0.05, 10_000, rng=0) == 0).all()  # P[x != 0] ~ 1e-87
    # an irrational-looking sigma is rounded up, so the variance is not below the requested one (up to sampling error)
    x = discrete_gaussian(math.pi, 400_000, rng=1)
    assert x.var() > math.pi**2 * (1 - 5 * math.sqrt(2 / len(x)))


def test_discrete_samplers_detect_a_wrong_parameter():
    "The chi-square test has power: draws with sigma 3 are rejected against the pmf of sigma 3.1."
    x = discrete_gaussian(3.0, 150_000, rng=0)
    assert chi2_pvalue(x, lambda k: discrete_gaussian_pmf(k, 3.1)) < 1e-6
    y = discrete_laplace(2.0, 150_000, rng=0)
    assert chi2_pvalue(y, lambda k: discrete_laplace_pmf(k, 2.1)) < 1e-6


def test_discrete_gaussian_large_sigma_moments():
    for sigma in [3 * 2.0**16, 3.0e7]:
        x = discrete_gaussian(sigma, 100_000, rng=1)
        assert abs(x.mean()) < 5 * sigma / math.sqrt(len(x))
        assert abs(x.var() / sigma**2 - 1) < 0.03
        # standardized draws are normal: a continuity issue would show up here
        assert stats.kstest(x / sigma, 'norm').pvalue > 1e-4


def test_discrete_mechanisms_preserve_types_and_inputs():
    v = pd.Series([3, -4, 10], index=list('abc'), name='counts')
    out = discrete_gaussian_mechanism(v, 2, 1.5, rng=0)
    assert isinstance(out, pd.Series) and list(out.index) == list('abc') and out.dtype == np.int64
    assert v.tolist() == [3, -4, 10]
    acc = RDPAccountant()
    discrete_gaussian_mechanism(np.zeros(4, dtype=np.int64), 1, 2.0, rng=0, accountant=acc)
    assert acc.events.iloc[0].to_dict() == dict(kind='gaussian', noise_multiplier=2.0, count=1)
    assert isinstance(discrete_laplace_mechanism(5, 1, 1.0, rng=0), int)
    assert np.array_equal(
        discrete_laplace_mechanism([1, 2], 1, 1.0, rng=3), discrete_laplace_mechanism([1, 2], 1, 1.0, rng=3)
    )


# ---------------------------------------------------------------- continuous mechanisms
def test_mechanisms_noise_scale_and_types():
    z = np.zeros(200_000)
    assert stats.kstest(laplace_mechanism(z, 2.0, 0.5, rng=0), stats.laplace(scale=4.0).cdf).pvalue > 1e-3
    for m in GAUSSIAN_METHODS[:2]:
        s = gaussian_sigma(1.5, 1e-6, 2.0, m)
        assert (
            stats.kstest(gaussian_mechanism(z, 2.0, 1.5, 1e-6, rng=1, method=m), stats.norm(scale=s).cdf).pvalue > 1e-3
        )
    df = pd.DataFrame(np.ones((3, 2)), columns=['x', 'y'], index=[10, 11, 12])
    out = matrix_normal_mechanism(df, 1.0, 1.0, 1e-5, rng=0, method='zhao')
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ['x', 'y'] and list(out.index) == [10, 11, 12]
    assert (df.values == 1).all()


# ---------------------------------------------------------------- the budget
@settings(max_examples=60, deadline=None)
@given(
    total=st.floats(0.1, 10),
    dtotal=st.sampled_from([0.0, 1e-6, 1e-3]),
    spends=st.lists(st.tuples(st.floats(0, 3), st.sampled_from([0.0, 1e-7, 4e-4, 2e-3])), max_size=15),
)
def test_budget_never_overspends_and_refusals_record_nothing(total, dtotal, spends):
    b = PrivacyBudget(total, dtotal)
    for e, d in spends:
        before = b.ledger.copy()
        ok = b.can_spend(e, d)
        if ok:
            b.spend(epsilon=e, delta=d)
            assert len(b.ledger) == len(before) + 1
        else:
            with pytest.raises(PrivacyBudgetExceeded):
                b.spend(epsilon=e, delta=d)
            pd.testing.assert_frame_equal(b.ledger, before)
        s = b.spent
        assert s.epsilon <= total * (1 + 1e-12) and s.delta <= dtotal * (1 + 1e-12)
        assert math.isclose(s.epsilon + b.remaining.epsilon, total, rel_tol=1e-9) or s.epsilon >= total
        assert math.isclose(b.ledger.epsilon.sum(), s.epsilon, rel_tol=1e-12, abs_tol=1e-15)


def test_budget_equal_parts_and_accountant_spend():
    for K in [3, 7, 10, 49]:
        b = PrivacyBudget(1.0, 1e-5)
        for _ in range(K):
            b.spend(epsilon=1.0 / K, delta=1e-5 / K)
        with pytest.raises(PrivacyBudgetExceeded):
            b.spend(epsilon=1e-9)
        with pytest.raises(PrivacyBudgetExceeded):
            b.spend(epsilon=0, delta=1e-9)
        assert len(b.ledger) == K
    b = PrivacyBudget(3.0, 1e-5)
    acc = RDPAccountant().add_gaussian(10.0, 20)
    cost = b.spend(accountant=acc, delta=5e-6, label='planned run')
    assert cost == PrivacyCost(acc.epsilon(5e-6), 5e-6)
    assert b.ledger.label.tolist() == ['planned run']
    big = RDPAccountant().add_gaussian(0.5, 100)
    with pytest.raises(PrivacyBudgetExceeded, match='exceed'):
        b.spend(accountant=big, delta=5e-6)
    assert len(b.ledger) == 1
    # a mechanism given a budget spends before releasing; when refused, nothing is drawn or recorded
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(PrivacyBudgetExceeded):
        gaussian_mechanism(np.zeros(2), 1.0, 5.0, 1e-6, rng, budget=b)
    assert rng.bit_generator.state == state and len(b.ledger) == 1


def test_compositions():
    assert sequential_composition([(1, 1e-6), (0.5, 0)]) == PrivacyCost(1.5, 1e-6)
    assert parallel_composition([(1, 1e-6), (0.5, 2e-6)]) == PrivacyCost(1, 2e-6)


# ---------------------------------------------------------------- audit
def test_clopper_pearson_matches_scipy_exact_interval():
    for k, n in [(0, 50), (3, 50), (25, 50), (50, 50), (7, 1000)]:
        lo, hi = clopper_pearson(k, n, 0.05)
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method='exact')
        assert math.isclose(lo, ci.low, abs_tol=1e-12) and math.isclose(hi, ci.high, abs_tol=1e-12)


def test_audit_is_sound_on_laplace_and_catches_a_lie():
    rng = np.random.default_rng(5)
    n = 400_000
    honest = audit_epsilon_lower_bound(rng.laplace(0, 1, n), 1 + rng.laplace(0, 1, n))  # eps = 1 exactly
    assert 0.5 < honest['epsilon_lb'] <= 1.0
    liar = audit_epsilon_lower_bound(rng.laplace(0, 1 / 3, n), 1 + rng.laplace(0, 1 / 3, n))  # claims 1, is 3
    assert liar['epsilon_lb'] > 2.0


# ---------------------------------------------------------------- bad inputs: each error names the parameter
NAN, INF = float('nan'), float('inf')
BAD = [
    (lambda: laplace_mechanism([1.0], 1.0, 0.0), 'epsilon'),
    (lambda: laplace_mechanism([1.0], 1.0, -1.0), 'epsilon'),
    (lambda: laplace_mechanism([1.0], 1.0, NAN), 'epsilon'),
    (lambda: laplace_mechanism([1.0], 1.0, INF), 'epsilon'),
    (lambda: laplace_mechanism([1.0], 1.0, '1'), 'epsilon'),
    (lambda: laplace_mechanism([1.0], 1.0, True), 'epsilon'),
    (lambda: laplace_mechanism([1.0], 0.0, 1.0), 'sensitivity'),
    (lambda: laplace_mechanism([1.0], NAN, 1.0), 'sensitivity'),
    (lambda: laplace_mechanism([1.0, NAN], 1.0, 1.0), 'value'),
    (lambda: laplace_mechanism([1.0, INF], 1.0, 1.0), 'value'),
    (lambda: laplace_mechanism([], 1.0, 1.0), 'value'),
    (lambda: laplace_mechanism(['a'], 1.0, 1.0), 'value'),
    (lambda: gaussian_mechanism([1.0], 1.0, 1.0, 0.0), 'delta'),
    (lambda: gaussian_mechanism([1.0], 1.0, 1.0, 1.0), 'delta'),
    (lambda: gaussian_mechanism([1.0], 1.0, 1.0, -1e-5), 'delta'),
    (lambda: gaussian_mechanism([1.0], 1.0, 1.0, NAN), 'delta'),
    (lambda: gaussian_mechanism([1.0], -2.0, 1.0, 1e-5), 'sensitivity'),
    (lambda: gaussian_mechanism([1.0], 1.0, 0.0, 1e-5), 'epsilon'),
    (lambda: gaussian_sigma(1.0, 1e-5, method='exact'), 'method'),
    (lambda: gaussian_sigma(1.0, 1e-5, sensitivity=0), 'sensitivity'),
    (lambda: gaussian_sigma(1.5, 1e-5, method='classic'), 'epsilon'),
    (lambda: gaussian_delta(0.0, 1.0), 'sigma'),
    (lambda: gaussian_delta(1.0, -1.0), 'epsilon'),
    (lambda: gaussian_epsilon(1.0, 0.0), 'delta'),
    (lambda: matrix_normal_mechanism(np.ones(3), 1.0, 1.0, 1e-5), 'value'),
    (lambda: matrix_normal_mechanism(np.ones((2, 2)), 0.0, 1.0, 1e-5), 'sensitivity'),
    (lambda: RDPAccountant().add_gaussian(0.0), 'noise_multiplier'),
    (lambda: RDPAccountant().add_gaussian(NAN), 'noise_multiplier'),
    (lambda: RDPAccountant().add_gaussian(1.0, count=0), 'count'),
    (lambda: RDPAccountant().add_gaussian(1.0, count=2.5), 'count'),
    (lambda: RDPAccountant().add_gaussian(1.0, count=True), 'count'),
    (lambda: RDPAccountant().add_laplace(), 'noise_multiplier'),
    (lambda: RDPAccountant().add_laplace(epsilon=0.0), 'epsilon'),
    (lambda: RDPAccountant().add_rdp(3.0), 'curve'),
    (lambda: RDPAccountant().add_rdp(lambda a: -a), 'curve'),
    (lambda: RDPAccountant().add_gaussian(1.0).epsilon(0.0), 'delta'),
    (lambda: RDPAccountant().add_gaussian(1.0).epsilon(1.0), 'delta'),
    (lambda: RDPAccountant().add_gaussian(1.0).epsilon(1e-5, conversion='fancy'), 'conversion'),
    (lambda: RDPAccountant().rdp([0.5]), 'orders'),
    (lambda: calibrate_noise_multiplier(0.0, 1e-5, 1), 'epsilon'),
    (lambda: calibrate_noise_multiplier(1.0, 0.0, 1), 'delta'),
    (lambda: calibrate_noise_multiplier(1.0, 1e-5, 0), 'count'),
    (lambda: calibrate_noise_multiplier(1.0, 1e-5, 1, rtol=0.1), 'rtol'),
    (lambda: PrivacyBudget(0.0, 1e-5), 'epsilon'),
    (lambda: PrivacyBudget(NAN, 1e-5), 'epsilon'),
    (lambda: PrivacyBudget(1.0, 1.0), 'delta'),
    (lambda: PrivacyBudget(1.0, -0.1), 'delta'),
    (lambda: PrivacyBudget(1.0, NAN), 'delta'),
    (lambda: PrivacyBudget(1.0, 1e-5).spend(epsilon=-0.1), 'epsilon'),
    (lambda: PrivacyBudget(1.0, 1e-5).spend(epsilon=NAN), 'epsilon'),
    (lambda: PrivacyBudget(1.0, 1e-5).spend(epsilon=0.1, delta=2.0), 'delta'),
    (lambda: PrivacyBudget(1.0, 1e-5).spend(), 'epsilon'),
    (lambda: PrivacyBudget(1.0, 1e-5).spend(accountant=RDPAccountant()), 'delta'),
    (lambda: PrivacyBudget(1.0, 1e-5).spend(accountant='acc', delta=1e-6), 'accountant'),
    (lambda: PrivacyBudget(1.0, 1e-5).spend(epsilon=0.1, accountant=RDPAccountant(), delta=1e-6), 'accountant'),
    (lambda: discrete_gaussian(0.0, 10), 'sigma'),
    (lambda: discrete_gaussian(NAN, 10), 'sigma'),
    (lambda: discrete_gaussian(1e-5, 10), 'sigma'),
    (lambda: discrete_gaussian(2.0**30, 10), 'too large'),
    (lambda: discrete_laplace(-1.0, 10), 'scale'),
    (lambda: discrete_laplace_mechanism([1.5], 1, 1.0), 'value'),
    (lambda: discrete_laplace_mechanism([1], 1, 0.0), 'epsilon'),
    (lambda: discrete_gaussian_mechanism([1], 0, 1.0), 'sensitivity'),
    (lambda: discrete_gaussian_mechanism([1], 1, -1.0), 'noise_multiplier'),
    (lambda: clipped_sensitivity(-1.0), 'clip_norm'),
    (lambda: clipped_sensitivity(1.0, 'neighbours'), 'relation'),
    (lambda: audit_epsilon_lower_bound(np.zeros(5), np.zeros(5)), 'out0'),
    (lambda: audit_epsilon_lower_bound(np.zeros(50), np.zeros(50), alpha=1.5), 'alpha'),
    (lambda: audit_epsilon_lower_bound(np.zeros(50), np.zeros(50), delta=1.0), 'delta'),
    (lambda: sequential_composition([(NAN, 0)]), 'epsilon'),
]


@pytest.mark.parametrize('call,name', BAD, ids=[f'{i}-{n}' for i, (_, n) in enumerate(BAD)])
def test_bad_input_names_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_failed_calls_leave_input_untouched():
    v = np.array([1.0, 2.0, 3.0])
    df = pd.DataFrame({'a': [1.0, 2.0]})
    for call in [
        lambda: laplace_mechanism(v, 1.0, -1.0),
        lambda: gaussian_mechanism(df, 1.0, 1.0, 0.0),
        lambda: matrix_normal_mechanism(v, 1.0, 1.0, 1e-5),
    ]:
        with pytest.raises(ValueError):
            call()
    assert v.tolist() == [1.0, 2.0, 3.0] and df['a'].tolist() == [1.0, 2.0]


def _bad_dp_calls():
    "Bad inputs of the dp toolkit's public functions, each with a word the error must contain (issue 26)."
    import fedgauss.dp as dp

    nan = float('nan')
    return [
        ('clipped_sensitivity(-1)', lambda: dp.clipped_sensitivity(-1.0), 'clip_norm'),
        ('clipped_sensitivity relation', lambda: dp.clipped_sensitivity(1.0, 'replace'), 'relation'),
        ('laplace_mechanism sensitivity', lambda: dp.laplace_mechanism(1.0, -1.0, 1.0), 'sensitivity'),
        ('laplace_mechanism epsilon nan', lambda: dp.laplace_mechanism(1.0, 1.0, nan), 'epsilon'),
        ('laplace_mechanism rng', lambda: dp.laplace_mechanism(1.0, 1.0, 1.0, 'seed'), 'rng'),
        ('gaussian_sigma delta 0', lambda: dp.gaussian_sigma(1.0, 0.0), 'delta'),
        ('gaussian_sigma delta 1', lambda: dp.gaussian_sigma(1.0, 1.0), 'delta'),
        ('gaussian_sigma method', lambda: dp.gaussian_sigma(1.0, 1e-5, 1.0, 'x'), 'method'),
        ('gaussian_epsilon sigma', lambda: dp.gaussian_epsilon(0.0, 1e-5), 'sigma'),
        ('gaussian_delta epsilon', lambda: dp.gaussian_delta(1.0, -1.0), 'epsilon'),
        ('gaussian_mechanism delta', lambda: dp.gaussian_mechanism(1.0, 1.0, 1.0, 1.5), 'delta'),
        ('matrix_normal_mechanism 1-d', lambda: dp.matrix_normal_mechanism(np.ones(3), 1.0, 1.0, 1e-5), 'matrix'),
        ('discrete_laplace scale', lambda: dp.discrete_laplace(0.0), 'scale'),
        ('discrete_gaussian sigma nan', lambda: dp.discrete_gaussian(nan), 'sigma'),
        ('discrete_gaussian_mechanism multiplier', lambda: dp.discrete_gaussian_mechanism([1], 1, -2.0), 'noise_mult'),
        ('discrete_gaussian_mechanism values', lambda: dp.discrete_gaussian_mechanism([1.5], 1, 2.0), 'integers'),
        ('gaussian_rdp orders < 1', lambda: dp.gaussian_rdp(0.5, 1.0), 'orders'),
        ('laplace_rdp orders < 1', lambda: dp.laplace_rdp([1.0, 0.9], 1.0), 'orders'),
        ('calibrate count', lambda: dp.calibrate_noise_multiplier(1.0, 1e-5, 0), 'count'),
        ('calibrate epsilon nan', lambda: dp.calibrate_noise_multiplier(nan, 1e-5), 'epsilon'),
        ('PrivacyBudget epsilon', lambda: dp.PrivacyBudget(-1.0), 'epsilon'),
        ('PrivacyBudget delta', lambda: dp.PrivacyBudget(1.0, 1.0), 'delta'),
        ('spend epsilon', lambda: dp.PrivacyBudget(1.0).spend(epsilon=-1.0), 'epsilon'),
        ('accountant conversion', lambda: dp.RDPAccountant().epsilon(1e-5, 'x'), 'conversion'),
        ('accountant count', lambda: dp.RDPAccountant().add_gaussian(1.0, 0), 'count'),
        ('sum divergence sigma', lambda: dp.dgauss_sum_divergence(0.4, 3), 'sigma'),
        ('sum divergence n', lambda: dp.dgauss_sum_divergence(1.0, 0), 'n'),
        ('rounding divergence s', lambda: dp.dgauss_rounding_divergence(0.1), 's'),
        ('ddg multiplier sensitivity', lambda: dp.ddg_rdp_multiplier(1.0, 3, -1.0, 10), 'sensitivity'),
        ('ddg multiplier dim', lambda: dp.ddg_rdp_multiplier(1.0, 3, 1.0, 0), 'dim'),
        ('ddg surrogate s', lambda: dp.ddg_gaussian_surrogate(1.0, 3, 10, 3.0), 'exceed'),
        (
            'ddg accountant sigma',
            lambda: dp.RDPAccountant().add_distributed_discrete_gaussian(0.3, 3, 1.0, 10),
            'sigma',
        ),
        ('charged_epsilon gamma', lambda: dp.charged_epsilon(lambda d: 1.0, 1e-5, -1.0), 'gamma'),
        ('charged_epsilon delta', lambda: dp.charged_epsilon(lambda d: 1.0, 2.0, 0.0), 'delta'),
        ('audit thresholds', lambda: dp.audit_epsilon_lower_bound(np.zeros(30), np.ones(30), 0.0, 1.5), 'alpha'),
        ('clopper_pearson counts', lambda: dp.clopper_pearson(5, 3), 'k'),
    ]


@pytest.mark.parametrize('case', range(len(_bad_dp_calls())), ids=[c[0] for c in _bad_dp_calls()])
def test_dp_toolkit_bad_input_catalogue(case):
    _, call, word = _bad_dp_calls()[case]
    with pytest.raises((ValueError, TypeError), match=word):
        call()


def test_dp_noise_is_secret_randomness():
    "rng None or a seed: the noise comes from a ChaCha20 generator (fedgauss.entropy); a Generator is used as given."
    import fedgauss.dp as dp
    from fedgauss.entropy import is_secret_rng

    assert is_secret_rng(dp._noise_rng(None)) and is_secret_rng(dp._noise_rng(7))
    g = np.random.default_rng(0)
    assert dp._noise_rng(g) is g
    a, b = dp.laplace_mechanism(np.zeros(5), 1.0, 1.0, rng=7), dp.laplace_mechanism(np.zeros(5), 1.0, 1.0, rng=7)
    assert np.array_equal(a, b)  # reproducible for whoever holds the seed
    assert not np.array_equal(a, np.random.default_rng(7).laplace(0.0, 1.0, 5))  # not numpy's stream of the seed
