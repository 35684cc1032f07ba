"""A party's program is a generator suspended at its waits. When it is closed while suspended (a node that keeps a
run's programs in memory, at interpreter exit, after the module's names have been cleared), Python throws
`GeneratorExit` into it and evaluates the `except` clauses around the wait in order: a clause naming a module-level
exception class then raises `TypeError: catching classes that do not inherit from BaseException` (printed as
"Exception ignored in: <generator object dpgbdt_client ...>" after the Flower tests). A clause
`except GeneratorExit: raise` before it keeps the module's name from being looked up."""

import ast, builtins
from pathlib import Path

import numpy as np

import fedgauss

PKG = Path(fedgauss.__file__).parent


def _unsafe_handlers(src: str) -> list:
    "(line, function, handler) of each `except` naming a non-builtin class around a `yield`, with no `except GeneratorExit` before it."
    out = []
    for fn in ast.walk(ast.parse(src)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for t in ast.walk(fn):
            if not isinstance(t, ast.Try):
                continue
            if not any(isinstance(n, (ast.Yield, ast.YieldFrom)) for s in t.body for n in ast.walk(s)):
                continue
            for h in t.handlers:
                names = [] if h.type is None else (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
                if any(isinstance(n, ast.Name) and n.id == 'GeneratorExit' for n in names):
                    break
                if any(not (isinstance(n, ast.Name) and hasattr(builtins, n.id)) for n in names):
                    out.append((h.lineno, fn.name, ast.unparse(h.type)))
                    break
    return out


def test_the_check_finds_the_pattern_it_looks_for():
    bad = "def g():\n    try:\n        yield 1\n    except Stop:\n        pass\n"
    good = "def g():\n    try:\n        yield 1\n    except GeneratorExit:\n        raise\n    except Stop:\n        pass\n"
    plain = "def f():\n    try:\n        return 1\n    except Stop:\n        pass\n"
    assert _unsafe_handlers(bad) == [(4, 'g', 'Stop')]
    assert _unsafe_handlers(good) == [] and _unsafe_handlers(plain) == []


def test_no_program_looks_up_a_module_name_when_closed():
    found = {f.name: h for f in sorted(PKG.glob('*.py')) if (h := _unsafe_handlers(f.read_text()))}
    assert not found, f"add `except GeneratorExit: raise` before these handlers: {found}"


def test_a_dpgbdt_client_closed_mid_run_after_its_module_was_cleared(monkeypatch, stop_run_after):
    "The run stops after a few steps; its clients, suspended in their trees, close cleanly with `_Dropped` gone."
    import fedgauss.dpgbdt_programs as dpp
    from fedgauss.dpgbdt import DPGBDTClassifier
    from fedgauss.federation import iid_split

    run = stop_run_after(12)
    X = np.random.default_rng(5).normal(size=(600, 4))
    clients = iid_split(X, (X[:, 0] + X[:, 1] > 0).astype(int), 3, rng=5)
    kw = dict(n_estimators=4, max_depth=3, ih_rounds=1, n_candidates=8, rng=5, feature_bounds=(-5, 5), max_rows=3000)
    try:
        DPGBDTClassifier(**kw).fit(clients)
    except RuntimeError:
        pass
    gens = run.suspended('dpgbdt_client')
    assert len(gens) == 3  # suspended inside their trees
    monkeypatch.setattr(dpp, '_Dropped', None)  # what interpreter exit does to the module's names
    for g in gens:
        g.close()  # before the fix: TypeError: catching classes that do not inherit from BaseException
