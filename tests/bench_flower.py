"""Benchmark: SecureFedYJ over Flower next to the in-process simulator, on the same data: wall time, round trips
(relay passes), bytes in the transcript (the same for both) and bytes on the wire over Flower (pickled requests and
replies, sealed shares). `--engine deployment` (default): a real `flower-superlink` and one SuperNode process per client
on 127.0.0.1 (`fedgauss.flower.flower_deploy`; the wall time includes starting them); `--engine simulation`: Flower's
simulation engine (virtual SuperNodes as Ray actors).

    python tests/bench_flower.py [--engine deployment] [--n 100000] [--d 30] [--clients 5] [--t-max 1]

Needs the flower extra: pip install 'fedgauss[flower]'.
"""

import os, time

os.environ.setdefault('OMP_NUM_THREADS', '1')
import numpy as np

from fedgauss.flower import flower_deploy, flower_simulation
from fedgauss.securefedyj import SecureFedYJ

from bench_securefedyj import benchmark_data, data_arguments  # the same data and command line


def main():
    ap = data_arguments(__doc__, t_max=1)
    ap.add_argument('--engine', choices=['deployment', 'simulation'], default='deployment')
    ap.add_argument('--timeout', type=float, default=600)
    args = ap.parse_args()
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
