"""fedgauss.secureboost: lossless against the centralized GBDTClassifier (trees and predictions, bit for bit) on Adult
(2 and 3 parties), credit-card default and random federations (random column splits, label party, NaN, ties); the
three missing-value options; what each party sees (transcripts); reduced leakage; the core's exact sums; bad input."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from fedgauss.data import load_adult, load_credit_default
from fedgauss.federation import vertical_split
from fedgauss.gbdt import GBDTClassifier, LocalHistograms, LogisticLoss, grow_tree, snap_to_grid, GRID_BITS, Binner
from fedgauss.secureboost import (
    SecureBoostClassifier,
    pack_gh,
    unpack_gh,
    unpack_bins,
    bins_per_ciphertext,
    leaf_purity,
    BIN_BITS,
    GH_SLOT,
)

FAST = dict(key_size=512, unsafe=True, rng=0)  # tests only: a breakable key, for speed


def assert_same_trees(sb, gb):
    "The federated trees are the centralized ones bit for bit; the owners' lookup tables hold the centralized thresholds."
    assert len(sb.trees_) == len(gb.trees_)
    for t, c, own, rec in zip(sb.trees_, gb.trees_, sb.owners_, sb.records_):
        for att in ('feature', 'bin', 'default_left', 'left', 'right', 'value', 'gain', 'sum_grad', 'sum_hess'):
            np.testing.assert_array_equal(getattr(t, att), getattr(c, att), err_msg=att)
        thr = t.threshold.copy()
        passive = np.flatnonzero(np.isnan(thr) & (own >= 0))
        for i in passive:
            thr[i] = sb.parties_[own[i]].lookup[rec[i]][1]
        np.testing.assert_array_equal(thr, c.threshold)


def centralized(parts):
    blocks = [X for X, _ in parts]
    X = pd.concat(blocks, axis=1) if isinstance(blocks[0], pd.DataFrame) else np.hstack(blocks)
    return X, next(y for _, y in parts if y is not None)


def check_lossless(parts, test_blocks, **kw):
    sb = SecureBoostClassifier(**FAST, **kw).fit(parts)
    X, y = centralized(parts)
    gb = GBDTClassifier(**{k: v for k, v in kw.items() if k != 'rl_trees'}).fit(X, y)
    assert_same_trees(sb, gb)
    Xt = pd.concat(test_blocks, axis=1) if isinstance(test_blocks[0], pd.DataFrame) else np.hstack(test_blocks)
    d = np.abs(np.asarray(sb.predict_proba(test_blocks)) - gb.predict_proba(Xt)).max()  # DataFrames in: a DataFrame
    assert d <= 1e-9
    return sb, d


# ----------------------------------------------------------------------------- real data
@pytest.fixture(scope='module')
def adult():
    X, y = load_adult('train')
    Xt, _ = load_adult('test')
    return X, y.to_numpy(), Xt


ADULT_KW = dict(n_estimators=4, max_depth=6, max_bins=64, learning_rate=0.3, reg_lambda=1.0)


@pytest.mark.parametrize('groups', [2, 3])
def test_lossless_on_adult(adult, groups):
    X, y, Xt = adult
    cols = list(X.columns)
    g = [cols[i::groups] for i in range(groups)]  # interleaved columns: categoricals everywhere
    parts = vertical_split(X, g, y, label_party=groups - 1)
    sb, d = check_lossless(parts, [Xt[c] for c in g], **ADULT_KW)
    print(f"Adult, {groups} parties: max |p_secureboost - p_central| = {d:.1e}")


def test_lossless_on_credit_default():
    X, y = load_credit_default()
    X, y = (X.to_numpy(float) if hasattr(X, 'to_numpy') else X), np.asarray(y)
    g = [list(range(0, 23, 2)), list(range(1, 23, 2))]
    tr, te = np.arange(len(X)) % 5 != 0, np.arange(len(X)) % 5 == 0
    parts = vertical_split(X[tr], g, y[tr], label_party=0)
    sb, d = check_lossless(parts, [X[te][:, c] for c in g], n_estimators=4, max_depth=6, max_bins=32)
    print(f"credit default, 2 parties: max |p_secureboost - p_central| = {d:.1e}")


def test_one_fit_at_2048_bits():
    r = np.random.default_rng(5)
    X = r.normal(size=(1500, 4))
    X[r.random(1500) < 0.1, 3] = np.nan
    y = (X[:, 0] - np.nan_to_num(X[:, 3]) > 0).astype(int)
    parts = vertical_split(X, [[0, 1], [2, 3]], y)
    sb = SecureBoostClassifier(n_estimators=1, max_depth=3, max_bins=16, key_size=2048).fit(parts)
    assert int(sb.active_.pk.n).bit_length() == 2048
    gb = GBDTClassifier(n_estimators=1, max_depth=3, max_bins=16).fit(X, y)
    assert_same_trees(sb, gb)
    assert np.abs(sb.predict_proba([X[:, :2], X[:, 2:]]) - gb.predict_proba(X)).max() == 0


# ----------------------------------------------------------------------------- random federations
@pytest.mark.parametrize('seed', range(6))
def test_lossless_on_random_federations(seed):
    "Random column splits and label party; NaN; integer features with few values and duplicated columns (ties)."
    r = np.random.default_rng(seed)
    n, F = int(r.integers(200, 700)), int(r.integers(3, 9))
    X = r.normal(size=(n, F))
    X[:, 0] = r.integers(0, 3, n)  # few values: many equal gains
    if F > 3:
        X[:, -1] = X[:, 0]  # a duplicate column: exact ties between features
    X[r.random((n, F)) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) + r.normal(size=n) > 1).astype(int)
    K = int(r.integers(2, min(F, 4) + 1))
    perm = r.permutation(F)
    cuts = np.sort(r.choice(np.arange(1, F), K - 1, replace=False))
    groups = [sorted(g.tolist()) for g in np.split(perm, cuts)]
    parts = vertical_split(X, groups, y, label_party=int(r.integers(K)))
    Xv = r.normal(size=(100, F))
    Xv[r.random((100, F)) < 0.2] = np.nan
    kw = dict(
        n_estimators=3,
        max_depth=int(r.integers(2, 6)),
        max_bins=int(r.integers(4, 20)),
        reg_lambda=float(r.choice([0.0, 1.0])),
        min_child_weight=float(r.choice([0.0, 1.0])),
    )
    check_lossless(parts, [Xv[:, g] for g in groups], **kw)


@pytest.mark.parametrize('missing', ['impute', 'probabilistic'])
def test_missing_options_match_the_core(missing):
    r = np.random.default_rng(3)
    X = r.normal(size=(600, 5))
    X[r.random((600, 5)) < 0.2] = np.nan
    y = (np.nan_to_num(X[:, 0], nan=1) - np.nan_to_num(X[:, 4]) > 0).astype(int)
    groups = [[0, 1], [2], [3, 4]]
    parts = vertical_split(X, groups, y, label_party=1)
    Xv = r.normal(size=(200, 5))
    Xv[r.random((200, 5)) < 0.3] = np.nan
    sb, _ = check_lossless(parts, [Xv[:, g] for g in groups], n_estimators=3, max_depth=4, max_bins=16, missing=missing)
    kinds = {m.kind for m in sb.channel_.messages}
    assert kinds == {'n_bins', 'public_key', 'gh', 'hist_request', 'hist', 'split', 'bits', 'route', 'query', 'answer'}
    if missing == 'impute':  # each party fills its own columns with its own means, no message
        for p, g in zip(sb.parties_, groups):
            np.testing.assert_array_equal(p.impute_values_, np.nanmean(X[:, g], axis=0))
    else:  # owners flag the rows missing their split features
        assert any('missing' in m.payload for m in sb.channel_.messages if m.kind == 'answer')


# ----------------------------------------------------------------------------- what each party sees
def _float_free(obj):
    if isinstance(obj, dict):
        return all(_float_free(v) for v in obj.values())
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind in 'biu' or (obj.dtype == object and all(type(v) is int for v in obj.ravel()))
    return isinstance(obj, (int, np.integer, bool, np.bool_))


@pytest.fixture(scope='module')
def fitted():
    r = np.random.default_rng(1)
    X = r.normal(size=(500, 6))
    X[r.random(500) < 0.2, 4] = np.nan
    y = (X[:, 0] + X[:, 4] > 0).astype(int)
    groups = [[0, 1], [2, 3], [4, 5]]
    sb = SecureBoostClassifier(n_estimators=3, max_depth=3, max_bins=8, **FAST).fit(
        vertical_split(X, groups, y, label_party=0)
    )
    sb.predict_proba([X[:50, g] for g in groups])
    return sb, groups


def test_passive_parties_receive_only_integers_about_their_own_features(fitted):
    sb, groups = fitted
    n = int(sb.active_.pk.n)
    for m in sb.channel_.messages:
        if m.receiver == 'active':
            continue
        assert m.kind in {'public_key', 'gh', 'hist_request', 'split', 'route', 'query'}, m.kind
        assert _float_free(m.payload), m.kind
        if m.kind == 'gh':
            assert all(0 < c < n * n for c in m.payload)  # ciphertexts mod n^2
        if m.kind == 'public_key':
            assert m.payload == n
        if m.kind == 'split':  # only this party's features
            assert set(m.payload) == {'node', 'feature', 'bin', 'default_left'}
            assert (m.payload['feature'] < len(groups[int(m.receiver[-1])])).all()


def test_active_party_never_receives_a_threshold(fitted):
    sb, _ = fitted
    got = [m for m in sb.channel_.messages if m.receiver == 'active']
    assert {m.kind for m in got} == {'n_bins', 'hist', 'bits', 'answer'}
    assert all(_float_free(m.payload) for m in got)
    for t, own in zip(sb.trees_, sb.owners_):  # its tree copies: NaN at every passive node
        assert np.isnan(t.threshold[(own >= 0) & (own != sb.active_.index)]).all()
        assert np.isfinite(t.threshold[own == sb.active_.index]).all()


def test_histograms_leave_out_only_the_empty_slots_and_the_bits_say_what_the_sums_say(fitted):
    """A `hist` message's bits name the (node, slot) pairs that hold a row of the node, and only those slots' sums
    travel, q to a compressed ciphertext. The bits tell the active party nothing its decrypted sums do not: a slot's
    (G, H) is non-zero exactly where its bit is set, since no row here has G = H = 0 on the grid (a slot of such rows
    only would be the exception)."""
    from fedgauss.secureboost import active_party_view

    sb, _ = fitted
    q, checked, empty = bins_per_ciphertext(sb.active_.pk.n), 0, 0
    for p in sb.parties_[1:]:
        view, n_bins = active_party_view(sb, p.name)
        S, t = int((n_bins + 1).sum()), -1
        for m in sb.channel_.messages:
            if p.name not in (m.sender, m.receiver):
                continue
            if m.kind == 'gh':
                t += 1
                assert ((view[t]['G'] != 0) | (view[t]['H'] != 0)).all()
            elif m.kind == 'hist_request':
                nodes = np.asarray(m.payload)
            elif m.kind == 'hist':
                assert set(m.payload) == {'filled', 'bins'} and m.payload['filled'].dtype == np.uint8
                bits = np.unpackbits(m.payload['filled'])
                assert not bits[len(nodes) * S :].any()
                filled = bits[: len(nodes) * S].reshape(len(nodes), S).astype(bool)
                ptr = np.r_[0, np.cumsum(n_bins + 1)]
                derived = sum(np.add.reduceat(f, ptr[:-1]).astype(bool).sum() for f in filled)  # a slot per feature
                assert len(m.payload['bins']) == -(-int(filled.sum() - derived) // q)
                for j, v in enumerate(nodes):
                    count = np.bincount(p.slots[view[t]['rows'][int(v)]].ravel(), minlength=S)
                    np.testing.assert_array_equal(filled[j], count > 0)
                    np.testing.assert_array_equal(filled[j], (view[t]['hist'][int(v)] != 0).any(axis=0))
                checked, empty = checked + len(nodes), empty + int((~filled).sum())
    assert checked >= 10 and empty >= 10  # both kinds of slot were seen
    assert sb.bytes_by_party.loc['active', 'bytes_sent'] > 0


@pytest.mark.parametrize(
    'change, match',
    [
        (lambda p: [p['bins']], 'a dict of'),
        (lambda p: dict(p, filled=p['filled'][:-1]), 'bytes of bits'),
        (lambda p: dict(p, filled=p['filled'].astype(np.int64)), 'bytes of bits'),
        (lambda p: dict(p, bins=p['bins'][:-1]), 'take 2 compressed ciphertexts; the message holds 1'),
        (lambda p: dict(p, filled=np.r_[p['filled'][:-1], p['filled'][-1:] | 1]), 'past its last slot'),
    ],
)
def test_a_malformed_histogram_message_is_refused(change, match):
    """The active party checks a `hist` message's form before it decrypts anything: bits, their length, the count of
    ciphertexts the slots sent take (the filled ones but each feature's last)."""
    from fedgauss.secureboost import _hist_payload

    K, ptr, q = 2, np.array([0, 4, 7]), 4  # two features (3 and 2 value bins): 7 slots a node, 14 bits, 2 past the end
    filled = np.zeros(14, bool)
    filled[[0, 1, 2, 4, 5, 7, 8, 9, 11]] = (
        True  # sent: 0, 1, 4 and 7, 8 (each feature's last is derived): 2 ciphertexts
    )
    good = dict(filled=np.packbits(filled), bins=np.array([3, 5], dtype=object))
    f, sent, cts = _hist_payload(good, K, ptr, q, [1])
    np.testing.assert_array_equal(f.ravel(), filled)
    np.testing.assert_array_equal(np.flatnonzero(sent), [0, 1, 4, 7, 8])
    with pytest.raises(ValueError, match=match):
        _hist_payload(change(good), K, ptr, q, [1])


def test_reduced_leakage_first_trees_send_nothing():
    r = np.random.default_rng(2)
    X = r.normal(size=(400, 4))
    y = (X[:, 0] + X[:, 3] > 0).astype(int)
    sb = SecureBoostClassifier(n_estimators=4, max_depth=3, max_bins=8, rl_trees=2, **FAST).fit(vertical_split(X, 2, y))
    tr = sb.channel_.transcript
    assert set(tr['round']) == {1, 4, 5}  # setup, then the two federated trees only
    for t, own in zip(sb.trees_[:2], sb.owners_[:2]):
        assert set(own[own >= 0]) <= {0}
    assert any((own == 1).any() for own in sb.owners_[2:])
    assert 0.5 <= leaf_purity(sb.train_leaves_[2], y)['purity'] <= 1


# ----------------------------------------------------------------------------- the core's exact sums
class _IntHistograms(LocalHistograms):
    "Histograms summed as int64 grid integers in reverse row order, converted to floats once."

    def histograms(self, nodes):
        gi = np.ldexp(self.gh, self.k).astype(np.int64)
        node, S = self.node, self.layout.n_slots
        out = np.zeros((len(nodes), S, 2), np.int64)
        for j, nd in enumerate(nodes):
            rows = np.flatnonzero(node == nd)[::-1]
            for c in range(2):
                np.add.at(out[j, :, c], self.slots[rows].ravel(), np.repeat(gi[rows, c], self.F))
        return np.ldexp(out.astype(float), -self.k)


def test_core_trees_from_int64_sums_equal_the_estimator():
    "Boosting from int64 fixed-point sums (another order, no float additions) grows GBDTClassifier's trees bit for bit."
    r = np.random.default_rng(4)
    X = r.normal(size=(700, 5))
    X[:, 1] = r.integers(0, 4, 700)
    X[r.random((700, 5)) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + X[:, 1] > 1).astype(float)
    kw = dict(max_depth=5, learning_rate=0.3, reg_lambda=0.0, min_child_weight=0.0)
    gb = GBDTClassifier(n_estimators=5, max_bins=16, **kw).fit(X, y)
    b = Binner(max_bins=16).fit(X)
    codes = b.transform(X)
    loss, margin, gh = LogisticLoss(), np.full(700, gb.base_margin_), np.empty((700, 2))
    prov = _IntHistograms(codes, b.layout_)
    for tree_ref in gb.trees_:
        loss.gradients(y, margin, out=gh)
        gh[:, 0], gh[:, 1], prov.k = snap_to_grid(gh[:, 0], gh[:, 1])
        prov.start_tree(gh)
        t = grow_tree(prov, b.layout_, **kw)
        for att in ('feature', 'bin', 'default_left', 'left', 'value', 'gain', 'sum_grad', 'sum_hess'):
            np.testing.assert_array_equal(getattr(t, att), getattr(tree_ref, att))
        margin += prov.row_values(t.value)


def test_snap_to_grid_sums_are_exact():
    r = np.random.default_rng(0)
    g, h = r.normal(size=5000) * 1e3, r.random(5000)
    gs, hs, k = snap_to_grid(g, h)
    G = np.ldexp(gs, k).astype(np.int64)
    assert np.abs(G).sum() < 2**GRID_BITS
    for _ in range(3):
        idx = r.permutation(5000)[: r.integers(1, 5000)]
        assert np.cumsum(gs[idx])[-1] == gs[idx][::-1].sum() == np.ldexp(float(G[idx].sum()), -k)


def test_packing_round_trips():
    r = np.random.default_rng(0)
    G, H = r.integers(-(2**45), 2**45, 300), r.integers(0, 2**40, 300)  # sums within the slots
    assert unpack_gh(sum(pack_gh(G, H))) == (int(G.sum()), int(H.sum()))
    n = (1 << 1023) + 7
    q = bins_per_ciphertext(n)
    Bs = [int(v) << GH_SLOT for v in r.integers(-(2**48), 2**48, q)]
    assert unpack_bins(sum(b << (j * BIN_BITS) for j, b in enumerate(Bs)) % n, n, q) == Bs


def _extremes_round_trip(sb, M: int) -> bool:
    "Whether bins (+-M, M), (+-M, 0), (0, M), side by side in one 2048-bit plaintext, come back through `sb`'s widths."
    n, ext = (1 << 2047) + 12345, [(M, M), (-M, M), (M, 0), (-M, 0), (0, M)]
    q = sb.bins_per_ciphertext(n)
    want = (ext * q)[:q]
    Bs = [sb.pack_gh(np.array([G]), np.array([H]))[0] for G, H in want]
    try:
        got = sb.unpack_bins(sum(b << (j * sb.BIN_BITS) for j, b in enumerate(Bs)) % n, n, q)
    except ValueError:  # overflowed its bins
        return False
    return [sb.unpack_gh(b) for b in got] == want


def test_bin_widths_are_the_least_that_hold_the_grids_largest_sums(monkeypatch):
    """`grid_exponent` keeps 2^k max(sum |g|, sum h) <= 2^(GRID_BITS - 2) for fewer than 2^(GRID_BITS - 2) rows, and
    rounding moves a row by at most 1/2: |sum G| and sum H stay <= M = 2^48 + (2^48 - 1) // 2 over any rows. The
    widths hold those extremes (20 bins at 2048 bits); a bit less in the H slot or in the digit does not."""
    import fedgauss.secureboost as sb
    from fedgauss.gbdt import grid_exponent

    top = 2 ** (GRID_BITS - 2)
    M = top + (top - 1) // 2
    with pytest.raises(ValueError, match='too many'):
        grid_exponent(1.0, top)
    assert grid_exponent(1.0, top - 1) == GRID_BITS - 2  # n just under the limit: its n/2 of rounding counted in M
    _, h, k = snap_to_grid(np.array([-0.25, 0.5, -0.25]), np.array([0.25, 0.5, 0.25]))
    assert int(np.ldexp(h, k).sum()) == top  # all the Hessian mass in one bin, no rounding: already 2^48
    r = np.random.default_rng(1)
    x = (r.integers(0, 2**20, 4096) * 2 + 1) / 2.0  # each 2^k h an odd half: rint rounds a half of them up
    _, hs, k = snap_to_grid(np.zeros(len(x)), x / x.sum())
    assert int(np.ldexp(hs, k).sum()) > top  # rounding adds on top of 2^48
    assert _extremes_round_trip(sb, M) and sb.bins_per_ciphertext((1 << 2047) + 12345) == 20
    monkeypatch.setattr(sb, 'GH_SLOT', GH_SLOT - 1)
    assert not _extremes_round_trip(sb, M)
    monkeypatch.setattr(sb, 'GH_SLOT', GH_SLOT)
    monkeypatch.setattr(sb, 'BIN_BITS', BIN_BITS - 1)
    assert not _extremes_round_trip(sb, M)


# ----------------------------------------------------------------------------- API and bad input
def test_params_and_clone():
    sb = SecureBoostClassifier(n_estimators=3, rl_trees=1)
    assert clone(sb).get_params() == sb.get_params()
    assert sb.get_params()['key_size'] == 2048


def _parts(n=60):
    r = np.random.default_rng(0)
    X = r.normal(size=(n, 4))
    y = (X[:, 0] > 0).astype(int)
    return X, y, vertical_split(X, 2, y)


@pytest.mark.parametrize(
    'make, match',
    [
        (lambda X, y, p: (SecureBoostClassifier(key_size=512), p), 'breakable'),
        (lambda X, y, p: (SecureBoostClassifier(**FAST), [(p[0][0], y), (p[1][0], y)]), 'exactly one party'),
        (lambda X, y, p: (SecureBoostClassifier(**FAST), [(p[0][0], None), (p[1][0], None)]), 'exactly one party'),
        (
            lambda X, y, p: (SecureBoostClassifier(**FAST), [(p[0][0], y), (p[1][0][:-1], None)]),
            'different numbers of rows',
        ),
        (
            lambda X, y, p: (SecureBoostClassifier(**FAST), [(np.where(X[:, :2] > 1, np.inf, X[:, :2]), y), p[1]]),
            'infinity',
        ),
        (lambda X, y, p: (SecureBoostClassifier(**FAST), [(p[0][0], np.zeros(len(y))), p[1]]), 'two classes'),
        (lambda X, y, p: (SecureBoostClassifier(**FAST), X), r'list of \(X_p, y_p\)'),
        (lambda X, y, p: (SecureBoostClassifier(n_estimators=0, **FAST), p), 'n_estimators'),
        (lambda X, y, p: (SecureBoostClassifier(missing='zero', **FAST), p), 'missing'),
        (lambda X, y, p: (SecureBoostClassifier(learning_rate=0, **FAST), p), 'learning_rate'),
    ],
)
def test_bad_input(make, match):
    X, y, p = _parts()
    X0 = X.copy()
    est, arg = make(X, y, p)
    with pytest.raises(ValueError, match=match):
        est.fit(arg)
    np.testing.assert_array_equal(X, X0)


def test_bad_prediction_input():
    X, y, p = _parts()
    with pytest.raises(ValueError, match='not fitted'):
        SecureBoostClassifier(**FAST).predict_proba([X[:, :2], X[:, 2:]])
    sb = SecureBoostClassifier(n_estimators=1, max_depth=2, **FAST).fit(p)
    with pytest.raises(ValueError, match='one per party'):
        sb.predict_proba([X])
    with pytest.raises(ValueError, match='columns'):
        sb.predict_proba([X[:, :1], X[:, 2:]])
    with pytest.raises(ValueError, match='different numbers of rows'):
        sb.predict_proba([X[:5, :2], X[:6, 2:]])
    assert set(sb.predict([X[:, :2], X[:, 2:]])) <= {0, 1}


# ----------------------------------------------------------------------------- as per-party programs
def _toy7(n=800, seed=1):
    "The rows of nb33's `toy` (three kinds of column, NaN in column 5)."
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, 7))
    X[:, 3] = g.integers(0, 5, n)
    gone = g.random(n) < 0.15
    X[gone, 5] = np.nan
    score = X[:, 0] + 0.3 * X[:, 3] - np.where(np.isnan(X[:, 5]), 1.0, X[:, 5]) + g.normal(size=n)
    return X, (score > 0.5).astype(int)


def _rows(channel):
    tr = channel.transcript
    return sorted(
        (int(r), str(s), str(c), str(k), int(b))
        for r, s, c, k, b in zip(tr['round'], tr['sender'], tr['receiver'], tr['kind'], tr['bytes'])
    )


CIPHERTEXTS = ('public_key', 'gh', 'hist')  # Paillier payloads: their bytes depend on the secret randomness


def _numbers(p):
    "A Paillier payload's ciphertexts (the modulus: 1); a `hist` message's also its filled slots' bits."
    return (len(p['bins']), p['filled'].tobytes().hex()) if isinstance(p, dict) else int(np.size(p))


def _shape_rows(channel):
    """The transcript with each Paillier payload counted in numbers (ciphertexts, the modulus), every other message in
    bytes: what the single driver sent, independent of the keys and obfuscators drawn."""
    return sorted(
        (int(m.round), m.sender, m.receiver, m.kind, _numbers(m.payload) if m.kind in CIPHERTEXTS else int(m.nbytes))
        for m in channel.messages
    )


@pytest.mark.parametrize(
    'groups, label_party, kw, digest',
    [  # digests of `_shape_rows` of the single driver's transcripts: computed at main f8172c7 (whose byte-for-byte
        # transcripts were the single driver's, commit 4a56a6b), before keys and obfuscators came from ChaCha20; again
        # when BIN_BITS went from 103 to 99 (issue 32): 5 bins a 512-bit ciphertext, not 4, so each `hist` holds
        # ceil(S/5) ciphertexts a node, not ceil(S/4); every other message as at main d830e8a (checked then); again when
        # `hist` left out the empty slots and each feature's last filled slot (issue 32): it counts its ciphertexts and
        # its filled slots' bits, and every other message is as at main 779a0a4 (checked then: their digest without the
        # `hist` messages is unchanged)
        ([[0, 1, 2], [3, 4], [5, 6]], 1, dict(n_estimators=4, max_depth=4, max_bins=16), '1c043d11357f6c05'),
        (
            [[0, 1, 2], [3, 4], [5, 6]],
            2,
            dict(n_estimators=4, max_depth=3, rl_trees=2, max_bins=16),
            '8a3be90835ff442c',
        ),
        (
            [[0, 1], [2, 3], [4, 5], [6]],
            3,
            dict(n_estimators=3, max_depth=5, min_child_weight=20, gamma=2.0),
            '46a748d742750315',
        ),
    ],
)
def test_programs_keep_the_single_drivers_transcript(groups, label_party, kw, digest):
    """Every message (round, sender, receiver, kind; bytes, or the number of ciphertexts) as the single driver sent it;
    only the order within a round follows the scheduler. Ciphertexts are at most 2 key lengths each, and a seeded fit
    repeats its transcript byte for byte (the same run twice, in this test)."""
    import hashlib

    X, y = _toy7()
    parts = vertical_split(X, groups, y, label_party=label_party)
    sb = SecureBoostClassifier(**FAST, **kw).fit(parts)
    assert hashlib.sha256(repr(_shape_rows(sb.channel_)).encode()).hexdigest()[:16] == digest
    for m in sb.channel_.messages:
        if m.kind in CIPHERTEXTS:
            k = _numbers(m.payload)
            assert m.nbytes <= (k if isinstance(k, int) else k[0] + len(k[1])) * 2 * 512 // 8
    assert _rows(SecureBoostClassifier(**FAST, **kw).fit(parts).channel_) == _rows(sb.channel_)


def test_run_protocol_equals_the_estimator():
    "The registered spec run directly in the simulator gives the estimator's trees, lookup tables and transcript."
    from fedgauss.smc import PROTOCOLS, run_protocol

    X, y = _toy7(400)
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    sb = SecureBoostClassifier(n_estimators=2, max_depth=3, max_bins=16, **FAST).fit(vertical_split(X, groups, y, 1))
    names = ['passive0', 'active', 'passive2']
    datas = {n: dict(X=X[:, g]) for n, g in zip(names, groups)}
    datas['active']['y'] = y.astype(float)
    cfg = dict(sb.protocol_config(names, [len(g) for g in groups], len(y)), keep_parties=True)
    res, rounds, ch = run_protocol(PROTOCOLS['secureboost'], datas, cfg, rngs={'active': 0})
    for t, u in zip(res['active']['trees'], sb.trees_):
        for att in ('feature', 'bin', 'default_left', 'left', 'right', 'value', 'gain'):
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att))
    assert [res[n]['party'].lookup for n in names] == [p.lookup for p in sb.parties_]
    assert _rows(ch) == _rows(sb.channel_)
    assert rounds['tree'] == [2, 3]


def test_all_reduced_leakage_trees_end_the_passive_programs():
    "No tree asks the passive party anything: its program ends when the active party's does (PeerFinished)."
    X, y, p = _parts(200)
    sb = SecureBoostClassifier(n_estimators=2, max_depth=2, rl_trees=2, **FAST).fit(p)
    assert set(sb.channel_.transcript['kind']) == {'n_bins', 'public_key'}
    assert sb.parties_[1].lookup == []


def test_check_refuses_a_party_before_any_message():
    from fedgauss.secureboost import SECUREBOOST
    from fedgauss.federation import Channel
    from fedgauss.smc import run_protocol

    X, y = _toy7(200)
    cfg = SecureBoostClassifier(n_estimators=1, max_depth=2, **FAST).protocol_config(
        ['active', 'passive1'], [4, 3], 200
    )
    ok = {'active': dict(X=X[:, :4], y=y.astype(float)), 'passive1': dict(X=X[:, 4:])}
    for bad, match in [
        (dict(ok, passive1=dict(X=X[:, 4:6])), 'passive1 has 2 columns; the federation expects 3'),
        (dict(ok, passive1=dict(X=X[:150, 4:])), 'passive1 has 150 rows'),
        (dict(ok, passive1=dict(X=X[:, 4:], y=y)), 'holds no labels'),
        (dict(ok, active=dict(X=X[:, :4], y=y + 1.0)), 'must be 0/1'),
        (dict(ok, passive1=dict(X=np.where(X[:, 4:] > 2, np.inf, X[:, 4:]))), 'infinity'),
    ]:
        ch = Channel()
        with pytest.raises(ValueError, match=match):
            run_protocol(SECUREBOOST, bad, cfg, channel=ch, rngs={'active': 0})
        assert len(ch.messages) == 0


# ----------------------------------------------------------------------------- prediction as per-party programs
def _payload_hash(p):
    if isinstance(p, dict):
        return tuple((k, _payload_hash(v)) for k, v in sorted(p.items()))
    if isinstance(p, np.ndarray):
        return (str(p.dtype), p.shape, __import__('hashlib').sha256(np.ascontiguousarray(p).tobytes()).hexdigest()[:16])
    return repr(p)


def _pairs_digest(messages):
    "Each (sender, receiver)'s messages in order — round, kind, bytes, the payload's arrays — hashed."
    import hashlib

    seq = {}
    for m in messages:
        seq.setdefault((m.sender, m.receiver), []).append((m.round, m.kind, m.nbytes, _payload_hash(m.payload)))
    return hashlib.sha256(repr(sorted(seq.items())).encode()).hexdigest()[:16]


def _reference_margin(sb, blocks):
    "The single driver's arithmetic in one place: every node's threshold from its owner's lookup table."
    X = np.hstack(
        [
            b if p.impute_values_ is None else np.where(np.isnan(b), p.impute_values_, b)
            for b, p in zip(blocks, sb.parties_)
        ]
    )
    vals = []
    for t, own, rec in zip(sb.trees_, sb.owners_, sb.records_):
        thr = t.threshold.copy()
        for i in np.flatnonzero(np.isnan(thr) & (own >= 0)):
            thr[i] = sb.parties_[own[i]].lookup[rec[i]][1]
        inner = np.flatnonzero(~t.is_leaf)
        if sb.missing != 'probabilistic':
            vals.append(t.value[t.__class__(**dict(vars(t), threshold=thr)).apply(X)])
            continue
        go, miss = np.zeros((len(X), t.n_nodes)), np.zeros((len(X), t.n_nodes), bool)
        miss[:, inner], go[:, inner] = np.isnan(X[:, t.feature[inner]]), X[:, t.feature[inner]] < thr[inner]
        pi = np.zeros(t.n_nodes)
        pi[inner] = t.count[t.left[inner]] / np.maximum(t.count[inner], 1e-300)
        P, W = np.where(miss, pi, go), np.zeros((len(X), t.n_nodes))
        W[:, 0] = 1.0
        for d in range(t.max_depth):
            at = np.flatnonzero((t.depth == d) & ~t.is_leaf)
            wl = W[:, at] * P[:, at]
            W[:, t.left[at]] += wl
            W[:, t.right[at]] += W[:, at] - wl
        leaves = np.flatnonzero(t.is_leaf)
        vals.append(W[:, leaves] @ t.value[leaves])
    if sb.missing == 'probabilistic':
        out = np.zeros(len(X))
        for v in vals:
            out += v
        return sb.base_margin_ + out
    return sb.base_margin_ + sum(vals)


@pytest.mark.parametrize(
    'groups, label_party, kw, digest',
    [  # digests of the prediction messages of the single driver (main at 84abe4e), per pair of parties, in order
        ([[0, 1, 2], [3, 4], [5, 6]], 1, dict(n_estimators=4, max_depth=4, max_bins=16), '2dc89daa3f3c260f'),
        (
            [[0, 1, 2], [3, 4], [5, 6]],
            1,
            dict(n_estimators=4, max_depth=4, max_bins=16, missing='impute'),
            'a1b8b0baedf386f4',
        ),
        (
            [[0, 1, 2], [3, 4], [5, 6]],
            1,
            dict(n_estimators=4, max_depth=4, max_bins=16, missing='probabilistic'),
            '7255deda133a4a14',
        ),
        (
            [[0, 1], [2, 3], [4, 5], [6]],
            3,
            dict(n_estimators=3, max_depth=5, min_child_weight=20, gamma=2.0, missing='probabilistic'),
            'eed23a23a8cfeccb',
        ),
        ([[0, 1, 2, 3], [4, 5, 6]], 0, dict(n_estimators=4, max_depth=3, rl_trees=2, max_bins=8), '25b715bdd18ef9ae'),
    ],
)
def test_prediction_programs_keep_the_single_drivers_messages_and_margins(groups, label_party, kw, digest):
    """Prediction by the `secureboost_predict` programs: the single driver's messages (payloads included) in the same
    order between each pair of parties, one round per call as before, and its margins bit for bit."""
    X, y = _toy7()
    Xv, _ = _toy7(300, seed=2)
    Xv[np.random.default_rng(9).random(Xv.shape) < 0.1] = np.nan
    sb = SecureBoostClassifier(**FAST, **kw).fit(vertical_split(X, groups, y, label_party=label_party))
    n_fit, r_fit = len(sb.channel_.messages), sb.channel_.round
    calls = [[Xv[:, g] for g in groups], [Xv[:50, g] for g in groups]]
    for blocks in calls:
        m = sb.decision_function(blocks)
        np.testing.assert_array_equal(m, _reference_margin(sb, blocks))
    sb.predict_proba(calls[0])
    assert _pairs_digest(sb.channel_.messages[n_fit:]) == digest
    assert sb.channel_.round == r_fit + 3
    assert {m.round for m in sb.channel_.messages[n_fit:]} <= {r_fit + 1, r_fit + 2, r_fit + 3}


@pytest.fixture(scope='module')
def predicted():
    X, y = _toy7(400)
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    sb = SecureBoostClassifier(n_estimators=3, max_depth=3, max_bins=16, **FAST)
    sb.fit(vertical_split(X, groups, y, label_party=1))
    Xv, _ = _toy7(120, seed=3)
    return sb, [Xv[:, g] for g in groups]


def test_model_parts_round_trip_and_keep_each_lookup_table_with_its_owner(predicted):
    from fedgauss.secureboost import part_model

    sb, _ = predicted
    parts = sb.model_parts()
    assert list(parts) == ['passive0', 'active', 'passive2']
    back = part_model(parts['active'])
    for t, u in zip(back['trees'], sb.trees_):
        for att in ('feature', 'threshold', 'bin', 'default_left', 'left', 'right', 'value', 'gain', 'depth'):
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att))
    for k, v in (('owners', sb.owners_), ('records', sb.records_)):
        assert [a.tolist() for a in back[k]] == [b.tolist() for b in v]
    assert back['base_margin'] == sb.base_margin_
    for n, p in zip(parts, sb.parties_):
        assert all(isinstance(v, np.ndarray) and v.dtype != object for v in parts[n].values())  # an .npz holds them
        if n != 'active':
            assert part_model(parts[n])['lookup'] == p.lookup
            assert not any(k.startswith('tree_') for k in parts[n])
    assert not any(k.startswith('lookup_') for k in parts['active'])


def test_each_prediction_program_holds_only_its_own_data(predicted):
    from fedgauss.secureboost import SECUREBOOST_PREDICT
    from fedgauss.smc import PROTOCOLS, protocol_programs, run_protocol

    sb, blocks = predicted
    assert PROTOCOLS['secureboost_predict'] is SECUREBOOST_PREDICT and SECUREBOOST_PREDICT.server is None
    datas, cfg = sb.predict_inputs(blocks)
    progs = protocol_programs(SECUREBOOST_PREDICT, datas, cfg)
    for p in progs:
        held = [v for v in p.gen.gi_frame.f_locals.values() if isinstance(v, dict) and 'X' in v]
        assert held == [datas[p.name]]
    assert not any(isinstance(v, np.ndarray) for v in cfg.values())  # nothing but sizes and names is public
    res, rounds, ch = run_protocol(SECUREBOOST_PREDICT, datas, cfg)
    np.testing.assert_array_equal(res['active']['margin'], sb.decision_function(blocks))
    assert [res[n] for n in ('passive0', 'passive2')] == [
        dict(queries=int((ch.transcript['receiver'] == n).sum())) for n in ('passive0', 'passive2')
    ]
    got = [m for m in ch.messages if m.receiver == 'active']
    assert {m.kind for m in got} == {'answer'} and all(set(m.payload) == {'bits'} for m in got)
    assert {m.kind for m in ch.messages if m.receiver != 'active'} == {'query'}


def test_prediction_check_refuses_a_party_before_any_message(predicted):
    from fedgauss.federation import Channel
    from fedgauss.secureboost import SECUREBOOST_PREDICT
    from fedgauss.smc import run_protocol

    sb, blocks = predicted
    ok, cfg = sb.predict_inputs(blocks)
    p0, act = ok['passive0'], ok['active']
    thr = act['tree_threshold'].copy()
    thr[np.flatnonzero((act['tree_owner'] == 0))[0]] = 0.5
    cut = lambda d, k: {**d, k: d[k][:-1]}
    for bad, match in [
        (
            dict(ok, passive2=dict(ok['passive2'], X=blocks[2][:, :1])),
            'passive2 has 1 columns; the federation expects 2',
        ),
        (dict(ok, passive0=dict(p0, X=blocks[0][:100])), 'passive0 has 100 rows'),
        (dict(ok, passive0=cut(p0, 'lookup_threshold')), "passive0's lookup table has"),
        (dict(ok, passive0=cut(cut(cut(p0, 'lookup_threshold'), 'lookup_feature'), 'lookup_default_left')), 'records'),
        (dict(ok, passive0=dict(p0, lookup_feature=p0['lookup_feature'] + 5)), 'outside its 3 columns'),
        (dict(ok, active=dict(act, **{k: p0[k] for k in p0 if k.startswith('lookup_')})), 'must never reach it'),
        (dict(ok, active=dict(act, tree_threshold=thr)), "threshold at a passive party's node"),
        (dict(ok, active=cut(act, 'tree_value')), 'node arrays'),
        (dict(ok, passive0=dict(p0, tree_value=act['tree_value'])), 'holds no trees'),
        (dict(ok, passive0=dict(p0, impute=np.zeros(3))), "'impute' must hold 0"),
    ]:
        ch = Channel()
        with pytest.raises(ValueError, match=match):
            run_protocol(SECUREBOOST_PREDICT, bad, cfg, channel=ch)
        assert len(ch.messages) == 0


# ----------------------------------------------------------------------------- rows aligned on IDs (issue 26)
@pytest.fixture(scope='module')
def framed():
    "Breast cancer as two DataFrames (labels with the first), a customer ID column, and the aligned fit."
    from fedgauss.data import load_breast_cancer

    X, y = load_breast_cancer()
    X.index = [f'c{i:03d}' for i in range(len(X))]
    y = pd.Series(np.asarray(y), index=X.index)
    (A, _), (B, _) = vertical_split(X, 2, y, label_party=0)
    kw = dict(n_estimators=2, max_depth=3, max_bins=16, **FAST)
    return dict(A=A, B=B, y=y, kw=kw, ref=SecureBoostClassifier(**kw).fit([(A, y), (B, None)]))


def assert_same_messages(a, b):
    "The two fits sent the same messages (round, sender, receiver, kind, bytes) and the same gh and hist ciphertexts."
    assert len(a.channel_.messages) == len(b.channel_.messages)
    for m, n in zip(a.channel_.messages, b.channel_.messages):
        assert (m.round, m.sender, m.receiver, m.kind, m.nbytes) == (n.round, n.sender, n.receiver, n.kind, n.nbytes)
        if m.kind in ('gh', 'hist'):
            p, r = (x if isinstance(x, dict) else dict(bins=x) for x in (m.payload, n.payload))
            assert p.keys() == r.keys()
            assert all(np.asarray(p[k]).tolist() == np.asarray(r[k]).tolist() for k in p)


def assert_same_model(a, b):
    for t, u in zip(a.trees_, b.trees_):
        for att in ('feature', 'bin', 'default_left', 'left', 'right', 'value', 'gain', 'sum_grad', 'sum_hess'):
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att), err_msg=att)
    assert [p.lookup for p in a.parties_] == [p.lookup for p in b.parties_]


def test_a_shuffled_passive_party_gives_the_aligned_model(framed):
    "Rows align on the index: the passive party's rows shuffled, the model is the aligned fit's; the frames untouched."
    A, B, y = framed['A'], framed['B'], framed['y']
    Bs, ys = B.sample(frac=1, random_state=1), y.sample(frac=1, random_state=2)
    copies = [A.copy(), Bs.copy(), ys.copy()]
    sb = SecureBoostClassifier(**framed['kw']).fit([(A, ys), (Bs, None)])
    assert_same_model(sb, framed['ref'])
    for before, now in zip(copies, (A, Bs, ys)):
        assert before.equals(now) and list(before.index) == list(now.index)
    positional = SecureBoostClassifier(**framed['kw']).fit([(A.to_numpy(), y.to_numpy()), (Bs.to_numpy(), None)])
    assert not all(np.array_equal(t.value, u.value) for t, u in zip(positional.trees_, framed['ref'].trees_))


def test_an_id_column_aligns_the_rows(framed):
    A, B, y = framed['A'], framed['B'], framed['y']
    Ai, Bi = (
        A.assign(customer=A.index).reset_index(drop=True),
        B.assign(customer=B.index).sample(frac=1, random_state=3),
    )
    sb = SecureBoostClassifier(id_column='customer', **framed['kw']).fit(
        [(Ai, y.to_numpy()), (Bi.reset_index(drop=True), None)]
    )
    assert_same_model(sb, framed['ref'])
    assert sb.n_features_in_ == framed['ref'].n_features_in_  # the ID column is not a feature


def test_predictions_align_and_come_in_the_active_partys_order(framed):
    "pandas in, pandas out: the active party's index and order, whatever the passive party's order."
    ref, A, B = framed['ref'], framed['A'], framed['B']
    rows = A.index[::-3]
    want = ref.predict_proba([A.loc[rows].to_numpy(), B.loc[rows].to_numpy()])
    got = ref.predict_proba([A.loc[rows], B.loc[rows].sample(frac=1, random_state=4)])
    assert isinstance(got, pd.DataFrame) and list(got.index) == list(rows) and list(got.columns) == [0, 1]
    np.testing.assert_array_equal(got.to_numpy(), want)
    m = ref.decision_function([A.loc[rows], B.loc[rows[::-1]]])
    assert isinstance(m, pd.Series) and list(m.index) == list(rows)
    np.testing.assert_array_equal(
        ref.predict([A.loc[rows], B.loc[rows]]).to_numpy(),
        ref.predict([A.loc[rows].to_numpy(), B.loc[rows].to_numpy()]),
    )
    assert isinstance(
        ref.predict_proba([A.loc[rows].to_numpy(), B.loc[rows].to_numpy()]), np.ndarray
    )  # arrays: as before


@pytest.mark.parametrize(
    'change, match',
    [
        (lambda B: B.iloc[:-2], r"party 1's row IDs are not party 0's: 2 of party 0's missing \('c567', 'c568'\)"),
        (lambda B: B.rename(index={'c000': 'x'}), r"1 not at party 0 \('x'\)"),
        (lambda B: B.rename(index={'c001': 'c000'}), r"party 1 has duplicated row IDs: 'c000'"),
        (lambda B: B.set_axis([np.nan] + list(B.index[1:])), 'party 1 has missing row IDs'),
        (lambda B: B.to_numpy(), 'pass all DataFrames'),
    ],
)
def test_mismatched_ids_stop_the_fit_before_any_message(framed, change, match):
    from fedgauss.federation import Channel

    with pytest.raises(ValueError, match=match):
        SecureBoostClassifier(**framed['kw']).fit([(framed['A'], framed['y']), (change(framed['B']), None)])
    with pytest.raises(ValueError, match=match):
        framed['ref'].predict([framed['A'], change(framed['B'])])


def test_labels_with_another_index_are_refused(framed):
    y = framed['y'].rename(index={'c000': 'zz'})
    with pytest.raises(ValueError, match="the labels' index is not party 0's rows"):
        SecureBoostClassifier(**framed['kw']).fit([(framed['A'], y), (framed['B'], None)])


# ----------------------------------------------------------------------------- the programs' module (issue 28)
@pytest.mark.parametrize(
    'code',
    [
        'import fedgauss.secureboost_programs as m; from fedgauss.secureboost import SECUREBOOST',
        'import fedgauss.secureboost as m; from fedgauss.secureboost import SECUREBOOST, FederatedHistograms',
        'from fedgauss.secureboost import SecureBoostClassifier as m',
    ],
)
def test_the_programs_load_in_any_order_and_register_both_protocols(code):
    "The per-party programs live in `fedgauss.secureboost_programs` (nb33a); importing either module registers both."
    import subprocess, sys

    check = code + "; from fedgauss.smc import PROTOCOLS; print(sorted(k for k in PROTOCOLS if 'secureboost' in k))"
    out = subprocess.run([sys.executable, '-c', check], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['secureboost', 'secureboost_predict']"


def test_the_programs_names_are_importable_from_secureboost():
    import fedgauss.secureboost as sb
    import fedgauss.secureboost_programs as programs

    assert programs.__all__ and all(getattr(sb, n) is getattr(programs, n) for n in programs.__all__)
    with pytest.raises(AttributeError, match='no attribute'):
        sb.no_such_name


# ----------------------------------------------------------------------------- PSI before the fit (issue 30 §1)
def _overlapping(X, y, groups, label_party, keep=0.8, seed=0, id_column=None):
    """Each party holds a random 80 % of the rows (its own IDs, shuffled), so the IDs overlap partly; the active party's
    labels indexed as its rows. Returns (parties, the common IDs, their rows in X)."""
    r = np.random.default_rng(seed)
    frames = []
    for k, g in enumerate(groups):
        at = np.flatnonzero(r.random(len(X)) < keep)
        d = pd.DataFrame(X[at][:, g], columns=[f'x{j}' for j in g], index=[f'id{i:04d}' for i in at])
        d = d.sample(frac=1, random_state=seed + k)
        if id_column is not None:
            d = d.rename_axis(id_column).reset_index()
        frames.append(d)
    ids = lambda d: d[id_column] if id_column is not None else d.index
    a = frames[label_party]
    ya = pd.Series(y[[int(s[2:]) for s in ids(a)]], index=a.index)
    common = sorted(set.intersection(*[set(ids(d)) for d in frames]))
    return [(d, ya if k == label_party else None) for k, d in enumerate(frames)], common, [int(s[2:]) for s in common]


def test_psi_fit_is_the_core_on_the_common_rows():
    """Parties whose IDs overlap partly: with psi=True the fit runs ECDH-PSI first (its rounds open the transcript), and
    the trees are the centralized ones fitted on the common rows; the parties' frames are untouched."""
    X, y = _toy7(500)
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    parts, common, rows = _overlapping(X, y, groups, 1)
    copies = [d.copy() for d, _ in parts]
    sb = SecureBoostClassifier(n_estimators=3, max_depth=3, max_bins=16, psi=True, **FAST).fit(parts)
    gb = GBDTClassifier(n_estimators=3, max_depth=3, max_bins=16).fit(
        np.hstack([X[rows][:, g] for g in groups]), y[rows]
    )
    assert_same_trees(sb, gb)
    assert sb.alignment_.size == len(common) < min(len(d) for d, _ in parts)
    for k, (d, _) in enumerate(parts):  # each party's rows of the common IDs, in one agreed order
        assert list(d.index[sb.alignment_.rows[k]]) == list(parts[1][0].index[sb.alignment_.rows[1]])
        assert d.equals(copies[k])
    tr = sb.channel_.transcript
    first_key = tr.loc[tr['kind'] == 'public_key', 'round'].min()
    assert set(tr.loc[tr['round'] < first_key, 'kind']) == {'blinded', 'double blinded', 'aligned'}
    assert sb.alignment_.rounds == {'blind': [2], 'double': [3], 'align': [4]}  # as psi_align's


def test_psi_predictions_cover_the_common_ids_indexed_by_the_active_party():
    X, y = _toy7(500)
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    parts, _, rows = _overlapping(X, y, groups, 1, id_column='customer')
    sb = SecureBoostClassifier(n_estimators=2, max_depth=3, max_bins=16, psi=True, id_column='customer', **FAST)
    sb.fit(parts)
    assert sb.n_features_in_ == 7  # the ID column is not a feature
    Xn, _ = _toy7(300, seed=5)
    new, common, nrows = _overlapping(Xn, np.zeros(300), groups, 1, keep=0.7, seed=7, id_column='customer')
    p = sb.predict_proba([d for d, _ in new])
    assert sorted(p.index) == common and p.index.name == 'customer'
    gb = GBDTClassifier(n_estimators=2, max_depth=3, max_bins=16).fit(
        np.hstack([X[rows][:, g] for g in groups]), y[rows]
    )
    want = gb.predict_proba(np.hstack([Xn[[int(s[2:]) for s in p.index]][:, g] for g in groups]))
    np.testing.assert_array_equal(p.to_numpy(), want)


def test_psi_predictions_keep_the_name_of_the_active_partys_index():
    """IDs in the index: the prediction's index is the active party's IDs under the index's own name."""
    X, y = _toy7(300)
    groups = [[0, 1, 2], [3, 4], [5, 6]]
    parts, _, _ = _overlapping(X, y, groups, 1)
    parts = [(d.rename_axis('patient'), None if t is None else t.rename_axis('patient')) for d, t in parts]
    sb = SecureBoostClassifier(n_estimators=1, max_depth=2, max_bins=8, psi=True, **FAST).fit(parts)
    p = sb.predict_proba([d for d, _ in parts])
    assert p.index.name == 'patient' and set(p.index) <= set(parts[1][0].index)


@pytest.mark.parametrize(
    'change, match',
    [
        (lambda ps: [(d.to_numpy(), y) for d, y in ps], 'psi=True aligns the parties on their IDs'),
        (lambda ps: [(d.set_axis(range(len(d))), y) if k == 0 else (d, y) for k, (d, y) in enumerate(ps)], 'types'),
        (lambda ps: [(d.set_axis([f'z{i}' for i in range(len(d))]), y) if k == 2 else (d, y) for k, (d, y) in
                     enumerate(ps)], 'share no ID'),
    ],
)  # fmt: skip
def test_psi_bad_input_names_the_problem(change, match):
    X, y = _toy7(200)
    parts, _, _ = _overlapping(X, y, [[0, 1, 2], [3, 4], [5, 6]], 1)
    with pytest.raises(ValueError, match=match):
        SecureBoostClassifier(n_estimators=1, max_depth=2, psi=True, **FAST).fit(change(parts))


# ----------------------------------------------------------------------------- SecureBoostRegressor (issue 29)
def test_regressor_is_lossless_against_gbdt_regressor_on_diabetes():
    """The squared loss (g = ŷ - y, h = 1): the federated trees are GBDTRegressor's bit for bit on scikit-learn's
    diabetes (bundled), 5 % of a passive column missing, the labels with the middle party; predictions equal exactly."""
    from sklearn.datasets import load_diabetes
    from fedgauss.gbdt import GBDTRegressor
    from fedgauss.secureboost import SecureBoostRegressor

    X, y = load_diabetes(return_X_y=True)
    X[np.random.default_rng(0).random(len(X)) < 0.05, 8] = np.nan
    groups = [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    for kw in (
        dict(n_estimators=4, max_depth=4, max_bins=32),
        dict(n_estimators=3, max_depth=3, gamma=50.0, min_child_weight=5.0),
    ):
        sb = SecureBoostRegressor(**FAST, **kw).fit(vertical_split(X, groups, y, label_party=1))
        gb = GBDTRegressor(**kw).fit(np.hstack([X[:, g] for g in groups]), y)
        assert_same_trees(sb, gb)
        np.testing.assert_array_equal(
            sb.predict([X[:, g] for g in groups]), gb.predict(np.hstack([X[:, g] for g in groups]))
        )
        assert sb.base_margin_ == gb.base_margin_
    assert sb.score([X[:, g] for g in groups], y) == gb.score(np.hstack([X[:, g] for g in groups]), y)


def test_regressor_follows_scikit_learns_conventions():
    """What of `check_estimator` applies: parameters (defaults, get/set, clone, nothing set in __init__), a regressor's
    tags and `score`; fit takes the parties' blocks (`vertical_split`), not (X, y), so the checks that call fit(X, y)
    do not apply."""
    from sklearn.base import is_regressor, is_classifier
    from sklearn.utils.estimator_checks import (
        check_get_params_invariance,
        check_no_attributes_set_in_init,
        check_parameters_default_constructible,
        check_set_params,
    )
    from fedgauss.secureboost import SecureBoostRegressor

    for est in (SecureBoostRegressor(), SecureBoostClassifier()):
        name = type(est).__name__
        check_parameters_default_constructible(name, est)
        check_no_attributes_set_in_init(name, est)
        check_get_params_invariance(name, est)
        check_set_params(name, est)
        assert clone(est).get_params() == est.get_params()
    assert is_regressor(SecureBoostRegressor()) and not is_classifier(SecureBoostRegressor())
    with pytest.raises(ValueError, match='finite'):
        X, y, p = _parts()
        SecureBoostRegressor(**FAST).fit([(p[0][0], np.r_[np.inf, y[1:]]), p[1]])


def test_regressor_reveals_the_passive_bins_row_counts_exactly():
    """With h = 1 for every row, every decrypted Hessian sum of a passive bin is that bin's row count times the grid's
    2^k: the active party learns how many of a node's rows fall in each passive bin, exactly (every node, every bin)."""
    from sklearn.datasets import load_diabetes
    from fedgauss.secureboost import SecureBoostRegressor, active_party_view

    X, y = load_diabetes(return_X_y=True)
    sb = SecureBoostRegressor(n_estimators=2, max_depth=3, max_bins=16, **FAST).fit(vertical_split(X, 2, y))
    view, n_bins = active_party_view(sb, 'passive1')
    p, checked = sb.parties_[1], 0
    slots = p.slots  # each row's slot per feature in the passive party's histograms
    for o in view:
        assert (o['H'] == o['H'][0]).all()  # h = 1 on the grid: one integer for every row
        for v, s in o['hist'].items():
            true = np.bincount(slots[o['rows'][v]].ravel(), minlength=s.shape[1])
            np.testing.assert_array_equal(s[1] // o['H'][0], true)
            assert (s[1] % o['H'][0] == 0).all()
            checked += 1
    assert checked >= 4


# ----------------------------------------------------------------------------- on every core (issue 32)
def test_every_core_gives_the_serial_runs_messages_and_trees():
    """n_jobs=2: the active party's encryption and decryption and the passive parties' encrypted sums run in worker
    processes; every message (ciphertexts included, byte for byte), every tree and every margin is the serial run's."""
    import fedgauss.paillier as paillier

    X, y = _toy7(1500)
    parts = vertical_split(X, [[0, 1, 2], [3, 4], [5, 6]], y, label_party=1)
    kw = dict(n_estimators=2, max_depth=4, max_bins=32, **FAST)
    one = SecureBoostClassifier(n_jobs=1, **kw).fit(parts)
    k0 = next(paillier._KEYS)
    two = SecureBoostClassifier(n_jobs=2, **kw).fit(parts)
    assert next(paillier._KEYS) - k0 - 1 > 0  # batches did go to worker processes
    assert_same_messages(one, two)
    assert_same_model(one, two)
    np.testing.assert_array_equal(one.train_margin_, two.train_margin_)
    blocks = [X[:200, g] for g in ([0, 1, 2], [3, 4], [5, 6])]
    np.testing.assert_array_equal(one.decision_function(blocks), two.decision_function(blocks))


# ---- the obfuscator table built as the active party sets up (issue 32) ----
def test_the_obfuscator_table_built_at_setup_changes_no_message(monkeypatch):
    """The active party builds its Damgard-Jurik-Nielsen table as it sets up, its window sized for rows x trees; the
    table takes its base from the same generator first, so every ciphertext, message and tree is that of a table built
    at the first encryption (with the window for that one batch)."""
    from fedgauss.paillier import fixed_base_window
    from fedgauss.secureboost import ActiveParty

    X, y = _toy7(800)
    parts = vertical_split(X, [[0, 1, 2], [3, 4], [5, 6]], y, label_party=1)
    kw = dict(n_estimators=2, max_depth=3, max_bins=16, **FAST)
    ahead = SecureBoostClassifier(**kw).fit(parts)
    monkeypatch.setattr(ActiveParty, 'prepare_obfuscators', lambda self, rng, draws: None)
    late = SecureBoostClassifier(**kw).fit(parts)
    windows = [m.active_.sk._table[1].tables[0].window for m in (ahead, late)]
    assert windows == [fixed_base_window(256, 800 * 2), fixed_base_window(256, 4096)] and windows[0] != windows[1]
    assert_same_messages(ahead, late)
    assert_same_model(ahead, late)


# ---- worker processes kept between batches (issue 32) ----
def test_worker_processes_fork_once_a_fit_at_every_party(monkeypatch):
    """n_jobs=2: the active party's processes are forked once (holding its key and table) and compute each next tree's
    obfuscators in the background; a passive party's are forked once too, each tree's ciphertexts reaching them through
    shared memory (`SharedInts`; before, once a tree, holding that tree's ciphertexts). A pool forked per batch (as
    before that) forks a dozen times a tree. Messages and trees are the serial run's; every process has ended."""
    import multiprocessing

    import fedgauss.paillier as paillier
    from fedgauss.secureboost import ActiveParty

    X, y = _toy7(1500)
    parts = vertical_split(X, [[0, 1, 2], [3, 4], [5, 6]], y, label_party=1)
    kw = dict(n_estimators=3, max_depth=4, max_bins=32, **FAST)
    one = SecureBoostClassifier(n_jobs=1, **kw).fit(parts)
    fork, forks, ahead = multiprocessing.get_context('fork'), [], []
    Pool, prefetch = fork.Pool, ActiveParty.prefetch_obfuscators
    monkeypatch.setattr(fork, 'Pool', lambda *a, **k: forks.append(a) or Pool(*a, **k))
    monkeypatch.setattr(ActiveParty, 'prefetch_obfuscators', lambda self, rng: ahead.append(1) or prefetch(self, rng))
    two = SecureBoostClassifier(n_jobs=2, **kw).fit(parts)
    assert len(forks) == 1 + 2  # the active party once; each of two passive parties once (not once a tree)
    assert len(ahead) == 2  # the obfuscators of trees 2 and 3, started while trees 1 and 2 grew
    assert_same_messages(one, two)
    assert_same_model(one, two)
    assert not paillier._LIVE and not paillier._SHARED  # every pool closed, nothing held


def test_a_fit_stopped_mid_tree_ends_every_worker_process_when_its_programs_close(monkeypatch, stop_run_after):
    """The run stops while the parties' worker processes run; closing the suspended programs (as at interpreter exit,
    the modules' names cleared) ends every pool without an error."""
    import fedgauss.paillier as paillier
    import fedgauss.secureboost_programs as sbp

    pools = []
    run = stop_run_after(40, on_stop=lambda: pools.extend(paillier._LIVE))
    X, y = _toy7(1500)
    parts = vertical_split(X, [[0, 1, 2], [3, 4], [5, 6]], y, label_party=1)
    with pytest.raises(RuntimeError, match='stops here'):
        SecureBoostClassifier(n_jobs=2, n_estimators=3, max_depth=4, max_bins=32, **FAST).fit(parts)
    gens = run.suspended('secureboost_party')
    assert len(gens) == 3 and len(pools) == 3  # suspended inside a tree, each party's processes running
    for name in ('WorkerPool', 'PeerFinished', 'n_workers'):
        monkeypatch.setattr(sbp, name, None)  # what interpreter exit does to the module's names
    monkeypatch.setattr(paillier, '_LIVE', None)
    monkeypatch.setattr(paillier, '_SHARED', None)
    for g in gens:
        g.close()
    assert all(p.pool is None for p in pools)
