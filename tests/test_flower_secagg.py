"""Dropout-tolerant secure aggregation (`fedgauss.secagg`, issue 30 §2) over Flower's relay (`fedgauss.flower`): with
in-process nodes (`LocalGrid`) the relay's run is the simulator's — no dropout, one node and then rho K nodes that stop
mid-protocol (the survivors' exact sum, the same transcript as the simulator's `drop=`), one more stops the run with an
error; a protocol that does not tolerate dropouts still stops at a silent node; a peer cannot forge a `gone` for a live
party; and on a real deployment (a SuperLink and SuperNodes as processes on 127.0.0.1), a SuperNode killed mid-run."""

import dataclasses, importlib.util, pickle, shutil

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ('flwr', 'cryptography')),
    reason="the flower extra is not installed: pip install 'fedgauss[flower]'",
)

from fedgauss import flower
from fedgauss.entropy import party_rngs
from fedgauss.secagg import SECAGG, secagg_config
from fedgauss.smc import DropoutError, register_protocol, run_protocol

K, FB = 8, 24
NAMES = [f'c{i}' for i in range(K)]
KEY = ['round', 'sender', 'receiver', 'kind', 'bytes']


def exact(vals, names, fb=FB):
    "The fixed-point sum of `names`' arrays, decoded: what secure aggregation must return, to the bit."
    return sum(np.rint(np.ldexp(vals[c], fb)) for c in names) / 2**fb


def rows(ch):
    return sorted(map(tuple, ch.transcript[KEY].values))


@pytest.fixture(scope='module')
def vals():
    g = np.random.default_rng(30)
    return {c: g.normal(scale=50, size=(4, 3)) for c in NAMES}


@pytest.fixture()
def nodes(tmp_path, vals):
    return flower.local_nodes(str(tmp_path / 'fed'), {c: {'x': a} for c, a in vals.items()}, test_seeds=True)


def over_flower(nodes, cfg, fault=None, relay=flower.Relay, grid=flower.LocalGrid, spec='secagg'):
    ncs, kw = nodes
    return relay(grid(ncs), K, timeout=5, **kw).run(spec, cfg, seeds=party_rngs(1, NAMES), fault=fault)


def simulated(vals, **kw):
    cfg = secagg_config(NAMES, (4, 3), rho=0.25, **kw)
    res, _, ch = run_protocol(SECAGG, {c: {'x': a} for c, a in vals.items()}, cfg, rngs=party_rngs(1, NAMES), bsp=True)
    return res['server'], ch


@pytest.mark.parametrize(
    'fault, drop',
    [
        (None, {}),
        ('c3:3:die', {'c3': 'mask'}),  # one node stops mid-protocol: after its shares, before its masked input
        ('c1:2:die,c6:4:hang', {'c1': 'share', 'c6': 'unmask'}),  # rho K = 2 of 8
        ('c0:3:die,c7:3:die', {'c0': 'mask', 'c7': 'mask'}),  # rho K = 2, both at the costliest stage
    ],
)
def test_relay_equals_the_simulator(nodes, vals, fault, drop):
    "A node the run's fault stops answers nothing more; the server's program gets its `gone`, as in the simulator."
    cfg = secagg_config(NAMES, (4, 3), rho=0.25)
    fl = over_flower(nodes, cfg, fault)
    sim, ch = simulated(vals, drop=drop)
    res = fl['results']['server']
    assert res['dropped'] == drop and sorted(fl['gone']) == sorted(drop)
    assert res['survivors'] == [c for c in NAMES if drop.get(c) in (None, 'unmask')]
    np.testing.assert_array_equal(res['sum'], sim['sum'])
    np.testing.assert_array_equal(res['sum'], exact(vals, res['survivors']))
    assert rows(fl['channel']) == rows(ch)  # kinds, sizes, senders, receivers, rounds: the simulator's
    gone = fl['channel'].transcript.query("kind == 'gone'")
    assert sorted(gone.sender) == sorted(drop) and set(gone.receiver) <= {'server'} and gone.bytes.sum() == 0
    for p in drop:  # never stepped again: nothing from it after its notice
        t = fl['channel'].transcript
        assert t[t.sender == p]['round'].max() <= gone[gone.sender == p]['round'].iloc[0]


def test_more_than_tolerated_stops_the_run(nodes):
    cfg = secagg_config(NAMES, (4, 3), rho=0.25)
    with pytest.raises(DropoutError, match=r'3 of 8 clients dropped: .*c2 \(mask\).*fewer than 6'):
        over_flower(nodes, cfg, 'c2:3:die,c4:3:die,c5:2:die')


def test_a_protocol_without_dropouts_still_stops(nodes):
    "The same programs registered without `dropouts=True`: a silent node stops the run with an error naming it."
    register_protocol(dataclasses.replace(SECAGG, name='secagg-no-dropouts', dropouts=False))
    cfg = secagg_config(NAMES, (4, 3), rho=0.25)
    with pytest.raises(flower.FlowerRunError, match=r'c3 \(node 4\) did not answer within 5 s in round 3'):
        over_flower(nodes, cfg, 'c3:3:die', spec='secagg-no-dropouts')


class ForgingGrid(flower.LocalGrid):
    """c2's node (node 3) replies at its 3rd step with a `gone` to the server instead of its masked input: as c4's
    (sealed under the only key it shares with the server, labelled as from c4), or as its own."""

    as_of = 'c4'

    def exchange(self, blobs, timeout=None):
        out = super().exchange(blobs, timeout)
        state = pickle.loads(self.states[3])
        if 3 in out and state.get('n') == 3:
            rep, k = flower.decode(out[3][0]), state['sent']['server'] - 1  # the masked input's counter
            blob = flower.seal(state['keys']['server'], None, state['run'], self.as_of, 'server', 'gone', k)
            rep['out'], rep['done'] = [('server', 'gone', flower.Sealed(blob, 0))], True  # and finished
            out[3] = (flower.encode(rep), None)
        return out


def test_a_peer_cannot_forge_a_gone_for_a_live_party(nodes, vals):
    cfg = secagg_config(NAMES, (4, 3), rho=0.25)
    with pytest.raises(
        flower.FlowerRunError, match=r"c2 \(node 3\), round \d+: server refuses what it sent: .gone. from c2"
    ):
        over_flower(nodes, cfg, grid=ForgingGrid)  # routed as c2's, opened under c2's key: it does not open

    class Itself(ForgingGrid):
        as_of = 'c2'

    fl = over_flower(nodes, cfg, grid=Itself)  # a peer can end only itself; c4 is summed
    res = fl['results']['server']
    assert res['dropped'] == {'c2': 'mask'} and 'c4' in res['survivors']
    np.testing.assert_array_equal(res['sum'], exact(vals, res['survivors']))


# --- a real deployment: `flower-superlink` and 4 SuperNodes as processes on 127.0.0.1 ---------------------------------
def test_a_killed_supernode_is_gone_and_the_sum_is_the_survivors(vals):
    if shutil.which('flower-superlink') is None or shutil.which('flwr') is None:
        pytest.skip('flwr console scripts (flower-superlink, flwr) not on PATH')
    names, v = NAMES[:4], {c: vals[c] for c in NAMES[:4]}
    cfg = secagg_config(names, (4, 3))  # t = 3 of 4: one dropout tolerated
    datas = {c: {'x': a} for c, a in v.items()}
    sim, _, ch = run_protocol(
        SECAGG, datas, dict(cfg, drop={'c2': 'mask'}), rngs=party_rngs(2, names), bsp=True
    )  # fmt: skip
    with flower.FlowerDeployment(4, test_seeds=True) as dep:  # TLS, SuperNode authentication; nodes for tests
        ok = dep.run(SECAGG, datas, cfg, party_rngs(2, names), timeout=30)
        np.testing.assert_array_equal(ok['results']['server']['sum'], exact(v, names))
        # c2's SuperNode process exits (os._exit) at its 3rd step; the relay waits `timeout` s, then goes on
        fl = dep.run(SECAGG, datas, cfg, party_rngs(2, names), timeout=20, fault='c2:3:die')
        assert dep.procs[3].poll() is not None  # node 2 (c2) is gone
    assert all(p.poll() is not None for p in dep.procs)  # every process started was ended
    res = fl['results']['server']
    assert res['dropped'] == {'c2': 'mask'} and res['survivors'] == ['c0', 'c1', 'c3']
    assert fl['gone']['c2'].endswith('did not answer within 20 s')
    np.testing.assert_array_equal(res['sum'], sim['server']['sum'])
    np.testing.assert_array_equal(res['sum'], exact(v, res['survivors']))
    assert rows(fl['channel']) == rows(ch)
