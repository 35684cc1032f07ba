"""README.md is generated from nbs/index.ipynb and shows the commands CI runs."""
import re, subprocess, sys

from conftest import ROOT


def test_readme_is_fresh():
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'make_readme.py'), '--check'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_readme_commands():
    text = (ROOT / 'README.md').read_text()
    assert 'pip install -e ".[dev]" && pytest' in text
    assert re.search(r'^pip install \. && fedgauss \w+', text, re.M)
    # .ci/run runs the README's own test command
    assert 'pip install -e ".[dev]" && pytest' in (ROOT / '.ci' / 'run').read_text() or 'README' in (ROOT / '.ci' / 'run').read_text()


def test_quarto_config():
    q, link = ROOT / '_quarto.yml', ROOT / 'nbs' / '_quarto.yml'
    assert q.is_file() and link.exists() and link.resolve() == q.resolve()
    assert 'metadata-files: [nbdev.yml, sidebar.yml]' in q.read_text()
