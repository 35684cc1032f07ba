"""Benchmark: nFL-GBDT on a9a (LIBSVM train file, 32,561 rows x 123 binary features; 75/25 split), 4 parties with label
skew theta = 0.8, 100 trees of depth 6, 256 bins — seconds (hashing, similarity and boosting separately) and bytes sent
and received per party from the channel transcript, next to the pooled core (fedgauss.gbdt.GBDTClassifier) and XGBoost
(hist, one thread) on the same pooled rows, in one process. Test errors are printed too. The default fit, with hash
functions drawn jointly from the owners' secret generators (`lsh_secret=True`, issues 26 and 28), is timed against the
same fit with the papers' public functions (`lsh_secret=False`; `ratio_to_public_functions`).

    python tests/bench_nflgbdt.py [--parties 4] [--trees 100] [--depth 6] [--repeat 1]
"""

import argparse, os, time

os.environ.setdefault('OMP_NUM_THREADS', '1')
for _v in ('OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ.setdefault(_v, '1')
_shared = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'datasets')
if 'FEDGAUSS_DATA' not in os.environ and os.path.isdir(_shared):
    os.environ['FEDGAUSS_DATA'] = os.path.abspath(_shared)

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from fedgauss.data import load_libsvm
from fedgauss.federation import label_skew_split
from fedgauss.gbdt import GBDTClassifier
from fedgauss.nflgbdt import NFLGBDTClassifier


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--parties', type=int, default=4)
    ap.add_argument('--trees', type=int, default=100)
    ap.add_argument('--depth', type=int, default=6)
    ap.add_argument('--repeat', type=int, default=1)
    a = ap.parse_args()
    X, y = load_libsvm('a9a')
    X, y = X.to_numpy(), y.to_numpy()
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    clients = label_skew_split(Xtr, ytr, n_clients=a.parties, theta=0.8, rng=0)
    kw = dict(n_estimators=a.trees, max_depth=a.depth, max_bins=256)
    err = lambda m: float(np.mean(m.predict(Xte) != yte))
    rows = {}

    def fastest(**extra):
        best = None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            m = NFLGBDTClassifier(rng=0, **kw, **extra).fit(clients)
            t = time.perf_counter() - t0
            if best is None or t < best[0]:
                best = (t, m)
        return best

    tp, mp = fastest(lsh_secret=False)
    t, m = fastest()  # the default: the owners' secret hash functions
    rows['nFL-GBDT'] = dict(seconds=t, **m.timings_, test_error=err(m))
    rows['nFL-GBDT, public hash functions'] = dict(seconds=tp, **mp.timings_, test_error=err(mp))
    t0 = time.perf_counter()
    core = GBDTClassifier(**kw).fit(Xtr, ytr)
    rows['pooled core'] = dict(seconds=time.perf_counter() - t0, test_error=err(core))
    try:
        import xgboost as xgb

        t0 = time.perf_counter()
        xm = xgb.XGBClassifier(
            n_estimators=a.trees, max_depth=a.depth, learning_rate=0.3, max_bin=256, tree_method='hist', n_jobs=1
        ).fit(Xtr, ytr)
        rows['xgboost (1 thread)'] = dict(
            seconds=time.perf_counter() - t0, test_error=float(np.mean(xm.predict(Xte) != yte))
        )
    except ImportError:
        pass
    tab = pd.DataFrame(rows).T
    tab['ratio_to_pooled_core'] = tab['seconds'] / tab.loc['pooled core', 'seconds']
    tab['ratio_to_public_functions'] = tab['seconds'] / tab.loc['nFL-GBDT, public hash functions', 'seconds']
    print(f"a9a train {len(Xtr)} rows, {a.parties} parties (theta=0.8), {a.trees} trees, depth {a.depth}")
    print(tab.round(4).to_string())
    per = m.channel_.bytes_by_party()
    per['rows'] = pd.Series({p.name: p.n_rows for p in m.parties_})
    print('\nbytes per party (nFL-GBDT transcript):')
    print(per.to_string())
    tr = m.channel_.transcript
    print('\nbytes by message kind:')
    print(tr.groupby('kind')['bytes'].agg(['sum', 'count']).to_string())
    print('\nrounds:', m.channel_.round, ' total bytes:', int(tr['bytes'].sum()))
    shares, pub = tr[tr.kind == 'hash key share'], mp.channel_.transcript
    print(
        f"secret hash functions (the default): {int(shares['bytes'].sum())} bytes of key shares in {len(shares)} "
        f"messages; {int(tr['bytes'].sum())} bytes in all against {int(pub['bytes'].sum())} with public functions "
        f"(other functions, other trees); hashing {m.timings_['hashing']:.3f} s against {mp.timings_['hashing']:.3f} s; "
        f"the whole fit {t:.2f} s against {tp:.2f} s"
    )


if __name__ == '__main__':
    main()
