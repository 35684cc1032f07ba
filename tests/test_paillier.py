"""fedgauss.paillier: keys, correctness of every operation on both big-integer backends, interoperability with
python-paillier (phe, an independent implementation), fast obfuscators, fixed point, packing and bad input."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedgauss import paillier as pl
from fedgauss.paillier import (
    FixedBase,
    FixedPoint,
    ObfuscatorTable,
    PaillierPrivateKey,
    PaillierPublicKey,
    generate_paillier_keypair,
    pack_slots,
    random_prime,
    slots_per_plaintext,
    unpack_slots,
)
from fedgauss.smc import FixedPointOverflow

phe = pytest.importorskip('phe')
BACKENDS = [pytest.param(True, id='gmpy2'), pytest.param(False, id='python')]


@pytest.fixture(scope='module', params=BACKENDS)
def keys(request):
    return generate_paillier_keypair(512, rng=1, unsafe=True, use_gmpy2=request.param)


@pytest.fixture(scope='module')
def keys2048():
    return generate_paillier_keypair(2048, rng=2)


@pytest.mark.parametrize('bits', [256, 512, 1024, 2048])
def test_modulus_has_exactly_the_requested_length(bits):
    pk, sk = generate_paillier_keypair(bits, rng=bits, unsafe=True)
    assert pk.n.bit_length() == bits and sk.p * sk.q == pk.n and sk.p != sk.q
    assert sk.p.bit_length() == sk.q.bit_length() == bits // 2
    assert math.gcd(int(pk.n), (int(sk.p) - 1) * (int(sk.q) - 1)) == 1


def test_keys_from_the_os_differ_and_seeds_reproduce():
    a, b = generate_paillier_keypair(256, unsafe=True)[0], generate_paillier_keypair(256, unsafe=True)[0]
    assert a.n != b.n
    assert (
        generate_paillier_keypair(256, rng=7, unsafe=True)[0] == generate_paillier_keypair(256, rng=7, unsafe=True)[0]
    )


@pytest.mark.parametrize('use_gmpy2', BACKENDS)
def test_primes_pass_an_independent_test(use_gmpy2):
    import gmpy2
    from phe.util import is_prime as phe_is_prime

    for s in range(5):
        p = random_prime(160, rng=s, use_gmpy2=use_gmpy2)
        assert gmpy2.is_prime(int(p), 50) and phe_is_prime(int(p)) and p.bit_length() == 160  # GMP's and phe's tests


@settings(max_examples=30, deadline=None)
@given(m1=st.integers(0, 2**500), m2=st.integers(0, 2**500), k=st.integers(-(2**64), 2**64))
def test_homomorphic_identities(m1, m2, k):
    pk, sk = KEYS
    n = int(pk.n)
    m1, m2 = m1 % n, m2 % n
    c1, c2 = pk.raw_encrypt(m1, rng=1), pk.raw_encrypt(m2, rng=2)
    assert sk.raw_decrypt(c1) == m1
    assert sk.raw_decrypt(pk.add(c1, c2)) == (m1 + m2) % n
    assert sk.raw_decrypt(pk.add_plain(c1, m2)) == (m1 + m2) % n
    assert sk.raw_decrypt(pk.mul_plain(c1, k)) == (k * m1) % n


KEYS = generate_paillier_keypair(512, rng=3, unsafe=True)


def test_batched_equals_one_by_one(keys):
    pk, sk = keys
    ms = [0, 1, 2**200, int(pk.n) - 1] + list(np.random.default_rng(0).integers(0, 2**62, 20))
    for fast in (True, False):
        for enc in (pk.encrypt_many, sk.encrypt_many):
            cs = enc(ms, rng=4, fast=fast)
            assert sk.decrypt_many(cs) == [int(m) for m in ms] == [sk.raw_decrypt(c) for c in cs]
    assert len({int(c) for c in pk.encrypt_many([5] * 10, rng=5)}) == 10  # fresh randomness each time


def test_interoperability_with_phe(keys2048):
    pk, sk = keys2048
    phe_pk = phe.PaillierPublicKey(int(pk.n))
    phe_sk = phe.PaillierPrivateKey(phe_pk, int(sk.p), int(sk.q))
    ms = [0, 1, 2**1000 + 17, int(pk.n) - 1]
    for fast in (True, False):
        assert [phe_sk.raw_decrypt(int(c)) for c in sk.encrypt_many(ms, fast=fast)] == ms  # phe reads ours
        assert [phe_sk.raw_decrypt(int(c)) for c in pk.encrypt_many(ms, fast=fast)] == ms
    assert sk.decrypt_many([phe_pk.raw_encrypt(m) for m in ms]) == ms  # we read phe's
    # phe's high-level API: encrypted floats summed by phe, decrypted by us through its encoding
    e = phe_pk.encrypt(3.25) + phe_pk.encrypt(-1.0)
    assert phe_sk.decrypt(e) == 2.25
    assert phe.EncodedNumber(phe_pk, sk.raw_decrypt(e.ciphertext(be_secure=False)), e.exponent).decode() == 2.25


def test_fast_obfuscators_are_nth_residues_and_table_powers_are_exact(keys):
    pk, sk = keys
    for key in (pk, sk):
        obf = key.obfuscators(20, rng=6)
        assert all(sk.raw_decrypt(o) == 0 for o in obf) and len({int(o) for o in obf}) == 20
    fb = FixedBase(pk.obfuscator(rng=1), pk.nsquare, 200, window=5)
    xs = [0, 1, 31, 32, 2**199 + 5, 2**200 - 1]
    assert [int(v) for v in fb.powers(xs)] == [pow(int(fb.table[0][1]), x, int(pk.nsquare)) for x in xs]
    t = ObfuscatorTable(pk, rng=2, exponent_bits=64)
    assert t.exponent_bits == 64 and all(sk.raw_decrypt(o) == 0 for o in t.draw(5, rng=3))


def test_a_pool_is_used_once_per_plaintext(keys):
    pk, sk = keys
    pool = sk.obfuscators(6, rng=7)
    cs = pk.encrypt_many([1, 2, 3, 4, 5, 6], obfuscators=pool)
    assert sk.decrypt_many(cs) == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match='3 obfuscators for 6 plaintexts'):
        pk.encrypt_many([1] * 6, obfuscators=pool[:3])


@settings(max_examples=40, deadline=None)
@given(x=st.lists(st.floats(-1e30, 1e30, allow_nan=False), min_size=1, max_size=8), f=st.integers(0, 60))
def test_fixed_point_roundtrip_and_signed_sums(x, f):
    pk, sk = KEYS
    fp = FixedPoint(pk.n, f)
    got = fp.decode(sk.decrypt_many(pk.encrypt_many(fp.encode(x), rng=8)))
    np.testing.assert_allclose(got, x, rtol=0, atol=2.0**-f * 0.5000001)
    s = fp.decode([sk.raw_decrypt(pk.sum(pk.encrypt_many(fp.encode(x), rng=9)))])[0]
    exact = sum(round(v * 2**f) for v in x) / 2**f
    assert s == pytest.approx(exact, rel=1e-12, abs=1e-300)


def test_fixed_point_bad_input():
    pk, sk = KEYS
    fp = FixedPoint(pk.n, 32)
    with pytest.raises(FixedPointOverflow, match='exceeds the fixed-point range'):
        fp.encode([fp.max_value * 1.01])
    with pytest.raises(ValueError, match='finite'):
        fp.encode([1.0, np.inf])
    with pytest.raises(ValueError, match='finite'):
        fp.encode([np.nan])
    with pytest.raises(FixedPointOverflow, match='wrapped around'):
        fp.decode([int(pk.n) // 2 - 1])
    with pytest.raises(ValueError, match='frac_bits'):
        FixedPoint(pk.n, -1)


def test_packing_with_headroom_for_k_additions():
    pk, sk = KEYS
    k, value_bits = 1000, 40
    slot = value_bits + math.ceil(math.log2(k))
    per = slots_per_plaintext(pk.n, slot)
    rows = np.random.default_rng(0).integers(0, 2**value_bits, (k, per)).astype(object)
    cs = pk.encrypt_many([pack_slots(r, slot) for r in rows], rng=10)
    total = unpack_slots(sk.raw_decrypt(pk.sum(cs)), slot, per)
    assert total == [int(v) for v in rows.sum(axis=0)]
    with pytest.raises(FixedPointOverflow, match='does not fit'):
        pack_slots([-1], 8)


@pytest.mark.parametrize(
    'call,exc,msg',
    [
        (lambda: generate_paillier_keypair(512), ValueError, 'breakable'),
        (lambda: generate_paillier_keypair(1023, unsafe=True), ValueError, 'even integer'),
        (lambda: generate_paillier_keypair(2048.0), ValueError, 'even integer'),
        (lambda: KEYS[0].raw_encrypt(-1), ValueError, 'outside \\[0, n\\)'),
        (lambda: KEYS[0].raw_encrypt(int(KEYS[0].n)), ValueError, 'outside \\[0, n\\)'),
        (lambda: KEYS[0].raw_encrypt(1.0), TypeError, 'integer'),
        (lambda: KEYS[0].raw_encrypt(True), TypeError, 'integer'),
        (lambda: KEYS[0].encrypt_many([1, 2.5]), TypeError, 'integer'),
        (lambda: KEYS[1].raw_decrypt(int(KEYS[0].nsquare) + 1), ValueError, 'another key'),
        (lambda: KEYS[1].raw_decrypt(0), ValueError, 'another key'),
        (lambda: KEYS[1].decrypt_many([1.5]), TypeError, 'integer'),
        (lambda: PaillierPrivateKey(KEYS[0], 3, 5), ValueError, 'key mismatch'),
    ],
)
def test_bad_input(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_a_ciphertext_under_another_key_is_caught_when_it_can_be():
    (pk1, sk1), (pk2, _) = KEYS, generate_paillier_keypair(1024, rng=11)
    big = [c for c in pk2.encrypt_many(list(range(50)), rng=12) if c >= pk1.nsquare]
    assert big  # a larger key's ciphertexts mostly fall outside (0, n1^2)
    with pytest.raises(ValueError, match='another key'):
        sk1.decrypt_many(big[:1])


# ---- fixed-base tables sized for their draws (issue 32) ----
def test_fixed_base_window_is_the_cheapest_table_within_memory():
    "The window minimizes (2^w + draws) ceil(bits / w) products among tables of at most max_entries entries."
    cost = lambda b, w, d: ((1 << w) + d) * -(-b // w)
    for b in (64, 256, 1024, 2048):
        for d in (0, 1, 100, 4096, 20_000, 10**7):
            w = pl.fixed_base_window(b, d)
            allowed = [v for v in range(1, 17) if v == 1 or -(-b // v) << v <= 2**18]
            assert w in allowed and cost(b, w, d) == min(cost(b, v, d) for v in allowed)
    assert pl.fixed_base_window(1024, 20_000) == 11 and pl.fixed_base_window(1024, 20_000, max_entries=2**16) == 9
    with pytest.raises(ValueError, match='draws'):
        pl.fixed_base_window(1024, -1)


def test_table_powers_are_the_same_whatever_the_window_and_batch(keys):
    "Row-by-row products over a batch give h^x exactly, for any window; a key's obfuscators do not depend on it."
    pk, sk = keys
    h, r = int(pk.obfuscator(rng=1)), np.random.default_rng(0)
    xs = [0, 1, 2**300 - 1] + [int.from_bytes(r.bytes(38), 'little') for _ in range(20)]
    want = [pow(h, x, int(pk.nsquare)) for x in xs]
    for w in (1, 5, 8, 11):
        assert [int(v) for v in FixedBase(pk._mpz(h), pk.nsquare, 304, window=w).powers(xs)] == want
    draws = {w: ObfuscatorTable(sk, rng=4, window=w).draw(6, rng=pl.secret_rng(9)) for w in (3, 8, 12)}
    assert draws[3] == draws[8] == draws[12]
    t = pl.obfuscator_table(sk, pl.secret_rng(5), draws=50_000)
    assert t.tables[0].window == pl.fixed_base_window(t.exponent_bits, 50_000)
