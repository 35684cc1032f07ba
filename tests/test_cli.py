"""The installed `fedgauss` console script, run as a user runs it."""

import shutil, subprocess, sys

import pytest

import fedgauss


def fedgauss_cmd(*args, **kw):
    exe = shutil.which('fedgauss')
    cmd = (
        [exe]
        if exe
        else [sys.executable, '-c', 'import sys; from fedgauss.cli import main; sys.exit(main(sys.argv[1:]))']
    )
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=600, **kw)


def test_version():
    r = fedgauss_cmd('--version')
    assert r.returncode == 0
    assert r.stdout.strip() == f'fedgauss {fedgauss.__version__}'


def test_help_lists_commands():
    r = fedgauss_cmd('--help')
    assert r.returncode == 0 and 'datasets' in r.stdout


def test_datasets_all_ok():
    from fedgauss.data import DATASETS, fetch_file

    for files in DATASETS.values():
        for f in files:
            fetch_file(f.name)  # present or downloadable, else the test is skipped (conftest)
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
    r = fedgauss_cmd('demo', '--out', str(tmp_path / 'demo.png'), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    diff = float(r.stdout.split('max relative difference ')[1].split()[0])
    assert diff < 1e-12  # lambdas: SecureFedYJ = pooled ExpYJ to float resolution
    assert 'warning' not in r.stderr
    assert 'the server only sends' in r.stdout and 'Nothing else' in r.stdout
    assert (tmp_path / 'demo.png').stat().st_size > 10_000
    assert 'SecureFedYJ' in r.stderr  # the progress bar


def _csv(tmp_path, **edits):
    import numpy as np, pandas as pd

    g = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            'hospital': np.repeat(['north', 'south', 'east'], [50, 30, 20]),
            'age': g.gamma(5, 10, 100),
            'dose': g.lognormal(0, 1, 100),
            'delta': g.normal(0, 3, 100),
        }
    )
    for k, v in edits.items():
        df[k] = v
    p = tmp_path / 'in.csv'
    df.to_csv(p, index=False)
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
    assert r.returncode == 2 and "non-numeric column(s) 'hospital': keep them untouched with --pass-through" in r.stderr


@pytest.mark.parametrize(
    'argv,edits,msg',
    [
        (['--client-column', 'site'], {}, "unknown column(s) 'site'; the CSV has 4 columns: 'hospital', 'age'"),
        (['--client-column', 'hospital'], {'dose': 'x'}, "non-numeric column(s) 'dose'"),
        (['--client-column', 'hospital'], {'age': float('nan')}, "missing values (NaN): age: 100"),
        (['--client-column', 'hospital'], {'delta': float('inf')}, "infinite values: delta: 100"),
        (['--clients', '500', '--exclude', 'hospital'], {}, 'a client would have no rows'),
        (['--clients', '2', '--columns', 'age,nope'], {}, "unknown column(s) 'nope'"),
        (['--clients', '2', '--figure', 'f.jpg'], {}, 'must be a .png file'),
        ([], {}, 'exactly one of'),
    ],
)
def test_yj_bad_input_is_one_line_and_writes_nothing(tmp_path, argv, edits, msg):
    p, _ = _csv(tmp_path, **edits)
    r = fedgauss_cmd('yj', str(p), *argv, '--out', str(tmp_path / 'out.csv'))
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr
    assert not (tmp_path / 'out.csv').exists()


REAL_CSVS = {  # the three files, each with the options it needs
    'credit': ('UCI_Credit_Card.csv', ['--clients', '3', '--exclude', 'ID,default.payment.next.month'], 23),
    'bank': ('bank-full.csv', ['--client-column', 'job', '--pass-through'], 7),
    'adult': ('adult.data', ['--no-header', '--clients', '3', '--pass-through', '--exclude', '2'], 5),
}


@pytest.mark.parametrize('name', list(REAL_CSVS))
def test_yj_on_the_real_csvs(tmp_path, name):
    import pandas as pd
    from fedgauss.data import fetch_file

    fname, argv, n_feats = REAL_CSVS[name]
    src = fetch_file(fname)
    r = fedgauss_cmd('yj', str(src), *argv, '--out', str(tmp_path / 'out.csv'), '--figure', str(tmp_path / 'f.png'))
    assert r.returncode == 0, r.stderr
    assert (
        f'{n_feats} features transformed' in r.stdout and 'Nothing else.' in r.stdout and 'communication:' in r.stdout
    )
    assert 'Traceback' not in r.stderr and '.py:' not in r.stderr  # warnings, if any, are single lines
    out = pd.read_csv(tmp_path / 'out.csv')
    assert len(out) == len(pd.read_csv(src, sep=None, engine='python', header=None if name == 'adult' else 'infer'))
    assert (tmp_path / 'f.png').stat().st_size > 10_000


def test_yj_warns_about_identifier_and_label_columns(tmp_path):
    from fedgauss.data import fetch_file

    r = fedgauss_cmd(
        'yj', str(fetch_file('UCI_Credit_Card.csv')), '--clients', '2', '--t-max', '4', '--out', str(tmp_path / 'o.csv')
    )
    assert r.returncode == 0, r.stderr
    warned = [l for l in r.stderr.splitlines() if l.startswith('fedgauss yj: warning: column')]
    assert any("'ID' looks like an identifier" in l for l in warned) and any(
        "'default.payment.next.month'" in l for l in warned
    )


def test_flower_demo_bad_arguments_are_one_line_and_start_nothing():
    r = fedgauss_cmd('flower-demo', '--timeout', '0')
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and ('--timeout' in r.stderr or 'flower extra' in r.stderr)
    assert 'flower-demo' in fedgauss_cmd('--help').stdout
