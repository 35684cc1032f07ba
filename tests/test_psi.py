"""Private set intersection (issue 30 §1, nb32a): ECDH-PSI over ristretto255 against the intersection computed in
the clear, for two and three parties and both ID types; the agreed order; the bad-input catalogue (refused before any
message, the caller's data untouched); what each party receives, read from the transcript; malformed messages
refused; and the same run over Flower's in-process grid (`LocalGrid`) as in the simulator."""

import importlib.util

import numpy as np
import pandas as pd
import pytest

from fedgauss.entropy import party_rngs
from fedgauss.federation import Channel
from fedgauss.psi import PSI, GROUP_ORDER, blind, hash_ids, id_array, psi_align, psi_config, psi_party, random_scalar
from fedgauss.smc import ProtocolSpec, run_protocol

COLS = ['round', 'sender', 'receiver', 'kind', 'bytes']


def sets(sizes, common, rng, kind='str'):
    "ID columns of the given sizes sharing `common` IDs, each party's rows in its own order."
    pool = rng.choice(10**9, size=sum(sizes), replace=False)
    shared, rest, out = pool[:common], pool[common:], []
    for n in sizes:
        own, rest = rest[: n - common], rest[n - common :]
        ids = rng.permutation(np.concatenate([shared, own]))
        out.append(np.array([f'c-{v}' for v in ids]) if kind == 'str' else ids.astype(np.int64))
    return out, set(shared.tolist()) if kind == 'int' else {f'c-{v}' for v in shared}


@pytest.mark.parametrize('kind', ['str', 'int'])
@pytest.mark.parametrize('sizes,common', [([40, 30], 12), ([25, 40, 33], 9), ([10, 10], 0), ([8, 8], 8)])
def test_psi_equals_the_intersection_in_the_clear(kind, sizes, common):
    rng = np.random.default_rng(sum(sizes) + common)
    ids, truth = sets(sizes, common, rng, kind)
    al = psi_align(ids, rng=1)
    got = [a[r] for a, r in zip(ids, al.rows)]
    for g in got[1:]:
        np.testing.assert_array_equal(g, got[0])  # the same IDs, in the same order, at every party
    assert set(got[0].tolist()) == truth and al.size == common


def test_the_agreed_order_is_no_party_s_storage_order():
    "The hub's rows come back sorted by a pseudorandom value: neither its own order nor sorted IDs."
    ids = [np.array([f'id{i:04d}' for i in range(200)]), np.array([f'id{i:04d}' for i in range(100, 300)])]
    al = psi_align(ids, rng=2)
    assert al.size == 100
    assert not np.array_equal(al.rows[0], np.sort(al.rows[0]))
    assert len(set(map(tuple, [psi_align(ids, rng=s).rows[0][:10] for s in (3, 4)]))) == 2  # keys decide it


def test_seeded_runs_repeat_and_unseeded_runs_differ():
    ids, _ = sets([30, 30], 10, np.random.default_rng(5))
    a, b, c = psi_align(ids, rng=7), psi_align(ids, rng=7), psi_align(ids)
    for x, y in zip(a.rows, b.rows):
        np.testing.assert_array_equal(x, y)
    assert a.channel.messages[0].nbytes == c.channel.messages[0].nbytes
    pa, pc = (al.channel.messages[0].payload for al in (a, c))
    assert not np.array_equal(pa, pc)  # fresh exponents from the OS
    assert sorted(ids[0][c.rows[0]]) == sorted(ids[0][a.rows[0]])


def test_the_hub_s_message_is_shuffled():
    "Raised values leave in a secret order, not in the rows' order (which is often sorted)."
    ids = [np.arange(50), np.arange(25, 75)]
    al = psi_align(ids, rng=3)
    sent = al.channel.messages[0]
    assert (sent.sender, sent.kind) == ('party0', 'blinded')
    in_order = blind(hash_ids(ids[0]), random_scalar(party_rngs(3, ['party0', 'party1'])['party0']))
    as_sets = lambda p: sorted(map(bytes, p))
    assert as_sets(sent.payload) == as_sets(in_order) and not np.array_equal(sent.payload, in_order)


def test_three_parties_transcript():
    "The hub sends its values to each member and the positions back; a member never hears from another member."
    ids, _ = sets([20, 15, 12], 5, np.random.default_rng(9))
    al = psi_align(ids, names=['a', 'b', 'c'], rng=0)
    t = al.channel.transcript
    assert not len(t[(t.sender != 'a') & (t.receiver != 'a')])
    rows = sorted(map(tuple, t[['sender', 'receiver', 'kind', 'bytes']].values.tolist()))
    assert rows == sorted([
        ('a', 'b', 'blinded', 32 * 20), ('a', 'c', 'blinded', 32 * 20), ('b', 'a', 'blinded', 32 * 15),
        ('c', 'a', 'blinded', 32 * 12), ('b', 'a', 'double blinded', 32 * 20), ('c', 'a', 'double blinded', 32 * 20),
        ('a', 'b', 'aligned', 4 * 5), ('a', 'c', 'aligned', 4 * 5),
    ])  # fmt: skip
    assert al.rounds['blind'] == [2] and al.rounds['double'] == [3] and al.rounds['align'] == [4]


def test_the_hub_can_be_any_party_and_the_channel_is_the_callers():
    ids, truth = sets([12, 20], 6, np.random.default_rng(4))
    ch = Channel()
    al = psi_align(ids, names=['passive', 'active'], hub=1, rng=0, channel=ch)
    assert al.channel is ch and set(ch.transcript.sender) == {'passive', 'active'}
    assert ch.messages[-1].sender == 'active' and set(ids[0][al.rows[0]]) == truth


def test_align_take_cuts_every_block_to_the_common_rows():
    ids = [pd.Index(['x', 'y', 'z'], name='id'), ['z', 'w', 'x']]
    blocks = [pd.DataFrame({'f': [1, 2, 3]}, index=ids[0]), np.array([[30], [40], [10]])]
    al = psi_align(ids, rng=0)
    a, b = al.take(blocks)
    assert list(a.f) == [{'x': 1, 'z': 3}[i] for i in a.index] and list(b[:, 0]) == [
        {'x': 10, 'z': 30}[i] for i in a.index
    ]
    assert list(blocks[0].f) == [1, 2, 3]  # the caller's block untouched
    with pytest.raises(ValueError, match='1 blocks for 2 parties'):
        al.take(blocks[:1])


# ------------------------------------------------------------------------------------------------ bad input
BAD = [
    (['a', 'b', 'a'], "bank has duplicated IDs: 'a'"),
    (['a', None, 'c'], 'bank has missing IDs (NaN or None) at rows 1'),
    (pd.Series([1.0, np.nan, 3.0]), 'missing IDs'),
    (np.array([1.0, 2.0, 3.0]), "bank's IDs are floats"),
    ([True, False], 'booleans'),
    (['a', 2], "bank's IDs are of types 'int', 'str'"),
    ([b'a', b'b'], "types 'bytes'"),
    ([1, 2**64], 'beyond 64 bits'),
    (np.array([2**63], dtype=np.uint64), 'beyond 64 bits'),
    ([], 'bank has no IDs'),
    ([['a', 'b']], 'one column'),
]


@pytest.mark.parametrize('bad,msg', BAD, ids=[m for _, m in BAD])
def test_bad_ids_are_refused_before_anything_is_sent(bad, msg):
    ch = Channel()
    with pytest.raises(ValueError) as e:
        psi_align([bad, ['a', 'b', 'c']], names=['bank', 'shop'], channel=ch)
    assert msg in str(e.value)
    assert len(ch.messages) == 0


def test_mismatched_types_and_sizes_are_refused_before_anything_is_sent():
    ch = Channel()
    with pytest.raises(ValueError, match=r"different types \(bank's are int, shop's are str\)"):
        psi_align([[1, 2], ['1', '2']], names=['bank', 'shop'], channel=ch)
    cfg = psi_config(['bank', 'shop'], {'bank': 3, 'shop': 2}, 'str')
    with pytest.raises(ValueError, match='bank holds 2 IDs; it declared 3'):
        run_protocol(PSI, {'bank': dict(ids=np.array(['a', 'b'])), 'shop': dict(ids=np.array(['a', 'c']))}, cfg, ch)
    with pytest.raises(ValueError, match="shop's IDs are int; the federation agreed on str"):
        run_protocol(PSI, {'bank': dict(ids=np.array(['a', 'b', 'c'])), 'shop': dict(ids=np.array([1, 2]))}, cfg, ch)
    assert len(ch.messages) == 0


@pytest.mark.parametrize(
    'args,msg',
    [
        ((['a'], {'a': 1}, 'str'), 'two or more distinct parties'),
        ((['a', 'b'], {'a': 1, 'b': 1}, 'str', 'c'), "the hub 'c' is not one of the parties"),
        ((['a', 'b'], {'a': 1}, 'str'), 'declare a size for every party'),
        ((['a', 'b'], {'a': 1, 'b': 0}, 'str'), 'between 1 and'),
        ((['a', 'b'], {'a': 1, 'b': 1}, 'float'), "id_type must be 'str' or 'int'"),
    ],
)
def test_psi_config_refuses(args, msg):
    with pytest.raises(ValueError, match=msg):
        psi_config(*args)


def test_the_callers_columns_are_untouched():
    a, b = pd.Series(['k', 'j', 'i'], index=[7, 8, 9]), np.array([3, 1, 2])
    a0, b0 = a.copy(), b.copy()
    psi_align([a, ['i', 'k']], rng=0)
    psi_align([b, [2, 5]], rng=0)
    pd.testing.assert_series_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


# --------------------------------------------------------------------------------------- malformed messages
def _tampered(what):
    "A spec whose member (or hub) alters one message before it leaves: `what(ctx, to, kind, payload) -> payload`."

    def party(ctx, data, cfg):
        send = ctx.send
        ctx.send = lambda to, kind, payload: send(to, kind, what(cfg['me'], kind, payload))
        return psi_party(ctx, data, cfg)

    return ProtocolSpec('psi-tampered', party, dealer=False)


def _run(spec, n=(6, 5)):
    ids = [np.array([f'u{i}' for i in range(n[0])]), np.array([f'u{i}' for i in range(2, 2 + n[1])])]
    cfg = psi_config(['hub', 'member'], {'hub': n[0], 'member': n[1]}, 'str')
    return run_protocol(
        spec, {'hub': dict(ids=ids[0]), 'member': dict(ids=ids[1])}, cfg, rngs=party_rngs(0, ['hub', 'member'])
    )


@pytest.mark.parametrize(
    'who,kind,change,msg',
    [
        ('member', 'blinded', lambda p: p[:-1], "member's 'blinded' must hold 5 encodings"),
        ('member', 'blinded', lambda p: np.vstack([p[:-1], p[:1]]), 'holds an element twice'),
        ('member', 'double blinded', lambda p: p.astype(np.int16), "member's 'double blinded' must hold 6"),
        ('member', 'blinded', lambda p: np.where(np.arange(32) == 31, 0xFF, p).astype(np.uint8), 'not a ristretto255'),
        ('member', 'blinded', lambda p: np.vstack([p[:-1], np.zeros((1, 32), np.uint8)]), 'element 4 is not'),
        ('hub', 'aligned', lambda p: p + 100, 'positions outside'),
        ('hub', 'aligned', lambda p: np.append(p, p[:1]), 'names a position twice'),
        ('hub', 'aligned', lambda p: p.astype(float), '1-D integer array'),
        ('hub', 'blinded', lambda p: p[:, :16], "hub's 'blinded' must hold 6 encodings of 32 bytes"),
    ],
)
def test_malformed_messages_are_refused(who, kind, change, msg):
    spec = _tampered(lambda me, k, p: change(p) if (me, k) == (who, kind) else p)
    with pytest.raises(ValueError, match=msg):
        _run(spec)


def test_scalars_are_secret_nonzero_and_reduced():
    from fedgauss.entropy import secret_rng

    ks = [int.from_bytes(random_scalar(secret_rng(i, 't')), 'little') for i in range(50)]
    assert all(0 < k < GROUP_ORDER for k in ks) and len(set(ks)) == 50
    assert random_scalar(secret_rng(3, 't')) == random_scalar(secret_rng(3, 't'))


def test_id_array_accepts_what_columns_hold():
    assert id_array(pd.Series(['a', 'b'], dtype='string')).tolist() == ['a', 'b']
    assert id_array(pd.Categorical(['a', 'b'])).tolist() == ['a', 'b']
    assert id_array(pd.array([1, 2], dtype='Int64')).dtype == np.int64
    with pytest.raises(ValueError, match='missing'):
        id_array(pd.array([1, None], dtype='Int64'))


# ------------------------------------------------------------------------------------------------- Flower
pytestmark_flower = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('flwr', 'cryptography')),
    reason="needs the flower extra: pip install -e '.[flower]'",
)


@pytestmark_flower
@pytest.mark.parametrize('forget', [False, True])
def test_flower_local_grid_equals_the_simulator(forget, tmp_path):
    """The `psi` programs on Flower's relay with nodes in this process (`LocalGrid`): the simulator's transcript message
    for message; each node reports only the size, and keeps its rows next to its data (`keep=True`)."""
    from fedgauss.flower import MESSAGE_SCHEMAS, LocalGrid, Relay, load_party_result, local_nodes

    assert 'psi' in MESSAGE_SCHEMAS
    ids, truth = sets([30, 24, 20], 7, np.random.default_rng(11))
    names = ['active', 'p1', 'p2']
    datas = {n: dict(ids=a) for n, a in zip(names, ids)}
    cfg = psi_config(names, {n: len(a) for n, a in zip(names, ids)}, 'str', context='customer')
    seeds = {n: k for k, n in enumerate(names)}
    want, wrounds, wch = run_protocol(PSI, datas, cfg, rngs=seeds, bsp=True)
    ncs, kw = local_nodes(str(tmp_path), datas, server=None, test_seeds=True)
    fl = Relay(LocalGrid(ncs, forget=forget), len(names), **kw).run('psi', cfg, seeds=seeds, keep=True)
    assert fl['results'] == {n: {'size': 7} for n in names}
    assert fl['channel'].transcript[COLS].values.tolist() == wch.transcript[COLS].values.tolist()
    for n, nc in zip(names, ncs):
        kept = load_party_result(nc['data-path'])
        np.testing.assert_array_equal(kept['rows'], want[n]['rows'])
    assert set(ids[0][want['active']['rows']].tolist()) == truth


@pytestmark_flower
def test_flower_node_refuses_a_node_with_other_ids_before_any_message(tmp_path):
    from fedgauss.flower import FlowerRunError, LocalGrid, Relay, local_nodes

    names = ['active', 'passive']
    datas = {'active': dict(ids=np.array(['a', 'b', 'c'])), 'passive': dict(ids=np.array(['a', 'a']))}
    cfg = psi_config(names, {'active': 3, 'passive': 2}, 'str')
    ncs, kw = local_nodes(str(tmp_path), datas, server=None)
    relay = Relay(LocalGrid(ncs), 2, **kw)
    with pytest.raises(FlowerRunError, match="passive has duplicated IDs: 'a'"):
        relay.run('psi', cfg)
    assert len(relay.channel.messages) == 0
