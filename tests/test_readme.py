"""README.md is generated from nbs/index.ipynb and shows the commands CI runs."""

import re, subprocess, sys

from conftest import ROOT


def test_readme_is_fresh():
    r = subprocess.run(
        [sys.executable, str(ROOT / 'tools' / 'make_readme.py'), '--check'], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr


def test_readme_commands():
    text = (ROOT / 'README.md').read_text()
    assert 'pip install -e ".[dev]" && pytest' in text
    assert re.search(r'^pip install \. && fedgauss demo$', text, re.M)  # the main job
    # .ci/run runs the README's own test command
    assert (
        'pip install -e ".[dev]" && pytest' in (ROOT / '.ci' / 'run').read_text()
        or 'README' in (ROOT / '.ci' / 'run').read_text()
    )


def test_quarto_config():
    q, link = ROOT / '_quarto.yml', ROOT / 'nbs' / '_quarto.yml'
    assert q.is_file() and link.exists() and link.resolve() == q.resolve()
    assert 'metadata-files: [nbdev.yml, sidebar.yml]' in q.read_text()


def test_status_table_is_current():
    "A method marked 'planned' in the README's table must not have its notebook yet, and an 'available' one must."
    text = (ROOT / 'README.md').read_text()
    rows = [
        r for r in text.splitlines() if r.startswith('| ') and r.rstrip().endswith(('| available |', '| planned |'))
    ]
    assert len(rows) >= 8
    for r in rows:
        nbs = re.findall(r'`(\d\d[a-z]?_\w+)`', r)
        exists = [(ROOT / 'nbs' / f'{n}.ipynb').exists() for n in nbs]
        if r.rstrip().endswith('| available |'):
            assert nbs and all(exists), r
        else:
            assert not any(exists), r
