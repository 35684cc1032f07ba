"""Benchmark (issue 17): SecureBoost prediction by the `secureboost_predict` per-party programs against the single
driver it replaced, paired, in one process. The single driver is this repository's `fedgauss/secureboost.py` at git
revision REF (84abe4e: main before the programs), loaded beside the package as `fedgauss._secureboost_ref`; both
estimators fit the same federation (3 parties, labels in the middle, 512-bit test keys: fitting is not timed), then
`decision_function` on the same rows runs alternately (which goes first alternates), CPU time per call. Checks on the
way that the margins are equal bit for bit and each pair of parties exchanged the same messages, payloads included.

    python tests/bench_secureboost_predict.py [--ref 84abe4e] [--n 20000] [--trees 10] [--depth 5] [--pairs 9]
        [--missing learn|impute|probabilistic]
"""

import argparse, importlib.util, os, subprocess, sys, tempfile, time

for _v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_v, '1')

import numpy as np

import fedgauss
from fedgauss.federation import vertical_split
from fedgauss.secureboost import SecureBoostClassifier
from fedgauss.smc import PROTOCOLS


def load_ref(ref: str):
    "The single driver's module at git revision `ref`, as `fedgauss._secureboost_ref` (the rest of the package shared)."
    root = os.path.dirname(os.path.dirname(os.path.abspath(fedgauss.__file__)))
    src = subprocess.run(['git', '-C', root, 'show', f'{ref}:fedgauss/secureboost.py'], capture_output=True, check=True)
    path = os.path.join(tempfile.mkdtemp(), '_secureboost_ref.py')
    open(path, 'wb').write(src.stdout)
    keep = dict(PROTOCOLS)
    spec = importlib.util.spec_from_file_location('fedgauss._secureboost_ref', path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    PROTOCOLS.clear()
    PROTOCOLS.update(keep)  # the reference registered its own 'secureboost': this checkout's stays
    return mod


def data(n: int, F: int = 12, seed: int = 0):
    r = np.random.default_rng(seed)
    X = r.normal(size=(2000 + n, F))
    X[r.random(X.shape) < 0.05] = np.nan
    y = (np.nan_to_num(X) @ r.normal(size=F) + r.logistic(size=len(X)) > 0).astype(int)
    return X[:2000], y[:2000], X[2000:]


def fingerprint(p):
    "A payload's content: its arrays' dtype, shape and bytes."
    if isinstance(p, dict):
        return tuple((k, fingerprint(v)) for k, v in sorted(p.items()))
    return (str(p.dtype), p.shape, p.tobytes()) if isinstance(p, np.ndarray) else repr(p)


def pairs_of(messages):
    "Each (sender, receiver)'s messages in order: kind, bytes, payload."
    seq = {}
    for m in messages:
        seq.setdefault((m.sender, m.receiver), []).append((m.kind, m.nbytes, fingerprint(m.payload)))
    return seq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ref', default='84abe4e')
    ap.add_argument('--n', type=int, default=20000)
    ap.add_argument('--trees', type=int, default=10)
    ap.add_argument('--depth', type=int, default=5)
    ap.add_argument('--pairs', type=int, default=9)
    ap.add_argument('--missing', default='learn')
    a = ap.parse_args()
    ref = load_ref(a.ref)
    X, y, Xt = data(a.n)
    groups = [list(range(0, 4)), list(range(4, 8)), list(range(8, 12))]
    kw = dict(n_estimators=a.trees, max_depth=a.depth, max_bins=32, missing=a.missing, key_size=512, unsafe=True, rng=0)
    new = SecureBoostClassifier(**kw).fit(vertical_split(X, groups, y, label_party=1))
    old = ref.SecureBoostClassifier(**kw).fit(vertical_split(X, groups, y, label_party=1))
    blocks = [Xt[:, g] for g in groups]
    times = {'programs': [], 'single driver': []}
    for i in range(a.pairs):
        for name in ('programs', 'single driver') if i % 2 else ('single driver', 'programs'):
            est = new if name == 'programs' else old
            k, c0 = len(est.channel_.messages), time.process_time()
            m = est.decision_function(blocks)
            times[name].append(time.process_time() - c0)
            if i == 0:
                est._m, est._msgs = m, est.channel_.messages[k:]
    assert new._m.tobytes() == old._m.tobytes(), 'margins differ'
    assert pairs_of(new._msgs) == pairs_of(old._msgs), 'messages differ'
    ratio = np.median(np.array(times['programs']) / np.array(times['single driver']))
    print(
        f"{a.n} rows x 12 features, 3 parties, {a.trees} trees of depth {a.depth}, missing={a.missing!r}: margins "
        f"identical, {len(new._msgs)} messages identical per pair of parties"
    )
    for k, v in times.items():
        print(f"  {k:14s} CPU s per call: median {np.median(v):.4f}  (min {min(v):.4f}, max {max(v):.4f})")
    print(f"  programs / single driver, median of {a.pairs} paired ratios: {ratio:.3f}")


if __name__ == '__main__':
    main()
