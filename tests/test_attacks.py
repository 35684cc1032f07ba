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
    assert attack['tried'] >= 12  # 15 ring messages to client1 since the one-pass setup and final (40 before)
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


# ---- Flower deployment: trust boundaries (issue 27) ----
# Each test plays a hostile server, relay, peer or node against fedgauss.flower in this process (LocalGrid: the same
# `node_query` a SuperNode's ClientApp runs). On f8172c7 the pickled payloads ran their code (the marker file appeared),
# the swapped key, the forged plaintext, the server's seeds and the unpinned node were all accepted.
import importlib.util as _ilu
import os as _os

import pytest as _pytest

_needs_crypto = _pytest.mark.skipif(_ilu.find_spec('cryptography') is None, reason='needs cryptography (flower extra)')


class _Evil:
    "Unpickling it runs a command that creates a marker file."

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (_os.system, (f'touch {self.path}',))


def _yj_nodes(tmp_path, **kw):
    import numpy as np
    from fedgauss.flower import local_nodes
    from fedgauss.securefedyj import securefedyj_config

    g = np.random.default_rng(0)
    datas = {p: {'X': g.lognormal(size=(20, 3))} for p in ('client0', 'client1', 'client2')}
    cfg = securefedyj_config(['a', 'b', 'c'], list(datas), t_max=1)
    ncs, relay_kw = local_nodes(str(tmp_path / 'fed'), datas, **kw)
    return datas, cfg, ncs, relay_kw


@_needs_crypto
def test_flower_pickled_request_executes_nothing(tmp_path):
    "A hostile server (or SuperLink) sends a node a pickle as its request: nothing runs, the node answers an error."
    import pickle
    from fedgauss.flower import node_query

    marker = tmp_path / 'pwned-by-request'
    reply, state = node_query(pickle.dumps(_Evil(marker)), {}, {'party': 'client0', 'data-path': 'x.npz'})
    assert not marker.exists()
    from fedgauss.wire import decode

    assert 'not a fedgauss wire message' in decode(reply)['error'] and state == {}


@_needs_crypto
def test_flower_pickled_reply_executes_nothing_at_the_server(tmp_path):
    "A hostile node answers the relay with a pickle: nothing runs at the server, the run stops naming the node."
    import pickle
    from fedgauss.federation import Channel
    from fedgauss.flower import FlowerRunError, Relay

    marker = tmp_path / 'pwned-by-reply'

    class Grid:
        def get_node_ids(self):
            return [1]

        def exchange(self, blobs, timeout=None):
            return {n: (pickle.dumps(_Evil(marker)), None) for n in blobs}

    r = Relay.__new__(Relay)  # the relay's state as its constructor leaves it, whatever its arguments
    r.grid, r.timeout, r.on_pass, r.node, r.party, r.channel, r.wire, r.round_trips = (
        Grid(),
        5,
        None,
        {'node 1': 1},
        {},
        Channel(),
        0,
        0,
    )
    r.dropouts, r.stopped = False, {}  # as the constructor leaves them (no protocol that tolerates dropouts yet)
    with _pytest.raises(FlowerRunError, match=r'node 1 .*refuses.*not a fedgauss wire message'):
        r.ask({'node 1': {'op': 'hello'}}, 'keys and data check')
    assert not marker.exists()


@_needs_crypto
def test_flower_pickled_sealed_peer_message_executes_nothing(tmp_path):
    """A hostile peer (client1, with its own pinned identity and a correctly signed run key) seals a pickle for
    client0 under their genuine pair key: it opens, it is not a wire message, nothing runs, client0's state is kept."""
    import pickle
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from fedgauss.flower import node_query
    from fedgauss.wire import Sealed, decode, encode, load_identity, new_keypair, pair_key, sign_run_key

    datas, cfg, ncs, kw = _yj_nodes(tmp_path)
    hello = dict(op='hello', protocol='securefedyj', module='fedgauss.securefedyj', cfg=cfg, run='r1', seeds=None)
    hello.update(report=None, fault=None, keep=False)
    rep, st = node_query(encode(hello), {}, ncs[0])
    pub0 = decode(rep)['public_key'][0]
    keys = {}
    for p, key in [
        ('client1', ncs[1]['identity-key']),
        ('client2', ncs[2]['identity-key']),
        ('server', kw['identity']),
    ]:
        priv, pub = new_keypair()
        keys[p] = (pub, sign_run_key(load_identity(key), p, pub, st['context']))
        if p == 'client1':
            k = pair_key(priv, pub0, 'client1', 'client0', 'r1')
    marker = tmp_path / 'pwned-by-peer'
    nonce, aad = b'\0' * 12, encode(('fedgauss sealed', 'r1', 'client1', 'client0', 'share', 0))
    blob = nonce + AESGCM(k).encrypt(nonce, pickle.dumps(_Evil(marker)), aad)
    step = dict(op='step', inbox=[('client1', 'share', Sealed(blob, 10))], public_keys=keys)
    rep2, st2 = node_query(encode(step), st, ncs[0])
    assert not marker.exists()
    assert 'not a fedgauss wire message' in decode(rep2)['error'] and st2 is st


@_needs_crypto
def test_flower_relay_that_swaps_a_key_is_caught_before_any_share(tmp_path):
    "The relay (SecureFedYJ's dealer too) puts its own X25519 key in place of client1's: every node refuses to step."
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay
    from fedgauss.wire import new_keypair

    datas, cfg, ncs, kw = _yj_nodes(tmp_path)

    class Swapper(Relay):
        def _pass(self, S):
            S.pub = dict(S.pub, client1=(new_keypair()[1], S.pub['client1'][1]))  # its key, client1's signature
            return super()._pass(S)

    relay = Swapper(LocalGrid(ncs), 3, **kw)
    with _pytest.raises(FlowerRunError, match=r"client1's run key is not signed by client1's pinned identity"):
        relay.run('securefedyj', cfg)
    assert len(relay.channel.messages) == 0  # not a share left any node


@_needs_crypto
def test_flower_unsealed_message_claiming_a_party_is_refused(tmp_path):
    "The relay slips a plaintext 'share' 'from client1' into client0's inbox: client0 refuses it, the run stops."
    import numpy as np
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay

    datas, cfg, ncs, kw = _yj_nodes(tmp_path)

    class Forger(Relay):
        def _pass(self, S):
            if S.inbox['client0']:
                S.inbox['client0'].append(('client1', 'share', np.zeros(3, np.uint8)))
            return super()._pass(S)

    with _pytest.raises(FlowerRunError, match=r"client0 .*an unsealed 'share' claiming to come from client1: refused"):
        Forger(LocalGrid(ncs), 3, **kw).run('securefedyj', cfg)


@_needs_crypto
def test_flower_node_refuses_seeds_unless_started_for_tests(tmp_path):
    """The server sends the SecureBoost active party's seed (it would rebuild its Paillier key) — or any party's: a node
    not started with `test-seeds` refuses before drawing anything; one started for tests accepts."""
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay

    datas, cfg, ncs, kw = _yj_nodes(tmp_path)
    with _pytest.raises(FlowerRunError, match=r'client0 .*sent seeds.*not started for tests: refused'):
        Relay(LocalGrid(ncs), 3, **kw).run('securefedyj', cfg, seeds={'client0': 1234})
    datas, cfg, ncs, kw = _yj_nodes(tmp_path / 't', test_seeds=True)
    Relay(LocalGrid(ncs), 3, **kw).run('securefedyj', cfg, seeds={'client0': 1234})


@_needs_crypto
def test_flower_node_with_an_unpinned_identity_cannot_join(tmp_path, monkeypatch):
    """A node whose identity key is not the one the federation pins for its party: it refuses to join; and a rogue node
    that skips its own check is stopped by the relay's check of its signature, before any message."""
    from fedgauss import flower
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay
    from fedgauss.wire import write_identity

    datas, cfg, ncs, kw = _yj_nodes(tmp_path)
    write_identity(str(tmp_path / 'rogue.key'))
    ncs[2] = dict(ncs[2], **{'identity-key': str(tmp_path / 'rogue.key')})
    with _pytest.raises(
        FlowerRunError, match=r"client2 .*identity key is not the one the federation's configuration pins"
    ):
        Relay(LocalGrid(ncs), 3, **kw).run('securefedyj', cfg)
    own = flower._node_identity
    monkeypatch.setattr(
        flower, '_node_identity', lambda nc, me: (own(ncs[0], 'client0')[0], flower.load_identity(nc['identity-key']))
    )
    relay = Relay(LocalGrid(ncs), 3, **kw)
    with _pytest.raises(
        FlowerRunError, match=r"client2 \(node 3\) cannot join.*not signed by client2's pinned identity"
    ):
        relay.run('securefedyj', cfg)
    assert len(relay.channel.messages) == 0


# ---- DP-GBDT: public quantities, the discrete noise, secret randomness (issue 26 §2) ----


def _dpgbdt_outlier_data():
    import numpy as np

    X = np.random.default_rng(3).normal(size=(2000, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y, np.vstack([X, [[123.456, 0.0, 0.0]]]), np.r_[y, 1]


def _dpgbdt_fit_or_refuse(X, y, **kw):
    "The fit's model, or None if the estimator refuses for lack of a declared public quantity (the honest default)."
    import pytest

    from fedgauss.dpgbdt import DPGBDTClassifier

    try:
        return DPGBDTClassifier(**kw).fit(X, y)
    except ValueError as e:
        if 'feature_bounds' in str(e) or 'delta' in str(e):
            return None
        pytest.fail(f"unexpected error: {e}")


def test_dpgbdt_outlier_row_does_not_move_the_released_thresholds():
    """Issue 26 §2: with default arguments, bounds read from the pooled data put one row (x0 = 123.456 among 2 000
    normal rows) into the released thresholds (a threshold near 112; 2.9 without the row) while privacy_spent_ said
    epsilon = 1. Now a private fit without public bounds is refused, and with declared bounds the thresholds are the
    same with and without the row, given the same randomness."""
    import numpy as np

    X, y, X1, y1 = _dpgbdt_outlier_data()
    kw = dict(epsilon=1.0, split_candidates='uniform', n_estimators=10, n_clients=2, rng=7)
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw), _dpgbdt_fit_or_refuse(X1, y1, **kw)
    if a is not None and b is not None:  # a default fit that runs must not let the row into the thresholds
        top = lambda m: m.tree_thresholds_[np.isfinite(m.tree_thresholds_)].max()
        assert np.array_equal(a.tree_thresholds_, b.tree_thresholds_), (
            f"one row moved the thresholds: max {top(b):.1f} with it, {top(a):.1f} without, while privacy_spent_ = "
            f"{b.privacy_spent_}"
        )
    kw |= dict(feature_bounds=(-5, 5), delta=1e-4)
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw), _dpgbdt_fit_or_refuse(X1, y1, **kw)
    assert np.array_equal(a.tree_thresholds_, b.tree_thresholds_)
    assert (
        np.isfinite(b.tree_thresholds_).any()
        and np.nanmax(np.abs(b.tree_thresholds_[np.isfinite(b.tree_thresholds_)])) <= 5
    )


def test_dpgbdt_noise_does_not_depend_on_the_private_row_count():
    """delta = 1/n read the private n, and the noise multiplier calibrated to it: neighbours (n and n + 1 rows) got
    different noise scales, so the noise itself told whether a row was there. Now delta (or max_rows) is declared."""
    X, y, _, _ = _dpgbdt_outlier_data()
    kw = dict(epsilon=1.0, split_candidates='uniform', n_estimators=4, n_clients=2, rng=7)
    kw['feature_bounds'] = [(-5, 5)] * 3
    X1, y1 = X[:-1], y[:-1]  # a neighbour: one row removed
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw), _dpgbdt_fit_or_refuse(X1, y1, **kw)
    if a is not None and b is not None:
        assert a.noise_multiplier_ == b.noise_multiplier_ and a.privacy_spent_ == b.privacy_spent_, (
            f"the noise read n: z = {a.noise_multiplier_!r} with {len(X)} rows, {b.noise_multiplier_!r} with {len(X1)}"
        )
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw, max_rows=5000), _dpgbdt_fit_or_refuse(X1, y1, **kw, max_rows=5000)
    assert a.noise_multiplier_ == b.noise_multiplier_ and a.privacy_spent_ == b.privacy_spent_ and a.delta_ == 1 / 5000


def _pcg64_find(gen, pattern: bytes, limit=1 << 22, chunk=1 << 16):
    "Rewind a copy of a PCG64 generator up to `limit` words and look for `pattern` among its outputs; True if found."
    import copy

    import numpy as np

    bg = getattr(gen, 'bit_generator', None)
    if not isinstance(bg, np.random.PCG64):
        return False
    back = 0
    while back < limit:
        back += chunk
        b = copy.deepcopy(bg)
        b.advance((1 << 128) - back)  # PCG64 steps backwards as easily as forwards
        if b.random_raw(chunk + 8).tobytes().find(pattern) >= 0:
            return True
    return False


def test_dpgbdt_server_generator_does_not_lead_to_the_clients_secrets():
    """In the simulator the aggregator's program got the estimator's numpy generator, from which the estimator had just
    drawn every client's Diffie-Hellman secret: rewinding it (PCG64 advances backwards) gave the server all the secrets,
    hence every pairwise mask, hence each client's unmasked statistics (with noise='aggregator', exactly). Now each
    party's secrets come from its own ChaCha20 generator and the server's generator is derived one-way from the key."""
    from sklearn.datasets import make_classification

    from fedgauss.dpgbdt import DPGBDTClassifier

    X, y = make_classification(300, 4, random_state=0)
    kw = dict(n_estimators=2, max_depth=2, n_candidates=4, split_candidates='uniform', n_clients=3, rng=5)
    try:
        est = DPGBDTClassifier(**kw, noise='aggregator', feature_bounds=(-6, 6), max_rows=300)
    except TypeError:  # before max_rows existed
        est = DPGBDTClassifier(**kw, noise='aggregator', feature_bounds=[(-6, 6)] * 4)
    datas, cfg, srv = est.protocol_inputs(X, y)
    found = [p for p in cfg['parties'] if _pcg64_find(srv, bytes(datas[p]['secret']))]
    assert not found, f"the server's generator gives back the Diffie-Hellman secrets of {found}"


def test_dpgbdt_mask_streams_and_secrets_come_from_secret_generators():
    """The pairwise mask streams were numpy PCG64 generators (state recoverable from outputs); the secrets and noise of
    a client whose program got a numpy generator were drawn from it directly. Now: ChaCha20 (fedgauss.entropy)."""
    import numpy as np

    import fedgauss.dpgbdt as mod
    from fedgauss.federation import Channel

    assert type(mod._prg(12345).bit_generator).__name__ == 'ChaCha'
    ch = Channel()
    cl = [mod.SecAggClient(f'client{i}', ch) for i in range(3)]
    mod.key_agreement('server', cl, np.random.default_rng(0))
    assert all(type(g.bit_generator).__name__ == 'ChaCha' for c in cl for _, g in c._streams.values())
    # a client's secret is not the numpy generator's output it was handed
    g = np.random.default_rng(1)
    c = mod.SecAggClient('client0', Channel())
    c.key_agree('server', g)
    assert c._secret.to_bytes(32, 'big') != np.random.default_rng(1).bytes(32)


# ---- SecureBoost: what the active and passive parties learn (nb33), the active party's keys ----
@pytest.fixture(scope='module')
def sb_breast_cancer():
    "nb33's setting: breast cancer, two parties (15 columns each, labels with the first), 6 trees, depth 6, 256 bins."
    from fedgauss.data import load_breast_cancer
    from fedgauss.federation import vertical_split
    from fedgauss.secureboost import SecureBoostClassifier

    X, y = load_breast_cancer()
    y = np.asarray(y)
    parts = vertical_split(X, 2, y, label_party=0)
    fit = lambda **kw: SecureBoostClassifier(**dict(dict(n_estimators=6, key_size=512, unsafe=True, rng=0), **kw)).fit(
        parts
    )
    return dict(y=y, parts=parts, fit=fit, default=fit())


def test_secureboost_active_party_recovers_passive_bins_as_nb33_states(sb_breast_cancer):
    "The active party learns the exact bin of 13.7% of (row, passive feature) pairs, no error: the ceiling of any attack."
    from fedgauss.secureboost import bin_recovery_attack

    r = bin_recovery_attack(sb_breast_cancer['default'])
    assert r['errors'] == 0
    assert r['exact'] == pytest.approx(0.137, abs=0.01)
    assert r['exact'] == pytest.approx(r['ceiling'])
    assert r['bits'] == pytest.approx(2.85, abs=0.2)


def test_secureboost_large_leaves_lower_the_exact_bins(sb_breast_cancer):
    "nb33's mitigation: min_child_weight=20 lowers the exact bins from 13.7% to 5.6% of the pairs (still no error)."
    from fedgauss.secureboost import bin_recovery_attack

    r = bin_recovery_attack(sb_breast_cancer['fit'](min_child_weight=20))
    assert r['errors'] == 0 and r['exact'] == pytest.approx(0.056, abs=0.01)


def test_secureboost_passive_party_infers_labels_as_nb33_states(sb_breast_cancer):
    "With 2% of the labels, a passive party names the others at about 97% from the leaves it rebuilt (base rate 63%, 90% from its own columns)."
    from fedgauss.secureboost import label_inference_attack, own_columns_inference, passive_leaves

    m, y = sb_breast_cancer['default'], sb_breast_cancer['y']
    for mine, theirs in zip(passive_leaves(m.channel_, 'passive1', len(y)), m.train_leaves_):
        np.testing.assert_array_equal(mine, theirs)
    r = label_inference_attack(m, y)
    assert r['accuracy'] == pytest.approx(0.97, abs=0.02) and r['base_rate'] == pytest.approx(0.627, abs=0.001)
    own = own_columns_inference(sb_breast_cancer['parts'][1][0], y)  # without the protocol: its own 15 columns
    assert own == pytest.approx(0.903, abs=0.02) and r['accuracy'] > own + 0.05


def test_secureboost_reduced_leakage_does_not_hide_labels(sb_breast_cancer):
    "nb33: reduced leakage (rl_trees=3) leaves the label attack above 90%; it does not protect the instance spaces."
    from fedgauss.secureboost import label_inference_attack

    r = label_inference_attack(sb_breast_cancer['fit'](rl_trees=3), sb_breast_cancer['y'])
    assert r['accuracy'] > 0.9


def test_secureboost_keys_and_obfuscators_come_from_a_secret_generator():
    "The active party's Paillier primes and obfuscators: its own secret generator (the OS without a seed), never numpy's."
    from fedgauss.entropy import is_secret_rng
    from fedgauss.secureboost import SecureBoostClassifier, secureboost_context

    cfg = SecureBoostClassifier(key_size=512, unsafe=True).protocol_config(['active', 'passive1'], [2, 2], 10)
    for rng in (None, 0, np.random.default_rng(0)):
        ctx = secureboost_context('active', cfg, rng)
        assert is_secret_rng(ctx.key_rng) and is_secret_rng(ctx.obf_rng)


def test_paillier_refuses_a_numpy_generator_for_secrets():
    "A PCG64 or Mersenne Twister generator's state is recoverable from its outputs: no key or obfuscator from one."
    from fedgauss.paillier import generate_paillier_keypair

    with pytest.raises(ValueError, match='not a cryptographic one'):
        generate_paillier_keypair(512, rng=np.random.default_rng(0), unsafe=True)
    pk, _ = generate_paillier_keypair(512, rng=1, unsafe=True)
    for bad in (np.random.default_rng(2), np.random.Generator(np.random.MT19937(2)), np.random.RandomState(2)):
        with pytest.raises(ValueError, match='not a cryptographic one'):
            pk.encrypt_many([1, 2], rng=bad)


def test_secureboost_active_primes_cannot_be_rebuilt_from_what_the_others_saw():
    """Each party its own secret generator (one experiment seed through `party_rngs`, as a test harness gives them):
    nothing a passive party or the server holds or receives — its own generator, the public configuration, the
    transcript — rebuilds the active party's key, by the secret or the numpy construction; the active party's own
    generator does (the positive control)."""
    import copy
    from fedgauss.entropy import is_secret_rng, party_rngs, secret_rng
    from fedgauss.paillier import generate_paillier_keypair
    from fedgauss.secureboost import SECUREBOOST, SecureBoostClassifier
    from fedgauss.smc import run_protocol

    r = np.random.default_rng(5)
    X, y = r.normal(size=(120, 4)), r.integers(0, 2, 120)
    cfg = SecureBoostClassifier(n_estimators=1, max_depth=2, max_bins=8, key_size=512, unsafe=True).protocol_config(
        ['active', 'passive1'], [2, 2], 120
    )
    rngs = party_rngs(1234, ['active', 'passive1', 'server'])
    before = copy.deepcopy(rngs)
    datas = {'active': dict(X=X[:, :2], y=y.astype(float)), 'passive1': dict(X=X[:, 2:])}
    _, _, ch = run_protocol(SECUREBOOST, datas, cfg, rngs=rngs)
    n = next(int(m.payload) for m in ch.messages if m.kind == 'public_key')
    key = lambda g: int(generate_paillier_keypair(512, rng=g, unsafe=True)[0].n)
    assert key(copy.deepcopy(before['active'])) == n  # the positive control: the harness rebuilds a key it may
    seen = [before['passive1'], before['server'], n, n % 2**64]
    seen += [v for v in cfg.values() if isinstance(v, int) and not isinstance(v, bool)]
    for s in seen:  # its own generator as it is; any number it saw as a seed, as `secret_rng` and Paillier key them
        tries = [copy.deepcopy(s)] if is_secret_rng(s) else [secret_rng(s), secret_rng(s, 'fedgauss.paillier')]
        assert all(key(g) != n for g in tries)


# ---- SimFL / nFL-GBDT: the other parties' labels at tree 0, rows from hash values ----
import warnings as _nfl_warnings

import numpy as _nfl_np
import pytest as _nfl_pytest


def _nfl_clients(which='nb34'):
    "nb34's data (8 features, two label-skewed parties), or breast cancer in two label-skewed parties (nb34 too)."
    from sklearn.datasets import load_breast_cancer, make_classification

    from fedgauss.federation import label_skew_split

    if which == 'cancer':
        return label_skew_split(*load_breast_cancer(return_X_y=True), n_clients=2, theta=0.8, rng=0)
    X, y = make_classification(1200, 8, n_informative=5, random_state=0)
    return label_skew_split(X[:900], y[:900], n_clients=2, theta=0.8, rng=0)


def _nfl_fit(cls, clients, **kw):
    from fedgauss.nflgbdt import LSHCollapseWarning

    with _nfl_warnings.catch_warnings():
        _nfl_warnings.simplefilter('ignore', LSHCollapseWarning)
        return cls(n_estimators=20, max_depth=3, rng=0, **kw).fit(clients)


def _nfl_labels_known(est, sender):
    """The first builder's attack on the transcript: (c, k) from tree 0's mapped gradients, checked exact against the
    sender's map and labels; returns the share of the sender's labels it then knows (groups with k in {0, c})."""
    from fedgauss.nflgbdt import tree0_label_counts

    msg = next(m for m in est.channel_.messages if m.kind == 'mapped gradients' and m.sender == sender)
    c, k = tree0_label_counts(msg.payload, est.base_margin_)
    to = int(msg.receiver[-1])
    maps = [m.payload for m in est.channel_.messages if m.kind == 'similar rows' and m.receiver == sender]
    rows = next(p['rows'] for p in maps if int(p['to']) == to)
    y = next(p for p in est.parties_ if p.name == sender)._y
    _nfl_np.testing.assert_array_equal(c, _nfl_np.bincount(rows, minlength=len(c)))
    _nfl_np.testing.assert_array_equal(k, _nfl_np.bincount(rows, y, minlength=len(c)))
    known = (k == 0) | (k == c)
    return c[known].sum() / c.sum()


def test_nfl_builder_reads_label_counts_at_tree0():
    """nb34: at tree 0 the first builder recovers exactly, for each of its rows, how many of another party's rows are
    mapped to it and how many of them are positive. With lsh_scale='standard' that gives it most of party 1's labels
    (nb34: about 70 %); with the default scaling's collapsed signatures, fewer (about a tenth). Secret hash functions
    (the default) do not change it. SimFL's first tree leaks the same."""
    from fedgauss.nflgbdt import NFLGBDTClassifier, SimFLClassifier

    clients = _nfl_clients()
    assert _nfl_labels_known(_nfl_fit(NFLGBDTClassifier, clients, lsh_scale='standard'), 'party1') > 0.6
    assert _nfl_labels_known(_nfl_fit(NFLGBDTClassifier, clients), 'party1') < 0.3
    X, y = _nfl_np.vstack([c[0] for c in clients]), _nfl_np.concatenate([c[1] for c in clients])
    from fedgauss.federation import label_skew_split

    three = label_skew_split(X, y, n_clients=3, theta=0.8, rng=1)
    sf = _nfl_fit(SimFLClassifier, three, lsh_scale='standard')
    assert _nfl_labels_known(sf, 'party1') > 0.6 and _nfl_labels_known(sf, 'party2') > 0.6  # one message per party


def _nfl_lp_attack(est, functions=None):
    "The aggregator's LP inversion of the hash values it received; (share of distinct signatures, correlation)."
    from fedgauss.nflgbdt import feature_correlation, invert_hashes

    H = _nfl_np.vstack([m.payload for m in est.channel_.messages if m.kind == 'hash values'])
    thr = est.binner_.thresholds_
    lower, upper, center = ([t[0] for t in thr], [t[-1] for t in thr], [t[len(t) // 2] for t in thr])
    lsh = est.lsh_ if functions is None else functions
    Xh = invert_hashes(H, lsh, est.lsh_lo_, est.lsh_span_, lower, upper, center)
    if functions is None:  # with the true functions every reconstruction is a preimage
        _nfl_np.testing.assert_array_equal(lsh.hash((Xh - est.lsh_lo_) / est.lsh_span_), H)
    X = _nfl_np.vstack([p._X for p in est.parties_])
    return len(_nfl_np.unique(H, axis=0)) / len(H), feature_correlation(Xh, X)


def test_nfl_hash_values_invert_with_public_functions():
    """nb34: with the papers' public hash functions (lsh_secret=False; the default is now the owners' secret ones) and
    lsh_scale='standard', breast cancer's rows all have distinct signatures and the LP reconstruction correlates 0.84
    with the true features (0.73 on nb34's data); the coarsest hashing of nb34's sweep (bounds, r=16) brings it to
    about 0."""
    from fedgauss.nflgbdt import NFLGBDTClassifier

    distinct, corr = _nfl_lp_attack(
        _nfl_fit(NFLGBDTClassifier, _nfl_clients('cancer'), lsh_scale='standard', lsh_secret=False)
    )
    assert distinct == 1.0 and corr > 0.8
    _, corr = _nfl_lp_attack(_nfl_fit(NFLGBDTClassifier, _nfl_clients(), lsh_scale='standard', lsh_secret=False))
    assert corr > 0.7
    distinct, corr = _nfl_lp_attack(_nfl_fit(NFLGBDTClassifier, _nfl_clients(), r=16.0, lsh_secret=False))
    assert distinct < 0.01 and abs(corr) < 0.15


def test_nfl_secret_hash_functions_stop_the_transcript_attack():
    """nb34's mitigation, the default since issue 28 (lsh_secret=True): the data owners draw the hash functions jointly
    and the aggregator never holds them (no key share reaches it, none is in the configuration); its LP attack with guessed functions correlates
    about 0. The limit the notebook states: with 30 known rows a linear inversion still reaches about 0.84 on nb34's
    data."""
    from fedgauss.nflgbdt import PStableLSH, NFLGBDTClassifier, feature_correlation, linear_inversion

    clients = _nfl_clients()
    est = NFLGBDTClassifier(n_estimators=20, max_depth=3, lsh_scale='standard', lsh_secret=True, rng=0)
    _, _, cfg = est.protocol_inputs(clients)
    assert cfg['lsh'] is None
    est = _nfl_fit(NFLGBDTClassifier, clients, lsh_scale='standard', lsh_secret=True)
    t = est.channel_.transcript
    assert (t.kind == 'hash key share').any() and not (t[t.kind == 'hash key share'].receiver == 'aggregator').any()
    g = _nfl_np.random.default_rng(0)
    guessed = [_nfl_lp_attack(est, PStableLSH(8, 7, est.r, rng=g))[1] for _ in range(5)]
    assert abs(_nfl_np.mean(guessed)) < 0.15 and max(map(abs, guessed)) < 0.4, guessed
    H = _nfl_np.vstack([m.payload for m in est.channel_.messages if m.kind == 'hash values'])
    X = _nfl_np.vstack([p._X for p in est.parties_])
    idx = g.permutation(len(H))
    assert feature_correlation(linear_inversion(H[idx[:30]], X[idx[:30]], H[idx[30:]]), X[idx[30:]]) > 0.75


def test_nfl_collapsed_signatures_warn():
    "nb34: the default scaling leaves nb34's 900 continuous rows a few distinct signatures; the estimators say so."
    from fedgauss.nflgbdt import LSHCollapseWarning, NFLGBDTClassifier, SimFLClassifier

    for cls in (NFLGBDTClassifier, SimFLClassifier):
        with _nfl_pytest.warns(LSHCollapseWarning, match='for 900 rows'):
            cls(n_estimators=2, max_depth=2, rng=0).fit(_nfl_clients())


# ---- private set intersection: hashed IDs and chosen IDs (issue 30 §1) ----
def _psi_sets():
    "A hub with 400 customer numbers and a member with 300 (150 in common), drawn from the ID space 0..999."
    import numpy as np

    space = np.arange(1000)
    perm = np.random.default_rng(30).permutation(space)
    return space, perm[:400], np.concatenate([perm[250:400], perm[400:550]])


def _psi_greedy_run(declared_to_hub: int):
    """A member that sends the whole ID space (1,000 values) whatever it declared (300); the hub checks the member's
    values against `declared_to_hub`. Returns (the error, or None; the hub IDs the member learned; the channel)."""
    from fedgauss.federation import Channel
    from fedgauss.psi import psi_config, psi_party
    from fedgauss.smc import ProtocolSpec, run_protocol

    space, hub_ids, member_ids = _psi_sets()

    def greedy(ctx, data, cfg):
        if cfg['me'] == cfg['hub']:
            return psi_party(ctx, data, cfg)
        return psi_party(ctx, dict(ids=space), dict(cfg, sizes=dict(cfg['sizes'], member=len(space))))

    cfg = psi_config(['hub', 'member'], {'hub': len(hub_ids), 'member': declared_to_hub}, 'int')
    ch = Channel()
    try:
        res, _, _ = run_protocol(
            ProtocolSpec('psi-greedy', greedy, dealer=False),
            {'hub': dict(ids=hub_ids), 'member': dict(ids=member_ids)}, cfg, ch,
        )  # fmt: skip
    except ValueError as e:
        return str(e), None, ch
    return None, set(space[res['member']['rows']].tolist()), ch


def test_psi_member_cannot_list_the_id_space_beyond_its_declared_size():
    """nb32a: PSI's output is a membership oracle; a member that sends every possible ID learns the hub's whole set.
    The hub refuses more values than the member declared (300), before anything goes back; positive control: a hub
    that took the member's word for 1,000 would have given away its whole list."""
    space, hub_ids, _ = _psi_sets()
    err, learned, ch = _psi_greedy_run(300)
    assert err is not None and "member's 'blinded' must hold 300 encodings" in err and learned is None
    assert not (ch.transcript.kind == 'aligned').any()
    err, learned, _ = _psi_greedy_run(len(space))
    assert err is None and learned == set(hub_ids.tolist())


def test_psi_hub_values_resist_a_dictionary_attack():
    """nb32a: a member that hashes the whole ID space itself finds none of the hub's values among its hashes: they are
    raised to the hub's secret exponent. Positive control: with the exponent 1 (an unkeyed hash of the IDs, the naive
    protocol) the same dictionary recovers the hub's whole list."""
    import numpy as np
    from fedgauss.psi import blind, hash_ids, psi_align

    space, hub_ids, member_ids = _psi_sets()
    al = psi_align([hub_ids, member_ids], names=['hub', 'member'], rng=0)
    sent = next(m.payload for m in al.channel.messages if (m.sender, m.kind) == ('hub', 'blinded'))
    dictionary = {bytes(h): i for i, h in zip(space.tolist(), hash_ids(space))}
    assert sum(bytes(v) in dictionary for v in sent) == 0
    naive = blind(hash_ids(hub_ids), (1).to_bytes(32, 'little'))
    assert {dictionary[bytes(v)] for v in naive} == set(hub_ids.tolist())
    assert np.array_equal(naive, hash_ids(hub_ids))


# ---- dropout-tolerant secure aggregation: a server that lies about who dropped (issue 30 §2) ----
# `fedgauss.secagg.lying_server` plays the protocol honestly up to the unmasking round, then lies to get both masks of
# a live client. Before issue 30 the only dropout recovery was `secure_sum(on_dropout='recover')`, which has no
# self-mask: a client the server declares dropped, whose masked input arrives anyway, is unmasked by the seeds the
# survivors reveal. The positive controls below put that weakness back (a threshold t <= h/2) and the attack works.


def _secagg_lie(t, told, ask_both=False, victim='c9', channel=None):
    "10 clients, all pairs; the server tells `told` that `victim` dropped, the others that it survived. Its guess."
    import numpy as np
    from fedgauss.entropy import party_rngs
    from fedgauss.secagg import lying_server, secagg_client, secagg_config
    from fedgauss.smc import ProtocolSpec, run_protocol

    g = np.random.default_rng(0)
    vals = {f'c{i}': g.normal(size=(4, 3)) for i in range(10)}
    liar = lambda ctx, cfg: lying_server(ctx, cfg, victim, list(told), ask_both)
    spec = ProtocolSpec('secagg-liar', secagg_client, liar, dealer=False)
    cfg = secagg_config(list(vals), (4, 3), t=t)
    datas = {c: {'x': v} for c, v in vals.items()}
    res, _, _ = run_protocol(spec, datas, cfg, channel, rngs=party_rngs(1, list(vals)))
    return res['server'], vals[victim]


def test_secagg_server_that_splits_the_holders_of_a_live_client_gets_nothing():
    "Half the clients told 'c9 dropped' (key shares), half 'c9 survived' (self-mask shares): 5 of each, t = 6."
    told = ['c0', 'c1', 'c2', 'c3', 'c4']
    guess, _ = _secagg_lie(6, told)
    assert guess is None
    guess, x = _secagg_lie(5, told)  # positive control: t = 5 <= 10/2, the attack unmasks c9 exactly
    np.testing.assert_allclose(guess, x, atol=2**-20)


def test_secagg_server_that_asks_for_both_masks_in_one_request_gets_nothing():
    from fedgauss.federation import Channel

    ch = Channel()
    with pytest.raises(ValueError, match="c0 refuses to unmask: the server asks for both masks of 'c9'"):
        _secagg_lie(6, ['c0'], ask_both=True, channel=ch)
    assert not any(m.sender == 'c0' and m.kind == 'unmasking shares' for m in ch.messages)
    with pytest.raises(ValueError, match='c9 refuses to unmask: the server does not list it as a survivor'):
        _secagg_lie(6, ['c9'])


def test_secagg_server_that_declares_a_live_client_dropped_learns_only_a_masked_value():
    "Everyone else told 'c9 dropped': the server rebuilds c9's key and strips its pair masks; x + PRG(b) remains."
    guess, x = _secagg_lie(6, [f'c{i}' for i in range(9)])
    assert guess is not None and np.abs(guess - x).min() > 1e3


def test_secagg_server_that_swaps_the_advertised_keys_gets_nothing_from_signed_clients():
    """A man in the middle: the server gives c9 keys of its own for its neighbours (and them one for c9), opens every
    share c9 seals and unmasks its input. Positive control: unsigned keys (no pinned identities), it works exactly."""
    import numpy as np
    from fedgauss.entropy import party_rngs
    from fedgauss.secagg import mitm_server, secagg_client, secagg_config, secagg_identities
    from fedgauss.smc import ProtocolSpec, run_protocol

    g = np.random.default_rng(0)
    vals = {f'c{i}': g.normal(size=(4, 3)) for i in range(10)}
    priv, pins = secagg_identities(list(vals), 1)
    datas = {c: {'x': v, 'identity': np.frombuffer(priv[c], np.uint8)} for c, v in vals.items()}
    spec = ProtocolSpec('secagg-mitm', secagg_client, lambda ctx, cfg: mitm_server(ctx, cfg, 'c9'), dealer=False)
    run = lambda cfg: run_protocol(spec, datas, cfg, rngs=party_rngs(2, list(vals) + ['server']))[0]['server']
    np.testing.assert_allclose(run(secagg_config(list(vals), (4, 3))), vals['c9'], atol=2**-20)
    with pytest.raises(ValueError, match='the keys of c9 are not signed by its pinned identity'):
        run(secagg_config(list(vals), (4, 3), identities=pins))


# ---- SecureBoost, K classes: a passive party's label inference from the instance spaces (issue 29's leakage table) ----
def _three_classes(n=600, seed=1):
    "nb33's three-class set: 7 columns, one with 15% missing; the classes from a noisy linear score."
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 7))
    X[r.random(n) < 0.15, 5] = np.nan
    z = X[:, 0] + 0.5 * X[:, 3] - np.nan_to_num(X[:, 5], nan=1.0) + r.normal(size=n)
    return X, np.digitize(z, [-1.0, 0.5])


@pytest.mark.parametrize('multi_output,want', [(False, 0.604), (True, 0.584)])
def test_secureboost_passive_party_infers_k_classes_as_nb33_states(multi_output, want):
    """nb33 "With K classes": with 2% of the labels, the passive party names the other rows' class at 60.4% (one tree per
    class) or 58.4% (multi-output) from the leaves it rebuilt, against 44.8% from its own columns and a base rate of
    33.7%."""
    from fedgauss.federation import vertical_split
    from fedgauss.secureboost import SecureBoostClassifier, label_inference_attack, own_columns_inference

    X, y = _three_classes()
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    kw = dict(n_estimators=4, max_depth=4, max_bins=16, key_size=512, unsafe=True, rng=0, multi_output=multi_output)
    m = SecureBoostClassifier(**kw).fit(vertical_split(X, groups, y, label_party=1))
    r = label_inference_attack(m, y)
    own = own_columns_inference(X[:, groups[0]], y)  # passive0's columns, the party the attack plays
    assert r['accuracy'] == pytest.approx(want, abs=0.02) and r['base_rate'] == pytest.approx(0.337, abs=0.001)
    assert own == pytest.approx(0.448, abs=0.02) and r['accuracy'] > own + 0.1


@pytest.mark.parametrize('multi_output,want', [(False, 0.440), (True, 0.065)])
def test_secureboost_active_party_recovers_passive_bins_with_k_classes(multi_output, want):
    """nb33: the active party's bin attack on the three-class fits, multi-output ciphertexts unpacked a class at a
    time: every decrypted sum is the passive party's true one; the exact bin of 44% (one tree per class) or 6.5%
    (multi-output) of the (row, passive feature) pairs, no error."""
    from fedgauss.federation import vertical_split
    from fedgauss.secureboost import SecureBoostClassifier, active_party_view, bin_recovery_attack

    X, y = _three_classes()
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    kw = dict(n_estimators=4, max_depth=4, max_bins=16, key_size=512, unsafe=True, rng=0, multi_output=multi_output)
    m = SecureBoostClassifier(**kw).fit(vertical_split(X, groups, y, label_party=1))
    view, n_bins = active_party_view(m, 'passive2')
    assert len(view) == len(m.trees_) * (3 if multi_output else 1)
    codes, offs = m.parties_[2].codes, np.r_[0, np.cumsum(n_bins + 1)[:-1]]
    for o in view:
        for v, s in o['hist'].items():
            r, true = o['rows'][v], np.zeros_like(s)
            np.add.at(true[0], offs + codes[r], o['G'][r, None])
            np.add.at(true[1], offs + codes[r], o['H'][r, None])
            np.testing.assert_array_equal(true, s)
    r = bin_recovery_attack(m)
    assert r['errors'] == 0 and r['exact'] == pytest.approx(want, abs=0.01)
