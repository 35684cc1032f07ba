"""Dropout-tolerant secure aggregation (fedgauss.secagg, issue 30 §2): Shamir sharing against a brute force, the
protocol's fault tests in the simulator (one client, then rho K clients stop at each stage: the sum is the survivors'
exact fixed-point sum; one more stops the run with an error naming who dropped and the threshold), the distributed
DP noise accounted from the transcript, what the server receives, and the same programs over Flower's relay
(in-process nodes): simulated dropouts, and a node that stops answering (today's relay stops the run; a relay that
reports the silent node as gone, as issue 30 asks of nb50, finishes with the survivors' sum)."""

import itertools

import numpy as np
import pytest

from fedgauss.entropy import party_rngs
from fedgauss.federation import Channel
from fedgauss.secagg import (
    SECAGG,
    STAGES,
    calibrate_dropout_noise,
    dropout_privacy,
    fixed_point_sensitivity,
    secagg_config,
    secagg_plus_params,
    secagg_sum,
    shamir_eval,
    shamir_reconstruct,
    shamir_split,
)
from fedgauss.smc import DropoutError, run_protocol

FB = 24


def exact(vals, names, fb=FB):
    "The fixed-point sum of `names`' arrays, decoded: what secure aggregation must return, to the bit."
    return sum(np.rint(np.ldexp(vals[c], fb)) for c in names) / 2**fb


@pytest.fixture(scope='module')
def vals():
    g = np.random.default_rng(0)
    return {f'c{i}': g.normal(scale=100, size=(3, 5)) for i in range(20)}


# ---------------------------------------------------------------- Shamir sharing


@pytest.mark.parametrize('p', [5, 11])
def test_shamir_brute_force_every_polynomial(p):
    "In GF(p), 4 holders: every polynomial of degree < t, every t-subset rebuilds; t - 1 shares are uniform."
    xs = range(1, 5)
    for t in (1, 2, 3):
        counts = {}
        for c in itertools.product(range(p), repeat=t):
            sh = shamir_eval(c, xs, p).tolist()
            assert sh == [sum(ck * x**k for k, ck in enumerate(c)) % p for x in xs]
            for T in itertools.combinations(range(4), t):
                assert shamir_reconstruct({T_i + 1: sh[T_i] for T_i in T}, t, p) == c[0]
            key = (c[0], tuple(sh[: t - 1]))
            counts[key] = counts.get(key, 0) + 1
        assert set(counts.values()) == {1}  # each (secret, t - 1 shares) exactly once: uniform given the secret
        assert len(counts) == p**t


def test_shamir_random_subsets_large_field():
    g = np.random.default_rng(1)
    for n, t in ((5, 3), (30, 16), (60, 41)):
        secrets = [int(v) for v in g.integers(0, 2**62, 2)]
        sh = shamir_split(secrets, range(1, n + 1), t, g)
        for _ in range(5):
            T = g.choice(n, t + int(g.integers(0, n - t + 1)), replace=False)
            assert shamir_reconstruct({int(i) + 1: sh[i] for i in T}, t).tolist() == secrets
        with pytest.raises(ValueError, match=f'fewer than the threshold t={t}'):
            shamir_reconstruct({i + 1: sh[i] for i in range(t - 1)}, t)


# ---------------------------------------------------------------- fault tests in the simulator


@pytest.mark.parametrize('stage', STAGES)
@pytest.mark.parametrize('k', [None, 6])
def test_one_client_stops_at_each_stage(vals, stage, k):
    res = secagg_sum(vals, rng=2, k=k, graph_rng=3, drop={'c7': stage})
    included = [c for c in vals if c != 'c7' or stage == 'unmask']
    assert res['survivors'] == included and res['dropped'] == {'c7': stage}
    np.testing.assert_array_equal(res['sum'], exact(vals, included))


@pytest.mark.parametrize('k', [None, 8])
def test_rho_k_clients_stop_mid_round_and_one_more_stops_the_run(vals, k):
    """rho = 0.2 of 20 clients: 4 inputs go missing (clients stop before advertising, sharing, masking) and one more
    client stops during unmasking: the sum is exact; a fifth missing input stops the run, with who and the threshold."""
    drop = {'c1': 'advertise', 'c4': 'share', 'c9': 'mask', 'c12': 'mask', 'c16': 'unmask'}
    res = secagg_sum(vals, rng=4, k=k, graph_rng=3, rho=0.2, t=5, drop=drop)
    included = [c for c in vals if c not in drop or drop[c] == 'unmask']
    assert len(included) == 16 and res['dropped'] == drop
    np.testing.assert_array_equal(res['sum'], exact(vals, included))
    msg = r"5 of 20 clients dropped: c1 \(advertise\), c4 \(share\), c2 \(mask\), c9 \(mask\), c12 \(mask\); 15 remain, fewer than 16 \(threshold t=5, tolerated dropout fraction rho=0.2\)"
    with pytest.raises(DropoutError, match=msg):
        secagg_sum(vals, rng=4, k=k, graph_rng=3, rho=0.2, t=5, drop=dict(drop, c2='mask'))


def test_more_dropouts_than_the_threshold_during_unmasking(vals):
    "Inputs in but too few holders answer: no sum, an error naming the client, its holders' count and t."
    names = list(vals)[:6]
    v = {c: vals[c] for c in names}  # t = 4 of 6: 3 answers are one short
    with pytest.raises(
        DropoutError, match=r"3 of c0's holders answered the unmasking round, fewer than the threshold t=4"
    ):
        secagg_sum(v, rng=5, drop={c: 'unmask' for c in names[3:]})


def test_bulk_synchronous_delivery_gives_the_same_sum(vals):
    cfg = secagg_config(list(vals), (3, 5), k=6, graph_rng=3, drop={'c3': 'mask', 'c8': 'unmask'})
    datas = {c: {'x': v} for c, v in vals.items()}
    a, _, _ = run_protocol(SECAGG, datas, cfg, rngs=party_rngs(6, list(vals)))
    b, _, _ = run_protocol(SECAGG, datas, cfg, rngs=party_rngs(7, list(vals)), bsp=True)
    np.testing.assert_array_equal(a['server']['sum'], b['server']['sum'])
    np.testing.assert_array_equal(a['server']['sum'], exact(vals, [c for c in vals if c != 'c3']))


def test_what_the_server_receives(vals):
    "Sealed shares (2 field elements + a 16-byte tag), public keys, uniform-looking masked inputs, no plaintext share."
    ch = Channel()
    secagg_sum(vals, ch, rng=8, k=6, graph_rng=3, drop={'c5': 'mask'})
    to_server = [m for m in ch.messages if m.receiver == 'server']
    assert {m.kind for m in to_server} == {'keys', 'shares', 'masked input', 'unmasking shares', 'gone'}
    for m in to_server:
        if m.kind == 'shares':
            assert len(m.payload) == 6 and all(type(b) is bytes and len(b) == 80 for b in m.payload.values())
        if m.kind == 'masked input':
            assert m.payload.dtype == np.uint64
        if m.kind == 'gone':
            assert m.payload is None and m.nbytes == 0
    a = [m for m in ch.messages if m.kind == 'unmasking shares']
    assert all(set(m.payload['s']) <= {'c5'} for m in a)  # key shares of the dropped client only
    assert not any(set(m.payload['s']) & set(m.payload['b']) for m in a)


def test_signed_keys_same_sum_and_a_wrong_identity_is_refused_before_any_message(vals):
    from fedgauss.secagg import secagg_identities

    res = secagg_sum(vals, rng=3, k=6, graph_rng=1, signed=True, drop={'c4': 'share'})
    np.testing.assert_array_equal(res['sum'], exact(vals, [c for c in vals if c != 'c4']))
    priv, pins = secagg_identities(list(vals), 1)
    datas = {c: {'x': v, 'identity': np.frombuffer(priv[c], np.uint8)} for c, v in vals.items()}
    ch = Channel()
    cfg = secagg_config(list(vals), (3, 5), identities=pins)
    with pytest.raises(ValueError, match='c5: its identity key is not the one pinned for it'):
        run_protocol(SECAGG, dict(datas, c5=dict(datas['c5'], identity=datas['c0']['identity'])), cfg, ch)
    with pytest.raises(ValueError, match='c5: the configuration pins identities, and c5 has no 32-byte identity key'):
        run_protocol(SECAGG, dict(datas, c5={'x': vals['c5']}), cfg, ch)
    assert len(ch.messages) == 0


def test_sparse_parameters_grow_logarithmically():
    ks = [secagg_plus_params(n)['k'] for n in (10**3, 10**4, 10**5, 10**6)]
    assert ks == sorted(ks) and max(np.diff(ks)) <= 4 and ks[-1] < 2 * ks[0]


def test_many_releases_leave_out_who_dropped_earlier(vals):
    "FederBoost's pattern: one aggregation per release (its own label); a client gone in release 0 is not awaited after."
    from fedgauss.secagg import secagg_party, secagg_server
    from fedgauss.smc import ProtocolSpec

    def client(ctx, data, cfg):
        for r in range(3):
            if (yield from secagg_party(ctx, data['x'] + r, dict(cfg, label=f'r{r}'), phases=False)) is None:
                return r

    def server(ctx, cfg):
        out, live = [], list(cfg['parties'])
        for r in range(3):
            out.append((yield from secagg_server(ctx, dict(cfg, label=f'r{r}'), live)))
            live = [c for c in live if c not in out[-1]['dropped']]
        return out

    cfg = secagg_config(list(vals), (3, 5), k=8, graph_rng=1, drop={'c2': 'mask', 'c11': 'unmask'})
    spec = ProtocolSpec('secagg-releases', client, server, dealer=False)
    res, _, _ = run_protocol(spec, {c: {'x': v} for c, v in vals.items()}, cfg, rngs=party_rngs(3, list(vals)))
    out = res['server']
    assert [o['dropped'] for o in out] == [{'c2': 'mask', 'c11': 'unmask'}] + [{'c2': 'earlier', 'c11': 'earlier'}] * 2
    shifted = {c: v + 2 for c, v in vals.items()}
    np.testing.assert_array_equal(out[0]['sum'], exact(vals, [c for c in vals if c != 'c2']))
    np.testing.assert_array_equal(out[2]['sum'], exact(shifted, [c for c in vals if c not in ('c2', 'c11')]))
    assert res['c2'] == 0 and res['c11'] == 0 and res['c0'] is None


def test_encoded_inputs_as_dp_gbdt_releases_them(vals):
    "DP-GBDT's pattern: each client's int64 fixed point plus its own noise (`encoded=True`); the server's sum decoded."
    from fedgauss.secagg import secagg_party, secagg_server
    from fedgauss.smc import ProtocolSpec

    fb = 20
    ints = {c: np.rint(np.ldexp(v, fb)).astype(np.int64) + 3 for c, v in vals.items()}  # + 3: its 'noise'

    def client(ctx, data, cfg):
        return (yield from secagg_party(ctx, data['x'], cfg, encoded=True))

    cfg = secagg_config(list(vals), (3, 5), frac_bits=fb, drop={'c6': 'share'})
    spec = ProtocolSpec('secagg-encoded', client, secagg_server, dealer=False)
    res, _, _ = run_protocol(spec, {c: {'x': a} for c, a in ints.items()}, cfg, rngs=party_rngs(2, list(vals)))
    np.testing.assert_array_equal(res['server']['sum'], sum(ints[c] for c in vals if c != 'c6') / 2**fb)
    with pytest.raises(ValueError, match='an encoded input must be integers'):
        run_protocol(spec, {c: {'x': np.asarray(a, float)} for c, a in ints.items()}, cfg)


def test_a_client_gone_without_notice_stops_the_run_naming_it(vals):
    from fedgauss.smc import PeerFinished, ProtocolSpec
    from fedgauss.secagg import secagg_client, secagg_server

    def client(ctx, data, cfg):
        if ctx.me == 'c2':
            return None  # ends without the transport's notice
        return (yield from secagg_client(ctx, data, cfg))

    v = {c: vals[c] for c in list(vals)[:5]}
    with pytest.raises(PeerFinished, match="server waits for 'keys' from c2, which has finished"):
        run_protocol(ProtocolSpec('x', client, secagg_server, dealer=False), {c: {'x': a} for c, a in v.items()},
                     secagg_config(list(v), (3, 5)))  # fmt: skip


# ---------------------------------------------------------------- distributed DP noise under dropouts


def test_dp_accounting_from_the_transcript():
    "rho = 0.3, K = 10: with up to 3 dropouts the stated epsilon holds, recomputed from who sent a masked input."
    K, rho, d, fb, eps, delta = 10, 0.3, 50, 16, 1.0, 1e-5
    dz = fixed_point_sensitivity(1.0, fb, d)
    sc = calibrate_dropout_noise(eps, delta, K, rho, dz, d)
    g = np.random.default_rng(9)
    xs = {f'c{i}': g.normal(size=d) / np.sqrt(d) for i in range(K)}
    spent = []
    for drops in range(4):
        ch = Channel()
        secagg_sum(xs, ch, rng=drops, frac_bits=fb, rho=rho, noise=sc, drop={f'c{i}': 'mask' for i in range(drops)})
        T = ch.transcript
        m = T[(T.receiver == 'server') & (T.kind == 'masked input')].sender.nunique()
        assert m == K - drops
        acct = dropout_privacy(sc, K, rho, m, dz, d, delta)
        assert acct['epsilon'] <= eps and acct['epsilon_promised'] <= eps
        assert acct['extra_variance'] == pytest.approx(m / 7 - 1)
        spent.append(acct['epsilon'])
    assert spent == sorted(spent) and spent[-1] == pytest.approx(eps, rel=1e-2)  # the promise is tight at rho K
    with pytest.raises(DropoutError, match='fewer than 7'):
        secagg_sum(xs, rng=1, frac_bits=fb, rho=rho, noise=sc, drop={f'c{i}': 'mask' for i in range(4)})
    with pytest.raises(ValueError, match='fewer than the 7'):
        dropout_privacy(sc, K, rho, 6, dz, d, delta)


def test_the_noise_is_in_the_sum():
    K, d, fb, sc = 6, 3000, 8, 40.0
    g = np.random.default_rng(10)
    xs = {f'c{i}': g.normal(size=d) for i in range(K)}
    res = secagg_sum(xs, rng=3, frac_bits=fb, noise=sc, rho=0.5, drop={'c0': 'mask', 'c1': 'share'})
    err = np.ldexp(res['sum'] - exact(xs, res['survivors'], fb), fb)
    assert np.all(err == np.rint(err)) and err.std() == pytest.approx(sc * 2, rel=0.05)  # 4 shares of sigma 40


# ---------------------------------------------------------------- over Flower's relay (in-process nodes)

flower = pytest.importorskip('fedgauss.flower')


class DyingGrid(flower.LocalGrid):
    "In-process nodes; node `n` stops answering (its process is gone) after its `dies[n]`-th request."

    def __init__(self, ncs, dies):
        super().__init__(ncs)
        self.dies, self.count = dies, {}

    def exchange(self, blobs, timeout=None):
        out = {}
        for n, b in blobs.items():
            self.count[n] = self.count.get(n, 0) + 1
            if self.count[n] <= self.dies.get(n, 10**9):
                out.update(super().exchange({n: b}, timeout))
        return out


class GoneRelay(flower.Relay):
    """What issue 30 asks of nb50's relay for a protocol that tolerates dropouts: a node that does not answer a step is
    finished, and the server's program gets that party's `gone` notice (sealed here: the relay holds the pair key)."""

    def ask(self, reqs, what, timeout=None):
        grid, relay = self.grid, self

        class Reporting:
            def get_node_ids(self):
                return grid.get_node_ids()

            def exchange(self, blobs, timeout=None):
                got = grid.exchange(blobs, timeout)
                for p, r in reqs.items():
                    if relay.node[p] not in got and r.get('op') == 'step':
                        got[relay.node[p]] = (flower.encode(relay.gone(p)), None)
                return got

        self.grid = Reporting()
        try:
            return super().ask(reqs, what, timeout)
        finally:
            self.grid = grid

    def gone(self, p):
        blob = flower.seal(self.pair[p], None, self.run_id, p, self.server, 'gone', self.got.get(p, 0))
        out = [(self.server, 'gone', flower.Sealed(blob, 0))]
        return dict(out=out, phase=None, done=True, waiting=None, result=None)


@pytest.fixture()
def nodes(tmp_path, vals):
    v = {c: vals[c] for c in list(vals)[:6]}
    ncs, kw = flower.local_nodes(str(tmp_path / 'fed'), {c: {'x': a} for c, a in v.items()}, test_seeds=True)
    return v, ncs, kw


def test_flower_relay_equals_the_simulator_with_dropouts(tmp_path, vals):
    "Signed keys (each node's identity in its data file), two clients dropping: the relay's run is the simulator's."
    from fedgauss.secagg import secagg_identities

    v = {c: vals[c] for c in list(vals)[:6]}
    priv, pins = secagg_identities(list(v), 1)
    datas = {c: {'x': a, 'identity': np.frombuffer(priv[c], np.uint8)} for c, a in v.items()}
    ncs, kw = flower.local_nodes(str(tmp_path / 'fed'), datas, test_seeds=True)
    cfg = secagg_config(list(v), (3, 5), drop={'c1': 'mask', 'c4': 'unmask'}, identities=pins)
    sim, _, ch = run_protocol(SECAGG, datas, cfg, rngs=party_rngs(1, list(v)), bsp=True)
    fl = flower.Relay(flower.LocalGrid(ncs), len(v), **kw).run('secagg', cfg, seeds=party_rngs(1, list(v)))
    np.testing.assert_array_equal(fl['results']['server']['sum'], sim['server']['sum'])
    assert fl['results']['server']['dropped'] == {'c1': 'mask', 'c4': 'unmask'}
    key = ['round', 'sender', 'receiver', 'kind', 'bytes']
    assert sorted(map(tuple, fl['channel'].transcript[key].values)) == sorted(map(tuple, ch.transcript[key].values))


def test_flower_node_that_stops_answering(nodes):
    "Node 4 (c3) answers the hello and its first step (its keys), then is gone: today's relay stops; GoneRelay goes on."
    v, ncs, kw = nodes
    cfg = secagg_config(list(v), (3, 5))
    with pytest.raises(flower.FlowerRunError, match=r'c3 \(node 4\) did not answer'):
        flower.Relay(DyingGrid(ncs, {4: 2}), len(v), timeout=1, **kw).run('secagg', cfg)
    fl = GoneRelay(DyingGrid(ncs, {4: 2}), len(v), timeout=1, **kw).run('secagg', cfg)
    res = fl['results']['server']
    assert res['dropped'] == {'c3': 'share'} and res['survivors'] == ['c0', 'c1', 'c2', 'c4', 'c5']
    np.testing.assert_array_equal(res['sum'], exact(v, res['survivors']))
