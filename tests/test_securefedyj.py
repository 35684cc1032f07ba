"""fedgauss.securefedyj: pooled equivalence over many federations, what the transcript reveals, the numerical range,
bad input, and the transformer."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.base import clone

from fedgauss.data import load_breast_cancer, make_skewed_features
from fedgauss.federation import dirichlet_split, iid_split, label_skew_split, size_skew_split
from fedgauss.securefedyj import (
    FedYeoJohnsonTransformer,
    SecureFedYJ,
    anchors_from_envelope,
    communication_table,
    revealed_values,
    secure_step,
)
from fedgauss.smc import FixedPointOverflow
from fedgauss.yeojohnson import YeoJohnsonTransformer, YeoJohnsonWarning, exp_yj

T_MAX = 32


@pytest.fixture(scope='module')
def datasets():
    Xb, yb = load_breast_cancer()
    Xs = make_skewed_features(1500, 10, rng=1)  # ten families: one- and mixed-signed, all scales
    ys = (Xs[:, 0] > np.median(Xs[:, 0])).astype(int)
    return {'breast cancer': (Xb.to_numpy(), yb.to_numpy()), 'skewed': (Xs, ys)}


@pytest.fixture(scope='module')
def pooled(datasets):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        return {k: exp_yj(X, t_max=T_MAX, full_output=True) for k, (X, _) in datasets.items()}


def federation(X, y, K, how, seed):
    if how == 'iid':
        return iid_split(X, y, K, seed)
    if how == 'label skew 0.9':
        return label_skew_split(X, y, K, 0.9, seed)
    if how == 'dirichlet 0.1':
        return dirichlet_split(X, y, K, 0.1, seed)
    if how == 'unequal sizes':
        s = np.geomspace(1, 300, K)
        return size_skew_split(X, y, s / s.sum(), seed)
    if how == 'single-row clients':  # two clients hold one row each
        rest = iid_split(X[2:], y[2:], max(K - 2, 1), seed)
        return [(X[:1], y[:1]), (X[1:2], y[1:2])] + rest if K > 2 else [(X[:1], y[:1]), (X[1:], y[1:])]
    raise ValueError(how)


HOWS = ['iid', 'label skew 0.9', 'dirichlet 0.1', 'unequal sizes', 'single-row clients']


@pytest.mark.parametrize('how', HOWS)
@pytest.mark.parametrize('K', [2, 5, 10])
@pytest.mark.parametrize('name', ['breast cancer', 'skewed'])
def test_pooled_equivalence(datasets, pooled, name, K, how):
    X, y = datasets[name]
    parts = federation(X, y, K, how, seed=K)
    assert sum(len(p[0]) for p in parts) == len(X) and len(parts) == K
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        fed = SecureFedYJ(t_max=T_MAX, rng=K).fit([p[0] for p in parts])
    ref = pooled[name]
    np.testing.assert_array_equal(fed.signs_, ref.signs)  # the same sign sequence, step by step
    np.testing.assert_array_equal(fed.lambdas_, ref.lambdas)  # hence the same lambda, to the last bit
    np.testing.assert_allclose(fed.mean_, ref.mean, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(fed.var_, ref.var, rtol=1e-11)


# ------------------------------------------------------------------------- what is revealed ---------


@pytest.fixture(scope='module')
def demo_fit(datasets):
    X, y = datasets['breast cancer']
    return SecureFedYJ(t_max=T_MAX, rng=0).fit([p[0] for p in label_skew_split(X, y, 3, 0.8, 0)])


def test_server_receives_nothing(demo_fit):
    t = demo_fit.channel_.transcript
    assert 'server' not in set(t.receiver)
    assert set(t.loc[t.sender == 'server', 'kind']) == {'dealer'}
    assert set(t.loc[t.kind == 'reveal', 'receiver']) == {'client0', 'client1', 'client2'}
    assert communication_table(demo_fit).loc['server', 'total received'] == 0


def test_search_opens_only_the_signs(demo_fit):
    d, r = demo_fit.n_features_in_, demo_fit.rounds_
    opened = revealed_values(demo_fit.channel_, 3, demo_fit.ring_bits_)
    search = [o for o in opened if o[0] in r['search']]
    assert [o[0] for o in search] == r['search']  # exactly one opening per step
    for t, (_, kind, v) in enumerate(search):
        assert kind == 'bits' and v.size == -(-2 * d // 8) * 8  # 2d bits, packed
        np.testing.assert_array_equal(np.where(v[:d] == 1, -1, 1), demo_fit.signs_[t])
        assert not v[d:].any()  # precision flags (and padding) are 0
    assert [o[1] for o in opened if o[0] == r['setup']] == ['ring', 'bits']  # the envelope, then the constancy bits
    assert anchors_from_envelope(next(v for rr, k, v in opened if rr == r['setup']).reshape(4, d)) == demo_fit.anchors_
    bits = [v for rr, k, v in opened if rr == r['setup'] and k == 'bits'][0]
    np.testing.assert_array_equal(bits[:d].astype(bool), demo_fit.constant_)
    assert not bits[d:].any()
    assert [o[1] for o in opened if o[0] == r['final']] == ['ring']  # the fitted frame mean and variance


def test_other_federations_of_the_same_data_open_identical_values(datasets, demo_fit):
    X, y = datasets['breast cancer']
    d = demo_fit.n_features_in_
    ref = revealed_values(demo_fit.channel_, 3, demo_fit.ring_bits_)
    for K, how, seed in [(5, 'dirichlet 0.1', 4), (7, 'unequal sizes', 5)]:
        fed = SecureFedYJ(t_max=T_MAX, rng=100 + K).fit([p[0] for p in federation(X, y, K, how, seed)])
        got = revealed_values(fed.channel_, K, fed.ring_bits_)
        assert len(got) == len(ref)
        for (r1, k1, v1), (r2, k2, v2) in zip(ref[:-1], got[:-1]):  # setup and every search step: bit for bit
            assert (r1, k1) == (r2, k2)
            np.testing.assert_array_equal(v1[: 2 * d] if k1 == 'bits' else v1, v2[: 2 * d] if k2 == 'bits' else v2)
        np.testing.assert_allclose(
            fed.mean_t_, demo_fit.mean_t_, rtol=1e-15, atol=2.0**-80
        )  # final: to fixed-point precision
        np.testing.assert_allclose(fed.var_t_, demo_fit.var_t_, rtol=1e-12)


def _received_ints(channel, party):
    out = []
    for m in channel.messages:
        if m.receiver == party and m.kind in ('share', 'masked', 'dealer') and not isinstance(m.payload, np.ndarray):
            out.extend(int(v) & 0xFF for v in np.asarray(m.payload).ravel())
    return np.array(out)


def test_what_a_client_receives_does_not_depend_on_the_data():
    # the low bytes of every ring element client1 receives (shares, dealer material, masked openings) are uniform,
    # and distributed the same for two very different datasets
    g = np.random.default_rng(0)
    A = [g.lognormal(size=(15, 2)), g.lognormal(size=(12, 2))]
    B = [-g.exponential(size=(15, 2)) * 100, -g.exponential(size=(12, 2)) * 100]
    views = []
    for data in (A, B):
        v = np.concatenate(
            [_received_ints(SecureFedYJ(t_max=2, rng=s).fit(data).channel_, 'client1') for s in range(10)]
        )
        views.append(np.bincount(v, minlength=256))
    assert min(h.sum() for h in views) > 5000
    assert all(stats.chisquare(h).pvalue > 1e-4 for h in views)
    assert stats.chi2_contingency(np.array(views)).pvalue > 1e-4


# ------------------------------------------------------------------------- numerical range ----------


def test_100k_rows_without_overflow():
    X = make_skewed_features(100_000, 6, rng=3)
    parts = np.array_split(np.random.default_rng(0).permutation(len(X)), 5)
    fed = SecureFedYJ(t_max=12, rng=0).fit([X[p] for p in parts])
    ref = exp_yj(X, t_max=12, full_output=True)
    np.testing.assert_array_equal(fed.signs_, ref.signs)
    np.testing.assert_allclose(fed.var_, ref.var, rtol=1e-11)


def test_overflow_is_an_error_never_a_wrong_sign(datasets):
    X, y = datasets['breast cancer']
    parts = [p[0] for p in iid_split(X, y, 3, 0)]
    with pytest.raises(FixedPointOverflow, match='fixed-point overflow'):
        SecureFedYJ(t_max=4, ring_bits=192, rng=0).fit(parts)
    fed = SecureFedYJ(t_max=4, rng=0)
    with pytest.raises(FixedPointOverflow):
        fed.set_params(ring_bits=256).fit(parts)
    t = fed.channel_.transcript
    assert not (t['round'] > 1).any()  # stopped before the first sign was computed


def test_precision_guard_flags_a_vanishing_variance():
    from fedgauss.smc import SMC, Shared
    from fedgauss.federation import Channel
    from fedgauss.securefedyj import SCALES, ring_bits_for, _shared_totals

    f, n = 64, np.array([50, 50])
    psi = np.array([10.0, 10.0])
    psi2 = np.array([2.0 + 1e-12, 3.0])  # variance ~0 and 0.02
    ints = np.array(
        [
            [int(round(v * 2 ** (k * f))) for v in row]
            for row, k in zip((n, [1.0, 1.0], psi, psi2, [1.0, 1.0], [0.5, 0.5]), SCALES)
        ],
        dtype=object,
    )
    smc = SMC(['a', 'b'], Channel(), dealer='server', ring_bits=ring_bits_for(2, 100, f), rng=0)
    _, guard = secure_step(smc, _shared_totals(smc, {'a': ints // 3, 'b': ints - ints // 3}, f, 100), 2, f)
    np.testing.assert_array_equal(guard, [True, False])


def test_constant_features_get_lambda_one(datasets):
    X, y = datasets['breast cancer']
    Xc = np.c_[X[:, :3], np.full(len(X), 7.25), np.zeros(len(X))]
    parts = [p[0] for p in iid_split(Xc, y, 3, 0)]
    with pytest.warns(YeoJohnsonWarning, match='constant'):
        fed = SecureFedYJ(t_max=16, rng=0).fit(parts)
    np.testing.assert_array_equal(fed.constant_, [False, False, False, True, True])
    np.testing.assert_array_equal(fed.lambdas_[3:], 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        ref = exp_yj(Xc, t_max=16, full_output=True)
    np.testing.assert_array_equal(fed.lambdas_, ref.lambdas)
    np.testing.assert_allclose(fed.mean_, ref.mean, rtol=1e-12, atol=1e-15)


def test_public_bounds_reveal_nothing_in_the_setup(datasets):
    X, y = datasets['breast cancer']
    parts = [p[0] for p in iid_split(X, y, 3, 0)]
    bounds = np.c_[np.zeros(X.shape[1]), X.max(0) * 2]
    fed = SecureFedYJ(t_max=T_MAX, bounds=bounds, rng=0).fit(parts)
    opened = revealed_values(fed.channel_, 3, fed.ring_bits_)
    assert [k for r, k, v in opened if r == fed.rounds_['setup']] == ['bits']  # only whether each feature is constant
    ref = exp_yj(X, t_max=T_MAX, full_output=True)
    np.testing.assert_array_equal(fed.lambdas_, ref.lambdas)
    with pytest.raises(ValueError, match="client0: 'x0', 'x1', .* values outside the public bounds"):
        SecureFedYJ(t_max=2, bounds=np.c_[np.zeros(X.shape[1]), X.max(0) / 2], rng=0).fit(parts)


# ------------------------------------------------------------------------- bad input ----------------


def _clients():
    Xb, _ = load_breast_cancer()
    return [Xb.iloc[:200, :4].copy(), Xb.iloc[200:, :4].copy()]


BAD = [
    (lambda c: c[0], ValueError, 'non-empty list'),
    (lambda c: [], ValueError, 'non-empty list'),
    (lambda c: [c[0], c[1].iloc[:0]], ValueError, 'client 1 has no rows'),
    (lambda c: [c[0], c[1].iloc[:, :3]], ValueError, 'mismatched columns: client 1 has 3 columns'),
    (
        lambda c: [c[0], c[1].rename(columns={'mean area': 'area'})],
        ValueError,
        "mismatched columns.*'area' != 'mean area'",
    ),
    (lambda c: [c[0], c[1].assign(**{'mean area': np.inf})], ValueError, "client 1: 'mean area' contain\\(s\\) inf"),
    (lambda c: [c[0], c[1].assign(**{'mean area': 'big'})], ValueError, "client 1: .*'mean area'.* not numeric"),
    (lambda c: [c[0], c[1].assign(**{'mean area': np.nan})], None, None),  # NaN is allowed: ignored
    (lambda c: [np.ones((3, 2, 2))], ValueError, 'expected a 2-D table'),
    (
        lambda c: [c[0].assign(**{'mean area': np.nan}), c[1].assign(**{'mean area': np.nan})],
        ValueError,
        "'mean area' has no finite value",
    ),
]


@pytest.mark.parametrize('make,exc,msg', BAD, ids=[m or 'nan-ok' for *_, m in BAD])
def test_bad_input(make, exc, msg):
    clients = make(_clients())
    before = [c.copy() for c in clients] if isinstance(clients, list) else None
    if exc is None:
        SecureFedYJ(t_max=4, rng=0).fit(clients)
    else:
        with pytest.raises(exc, match=msg):
            SecureFedYJ(t_max=4, rng=0).fit(clients)
    if before is not None:  # the caller's data are untouched
        for a, b in zip(clients, before):
            if isinstance(a, pd.DataFrame):
                pd.testing.assert_frame_equal(a, b)
            else:
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    'kw,msg',
    [
        ({'t_max': -1}, 't_max'),
        ({'precision': 0}, 'precision'),
        ({'precision': 200}, 'at most 190'),
        ({'max_rows': 100}, 'more than max_rows'),
        ({'t_max': 2.5}, 't_max'),
    ],
)
def test_bad_parameters(kw, msg):
    with pytest.raises(ValueError, match=msg):
        SecureFedYJ(**kw).fit(_clients())


# ------------------------------------------------------------------------- the transformer ----------


def test_transformer_matches_pooled_and_roundtrips():
    Xb, yb = load_breast_cancer()
    Xb = Xb.copy()
    Xb.iloc[5, 2] = np.nan
    Xb.iloc[300, 7] = np.nan
    splits = label_skew_split(Xb, yb, 4, 0.8, rng=1)
    ft = FedYeoJohnsonTransformer(t_max=T_MAX, rng=0).set_output(transform='pandas').fit([Xk for Xk, _ in splits])
    pt = YeoJohnsonTransformer(t_max=T_MAX).fit(Xb)
    np.testing.assert_array_equal(ft.lambdas_, pt.lambdas_)
    # with the defaults (same t_max, both stop at convergence) they agree to the float resolution of lambda
    lam_fed = FedYeoJohnsonTransformer(rng=0).fit([Xk for Xk, _ in splits]).lambdas_
    np.testing.assert_allclose(lam_fed, YeoJohnsonTransformer().fit(Xb).lambdas_, rtol=1e-12, atol=1e-12)
    for Xk, _ in splits:
        Z = ft.transform(Xk)
        assert isinstance(Z, pd.DataFrame) and (Z.index == Xk.index).all() and list(Z.columns) == list(Xb.columns)
        np.testing.assert_allclose(Z.to_numpy(), pt.transform(Xk), rtol=0, atol=1e-10)
        back = ft.inverse_transform(Z.to_numpy())
        np.testing.assert_allclose(back, Xk.to_numpy(), rtol=1e-9, equal_nan=True)
    assert np.isnan(ft.transform(Xb).iloc[5, 2])
    assert clone(ft).get_params() == ft.get_params()
    with pytest.raises(ValueError, match='inf'):
        ft.transform(Xb.assign(**{'mean area': np.inf}))
    with pytest.raises(ValueError, match='feature names should match'):
        ft.transform(Xb.iloc[:, :5])


# ------------------------------------------------------------------------- per-party programs -------


def _run_yj(parts, comparison, t_max=128, bsp=False):
    "SecureFedYJ's programs as the estimator runs them (rng=0, precision 96), with the search step's `comparison`."
    from fedgauss.securefedyj import SECUREFEDYJ, securefedyj_config, yj_party_rngs
    from fedgauss.smc import run_protocol

    parties = [f'client{k}' for k in range(len(parts))]
    cfg = securefedyj_config([f'x{j}' for j in range(parts[0].shape[1])], parties, 96, t_max, comparison=comparison)
    datas = {p: {'X': X} for p, X in zip(parties, parts)}
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        res, rounds, ch = run_protocol(SECUREFEDYJ, datas, cfg, rngs=yj_party_rngs(0, parties), bsp=bsp)
    return res['client0'], rounds, ch


def test_per_party_programs_keep_the_single_driver_transcript(datasets):
    """With comparison='bits', messages and bytes by kind, rounds and lambdas as the single driver (SMC over every
    party) recorded them before the restructure (breast cancer in 3 contiguous parts, t_max=128, rng=0); the
    bulk-synchronous schedule changes nothing, and takes the 1,560 relay passes it took then (26 per search step)."""
    X, _ = datasets['breast cancer']
    parts = np.array_split(X, 3)
    fed = SecureFedYJ(rng=0).fit(parts)
    res, rounds, ch = _run_yj(parts, 'bits')
    by_kind = ch.transcript.groupby('kind')['bytes'].agg(['size', 'sum'])
    assert by_kind['size'].to_dict() == {'dealer': 1131, 'masked': 2888, 'reveal': 348, 'share': 6}
    assert by_kind['sum'].to_dict() == {'dealer': 11052069, 'masked': 9159288, 'reveal': 63144, 'share': 60480}
    assert (rounds['setup'][0], len(rounds['search']), rounds['final'][0]) == (1, 55, 57)
    assert not (ch.transcript.receiver == 'server').any()  # the dealer receives nothing
    np.testing.assert_array_equal(res['lambdas'], fed.lambdas_)
    b, rb, chb = _run_yj(parts, 'bits', bsp=True)
    np.testing.assert_array_equal(b['lambdas'], fed.lambdas_)
    assert chb.transcript.groupby('kind')['bytes'].sum().equals(by_kind['sum'])
    assert rb['passes'] == [1560]


def test_search_step_in_eight_passes(datasets):
    """The default step (one opening of products, a comparison by dealer tables): the same signs, lambdas and opened
    values as comparison='bits', in 8 relay passes per search step instead of 26 (issue 32); the dealer still
    receives nothing, and a step sends 3 openings through the king."""
    X, _ = datasets['breast cancer']
    parts = np.array_split(X, 3)
    new, rn, chn = _run_yj(parts, 'tables', bsp=True)
    old, ro, cho = _run_yj(parts, 'bits', bsp=True)
    np.testing.assert_array_equal(new['lambdas'], old['lambdas'])
    np.testing.assert_array_equal(new['signs'], old['signs'])
    assert not (chn.transcript.receiver == 'server').any()
    short, rs, _ = _run_yj(parts, 'tables', t_max=4, bsp=True)
    steps = len(rn['search'])
    assert steps == 55 and (rn['passes'][0] - rs['passes'][0]) == 8 * (steps - 4)
    T = chn.transcript
    step = T[T['round'] == rn['search'][0]]
    assert (step.kind == 'masked').sum() == 3 * 2 * (3 - 1)  # three openings through the king
    same = lambda ch: [(k, v.tolist()) for r, k, v in revealed_values(ch, 3, 448) if r in rn['search']]
    assert same(chn) == same(cho)  # the search opens the same values


def test_a_failing_client_is_named_and_nothing_is_returned(datasets):
    X, _ = datasets['breast cancer']
    parts = np.array_split(X, 3)
    parts[1] = parts[1].copy()
    parts[1][0, 3] = np.inf
    with pytest.raises(ValueError, match='client 1'):
        SecureFedYJ(t_max=2, rng=0).fit(parts)


# ------------------------------------------------------------------ every scale (issue 31)
@pytest.mark.parametrize('scale', [1e-300, 1e-100, 1e-20, 1e100])
def test_pooled_lambda_at_every_scale(scale):
    "Tiny features are fitted in a public unit (a power of two): the pooled lambda, at the default precision, ~50 steps."
    r = np.random.default_rng(31)
    X = np.c_[r.lognormal(size=80), -r.lognormal(size=80), r.lognormal(size=80) - 1.4] * scale
    clients = [X[:20], X[20:55], X[55:]]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter('always')
        ft = FedYeoJohnsonTransformer(rng=0).fit(clients)
        pt = YeoJohnsonTransformer().fit(X)
    assert not [str(m.message) for m in w if 'converged' in str(m.message) or issubclass(m.category, RuntimeWarning)]
    p = ft.protocol_
    np.testing.assert_allclose(p.lambdas_, pt.lambdas_, rtol=1e-11)
    assert p.converged_.all() and (p.precision_ == 96 or scale > 1)
    if scale <= 1e-100:
        assert p.signs_.shape[0] <= 60  # the search starts from the public unit (at 1e-20, from 1: 112 steps)
    np.testing.assert_allclose(ft.transform(X), pt.transform(X), atol=1e-9)
    np.testing.assert_allclose(ft.inverse_transform(ft.transform(X)), X, rtol=1e-9)


# ------------------------------------------------------------------ b search steps per round (issue 32)
def _run_b(parts, branching, t_max=128, names=None):
    "SecureFedYJ's programs (rng=0, precision 96) as a relay runs them, `branching` steps per round."
    from fedgauss.securefedyj import SECUREFEDYJ, securefedyj_config, yj_party_rngs
    from fedgauss.smc import run_protocol

    parties = [f'client{k}' for k in range(len(parts))]
    names = names or [f'x{j}' for j in range(parts[0].shape[1])]
    cfg = securefedyj_config(names, parties, 96, t_max, branching=branching)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        res, rounds, ch = run_protocol(
            SECUREFEDYJ, {p: {'X': X} for p, X in zip(parties, parts)}, cfg, rngs=yj_party_rngs(0, parties), bsp=True
        )
    return res['client0'], rounds, ch


def test_branching_is_today_search_in_fewer_passes(datasets):
    """b steps per round: lambdas, path, signs and moments of b = 1 bit for bit, every feature converged; a round costs
    the 8 passes of a step (breast cancer in 3 parts: 456 passes at b = 1, 128 at b = 4; 526 and 198 before the
    one-pass setup and final round)."""
    X, _ = datasets['breast cancer']
    parts = np.array_split(X, 3)
    one, r1, c1 = _run_b(parts, 1)
    four, r4, c4 = _run_b(parts, 4)
    for k in ('lambdas', 'path', 'signs', 'mean', 'var', 'converged'):
        np.testing.assert_array_equal(four[k], one[k], err_msg=k)
    assert one['converged'].all() and len(one['signs']) == 55
    setup_final = r1['passes'][0] - 8 * len(r1['search'])
    assert r4['passes'][0] == setup_final + 8 * len(r4['search'])
    assert (r1['passes'][0], r4['passes'][0], len(r4['search'])) == (456, 128, 14)
    assert not (c4.transcript.receiver == 'server').any()  # the dealer still receives nothing


@pytest.mark.parametrize('t_max', [13, 128])
def test_branching_with_constant_features_mixed_signs_and_scales(datasets, t_max):
    "Constant and mixed-signed features of every scale, a t_max that is no multiple of b: the search of b = 1."
    Xs, _ = datasets['skewed']
    X = np.c_[Xs[:300], np.full(300, 2.5)]
    parts = [X[:40], X[40:170], X[170:]]
    one, _, _ = _run_b(parts, 1, t_max)
    for b in (3, 5):
        got, _, _ = _run_b(parts, b, t_max)
        for k in ('lambdas', 'path', 'signs', 'mean', 'var', 'converged', 'constant'):
            np.testing.assert_array_equal(got[k], one[k], err_msg=f'{k} at b={b}')
    assert len(one['signs']) <= t_max and one['constant'][-1] and one['lambdas'][-1] == 1


def test_branching_opens_what_the_path_implies(datasets):
    """The signs opened at every tree point, replayed from the start, give the path; off the path they equal the
    signs the path implies by concavity (`implied_signs`), wherever the bracket is wider than 1e-11 relative."""
    from fedgauss.yeojohnson import ExpSearchState, exp_replay, exp_tree, implied_signs
    from fedgauss.yeojohnson import yj_lambda_bounds, yj_search_unit

    X, _ = datasets['breast cancer']
    res, rounds, _ = _run_b(np.array_split(X, 3), 4)
    A, const, d = res['anchors'], res['constant'], X.shape[1]
    state = ExpSearchState.start(d, *yj_lambda_bounds(A), yj_search_unit(A))
    path, covered = [state.lmbda], 0
    for sg in res['opened']:
        tree = exp_tree(state, int(np.log2(len(sg) + 1)), const)
        states, picks = exp_replay(tree, sg, np.broadcast_to(const, sg.shape))
        imp = implied_signs(sg, picks)
        wide = (state.hi - state.lo > 1e-11 * np.maximum(1, np.abs(state.lmbda)))[None, :] & (imp != 0)
        np.testing.assert_array_equal(imp[wide], sg[wide])
        covered += wide.sum()
        path += [s.lmbda for s in states[1:]]
        state = states[-1]
    np.testing.assert_array_equal(np.array(path), res['path'])
    assert len(res['opened']) == len(rounds['search']) == 14 and covered >= 10 * 15 * d


@pytest.mark.parametrize('b', [0, -2, 2.5, True, '3', 17])
def test_branching_must_be_a_positive_integer(b):
    from fedgauss.securefedyj import securefedyj_config

    with pytest.raises(ValueError, match='branching must be a positive integer'):
        SecureFedYJ(branching=b).fit([np.ones((3, 2)) + np.arange(3)[:, None], np.ones((2, 2))])
    with pytest.raises(ValueError, match='branching'):
        securefedyj_config(['a'], ['c0', 'c1'], branching=b)


# ---- issue 32: a fit made faster sends the same messages ----


@pytest.mark.parametrize(
    'name, b, digest',
    [
        ('breast cancer', 1, 'a7c8bd6fe3d46b4b4a50608675f9f6102c591aef971ceae73ef3157f1dbdcee2'),
        ('breast cancer', 5, '09a6525acc431ccbfb890c29d0b324cf96e268dc77734fbd7ca5d328c86117f0'),
        ('skewed', 1, '46fe90dd44edf675dd011c1f724b00ee18094667ecb2f4fb94d57c754f7da3ae'),
        ('skewed', 5, '6c9886bab18f8a97741f94d81e48d146befd21a89db3215ea4fabf9cb629c50e'),
    ],
)
def test_seeded_fit_sends_the_messages_it_sent(name, b, digest):
    """The SHA-256 of every message of a seeded fit (`bench_securefedyj.payload_digest`: round, sender, receiver, kind
    and payload bytes), at b = 1 and b = 5, equals the digest recorded on the protocol of the one-pass setup and final
    round (branch yjpass, numpy's float64 on x86-64; the speed-ups of issue 32 were checked against main d20c3ad's
    digests before that protocol change): a change made for speed changes no message. The statistics are exact integers made
    from float64 sums, so a platform whose libm rounds exp or log1p differently in the last bit may need new digests
    (recorded with the same code on main), never a protocol change."""
    from bench_securefedyj import payload_digest

    if name == 'breast cancer':
        X, _ = load_breast_cancer()
        parts = np.array_split(X.to_numpy(), 3)
    else:
        parts = np.array_split(make_skewed_features(3000, 10, rng=1), 4)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        fed = SecureFedYJ(t_max=12, rng=0, branching=b).fit(parts)
    assert payload_digest(fed.channel_) == digest


def test_public_frame_sums_of_hard_features_are_the_integers_they_were():
    """The exact statistics and the normalization's powers of two on the paths the seeded fits above barely reach: one-
    signed groups far from the public anchor (60-digit offsets), mixed features, tiny public units (x ~ 1e-100, 1e-60),
    NaN, lambda_s < 0 (groups framed at their smallest |x|), at precisions 96 and 190; their SHA-256 equals the one
    recorded on main 897675c (before issue 32's one-evaluation frame values, `row_bounds` and the in-order sums of a
    feature's groups). As above, another libm may need the digest recorded anew with main's code, never a new formula."""
    import hashlib

    from fedgauss.securefedyj import YJClient, local_envelope, normalization, public_frame_sums
    from fedgauss.yeojohnson import YJAnchors, yj_frame

    rng, n = np.random.default_rng(7), 600
    X = np.c_[
        rng.lognormal(0, 1.5, n),
        rng.normal(size=n),
        -rng.lognormal(size=n),
        np.r_[np.zeros(300), -rng.lognormal(size=300)],
        rng.normal(1e4, 1e-3, n),
        rng.lognormal(0, 1, n) * 1e-100,
        rng.normal(0, 1e-60, n),
        rng.normal(5, 1, n),
    ]
    X[rng.random(X.shape) < 0.05] = np.nan
    parts = np.array_split(rng.permutation(n), 3)
    A = anchors_from_envelope(np.max([local_envelope(YJAnchors.from_data(X[p])) for p in parts], axis=0))
    h = hashlib.sha256()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        for p in parts:
            c = YJClient('c', None, X[p]).prepare(A)
            for lam in (-3.0, -0.7, 0.0, 0.4, 1.0, 1.9, 3.3, 6.0):
                lamv = np.full(X.shape[1], lam) + np.linspace(0, 0.3, X.shape[1])
                pf, norm = yj_frame(lamv, A), normalization(lamv, A)
                for f in (96, 190):
                    ints = public_frame_sums(c.data, lamv, pf, f, norm)
                    h.update(repr([[int(v) for v in r] for r in ints]).encode())
                    h.update(repr([norm['e_psi'].tolist(), norm['e_phi'].tolist()]).encode())
    assert h.hexdigest() == '48f6cf1bfd558de4110471ed85bfe71b2e4c7620ba446de960a7cdf1d166060e'


def test_a_client_with_only_zeros_in_a_negative_feature_sends_what_it_sent():
    """A client whose values of a negative feature are all zero prepares its rows anew with the public sign pattern (the
    others keep the preparation they made with their local anchors): the pooled lambdas, and every message as on main
    897675c (SHA-256 of the payloads, recorded there)."""
    from bench_securefedyj import payload_digest

    rng = np.random.default_rng(3)
    a = np.c_[-rng.lognormal(size=200), rng.lognormal(size=200)]
    b = np.c_[np.zeros(150), rng.lognormal(size=150)]  # the first feature is negative: this client has only zeros
    c = np.c_[-rng.lognormal(size=100), rng.lognormal(size=100)]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        fed = SecureFedYJ(t_max=12, rng=0).fit([a, b, c])
        pooled = exp_yj(np.r_[a, b, c], t_max=12, full_output=True)
    np.testing.assert_array_equal(fed.lambdas_, pooled.lambdas)
    assert payload_digest(fed.channel_) == 'a1752dc13f7519e0fa579a097d3e283d369a85cbe65c1759b1f02fc74711d33d'


# ------------------------------------------------------------------ one-pass setup and final round (issue 32) ------
def test_setup_and_final_in_few_passes_open_what_they_did():
    """On the Flower demo's split: setup 8 and final round 8 relay passes (24 and 62 before); the search rounds'
    transcript (round, sender, receiver, kind, bytes) and opened signs as on main before the change (SHA-256, b = 1
    and 5); the setup opens the same envelope and constancy bits as the setup through the king (comparison='bits'),
    the final round the same mean and variance to the fixed point; no one but the clients receives an opening."""
    import hashlib
    import io

    from fedgauss.securefedyj import SECUREFEDYJ, securefedyj_config, yj_party_rngs
    from fedgauss.smc import run_protocol
    from fedgauss.yjcli import breast_cancer_split

    X, splits = breast_cancer_split(3, 0.8, 0, 'SuperNode', io.StringIO())
    parties = [f'client{k}' for k in range(3)]
    datas = {p: {'X': np.asarray(Xk, dtype=np.float64)} for p, (Xk, _) in zip(parties, splits)}
    run = lambda **kw: run_protocol(
        SECUREFEDYJ,
        datas,
        securefedyj_config(list(X.columns), parties, 96, **kw),
        rngs=yj_party_rngs(0, parties),
        bsp=True,
    )
    digest = {1: ('e235262a7a7f312f', '0278938053587740'), 5: ('c17e4d2994c62f2a', '00e968ff723b5f62')}  # main, d20c3ad
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', YeoJohnsonWarning)
        (_, r0, _), (_, rb0, _) = run(t_max=0), run(t_max=0, comparison='bits')
        assert (r0['passes'][0], rb0['passes'][0]) == (
            16,
            130,
        )  # setup + final (86 on main; 130 with bitwise comparisons)
        for b, (meta, signs) in digest.items():
            res, rounds, ch = run(t_max=128, branching=b)
            t = ch.transcript
            s = t[t['round'].isin(rounds['search'])]
            rows = list(zip(s['round'] - rounds['search'][0], s.sender, s.receiver, s.kind, s.bytes))
            assert hashlib.sha256(repr(rows).encode()).hexdigest()[:16] == meta
            opened = repr([o.tolist() for o in res['client0']['opened']]).encode()
            assert hashlib.sha256(opened).hexdigest()[:16] == signs
        old, rb, chb = run(t_max=128, comparison='bits')
    new, old, d = res['client0'], old['client0'], X.shape[1]
    L = securefedyj_config(list(X.columns), parties)['L']
    opened = lambda c, rr: [(k, v) for r, k, v in revealed_values(c, 3, L) if r in rr]
    (k1, E1), (k2, c1) = opened(ch, rounds['setup'])
    (_, E2), (_, c2) = opened(chb, rb['setup'])
    assert (k1, k2) == ('ring', 'bits') and E1.tolist() == E2.tolist()  # the envelope, bit for bit
    np.testing.assert_array_equal(c1[:d], c2[:d])  # the constancy bits
    assert new['anchors'] == old['anchors']
    for k in ('lambdas', 'constant', 'path'):
        np.testing.assert_array_equal(new[k], old[k])
    np.testing.assert_allclose(new['mean_t'], old['mean_t'], rtol=1e-15, atol=2.0**-80)
    np.testing.assert_allclose(new['var_t'], old['var_t'], rtol=1e-12)
    t = ch.transcript
    sf = t[t['round'].isin(rounds['setup'] + rounds['final'])]
    assert set(sf.kind) == {'dealer', 'masked', 'reveal'} and not (sf.receiver == 'server').any()
    assert set(sf.loc[sf.kind == 'masked', 'sender']) == set(parties) == set(sf.loc[sf.kind == 'masked', 'receiver'])


# ------------------------------------------------------------------ a statistic over its bound, at b > 1
@pytest.mark.parametrize('b', [1, 3])
def test_a_statistic_over_its_bound_names_the_feature_and_search_node(datasets, monkeypatch, b):
    "A client whose statistics exceed their public bound (a bug or a lie) is refused before anything is shared; at b > 1 a round holds b search nodes, and the error names the feature, not a flattened column."
    import fedgauss.securefedyj as S

    X, _ = datasets['breast cancer']
    names = [f"f{j}" for j in range(X.shape[1])]
    parts = [pd.DataFrame(p, columns=names) for p in np.array_split(X, 3)]
    honest = S.YJClient.statistics

    def lying(self, lmbda, *args, **kw):
        out = honest(self, lmbda, *args, **kw)
        if self.name == 'client1' and len(lmbda) == len(names):
            out = out.copy()
            out[1, 7] = out[0, 7] << 200  # S_phi of feature f7 far above n at any scale
        return out

    monkeypatch.setattr(S.YJClient, 'statistics', lying)
    with pytest.raises(FixedPointOverflow, match=r"client1: statistic \S+ of feature\(s\) 'f7'") as e:
        SecureFedYJ(t_max=4, rng=0, branching=b).fit(parts)
    assert ('at search node(s)' in str(e.value)) == (b > 1)


def test_own_frames_computes_every_frame_and_sends_the_same_messages():
    """`own_frames()` (to clock each party's work as on its own machine): no frame shared through the cache, and a fit
    inside it sends every message of a fit outside it, byte for byte; the cache is shared again after."""
    from bench_securefedyj import payload_digest

    import fedgauss.securefedyj as S

    X = np.random.default_rng(3).lognormal(size=(300, 4))
    parts = [X[:100], X[100:200], X[200:]]
    calls = []
    orig = S.yj_frame
    S.yj_frame = lambda *a, **k: calls.append(1) or orig(*a, **k)
    try:
        S._FRAMES.clear()
        ref = S.SecureFedYJ(t_max=6, rng=0).fit(parts)
        shared = len(calls)
        S._FRAMES.clear()
        with S.own_frames():
            own = S.SecureFedYJ(t_max=6, rng=0).fit(parts)
            assert len(S._FRAMES) == 0
        assert len(calls) - shared >= 3 * shared  # every client computes each frame (the cache let one do it)
        assert payload_digest(own.channel_) == payload_digest(ref.channel_)
        np.testing.assert_array_equal(own.lambdas_, ref.lambdas_)
        S.public_frame(ref.lambdas_, ref.anchors_)
        assert len(S._FRAMES) == 1
    finally:
        S.yj_frame = orig
