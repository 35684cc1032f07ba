"""ExpYJ's search as it was, kept (issue 32, "exp_yj" at 0.15x PowerTransformer): the lambdas, the search path and the
revealed signs of

- every `exp_yj_search` call that tests/test_yeojohnson.py and tests/test_sklearn_power_transformer.py make (through
  `exp_yj`, `YeoJohnsonTransformer.fit` or directly), as SHA-256 digests keyed by the SHA-256 of the call's input
  (the holders' rows and anchors, t_max, ymax, accelerate, branching): `data/yj_paths.json`;
- named data sets (the bench's 100,000 x 50, breast cancer, the numeric columns of Adult, credit default and bank),
  in full: `data/yj_paths.npz`;

recorded on main (f6b38cd) before the sums' reductions became matrix products (their last bits changed; the searches
must not). The test files check every call against the digests through `check_paths` (an autouse fixture); inputs
the record does not hold (hypothesis' random examples) are not checked.

    python tests/yj_paths.py record     # (re)record both files with this checkout's code (only on the reference!)
    python tests/yj_paths.py check      # compare the named data sets with the record, feature by feature
"""

import hashlib, json, os, sys, warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / 'data' / 'yj_paths.json'
NAMED = HERE / 'data' / 'yj_paths.npz'
RECORD = os.environ.get('FEDGAUSS_RECORD_YJ_PATHS', '') not in ('', '0')  # record instead of check (on the reference)


def _sha(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a, dtype=np.float64)
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def input_key(holders, t_max, ymax, accelerate, branching) -> str:
    "SHA-256 of what a search depends on: each holder's rows and anchors, and the search's parameters."
    h = hashlib.sha256()
    for d in holders:
        a = d.anchors
        h.update(d._paths_key.encode())
        h.update(_sha(a.pos_lo, a.pos_hi, a.neg_lo, a.neg_hi).encode())
    h.update(repr((int(t_max), float(ymax), bool(accelerate), int(branching))).encode())
    return h.hexdigest()[:32]


def output_key(res) -> str:
    "SHA-256 of the search's lambdas, path and signs."
    return _sha(res.lambdas, res.path, res.signs)[:32]


def load_digests() -> dict:
    return json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}


def patch_search(monkeypatch, seen: dict, module=None):
    """Wrap `YJData.__init__` (to key each holder by its rows) and `exp_yj_search` (to record each call's input and
    output keys in `seen`), in fedgauss.yeojohnson and in `module` (a test module that imported it by name)."""
    import fedgauss.yeojohnson as Y

    init, search = Y.YJData.__init__, Y.exp_yj_search

    def keyed_init(self, X, anchors=None):
        self._paths_key = _sha(np.asarray(X, dtype=np.float64))
        init(self, X, anchors)

    def recorded_search(holders, t_max=128, ymax=Y.YMAX, accelerate=True, names=None, branching=1):
        holders = list(holders)
        res = search(holders, t_max, ymax, accelerate, names, branching)
        if all(hasattr(h, '_paths_key') for h in holders):
            seen.setdefault(input_key(holders, t_max, ymax, accelerate, branching), []).append(output_key(res))
        return res

    monkeypatch.setattr(Y.YJData, '__init__', keyed_init)
    monkeypatch.setattr(Y, 'exp_yj_search', recorded_search)
    if module is not None and getattr(module, 'exp_yj_search', None) is search:
        monkeypatch.setattr(module, 'exp_yj_search', recorded_search)


def check_paths(monkeypatch, module=None):
    """Generator for an autouse fixture: every search of the test compared with the record (or recorded, with
    FEDGAUSS_RECORD_YJ_PATHS=1). Yields the dict of the test's searches."""
    seen = {}
    patch_search(monkeypatch, seen, module)
    yield seen
    if RECORD:
        old = load_digests()
        for k, v in seen.items():
            old[k] = v[0]
        DIGESTS.write_text(json.dumps(old, indent=0, sort_keys=True) + '\n')
        return
    ref = load_digests()
    bad = [k for k, v in seen.items() if k in ref and any(o != ref[k] for o in v)]
    assert not bad, f"{len(bad)} of the test's ExpYJ searches changed their lambdas, path or signs (tests/yj_paths.py)"


# ------------------------------------------------------------------ the named data sets
def _makers() -> dict:
    from fedgauss.data import load_adult, load_bank, load_breast_cancer, load_credit_default, make_skewed_features

    numeric = lambda X: X.select_dtypes('number').to_numpy(dtype=np.float64)
    return {
        'bench 100,000 x 50 (seed 0)': lambda: make_skewed_features(100_000, 50, rng=0),
        'securefedyj bench 100,000 x 30 (seed 0)': lambda: make_skewed_features(100_000, 30, rng=0),
        'breast cancer': lambda: load_breast_cancer()[0].to_numpy(),
        'adult (train, numeric)': lambda: numeric(load_adult('train')[0]),
        'adult (test, numeric)': lambda: numeric(load_adult('test')[0]),
        'credit default': lambda: numeric(load_credit_default()[0]),
        'bank full (numeric)': lambda: numeric(load_bank('full')[0]),
        'bank additional (numeric)': lambda: numeric(load_bank('additional')[0]),
    }


NAMES = list(_makers())  # the named data sets


def named_input(name: str) -> np.ndarray:
    "A named data set as a float64 array (numeric columns only); `DataUnavailable` if this machine has no copy."
    return _makers()[name]()


def named_inputs() -> dict:
    "The named data sets this machine has: name -> float64 array."
    from fedgauss.data import DataUnavailable

    out = {}
    for k in NAMES:
        try:
            out[k] = named_input(k)
        except DataUnavailable:
            print(f"{k}: not available here")
    return out


def fit(X):
    from fedgauss.yeojohnson import exp_yj

    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return exp_yj(X, full_output=True)


def record_named():
    arrays = {}
    for name, X in named_inputs().items():
        r = fit(X)
        for f in ('lambdas', 'path', 'signs'):
            arrays[f'{name}|{f}'] = getattr(r, f)
        arrays[f'{name}|input'] = np.frombuffer(bytes.fromhex(_sha(X)), dtype=np.uint8)
        print(f"{name}: {X.shape}, {len(r.signs)} steps")
    np.savez_compressed(NAMED, **arrays)


def compare_named(name, X) -> str:
    "'' if the fit of X has the recorded lambdas, path and signs; else what differs (features and first step)."
    with np.load(NAMED) as z:
        ref = {f: z[f'{name}|{f}'] for f in ('lambdas', 'path', 'signs', 'input')}
    if bytes(ref['input']).hex() != _sha(X):
        return f"{name}: the input is not the one recorded"
    r = fit(X)
    msg = []
    for f in ('lambdas', 'path', 'signs'):
        a, b = getattr(r, f), ref[f]
        if a.shape != b.shape:
            msg.append(f"{f}: shape {a.shape} instead of {b.shape}")
        elif not np.array_equal(a, b):
            diff = (a != b).reshape(len(a), -1) if a.ndim > 1 else (a != b)[None]
            cols = np.flatnonzero(diff.any(0))
            first = int(np.flatnonzero(diff.any(1))[0])
            msg.append(f"{f}: features {cols.tolist()} differ (first at row {first})")
    return f"{name}: " + '; '.join(msg) if msg else ''


if __name__ == '__main__':
    sys.path.insert(0, str(HERE.parent))
    if sys.argv[1:] == ['record']:
        record_named()
        print(
            "now record the test files' searches: FEDGAUSS_RECORD_YJ_PATHS=1 pytest -n 0 -q -p no:randomly "
            "tests/test_yeojohnson.py tests/test_sklearn_power_transformer.py"
        )
    else:
        for name, X in named_inputs().items():
            print(compare_named(name, X) or f"{name}: identical lambdas, path and signs")
