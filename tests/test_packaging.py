"""Packaging: the wheel builds from settings.ini/setup.py, contains every exported module and the
console script, and the installed wheel imports without the source tree."""

import subprocess, sys, zipfile
from pathlib import Path

import pytest
from conftest import ROOT

MODULES = sorted(p.stem for p in (ROOT / 'fedgauss').glob('*.py') if not p.stem.startswith('_'))


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp('wheel')
    r = subprocess.run(
        [sys.executable, '-m', 'pip', 'wheel', '--no-deps', '--no-build-isolation', '-q', '-w', str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    (whl,) = out.glob('fedgauss-*.whl')
    return whl


def test_wheel_contents(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    for m in MODULES + ['_modidx', '__init__']:
        assert f'fedgauss/{m}.py' in names, m
    ep = next(n for n in names if n.endswith('entry_points.txt'))
    text = zipfile.ZipFile(wheel).read(ep).decode()
    assert 'fedgauss = fedgauss.cli:main' in text.replace('=', ' = ').replace('  ', ' ')
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith('METADATA'))).decode()
    for req in ('numpy', 'scipy', 'pandas', 'scikit-learn', 'matplotlib', 'seaborn'):
        assert f'Requires-Dist: {req}' in meta, req
    assert 'nbdev==2.4.14' in meta and 'fastcore==1.14.5' in meta and 'execnb==0.1.16' in meta


def test_installed_wheel_imports(wheel, tmp_path):
    target = tmp_path / 'site'
    r = subprocess.run(
        [sys.executable, '-m', 'pip', 'install', '--no-deps', '-q', '--target', str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    code = (
        'import sys; sys.path.insert(0, sys.argv[1]); import fedgauss, fedgauss.federation, fedgauss.data, fedgauss.cli; '
        'print(fedgauss.__file__)'
    )
    r = subprocess.run(
        [sys.executable, '-c', code, str(target)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).is_relative_to(target), r.stdout


def test_version_matches_settings():
    import configparser, fedgauss

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / 'settings.ini')
    assert fedgauss.__version__ == cfg['DEFAULT']['version']
