"""Benchmark: SecureBoost per-tree time on 10,000 x 20 synthetic data (no exact zeros), 10 features per party, depth 6,
32 bins, against FedTree 1.0.5's vertical federated GBDT with homomorphic encryption (its Python API), in one run:
fedgauss with 2048-bit Paillier keys on one process and on every core (`n_jobs`), and with 512-bit keys on every core
(FedTree's wrapper always uses 512-bit keys: the like-for-like row); FedTree on one OpenMP thread and on every core.
Each FedTree run is a fresh process (its thread count is fixed when its library loads). Ratios are wall-clock seconds
per tree against FedTree on the same number of cores; CPU seconds (all processes) beside them. Also the share of a
serial tree spent in the work that runs on every core (Paillier and the encrypted sums), and Amdahl's speedup it
predicts on 16 cores; bytes per party per tree (from the transcript) and test AUC next to the centralized core.

    python tests/bench_secureboost.py [--trees 2] [--key 2048] [--repeat 1]   (--repeat k: best and median of k runs)
    python tests/bench_secureboost.py --ab OLD_SRC [--n 4000] [--pairs 6] [--trees 2] [--key 1024] [--depth 5] [--jobs 1]
    python tests/bench_secureboost.py --multiclass [--data seven|digits] [--n 3000] [--trees 10] [--key 1024]
    python tests/bench_secureboost.py --phases [--n 10000] [--trees 1] [--key 2048]

`--phases` (issue 32): one serial fit (one process), its CPU seconds per tree by phase — the obfuscators, the rest of
the encryption, the encrypted sums, their compression, the decryptions, the rest — with the modular operations each
phase performed (counted as they run) and the floor those operations cost at gmpy2's speed on this machine (each kind
timed alone, here, on operands of the key's size): what is above the floor is our overhead, the floor itself the key
size's arithmetic. Then the histogram slots of the nodes asked for a tree: empty (left out), derived, sent.

`--multiclass` (issue 29): K classes two ways, one tree per class a round against one multi-output tree a round
(SBT-MO, the K classes of a row packed into one ciphertext, or several when the key holds fewer than K): per round the
CPU seconds of encryption (active party), encrypted histograms (passive party) and decryption (active party), the
ciphertexts and megabytes of gradients and histograms from the transcript, and held-out accuracy next to the core's
softprob (`GBDTClassifier`). Data: the synthetic 7-class set of `30_gbdt` (the first `--n` rows to train, the next
2,000 held out) or scikit-learn's digits (10 classes, 1,797 rows: two thirds to train); the features split in two halves.

`--ab OLD_SRC` (issue 17): paired CPU time of one fit (the first `--n` rows, fixed seed) with the fedgauss package
found in folder OLD_SRC (e.g. `git archive 4a56a6b fedgauss | tar -x -C /tmp/old`: the single driver) against this
checkout's (the per-party programs), each in a fresh process, alternating which runs first; prints the median ratio.
With `--jobs -1` (issue 32) both fits use every core (`n_jobs`): the CPU seconds then include the worker processes,
and the median ratio of wall-clock seconds per tree is printed too (the figure `--jobs` changes; load permitting).

FedTree (`apt-get install -y libntl44 && pip install fedtree`) is skipped with a message when it is not installed.
Its Python wrapper turns X into a sparse matrix, so exact zeros would become missing values: the data has none.
On a shared machine the wall-clock figures carry the other jobs' load: the load average is printed with them.
"""

import argparse, os, subprocess, sys, time

for _v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_v, '1')

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from fedgauss.federation import vertical_split
from fedgauss.gbdt import GBDTClassifier
from fedgauss.paillier import n_workers
from fedgauss.secureboost import SecureBoostClassifier


def data(n=10_000, F=20, seed=0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(2 * n, F))
    X[X == 0] = 1e-12  # FedTree reads exact zeros as missing
    w = r.normal(size=F)
    y = (X @ w + 0.5 * np.sin(3 * X[:, 0]) + r.logistic(size=2 * n) > 0).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def _cpu():
    "CPU seconds of this process and its finished children (the worker pools)."
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def ours(X, y, Xt, yt, trees, key, depth, bins, jobs):
    import fedgauss.paillier as paillier
    import fedgauss.secureboost as sb

    inside, original = [0.0], paillier.parallel_map

    def timed(fn, shared, batch, workers=1):  # time in the work shared out on every core
        t = time.perf_counter()
        try:
            return original(fn, shared, batch, workers)
        finally:
            inside[0] += time.perf_counter() - t

    paillier.parallel_map, sb.parallel_map = timed, timed
    try:
        parts = vertical_split(X, 2, y)
        m = SecureBoostClassifier(
            n_estimators=trees,
            max_depth=depth,
            max_bins=bins,
            key_size=key,
            learning_rate=0.3,
            n_jobs=jobs,
            unsafe=key < 1024,  # FedTree's size, for the like-for-like row only
        )
        t0, c0 = time.perf_counter(), _cpu()
        m.fit(parts)
        total, cpu = time.perf_counter() - t0, _cpu() - c0
    finally:
        paillier.parallel_map = sb.parallel_map = original
    sec = np.array(m.tree_seconds_)
    tr = m.channel_.transcript
    tr = tr[~tr['kind'].isin(['public_key', 'n_bins'])]  # the setup (keys, bin counts)
    per_tree = tr.groupby('sender')['bytes'].sum() / trees
    auc = roc_auc_score(yt, m.predict_proba([Xt[:, : X.shape[1] // 2], Xt[:, X.shape[1] // 2 :]])[:, 1])
    row = dict(wall_per_tree=sec[:, 0].mean(), cpu_per_tree=sec[:, 1].mean(), fit_incl_keygen=total, auc=auc)
    return dict(row, parallel_share=inside[0] / sec[:, 0].sum()), per_tree


def fedtree_child(threads, trees, depth, bins):
    "In a fresh process (OpenMP reads its thread count once): FedTree's fit, printed as one line of numbers."
    X, y, Xt, yt = data()
    from fedtree import FLClassifier

    clf = FLClassifier(
        n_trees=trees,
        n_parties=2,
        mode='vertical',
        partition_mode='vertical',
        privacy_tech='he',
        max_depth=depth,
        max_num_bin=bins,
        learning_rate=0.3,
        lambda_ft=1,
        gamma=0,
        min_child_weight=1,
        verbose=0,
        n_device=1,
    )
    t0, c0 = time.perf_counter(), _cpu()
    clf.fit(X, y)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    p = np.asarray(clf.predict_proba(Xt), float)[:, 1]  # (its predict() returns class 0 for every row)
    print('FEDTREE', wall / trees, cpu / trees, wall, roc_auc_score(yt, p))


def fedtree_run(threads, trees, depth, bins):
    "FedTree on `threads` OpenMP threads, in a child process; None (with a message) when it is not installed."
    try:
        import fedtree  # noqa: F401
    except Exception as e:  # not installed, or libntl missing
        print(f"FedTree skipped: {type(e).__name__}: {e} (apt-get install -y libntl44 && pip install fedtree)")
        return None
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    here = os.path.dirname(os.path.abspath(__file__))
    code = f"import sys; sys.path.insert(0, {here!r}); import bench_secureboost as b; "
    code += f"b.fedtree_child({threads}, {trees}, {depth}, {bins})"
    out = subprocess.run([sys.executable, '-c', code], env=env, capture_output=True, text=True, check=True).stdout
    w, c, f, auc = map(float, next(l for l in out.splitlines() if l.startswith('FEDTREE')).split()[1:])
    return dict(wall_per_tree=w, cpu_per_tree=c, fit_incl_keygen=f, auc=auc)


def _fit_cpu(n, trees, key, depth, bins, jobs=None):
    "CPU seconds of one fit (all threads and worker processes) and its wall-clock seconds per tree, for `--ab`."
    X, y, _, _ = data(n)
    m = SecureBoostClassifier(n_estimators=trees, max_depth=depth, max_bins=bins, key_size=key, rng=0, n_jobs=jobs)
    c0 = _cpu()
    m.fit(vertical_split(X, 2, y))
    return _cpu() - c0, float(np.mean(np.array(m.tree_seconds_)[:, 0]))


def ab(old, a):
    "Paired runs, old and new package alternately first, each in its own process: the median CPU ratio new/old."
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = f"import sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, {os.path.dirname(__file__)!r}); "
    code += (
        f"import bench_secureboost as b; print(*b._fit_cpu({a.n}, {a.trees}, {a.key}, {a.depth}, {a.bins}, {a.jobs}))"
    )
    run = lambda src: [
        float(v)
        for v in subprocess.run(
            [sys.executable, '-c', code, src], capture_output=True, text=True, check=True
        ).stdout.split()[-2:]
    ]
    ratios, walls = [], []
    for i in range(a.pairs):
        got = {}
        for which in ('old', 'new') if i % 2 else ('new', 'old'):
            got[which] = run(old if which == 'old' else here)
        ratios.append(got['new'][0] / got['old'][0])
        walls.append(got['new'][1] / got['old'][1])
        print(f"pair {i}: old {got['old'][0]:.2f} s, new {got['new'][0]:.2f} s CPU, ratio {ratios[-1]:.3f}; wall per "
              f"tree old {got['old'][1]:.2f} s, new {got['new'][1]:.2f} s, ratio {walls[-1]:.3f}; load "
              f"{os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    print(f"median CPU ratio new/old over {a.pairs} pairs: {np.median(ratios):.3f}; wall per tree: {np.median(walls):.3f}"
          f" ({n_workers(a.jobs)} process(es) a party)")  # fmt: skip


def multiclass_data(name, n):
    "(train X, train y, test X, test y) of the 7-class synthetic set or digits."
    from sklearn.datasets import load_digits

    from fedgauss.data import make_seven_classes

    if name == 'digits':
        X, y = load_digits(return_X_y=True)
        idx = np.random.default_rng(0).permutation(len(y))
        tr, te = idx[: 2 * len(y) // 3], idx[2 * len(y) // 3 :]
        return X[tr], y[tr], X[te], y[te]
    X, y = make_seven_classes(n + 2000)
    return X[:n], y[:n], X[n:], y[n:]


def multiclass(a):
    "One tree per class against multi-output trees: cost per round and accuracy (issue 29)."
    from fedgauss.secureboost import bins_per_ciphertext, class_chunks, round_costs

    X, y, Xt, yt = multiclass_data(a.data, a.n)
    K, F = len(np.unique(y)), X.shape[1]
    groups = [list(range(F // 2)), list(range(F // 2, F))]
    kw = dict(n_estimators=a.trees, max_depth=a.depth, max_bins=a.bins)
    core = GBDTClassifier(**kw).fit(X, y)
    rows = {'core softprob (GBDTClassifier)': dict(accuracy=(core.predict(Xt) == yt).mean())}
    for name, mo in (('one tree per class', False), ('multi-output', True)):
        m = SecureBoostClassifier(key_size=a.key, unsafe=a.key < 1024, rng=0, multi_output=mo, **kw)
        t0, c0 = time.perf_counter(), _cpu()
        m.fit(vertical_split(X, groups, y))
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        acc = (m.predict([Xt[:, g] for g in groups]) == yt).mean()
        rows[name] = dict(round_costs(m), fit_wall_s_per_round=wall / a.trees, fit_cpu_s_per_round=cpu / a.trees)
        rows[name]['accuracy'] = acc
    q = bins_per_ciphertext(2 ** (a.key - 1) + 1)
    print(
        f"{a.data}: {len(X):,} rows to train, {len(Xt):,} held out, {F} features (two parties, {F // 2} each), {K} "
        f"classes; {a.trees} rounds, depth {a.depth}, {a.bins} bins; {a.key}-bit keys: {q} classes a ciphertext, a "
        f"row's classes in chunks {class_chunks(K, q)}; load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    t = pd.DataFrame(rows).T
    print(t.round(4).to_string())
    per, mo = t.loc['one tree per class'], t.loc['multi-output']
    cols = [
        'nodes',
        'hist_nodes',
        'encrypt_s',
        'histograms_s',
        'decrypt_s',
        'gh_ciphertexts',
        'hist_ciphertexts',
        'fit_cpu_s_per_round',
    ]
    print("\nratio one tree per class / multi-output, per round:")
    print((per[cols] / mo[cols]).round(2).to_string())


def _op_seconds(pk, sk, W):
    "CPU seconds of one modular operation of each kind on this key, timed alone (median of 5 runs of 200)."
    import gmpy2

    r = np.random.default_rng(0)
    big = lambda m: [gmpy2.mpz(int.from_bytes(r.bytes(m.bit_length() // 8 + 8), 'little')) % m for _ in range(201)]
    n2, p2 = big(pk.nsquare), big(sk.psquare)
    ops = dict(
        mul_n2=lambda: [a * b % pk.nsquare for a, b in zip(n2, n2[1:])],
        mul_p2=lambda: [a * b % sk.psquare for a, b in zip(p2, p2[1:])],
        shift=lambda: [gmpy2.powmod(a, 1 << W, pk.nsquare) for a in n2[:200]],
        decrypt=lambda: [gmpy2.powmod(a, sk.p - 1, sk.psquare) for a in p2[:200]],  # half of one (CRT: p and q)
    )
    out = {}
    for k, f in ops.items():
        ts = []
        for _ in range(5):
            c = time.process_time()
            f()
            ts.append((time.process_time() - c) / 200)
        out[k] = float(np.median(ts))
    out['decrypt'] *= 2
    return out


def phases(a):
    "Per-phase CPU of a serial fit, operations counted, and their floor at gmpy2's speed (issue 32)."
    import fedgauss.paillier as P
    import fedgauss.secureboost as SB

    cpu, ops = dict.fromkeys(('obfuscators', 'encrypt', 'sums', 'compression', 'decrypt', 'fit'), 0.0), {}
    saved = {}

    def timed(owner, name, phase, count=None):
        f = saved.setdefault((owner, name), getattr(owner, name))

        def g(*args, **kw):
            c = time.process_time()
            try:
                return f(*args, **kw)
            finally:
                cpu[phase] += time.process_time() - c
                if count:
                    k, v = count(*args)
                    ops[k] = ops.get(k, 0) + v

        setattr(owner, name, g)

    def table_products(table, xs):  # one product per non-zero digit but the first, per table
        w = table.tables[0].window
        digits = sum(sum(1 for i in range(0, table.exponent_bits, w) if (x >> i) & ((1 << w) - 1)) - 1 for x in xs)
        return 'mul_p2', digits * len(table.tables)

    def block_products(shared, i, q, w, src, edges):  # a product per row of a filled slot but its first, then one per
        k = len(edges) - 1  # slot into Horner but the first of each compressed ciphertext
        return 'mul_n2', (edges[-1] - edges[0] - k) + (k - -(-k // q))

    timed(P, '_table_powers', 'obfuscators', table_products)
    timed(SB.ActiveParty, 'encrypt_gradients', 'encrypt')
    timed(SB, '_packed_blocks', 'sums', block_products)
    timed(P.PaillierPublicKey, 'mul_plain', 'compression', lambda *args: ('shift', 1))
    timed(P, '_decrypt_batch', 'decrypt', lambda sk, cs: ('decrypt', len(cs)))
    try:
        X, y, _, _ = data(a.n)
        m = SecureBoostClassifier(n_estimators=a.trees, max_depth=a.depth, max_bins=a.bins, key_size=a.key,
                                  learning_rate=0.3, n_jobs=1, unsafe=a.key < 1024, rng=0)  # fmt: skip
        m.fit(vertical_split(X, 2, y))
    finally:
        for (owner, name), f in saved.items():
            setattr(owner, name, f)
    T = a.trees
    cpu['fit'] = np.array(m.tree_seconds_)[:, 1].sum()
    cpu['encrypt'] -= cpu['obfuscators']  # snapping, packing, the ciphertexts (1 + m n) r
    cpu['sums'] -= cpu['compression']
    cpu['rest'] = cpu['fit'] - sum(cpu[k] for k in ('obfuscators', 'encrypt', 'sums', 'compression', 'decrypt'))
    sk = m.active_.sk
    per = _op_seconds(sk.public_key, sk, SB.BIN_BITS)
    kinds = dict(obfuscators='mul_p2', sums='mul_n2', compression='shift', decrypt='decrypt')
    rows = {}
    for k in ('obfuscators', 'encrypt', 'sums', 'compression', 'decrypt', 'rest', 'fit'):
        op = kinds.get(k)
        floor = ops.get(op, 0) * per[op] / T if op else np.nan
        rows[k] = dict(cpu_s=cpu[k] / T, operations=ops.get(op, 0) / T if op else np.nan, op=op or '',
                       us_per_op=per[op] * 1e6 if op else np.nan, floor_s=floor, over_floor=cpu[k] / T / floor if op else np.nan)  # fmt: skip
    print(f"{a.n:,} x 20 synthetic, depth {a.depth}, {a.bins} bins, {a.key}-bit keys, one process, {T} tree(s); "
          f"load average {os.getloadavg()[0]:.1f}. CPU seconds per tree by phase, the modular operations each did, "
          f"and their floor at gmpy2's speed here:\n")  # fmt: skip
    print(pd.DataFrame(rows).T.to_string(float_format=lambda v: f'{v:,.3f}'))
    asked, filled, derived, K = 0, 0, 0, {}
    for msg in m.channel_.messages:  # the slots of the nodes asked for: empty, filled, derived from the nodes' totals
        if msg.kind == 'hist_request':
            K[msg.receiver] = len(msg.payload)
        elif msg.kind == 'hist':
            S, ptr = m.active_.n_slots_of[msg.sender], np.r_[0, np.cumsum(m.active_.n_bins_of[msg.sender] + 1)]
            bits = np.unpackbits(msg.payload['filled'])[: K[msg.sender] * S].reshape(-1, S)
            asked, filled = asked + bits.size, filled + int(bits.sum())
            derived += int((np.add.reduceat(bits, ptr[:-1], axis=1) > 0).sum())  # each feature's last filled slot
    print(f"\nslots of the nodes asked for, a tree: {asked / T:,.0f}; empty, left out: {(asked - filled) / T:,.0f} "
          f"({(asked - filled) / asked:.1%}); each feature's last filled slot, derived by the active party from the "
          f"node's total: {derived / T:,.0f}; sent: {(filled - derived) / T:,.0f}")  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--ab', metavar='OLD_SRC', help='paired CPU ratio against the fedgauss package in OLD_SRC')
    ap.add_argument('--n', type=int, default=4000)
    ap.add_argument('--pairs', type=int, default=6)
    ap.add_argument('--trees', type=int, default=2)
    ap.add_argument('--key', type=int, default=2048)
    ap.add_argument('--depth', type=int, default=6)
    ap.add_argument('--bins', type=int, default=32)
    ap.add_argument('--repeat', type=int, default=1)
    ap.add_argument('--jobs', type=int, default=None, help='with --ab: n_jobs of both fits (-1: every core)')
    ap.add_argument('--multiclass', action='store_true', help='one tree per class against multi-output trees')
    ap.add_argument('--data', choices=('seven', 'digits'), default='seven', help='with --multiclass')
    ap.add_argument('--phases', action='store_true', help='per-phase CPU of a serial fit against its arithmetic floor')
    a = ap.parse_args()
    if a.phases:
        return phases(a)
    if a.ab:
        return ab(a.ab, a)
    if a.multiclass:
        return multiclass(a)
    X, y, Xt, yt = data()
    cores, rows, peer = n_workers(-1), {}, {}
    for rep in range(a.repeat):
        for threads in (1, cores):
            f = fedtree_run(threads, a.trees, a.depth, a.bins)
            if f is not None:
                rows[f'FedTree 1.0.5 HE 512-bit, {threads} thread(s) #{rep}'] = f
                peer.setdefault(threads, []).append(f)
        for key, jobs in ((a.key, 1), (a.key, -1), (512, -1)):
            r, per_tree = ours(X, y, Xt, yt, a.trees, key, a.depth, a.bins, jobs)
            rows[f'fedgauss {key}-bit, {n_workers(jobs)} process(es) #{rep}'] = dict(r, cores=n_workers(jobs))
            if key == a.key and jobs == -1:
                bytes_per_tree = per_tree
    cen = GBDTClassifier(n_estimators=a.trees, max_depth=a.depth, max_bins=a.bins).fit(X, y)
    rows['centralized GBDTClassifier'] = dict(auc=roc_auc_score(yt, cen.predict_proba(Xt)[:, 1]))
    print(
        f"{len(X):,} x {X.shape[1]} synthetic, 10 features per party, depth {a.depth}, {a.bins} bins, {a.trees} trees; "
        f"{cores} cores, load average {os.getloadavg()[0]:.1f} at the end\n"
    )
    t = pd.DataFrame(rows).T.drop(columns=['cores'], errors='ignore')
    print(t.round(3).to_string())
    best = t[t.index.str.contains('#')].copy()  # each configuration's best run (least wall-clock per tree)
    best['config'] = best.index.str.replace(r' #\d+$', '', regex=True)
    best = best.sort_values('wall_per_tree').groupby('config', sort=False).head(1).set_index('config')
    print(f"\nbest of {a.repeat} per configuration, seconds per tree, and ratios to FedTree on the same cores:")
    for c in ('wall_per_tree', 'cpu_per_tree') if peer else ():
        for threads in sorted(peer):
            ref = best.loc[f'FedTree 1.0.5 HE 512-bit, {threads} thread(s)', c]
            best[f'{c.split("_")[0]} / FedTree {threads}t'] = best[c] / ref
    cols = ['wall_per_tree', 'cpu_per_tree'] + [c for c in best if '/ FedTree' in c]
    print(best[cols].sort_index().round(3).to_string())
    if a.repeat > 1:  # the median run too: on a shared machine the best run is the one the others' load spared most
        runs = t[t.index.str.contains('#')].copy()
        runs['config'] = runs.index.str.replace(r' #\d+$', '', regex=True)
        med = runs.groupby('config')[['wall_per_tree', 'cpu_per_tree']].median()
        for threads in sorted(peer):
            med[f'wall / FedTree {threads}t'] = (
                med['wall_per_tree'] / med.loc[f'FedTree 1.0.5 HE 512-bit, {threads} thread(s)', 'wall_per_tree']
            )
        print(f"\nmedian of {a.repeat} per configuration, seconds per tree, and wall-clock ratios to FedTree's median:")
        print(med.sort_index().round(3).to_string())
    one, every = f'fedgauss {a.key}-bit, 1 process(es)', f'fedgauss {a.key}-bit, {cores} process(es)'
    if cores > 1:
        sp = best.loc[one, 'wall_per_tree'] / best.loc[every, 'wall_per_tree']
        print(f"\nspeedup of fedgauss {a.key}-bit on {cores} processes over one: {sp:.2f}x (wall-clock, best of each)")
    for k, r in rows.items():
        if 'parallel_share' in r and r.get('cores') == 1:
            f = r['parallel_share']
            print(f"{k}: {f:.1%} of a tree is work shared out on every core; Amdahl: "
                  f"{1 / ((1 - f) + f / cores):.2f}x on {cores} cores, {1 / ((1 - f) + f / 16):.2f}x on 16")  # fmt: skip
    print("\nfedgauss bytes sent per party per tree (transcript, without the setup):")
    print(bytes_per_tree.astype(int).to_string())


if __name__ == '__main__':
    main()
