"""Property tests and a bad-input catalogue for fedgauss.federation."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from fedgauss.federation import (
    Channel,
    ChannelError,
    Party,
    as_rng,
    check_partition,
    class_shares,
    dirichlet_split,
    drop_views,
    iid_split,
    label_skew_split,
    make_parties,
    payload_nbytes,
    size_skew_split,
    vertical_split,
)


def frame(n, seed=0, n_classes=2):
    rng = np.random.default_rng(seed)
    idx = pd.Index(rng.permutation(10 * n)[:n] + 1000, name='row')  # arbitrary, non-contiguous labels
    X = pd.DataFrame({'a': rng.normal(size=n), 'b': rng.integers(0, 5, n)}, index=idx)
    y = pd.Series(rng.integers(0, n_classes, n), index=idx, name='y')
    return X, y


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 300), K=st.integers(1, 12), seed=st.integers(0, 2**31))
def test_iid_is_exact_partition(n, K, seed):
    K = min(K, n)
    X, y = frame(n, seed)
    s = iid_split(X, y, K, rng=seed)
    labels = check_partition(s, n)
    assert set(labels) == set(X.index)
    sizes = [len(a) for a, _ in s]
    assert max(sizes) - min(sizes) <= 1
    for Xk, yk in s:
        assert (Xk.index == yk.index).all()
        pd.testing.assert_frame_equal(Xk, X.loc[Xk.index])


@settings(max_examples=60, deadline=None)
@given(n=st.integers(20, 400), K=st.integers(2, 10), theta=st.floats(0, 1), seed=st.integers(0, 2**31))
def test_label_skew_shares(n, K, theta, seed):
    X, y = frame(n, seed)
    if y.nunique() < 2:
        return
    try:
        s = label_skew_split(X, y, K, theta, rng=seed)
    except ValueError as e:
        assert 'empty' in str(e)
        return
    check_partition(s, n)
    cs = class_shares(s)
    n0, n1 = (y == 0).sum(), (y == 1).sum()
    h = K // 2
    assert cs.iloc[:h][0].sum() == round(theta * n0) and cs.iloc[:h][1].sum() == round((1 - theta) * n1)
    for grp in (cs.iloc[:h], cs.iloc[h:]):  # split evenly inside each group
        assert (grp.max() - grp.min()).max() <= 1


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(10, 300),
    K=st.integers(1, 10),
    alpha=st.floats(0.01, 100),
    C=st.integers(2, 5),
    seed=st.integers(0, 2**31),
)
def test_dirichlet_partition_never_empty(n, K, alpha, C, seed):
    K = min(K, n)
    X, y = frame(n, seed, C)
    s = dirichlet_split(X, y, K, alpha, rng=seed)
    check_partition(s, n)
    sizes = [len(a) for a, _ in s]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1


@settings(max_examples=40, deadline=None)
@given(n=st.integers(5, 300), w=st.lists(st.floats(0.05, 1), min_size=1, max_size=6), seed=st.integers(0, 2**31))
def test_size_skew_proportions(n, w, seed):
    p = np.array(w) / np.sum(w)
    X, y = frame(n, seed)
    try:
        s = size_skew_split(X, y, p, rng=seed)
    except ValueError as e:
        assert 'empty client' in str(e)
        return
    check_partition(s, n)
    sizes = np.array([len(a) for a, _ in s])
    assert sizes.sum() == n and np.all(np.abs(sizes - p * n) < 1)


def test_types_preserved():
    X, y = frame(50)
    for Xin, yin, tx, ty in [
        (X, y, pd.DataFrame, pd.Series),
        (X.values, y.values, np.ndarray, np.ndarray),
        (sp.csr_matrix(X.values), y.values, sp.csr_matrix, np.ndarray),
    ]:
        for Xk, yk in iid_split(Xin, yin, 3, rng=0):
            assert isinstance(Xk, tx) and isinstance(yk, ty)
    for Xk, yk in iid_split(X, None, 3, rng=0):
        assert yk is None


def test_reproducible_and_generator_advances():
    X, y = frame(100)
    a = [Xk.index.tolist() for Xk, _ in dirichlet_split(X, y, 4, 0.5, rng=np.random.default_rng(1))]
    b = [Xk.index.tolist() for Xk, _ in dirichlet_split(X, y, 4, 0.5, rng=np.random.default_rng(1))]
    assert a == b
    g = np.random.default_rng(1)
    assert iid_split(X, y, 4, g)[0][0].index.tolist() != iid_split(X, y, 4, g)[0][0].index.tolist()


BAD = [
    (lambda X, y: iid_split(X, y, 0), 'n_clients'),
    (lambda X, y: iid_split(X, y, 2.5), 'n_clients'),
    (lambda X, y: iid_split(X, y, 10**6), 'exceeds'),
    (lambda X, y: iid_split(X.iloc[:0], y.iloc[:0], 1), 'no rows'),
    (lambda X, y: iid_split(X, y.iloc[:3], 2), 'same length'),
    (lambda X, y: label_skew_split(X, None, 2), 'needs labels'),
    (lambda X, y: label_skew_split(X, y, 1), 'n_clients >= 2'),
    (lambda X, y: label_skew_split(X, y, 2, theta=-0.1), 'theta'),
    (lambda X, y: label_skew_split(X, y, 2, theta=float('nan')), 'theta'),
    (lambda X, y: dirichlet_split(X, y, 2, alpha=0), 'alpha'),
    (lambda X, y: dirichlet_split(X, y, 2, alpha=float('inf')), 'alpha'),
    (lambda X, y: dirichlet_split(X, y, 3, alpha=1, sizes=[0.5, 0.5]), 'sizes has 2 entries'),
    (lambda X, y: size_skew_split(X, y, [0.5, float('nan')]), 'positive and finite'),
    (lambda X, y: size_skew_split(X, y, [10, 20]), 'add up'),
    (lambda X, y: vertical_split(X, [['a'], ['zz']]), 'unknown columns'),
    (lambda X, y: vertical_split(X, [['a', 'b'], []]), 'no columns'),
    (lambda X, y: vertical_split(X, 2, y, label_party=2), 'label_party'),
    (lambda X, y: as_rng('seed'), 'rng must be'),
]


@pytest.mark.parametrize('call,msg', BAD, ids=[m for _, m in BAD])
def test_bad_input_named_and_input_untouched(call, msg):
    X, y = frame(40)
    X0, y0 = X.copy(), y.copy()
    with pytest.raises((ValueError, TypeError), match=msg):
        call(X, y)
    pd.testing.assert_frame_equal(X, X0)
    pd.testing.assert_series_equal(y, y0)


def test_drop_views_input_untouched():
    c = [{'a': np.zeros(2), 'b': np.ones(2)}]
    out = drop_views(c, {0: 'a'})
    assert list(out[0]) == ['b'] and list(c[0]) == ['a', 'b']


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(0, 50), min_size=1, max_size=20), K=st.integers(2, 5), seed=st.integers(0, 1000))
def test_transcript_adds_up(sizes, K, seed):
    ch = Channel()
    rng = np.random.default_rng(seed)
    names = [f'p{i}' for i in range(K)]
    sent = 0
    for s in sizes:
        ch.next_round()
        a, b = rng.choice(K, 2, replace=False)
        payload = rng.normal(size=s)
        ch.send(names[a], names[b], 'x', payload)
        sent += payload.nbytes
        assert np.array_equal(ch.receive(names[b], 'x'), payload)
    t = ch.transcript
    assert t['bytes'].sum() == sent == ch.summary()['total_bytes']
    assert ch.bytes_by_round().sum() == sent
    bp = ch.bytes_by_party()
    assert bp['bytes_sent'].sum() == bp['bytes_received'].sum() == sent
    assert ch.summary()['n_rounds'] == len(sizes) and ch.summary()['n_messages'] == len(sizes)


def test_channel_matching_and_errors():
    ch = Channel()
    p, q = Party('p', ch), Party('q', ch)
    p.send(q, 'a', 1)
    p.send(q, 'b', 2)
    p.send(q, 'a', 3)
    assert q.receive('b') == 2 and q.receive('a') == 1 and q.receive() == 3
    with pytest.raises(ChannelError):
        q.receive()
    with pytest.raises(ValueError, match='itself'):
        p.send(p, 'x', 1)
    with pytest.raises(TypeError, match='named'):
        ch.send('', 'q', 'x', 1)
    assert 'n_rows=0' in repr(p)


def test_payload_nbytes_bigints():
    assert payload_nbytes(2**512) == 64 + 1 and payload_nbytes(2**512 - 1) == 64
    assert payload_nbytes([np.float32(1), np.int16(2)]) == 6
