"""The installed `fedgauss` console script, run as a user runs it."""
import shutil, subprocess, sys

import pytest

import fedgauss


def fedgauss_cmd(*args, **kw):
    exe = shutil.which('fedgauss')
    cmd = [exe] if exe else [sys.executable, '-c', 'import sys; from fedgauss.cli import main; sys.exit(main(sys.argv[1:]))']
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=600, **kw)


def test_version():
    r = fedgauss_cmd('--version')
    assert r.returncode == 0
    assert r.stdout.strip() == f'fedgauss {fedgauss.__version__}'


def test_help_lists_commands():
    r = fedgauss_cmd('--help')
    assert r.returncode == 0 and 'datasets' in r.stdout


def test_datasets_all_ok():
    r = fedgauss_cmd('datasets')
    assert r.returncode == 0, r.stderr
    assert '11 ok' in r.stdout and 'checksum mismatch' not in r.stdout


def test_datasets_mismatch_exit_code(tmp_path):
    (tmp_path / 'adult.data.gz').write_bytes(b'\x1f\x8b garbage')
    r = fedgauss_cmd('datasets', '--data-home', str(tmp_path))
    # a file that is not even valid gzip must still give a one-line error, not a traceback
    assert r.returncode in (1, 2), r.stderr
    assert 'Traceback' not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_unknown_command():
    r = fedgauss_cmd('frobnicate')
    assert r.returncode == 2 and 'invalid choice' in r.stderr
