"""Benchmark: ECDH-PSI over ristretto255 (`fedgauss.psi.psi_align`, issue 30 §1) at 100,000 ∩ 100,000 and
1,000,000 ∩ 1,000,000 IDs (half of each set in common), seconds and bytes per ID, next to the published anchors
scaled per core.

    python tests/bench_psi.py                      # both sizes, 2 worker processes per party; writes the CSV
    python tests/bench_psi.py --sizes 100000 --workers 1

Both parties run in this process, one after the other (the simulator), each with its group operations (hash to
the group, exponentiations) in a pool of `--workers` processes: with 2 workers both cores of this machine are busy
throughout. Per-ID figures count both parties' IDs (2n for n ∩ n). The anchors ran on other machines with more
cores; they are compared per core-second (wall seconds × cores ÷ IDs), which assumes the work splits evenly across
cores — nearly true of ECDH-PSI, whose exponentiations are independent — and ignores the machines' differences.
The machine is shared: the load average is printed next to the figures, and `cpu_us_per_id` (the CPU seconds this
process and its workers used, per ID) is the cost that does not depend on what else runs.
"""

import argparse, os, resource, time
from pathlib import Path

import numpy as np
import pandas as pd

from fedgauss.entropy import secret_rng
from fedgauss.federation import Channel
from fedgauss.psi import blind, hash_ids, psi_align, random_scalar

ROOT = Path(__file__).resolve().parents[1]
ANCHORS = [  # (system, IDs per party, wall seconds, cores, source) as cited in issue 30
    ('FATE 2.0 ECDH-PSI', 10_000_000, 420.0, 16, 'FATE 2.0: 10M ∩ 10M in about 7 min on 16 cores'),
    ('SecretFlow ECDH-PSI (Curve25519)', 10_000_000, 67.0, 32, 'SecretFlow PSI benchmark: 10M ∩ 10M, 67 s, 32 cores'),
]


def cpu_seconds() -> float:
    "CPU seconds of this process and of its finished children (the pool's workers)."
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def per_operation(n: int = 4000) -> dict:
    "Microseconds per hash to the group and per exponentiation, on one core."
    ids = [f'cust-{i:09d}' for i in range(n)]
    t0 = time.perf_counter()
    p = hash_ids(ids)
    t1 = time.perf_counter()
    blind(p, random_scalar(secret_rng()))
    t2 = time.perf_counter()
    return dict(hash_us=(t1 - t0) / n * 1e6, exp_us=(t2 - t1) / n * 1e6)


def run(n: int, workers: int) -> dict:
    "n ∩ n IDs, half in common, each party's rows in its own order: seconds, CPU, bytes; the result checked."
    r = np.random.default_rng(n)  # statistical: who holds which ID, and in which order
    a = np.array([f'cust-{i:09d}' for i in r.permutation(n)])
    b = np.array([f'cust-{i:09d}' for i in r.permutation(np.arange(n // 2, n // 2 + n))])
    ch, c0, load0 = Channel(record_payloads=False), cpu_seconds(), os.getloadavg()[0]
    t0 = time.perf_counter()
    al = psi_align([a, b], names=['active', 'passive'], channel=ch, workers=workers)
    secs, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    if al.size != n - n // 2 or not np.array_equal(a[al.rows[0]], b[al.rows[1]]):
        raise AssertionError(f"wrong intersection at n={n}: {al.size}")
    nbytes = int(ch.transcript['bytes'].sum())
    ids, cores = 2 * n, min(workers, os.cpu_count() or 1)
    return dict(
        system='fedgauss ECDH-PSI (ristretto255, libsodium)', ids_per_party=n, common=al.size, cores=cores,
        seconds=round(secs, 1), cpu_seconds=round(cpu, 1), megabytes=round(nbytes / 1e6, 1),
        bytes_per_id=round(nbytes / ids, 1), wall_us_per_id=round(secs / ids * 1e6, 1),
        core_us_per_id=round(secs * cores / ids * 1e6, 1), cpu_us_per_id=round(cpu / ids * 1e6, 1),
        load=round((load0 + os.getloadavg()[0]) / 2, 1),
    )  # fmt: skip


def anchors() -> list:
    return [
        dict(
            system=s,
            ids_per_party=n,
            common=None,
            cores=c,
            seconds=t,
            cpu_seconds=None,
            megabytes=None,
            bytes_per_id=None,
            wall_us_per_id=round(t / (2 * n) * 1e6, 2),
            core_us_per_id=round(t * c / (2 * n) * 1e6, 1),
            load=None,
            source=src,
        )  # fmt: skip
        for s, n, t, c, src in ANCHORS
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sizes', type=int, nargs='+', default=[100_000, 1_000_000], help='IDs per party')
    ap.add_argument('--workers', type=int, default=2, help='processes per party for the group operations')
    ap.add_argument('--out', default=str(ROOT / 'nbs' / '32a_psi_bench.csv'), help="the CSV (nb32a shows it); '' none")
    args = ap.parse_args(argv)
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    op = per_operation()
    print(f"one core: {op['hash_us']:.0f} µs per hash to the group, {op['exp_us']:.0f} µs per exponentiation")
    rows = []
    for n in args.sizes:
        rows.append(run(n, args.workers))
        print({k: v for k, v in rows[-1].items() if k != 'system'}, flush=True)
    for r in rows:
        r['source'] = f"this machine; one core: {op['hash_us']:.0f} µs/hash, {op['exp_us']:.0f} µs/exponentiation"
    table = pd.DataFrame(rows + anchors())
    cols = [
        'system',
        'ids_per_party',
        'cores',
        'seconds',
        'megabytes',
        'bytes_per_id',
        'core_us_per_id',
        'cpu_us_per_id',
    ]
    cols.append('load')
    print(table[cols].to_string(index=False))
    ours = table[table.system.str.startswith('fedgauss')]
    for _, a in table[~table.system.str.startswith('fedgauss')].iterrows():
        for _, o in ours.iterrows():
            wall, cpu = o.core_us_per_id / a.core_us_per_id, o.cpu_us_per_id / a.core_us_per_id
            print(
                f"{o.ids_per_party:>9,} IDs: {wall:.2f}x (wall x cores; {cpu:.2f}x in CPU seconds) the core-seconds "
                f"per ID of {a.system}, scaled per core"
            )
    if args.out:
        table.to_csv(args.out, index=False)
        print(f"wrote {args.out}")


if __name__ == '__main__':
    main()
