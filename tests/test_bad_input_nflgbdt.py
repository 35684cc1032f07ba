"""The bad-input catalogue of `fedgauss.nflgbdt` (issue 31): the five horizontal estimators (nFL-GBDT, SimFL,
FederBoost, TFL, F-GBDT-G), their per-party programs, and every public function of the module (LSH, similarity, leaf
weights, attacks, messages), against the inputs of tests/test_bad_input.py (NaN, +-inf, empty, one row, constant,
1e-300 ... 1e300 of both signs, integer / nullable / categorical / object dtypes) split between two parties, and against
mismatched columns between parties, wrong lengths, labels, hyperparameters, predict before fit and fit twice.

Each case ends in a clear error whose message names the problem, or in a result checked against a reference:
FederBoost against the pooled core (`GBDTClassifier` on the stacked rows) to the bit; the others against the same fit
on an input the trees cannot tell apart (`_twin`: the same order of values in every column, plain float64), to the bit,
or against the same rows as a float64 array. The harness (`expect`, from tests/test_bad_input.py) also checks that the
caller's data are untouched, that no numpy RuntimeWarning leaks and that no warning is printed twice.
"""

import copy, warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from test_bad_input import TV, _twin, expect, label

from fedgauss.gbdt import GBDTClassifier
from fedgauss.nflgbdt import (
    FederBoostClassifier,
    FGBDTGClassifier,
    LSHCollapseWarning,
    NFLGBDTClassifier,
    PStableLSH,
    SimFLClassifier,
    TFLClassifier,
    collision_probability,
    communication,
    feature_correlation,
    global_leaf_weights,
    individual_errors,
    invert_hashes,
    joint_lsh,
    linear_inversion,
    most_similar,
    pooled,
    similar_counts,
    tree0_label_counts,
    tree_from_message,
    tree_message,
    tree_schedule,
)

KW = dict(n_estimators=3, max_depth=2, rng=0)
ESTIMATORS = {
    'nflgbdt': NFLGBDTClassifier,
    'simfl': SimFLClassifier,
    'federboost': FederBoostClassifier,
    'tfl': TFLClassifier,
    'fgbdtg': FGBDTGClassifier,
}
LSH = {'nflgbdt', 'simfl'}  # they hash every feature: no missing value, no scaling beyond float64
B = TV['base']


def split(X, y):
    "Two parties: the first half of the rows and the second."
    h = len(X) // 2
    part = (lambda a, s: a.iloc[s]) if isinstance(X, pd.DataFrame) else (lambda a, s: a[s])
    return [(part(X, slice(0, h)), y[:h]), (part(X, slice(h, None)), y[h:])]


def fit_proba(Est, **kw):
    "Fit on two parties, return the probabilities of the training rows (in party order)."

    def f(X, y):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', LSHCollapseWarning)  # 40 rows, 2 features, one hash function
            m = Est(**KW, **kw).fit(split(X, y))
        return m.predict_proba(X)[:, 1]

    return f


# ------------------------------------------------------------------------------------------------ inputs
COMMON_ERRORS = {
    '+inf': "client 0: column 'a' contains infinity",
    '-inf': "client 0: column 'b' contains infinity",
    'empty': 'client 0 is empty',
    'one row': 'client 0 is empty',
    'object (text)': "client 0: column 'b' is not numeric",
    'string dtype': "client 0: column 'b' is not numeric",
    'complex': "client 0: column 'b' is complex",
    'datetime': "client 0: column 'b' has dtype datetime64",
    'duplicate names': "client 0: X has duplicate column names: 'a'",
}
LSH_ERRORS = {
    **{k: 'NaN' for k in ('nan', 'all-nan column', 'nullable Int64 with NA', 'categorical with NaN')},
    **{k: 'NaN' for k in ('Float64 with NA', 'boolean with NA')},
    'sign 1e308': 'LSH scaling .* overflows float64',
    'max float': 'LSH scaling .* overflows float64',
}


def reference(est, name):
    "The check of the training probabilities of `est` fitted on `TV[name]`."
    Est, X, y = ESTIMATORS[est], TV[name], label[: len(TV[name])]
    if est == 'federboost':  # the pooled core, to the bit
        core = GBDTClassifier(n_estimators=3, max_depth=2).fit(X, y)
        return lambda p: np.testing.assert_array_equal(p, core.predict_proba(X)[:, 1])
    twin = _twin(name)
    if twin is None:  # the same rows as a plain float64 array (for 'ndarray': as a DataFrame)
        twin = pd.DataFrame(X, columns=['a', 'b']) if name == 'ndarray' else np.asarray(X, dtype=float)
    ref = fit_proba(Est)(twin, y)
    return lambda p: (np.testing.assert_array_equal(p, ref), ((0 < p) & (p < 1)).all() or pytest.fail('not in (0, 1)'))


@pytest.mark.parametrize('est', list(ESTIMATORS))
@pytest.mark.parametrize('name', list(TV))
def test_fit_inputs(name, est):
    want = COMMON_ERRORS.get(name) or (LSH_ERRORS.get(name) if est in LSH else None)
    expect(fit_proba(ESTIMATORS[est]), (TV[name], label[: len(TV[name])]), want or reference(est, name))


@pytest.mark.parametrize('est', list(ESTIMATORS))
def test_one_row_per_party(est):
    """Two rows, one per party and class: no split can be kept; the estimators predict the base rate, 1/2 — TFL and
    F-GBDT-G one value too, their leaf's Laplace noise added to the base margin."""
    X = B.iloc[[0, 1]]
    if est in ('tfl', 'fgbdtg'):
        want = lambda p: (p[0] == p[1] and 0 < p[0] < 1) or pytest.fail(f'{p}')
    else:
        want = lambda p: np.testing.assert_array_equal(p, [0.5, 0.5])
    expect(fit_proba(ESTIMATORS[est]), (X, np.array([0, 1])), want)


# ------------------------------------------------------------------------------------------------ labels
LABELS = {
    'one class': (np.zeros(40), '2 classes or more over all clients; got 1'),
    'text and numbers': (np.array(['a', 1] * 20, dtype=object), 'mix types'),
    'missing label': (np.r_[np.nan, label[1:]], 'client 0: y has missing labels'),
    'nullable with NA': (pd.array(np.r_[[None], label[1:]], dtype='Int64'), 'client 0: y has missing labels'),
    'one label short': (label[:-1], 'client 1: X has 20 rows but y has 19'),
}


@pytest.mark.parametrize('est', list(ESTIMATORS))
@pytest.mark.parametrize('case', list(LABELS))
def test_labels(case, est):
    y, want = LABELS[case]
    expect(fit_proba(ESTIMATORS[est]), (B, y), want)


@pytest.mark.parametrize('est', list(ESTIMATORS))
def test_three_classes_fit(est):
    "Three classes (issue 29): every estimator fits them, one probability per class, rows summing to 1."
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', LSHCollapseWarning)
        m = ESTIMATORS[est](**KW).fit(split(B, np.arange(40) % 3))
    P = m.predict_proba(B)
    assert P.shape == (40, 3) and list(m.classes_) == [0, 1, 2]
    np.testing.assert_allclose(P.sum(1), 1)


@pytest.mark.parametrize('est', list(ESTIMATORS))
def test_text_labels_are_the_numbers_renamed(est):
    Est = ESTIMATORS[est]
    ref = fit_proba(Est)(B, label)
    text = np.where(label == 1, 'yes', 'no')  # 'yes' > 'no': the positive class, as 1 > 0
    expect(fit_proba(Est), (B, text), lambda p: np.testing.assert_array_equal(p, ref))
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', LSHCollapseWarning)
        m = Est(**KW).fit(split(B, text))
    assert set(m.predict(B)) <= {'yes', 'no'} and list(m.classes_) == ['no', 'yes']


# ------------------------------------------------------------------------------------------------ the federation
def _clients_cases():
    (X0, y0), (X1, y1) = split(B, label)
    other_cats = (
        X0.assign(b=pd.Categorical(np.where(X0.b > 1, 'hi', 'lo'))),
        X1.assign(b=pd.Categorical(np.where(X1.b > 1, 'hi', 'lo'), categories=['lo', 'hi', 'mid'])),
    )
    return {
        'one client': ([(X0, y0)], 'at least 2'),
        'not a list': ({'p0': (X0, y0), 'p1': (X1, y1)}, 'at least 2'),
        'a client not a pair': ([(X0, y0), (X1, y1, 1)], 'client 1 must be an'),
        'other column names': ([(X0, y0), (X1.rename(columns={'b': 'c'}), y1)], 'client 1 has columns'),
        'fewer columns': ([(X0, y0), (X1[['a']], y1)], r"client 1 has columns \['a'\]... unlike client 0"),
        'fewer columns (arrays)': (
            [(X0.to_numpy(), y0), (X1[['a']].to_numpy(), y1)],
            'client 1 has 1 columns, client 0 has 2',
        ),
        'array, then frame': ([(X0.to_numpy(), y0), (X1, y1)], 'client 1 has columns'),
        'other categories': ([(other_cats[0], y0), (other_cats[1], y1)], "client 1: column 'b' has categories"),
        'sparse': ([(X0, y0), (__import__('scipy.sparse').sparse.csr_matrix(X1.to_numpy()), y1)], 'sparse'),
        '1-d X': ([(X0, y0), (X1['a'].to_numpy(), y1)], 'client 1: X must be 2-d'),
    }


CLIENTS = _clients_cases()


@pytest.mark.parametrize('est', list(ESTIMATORS))
@pytest.mark.parametrize('case', list(CLIENTS))
def test_federations(case, est):
    clients, want = CLIENTS[case]
    expect(lambda c: ESTIMATORS[est](**KW).fit(c), (clients,), want)


@pytest.mark.parametrize('est', list(ESTIMATORS))
def test_frame_then_array_reads_by_position(est):
    "Client 0 a DataFrame, client 1 an array of the same columns: read by position, as two DataFrames are."
    (X0, y0), (X1, y1) = split(B, label)
    ref = fit_proba(ESTIMATORS[est])(B, label)

    def f(X0, X1):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', LSHCollapseWarning)
            return ESTIMATORS[est](**KW).fit([(X0, y0), (X1, y1)]).predict_proba(B)[:, 1]

    expect(f, (X0, X1.to_numpy()), lambda p: np.testing.assert_array_equal(p, ref))


# ------------------------------------------------------------------------------------------------ hyperparameters
COMMON_PARAMS = [
    (dict(n_estimators=0), 'n_estimators'),
    (dict(n_estimators=2.5), 'n_estimators'),
    (dict(max_depth=0), 'max_depth'),
    (dict(learning_rate=-1), 'learning_rate'),
    (dict(learning_rate=np.nan), 'learning_rate'),
    (dict(reg_lambda=-1), 'reg_lambda'),
    (dict(gamma=-1), 'gamma'),
    (dict(min_child_weight=-1), 'min_child_weight'),
    (dict(max_bins=1), 'max_bins'),
]
OWN_PARAMS = {
    'lsh': [
        (dict(n_tables=0), 'n_tables must be a positive integer'),
        (dict(n_tables=True), 'n_tables must be a positive integer'),
        (dict(r=0), 'r must be a positive number'),
        (dict(r=np.inf), 'r must be a positive number'),
        (dict(stable='levy'), "stable must be 'gaussian' or 'cauchy'"),
        (dict(lsh_scale='minmax'), "lsh_scale must be 'bounds' or 'standard'"),
        (dict(lsh_secret='yes'), 'lsh_secret must be True or False'),
        (dict(lsh_bounds=(np.ones(2), np.zeros(2))), 'low above high for feature 0'),
        (dict(lsh_bounds=(np.zeros(3), np.ones(3))), 'lsh_bounds must be a pair'),
        (dict(lsh_bounds=(np.zeros(2), np.full(2, np.nan))), 'lsh_bounds must be finite'),
        (dict(lsh_bounds=(0.0,)), 'lsh_bounds must be a pair'),
        (dict(lsh_bounds=(np.zeros(2), np.full(2, 1e-12))), 'int32'),
    ],
    'nflgbdt': [(dict(leaf_weighting='mean'), 'leaf_weighting')],
    'federboost': [
        (dict(frac_bits=64), r'frac_bits must be None .* integer in \[16, 54\] for 40 rows over 2 parties'),
        (dict(frac_bits=8), r'frac_bits must be None'),
        (dict(frac_bits=20.5), r'frac_bits must be None'),
        (dict(frac_bits=True), r'frac_bits must be None'),
    ],
    'dp': [
        (dict(epsilon=0), 'epsilon must be a positive number'),
        (dict(epsilon=-1), 'epsilon must be a positive number'),
        (dict(epsilon=np.nan), 'epsilon must be a positive number'),
        (dict(epsilon=True), 'epsilon must be a positive number'),
    ],
}


def _params():
    out = []
    for est in ESTIMATORS:
        own = OWN_PARAMS['lsh'] * (est in LSH) + OWN_PARAMS.get(est, []) + OWN_PARAMS['dp'] * (est in ('tfl', 'fgbdtg'))
        out += [(est, kw, msg) for kw, msg in COMMON_PARAMS + own]
    return out


@pytest.mark.parametrize(
    'est,kw,msg', _params(), ids=[f'{e}-{list(k)[0]}={list(k.values())[0]!r}' for e, k, _ in _params()]
)
def test_hyperparameters(est, kw, msg):
    expect(lambda X, y: ESTIMATORS[est](**dict(KW, **kw)).fit(split(X, y)), (B, label), msg)


def test_frac_bits_in_range_is_the_papers_fixed_point():
    "An explicit frac_bits is the paper's fixed point: close to the pooled core; the default is the core to the bit."
    core = GBDTClassifier(n_estimators=3, max_depth=2).fit(B, label).decision_function(B)
    fixed = FederBoostClassifier(frac_bits=32, **KW).fit(split(B, label)).decision_function(B)
    np.testing.assert_allclose(fixed, core, atol=1e-6)


# ------------------------------------------------------------------------------------------------ predict
def _fitted(est):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', LSHCollapseWarning)
        return ESTIMATORS[est](**KW).fit(split(B, label))


@pytest.mark.parametrize('est', list(ESTIMATORS))
@pytest.mark.parametrize('method', ['predict', 'predict_proba', 'decision_function'])
def test_before_fit(est, method):
    with pytest.raises(NotFittedError, match='not fitted'):
        getattr(ESTIMATORS[est](), method)(B)


PREDICT = {
    'wrong columns': (B[['a']], "X has different columns than at fit"),
    'array of 3 columns': (np.ones((4, 3)), 'X must have 2 columns'),
    '1-d': (np.ones(2), 'X must have 2 columns'),
    '+inf': (TV['+inf'], "X: column 'a' contains infinity"),
    'text': (TV['object (text)'], "X: column 'b' is not numeric"),
}


@pytest.mark.parametrize('est', list(ESTIMATORS))
@pytest.mark.parametrize('case', list(PREDICT) + ['nan', 'empty', 'ndarray'])
def test_predict_inputs(case, est):
    m = _fitted(est)
    if case in PREDICT:
        X, want = PREDICT[case]
    elif case == 'nan':
        X = TV['nan']
        want = 'NaN' if est in LSH else (lambda p: np.isfinite(p).all() or pytest.fail('not finite'))
    elif case == 'empty':
        X, want = B.iloc[:0], lambda p: np.testing.assert_array_equal(p.shape, (0, 2))
    else:  # the same rows as an array: the same probabilities
        X, want = B.to_numpy(), lambda p: np.testing.assert_array_equal(p, m.predict_proba(B))
    expect(m.predict_proba, (X,), want)


@pytest.mark.parametrize('est', list(ESTIMATORS))
def test_fit_twice_keeps_nothing_of_the_first(est):
    "A fit on DataFrames, then on arrays of other values: the model is the second fit's alone (no column names left)."
    m = _fitted(est)
    X2 = B.to_numpy()[::-1].copy()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', LSHCollapseWarning)
        m.fit(split(X2, label))
        fresh = ESTIMATORS[est](**KW).fit(split(X2, label))
    assert not hasattr(m, 'feature_names_in_')
    np.testing.assert_array_equal(m.predict_proba(X2), fresh.predict_proba(X2))


@pytest.mark.parametrize('est', ['federboost', 'tfl'])
def test_categories_as_at_fit(est):
    "A categorical column is coded by the categories declared at fit; a category not seen then is a missing value."
    Xc = B.assign(b=pd.Categorical(np.where(B.b > B.b.median(), 'hi', 'lo'), categories=['lo', 'hi']))
    m = ESTIMATORS[est](**KW).fit(split(Xc, label))
    as_codes = Xc.assign(b=Xc.b.cat.codes.astype(float))
    ref = ESTIMATORS[est](**KW).fit(split(as_codes, label)).predict_proba(as_codes)
    np.testing.assert_array_equal(m.predict_proba(Xc), ref)
    text = Xc.assign(b=Xc.b.astype(str).where(np.arange(40) > 0, 'new'))  # text, one unseen value
    p = m.predict_proba(text)
    np.testing.assert_array_equal(p[1:], ref[1:])
    assert np.isfinite(p[0]).all()


# ------------------------------------------------------------------------------------------------ programs
def test_programs_check_their_data_before_any_message():
    from fedgauss.smc import run_protocol

    for Est in ESTIMATORS.values():
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', LSHCollapseWarning)
            spec, datas, cfg = Est(**KW).protocol_inputs(split(B, label))
        X1, y1 = datas['party1']['X'], datas['party1']['y']
        bad = {
            'labels not 0/1': ({'X': X1, 'y': y1 * 2}, 'party1: labels must be 0 or 1'),
            'other rows': ({'X': X1[:5], 'y': y1[:5]}, 'party1: 5 rows'),
            'no rows': ({'X': X1[:0], 'y': y1[:0]}, 'party1 has no rows'),
            'other columns': ({'X': X1[:, :1], 'y': y1}, 'party1: X must have 2 columns'),
            'infinity': ({'X': np.where(np.arange(2) == 0, np.inf, X1), 'y': y1}, 'party1: X contains'),
        }
        for case, (data, want) in bad.items():
            with pytest.raises(ValueError, match=want):
                run_protocol(spec, dict(datas, party1=data), cfg)


# ------------------------------------------------------------------------------------------------ functions
H3 = np.array([[1, 2], [1, 0], [0, 2]])
LSH2 = PStableLSH(2, n_tables=3, rng=0)
FUNCTIONS = [
    ('collision_probability', collision_probability, (-1.0,), 'distances must be >= 0'),
    ('collision_probability', collision_probability, (np.nan,), 'not NaN'),
    ('collision_probability', collision_probability, (1.0, 0.0), 'r must be a positive number'),
    ('collision_probability', collision_probability, (1.0, 4.0, 'levy'), "stable must be 'gaussian' or 'cauchy'"),
    (
        'collision_probability',
        collision_probability,
        ([0.0, np.inf, 1e-300, 1e300],),
        lambda p: np.testing.assert_array_equal(p, [1, 0, 1, 0]),
    ),  # fmt: skip
    ('PStableLSH', PStableLSH, (0,), 'n_features must be a positive integer'),
    ('PStableLSH', PStableLSH, (2.5,), 'n_features must be a positive integer'),
    ('PStableLSH', PStableLSH, (3, 0), 'n_tables must be a positive integer'),
    ('PStableLSH.hash', LSH2.hash, (np.ones((2, 3)),), r'X must have shape \(n, 2\)'),
    ('PStableLSH.hash', LSH2.hash, (np.array([[np.nan, 1.0]]),), 'NaN or infinity'),
    ('PStableLSH.hash', LSH2.hash, (np.full((1, 2), 1e300),), 'beyond int64'),
    ('PStableLSH.hash', LSH2.hash, (np.zeros((0, 2)),), lambda H: np.testing.assert_array_equal(H.shape, (0, 3))),
    ('most_similar', most_similar, (H3, np.zeros((0, 2), int)), 'no reference rows'),
    ('most_similar', most_similar, (H3, H3[:, :1]), 'must be'),
    ('most_similar', most_similar, (H3 + 0.5, H3), 'hash values must be integers'),
    ('most_similar', most_similar, (H3[:0], H3), lambda r: np.testing.assert_array_equal(r[0].shape, (0,))),
    ('most_similar', most_similar, (H3, H3), lambda r: np.testing.assert_array_equal(r[0], [0, 1, 2])),
    ('joint_lsh', joint_lsh, ([], dict(n_features=2, n_tables=1, r=4.0, stable='gaussian')), 'needs every'),
    (
        'joint_lsh',
        joint_lsh,
        ([np.zeros(32, np.uint8)], dict(n_features=0, n_tables=1, r=4.0, stable='gaussian')),
        'n_features',
    ),  # fmt: skip
    ('tree_schedule', tree_schedule, ([0, 0], 4), 'positive row counts'),
    ('tree_schedule', tree_schedule, ([], 4), 'positive row counts'),
    ('tree_schedule', tree_schedule, ([3, np.nan], 4), 'positive row counts'),
    ('tree_schedule', tree_schedule, ([3, 1], -1), 'n_trees must be a non-negative integer'),
    ('tree_schedule', tree_schedule, ([3, 1], 0), lambda s: np.testing.assert_array_equal(s.shape, (0,))),
    ('similar_counts', similar_counts, ({(0, 1): np.array([5])}, [2, 2]), r"maps\[0, 1\] points outside party 1"),
    ('similar_counts', similar_counts, ({(0, 3): np.array([0])}, [2, 2]), r'points outside party 3'),
    ('global_leaf_weights', global_leaf_weights, ([np.ones((2, 2))], [1.0, 1.0]), 'D arrays'),
    ('global_leaf_weights', global_leaf_weights, ([np.ones((2, 3))], [1.0]), 'D arrays'),
    ('global_leaf_weights', global_leaf_weights, ([np.ones((2, 2))], [-1.0]), 'weights >= 0'),
    ('global_leaf_weights', global_leaf_weights, ([np.full((2, 2), np.nan)], [1.0]), 'finite'),
    ('tree0_label_counts', tree0_label_counts, (np.ones(3), 0.0), r'\(n, 2\) array'),
    ('tree0_label_counts', tree0_label_counts, (np.ones((3, 2)), np.inf), 'base_margin must be a finite number'),
    ('invert_hashes', invert_hashes, (H3[:, :1], LSH2, 0.0, 1.0), r'H must be \(n, 3\)'),
    ('feature_correlation', feature_correlation, (np.ones((3, 2)), np.ones((3, 1))), 'one shape'),
    ('feature_correlation', feature_correlation, (np.ones((0, 2)), np.ones((0, 2))), 'non-empty'),
    (
        'feature_correlation',
        feature_correlation,
        (np.ones((1, 2)), np.ones((1, 2))),
        lambda c: c == 0.0 or pytest.fail(str(c)),
    ),  # fmt: skip
    ('linear_inversion', linear_inversion, (H3[:0], np.ones((0, 2)), H3), 'k >= 1'),
    ('linear_inversion', linear_inversion, (H3, np.ones((2, 2)), H3), 'k >= 1'),
    ('linear_inversion', linear_inversion, (H3, np.ones((3, 2)), H3[:, :1]), 'k >= 1'),
    ('linear_inversion', linear_inversion, (H3, np.ones((3, 2)), H3, -1.0), 'alpha must be a number >= 0'),
    ('linear_inversion', linear_inversion, (H3[:1], np.ones((1, 2)), H3), lambda Z: np.testing.assert_allclose(Z, 1.0)),
    ('tree_from_message', tree_from_message, ({'feature': np.zeros(1, np.int32)}, None), 'a tree message needs'),
    ('pooled', pooled, ([(B, label)],), 'at least 2'),
    ('individual_errors', individual_errors, ([(B, label)], B, label), 'at least 2'),
    ('communication', communication, ({'unfitted': NFLGBDTClassifier()},), "model 'unfitted' has no transcript"),
]


@pytest.mark.parametrize('name,f,args,want', FUNCTIONS, ids=[f'{n}-{i}' for i, (n, *_) in enumerate(FUNCTIONS)])
def test_functions(name, f, args, want):
    expect(f, args, want)


def test_a_tree_message_round_trips():
    m = _fitted('tfl')
    t = m.trees_[0]
    back = tree_from_message(tree_message(t), m.binner_.layout_)
    np.testing.assert_array_equal(back.value, t.value)
    np.testing.assert_array_equal(back.threshold, t.threshold)


def test_pooled_and_individual_errors_on_the_catalogue():
    "pooled stacks the parties' rows (DataFrames as the core reads them); individual_errors is each party's own core."
    clients = split(TV['nullable Int64 with NA'], label)
    X, y = pooled(clients)
    np.testing.assert_array_equal(X, TV['nullable Int64 with NA'].to_numpy(float, na_value=np.nan))
    e = individual_errors(clients, B, label, n_estimators=3, max_depth=2)
    ref = [np.mean(GBDTClassifier(n_estimators=3, max_depth=2).fit(Xk, yk).predict(B) != label) for Xk, yk in clients]
    np.testing.assert_array_equal(e, ref)
    with pytest.raises(ValueError, match="client 0: column 'b' is not numeric"):
        pooled(split(TV['object (text)'], label))
