"""The bad-input catalogue, continued for `fedgauss.paillier` and `fedgauss.secureboost` (issue 31), with the harness
and the table of inputs of `tests/test_bad_input.py`: each case ends in a clear error that names the problem or in the
correct result checked against a reference (the plaintext for Paillier, the centralized `GBDTClassifier` for
SecureBoost, which is lossless); the caller's data are untouched, no numpy warning leaks out, no warning is printed
twice.

Every public entry point: key generation, the keys' methods (encryption, decryption, the homomorphic operations,
obfuscators), `EncryptedNumber`, `FixedBase`, `ObfuscatorTable`, `FixedPoint`, slot packing; SecureBoost's packing,
`align_rows`, the estimator (fit on every input of the table, labels, parties, hyperparameters, prediction before and
after fit, fit twice), model parts, the programs' checks, and the leakage measures."""

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from test_bad_input import V, expect, label

from fedgauss import paillier as pl
from fedgauss.gbdt import GBDTClassifier
from fedgauss.secureboost import (
    SecureBoostClassifier,
    active_party_view,
    align_rows,
    bin_recovery_attack,
    bins_per_ciphertext,
    label_inference_attack,
    own_columns_inference,
    leaf_purity,
    pack_gh,
    part_model,
    secureboost_check,
    unpack_bins,
    unpack_gh,
    weight_identity_error,
)
from fedgauss.smc import FixedPointOverflow

PK, SK = pl.generate_paillier_keypair(512, rng=0, unsafe=True)
PK2, SK2 = pl.generate_paillier_keypair(256, rng=1, unsafe=True)  # another key: its ciphertexts lie in (0, n^2) of PK
N = int(PK.n)
C5 = PK.raw_encrypt(5, rng=2)


def dec(want):
    "A check that the result decrypts (under SK) to `want`."
    return lambda c: np.testing.assert_equal(int(SK.raw_decrypt(c)), want % N)


def dec_many(want):
    return lambda cs: np.testing.assert_equal([int(v) for v in SK.decrypt_many(cs)], [w % N for w in want])


def equal(want):
    return lambda got: np.testing.assert_equal(got, want)


# ------------------------------------------------------------------------------------------------ Paillier
PAILLIER = {
    # key generation
    'keypair np.int64 bits': (
        lambda b: pl.generate_paillier_keypair(b, rng=3, unsafe=True)[0].n.bit_length(),
        (np.int64(256),),
        equal(256),
    ),
    'keypair float bits': (lambda b: pl.generate_paillier_keypair(b), (2048.0,), 'n_length must be an even integer'),
    'keypair odd bits': (lambda b: pl.generate_paillier_keypair(b, unsafe=True), (1023,), 'even integer'),
    'keypair bool bits': (lambda b: pl.generate_paillier_keypair(b, unsafe=True), (True,), 'even integer'),
    'keypair tiny': (lambda b: pl.generate_paillier_keypair(b, unsafe=True), (8,), 'even integer >= 16'),
    'keypair breakable': (lambda b: pl.generate_paillier_keypair(b), (512,), 'breakable'),
    'keypair numpy rng': (
        lambda: pl.generate_paillier_keypair(256, rng=np.random.default_rng(0), unsafe=True),
        (),
        'not a cryptographic',
    ),
    'prime np.int64 bits': (lambda b: pl.random_prime(b, rng=1).bit_length(), (np.int64(64),), equal(64)),
    'prime 2 bits': (lambda b: pl.random_prime(b), (2,), 'bits must be an integer >= 3'),
    'prime float bits': (lambda b: pl.random_prime(b), (64.0,), 'bits must be an integer'),
    # the public key
    'modulus 10': (pl.PaillierPublicKey, (10,), 'odd integer >= 15'),
    'modulus negative': (pl.PaillierPublicKey, (-35,), 'odd integer >= 15'),
    'modulus square': (pl.PaillierPublicKey, (61 * 61,), 'square'),
    'modulus prime': (pl.PaillierPublicKey, (2**61 - 1,), 'prime'),
    'modulus float': (pl.PaillierPublicKey, (3233.0,), 'integer'),
    'modulus bool': (pl.PaillierPublicKey, (True,), 'integer'),
    'modulus 15': (lambda n: int(pl.PaillierPublicKey(n).max_int), (15,), equal(4)),
    'private key mismatch': (lambda: pl.PaillierPrivateKey(PK, 3, 5), (), 'key mismatch'),
    # encryption
    'encrypt -1': (PK.raw_encrypt, (-1,), r'outside \[0, n\)'),
    'encrypt n': (PK.raw_encrypt, (N,), r'outside \[0, n\)'),
    'encrypt float': (PK.raw_encrypt, (1.0,), 'integer'),
    'encrypt nan': (PK.raw_encrypt, (np.nan,), 'integer'),
    'encrypt bool': (PK.raw_encrypt, (True,), 'integer'),
    'encrypt np.int64': (lambda m: PK.raw_encrypt(m, rng=1), (np.int64(7),), dec(7)),
    'encrypt r 0': (lambda: PK.raw_encrypt(5, r_value=0), (), 'unit of Z_n'),
    'encrypt r = p': (lambda: PK.raw_encrypt(5, r_value=int(SK.p)), (), 'unit of Z_n'),
    'encrypt r float': (lambda: PK.raw_encrypt(5, r_value=3.0), (), 'integer unit'),
    'encrypt r 1': (lambda: PK.raw_encrypt(5, r_value=1), (), dec(5)),
    'encrypt_many empty': (PK.encrypt_many, ([],), equal([])),
    'encrypt_many float': (PK.encrypt_many, ([1, 2.5],), 'integer'),
    'encrypt_many nan array': (PK.encrypt_many, (np.array([np.nan]),), 'integer'),
    'encrypt_many int64 array': (lambda a: PK.encrypt_many(a, rng=1), (np.arange(4),), dec_many([0, 1, 2, 3])),
    'encrypt_many object big ints': (
        lambda a: SK.encrypt_many(a, rng=1),
        (np.array([2**300, N - 1], dtype=object),),
        dec_many([2**300, N - 1]),
    ),
    'encrypt_many obfuscator 0': (lambda: PK.encrypt_many([5], obfuscators=[0]), (), r'integer in \(0, n\^2\)'),
    'encrypt_many obfuscator n^2': (
        lambda: PK.encrypt_many([5], obfuscators=[int(PK.nsquare)]),
        (),
        r'integer in \(0, n\^2\)',
    ),
    'encrypt_many obfuscator float': (lambda: PK.encrypt_many([5], obfuscators=[3.0]), (), 'integer'),
    'encrypt_many too few obfuscators': (lambda: PK.encrypt_many([5, 6], obfuscators=[1]), (), '1 obfuscators for 2'),
    'obfuscators -1': (lambda: PK.obfuscators(-1), (), 'k must be an integer >= 0'),
    'obfuscators 2.5': (lambda: SK.obfuscators(2.5), (), 'k must be an integer'),
    'obfuscators 0': (lambda: PK.obfuscators(0, rng=1), (), equal([])),
    # decryption
    'decrypt 0': (SK.raw_decrypt, (0,), 'another key'),
    'decrypt n^2': (SK.raw_decrypt, (int(PK.nsquare),), 'another key'),
    'decrypt float': (SK.raw_decrypt, (1.5,), 'integer'),
    'decrypt_many empty': (SK.decrypt_many, ([],), equal([])),
    'decrypt_many float': (SK.decrypt_many, ([1.5],), 'integer'),
    'decrypt another key': (lambda: SK.decrypt(PK2.encrypt(5, rng=1)), (), 'another key'),
    'decrypt_many another key': (
        lambda: SK.decrypt_many([PK.encrypt(1, rng=1), PK2.encrypt(1, rng=1)]),
        (),
        'another key',
    ),
    'decrypt a raw int': (lambda: SK.decrypt(int(C5)), (), 'EncryptedNumber'),
    # homomorphic operations
    'add text': (lambda: PK.add(C5, 'a'), (), 'integer'),
    'add another key': (lambda: PK.add(PK.encrypt(1, rng=1), PK2.encrypt(1, rng=1)), (), 'another key'),
    'add_plain float': (lambda: PK.add_plain(C5, 2.5), (), 'integer'),
    'add_plain negative': (lambda: PK.add_plain(C5, -3), (), dec(2)),
    'mul_plain 2.5': (lambda: PK.mul_plain(C5, 2.5), (), 'plaintext factor is an integer'),
    'mul_plain bool': (lambda: PK.mul_plain(C5, True), (), 'integer'),
    'mul_plain np.int64': (lambda: PK.mul_plain(C5, np.int64(3)), (), dec(15)),
    'mul_plain -1': (lambda: PK.mul_plain(C5, -1), (), dec(-5)),
    'mul_plain 0': (lambda: PK.mul_plain(C5, 0), (), dec(0)),
    'sum text': (lambda: PK.sum([C5, 'a']), (), 'integer'),
    'sum empty': (lambda: PK.sum([]), (), dec(0)),
    'EncryptedNumber + other key': (lambda: PK.encrypt(1, rng=1) + PK2.encrypt(1, rng=1), (), 'another key'),
    'EncryptedNumber * EncryptedNumber': (lambda: PK.encrypt(1, rng=1) * PK.encrypt(2, rng=2), (), 'cannot multiply'),
    'EncryptedNumber * 0.5': (lambda: PK.encrypt(1, rng=1) * 0.5, (), 'integer'),
    'EncryptedNumber of 0': (lambda: pl.EncryptedNumber(PK, 0), (), r'outside \(0, n\^2\)'),
    'EncryptedNumber sum': (lambda: SK.decrypt(sum([PK.encrypt(2, rng=1), PK.encrypt(3, rng=2), 4])), (), equal(9)),
    # fixed-base tables
    'FixedBase exponent too large': (lambda: pl.FixedBase(3, 1000003, 8).powers([256]), (), r'\[0, 2\^8\)'),
    'FixedBase negative exponent': (lambda: pl.FixedBase(3, 1000003, 8).powers([-1]), (), r'\[0, 2\^8\)'),
    'FixedBase 0 bits': (lambda: pl.FixedBase(3, 1000003, 0), (), 'exponent_bits must be'),
    'FixedBase window 40': (lambda: pl.FixedBase(3, 1000003, 8, window=40), (), 'window must be at most 16'),
    'FixedBase powers': (
        lambda: pl.FixedBase(3, 1000003, 20).powers([0, 5, 2**20 - 1]),
        (),
        equal([1, 243, pow(3, 2**20 - 1, 1000003)]),
    ),
    'ObfuscatorTable numpy rng': (
        lambda: pl.ObfuscatorTable(PK, rng=np.random.default_rng(1)),
        (),
        'not a cryptographic',
    ),
    # fixed point
    'FixedPoint max_int n - 1': (lambda: pl.FixedPoint(N, frac_bits=0, max_int=N - 1), (), 'max_int must be'),
    'FixedPoint max_int 0': (lambda: pl.FixedPoint(N, frac_bits=0, max_int=0), (), 'max_int must be'),
    'FixedPoint frac_bits -1': (lambda: pl.FixedPoint(N, -1), (), 'frac_bits must be'),
    'FixedPoint frac_bits 1.5': (lambda: pl.FixedPoint(N, 1.5), (), 'frac_bits must be'),
    'FixedPoint float n': (lambda: pl.FixedPoint(10.5), (), 'n must be an integer'),
    'encode nan': (pl.FixedPoint(N, 32).encode, ([1.0, np.nan],), 'finite'),
    'encode inf': (pl.FixedPoint(N, 32).encode, ([np.inf],), 'finite'),
    'encode text': (pl.FixedPoint(N, 32).encode, (['a'],), 'could not convert'),
    'encode empty': (pl.FixedPoint(N, 32).encode, ([],), equal([])),
    'encode beyond range': (pl.FixedPoint(N, 32).encode, ([1e300],), 'exceeds the fixed-point range'),
    'encode 1e-300': (
        lambda x: pl.FixedPoint(N, 32).decode(pl.FixedPoint(N, 32).encode(x)),
        ([1e-300, -1e-300],),
        equal([0.0, 0.0]),
    ),
    'encode round trip': (
        lambda x: pl.FixedPoint(N, 32).decode(pl.FixedPoint(N, 32).encode(x)),
        ([-2.5, 0.25, 1e9],),
        equal([-2.5, 0.25, 1e9]),
    ),
    'decode 0.6 n': (lambda: pl.FixedPoint(N, 0).decode([int(0.6 * N)]), (), 'wrapped around'),
    'decode negative': (pl.FixedPoint(N, 0).decode, ([-5],), r'integer in \[0, n\)'),
    'decode n': (pl.FixedPoint(N, 0).decode, ([N],), r'integer in \[0, n\)'),
    'decode float': (pl.FixedPoint(N, 0).decode, ([1.5],), r'integer in \[0, n\)'),
    # slots
    'pack floats': (pl.pack_slots, ([1.7, 2.2], 8), 'slot values are integers'),
    'pack negative': (pl.pack_slots, ([-1], 8), 'does not fit'),
    'pack too large': (pl.pack_slots, ([256], 8), 'does not fit'),
    'pack bool': (pl.pack_slots, ([True], 8), 'integers'),
    'pack 0 bits': (pl.pack_slots, ([1], 0), 'slot_bits must be'),
    'pack empty': (pl.pack_slots, ([], 8), equal(0)),
    'pack np.int64': (pl.pack_slots, (np.array([3, 255]), 8), equal(3 + 255 * 256)),
    'unpack negative': (pl.unpack_slots, (-5, 8, 2), '>= 0'),
    'unpack too wide': (pl.unpack_slots, (2**16, 8, 2), 'does not fit 2 slots'),
    'unpack float': (pl.unpack_slots, (3.0, 8, 1), 'must be an integer'),
    'unpack k -1': (pl.unpack_slots, (3, 8, -1), 'k must be'),
    'slots 0 bits': (pl.slots_per_plaintext, (N, 0), 'slot_bits must be'),
    'slots float bits': (pl.slots_per_plaintext, (N, 2.5), 'slot_bits must be'),
    'slots modulus 1': (pl.slots_per_plaintext, (1, 8), 'n must be'),
}


@pytest.mark.parametrize('name', list(PAILLIER))
def test_paillier(name):
    f, args, want = PAILLIER[name]
    expect(f, args, want)


def test_a_seed_reproduces_encryptions_on_one_key_object():
    "issue 31: `encrypt_many(..., rng=3)` gave other ciphertexts on its second call (the table was cached on first use)."
    pk, sk = pl.generate_paillier_keypair(256, rng=5, unsafe=True)
    first = [int(c) for c in pk.encrypt_many([1, 2, 3], rng=3)]
    pk.encrypt_many([9], rng=4)
    assert [int(c) for c in pk.encrypt_many([1, 2, 3], rng=3)] == first
    assert [int(c) for c in sk.encrypt_many([1, 2, 3], rng=3)] == [int(c) for c in sk.encrypt_many([1, 2, 3], rng=3)]


# ------------------------------------------------------------------------------------------------ SecureBoost
FAST = dict(key_size=256, unsafe=True, rng=0)
KW = dict(n_estimators=3, max_depth=2)


def _fit_predict(parties, blocks=None, **kw):
    "Fit SecureBoost on `parties` and score `blocks` (default: the training blocks): the probabilities of class 1."
    sb = SecureBoostClassifier(**FAST, **dict(KW, **kw)).fit(parties)
    return np.asarray(sb.predict_proba(blocks or [X for X, _ in parties]))[:, 1]


def _as_central(X, y, **kw):
    "The centralized reference: `GBDTClassifier` on the columns side by side (SecureBoost is lossless)."
    p = GBDTClassifier(**dict(KW, **kw)).fit(X, y).predict_proba(X)[:, 1]
    return lambda got: np.testing.assert_array_equal(got, p)


SB_ERR = {
    '+inf': "party 0: column 'a' holds infinity",
    '-inf': "party 1: column 'b' holds infinity",
    'empty': 'no rows',
    'one row': 'needs two classes; y has 1',
    'object (text)': "party 1: column 'b' is neither numeric nor categorical",
    'complex': "party 1: column 'b' is complex",
}


@pytest.mark.parametrize('name', list(V))
def test_secureboost_on_every_input(name):
    "Each input of the table, one column per party: the centralized model's probabilities exactly, or a named error."
    X = V[name]
    y = label[: len(X)]
    want = SB_ERR.get(name) or _as_central(X, y)
    expect(lambda X, y: _fit_predict([(X[['a']], y), (X[['b']], None)]), (X, y), want)


def _cat_frame():
    g = np.random.default_rng(2)
    return pd.DataFrame(
        {'a': g.normal(size=60), 'b': pd.Categorical(g.choice(['x', 'y', 'z'], 60), categories=['x', 'y', 'z'])}
    )


def test_categorical_columns_are_coded_as_the_core_codes_them():
    X, y = _cat_frame(), (np.arange(60) % 3 == 0).astype(int)
    expect(lambda X, y: _fit_predict([(X[['a']], y), (X[['b']], None)]), (X, y), _as_central(X, y))


def test_categories_at_predict_are_the_fits():
    "Rows to score whose categorical column lists its categories in another order (or new ones) mean what they meant."
    X = _cat_frame()
    y = ((X['b'] == 'x') | (X['a'] > 1)).to_numpy().astype(int)  # the category matters
    sb = SecureBoostClassifier(**FAST, **KW).fit([(X[['a']], y), (X[['b']], None)])
    gb = GBDTClassifier(**KW).fit(X, y)
    later = X.assign(b=pd.Categorical(X['b'].astype(str), categories=['z', 'w', 'y', 'x']))  # w: unseen at fit
    later.loc[:5, 'b'] = 'w'
    expect(
        lambda L: np.asarray(sb.predict_proba([L[['a']], L[['b']]]))[:, 1],
        (later,),
        equal(gb.predict_proba(later)[:, 1]),
    )


def _parts(n=60):
    g = np.random.default_rng(0)
    X = g.normal(size=(n, 4))
    return X, (X[:, 0] > 0).astype(int)


LABELS = {
    'NaN': (lambda y: np.r_[np.nan, y[1:]], 'labels contain missing values'),
    'nullable with NA': (lambda y: pd.array(np.r_[y[:-1], 0], dtype='Int64').insert(0, pd.NA)[:60], 'missing'),
    'one class': (lambda y: np.zeros_like(y), 'two classes; y has 1'),
    'three classes': (lambda y: y + (np.arange(len(y)) == 3) * 2, 'as given'),  # softmax, one tree per class
    'too short': (lambda y: y[:-1], '59 labels for 60 rows'),
    'two columns': (lambda y: np.c_[y, y], '120 labels for 60 rows'),
    'strings': (lambda y: np.where(y == 1, 'yes', 'no'), 'same'),
    'bool': (lambda y: y.astype(bool), 'same'),
    'floats': (lambda y: y.astype(float), 'same'),
    'column vector': (lambda y: y[:, None], 'same'),
}


@pytest.mark.parametrize('name', list(LABELS))
def test_secureboost_labels(name):
    X, y = _parts()
    make, want = LABELS[name]
    yy = make(y)
    if want == 'same':  # the labels as given: the reference's probabilities, on the same order of classes
        want = _as_central(X, y)
    elif want == 'as given':  # K >= 3 classes: the reference's softprob on these labels
        want = _as_central(X, yy)
    expect(lambda X, yy: _fit_predict([(X[:, :2], yy), (X[:, 2:], None)]), (X, yy), want)


PARTIES = {
    'labels at two parties': (lambda X, y: [(X[:, :2], y), (X[:, 2:], y)], 'exactly one party'),
    'no labels': (lambda X, y: [(X[:, :2], None), (X[:, 2:], None)], 'exactly one party'),
    'not a list of pairs': (lambda X, y: X, r'list of \(X_p, y_p\)'),
    'an empty list': (lambda X, y: [], r'list of \(X_p, y_p\)'),
    'rows differ': (lambda X, y: [(X[:, :2], y), (X[:-1, 2:], None)], 'different numbers of rows'),
    'a party without columns': (lambda X, y: [(X[:, :2], y), (X[:, :0], None)], 'party 1: a party with no columns'),
    'a 3-d block': (lambda X, y: [(X[:, :2], y), (X[:, 2:, None], None)], '2-d array'),
    'arrays and frames': (lambda X, y: [(X[:, :2], y), (pd.DataFrame(X[:, 2:]), None)], 'pass all DataFrames'),
    'frames, other IDs': (
        lambda X, y: [(pd.DataFrame(X[:, :2]), y), (pd.DataFrame(X[:, 2:], index=np.arange(60) + 1), None)],
        'row IDs are not',
    ),
    'labels with another index': (
        lambda X, y: [(pd.DataFrame(X[:, :2]), pd.Series(y, index=np.arange(60) + 5)), (pd.DataFrame(X[:, 2:]), None)],
        "labels' index",
    ),
    'id_column missing': (lambda X, y: [(pd.DataFrame(X[:, :2]), y), (pd.DataFrame(X[:, 2:]), None)], 'no ID column'),
    'the active party alone': (lambda X, y: [(X, y)], 'alone'),
    'passive party first, shuffled frames': (
        lambda X, y: [(pd.DataFrame(X[::-1, 2:], index=np.arange(60)[::-1]), None), (pd.DataFrame(X[:, :2]), y)],
        'shuffled',
    ),
}


@pytest.mark.parametrize('name', list(PARTIES))
def test_secureboost_parties(name):
    X, y = _parts()
    make, want = PARTIES[name]
    kw = dict(id_column='id') if name == 'id_column missing' else {}
    if want == 'alone':  # no passive party: the core's model on the active party's columns
        want = _as_central(X, y)
    if want == 'shuffled':  # rows aligned on their IDs: the model of the columns side by side, in the active order
        want = _as_central(np.c_[X[:, 2:], X[:, :2]], y)
    expect(lambda p: _fit_predict(p, **kw), (make(X, y),), want)


@pytest.mark.parametrize(
    'kw,msg',
    [
        ({'n_estimators': 0}, 'n_estimators must be an integer >= 1'),
        ({'n_estimators': 1.5}, 'n_estimators'),
        ({'n_estimators': True}, 'n_estimators'),
        ({'max_depth': 0}, 'max_depth'),
        ({'rl_trees': -1}, 'rl_trees'),
        ({'learning_rate': 0}, 'learning_rate'),
        ({'learning_rate': np.nan}, 'learning_rate'),
        ({'learning_rate': np.inf}, 'learning_rate'),
        ({'reg_lambda': -1}, 'reg_lambda'),
        ({'gamma': -1e-9}, 'gamma'),
        ({'min_child_weight': np.nan}, 'min_child_weight'),
        ({'max_bins': 1}, 'max_bins'),
        ({'max_bins': 70000}, 'max_bins'),
        ({'max_bins': 2.5}, 'max_bins'),
        ({'missing': 'zero'}, 'missing must be one of'),
        ({'key_size': 512, 'unsafe': False}, 'breakable'),
        ({'key_size': 1023}, 'key_size must be even'),
        ({'key_size': 64}, 'key_size must be an integer >= 198'),
        ({'base_score': 1.0}, 'base_score'),
        ({'base_score': np.nan}, 'base_score'),
    ],
)
def test_secureboost_parameters(kw, msg):
    X, y = _parts()
    expect(lambda p: SecureBoostClassifier(**{**FAST, **KW, **kw}).fit(p), ([(X[:, :2], y), (X[:, 2:], None)],), msg)


def test_every_trained_method_before_fit_says_not_fitted():
    X, _ = _parts()
    sb = SecureBoostClassifier(**FAST)
    for f in (sb.predict, sb.predict_proba, sb.decision_function, sb.predict_inputs):
        with pytest.raises(NotFittedError, match='not fitted yet'):
            f([X[:, :2], X[:, 2:]])
    with pytest.raises(NotFittedError, match='not fitted yet'):
        sb.model_parts()
    with pytest.raises(NotFittedError, match='not fitted yet'):
        sb.bytes_by_party
    for attack in (
        bin_recovery_attack,
        lambda m: label_inference_attack(m, np.zeros(3)),
        lambda m: active_party_view(m, 'p'),
    ):
        with pytest.raises(NotFittedError, match='not fitted yet'):
            attack(sb)


@pytest.fixture(scope='module')
def fitted():
    X, y = _parts()
    return X, y, SecureBoostClassifier(**FAST, **KW).fit([(X[:, :2], y), (X[:, 2:], None)])


PREDICT = {
    'one block': (lambda X: [X], 'a list of 2 feature blocks'),
    'not a list': (lambda X: X, 'a list of 2 feature blocks'),
    'a column short': (lambda X: [X[:, :1], X[:, 2:]], 'party 0 has 1 columns; it had 2 at fit'),
    'rows differ': (lambda X: [X[:5, :2], X[:6, 2:]], 'different numbers of rows'),
    'inf': (lambda X: [X[:, :2], np.where(X[:, 2:] > 1, np.inf, X[:, 2:])], 'party 1: column .* holds infinity'),
    'text': (lambda X: [X[:, :2], np.full((60, 2), 'x')], 'party 1: features must be numeric'),
    'NaN': (lambda X: [X[:, :2], np.where(X[:, 2:] > 1, np.nan, X[:, 2:])], 'central'),
    'one row': (lambda X: [X[:1, :2], X[:1, 2:]], 'central'),
    'no rows': (lambda X: [X[:0, :2], X[:0, 2:]], 'central'),
    'extreme values': (lambda X: [X[:, :2] * 1e300, -X[:, 2:] * 1e-300], 'central'),
}


@pytest.mark.parametrize('name', list(PREDICT))
def test_secureboost_prediction_input(fitted, name):
    X, y, sb = fitted
    make, want = PREDICT[name]
    blocks = make(X)
    if want == 'central':
        gb = GBDTClassifier(**KW).fit(X, y)
        want = equal(gb.predict_proba(np.hstack(blocks))[:, 1] if len(blocks[0]) else np.zeros(0))
    expect(lambda b: np.asarray(sb.predict_proba(b))[:, 1].reshape(-1), (blocks,), want)


def test_fit_twice_is_a_fresh_fit():
    X, y = _parts()
    Z, _ = _parts(80)
    first = [(X[:, :2], y), (X[:, 2:], None)]
    again = [(Z[:, :1], (Z[:, 1] > 0).astype(int)), (Z[:, 1:3], None), (Z[:, 3:], None)]
    sb = SecureBoostClassifier(**FAST, **KW).fit(first)
    sb.fit(again)
    fresh = SecureBoostClassifier(**FAST, **KW).fit(again)
    blocks = [Z[:, :1], Z[:, 1:3], Z[:, 3:]]
    np.testing.assert_array_equal(sb.predict_proba(blocks), fresh.predict_proba(blocks))
    assert len(sb.parties_) == 3 and sb.n_features_in_ == 4
    np.testing.assert_array_equal(sb.channel_.transcript['bytes'], fresh.channel_.transcript['bytes'])


# --------------------------------------------------------------------------- SecureBoost's functions
FUNCS = {
    'pack_gh floats': (pack_gh, ([1.5], [2]), 'integers on the grid'),
    'pack_gh lengths': (pack_gh, ([1, 2], [3]), 'of one length'),
    'pack_gh negative H': (pack_gh, ([1], [-3]), 'non-negative'),
    'pack_gh 2-d': (pack_gh, (np.ones((2, 2), int), np.ones((2, 2), int)), '1-d'),
    'pack_gh empty': (pack_gh, ([], []), equal([])),
    'unpack_gh float': (unpack_gh, (2.5,), 'integer'),
    'unpack_gh negative': (unpack_gh, (pack_gh([-3], [7])[0],), equal((-3, 7))),
    'bins_per_ciphertext 64 bits': (bins_per_ciphertext, (2**63 + 1,), 'cannot hold one 99-bit bin'),
    'bins_per_ciphertext float': (bins_per_ciphertext, (2.0**300,), 'an integer'),
    'unpack_bins negative': (unpack_bins, (-1, N, 2), r'\[0, n\)'),
    'unpack_bins beyond n': (unpack_bins, (N, N, 2), r'\[0, n\)'),
    'unpack_bins q 0': (unpack_bins, (5, N, 0), 'q >= 1'),
    'unpack_bins overflow': (unpack_bins, (2**300, N, 1), 'overflowed its bins'),
    'align_rows duplicated IDs': (
        lambda a, b: align_rows([a, b], 0),
        (pd.DataFrame({'x': [1, 2]}, index=['u', 'u']), pd.DataFrame({'z': [1, 2]}, index=['u', 'v'])),
        "duplicated row IDs: 'u'",
    ),
    'align_rows missing IDs': (
        lambda a: align_rows([a], 0),
        (pd.DataFrame({'x': [1, 2]}, index=['u', None]),),
        'missing row IDs',
    ),
    'part_model empty': (part_model, ({},), 'model part'),
    'part_model lookup only partly': (part_model, ({'lookup_feature': np.zeros(1, int)},), 'lacks some'),
    'leaf_purity lengths': (leaf_purity, ([0, 1, 1], [0, 1]), '2 labels for 3 rows'),
    'leaf_purity not binary': (leaf_purity, ([0, 1], [0, 2]), 'binary'),
    'leaf_purity float leaves': (leaf_purity, ([0.5, 1.5], [0, 1]), 'integers'),
    'leaf_purity': (leaf_purity, ([3, 3, 4, 4], [1, 1, 0, 1]), equal(dict(purity=0.75, rows_in_90pct_pure_leaves=0.5))),
    'secureboost_check other columns': (
        secureboost_check,
        (dict(X=np.ones((3, 2))), dict(me='p', parties=['a', 'p'], active='a', n_features=[1, 3], n_rows=3)),
        'p has 2 columns; the federation expects 3',
    ),
    'secureboost_check labels at a passive party': (
        secureboost_check,
        (
            dict(X=np.ones((3, 3)), y=np.ones(3)),
            dict(me='p', parties=['a', 'p'], active='a', n_features=[1, 3], n_rows=3),
        ),
        'passive party: it holds no labels',
    ),
    'secureboost_check labels not 0/1': (
        secureboost_check,
        (
            dict(X=np.ones((3, 1)), y=np.array([0, 2, 1])),
            dict(me='a', parties=['a', 'p'], active='a', n_features=[1, 3], n_rows=3),
        ),
        "labels 'y' must be 0/1",
    ),
}


@pytest.mark.parametrize('name', list(FUNCS))
def test_secureboost_functions(name):
    f, args, want = FUNCS[name]
    expect(f, args, want)


def test_leakage_measures_name_what_does_not_fit(fitted):
    X, y, sb = fitted
    expect(lambda: active_party_view(sb, 'nobody'), (), "'nobody' is not a passive party")
    expect(lambda: active_party_view(sb, 'active'), (), "'active' is not a passive party")
    expect(lambda y: label_inference_attack(sb, y), (y[:-1],), '59 labels for 60 rows')
    expect(lambda y: label_inference_attack(sb, y, known=0), (y,), 'known is a share in')
    tree, leaf = sb.trees_[0], sb.train_leaves_[0]
    expect(lambda y: weight_identity_error(tree, leaf, y, 1.0, 0.3), (y * 2,), 'binary')
    expect(lambda y: label_inference_attack(sb, y, repeats=2), (y,), lambda r: 0 <= r['accuracy'] <= 1)
    Xp = sb.parties_[1].codes.astype(float)  # any columns of the 60 rows
    expect(lambda y: own_columns_inference(Xp, y), (y[:-1],), '59 labels for 60 rows')
    expect(lambda y: own_columns_inference(Xp, y, known=1.5), (y,), r'known=1\.5 in \(0, 1\)')
    expect(lambda y: own_columns_inference(Xp, y, repeats=2), (y,), lambda r: 0 <= r <= 1)
