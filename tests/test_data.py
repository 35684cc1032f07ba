"""Loaders: row counts against the published figures, checksum refusal, and the offline error."""

import gzip, shutil, zipfile
from pathlib import Path

import numpy as np
import pytest

from fedgauss import data
from fedgauss.data import (
    DATASETS,
    ChecksumError,
    dataset_status,
    fetch_file,
    get_data_home,
    load_a9a,
    load_adult,
    load_bank,
    load_breast_cancer,
    load_credit_default,
    load_libsvm,
)


def test_data_home_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv('FEDGAUSS_DATA', str(tmp_path))
    assert get_data_home() == tmp_path
    assert get_data_home(tmp_path / 'x') == tmp_path / 'x'
    monkeypatch.delenv('FEDGAUSS_DATA')
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'c'))
    assert get_data_home() == tmp_path / 'c' / 'fedgauss'


@pytest.mark.parametrize(
    'loader,shape,pos',
    [
        (lambda: load_adult('train'), (32561, 14), 7841),
        (lambda: load_adult('test'), (16281, 14), 3846),
        (lambda: load_a9a('train'), (32561, 123), 7841),
        (lambda: load_credit_default(), (30000, 23), 6636),
        (lambda: load_bank('full'), (45211, 16), 5289),
        (lambda: load_bank('additional'), (41188, 20), 4640),
        (lambda: load_libsvm('cod-rna', 'train'), (59535, 8), 19845),
        (lambda: load_libsvm('ijcnn1', 'test'), (91701, 22), 8712),
        (lambda: load_breast_cancer(), (569, 30), 357),
    ],
)
def test_published_counts(loader, shape, pos):
    X, y = loader()
    assert X.shape == shape and int(y.sum()) == pos
    assert set(np.unique(y)) == {0, 1} and (X.index == y.index).all()


def test_bad_arguments():
    with pytest.raises(ValueError, match='split'):
        load_adult('validation')
    with pytest.raises(ValueError, match='unknown LIBSVM'):
        load_libsvm('higgs')
    with pytest.raises(ValueError, match='variant'):
        load_bank('small')


def test_offline_missing_says_where(tmp_path, monkeypatch):
    # an unreachable source: the error names the file, the directory, and the variable to set
    spec = DATASETS['a9a'][0]
    monkeypatch.setitem(
        DATASETS, 'a9a', [data.DataFile(spec.name, spec.sha256, 'http://127.0.0.1:9/a9a'), DATASETS['a9a'][1]]
    )
    with pytest.raises(FileNotFoundError) as e:
        load_a9a('train', data_home=tmp_path)
    msg = str(e.value)
    assert 'a9a' in msg and str(tmp_path) in msg and 'FEDGAUSS_DATA' in msg and 'downloading it from' in msg
    assert not any(tmp_path.iterdir())


def test_download_nested_zip_and_verify(tmp_path, monkeypatch):
    # serve bank-full.csv inside bank.zip inside bank+marketing.zip, as UCI does, from a file:// URL
    content = gzip.open(fetch_file('bank-full.csv'), 'rb').read()
    inner = tmp_path / 'bank.zip'
    with zipfile.ZipFile(inner, 'w') as z:
        z.writestr('bank-full.csv', content)
    outer = tmp_path / 'bank+marketing.zip'
    with zipfile.ZipFile(outer, 'w') as z:
        z.write(inner, 'bank.zip')
    spec = DATASETS['bank'][0]
    monkeypatch.setitem(
        DATASETS, 'bank', [data.DataFile(spec.name, spec.sha256, outer.as_uri(), spec.member), DATASETS['bank'][1]]
    )
    home = tmp_path / 'home'
    X, y = load_bank('full', data_home=home)
    assert X.shape == (45211, 16) and (home / 'bank-full.csv').is_file()
    assert dataset_status(home).set_index('file').loc['bank-full.csv', 'status'] == 'ok'


def test_download_with_wrong_checksum_is_refused(tmp_path, monkeypatch):
    src = tmp_path / 'a9a.t.gz'
    shutil.copy(fetch_file('a9a.t'), src)
    spec = DATASETS['a9a'][1]
    monkeypatch.setitem(
        DATASETS, 'a9a', [DATASETS['a9a'][0], data.DataFile(spec.name, 'f' * 64, src.as_uri(), compression='gz')]
    )
    with pytest.raises(ChecksumError, match='refusing'):
        load_a9a('test', data_home=tmp_path / 'home')
    assert not (tmp_path / 'home' / 'a9a.t').exists()


def test_tampered_local_file_is_refused(tmp_path):
    raw = gzip.open(fetch_file('adult.test'), 'rb').read()
    (tmp_path / 'adult.test').write_bytes(raw.replace(b'Private', b'Privat3', 1))
    with pytest.raises(ChecksumError, match='sha256'):
        load_adult('test', data_home=tmp_path)


def test_make_seven_classes():
    "The synthetic 7-class set (issue 29): reproducible, 7 classes, values on multiples of 1/4, NaN where asked."
    from fedgauss.data import make_seven_classes

    X, y = make_seven_classes(700, seed=2)
    assert X.shape == (700, 20) and sorted(set(y)) == list(range(7))
    np.testing.assert_array_equal(X * 4, np.round(X * 4))
    np.testing.assert_array_equal(make_seven_classes(700, seed=2)[0], X)
    Xn, yn = make_seven_classes(700, seed=2, nan_frac=0.2, nan_seed=5)
    np.testing.assert_array_equal(yn, y)
    assert 0.15 < np.isnan(Xn).mean() < 0.25
    np.testing.assert_array_equal(Xn[~np.isnan(Xn)], X[~np.isnan(Xn)])
    for bad in (dict(n=6), dict(n=100, nan_frac=-0.1), dict(n=100, nan_frac=True), dict(n=7.5)):
        with pytest.raises(ValueError):
            make_seven_classes(**bad)
