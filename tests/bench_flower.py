"""Benchmark: SecureFedYJ over Flower next to the in-process simulator, on the same data: wall time, round trips
(relay passes), bytes in the transcript (the same for both) and bytes on the wire over Flower (pickled requests and
replies, sealed shares). `--engine deployment` (default): a real `flower-superlink` and one SuperNode process per client
on 127.0.0.1 (`fedgauss.flower.flower_deploy`; the wall time includes starting them); `--engine simulation`: Flower's
simulation engine (virtual SuperNodes as Ray actors).

    python tests/bench_flower.py [--engine deployment] [--n 100000] [--d 30] [--clients 5] [--t-max 1]

`--secagg`: the dropout-tolerant secure aggregation (fedgauss.secagg, issue 30 §2) over the relay with nodes in this
process (`LocalGrid`: codec, sealing and every party's work, no transport), `--nodes` clients (10) summing `--length`
values each (10,000), as 0, 1 and 3 of the nodes stop answering at their third step (after their shares, before their
masked input: the costliest stage, the server rebuilds their keys and removes their pair masks); `rho = 0.3`. Seconds
(median of `--repeat` runs), passes, bytes in the transcript and on the wire, each against the run without dropout and
against the in-process simulator (`run_protocol`, the same programs, the same clients dropping via `drop=`).

    python tests/bench_flower.py --secagg [--nodes 10] [--length 10000] [--drops 0,1,3] [--repeat 3]

Needs the flower extra: pip install 'fedgauss[flower]'.
"""

import os, time

os.environ.setdefault('OMP_NUM_THREADS', '1')
import numpy as np

from fedgauss.flower import flower_deploy, flower_simulation
from fedgauss.securefedyj import SecureFedYJ

from bench_securefedyj import benchmark_data, data_arguments  # the same data and command line


def secagg_runs(nodes: int, length: int, drops: list, repeat: int, seed: int = 0) -> list:
    "One row per dropout count: the relay over `LocalGrid` and the simulator, seconds (median), passes, bytes."
    import statistics, tempfile
    from fedgauss.entropy import party_rngs
    from fedgauss.flower import LocalGrid, Relay, local_nodes
    from fedgauss.secagg import SECAGG, secagg_config
    from fedgauss.smc import run_protocol

    names = [f'c{i}' for i in range(nodes)]
    g = np.random.default_rng(seed)
    datas = {c: {'x': g.normal(size=length)} for c in names}
    out = []
    with tempfile.TemporaryDirectory() as d:
        ncs, kw = local_nodes(d, datas, test_seeds=True)
        for n_drop in drops:
            gone = names[1 : 1 + 3 * n_drop : 3][:n_drop]  # spread over the order: c1, c4, c7, ...
            cfg = secagg_config(names, (length,), rho=0.3)
            fault = ','.join(f'{c}:3:die' for c in gone) or None
            fl_s, sim_s = [], []
            for r in range(repeat):
                t = time.perf_counter()
                fl = Relay(LocalGrid(ncs), nodes, **kw).run(SECAGG, cfg, seeds=party_rngs(seed + r, names), fault=fault)
                fl_s.append(time.perf_counter() - t)
                t = time.perf_counter()
                sim, _, ch = run_protocol(
                    SECAGG, datas, dict(cfg, drop={c: 'mask' for c in gone}), rngs=party_rngs(seed + r, names), bsp=True
                )
                sim_s.append(time.perf_counter() - t)
            res = fl['results']['server']
            exact = np.sum([datas[c]['x'] for c in res['survivors']], axis=0)
            assert sorted(res['dropped']) == sorted(gone) and np.abs(res['sum'] - exact).max() < nodes * 2.0**-24
            assert np.array_equal(res['sum'], sim['server']['sum'])
            out.append(
                dict(dropouts=n_drop, seconds=statistics.median(fl_s), sim_seconds=statistics.median(sim_s),
                     passes=fl['round_trips'], transcript_bytes=int(fl['channel'].summary()['total_bytes']),
                     wire_bytes=fl['wire_bytes'], sim_bytes=int(ch.summary()['total_bytes']))
            )  # fmt: skip
    return out


def print_secagg(rows: list, nodes: int, length: int):
    "The table: each run against the one without dropout and against the simulator."
    base = rows[0]
    print(f"secagg over the relay, {nodes} nodes in this process (LocalGrid), {length:,} values each, rho = 0.3")
    head = f"{'dropouts':>8s}{'seconds':>9s}{'vs 0':>7s}{'sim s':>8s}{'vs sim':>8s}{'passes':>8s}"
    print(head + f"{'transcript kB':>15s}{'vs 0':>7s}{'wire kB':>10s}{'wire/transcript':>17s}{'= sim bytes':>13s}")
    for r in rows:
        print(
            f"{r['dropouts']:8d}{r['seconds']:9.3f}{r['seconds'] / base['seconds']:7.2f}{r['sim_seconds']:8.3f}"
            f"{r['seconds'] / r['sim_seconds']:8.2f}{r['passes']:8d}{r['transcript_bytes'] / 1e3:15.1f}"
            f"{r['transcript_bytes'] / base['transcript_bytes']:7.2f}{r['wire_bytes'] / 1e3:10.1f}"
            f"{r['wire_bytes'] / r['transcript_bytes']:17.2f}{str(r['transcript_bytes'] == r['sim_bytes']):>13s}"
        )


def main():
    ap = data_arguments(__doc__, t_max=1)
    ap.add_argument('--engine', choices=['deployment', 'simulation'], default='deployment')
    ap.add_argument('--timeout', type=float, default=600)
    ap.add_argument('--secagg', action='store_true', help='secure aggregation with dropouts over LocalGrid')
    ap.add_argument('--nodes', type=int, default=10)
    ap.add_argument('--length', type=int, default=10_000)
    ap.add_argument('--drops', default='0,1,3')
    ap.add_argument('--repeat', type=int, default=3)
    args = ap.parse_args()
    if args.secagg:
        drops = [int(v) for v in args.drops.split(',')]
        print_secagg(secagg_runs(args.nodes, args.length, drops, args.repeat, args.seed), args.nodes, args.length)
        return
    X, parts, clients = benchmark_data(args)
    print(
        f"data: {args.n:,} x {args.d} skewed features, {args.clients} clients / nodes, t_max = {args.t_max}, precision 96"
    )
    t = time.perf_counter()
    sim = SecureFedYJ(t_max=args.t_max, precision=96, rng=args.seed).fit(clients)
    w_sim = time.perf_counter() - t
    t = time.perf_counter()
    run = flower_deploy if args.engine == 'deployment' else flower_simulation
    fl = run(clients, t_max=args.t_max, f=96, timeout=args.timeout, rng=args.seed)
    w_fl = time.perf_counter() - t
    by_kind = lambda T: T.groupby('kind')['bytes'].agg(['size', 'sum'])
    same = by_kind(fl['channel'].transcript).equals(by_kind(sim.channel_.transcript))
    tb = sim.channel_.summary()['total_bytes']
    print(f"\n{'':28s}{'wall s':>10s}{'round trips':>13s}{'transcript MiB':>16s}{'wire MiB':>10s}")
    label = 'Flower deployment' if args.engine == 'deployment' else 'Flower simulation engine'
    print(f"{'in-process simulator':28s}{w_sim:10.2f}{'-':>13s}{tb / 2**20:16.2f}{'-':>10s}")
    print(
        f"{label:28s}{w_fl:10.2f}{fl['round_trips']:13d}{fl['channel'].summary()['total_bytes'] / 2**20:16.2f}"
        f"{fl['wire_bytes'] / 2**20:10.2f}"
    )
    print(
        f"ratio Flower / simulator: {w_fl / w_sim:.1f}x wall; wire / transcript bytes: {fl['wire_bytes'] / tb:.2f}; "
        f"{w_fl / fl['round_trips'] * 1e3:.0f} ms per round trip"
    )
    print(
        f"lambdas identical: {np.array_equal(fl['lambdas'], sim.lambdas_)}; messages and bytes by kind identical: {same}"
    )


if __name__ == '__main__':
    main()
