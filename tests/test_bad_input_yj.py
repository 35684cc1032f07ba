"""The bad-input catalogue, continued for the Yeo-Johnson entry points (issue 31): the elementwise functions and the
likelihood helpers, `exp_yj`, the transformers, SecureFedYJ's parameters and the `fedgauss yj` command, with the
harness and the table of inputs of `tests/test_bad_input.py` (same invariants: a clear error or a checked result, the
caller's data untouched, no numpy warning, no warning twice)."""

import numpy as np
import pandas as pd
import pytest
from test_bad_input import V, _csv, _pooled_equal, _two_clients, expect, lam_check

from fedgauss.securefedyj import FedYeoJohnsonTransformer, SecureFedYJ
from fedgauss.testing import mp_yj_mle, run_cli
from fedgauss.yeojohnson import (
    YeoJohnsonTransformer,
    exp_yj,
    yeo_johnson,
    yeo_johnson_dlambda,
    yeo_johnson_inverse,
    yj_dloglik,
    yj_dloglik_sign,
    yj_log_likelihood,
    yj_sums,
)

X3 = V['base'].assign(c=V['base']['a'] * 2).to_numpy()  # 40 x 3, positive
SHAPES = 'lmbda of shape \\(2,\\) does not fit [xy] of shape \\(40, 3\\)'


# ------------------------------------------------------------------ elementwise functions and likelihood helpers
@pytest.mark.parametrize(
    'f,args,want',
    [
        (yeo_johnson, (X3, [1.0, 2.0]), SHAPES),
        (yeo_johnson_inverse, (X3, [1.0, 2.0]), SHAPES),
        (yeo_johnson_dlambda, (X3, [1.0, 2.0]), SHAPES),
        (yeo_johnson, (X3, np.ones((2, 3))), 'lmbda of shape \\(2, 3\\) does not fit'),
        (yeo_johnson, (['a', 'b'], 1.0), 'x is not numeric'),
        (yeo_johnson, ([1 + 1j], 1.0), '[Cc]omplex'),
        (yeo_johnson, (None, 1.0), 'x is None'),
        (yeo_johnson, ([1.0], 'a'), 'lmbda must be a number'),
        (yeo_johnson_inverse, (['a'], 1.0), 'y is not numeric'),
        (
            yeo_johnson,
            (X3, [1.0, 0.5, 2.0]),
            lambda y: np.testing.assert_array_equal(y[:, 0], X3[:, 0]),
        ),  # one per column
        (yj_log_likelihood, (X3, [1.0, 2.0]), SHAPES),
        (yj_dloglik, (X3, [1.0, 2.0]), SHAPES),
        (yj_dloglik_sign, (X3, [1.0, 2.0]), SHAPES),
        (yj_log_likelihood, (X3[:, 0], np.nan), 'lmbda must be finite'),
        (yj_dloglik, (np.r_[X3[:, 0], np.inf], 1.0), 'x contains inf'),
        (yj_log_likelihood, (np.array([]), 1.0), 'at least one row'),
        (yj_sums, (X3, [1.0, 2.0]), '2 lambdas for 3 features'),
        (exp_yj, (X3, 3.0), 't_max'),
        (exp_yj, (X3, 128, 'a'), 'ymax must be a finite number'),
        (exp_yj, (X3, 128, np.nan), 'ymax must be a finite number'),
        (exp_yj, (['a', 'b'],), 'not numeric'),
    ],
)
def test_yeo_johnson_functions(f, args, want):
    expect(f, args, want)


def test_likelihood_helpers_on_a_grid_and_per_column():
    "The helpers' documented broadcasting still works: 1-D x with a grid, 2-D x with one lambda per column."
    x = X3[:, 0]
    grid = yj_dloglik(x, [-1.0, 0.0, 1.0])
    np.testing.assert_allclose(grid[1], yj_dloglik(x, 0.0))
    np.testing.assert_array_equal(yj_dloglik_sign(X3, [0.0, 0.0, 0.0]), yj_dloglik_sign(X3, 0.0))


# ------------------------------------------------------------------ exp_yj and the transformers: dtypes, tiny/huge scales
@pytest.mark.parametrize(
    'X,want',
    [
        (V['base'].assign(b=pd.Categorical(['x', 'y'] * 20)), "'b' are not numeric"),
        (V['base'].astype(object), "'a', 'b' are not numeric"),
        (V['nullable Int64 with NA'], lam_check(V['nullable Int64 with NA'])),
        (
            V['base']['a'],
            lambda lam: np.testing.assert_allclose(lam, mp_yj_mle(V['base']['a'].to_numpy(), lam), rtol=1e-9),
        ),
        (np.c_[[1e-300, -1e-300, 2e-300, 5e-301]], lambda lam: np.isfinite(lam).all()),
    ],
)
def test_exp_yj_inputs(X, want):
    expect(exp_yj, (X,), want)


@pytest.mark.parametrize(
    'make,want',
    [
        (lambda: YeoJohnsonTransformer().transform(X3), 'not fitted'),
        (lambda: YeoJohnsonTransformer().inverse_transform(X3), 'not fitted'),
        (lambda: YeoJohnsonTransformer().fit(X3).transform(X3[:, :2]), 'X has 2 features, but .* expecting 3'),
        (lambda: YeoJohnsonTransformer().fit(X3).inverse_transform(X3[:, :2]), 'X has 2 features, but .* expecting 3'),
        (lambda: YeoJohnsonTransformer(standardize='no').fit(X3), 'standardize must be True or False'),
        (lambda: YeoJohnsonTransformer(copy=None).fit(X3), 'copy must be True or False'),
        (lambda: YeoJohnsonTransformer().fit(X3[:, 0]), 'Expected 2D array'),
        (lambda: YeoJohnsonTransformer(ymax='a').fit(X3), 'ymax must be a finite number'),
        (lambda: FedYeoJohnsonTransformer().transform(X3), 'not fitted'),
        (
            lambda: FedYeoJohnsonTransformer(standardize=1).fit(_two_clients(V['base'])),
            'standardize must be True or False',
        ),
    ],
)
def test_transformers(make, want):
    expect(make, (), want)


@pytest.mark.parametrize('name', ['scale 1e-300', 'scale -1e-100', 'scale 1e-20', 'mixed signs'])
def test_transformers_at_tiny_scales_agree(name):
    "The federated transform of a tiny feature equals the pooled one (both in the feature's unit)."
    X = V[name]
    pooled = YeoJohnsonTransformer().fit(X).transform(X)

    def check(Z):
        np.testing.assert_allclose(np.asarray(Z, float), pooled, atol=1e-9)

    expect(lambda cl: FedYeoJohnsonTransformer(rng=0).fit(cl).transform(X), (_two_clients(X),), check)


# ------------------------------------------------------------------ SecureFedYJ's parameters and scales
@pytest.mark.parametrize(
    'kw,msg',
    [
        ({'ymax': -1}, 'ymax must be a finite number'),
        ({'ymax': 'a'}, 'ymax must be a finite number'),
        ({'stat_bits': 0}, 'stat_bits .* integer >= 32'),
        ({'stat_bits': 40.0}, 'stat_bits .* integer >= 32'),
        ({'ring_bits': 'x'}, 'ring_bits must be None .* or an integer >= 64'),
        ({'ring_bits': 64}, 'ring \\(L=64'),
        ({'envelope_bits': 60}, 'envelope_bits must be at most 52'),
        ({'precision': 'high'}, 'precision'),
        ({'bounds': 'x'}, 'bounds must be a \\(n_features, 2\\) array of numbers'),
    ],
)
def test_secure_fed_yj_parameters(kw, msg):
    expect(lambda cl: SecureFedYJ(rng=0, **kw).fit(cl), (_two_clients(V['base']),), msg)


@pytest.mark.parametrize('name', ['scale 1e-300', 'scale -1e-300', 'scale 1e-100', 'scale -1e-20'])
def test_secure_fed_yj_at_tiny_scales(name):
    "Once 'the variance is below the fixed-point resolution ... raise precision (at most 190)': the pooled lambda."
    X = V[name]
    expect(lambda cl: SecureFedYJ(rng=0).fit(cl).lambdas_, (_two_clients(X),), _pooled_equal(X))


def test_secure_fed_yj_categorical_and_nullable_clients():
    base = V['base']
    expect(
        lambda cl: SecureFedYJ(rng=0).fit(cl),
        ([base.assign(b=pd.Categorical(['x', 'y'] * 20)), base],),
        "client 0: column\\(s\\) 'b' are not numeric",
    )
    nullable = V['nullable Int64 with NA']
    expect(lambda cl: SecureFedYJ(rng=0).fit(cl).lambdas_, (_two_clients(nullable),), _pooled_equal(nullable))


# ------------------------------------------------------------------ the command line
def test_cli_dot_is_a_directory(tmp_path, monkeypatch):
    "`fedgauss yj .` once said \"PosixPath('.') has an empty name\"."
    monkeypatch.chdir(tmp_path)
    for arg in ('.', '..', str(tmp_path)):
        code, _out, err = run_cli('yj', arg, '--clients', '2')
        assert code == 2 and err.strip().splitlines()[-1] == (
            f'fedgauss yj: error: {arg} is a directory, not a CSV file: give the CSV file to Gaussianize'
        ), err
    assert not list(tmp_path.glob('*.csv'))


def test_cli_tiny_scale_fits(tmp_path):
    "A CSV of values around 1e-20 (once refused: 'fixed-point resolution'): fitted, and written standardized."
    path = _csv(tmp_path, V['scale 1e-20'])
    code, _out, err = run_cli('yj', path, '--clients', '2', '--out', str(tmp_path / 'o.csv'))
    assert code == 0, err
    Z = pd.read_csv(tmp_path / 'o.csv')
    np.testing.assert_allclose(Z.mean(), 0, atol=1e-9)
    np.testing.assert_allclose(Z.std(ddof=0), 1, rtol=1e-9)


# ------------------------------------------------------------------ branching through the transformer
@pytest.mark.parametrize('b', [0, -1, 2.5, 17, True])
def test_transformer_refuses_a_bad_branching_before_anything_is_sent(b):
    "`FedYeoJohnsonTransformer(branching=b)` names the parameter; the clients' data stay untouched."
    X = np.random.default_rng(0).normal(size=(30, 3))
    clients = [X[:15].copy(), X[15:].copy()]
    with pytest.raises(ValueError, match='branching must be a positive integer'):
        FedYeoJohnsonTransformer(branching=b).fit(clients)
    np.testing.assert_array_equal(np.vstack(clients), X)
