"""Cost of the dropout-tolerant secure aggregation (fedgauss.secagg, issue 30 §2) against the dropout-free `secure_sum`
of fedgauss.smc, in the simulator: bytes per client (sent + received), the server's bytes, seconds of the whole
simulated run (every client's and the server's work in one process), at 10, 100 and 1,000 clients, all pairs
(Bonawitz et al. 2017) and SecAgg+'s sparse graph (Bell et al. 2020, k from `secagg_plus_params`), with and without
10 % of the clients dropping before their masked input.

    python tests/bench_secagg.py            # 10, 100 and 1,000 clients (1,000: sparse only)
    python tests/bench_secagg.py --quick    # 10 and 100 clients

`secure_sum` at 1,000 clients (about 10^6 2048-bit exponentiations) and all pairs at 1,000 are skipped: hours here.
The last lines test Bell et al.'s claim: the sparse overhead per client divided by k is flat, and k grows with log n.
"""

import argparse, math, sys

import pandas as pd

from fedgauss.secagg import secagg_cost, secagg_plus_params


def rows(sizes, dim, seed=0):
    out = []
    for n in sizes:
        base = secagg_cost(n, dim, protocol='secure_sum', seed=seed) if n <= 100 else None
        if base is not None:
            out.append(dict(base, vs='—'))
        k_plus = secagg_plus_params(n)['k']
        for k in ([None] if n <= 100 else []) + ([k_plus] if k_plus < n - 1 else []):
            for drop in (0.0, 0.1):
                r = secagg_cost(n, dim, k=k, drop=drop, seed=seed)
                r['k'] = n - 1 if k is None else k
                if base is not None:
                    r['bytes_vs_secure_sum'] = r['client_kB'] / base['client_kB']
                    r['seconds_vs_secure_sum'] = r['seconds'] / base['seconds']
                out.append(r)
                print(f"  {r['protocol']:>16} n={n:<5} drop={drop:.0%}: {r['client_kB']:8.2f} kB/client, "
                      f"{r['seconds']:7.2f} s", file=sys.stderr, flush=True)  # fmt: skip
    return pd.DataFrame(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--quick', action='store_true', help='10 and 100 clients only')
    ap.add_argument('--dim', type=int, default=1000, help='values per client (default 1000)')
    a = ap.parse_args(argv)
    sizes = (10, 100) if a.quick else (10, 100, 1000)
    t = rows(sizes, a.dim)
    cols = ['protocol', 'n', 'drop', 'client_kB', 'client_overhead_kB', 'server_kB', 'seconds']
    cols += [c for c in ('bytes_vs_secure_sum', 'seconds_vs_secure_sum') if c in t]
    with pd.option_context('display.width', 200, 'display.max_columns', 20):
        print(t[cols].round(3).to_string(index=False))
    sp = t[t.protocol.str.startswith('secagg') & (t['drop'] == 0) & (t.k < t.n - 1)]
    if len(sp):
        print('\nSecAgg+ (sparse, no dropouts): overhead per client against k and log2 n')
        for _, r in sp.iterrows():
            print(f"  n={int(r.n):<5} k={int(r.k):<3} overhead {r.client_overhead_kB:6.2f} kB = {r.client_overhead_kB / r.k * 1e3:6.1f} B "
                  f"per neighbour; k / log2 n = {r.k / math.log2(r.n):.2f}")  # fmt: skip


if __name__ == '__main__':
    main()
