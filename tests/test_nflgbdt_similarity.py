"""fedgauss.nflgbdt.similarity_maps (issue 32): every pair's most-similar map at once — the same rows and counts as the
plain kernel `most_similar` and the brute force of `fedgauss.testing`, on random hashes with many ties, on a9a's
hashes, and on the edge cases (one reference row, no shared value, all rows identical, a party onto itself, empty
query parties, wide hash values, more than 255 tables); the packed kernel's blocks smaller than the data."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fedgauss.nflgbdt import PStableLSH, most_similar, signature_ids, similarity_maps, table_cells
from fedgauss.testing import most_similar_brute

EVERY = lambda D: [(j, m) for j in range(D) for m in range(D) if j != m]


def assert_maps_equal(H, pairs, ref=most_similar):
    maps, sig = similarity_maps(H, pairs)
    assert sorted(maps) == sorted(set(pairs))
    for j, m in pairs:
        idx, cnt = ref(H[j], H[m])
        np.testing.assert_array_equal(maps[j, m][0], idx, err_msg=f'rows of pair {(j, m)}')
        np.testing.assert_array_equal(maps[j, m][1], cnt, err_msg=f'counts of pair {(j, m)}')
    n = sum(len(h) for h in H)
    assert sig == (len(np.unique(np.vstack(H), axis=0)) if n else 0)
    return maps


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=2, max_size=4),
    L=st.integers(1, 9),
    k=st.integers(1, 4),
    seed=st.integers(0, 2**31),
)
def test_random_hashes_with_ties_match_brute_force(sizes, L, k, seed):
    g = np.random.default_rng(seed)
    H = [g.integers(-k, k, (n, L))[g.integers(0, n, n)] for n in sizes]  # few values, repeated rows: many ties
    assert_maps_equal(H, EVERY(len(H)), ref=most_similar_brute)


@pytest.mark.parametrize('seed', range(3))
def test_many_rows_cross_the_blocks(seed):
    "More rows than one block of the packed product (512 query rows, 3 x 1024 reference rows) on both sides."
    g = np.random.default_rng(seed)
    H = [g.integers(0, 3, (n, 12)) for n in (1500, 3500, 700)]
    assert_maps_equal(H, EVERY(3))


def test_a9a_hashes():
    "a9a's binary rows (a sample of 3 x 2,000) by the estimators' 40 Gaussian functions: the maps of the plain kernel."
    from fedgauss.data import load_libsvm

    X = load_libsvm('a9a')[0].to_numpy()[:6000]
    H = [PStableLSH(X.shape[1], rng=0).hash(X[i::3]) for i in range(3)]
    maps = assert_maps_equal(H, EVERY(3))
    assert np.mean(maps[0, 1][1] == 40) > 0.05  # exact duplicates across parties, and ties below
    assert len(np.unique(np.vstack(H), axis=0)) < 6000


def test_one_reference_row():
    g = np.random.default_rng(0)
    H = [g.integers(0, 3, (30, 5)), g.integers(0, 3, (1, 5))]
    maps = assert_maps_equal(H, EVERY(2), ref=most_similar_brute)
    np.testing.assert_array_equal(maps[0, 1][0], np.zeros(30))


def test_no_shared_value():
    "Every count 0: every row maps onto row 0 of the other party."
    H = [np.arange(12).reshape(4, 3), 100 + np.arange(15).reshape(5, 3)]
    maps = assert_maps_equal(H, EVERY(2), ref=most_similar_brute)
    np.testing.assert_array_equal(maps[0, 1], [[0] * 4, [0] * 4])
    np.testing.assert_array_equal(maps[1, 0], [[0] * 5, [0] * 5])


def test_all_rows_identical():
    H = [np.full((6, 4), 7), np.full((9, 4), 7), np.full((1, 4), 7)]
    maps = assert_maps_equal(H, EVERY(3), ref=most_similar_brute)
    assert all((maps[p][0] == 0).all() and (maps[p][1] == 4).all() for p in maps)
    assert similarity_maps(H, [(0, 1)])[1] == 1


def test_some_pairs_only_and_a_party_onto_itself():
    g = np.random.default_rng(1)
    H = [g.integers(0, 2, (n, 6)) for n in (25, 40, 10)]
    assert_maps_equal(H, [(2, 0), (1, 1), (0, 2), (1, 2)], ref=most_similar_brute)
    maps, _ = similarity_maps(H, [(1, 1)])
    np.testing.assert_array_equal(maps[1, 1][1], 6)  # each row finds itself (or an earlier copy)


def test_empty_query_party():
    g = np.random.default_rng(2)
    H = [np.zeros((0, 3), np.int64), g.integers(0, 3, (8, 3))]
    maps, sig = similarity_maps(H, [(0, 1)])
    assert maps[0, 1][0].shape == (0,) and maps[0, 1][1].shape == (0,) and sig == len(np.unique(H[1], axis=0))


def test_wide_hash_values_and_dtypes():
    "Values spanning more than a counting sort's table (a sort per table) and unsigned ints: the same maps."
    g = np.random.default_rng(3)
    base = [g.integers(0, 3, (n, 5)) for n in (20, 30)]
    for H in (
        [h * 2**40 - 2**41 for h in base],
        [h.astype(np.uint64) for h in base],
        [h.astype(np.int8) for h in base],
    ):
        assert_maps_equal(H, EVERY(2), ref=most_similar_brute)


def test_more_than_255_tables():
    "Counts beyond a byte: the dense kernel answers."
    g = np.random.default_rng(4)
    H = [g.integers(0, 2, (n, 300)) for n in (12, 9)]
    assert_maps_equal(H, EVERY(2), ref=most_similar_brute)


def test_table_cells_and_signature_ids():
    g = np.random.default_rng(5)
    H = g.integers(-3, 3, (400, 30))[g.integers(0, 150, 400)]
    C, sizes = table_cells(H)
    assert C.min() == 0 and C.max() == sizes.sum() - 1 and (np.diff(C, axis=1) > 0).all()  # tables in order
    for l in range(30):  # the same partition of each table's values
        np.testing.assert_array_equal(np.unique(H[:, l], return_inverse=True)[1].ravel(), C[:, l] - C[:, l].min())
    ids, ref = signature_ids(C, sizes), np.unique(H, axis=0, return_inverse=True)[1].ravel()
    assert len(set(zip(ids, ref))) == len(set(ids)) == len(set(ref)) == ids.max() + 1  # the same classes


@pytest.mark.parametrize(
    'H, pairs, match',
    [
        ([np.zeros((3, 2), int), np.zeros((3, 3), int)], [(0, 1)], 'one L'),
        ([np.zeros((3, 2)), np.zeros((3, 2))], [(0, 1)], 'must be integers'),
        ([np.zeros((3, 2), int), np.zeros((0, 2), int)], [(0, 1)], 'no reference rows'),
        ([np.zeros((3, 2), int), np.zeros((3, 2), int)], [(0, 2)], 'beyond'),
        ([np.zeros((3, 0), int), np.zeros((3, 0), int)], [(0, 1)], 'no columns'),
        ([], [], 'one L'),
    ],
)
def test_bad_input(H, pairs, match):
    with pytest.raises(ValueError, match=match):
        similarity_maps(H, pairs)
