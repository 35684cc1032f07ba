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


def test_demo_runs_on_a_fresh_install(tmp_path):
    r = fedgauss_cmd('demo', '--out', str(tmp_path / 'demo.png'), '--t-max', '10', cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert '30 of 30 lambdas identical to pooled ExpYJ' in r.stdout
    assert 'the server only sends' in r.stdout and 'Nothing else' in r.stdout
    assert (tmp_path / 'demo.png').stat().st_size > 10_000
    assert 'SecureFedYJ' in r.stderr                        # the progress bar


def _csv(tmp_path, **edits):
    import numpy as np, pandas as pd
    g = np.random.default_rng(0)
    df = pd.DataFrame({'hospital': np.repeat(['north', 'south', 'east'], [50, 30, 20]),
                       'age': g.gamma(5, 10, 100), 'dose': g.lognormal(0, 1, 100), 'delta': g.normal(0, 3, 100)})
    for k, v in edits.items(): df[k] = v
    p = tmp_path / 'in.csv'; df.to_csv(p, index=False)
    return p, df


def test_yj_writes_the_gaussianized_csv(tmp_path):
    import pandas as pd
    p, df = _csv(tmp_path)
    r = fedgauss_cmd('yj', str(p), '--client-column', 'hospital', '--out', str(tmp_path / 'out.csv'))
    assert r.returncode == 0, r.stderr
    out = pd.read_csv(tmp_path / 'out.csv')
    assert list(out.columns) == list(df.columns) and (out['hospital'] == df['hospital']).all()
    assert abs(out[['age', 'dose', 'delta']].mean()).max() < 1e-9
    r = fedgauss_cmd('yj', str(p), '--clients', '4', '--t-max', '8', cwd=tmp_path)
    assert r.returncode == 2 and "non-numeric feature column(s): 'hospital'" in r.stderr


@pytest.mark.parametrize('argv,edits,msg', [
    (['--client-column', 'site'], {}, "unknown column 'site'"),
    (['--client-column', 'hospital'], {'dose': 'x'}, "non-numeric feature column(s): 'dose'"),
    (['--client-column', 'hospital'], {'age': float('nan')}, "'age' contain NaN"),
    (['--client-column', 'hospital'], {'delta': float('inf')}, "'delta' contain inf"),
    (['--clients', '500'], {'hospital': 1.0}, 'a client would have no rows'),
    ([], {}, 'exactly one of'),
])
def test_yj_bad_input_is_one_line_and_writes_nothing(tmp_path, argv, edits, msg):
    p, _ = _csv(tmp_path, **edits)
    r = fedgauss_cmd('yj', str(p), *argv, '--out', str(tmp_path / 'out.csv'))
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr
    assert not (tmp_path / 'out.csv').exists()
