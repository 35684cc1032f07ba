"""fedgauss.smc: correctness on random inputs (vectorized), and the statistical claim behind every
primitive — what a party receives (other than results opened on purpose) is uniformly distributed and
does not depend on the inputs."""

import math

import numpy as np
import pytest
from scipy import stats

from fedgauss.federation import Channel
from fedgauss.smc import (
    SMC,
    DropoutError,
    FixedPointOverflow,
    decode,
    encode,
    reconstruct,
    secure_sum,
    share,
    to_signed,
)

ALPHA = 1e-4  # per-test false-alarm rate of the statistical checks (seeds are fixed, so runs are reproducible)


def received(ch, party, kinds=('share', 'dealer', 'masked')):
    """What `party` received: ring elements / uint64 words as Python ints, and bits (packed bit messages
    unpacked, without their last byte, whose padding bits are zeros by construction)."""
    ints, bits = [], []
    for m in ch.messages:
        if m.receiver != party or m.kind not in kinds:
            continue
        a = np.asarray(m.payload)
        if a.dtype == np.uint8:
            bits.extend(np.unpackbits(a[:-1]).tolist())
        else:
            ints.extend(int(t) for t in a.ravel())
    return ints, bits


def _hists(view):
    ints, bits = view
    return [
        np.bincount(np.array([v & 0xFF for v in ints], dtype=int), minlength=256) if ints else None,
        np.bincount(np.array(bits, dtype=int), minlength=2) if bits else None,
    ]


def assert_uniform_and_input_free(view_a, view_b):
    "Low bytes of ring elements and shared bits are uniform, and the two views (different inputs) are equally distributed."
    checked = 0
    for ha, hb in zip(_hists(view_a), _hists(view_b)):
        assert (ha is None) == (hb is None)
        if ha is None:
            continue
        assert stats.chisquare(ha).pvalue > ALPHA and stats.chisquare(hb).pvalue > ALPHA
        tab = np.array([ha, hb])
        tab = tab[:, tab.sum(0) > 0]
        assert stats.chi2_contingency(tab).pvalue > ALPHA
        checked += min(ha.sum(), hb.sum())
    assert checked > 500


def views(run, inputs, party='b', runs=150):
    out = []
    for x in inputs:
        ints, bits = [], []
        for seed in range(runs):
            i, b = received(run(x, seed)[0], party)
            ints += i
            bits += b
        out.append((ints, bits))
    return out


# ---------------------------------------------------------------- correctness ----------


def test_encode_decode_roundtrip():
    x = np.random.default_rng(0).normal(scale=1e6, size=1000)
    np.testing.assert_allclose(decode(encode(x, 30), 30), x, atol=2.0**-31)
    assert to_signed(encode(-3.0, 0))[()] == -3


def test_share_reconstruct_vectorized():
    g = np.random.default_rng(1)
    v = encode(g.normal(size=(50, 7)), 20)
    for K in (1, 2, 5, 10):
        sh = share(v, K, g)
        assert len(sh) == K and (reconstruct(sh) == v).all()


@pytest.mark.parametrize('K', [2, 3, 5])
def test_mul_trunc_ltz_random(K):
    g = np.random.default_rng(K)
    smc = SMC([f'p{k}' for k in range(K)], rng=K)
    x, y = g.normal(scale=30, size=300), g.normal(scale=30, size=300)
    sx, sy = smc.input('p0', x, 20, 1e3), smc.input(f'p{K - 1}', y, 20, 1e3)
    ex, ey = decode(encode(x, 20), 20), decode(encode(y, 20), 20)
    prod = smc.mul(sx, sy)
    np.testing.assert_array_equal(smc.reveal(prod), decode(encode(ex * ey, 40), 40))  # exact at scale 40
    t = smc.reveal(smc.truncate(prod, 20))
    assert np.all(np.abs(t - ex * ey) < 2 * 2.0**-20)  # < 1 ulp + encoding
    vals = np.concatenate([x, [0.0, 2.0**-20, -(2.0**-20), 999.999, -999.999]])
    s = smc.input('p1', vals, 20, 1e3)
    np.testing.assert_array_equal(smc.reveal_bits(smc.ltz(s)), (decode(encode(vals, 20), 20) < 0).astype(np.uint8))


def test_mul_many_and_maximum_random():
    g = np.random.default_rng(11)
    smc = SMC(['p0', 'p1', 'p2'], rng=11)
    x, y = g.normal(scale=30, size=50), g.normal(scale=30, size=(2, 7))
    n = g.integers(-1000, 1000, 50)
    sx, sy, sn = smc.input('p0', x, 20, 1e3), smc.input('p1', y, 10, 1e3), smc.input('p2', n, 0, 1e3)
    before = smc.n_openings
    a, b = smc.mul_many([(sx, sn), (sy, sy)])
    assert smc.n_openings - before == 1 and (a.scale, b.scale) == (20, 20)
    np.testing.assert_array_equal(smc.reveal(a), decode(encode(x, 20), 20) * n)
    np.testing.assert_array_equal(smc.reveal(b), decode(encode(y, 10), 10) ** 2)
    u, v = g.integers(-(2**62), 2**62, 200), g.integers(-(2**62), 2**62, 200)
    u[:20] = v[:20]  # ties
    m = smc.maximum(smc.input('p0', u, 0, 2.0**62), smc.input('p2', v, 0, 2.0**62))
    assert smc.reveal(m, exact=True).tolist() == np.maximum(u, v).tolist()


def test_reciprocal_random_counts():
    g = np.random.default_rng(7)
    n = np.concatenate([[1, 2, 2**16, 2**17 - 1], g.integers(1, 10**6, 40)])
    smc = SMC(['a', 'b', 'c'], rng=0)
    r = smc.reveal(smc.reciprocal(smc.input('b', n, 0, 10**6), n_max=10**6))
    np.testing.assert_allclose(r * n, 1.0, rtol=0, atol=1e-12 * n.max())


def test_secure_sum_exact_and_dropouts():
    g = np.random.default_rng(2)
    vals = {f'c{k}': g.normal(scale=100, size=(5, 6)) for k in range(6)}
    exact = sum(np.rint(np.ldexp(v, 20)) for v in vals.values()) / 2**20
    np.testing.assert_array_equal(secure_sum(vals, frac_bits=20, rng=0), exact)
    with pytest.raises(DropoutError, match=r"\['c1', 'c4'\]"):
        secure_sum(vals, rng=0, drop=['c1', 'c4'])
    rec = secure_sum(vals, rng=0, drop=['c1', 'c4'], on_dropout='recover', frac_bits=20)
    np.testing.assert_array_equal(
        rec, sum(np.rint(np.ldexp(v, 20)) for k, v in vals.items() if k not in ('c1', 'c4')) / 2**20
    )


# ------------------------------------------------------------ what parties see ----------


def run_share(x, seed):
    ch = Channel()
    smc = SMC(['a', 'b', 'c'], ch, rng=seed)
    smc.input('a', np.full(20, x), 16, 2.0**40)
    return ch, smc


def run_mul(x, seed):
    ch = Channel()
    smc = SMC(['a', 'b'], ch, rng=seed)
    smc.mul(smc.input('a', np.full(10, x), 16, 1e6), smc.input('a', np.full(10, -x), 16, 1e6))
    return ch, smc


def run_mul_many_shared(x, seed):
    "mul_many with shared factors and a square: each operand's mask is opened once (fedgauss.smc._mul_many)."
    ch = Channel()
    smc = SMC(['a', 'b', 'c'], ch, rng=seed)
    u, v = smc.input('a', np.full(8, x), 16, 1e6), smc.input('b', np.full(8, -x), 16, 1e6)
    smc.mul_many([(u, v), (u, u), (v, u)])
    return ch, smc


def run_trunc(x, seed):
    ch = Channel()
    smc = SMC(['a', 'b'], ch, rng=seed)
    smc.truncate(smc.input('a', np.full(10, x), 24, 1e6), 12)
    return ch, smc


def run_ltz(x, seed):
    ch = Channel()
    smc = SMC(['a', 'b', 'c'], ch, rng=seed)
    smc.ltz(smc.input('a', np.full(4, x), 12, 1e3))
    return ch, smc


def run_and(x, seed):
    ch = Channel()
    smc = SMC(['a', 'b'], ch, rng=seed)
    bits = np.full(64, int(x > 0), np.uint8)
    smc.and_(smc.input_bits('a', bits), smc.input_bits('a', bits))
    return ch, smc


def run_max(x, seed):
    ch = Channel()
    smc = SMC(['a', 'b'], ch, rng=seed)
    smc.maximum(smc.input('a', np.full(8, x), 8, 1e3), smc.input('a', np.full(8, -x), 8, 1e3))
    return ch, smc


def run_b2a(x, seed):
    ch = Channel()
    smc = SMC(['a', 'b'], ch, rng=seed)
    smc.b2a(smc.input_bits('a', np.full(64, int(x > 0), np.uint8)))
    return ch, smc


@pytest.mark.parametrize(
    'run,inputs',
    [
        (run_share, (0.0, 123456.75)),
        (run_mul, (0.0, 999.5)),
        (run_mul_many_shared, (0.0, 999.5)),
        (run_trunc, (-5.0, 77777.0)),
        (run_ltz, (-900.0, 0.5)),
        (run_and, (0, 1)),
        (run_b2a, (0, 1)),
        (run_max, (-700.0, 3.0)),
    ],
    ids=[
        'share',
        'beaver-mul',
        'mul-many-shared-factors',
        'truncation',
        'comparison',
        'and-gate',
        'bit-to-arith',
        'maximum',
    ],
)
def test_views_uniform_and_input_independent(run, inputs):
    va, vb = views(run, inputs)
    assert_uniform_and_input_free(va, vb)


def test_comparison_opening_high_bits_input_independent():
    # the opened y + r of a comparison is not uniform over the whole ring, only over [0, 2^(l+kappa)):
    # its high bits must not depend on the input either
    def top(x):
        out = []
        for seed in range(300):
            ch, smc = run_ltz(x, seed)
            ell = smc._bits_for(1e3, 12)
            c = next(m.payload for m in ch.messages if m.kind == 'masked' and m.receiver == 'b' and m.sender == 'a')
            out += [int(t) >> (ell + smc.kappa - 5) for t in np.asarray(c)]
        return np.bincount(out, minlength=64)

    tab = np.array([top(-999.0), top(999.0)])
    tab = tab[:, tab.sum(0) > 0]
    assert stats.chi2_contingency(tab).pvalue > ALPHA


def test_secure_sum_server_view_uniform():
    def masked(x):
        out = []
        for seed in range(100):
            ch = Channel()
            secure_sum({'a': np.full(16, x), 'b': np.full(16, -x), 'c': np.zeros(16)}, ch, rng=seed)
            out += received(ch, 'server', kinds=('masked',))[0]
        return out, []

    assert_uniform_and_input_free(masked(0.0), masked(1e6))


def test_only_reveal_messages_open_results():
    ch = Channel()
    smc = SMC(['a', 'b', 'c'], ch, rng=0)
    s = smc.mul(smc.input('a', [3.0], 8, 10), smc.input('b', [-2.0], 8, 10))
    assert set(ch.transcript['kind']) == {'share', 'dealer', 'masked'}
    smc.reveal_bits(smc.ltz(s), to=['c'])
    t = ch.transcript
    assert set(t.loc[t.kind == 'reveal', 'receiver']) == {'c'}
    assert set(t.loc[t.kind == 'dealer', 'sender']) == {'dealer'} and 'dealer' not in set(t.receiver)


# ---------------------------------------------------------------- bad input -------------

BAD = [
    (lambda: encode([np.nan], 8), ValueError, 'finite'),
    (lambda: encode([1e30], 40, 64), FixedPointOverflow, 'wrap'),
    (lambda: SMC(['a', 'a']), ValueError, 'distinct'),
    (lambda: SMC(['a', 'b'], dealer='a'), ValueError, 'dealer'),
    (lambda: SMC(['a', 'b'], ring_bits=40), ValueError, 'no room'),
    (lambda: SMC(['a', 'b']).input('a', [5.0], 8, 1.0), FixedPointOverflow, 'exceeds the agreed bound'),
    (lambda: SMC(['a', 'b']).input('a', [np.inf], 8, 1.0), ValueError, 'NaN or inf'),
    (lambda: SMC(['a', 'b'], ring_bits=128).input('a', [1.0], 100, 1.0), FixedPointOverflow, 'fixed-point overflow'),
    (lambda: secure_sum({'a': [1.0]}), ValueError, 'at least 2'),
    (lambda: secure_sum({'a': [1.0], 'b': [1.0, 2.0]}), ValueError, 'shape'),
    (lambda: secure_sum({'a': [np.nan], 'b': [1.0]}), ValueError, 'NaN'),
    (lambda: secure_sum({'a': [1.0], 'b': [1.0]}, drop=['z']), ValueError, 'unknown clients'),
    (lambda: secure_sum({'a': [1.0], 'b': [1.0]}, on_dropout='ignore'), ValueError, 'on_dropout'),
    (lambda: secure_sum({'a': [2.0**45], 'b': [1.0]}, frac_bits=20), FixedPointOverflow, 'too large'),
]


@pytest.mark.parametrize('call,exc,msg', BAD, ids=[m for *_, m in BAD])
def test_bad_input(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_product_overflow_refused_before_computing():
    ch = Channel()
    smc = SMC(['a', 'b'], ch, ring_bits=128, rng=0)
    x = smc.input('a', [1.0], 30, 2.0**20)
    n = len(ch.messages)
    with pytest.raises(FixedPointOverflow, match='overflow'):
        smc.mul(x, x)
    assert len(ch.messages) == n  # nothing was sent


# ---------------------------------------------------- few passes (issue 32): monomials, comparison by tables ----


def _party_run(prog, K=3, L=448, seed=0, **kw):
    "`prog(ctx, k, **kw)` at K parties p0.. (k: the party's number) and the dealer (k None), bulk-synchronously."
    from fedgauss.smc import PartySMC, Program, run_programs

    names = [f'p{j}' for j in range(K)]
    progs = []
    for k, p in enumerate(names + ['dealer']):
        ctx = PartySMC(p, names, 'dealer', L, 40, 1000 * seed + k)
        progs.append(Program(p, ctx, prog(ctx, k if k < K else None, **kw)))
    ch = Channel()
    res, rounds = run_programs(progs, ch, dealer='dealer', bsp=True)
    return res, rounds['passes'][0], ch


def _split(x, K: int) -> list:
    "K parts of the integers x (object array), each at most max|x| / K + K in absolute value, adding up to x."
    q = np.array([int(v) // K for v in x.ravel()], dtype=object).reshape(x.shape)
    return [q] * (K - 1) + [x - (K - 1) * q]


def _sign_prog(smc, k, x, bound, tables):
    "The parties' inputs add up to the integers x (|x| <= K bound); [x < 0] by `ltz_tables` or `ltz`, opened."
    mine = None if k is None else _split(x, len(smc.parties))[k]
    X = smc.input_sum(mine, x.shape, 0, bound, encoded=True)
    u = yield from (smc.ltz_tables(X) if tables else smc.ltz(X))
    return (yield from smc.reveal_bits(u))


@pytest.mark.parametrize('K', [2, 3, 5])
def test_ltz_tables_equals_ltz_at_the_edges_and_at_random(K):
    "Zero, one unit either side, the declared bound and the ring's largest bound; random values; 2 to 5 parties."
    from fedgauss.smc import PartySMC

    g = np.random.default_rng(K)
    top = (2 ** (PartySMC('p0', ['p0'], 'd', 448, 40).max_value_bits - 2) - 2) // K  # the largest the ring allows
    for bound in (K + 1, 2**20, 2**127, top):
        B = K * (bound - K)  # the sum of K inputs, each below `bound`; the total's declared bound is K bound
        edge = [0, 1, -1, B, -B, B - 1, 1 - B, B // 2, -(B // 2)]
        rand = [int.from_bytes(g.bytes(64), 'little') % (2 * B + 1) - B for _ in range(60)]
        x = np.array(edge + rand, dtype=object).reshape(-1, 3)
        new, p_new, _ = _party_run(_sign_prog, K, x=x, bound=bound, tables=True)
        old, p_old, _ = _party_run(_sign_prog, K, x=x, bound=bound, tables=False)
        np.testing.assert_array_equal(new['p0'], (x < 0).astype(np.uint8))
        np.testing.assert_array_equal(new['p0'], old['p0'])
        assert all(np.array_equal(new[p], new['p0']) for p in new if p != 'dealer')
        assert p_new == 7 and p_old >= p_new  # input, dealer, 2 openings through the king, reveal


def test_mul_monomials_exact_in_one_opening():
    "Monomials of degree 1 to 3 (factors repeated) against exact integer products; one opening through the king."

    def prog(smc, k, X, monos):
        mine = None if k is None else (X if k == 2 else 0 * X)
        S = smc.input_sum(mine, X.shape, 0, 2.0**40, encoded=True)
        P = yield from smc.mul_monomials([S.rows(i) for i in range(len(X))], monos)
        return (yield from smc.reveal(smc.stack(P), exact=True))

    g = np.random.default_rng(5)
    X = np.array([[int(t) for t in g.integers(-(2**40), 2**40, 7)] for _ in range(4)], dtype=object)
    monos = [(0,), (1, 1), (0, 3), (2, 1, 0), (3, 3, 3), (0, 0, 2), (1, 2, 3)]
    res, _, ch = _party_run(prog, 3, X=X, monos=monos)
    want = np.array([[math.prod(int(X[i, j]) for i in m) for j in range(7)] for m in monos], dtype=object)
    assert res['p0'].tolist() == want.tolist()
    assert (ch.transcript.kind == 'masked').sum() == 2 * 2


def test_ltz_tables_openings_uniform_and_input_free():
    """The bytes y_j + s_j the parties open are uniform whatever x; so are the table shares the last party receives in
    full (and the others expand from a seed)."""

    def run(x, seed):
        vals = np.full(8, x, dtype=object)
        _, _, ch = _party_run(_sign_prog, 3, seed=seed, x=vals, bound=2**40, tables=True)
        opened = [m.payload for m in ch.messages if m.kind == 'masked' and m.receiver == 'p1']
        opened = [a for a in opened if isinstance(a, np.ndarray)]  # the bytes (ring elements are RingElements)
        table = [m.payload for m in ch.messages if m.kind == 'dealer' and m.receiver == 'p2']
        table = [a for a in table if isinstance(a, np.ndarray)]
        return np.concatenate(opened), table[0][:4000]

    hist = {}
    for x in (-(2**39), 5):
        o, t = zip(*[run(x, s) for s in range(50)])
        hist[x] = [np.bincount(np.concatenate(v), minlength=256) for v in (o, t)]
    for which in (0, 1):
        a, b = hist[-(2**39)][which], hist[5][which]
        assert stats.chisquare(a).pvalue > ALPHA and stats.chisquare(b).pvalue > ALPHA
        assert stats.chi2_contingency(np.array([a, b])).pvalue > ALPHA


# ---- issue 32: the SMC made faster sends the same messages ----


def _monomials_then_sign_prog(smc, k, X, monos):
    "Products of the shared rows of X (monomials, one opening) and the signs of the first two, by dealer tables."
    mine = None if k is None else _split(X, len(smc.parties))[k]
    S = smc.input_sum(mine, X.shape, 0, 2**60, encoded=True)
    P = yield from smc.mul_monomials([S.rows(i) for i in range(X.shape[0])], monos)
    u = yield from smc.ltz_tables(smc.stack([smc.sub(P[0], P[1]), smc.sub(P[2], P[3])]))
    return (yield from smc.reveal_bits(u))


def test_mul_monomials_and_ltz_tables_send_the_messages_they_sent():
    """Every message of a seeded `mul_monomials` (degrees 1 to 3, repeated operands) followed by `ltz_tables`, as
    the SHA-256 of the payloads (`bench_securefedyj.payload_digest`), equals the digest recorded before the speed-up
    of issue 32 (main d20c3ad): integers and ChaCha20 only, so the digest does not depend on the platform."""
    from bench_securefedyj import payload_digest

    g = np.random.default_rng(11)
    X = np.array([[int(t) for t in g.integers(-(2**40), 2**40, 9)] for _ in range(5)], dtype=object)
    monos = [(0, 3), (2, 2), (1, 0, 3), (1, 2, 2), (0, 0, 4), (4,), (0, 2, 4)]
    res, _, ch = _party_run(_monomials_then_sign_prog, 3, seed=3, X=X, monos=monos)
    prod = lambda m: np.array([math.prod(int(X[i, j]) for i in m) for j in range(9)], dtype=object)
    want = np.stack([prod(monos[0]) - prod(monos[1]), prod(monos[2]) - prod(monos[3])]) < 0
    assert res['p0'].astype(bool).tolist() == want.tolist()
    assert payload_digest(ch) == '97bc821ac08a479ee015c94fc9079c57a45b72bba762272b11d9abe9ef480fbb'


def test_ltz_tables_with_wide_chunks():
    """Beyond 508 bits the chunks are wider than 4 bits (`table_layout`): the digits go through the bits
    (`_int_digits`' other path) and the flat gathers use 2**b entries per chunk; the signs are still exact."""
    from fedgauss.smc import table_layout

    bound = 2**620
    g = np.random.default_rng(4)
    x = [0, 1, -1, bound, -bound, bound - 1, 1 - bound]
    x = np.array(x + [int.from_bytes(g.bytes(80), 'little') % (2 * bound + 1) - bound for _ in range(25)], dtype=object)
    res, _, _ = _party_run(_sign_prog, 3, L=768, x=x, bound=bound, tables=True)
    assert table_layout(621)[0] > 4
    assert res['p0'].tolist() == (x < 0).astype(np.uint8).tolist()


# ------------------------------------------------------------------ one-pass openings (issue 32) ----------
def _run_parties(prog, K=3, L=448, **kw):
    "Run `prog(smc, k, **kw)` at K parties and the dealer (k None), bulk-synchronously: (results, passes, channel)."
    from fedgauss.smc import PartySMC, Program, run_programs

    names = [f'p{j}' for j in range(K)]
    progs = [
        Program(p, c, prog(c, k if k < K else None, **kw))
        for k, p in enumerate(names + ['dealer'])
        for c in [PartySMC(p, names, 'dealer', L, 40, 7 + k)]
    ]
    ch = Channel()
    res, rounds = run_programs(progs, ch, dealer='dealer', bsp=True)
    return res, rounds['passes'][0], ch


def _max_prog(smc, k, X):
    it = smc.input_own(None if k is None else X[k], X.shape[1:], 0, 2.0**63, encoded=True)
    M = yield from smc.maximum_many(it)
    return None if k is None else (yield from smc.reveal(M, exact=True))


@pytest.mark.parametrize('K', [2, 3, 4, 5])
def test_maximum_many_equals_the_maximum_in_three_openings(K):
    "Random values, ties (all equal, some equal) and the range codes' 'no value' marker; 3 one-pass openings."
    g = np.random.default_rng(K)
    X = g.integers(-(2**62), 2**62, (K, 50)).astype(object)
    X[:, :5] = -3
    X[: K // 2 + 1, 5:10] = X[0, 5:10]
    X[:, 10] = -(2**63 - 1)
    res, passes, ch = _run_parties(_max_prog, K, X=X)
    assert res['p0'].tolist() == X.max(axis=0).tolist()
    assert passes == 6  # the dealer's, three openings, the reveal, the end
    t = ch.transcript
    assert set(t.loc[t.kind == 'masked', 'receiver']) == {f'p{j}' for j in range(K)}
    assert (t.loc[t.kind == 'masked'].groupby('sender').size() == 3 * (K - 1)).all()  # every party to every other


def _ratio_prog(smc, k, n, s1, s2, n_max, f, fast):
    part = lambda x, sc: smc.input_sum(None if k is None else (x if k == 0 else 0 * x), x.shape, sc, 1e7, encoded=True)
    n, s1, s2 = part(n, 0), part(s1, f), part(s2, 2 * f)
    if fast:
        m, v = yield from smc.ratio_moments(n, s1, s2, n_max)
    else:  # the final round before issue 32: Newton from a power of two, products and truncations
        r = yield from smc.reciprocal(n, n_max=n_max, scale=64)
        P = yield from smc.mul_many([(n, s2), (s1, s1), (s1, r)])
        Dn = yield from smc.truncate((yield from smc.mul(smc.sub(P[0], P[1]), r)), 64)
        m = yield from smc.truncate(P[2], 64)
        v = yield from smc.truncate((yield from smc.mul(Dn, r)), 64 + f)
    return None if k is None else (yield from smc.reveal(smc.stack([m, v]), exact=True))


def test_ratio_moments_within_the_fixed_point_bound_against_exact_rationals():
    """S1/n and (n S2 - S1^2)/n^2 at scale f against exact fractions: within |S1| 2**-63 + 2**-(f-1) and
    |D| 2**-62 / n + 2**-(f-1), as the Newton final round it replaces; 9 passes instead of 71."""
    from fractions import Fraction

    f, g, n_max = 96, np.random.default_rng(11), 3 * 2**20
    n = np.array([1, 2, 3, 4, 5, 7, 8, 100, 569, 1023, 1024, 2**19 + 3, 2**20, n_max - 1, n_max], dtype=object)
    x = [g.normal(3, 2, size=int(min(v, 2000))) for v in n]
    s1 = np.array([int(round(v.sum() * 2**f)) for v in x], dtype=object)
    s2 = np.array([int(round((v**2).sum() * 2 ** (2 * f))) for v in x], dtype=object)
    kw = dict(n=n, s1=s1, s2=s2, n_max=n_max, f=f)
    (new, p_new, _), (old, p_old, _) = [_run_parties(_ratio_prog, 3, **kw, fast=t) for t in (True, False)]
    assert (p_new, p_old) == (9, 71)
    for out in (new['p0'], old['p0']):
        for i, (a, b, c) in enumerate(zip(s1, n, s2)):
            mean, D = Fraction(int(a), 2**f) / int(b), Fraction(int(b) * int(c) - int(a) ** 2, 2 ** (2 * f))
            got_m, got_v = Fraction(int(out[0, i]), 2**f), Fraction(int(out[1, i]), 2**f)
            assert abs(got_m - mean) <= abs(Fraction(int(a), 2**f)) / 2**63 + Fraction(2, 2**f), (i, 'mean')
            assert abs(got_v - D / int(b) ** 2) <= abs(D) / 2**62 / int(b) + Fraction(2, 2**f), (i, 'var')


def _stages_prog(smc, k, x, bound):
    X = smc.input_own(None if k is None else x, x.shape, 0, bound, encoded=True)[0]  # p0's x
    st = yield from smc.tables_deal(X.shape, float(bound), 0)
    if k is None:
        return None
    c = (yield from smc.open_all(ring=smc.tables_masked(st, X)))[0]
    v = (yield from smc.open_all(octets=smc.tables_octets(st, c)))[1]
    return (yield from smc.reveal_bits(smc.tables_bits(st, c, v)))


def test_comparison_stages_open_uniform_values():
    "The staged comparison: right bits, and what a party receives in its openings is uniform for very different x."
    hist = {}
    for x0 in (-(2**39), 5):
        x = np.full(3000, x0, dtype=object)
        res, _, ch = _run_parties(_stages_prog, 3, x=x, bound=2**40)
        assert res['p1'].tolist() == [int(x0 < 0)] * 3000
        ring = [
            m.payload
            for m in ch.messages
            if m.kind == 'masked' and m.receiver == 'p1' and hasattr(m.payload, 'ring_bits')
        ]
        octs = [
            m.payload
            for m in ch.messages
            if m.kind == 'masked' and m.receiver == 'p1' and isinstance(m.payload, np.ndarray)
        ]
        hist[x0] = [
            np.bincount(
                np.concatenate([np.asarray(p.values).astype(object) & 0xFF for p in ring]).astype(int), minlength=256
            ),
            np.bincount(np.concatenate(octs), minlength=256),
        ]
    for which in (0, 1):
        a, b = hist[-(2**39)][which], hist[5][which]
        assert stats.chisquare(a).pvalue > 1e-4 and stats.chisquare(b).pvalue > 1e-4
        assert stats.chi2_contingency(np.array([a, b])).pvalue > 1e-4


# ---- issue 32: the SMC kernels made faster give the integers of their plain references ----


def _ring(g, shape, L):
    "Uniform ring elements modulo 2**L (object array), with the extremes 0 and 2**L - 1 at the front."
    n = math.prod(shape)
    v = [int.from_bytes(g.bytes(L // 8 + 1), 'little') % 2**L for _ in range(n)]
    v[:2] = [2**L - 1, 0][: min(n, 2)]
    return np.array(v, dtype=object).reshape(shape)


@pytest.mark.parametrize(
    'L, m, Q, N', [(448, 12, 276, 30), (64, 3, 5, 2), (200, 4, 7, 3), (128, 1, 1, 1), (512, 2, 600, 4)]
)
def test_ring_matmul_is_the_integer_product_modulo_2_L(L, m, Q, N):
    from fedgauss.smc import _ring_matmul

    g = np.random.default_rng(L + Q)
    A, X = _ring(g, (m, Q), L), _ring(g, (Q, N), L)
    got = _ring_matmul(A, X, L)
    assert got.dtype == object and all(type(v) is int for v in got.ravel())
    assert got.tolist() == (np.dot(A, X) % 2**L).tolist()


@pytest.mark.parametrize('king', [True, False])
def test_masked_monomials_merge_terms_to_the_plain_expansion(king):
    "`masked_monomials` (equal terms merged, prefixes shared) against every term of `monomial_terms`, one reduction."
    import functools
    import operator

    from fedgauss.smc import PartySMC, _mask_products, monomial_terms

    g, L = np.random.default_rng(9), 448
    smc = PartySMC('p0' if king else 'p1', ['p0', 'p1'], 'dealer', L)
    for monos in [
        ((1,), (0, 1, 1), (0, 0, 1, 1, 1), (0, 0, 0, 1, 1, 1, 1)),
        ((0, 0), (1,), (0, 1, 2, 2)),
        ((0, 3, 4),),
    ]:
        k = max(map(max, monos)) + 1
        P, B = _ring(g, (k, 5), L), g.integers(-3, 4, (k, 5)).astype(object)
        AP = _ring(g, (k + len(_mask_products(monos)), 5), L)
        Dc, Ds, A, starts = monomial_terms(monos, k)
        prod = lambda X: functools.reduce(operator.mul, X)
        one = np.ones((1, 5), dtype=object)
        coef = prod(np.concatenate([P, one])[Dc]) * prod(np.concatenate([B, one])[Ds])
        Ap = np.concatenate([AP, np.full((1, 5), int(king), dtype=object)])
        plain = np.add.reduceat(coef * Ap[A], starts, axis=0) % 2**L
        assert np.array(smc.masked_monomials(P, B, AP, monos)).tolist() == plain.tolist()


def test_reciprocal_series_in_integers_is_the_rounded_fraction():
    from fractions import Fraction

    from fedgauss.smc import reciprocal_series

    for kmax, p, scale in [(22, 12, 400), (5, 4, 10), (10, 7, 3), (3, 12, 5), (0, 1, 0)]:
        G = reciprocal_series(kmax, p, scale)
        for k in range(kmax + 1):
            c = Fraction(3 * 2**k, 2)
            for j in range(p):
                assert G[k, j] == round((-1) ** j * math.comb(p, j + 1) / c ** (j + 1) * 2**scale)


def test_table_share_is_the_prg_stream():
    from fedgauss.entropy import prg, secret_bytes
    from fedgauss.smc import table_share

    for size in [(100, 50), (256, 0), (0, 257), (90000, 172807)]:
        seed = bytes(range(7, 39))
        got = table_share(np.frombuffer(seed, np.uint8), *size)
        assert got.tobytes() == secret_bytes(prg(seed, 'comparison tables'), sum(size)).tobytes()


# ------------------------------------------------- what a deployment waits for (issue 32): the clocked run ----


def test_clock_records_every_step_and_changes_nothing():
    """`run_programs(..., clock=...)`: one (pass, party, seconds) per step, passes counted as the run counts them; the
    results, the rounds and every message are those of the run without a clock; `critical_path` adds it up."""
    from fedgauss.smc import PartySMC, Program, critical_path, run_programs

    names, x = ['p0', 'p1', 'p2'], np.array([[3, -4, 5], [1, 1, -9], [2, 0, 0]], dtype=float)

    def prog(ctx, k):
        X = yield from ctx.input_all(None if k is None else x[k], (3,), 8, 100.0)
        (p,) = yield from ctx.mul_many([(X[0], X[1])])
        return (yield from ctx.reveal(ctx.add(p, X[2])))

    def run(clock):
        progs = []
        for k, p in enumerate(names + ['dealer']):
            ctx = PartySMC(p, names, 'dealer', 128, 40, k)
            progs.append(Program(p, ctx, prog(ctx, k if k < 3 else None)))
        ch = Channel()
        res, rounds = run_programs(progs, ch, dealer='dealer', bsp=True, clock=clock)
        body = lambda v: (
            np.asarray(getattr(v, 'values', v), dtype=object).ravel().tolist()
        )  # RingElements: its integers
        return res, rounds, [(m.round, m.sender, m.receiver, m.kind, body(m.payload)) for m in ch.messages]

    clock = []
    (res, rounds, msgs), (res0, rounds0, msgs0) = run(clock), run(None)
    np.testing.assert_array_equal(res['p0'], res0['p0'])
    np.testing.assert_allclose(res['p0'], x[0] * x[1] + x[2])
    assert rounds == rounds0 and msgs == msgs0
    steps = {}
    for k, n, t in clock:
        assert t >= 0 and 1 <= k <= rounds['passes'][0]
        steps[k, n] = steps.get((k, n), 0) + 1
    assert set(steps.values()) == {1}  # a party steps at most once a pass
    assert {n for _, n, _ in clock} == set(names + ['dealer'])
    cp = critical_path(clock)
    assert cp['passes'] == len({k for k, _, _ in clock})
    assert cp['total'] == pytest.approx(sum(t for _, _, t in clock))
    assert cp['critical'] == pytest.approx(
        sum(max(t for k2, _, t in clock if k2 == k) for k in {k for k, _, _ in clock})
    )


def test_critical_path_sums_the_slowest_step_of_each_pass():
    from fedgauss.smc import critical_path

    cp = critical_path([(1, 'a', 0.5), (1, 'b', 2.0), (2, 'b', 1.0), (2, 'a', 3.0), (4, 'c', 0.25)])
    assert (cp['critical'], cp['total'], cp['passes']) == (5.25, 6.75, 3)
    assert cp['parties'] == {'a': 3.5, 'b': 3.0, 'c': 0.25}
    assert critical_path([]) == {'critical': 0, 'total': 0, 'parties': {}, 'passes': 0}
