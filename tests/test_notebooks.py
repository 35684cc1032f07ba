"""Every notebook is a test: run it the way `nbdev_test` does (nbdev.test.test_nb, skipping the
cells flagged in `tst_flags`), one pytest test per notebook, each in its own process."""

import os, subprocess, sys

import pytest
from conftest import NBS, ROOT, skip_or_fail

NOTEBOOKS = sorted(p for p in NBS.glob('*.ipynb') if not p.name.startswith('_'))

_RUNNER = """
import sys
from pathlib import Path
from nbdev.config import get_config
from nbdev.test import test_nb
cfg = get_config()
ok, secs = test_nb(Path(sys.argv[1]), skip_flags=cfg.tst_flags.split(), basepath=cfg.config_path, showerr=True)
print(f'{Path(sys.argv[1]).name}: {secs:.1f} s')
sys.exit(0 if ok else 1)
"""


@pytest.mark.parametrize('nb', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook(nb):
    env = dict(os.environ, MPLBACKEND='Agg', PYTHONWARNINGS='ignore::DeprecationWarning')
    r = subprocess.run(
        [sys.executable, '-c', _RUNNER, str(nb)], cwd=NBS, env=env, capture_output=True, text=True, timeout=1800
    )
    if r.returncode and 'DataUnavailable' in r.stderr:  # a real dataset neither present nor downloadable
        line = next((l for l in r.stderr.splitlines() if 'DataUnavailable' in l), '')
        skip_or_fail(f"{nb.name} needs a dataset this machine lacks: {line.strip()[:300]}")
    assert r.returncode == 0, f'{nb.name} failed:\n{r.stderr[-6000:]}\n{r.stdout[-2000:]}'


def test_every_notebook_is_found():
    names = {p.stem for p in NOTEBOOKS}
    assert {'index', '00_federation', '01_data', '02_cli'} <= names
