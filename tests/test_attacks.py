"""Attacks that once worked, kept as tests (issue 26).

Each attack is played against the library as it is: a test fails if the attack succeeds again. Where an attack needs
a weakness that the library no longer has, the test first puts that weakness back (a positive control), to show that
the attack itself still works and that the fix is what stops it.
"""

# ---- secret randomness: the SMC dealer, SecureFedYJ, secure aggregation ----
import ast, math, numbers, random
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mersenne_ints(rng, shape, bits):
    "The generator `fedgauss.smc.random_ints` used before issue 26: a Mersenne Twister seeded from a numpy draw."
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(t) for t in shape)
    gb = random.Random(int(rng.integers(2**63))).getrandbits
    out = np.empty(math.prod(shape), dtype=object)
    out[:] = [gb(bits) for _ in range(len(out))]
    return out.reshape(shape)


def _securefedyj_king_attack():
    "SecureFedYJ on breast cancer in three parts; the king (client0) attacks client1's masks. Returns (attack, client1's row count)."
    from fedgauss.data import load_breast_cancer
    from fedgauss.securefedyj import SecureFedYJ, mask_prediction_attack

    X, _ = load_breast_cancer()
    parts = np.array_split(np.asarray(X), 3)
    fed = SecureFedYJ(t_max=2).fit(parts)  # no seed: every party's secrets from the OS
    return mask_prediction_attack(fed.channel_, 'client0', 'client1', fed.ring_bits_), len(parts[1])


def _reads_row_count(attack, n_rows) -> bool:
    "Did some unmasked opening start with the victim's row count (the first statistic, at scale 0)?"
    return any(len(v) >= 30 and all(int(t) == n_rows for t in v[:30]) for _, v in attack['unmasked'])


@pytest.mark.filterwarnings('ignore::UserWarning')
def test_securefedyj_king_cannot_predict_another_clients_masks():
    "On main at f8172c7 the king predicted 43 of 44 dealer messages to client1 and read its row count at every step."
    attack, n1 = _securefedyj_king_attack()
    assert attack['tried'] > 40
    assert attack['predicted'] == 0 and not _reads_row_count(attack, n1)


@pytest.mark.filterwarnings('ignore::UserWarning')
def test_securefedyj_king_attack_works_on_a_mersenne_twister_dealer(monkeypatch):
    "Positive control: with the old generator put back, the same attack predicts the masks and reads the row count."
    import fedgauss.smc as smc

    monkeypatch.setattr(smc, 'secret_ints', _mersenne_ints)
    attack, n1 = _securefedyj_king_attack()
    assert attack['predicted'] >= attack['tried'] - 2
    assert _reads_row_count(attack, n1)


def test_the_smc_dealer_draws_from_secret_generators():
    "Every party of the engine, the dealer included, draws from ChaCha20 keyed per party (never from a shared stream)."
    from fedgauss.entropy import is_secret_rng
    from fedgauss.smc import PartySMC, SMC

    s = SMC(['a', 'b', 'c'], rng=0)
    assert all(is_secret_rng(g) for g in s.rng.values())
    keys = {g.bit_generator.state['state']['keysetup'].tobytes() for g in s.rng.values()}
    assert len(keys) == 4  # one key per party and the dealer
    assert is_secret_rng(PartySMC('a', ['a', 'b'], rng=None).rng)


def test_secure_sum_masks_are_not_numpy_streams():
    "Pairwise masks expand the agreed seed with ChaCha20: not the PCG64 stream keyed by SHA-256 of the seed (f8172c7)."
    import hashlib

    from fedgauss.entropy import prg, secret_uint64
    from fedgauss.smc import secure_sum

    seed = 2**255 + 12345
    old = np.random.default_rng(int.from_bytes(hashlib.sha256(seed.to_bytes(256, 'big')).digest(), 'big'))
    old_mask = old.integers(0, np.iinfo(np.uint64).max, size=8, dtype=np.uint64, endpoint=True)
    new_mask = secret_uint64(prg(seed, 'secure_sum mask'), 8)
    assert not np.array_equal(old_mask, new_mask)
    np.testing.assert_allclose(secure_sum({'a': [1.5, 2.0], 'b': [0.25, -1.0]}), [1.75, 1.0])


def test_no_module_draws_secrets_from_statistical_generators():
    "No module but `entropy` (which demonstrates the attack) imports `random` or calls getrandbits (`secrets` is the OS's)."
    for f in sorted((ROOT / 'fedgauss').glob('*.py')):
        if f.name in ('entropy.py', '_modidx.py'):
            continue
        tree = ast.parse(f.read_text())
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                assert 'random' not in {a.name for a in n.names}, f'{f.name} imports random'
            if isinstance(n, ast.Attribute):
                assert n.attr != 'getrandbits', f'{f.name}:{n.lineno} calls getrandbits'
