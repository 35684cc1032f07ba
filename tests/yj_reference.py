"""Independent mpmath references for the Yeo-Johnson tests and benchmark (no fedgauss code is used here).

The maximum-likelihood lambda is the root of the textbook derivative of the profile log-likelihood,
    d/dlambda log L = S_phi - n cov(Psi, dPsi) / var(Psi),
with a two-pass variance and covariance evaluated at `dps` significant digits. For one-signed data the
constant terms -1/lambda_s of Psi and 1/lambda_s^2 of dPsi are dropped (variance and covariance do not see
them, and mpmath's unbounded exponent holds e^(lambda_s l) at any lambda); mixed-sign data use the formula as is.
The root is bracketed by a sign change found by stepping outwards from a guess (a wrong guess only costs time).
"""
import mpmath
import numpy as np


class MPYeoJohnson:
    "Textbook Yeo-Johnson likelihood of one feature in mpmath (repeated values grouped with their counts)."
    def __init__(self, x, dps=60):
        x = np.asarray(x, dtype=np.float64)
        x = x[~np.isnan(x)]
        vals, cnt = np.unique(x, return_counts=True)
        self.dps, self.n = dps, int(cnt.sum())
        self.one_signed = bool((vals >= 0).all() or (vals <= 0).all())
        all_pos = bool((vals >= 0).all())
        with mpmath.workdps(dps):
            self.sg = [1 if (v > 0 or (v == 0 and all_pos)) else -1 for v in vals]
            self.ls = [mpmath.log1p(abs(mpmath.mpf(float(v)))) for v in vals]
            self.cs = [int(c) for c in cnt]
            self.sphi = mpmath.fsum(c*s*l for c, s, l in zip(self.cs, self.sg, self.ls))

    def _psi(self, lam):
        psi, dpsi = [], []
        for s, l in zip(self.sg, self.ls):
            m = lam if s > 0 else 2 - lam
            if m == 0: p, q = s*l, l*l/2
            else:
                E = mpmath.exp(m*l)
                if self.one_signed: p, q = s*E/m, (m*l - 1)*E/m**2
                else: p, q = s*(E - 1)/m, ((m*l - 1)*E + 1)/m**2
            psi.append(p); dpsi.append(q)
        return psi, dpsi

    def dloglik(self, lam):
        with mpmath.workdps(self.dps):
            lam = mpmath.mpf(lam); n, cs = self.n, self.cs
            psi, dpsi = self._psi(lam)
            mu = mpmath.fsum(c*p for c, p in zip(cs, psi))/n
            md = mpmath.fsum(c*q for c, q in zip(cs, dpsi))/n
            var = mpmath.fsum(c*(p - mu)**2 for c, p in zip(cs, psi))
            cov = mpmath.fsum(c*(p - mu)*(q - md) for c, p, q in zip(cs, psi, dpsi))
            return self.sphi - n*cov/var

    def loglik(self, lam):
        "Profile log-likelihood -n/2 log var(Psi) + (lambda - 1) S_phi (textbook Psi, including its constants)."
        with mpmath.workdps(self.dps + int(abs(float(lam))*float(max(self.ls))/2.3) + 10):
            lam = mpmath.mpf(lam); n, cs = self.n, self.cs
            psi = [s*(l if (lam if s > 0 else 2 - lam) == 0 else mpmath.expm1((lam if s > 0 else 2 - lam)*l)/(lam if s > 0 else 2 - lam))
                   for s, l in zip(self.sg, self.ls)]
            mu = mpmath.fsum(c*p for c, p in zip(cs, psi))/n
            var = mpmath.fsum(c*(p - mu)**2 for c, p in zip(cs, psi))/n
            return -mpmath.mpf(n)/2*mpmath.log(var) + (lam - 1)*self.sphi

    def mle(self, guess=0.0):
        "The maximum-likelihood lambda (float)."
        f = self.dloglik
        with mpmath.workdps(self.dps):
            g = mpmath.mpf(guess); step = mpmath.mpf(1e-10)*max(1, abs(g))
            a = b = g; fa = fb = f(g)
            for _ in range(400):
                if fa == 0: return float(a)
                if (fa > 0) != (fb > 0): break
                if fa > 0: a, fa = b, fb; b = b + step; fb = f(b)
                else: b, fb = a, fa; a = a - step; fa = f(a)
                step *= 4
            else: raise RuntimeError("no sign change of the derivative found")
            return float(mpmath.findroot(f, (a, b), solver='anderson', tol=mpmath.mpf(10)**(-self.dps + 15)))


def mp_yj_mle(x, guess=0.0, dps=60):
    "Maximum-likelihood Yeo-Johnson lambda of the 1-D data `x` with mpmath."
    return MPYeoJohnson(x, dps).mle(guess)


def mp_psi(x, lam, dps=50):
    "Psi(lam, x) by the four textbook cases, in mpmath, as float."
    with mpmath.workdps(dps):
        x = mpmath.mpf(float(x)); lam = mpmath.mpf(float(lam))
        if x >= 0: v = mpmath.log1p(x) if lam == 0 else (mpmath.power(1 + x, lam) - 1)/lam
        else: v = -mpmath.log1p(-x) if lam == 2 else -(mpmath.power(1 - x, 2 - lam) - 1)/(2 - lam)
        return float(v)


def mp_overflow_bound(xmax, ymax, dps=50):
    "The lambda > 0 with ((1 + xmax)^lambda - 1)/lambda = ymax, solved by mpmath."
    with mpmath.workdps(dps):
        l = mpmath.log1p(mpmath.mpf(float(xmax))); Y = mpmath.log(mpmath.mpf(ymax))
        F = lambda u: mpmath.log(mpmath.expm1(u)) - mpmath.log(u) + mpmath.log(l) - Y   # u = lambda l
        u = mpmath.findroot(F, Y - mpmath.log(l) + mpmath.log(Y - mpmath.log(l)))
        return float(u/l)


def adversarial_inputs(seed=7):
    "Inputs built to break the textbook arithmetic (all have a representable maximizer)."
    r = np.random.default_rng(seed)
    return {
        '326 x 0.48 and 10 x 1.0': np.r_[np.full(326, 0.48), np.full(10, 1.0)],
        '10 x 0.48 and 326 x 1.0': np.r_[np.full(10, 0.48), np.full(326, 1.0)],
        'normal(0, 1) and one 1e100': np.r_[r.normal(size=300), 1e100],
        'lognormal and 1e10, 1e15, 1e200': np.r_[r.lognormal(size=200), 1e10, 1e15, 1e200],
        'uniform(1, 2) and one 1e300': np.r_[r.uniform(1, 2, 300), 1e300],
        'normal(1e4, 0.1)': r.normal(1e4, 0.1, 100),
        '1e-8 x lognormal': 1e-8*r.lognormal(size=200),
        'zeros and exponential': np.r_[np.zeros(300), r.exponential(size=100)],
        '-lognormal': -r.lognormal(size=300),
        'normal(0, 1), 50 and 80': np.r_[r.normal(size=300), 50, 80],
        '-uniform(1, 2) and -1e100': np.r_[-r.uniform(1, 2, 300), -1e100],
        'zeros and -exponential': np.r_[np.zeros(30), -r.exponential(size=100)],
        'exponential and one tiny negative': np.r_[r.exponential(size=200), -1e-9],
    }


def overflow_inputs():
    "Inputs whose maximizer would make Psi overflow: (name, x, side) with side +1 for an upper bound, -1 for a lower one."
    return [('[10, 10, 10, 9.9]', np.array([10, 10, 10, 9.9]), 1),
            ('-[10, 10, 10, 9.9]', -np.array([10, 10, 10, 9.9]), -1),
            ('normal(1e4, 1e-3) (seed 1)', np.random.default_rng(1).normal(1e4, 1e-3, 100), 1)]
