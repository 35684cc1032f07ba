"""Missing values in trees: the probabilistic prediction against its definition, the recorded node counts, the
maskers, and the estimators' `missing` option (default direction, imputation, probabilistic)."""

import numpy as np
import pandas as pd
import pytest

from fedgauss.gbdt import GBDTClassifier, GBDTRegressor, node_counts, probabilistic_margin
from fedgauss.missing import mask_mcar, mask_mnar, missing_value_models
from fedgauss.testing import expected_over_paths

G = np.random.default_rng(0)
X = np.column_stack(
    [
        G.normal(size=1500),
        G.integers(0, 6, 1500).astype(float),
        G.normal(size=1500),
        np.where(G.random(1500) < 0.2, np.nan, G.normal(size=1500)),
    ]
)
y = ((X[:, 0] + X[:, 1] / 3 + np.nan_to_num(X[:, 3]) + 0.5 * G.normal(size=1500)) > 1).astype(int)


@pytest.fixture(scope='module')
def prob_model():
    return GBDTClassifier(n_estimators=20, max_depth=4, missing='probabilistic').fit(X, y)


def test_counts_are_the_training_rows_per_node(prob_model):
    for t in prob_model.trees_:
        assert t.count[0] == len(X)
        inner = ~t.is_leaf
        np.testing.assert_array_equal(t.count[inner], t.count[t.left[inner]] + t.count[t.right[inner]])
        np.testing.assert_array_equal(t.count[t.is_leaf], np.bincount(t.apply(X), minlength=t.n_nodes)[t.is_leaf])


def test_expectation_equals_the_path_by_path_definition(prob_model):
    Xq = X[:200].copy()
    mask = G.random(Xq.shape) < 0.4
    Xq[mask] = np.nan
    got = probabilistic_margin(prob_model.trees_, Xq)
    ref = [sum(expected_over_paths(t, x, t.count) for t in prob_model.trees_) for x in Xq]
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    cover = probabilistic_margin(prob_model.trees_, Xq, weights='cover')
    ref_c = [sum(expected_over_paths(t, x, t.sum_hess) for t in prob_model.trees_) for x in Xq]
    np.testing.assert_allclose(cover, ref_c, rtol=1e-12, atol=1e-12)


def test_complete_rows_predict_as_usual_and_all_missing_gives_the_mean_leaf(prob_model):
    learn = GBDTClassifier(n_estimators=20, max_depth=4).fit(X, y)
    Xc = np.nan_to_num(X[:300])
    np.testing.assert_allclose(prob_model.decision_function(Xc), learn.decision_function(Xc), rtol=0, atol=1e-12)
    # a row with nothing observed: each tree predicts its training-weighted mean leaf value
    row = np.full((1, X.shape[1]), np.nan)
    want = prob_model.base_margin_ + sum(
        (t.value[t.is_leaf] * t.count[t.is_leaf]).sum() / t.count[0] for t in prob_model.trees_
    )
    np.testing.assert_allclose(prob_model.decision_function(row), [want], rtol=1e-12)


def test_regressor_and_pandas():
    df = pd.DataFrame(X, columns=list('abcd'))
    r = GBDTRegressor(n_estimators=10, max_depth=3, missing='probabilistic').fit(df, X[:, 0] * 2)
    p = r.predict(df.assign(a=np.nan))
    assert np.isfinite(p).all() and p.std() < r.predict(df).std()  # 'a' unknown: less spread


def test_options_and_errors():
    with pytest.raises(ValueError, match="missing must be one of"):
        GBDTClassifier(missing='guess').fit(X, y)
    with pytest.raises(ValueError, match='no node counts'):
        probabilistic_margin(GBDTClassifier(n_estimators=2).fit(X, y).trees_, X[:5])
    with pytest.raises(ValueError, match='weights'):
        probabilistic_margin([], X[:5], weights='rows')
    with pytest.raises(ValueError, match='rate'):
        mask_mnar(pd.DataFrame(X), 0.6)


def test_masks():
    df = pd.DataFrame({'v': np.arange(30000.0), 'cat': pd.Categorical(np.tile(list('abc'), 10000))})
    for r in (0.1, 0.3, 0.5):
        mc, mn = mask_mcar(df, r, 1), mask_mnar(df, r, 1)
        assert abs(mc['v'].isna().mean() - r) < 0.01 and abs(mn['v'].isna().mean() - r) < 0.01
        hi, lo = mn['v'][df['v'] > 20000].isna().mean(), mn['v'][df['v'] < 10000].isna().mean()
        assert hi > 3 * lo  # large values hide
        assert mn['cat'].isna().groupby(df['cat']).mean().is_monotonic_increasing
    assert df.notna().all().all()


def test_the_four_models_fit_and_agree_without_missing_values():
    Xc = np.nan_to_num(X)
    p = {k: m.fit(Xc, y).predict_proba(Xc)[:, 1] for k, m in missing_value_models(10, 3).items()}
    for k in p:
        np.testing.assert_allclose(p[k], p['default direction'], rtol=0, atol=1e-12)
