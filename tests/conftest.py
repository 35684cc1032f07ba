"""Shared pytest setup: the data directory, the repository paths, and skips for missing resources.

The README's test command must pass on a bare machine (only Python). Tests that need something a bare
machine may lack skip with a reason that says how to get it:
- a real dataset that is neither in the data directory nor downloadable (`fedgauss.data.DataUnavailable`);
- Debian's Chromium and npm, for the docs build and its browser check (`tests/test_docs.py`);
- the `flower` extra (flwr, Ray, cryptography), for the Flower tests (`tests/test_flower*.py`);
- the `docs` extra (Sphinx, myst-nb, the theme, websocket-client), for the docs test (`tests/test_docs.py`).
CI has all of them and sets FEDGAUSS_REQUIRE_ALL=1 (`.ci/run`): then each of these skips is a failure.
"""

import importlib.util, os, shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'

# The documented places of the real datasets: $FEDGAUSS_DATA if set, else the repository's sibling
# shared/datasets if it exists, else the loaders' default (~/.cache/fedgauss, downloading what is missing).
if 'FEDGAUSS_DATA' not in os.environ and (ROOT.parent / 'shared' / 'datasets').is_dir():
    os.environ['FEDGAUSS_DATA'] = str(ROOT.parent / 'shared' / 'datasets')
os.environ.setdefault('MPLBACKEND', 'Agg')

REQUIRE_ALL = os.environ.get('FEDGAUSS_REQUIRE_ALL', '') not in ('', '0')


def skip_or_fail(reason: str):
    "Skip the current test for a missing resource, or fail it when CI asks for every resource."
    if REQUIRE_ALL:
        pytest.fail(f'{reason} (FEDGAUSS_REQUIRE_ALL is set, so this is a failure, not a skip)')
    pytest.skip(reason)


def require_tools(*names: str):
    "Skip (or fail under FEDGAUSS_REQUIRE_ALL) unless every program in `names` is on PATH."
    missing = [n for n in names if not shutil.which(n)]
    if missing:
        skip_or_fail(f"needs {' and '.join(missing)} on PATH (Debian: apt-get install -y {' '.join(missing)})")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    "A test that reaches for a dataset this machine has no copy of and cannot download is skipped, not failed."
    from fedgauss.data import DataUnavailable

    try:
        return (yield)
    except DataUnavailable as e:
        skip_or_fail(f'dataset not available: {e}')


FLOWER_MISSING = [m for m in ('flwr', 'ray', 'cryptography') if importlib.util.find_spec(m) is None]
DOCS_MISSING = [
    m for m in ('sphinx', 'myst_nb', 'pydata_sphinx_theme', 'websocket') if importlib.util.find_spec(m) is None
]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    from fedgauss.data import DataUnavailable

    if FLOWER_MISSING and Path(str(item.fspath)).name.startswith('test_flower'):
        skip_or_fail(
            f"the flower extra is not installed (no {', '.join(FLOWER_MISSING)}): pip install -e '.[dev,flower]'"
        )
    if DOCS_MISSING and Path(str(item.fspath)).name == 'test_docs.py':
        skip_or_fail(f"the docs extra is not installed (no {', '.join(DOCS_MISSING)}): pip install -e '.[dev,docs]'")
    try:
        return (yield)
    except DataUnavailable as e:
        skip_or_fail(f'dataset not available: {e}')


# Property tests explore a fixed sequence of examples, so a CI run is reproducible; a failure found once is
# kept as an explicit regression test next to the property that found it.
from hypothesis import settings as _hyp_settings

_hyp_settings.register_profile('fedgauss', derandomize=True, deadline=None)
_hyp_settings.load_profile('fedgauss')


def pytest_collection_modifyitems(config, items):
    """Tests that must not run side by side go to one worker each: the Flower tests (two Ray clusters or deployments at
    once overload 2 cores) and the packaging tests (their wheel builds share the checkout's build/ directory)."""
    for item in items:
        name = Path(str(item.fspath)).name
        if name.startswith('test_flower'):
            item.add_marker(pytest.mark.xdist_group('flower'))
        elif name == 'test_packaging.py':
            item.add_marker(pytest.mark.xdist_group('packaging'))


class StoppedRun:
    """A federated run that stops after `n` program steps (`stop_run_after` below): every `fedgauss.smc.Program` made
    from now on is recorded in `made`; step n + 1 calls `on_stop()` (if given) and raises RuntimeError('the run stops
    here'), leaving the parties' programs suspended at their waits, as a node that dies or an interpreter that exits
    would."""

    def __init__(self, monkeypatch, n: int, on_stop=None):
        import fedgauss.smc as smc

        self.made, self.steps = [], 0
        init, step = smc.Program.__init__, smc.Program.step

        def record(prog, *a, **k):
            init(prog, *a, **k)
            self.made.append(prog)

        def stop(prog, inbox):
            self.steps += 1
            if self.steps > n:
                if on_stop is not None:
                    on_stop()
                raise RuntimeError('the run stops here')
            return step(prog, inbox)

        monkeypatch.setattr(smc.Program, '__init__', record)
        monkeypatch.setattr(smc.Program, 'step', stop)

    def suspended(self, program: str) -> list:
        "The generators of the recorded programs named `program` (their function's name) still suspended."
        return [p.gen for p in self.made if p.gen.gi_frame is not None and p.gen.gi_code.co_name == program]


@pytest.fixture
def stop_run_after(monkeypatch):
    "`run = stop_run_after(n, on_stop=None)`: the next federated run stops after n program steps (`StoppedRun`)."
    return lambda n, on_stop=None: StoppedRun(monkeypatch, n, on_stop)
