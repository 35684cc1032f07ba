"""The bad-input catalogue of fedgauss.dpgbdt (issue 31): every public entry point of the DP federated GBDT — the two
estimators (fit, predict, predict_proba, decision_function, preset, protocol_inputs), the functions of the lesson
(nb31) and the per-party input check of the programs (nb31a) — against NaN, +-inf, empty input, one row, one class,
constant columns, scales from 1e-300 to 1e308 of both signs, integer / nullable / boolean / categorical / object /
complex dtypes, mismatched columns between clients, wrong lengths, out-of-range and wrongly typed hyperparameters,
predict before fit and fit twice.

The harness is the catalogue's (`tests/test_bad_input.py`): each case ends in a clear error whose message matches a
pattern naming the problem, or in a result checked against a reference (trees depend on the order of the values only,
so a fit on rescaled data, with its bounds rescaled, predicts exactly what the fit on the base data predicts, noise
included); the caller's data are untouched, no numpy RuntimeWarning leaks out, and no warning is printed twice.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from test_bad_input import V, expect, label  # the harness and the tabular inputs of the catalogue

from fedgauss import dpgbdt as D
from fedgauss.dpgbdt import DPGBDTClassifier, DPGBDTRegressor
from fedgauss.dpgbdt_programs import dpgbdt_check
from fedgauss.federation import Channel

FAST = dict(n_estimators=3, n_clients=2, rng=0)
B = V['base']
y_reg = B['a'].to_numpy() / 4  # within +-grad_clip: no scale warning


def clf(**kw):
    return DPGBDTClassifier(**{'epsilon': None, **FAST, **kw})


def reg(**kw):
    return DPGBDTRegressor(**{'epsilon': None, **FAST, **kw})


def proba(est, X, y):
    return est.fit(X, y).predict_proba(X)[:, 1]


def same_as(ref):
    "The result equals `ref` exactly (to 1e-12), and is finite."

    def check(p):
        assert np.isfinite(p).all()
        np.testing.assert_allclose(p, ref, rtol=1e-12, atol=0)

    return check


def finite_proba(p):
    assert np.isfinite(p).all() and ((p >= 0) & (p <= 1)).all()


# ------------------------------------------------------------------------------------------------ tabular inputs
NAN = r"NaN or infinity in column\(s\) \['{}'\]"
CLF_EXPECT = {
    'nan': r"NaN or infinity in column\(s\) \['a', 'b'\]",
    'all-nan column': NAN.format('b'),
    '+inf': NAN.format('a'),
    '-inf': NAN.format('b'),
    'empty': 'n_samples=0: fewer rows than n_clients',
    'one row': 'n_samples=1: fewer rows than n_clients',
    'nullable Int64 with NA': r"NaN or infinity in column\(s\) \['a', 'b'\]",
    'object (text)': "column 'b' of X must be numeric or categorical",
    'complex': "Complex data not supported: column 'b'",
}


def _clf_want(name):
    if name in CLF_EXPECT:
        return CLF_EXPECT[name]
    if name.startswith('scale -'):
        return same_as(proba(clf(), -B, label))
    if name.startswith('scale'):
        return same_as(proba(clf(), B, label))
    if name == 'mixed 1e300':
        return same_as(proba(clf(), V['mixed signs'], label))
    return finite_proba


@pytest.mark.parametrize('name', list(V))
def test_classifier_inputs(name):
    "Every tabular input of the catalogue, non-private (bounds from the data): the base fit's predictions at any scale."
    X = V[name]
    expect(lambda X, y: proba(clf(), X, y), (X, label[: len(X)]), _clf_want(name))


PRIVATE_SCALES = [1e-300, 1e-100, 1e-20, 1e20, 1e100, 1e300, -1e-300, -1e300]


@pytest.mark.parametrize('s', PRIVATE_SCALES)
def test_private_fit_is_scale_free_with_declared_bounds(s):
    "A private fit (noise and all) on X * s with the declared bounds * s predicts exactly what the fit on X predicts."
    base = B * np.sign(s)
    bounds = (0, 20) if s > 0 else (-20, 0)
    kw = dict(epsilon=1.0, max_rows=100, **FAST)
    ref = proba(DPGBDTClassifier(feature_bounds=bounds, **kw), base, label)
    big = tuple(sorted(b * abs(s) for b in bounds))
    expect(lambda X, y: proba(DPGBDTClassifier(feature_bounds=big, **kw), X, y), (base * abs(s), label), same_as(ref))


def test_features_at_1e308_issue_31():
    "sign(X) * 1e308: hi - lo overflowed and every threshold was inf; now the thresholds of the fit on sign(X), scaled."
    X = np.sign(B.to_numpy() - B.median().to_numpy())
    ref = clf().fit(X, label)
    expect(lambda X, y: clf().fit(X, y).tree_thresholds_, (X * 1e308, label), same_as(ref.tree_thresholds_ * 1e308))
    expect(lambda X, y: proba(clf(), X, y), (X * 1e308, label), same_as(proba(clf(), X, label)))
    # one feature at +-1e308 next to an ordinary one, private, with its declared bounds: no numpy warning
    Xm = np.c_[X[:, 0] * 1e308, B['b']]
    kw = dict(epsilon=1.0, max_rows=100, feature_bounds=[(-1e308, 1e308), (0, 20)], **FAST)
    expect(lambda X, y: proba(DPGBDTClassifier(**kw), X, y), (Xm, label), finite_proba)
    for method in ('uniform', 'log', 'iterative_hessian'):
        kw2 = kw | dict(split_candidates=method, ih_method='greedy')
        expect(lambda X, y: proba(DPGBDTClassifier(**kw2), X, y), (Xm, label), finite_proba)


# ------------------------------------------------------------------------------------------------ labels
@pytest.mark.parametrize(
    'y, want',
    [
        (np.where(label, 'yes', 'no'), lambda p: set(p) <= {'yes', 'no'}),
        (pd.Series(pd.Categorical(np.where(label, 'y', 'n'))), lambda p: set(p) <= {'y', 'n'}),
        (label.astype(bool), lambda p: p.dtype == bool),
        (np.array(['a', 1] * 20, dtype=object), r"Unknown label type: y mixes \['int', 'str'\]"),
        (np.r_[np.nan, label[1:]], 'y contains NaN'),
        (np.arange(40) % 3, lambda p: set(p) <= {0, 1, 2}),  # K = 3: the softmax loss
        (np.array(['a', 'b', 'c', 'd'] * 10), lambda p: set(p) <= set('abcd')),
        (np.zeros(40), 'only one class'),
        (label + 0.5 * np.arange(40), 'Unknown label type: continuous'),
        (label[:39], 'X has 40 rows but y has 39 labels'),
        (pd.array(np.r_[[None], label[1:]], dtype='Int64'), 'y contains NaN'),
    ],
)
def test_classifier_labels(y, want):
    expect(lambda X, y: clf().fit(X, y).predict(X), (B, y), want)


@pytest.mark.parametrize(
    'y, want',
    [
        (y_reg, lambda p: np.isfinite(p).all()),
        (np.r_[np.nan, y_reg[1:]], 'y contains NaN'),
        (np.r_[np.inf, y_reg[1:]], 'y contains NaN or infinity'),
        (y_reg.astype(str), 'y must be numeric for regression'),
        (y_reg[:39], 'X has 40 rows but y has 39 labels'),
        (pd.array(np.r_[[None], np.arange(39)], dtype='Int64'), 'y contains NaN'),
        (
            pd.array(np.arange(40) % 2, dtype='Int64'),
            same_as(reg().fit(B, (np.arange(40) % 2).astype(float)).predict(B)),
        ),
    ],
)
def test_regressor_labels(y, want):
    expect(lambda X, y: reg().fit(X, y).predict(X), (B, y), want)


def _warned(f):
    "Run f; the messages of the warnings it printed (each at most once)."
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        f()
    msgs = [str(x.message) for x in w]
    assert len(msgs) == len(set(msgs)), msgs
    return msgs


@pytest.mark.parametrize(
    's, msg',
    [
        (1e300, 'predictions cannot exceed'),
        (1e6, 'predictions cannot exceed'),
        (1e-6, 'below 64 steps'),
        (1e-300, 'below 64 steps'),
    ],
)
def test_regression_targets_out_of_reach_are_said_issue_31(s, msg):
    "y = x0 * 1e300 was fitted within +-0.5, y ~ 1e-6 rounded away by the 16-bit fixed point, silently: now warned once."
    X = B.to_numpy()
    msgs = _warned(lambda: reg(n_estimators=20).fit(X, X[:, 0] * s))
    assert len(msgs) == 1 and msg in msgs[0] and 'scale y' in msgs[0].lower(), msgs
    assert _warned(lambda: reg(n_estimators=20).fit(X, y_reg)) == []  # y of the order of grad_clip: no warning
    expect(lambda X, y: reg(n_estimators=20).fit(X, y).predict(X), (X, X[:, 0] * s), lambda p: np.isfinite(p).all())


# ------------------------------------------------------------------------------------------------ clients
A = B.to_numpy()
CAT = B.assign(c=pd.Categorical(np.where(label, 'u', 'v'), categories=['u', 'v']))


@pytest.mark.parametrize(
    'clients, want',
    [
        ([(A[:20], label[:20]), (A[20:], label[20:])], finite_proba),
        ([(A[:20], label[:20]), (A[20:, :1], label[20:])], 'client 1 has 1 columns, expected 2'),
        ([(B[:20], label[:20]), (B[20:].rename(columns={'b': 'c'}), label[20:])], r"columns \['a', 'c'\] differ"),
        (
            [(CAT[:20], label[:20]), (CAT[20:].assign(c=CAT.c[20:].cat.set_categories(['v', 'u'])), label[20:])],
            'client 1 declares other category levels',
        ),
        ([(A, label)], 'at least 2 clients'),
        ([(A[:20], label[:19]), (A[20:], label[20:])], 'client 0: 20 rows but 19 labels'),
        ([(A[:20], label[:20]), (A[:0], label[:0])], 'client 1 has no rows'),
        ([(A[:20],), (A[20:], label[20:])], r'fit\(clients\) with a list of \(X_k, y_k\)'),
        ([(A[:20], label[:20]), (A[20:] * np.nan, label[20:])], 'NaN or infinity'),
    ],
)
def test_client_lists(clients, want):
    expect(lambda c: clf().fit(c).predict_proba(A)[:, 1], (clients,), want)


# ------------------------------------------------------------------------------------------------ the fitted model
def test_predict_before_fit():
    for est in (clf(), reg()):
        expect(est.predict, (A,), 'not fitted')
    expect(clf().predict_proba, (A,), 'not fitted')
    expect(clf().decision_function, (A,), 'not fitted')


@pytest.mark.parametrize(
    'X, want',
    [
        (B.rename(columns={'b': 'c'}), r"columns \['a', 'c'\] differ from \['a', 'b'\]"),
        (B[['a']], r"columns \['a'\] differ"),
        (A[:, :1], 'X has 1 features, but DPGBDTClassifier is expecting 2'),
        (V['nan'], 'NaN or infinity'),
        (V['object (text)'], 'must be numeric'),
        (V['empty'], lambda p: p.shape == (0,)),
        (A, lambda p: np.isfinite(p).all()),  # an array where the fit had a DataFrame: the same columns by position
    ],
)
def test_predict_inputs(X, want):
    m = clf().fit(B, label)
    expect(lambda X: m.decision_function(X), (X,), want)


def test_fit_twice_is_a_fresh_fit():
    m = clf()
    m.fit(V['scale 1e+20'], label)
    expect(lambda X, y: m.fit(X, y).predict_proba(X)[:, 1], (A, label), same_as(proba(clf(), A, label)))
    assert not hasattr(m, 'feature_names_in_')  # the second fit had no column names


# ------------------------------------------------------------------------------------------------ hyperparameters
PUB = dict(feature_bounds=(0, 20), max_rows=100)


@pytest.mark.parametrize(
    'kw, msg',
    [
        (dict(feature_interaction='cyclical', k=-1), r'k must be an integer in \[1, inf\]; got -1'),
        (dict(k=0), 'k must be an integer'),
        (dict(k=1.5), 'k must be an integer'),
        (dict(max_depth=100), r'max_depth must be an integer in \[1, 20\]; got 100'),
        (dict(max_depth=20, n_estimators=10), 'the fit is too large.*lower max_depth'),
        (dict(n_candidates=0), 'n_candidates'),
        (dict(batch_size=1.5), 'batch_size'),
        (dict(noise='x'), 'noise must be'),
        (dict(accountant='pld'), 'accountant must be'),
        (dict(epsilon=-1), 'epsilon must be > 0'),
        (dict(epsilon='1'), 'epsilon must be > 0'),
        (dict(delta=1.5), r'delta must be in \(0, 1\)'),
        (dict(feature_bounds=[(0, 1)] * 3), r'one \(low, high\) pair or 2 of them'),
        (dict(feature_bounds=(np.nan, 1)), 'feature_bounds must be finite'),
        (dict(feature_bounds=(1, 0)), 'inverted'),
        (dict(feature_bounds={'a': (0, 1)}), r"no \(low, high\) for column\(s\) \['b'\]"),
        (dict(n_clients=1), 'at least 2 clients'),
        (dict(n_clients=100), 'fewer rows than n_clients=100'),
        (dict(frac_bits=40), 'frac_bits'),
        (dict(leaf_clip=0), 'leaf_clip'),
        (dict(learning_rate=np.inf), 'learning_rate'),
        (dict(reg_lambda=-1), 'reg_lambda'),
        (dict(grad_clip=-1.0), 'grad_clip'),
        (dict(ih_rounds=-1), 'ih_rounds'),
        (dict(n_estimators=0), 'n_estimators'),
        (dict(rng='x'), 'rng must be'),
        (dict(full_cycles=1), 'full_cycles'),
        (dict(gh_release='x'), 'gh_release'),
        (dict(split_method='exact'), 'split_method'),
        (dict(weight_update='sgd'), 'weight_update'),
        (dict(split_candidates='random'), 'split_candidates'),
        (dict(ih_method='x'), 'ih_method'),
    ],
)
def test_hyperparameters(kw, msg):
    expect(lambda X, y: DPGBDTClassifier(**{**FAST, **PUB, **kw}).fit(X, y), (B, label), msg)


def test_presets_and_protocol_inputs():
    expect(DPGBDTClassifier.preset, ('XGBoost',), 'unknown preset')
    expect(lambda: DPGBDTClassifier.preset('DP-RF', foo=1), (), "unexpected keyword argument 'foo'")
    expect(lambda: DPGBDTClassifier.preset('DP-RF', max_depth=0, **PUB).fit(B, label), (), 'max_depth')
    est = DPGBDTClassifier(**FAST, **PUB)
    expect(lambda X, y: sorted(est.protocol_inputs(X, y)[0]), (B, label), lambda p: p == ['client0', 'client1'])
    expect(lambda X, y: est.protocol_inputs(X, y), (V['nan'], label), 'NaN or infinity')


# ------------------------------------------------------------------------------------------------ the lesson's functions
C3 = D.initial_candidates('uniform', np.zeros(3), np.ones(3), 8)
X4 = np.zeros((4, 3))
F3, T3 = np.zeros((2, 3), np.intp), np.zeros((2, 3))
BINS = (np.zeros((1, 2), np.intp), np.ones((1, 2), np.intp))
CASES = [
    (D.gh_sensitivity, ('newton', 'regression', -1.0), 'grad_clip must be a finite number > 0'),
    (D.gh_sensitivity, ('newton', 'ranking'), "task must be 'classification' or 'regression'"),
    (D.gh_sensitivity, ('sgd',), 'weight_update must be one of'),
    (D.plan_queries, ('hist', [3], 0), r'max_depth must be an integer in \[1'),
    (D.plan_queries, ('hist', [-3], 2), 'tree_features must be one count >= 1'),
    (D.plan_queries, ('hist', [], 2), 'at least one tree'),
    (D.plan_queries, ('totally_random', [1], 2, -2), 'ih_trees'),
    (D.plan_queries, ('exact', [1], 2), 'split_method'),
    (D.plan_queries, ('hist', [3], 2), lambda q: q == {'histograms': 12}),
    (D.calibrate_multiplier, (0, 1e-5, 10), 'epsilon'),
    (D.calibrate_multiplier, (1, 1e-5, 0), 'count'),
    (D.calibrate_multiplier, (1, 1e-5, 2.5, 'exact'), 'count must be an integer'),
    (D.calibrate_multiplier, (1, 1, 10, 'exact'), 'delta'),
    (D.calibrate_multiplier, (1, 1e-5, 10, 'pld'), 'accountant'),
    (D.spent_epsilon, (1, 1e-5, 0, 'exact'), 'count must be an integer'),
    (D.spent_epsilon, (-1, 1e-5, 10, 'exact'), 'z must be a finite number > 0'),
    (D.spent_epsilon, (10, 1e-5, 10, 'exact', -1), 'gamma'),
    (D.ddg_tau_log10, (-1, 3), 'sigma_client'),
    (D.ddg_tau_log10, (1, 0), 'n_clients'),
    (D.ddg_tau_log10, (1e3, 1), lambda t: t == -np.inf),
    (lambda: D.NoisePool(-1, 10, rng=0), (), 'sigma must be a positive'),
    (lambda: D.NoisePool(10, 10, rng=0).take(-1), (), r'n must be an integer in \[0'),
    (lambda: D.NoisePool(10, 10, rng=0).take(0), (), lambda a: a.shape == (0,)),
    (D.initial_candidates, ('uniform', np.array([1.0]), np.array([0.0]), 4), 'inverted'),
    (D.initial_candidates, ('uniform', np.array([np.nan]), np.array([0.0]), 4), 'lo must be finite'),
    (D.initial_candidates, ('uniform', np.array([0.0]), np.array([1.0]), 0), 'n_candidates'),
    (D.initial_candidates, ('uniform', np.array([0.0, 0]), np.array([1.0]), 3), 'one bound per feature'),
    (D.initial_candidates, ('quantile', np.array([0.0]), np.array([1.0]), 3), "'quantile' needs the pooled rows"),
    (D.initial_candidates, ('random', np.array([0.0]), np.array([1.0]), 3), 'split_candidates must be one of'),
    (D.initial_candidates, ('uniform', np.array([2.0]), np.array([2.0]), 3), lambda c: np.isinf(c[0, 1:]).all()),
    (D.initial_candidates, ('log', np.array([-1e308]), np.array([1e308]), 3), lambda c: np.isfinite(c).all()),
    (D.ih_candidates, ([1, 2, 3], 0, 4, [1, 1]), 'one value per bin'),
    (D.ih_candidates, ([1, 2, 3], 0, 4, [1, np.nan, 1, 1]), 'hess_hist must be finite'),
    (D.ih_candidates, (np.array([-5e307, 0, 5e307]), -1e308, 1e308, [1, 5, 5, 1]), lambda t: np.isfinite(t).all()),
    (D.ih_greedy_candidates, ([], [1.0], 1.0, 4), 'thresholds must be non-empty'),
    (D.ih_greedy_candidates, ([1, 2], [1, 1, 1], 3.0, 0), 'n_candidates'),
    (D.ih_greedy_candidates, ([1, 2], [1, 1], 3.0, 2), 'one more hess_hist value'),
    (D.ih_greedy_candidates, ([1, 2], [1, 1, 1], np.nan, 2), 'total_hess'),
    (D.ih_greedy_candidates, (np.array([1e308, 1.5e308]), [0, 9, 0], 1.0, 4), lambda t: np.isfinite(t).all()),
    (D.random_tree_splits, (C3, [], 2, 0), 'features must be a non-empty list'),
    (D.random_tree_splits, (C3, [7], 2, 0), 'indices of the 3 rows'),
    (D.random_tree_splits, (C3, [0], 0, 0), 'max_depth'),
    (D.random_tree_splits, (C3[0], [0], 2, 0), 'features must be'),
    (D.random_tree_splits, (C3, [0, 2], 2, 0), lambda r: len(r[0]) == 3),
    (D.route, (X4, np.zeros(2, np.intp), np.zeros(2), 2), r'features and thresholds must be \(trees, 3\)'),
    (D.route, (X4, np.array([0, 5, 1]), np.zeros(3), 2), r'column indices in \[0, 3\)'),
    (D.route, (np.zeros(4), np.zeros(3, np.intp), np.zeros(3), 2), 'X must be 2-d'),
    (D.route, (X4, np.zeros(3), np.zeros(3), 2), 'column indices'),
    (D.forest_sum, (X4, F3, T3, np.zeros((2, 3)), 2), r'leaves must be \(2, 4\)'),
    (D.forest_sum, (X4, F3, T3, np.ones((2, 4)), 2), lambda s: np.array_equal(s, np.full(4, 2.0))),
    (D.hist_best_splits, (np.zeros((1, 2, 4, 2)), np.array([3]), 1.0), r'hist must be \(nodes, k, Q\+1, 2\)'),
    (D.hist_best_splits, (np.zeros((1, 2, 4)), np.array([3, 3]), 1.0), r'hist must be \(nodes, k, Q\+1, 2\)'),
    (D.child_bins, (BINS, np.array([3]), np.array([0]), np.array([False])), r'fs must be feature slots in \[0, 2\)'),
    (D.leaf_values, ([1], [1], 'sgd'), 'weight_update must be one of'),
    (D.leaf_values, ([1], [1], 'newton', 1.0, 2.0, 'rank'), 'task must be'),
    (D.leaf_values, ([1], [1], 'newton', -1), 'reg_lambda'),
    (D.leaf_values, ([1, 2], [1], 'newton'), 'same shape'),
    (D.leaf_values, ([np.nan], [1], 'newton'), 'G must be finite'),
    (D.leaf_values, ([1.0, 1.0], [0.0, -1.0], 'newton', 0.0), lambda w: np.array_equal(w, [0.0, 0.0])),
    (D.feature_schedule, (0, 3), 'n_features'),
    (D.feature_schedule, (3, 0), 'n_estimators'),
    (D.feature_schedule, (3, 2, 'all'), 'interaction must be'),
    (D.feature_schedule, (3, 4, 'cyclical', -1), 'k must be an integer'),
    (D.feature_schedule, (3, 2, 'random', 5, False, 0), lambda s: [list(f) for f in s] == [[0, 1, 2]] * 2),
    (D.draw_noise_shares, (dict(g=-1.0), dict(g=3), 0), r"scales\['g'\] must be a finite number >= 0"),
    (D.draw_noise_shares, (dict(g=1.0), dict(), 0), r"need has no sample count for the scale\(s\) \['g'\]"),
    (D.clipped_gain, (1, 1, 1, 1, 1.0), lambda g: np.isfinite(g)),
    (D.initial_candidates, ('uniform', [-1e308], [1e308], 3), lambda c: np.allclose(c / 1e308, [[-0.5, 0, 0.5]])),
    (
        dpgbdt_check,
        ({'X': np.zeros((4, 2)), 'y': np.zeros(4)}, dict(n_features=3, me='client1')),
        'client1 has 2 columns',
    ),
    (dpgbdt_check, ({'X': np.zeros((0, 3)), 'y': np.zeros(0)}, dict(n_features=3, me='client1')), 'no rows'),
    (dpgbdt_check, ({'X': np.full((2, 3), np.inf), 'y': np.zeros(2)}, dict(n_features=3, me='c')), 'NaN or infinity'),
    (dpgbdt_check, ({'X': np.zeros((2, 3)), 'y': np.zeros(3)}, dict(n_features=3, me='c')), 'y must be 2 finite'),
    (dpgbdt_check, ({'X': np.zeros((2, 3)), 'y': np.array(['a', 'b'])}, dict(n_features=3, me='c')), 'y must be'),
]


@pytest.mark.parametrize(
    'f, args, want', CASES, ids=[f'{getattr(f, "__name__", "f")}-{i}' for i, (f, _, _) in enumerate(CASES)]
)
def test_lesson_functions(f, args, want):
    expect(f, args, want)


def test_secure_aggregation_parts():
    ch = Channel()
    one = [D.SecAggClient('client0', ch)]
    expect(lambda: D.key_agreement('server', one, 0), (), 'at least 2 clients with distinct names')
    two = [D.SecAggClient(f'client{i}', ch) for i in range(2)]
    expect(lambda: D.key_agreement('server', [two[0], two[0]], 0), (), 'distinct names')
    D.key_agreement('server', two, 0)
    expect(two[0].masked, (np.array([0.5, 1.7]),), 'ints must be an int64 vector')
    expect(two[0].masked, (np.array([2**70], dtype=object),), 'ints must be an int64 vector')
    v = [np.array([3, -5, 2**40]), np.array([-3, 7, 1])]
    for c, x in zip(two, v):
        c.send('server', 'noisy test', c.masked(x))
    expect(lambda: D.secure_aggregate('server', two, 'noisy test'), (), lambda s: np.array_equal(s, v[0] + v[1]))
    expect(lambda: D.secure_aggregate('server', two, 'noisy test'), (), "no message for server of kind 'noisy test'")


# ------------------------------------------------------------------------------- dropouts and missing values (issue 30)
STOPS = "a \\(release >= 0, stage in \\('advertise', 'share', 'mask', 'unmask'\\)\\) each"


@pytest.mark.parametrize(
    'kw, want',
    [
        (dict(dropout_tolerance=1), r'dropout_tolerance must be in \[0, 1\); got 1'),
        (dict(dropout_tolerance=-0.1), 'dropout_tolerance must be a finite number >= 0; got -0.1'),
        (dict(dropout_tolerance=np.nan), 'dropout_tolerance must be a finite number >= 0; got nan'),
        (dict(dropout_tolerance='0.1'), "dropout_tolerance must be a finite number >= 0; got '0.1'"),
        (dict(dropout_tolerance=True), 'dropout_tolerance must be a finite number >= 0; got True'),
        (dict(dropout_tolerance=0.5), 'with 2 clients tolerates 1 dropouts.*threshold t=2.*at most 0'),
        (dict(dropout_tolerance=0.3, noise='aggregator'), "dropout_tolerance needs noise='distributed'"),
        (dict(drop={'client0': (0, 'mask')}), 'it needs dropout_tolerance > 0'),
        (dict(dropout_tolerance=0.3, drop=[('client0', 0)]), 'drop must be a dict'),
        (dict(dropout_tolerance=0.3, drop={'client9': (0, 'mask')}), "drop: 'client9'.*clients are \\['client0'"),
        (dict(dropout_tolerance=0.3, drop={'client0': (-1, 'mask')}), "drop: 'client0': \\(-1, 'mask'\\).*" + STOPS),
        (dict(dropout_tolerance=0.3, drop={'client0': (1.0, 'mask')}), "drop: 'client0': \\(1.0, 'mask'\\)"),
        (dict(dropout_tolerance=0.3, drop={'client0': (0, 'fly')}), "drop: 'client0': \\(0, 'fly'\\)"),
        (dict(dropout_tolerance=0.3, drop={'client0': 0}), "drop: 'client0': 0"),
        (dict(dropout_tolerance=0.3, drop={'client0': (999, 'mask')}, n_clients=4), r"drop: \['client0'\] never"),
        (dict(dropout_tolerance=0.3, drop={'client0': (1, 'share')}, n_clients=4), finite_proba),
        (dict(dropout_tolerance=0.0), same_as(proba(DPGBDTClassifier(**FAST, **PUB), B, label))),
        (dict(missing='mean'), "missing must be one of \\(None, 'learn', 'impute', 'probabilistic'\\); got 'mean'"),
        (dict(missing=True), 'missing must be one of'),
        (dict(missing='learn'), finite_proba),  # no NaN (totally random trees: the default sides drawn all the same)
    ],
)
def test_dropout_and_missing_hyperparameters(kw, want):
    expect(lambda X, y: proba(DPGBDTClassifier(**{**FAST, **PUB, **kw}), X, y), (B, label), want)


INF = "X contains infinity in column\\(s\\) \\['{}'\\]: NaN is a missing value, infinity is not"
MISSING_EXPECT = {
    '+inf': INF.format('a'),
    '-inf': INF.format('b'),
    'empty': 'n_samples=0: fewer rows than n_clients',
    'object (text)': "column 'b' of X must be numeric or categorical",
    'complex': "Complex data not supported: column 'b'",
}


@pytest.mark.parametrize('name', ['nan', 'all-nan column', '+inf', '-inf', 'nullable Int64 with NA', 'empty'])
@pytest.mark.parametrize('missing', ['learn', 'impute', 'probabilistic'])
@pytest.mark.parametrize('split_method', ['totally_random', 'hist'])
def test_missing_values_are_kept_infinity_is_not(name, missing, split_method):
    "With `missing`, NaN (and pandas' NA) are missing values, fitted and predicted at ε = 1; ±inf is refused."
    est = DPGBDTClassifier(**FAST, **PUB, missing=missing, split_method=split_method, epsilon=1.0)
    expect(lambda X, y: proba(est, X, y), (V[name], label[: len(V[name])]), MISSING_EXPECT.get(name, finite_proba))


def test_more_dropouts_than_tolerated_stop_the_fit_before_a_sum_is_released():
    "Two clients at rho = 0.3 tolerate none: the first dropout stops the run, naming who dropped, when and why."
    from fedgauss.smc import DropoutError

    est = DPGBDTClassifier(**FAST, **PUB, dropout_tolerance=0.3, drop={'client0': (0, 'mask')})
    X = B.copy()
    with pytest.raises(DropoutError, match=r'1 of 2 clients dropped: client0 \(mask\); 1 remain, fewer than 2'):
        est.fit(X, label)
    pd.testing.assert_frame_equal(X, B)  # the caller's data untouched


def test_missing_values_at_predict():
    "A model fitted without `missing` refuses NaN at predict, saying how to keep them; one with it scores them."
    Xn = V['nan']
    none = DPGBDTClassifier(**FAST, **PUB).fit(B, label)
    expect(none.predict_proba, (Xn,), r"NaN or infinity in column\(s\) \['a', 'b'\].*missing='learn'")
    for m in ('learn', 'impute', 'probabilistic'):
        est = DPGBDTClassifier(**FAST, **PUB, missing=m).fit(B, label)
        expect(lambda X: est.predict_proba(X)[:, 1], (Xn,), finite_proba)
        expect(est.predict_proba, (V['+inf'],), INF.format('a'))
