"""fedgauss.secureboost with K >= 3 classes (issue 29): one tree per class a round, lossless against the core's
softprob `GBDTClassifier` (trees bit for bit, probabilities to float precision, the three missing-value options);
multi-output trees (SBT-MO), lossless against their plaintext reference, with the K classes packed per ciphertext
(one, or several when the key holds fewer than K); what each party receives; pandas in and out; bad input."""

import numpy as np
import pandas as pd
import pytest

from fedgauss.federation import vertical_split
from fedgauss.gbdt import GBDTClassifier, HistLayout, build_histograms
from fedgauss.secureboost import (
    SecureBoostClassifier,
    SecureBoostRegressor,
    bins_per_ciphertext,
    class_chunks,
    multi_output_boost,
    multi_output_margin,
    multi_output_splits,
    pack_classes,
    passive_leaves,
    round_costs,
    unpack_bins,
    unpack_gh,
)

FAST = dict(key_size=512, unsafe=True, rng=0)  # tests only: a breakable key, for speed
GROUPS = [[0, 1, 2], [3, 4], [5, 6]]
ATTS = ('feature', 'bin', 'default_left', 'left', 'right', 'value', 'gain', 'sum_grad', 'sum_hess')


def toy(n=500, K=3, seed=1):
    r = np.random.default_rng(seed)
    X = r.normal(size=(n, 7))
    X[:, 3] = r.integers(0, 5, n)
    X[r.random(n) < 0.15, 5] = np.nan
    z = X[:, 0] + X[:, 3] * 0.5 - np.nan_to_num(X[:, 5], nan=1.0) + r.normal(size=n)
    return X, np.digitize(z, np.quantile(z, np.arange(1, K) / K))


def pooled(X):
    return np.hstack([X[:, g] for g in GROUPS])


def assert_same_trees(sb, trees):
    "The federated trees are `trees` bit for bit; the owners' lookup tables hold their thresholds."
    assert len(sb.trees_) == len(trees)
    for t, c, own, rec in zip(sb.trees_, trees, sb.owners_, sb.records_):
        for att in ATTS:
            np.testing.assert_array_equal(getattr(t, att), getattr(c, att), err_msg=att)
        thr = t.threshold.copy()
        for i in np.flatnonzero(np.isnan(thr) & (own >= 0)):
            thr[i] = sb.parties_[own[i]].lookup[rec[i]][1]
        np.testing.assert_array_equal(thr, c.threshold)


@pytest.mark.parametrize('missing', ['learn', 'impute', 'probabilistic'])
def test_one_tree_per_class_is_lossless_against_softprob(missing):
    X, y = toy()
    kw = dict(n_estimators=3, max_depth=4, max_bins=16, missing=missing)
    sb = SecureBoostClassifier(**FAST, **kw).fit(vertical_split(X, GROUPS, y, label_party=1))
    gb = GBDTClassifier(**kw).fit(pooled(X), y)
    assert_same_trees(sb, gb.trees_)  # tree t K + k is class k's, in both
    np.testing.assert_array_equal(sb.base_margin_, gb.base_margin_)
    Xv, _ = toy(200, seed=2)
    p = sb.predict_proba([Xv[:, g] for g in GROUPS])
    assert p.shape == (200, 3) and np.abs(p - gb.predict_proba(pooled(Xv))).max() <= 1e-12
    np.testing.assert_array_equal(sb.predict([Xv[:, g] for g in GROUPS]), gb.predict(pooled(Xv)))


def test_seven_classes_one_tree_per_class_with_the_labels_at_the_last_party():
    X, y = toy(400, K=7, seed=3)
    kw = dict(n_estimators=2, max_depth=3, max_bins=8, reg_lambda=0.5, min_child_weight=0.5)
    sb = SecureBoostClassifier(**FAST, **kw).fit(vertical_split(X, GROUPS, y, label_party=2))
    gb = GBDTClassifier(**kw).fit(pooled(X), y)
    assert_same_trees(sb, gb.trees_)
    m = sb.decision_function([X[:, g] for g in GROUPS])
    assert np.abs(m - gb.decision_function(pooled(X))).max() <= 1e-12


@pytest.mark.parametrize('K, widths', [(3, [3]), (7, [5, 2])])
def test_multi_output_is_its_plaintext_reference(K, widths):
    "512-bit keys hold 5 classes a ciphertext: 3 classes in one, 7 in two per row."
    X, y = toy(400, K=K, seed=K)
    kw = dict(n_estimators=3, max_depth=4, max_bins=16)
    sb = SecureBoostClassifier(**FAST, multi_output=True, **kw).fit(vertical_split(X, GROUPS, y, label_party=0))
    assert sb.active_.widths == widths == class_chunks(K, bins_per_ciphertext(sb.active_.pk.n))
    ref = multi_output_boost(pooled(X), y, **kw)
    assert_same_trees(sb, ref['trees'])
    assert sb.trees_[0].value.shape[1] == K
    Xv, _ = toy(150, K=K, seed=9)
    m = sb.decision_function([Xv[:, g] for g in GROUPS])
    assert np.abs(m - multi_output_margin(ref['trees'], ref['base_margin'], pooled(Xv))).max() <= 1e-12
    gh = [msg for msg in sb.channel_.messages if msg.kind == 'gh' and msg.receiver == 'passive1']
    assert len(gh) == 3 and all(len(msg.payload) == len(widths) * len(y) for msg in gh)


def test_multi_output_with_missing_probabilistic_and_reduced_leakage():
    X, y = toy(300, seed=4)
    kw = dict(n_estimators=3, max_depth=3, max_bins=8)
    for extra in (dict(missing='probabilistic'), dict(rl_trees=1)):
        sb = SecureBoostClassifier(**FAST, multi_output=True, **kw, **extra).fit(vertical_split(X, GROUPS, y))
        p = sb.predict_proba([X[:, g] for g in GROUPS])
        assert p.shape == (300, 3) and np.allclose(p.sum(1), 1)
        assert (sb.predict([X[:, g] for g in GROUPS]) == y).mean() > 0.5
    gh = [m for m in sb.channel_.messages if m.kind == 'gh']
    assert len(gh) == 2 * 2  # rl_trees=1: the first round sends nothing; two rounds to two passive parties


def test_what_the_passive_party_receives_per_round():
    "One tree per class: K ciphertext vectors and K trees' routes a round; multi-output: one of each."
    X, y = toy(300, seed=5)
    kw = dict(n_estimators=2, max_depth=3, max_bins=8)
    parts = vertical_split(X, GROUPS, y)
    per = SecureBoostClassifier(**FAST, **kw).fit(parts)
    mo = SecureBoostClassifier(**FAST, multi_output=True, **kw).fit(parts)
    assert len(passive_leaves(per.channel_, 'passive1', 300)) == 6
    assert len(passive_leaves(mo.channel_, 'passive1', 300)) == 2
    for sb in (per, mo):
        for m in sb.channel_.messages:
            if m.receiver != 'active' and m.kind not in ('gh', 'public_key'):
                assert not any(
                    np.asarray(v).dtype.kind == 'f'
                    for v in (m.payload.values() if isinstance(m.payload, dict) else [m.payload])
                )
    c_per, c_mo = round_costs(per), round_costs(mo)
    assert c_per['gh_ciphertexts'] == 3 * c_mo['gh_ciphertexts'] == 3 * 2 * 300


def test_dataframes_in_and_labels_out():
    X, y = toy(300, seed=6)
    names = np.array(['ant', 'bee', 'cat'])
    frames = [pd.DataFrame(X[:, g], index=[f'r{i}' for i in range(300)]) for g in GROUPS]
    parts = [(f, pd.Series(names[y], index=f.index) if i == 0 else None) for i, f in enumerate(frames)]
    for mo in (False, True):
        sb = SecureBoostClassifier(**FAST, n_estimators=2, max_depth=3, max_bins=8, multi_output=mo).fit(parts)
        p = sb.predict_proba(frames)
        assert isinstance(p, pd.DataFrame) and list(p.columns) == list(names) and p.index.equals(frames[0].index)
        d = sb.decision_function(frames)
        assert isinstance(d, pd.DataFrame) and d.shape == (300, 3)
        pr = sb.predict(frames)
        assert set(pr) <= set(names) and (pr.to_numpy() == names[y]).mean() > 0.5


def test_packing_k_classes_round_trips():
    assert class_chunks(10, 9) == [9, 1] and class_chunks(10, 19) == [10] and class_chunks(8, 4) == [4, 4]
    r = np.random.default_rng(0)
    G, H = r.integers(-(2**43), 2**43, (40, 5)), r.integers(0, 2**43, (40, 5))  # sums within the grid's
    pt = pack_classes(G, H, [3, 2])
    n = 2**700 + 3
    got = [unpack_gh(b) for j, w in enumerate((3, 2)) for b in unpack_bins(sum(pt[j::2]) % n, n, w)]
    np.testing.assert_array_equal(np.array(got), np.stack([G.sum(0), H.sum(0)], 1))
    with pytest.raises(ValueError, match='K = sum'):
        pack_classes(G, H, [3, 3])


def test_multi_output_split_is_the_brute_force():
    lay = HistLayout(np.array([4, 2, 3]))
    r = np.random.default_rng(2)
    sc = lambda s: sum(s[2 * k] ** 2 / (s[2 * k + 1] + 1.0) for k in range(len(s) // 2))
    for _ in range(30):
        codes = r.integers(0, lay.n_bins + 1, (25, 3))  # 25 rows, code n_bins[f]: missing
        gh = np.zeros((25, 8))
        gh[:, 0::2], gh[:, 1::2] = r.integers(-8, 8, (25, 4)) / 4, r.integers(0, 8, (25, 4)) / 4
        h = build_histograms(lay.slots(codes), gh, n_slots=lay.n_slots)[0]
        T = h[lay.ptr[0] : lay.ptr[1]].sum(0)
        s = multi_output_splits(h[None], lay, T[None], 1.0, 1.0)
        f, b, dl = int(s.feature[0]), int(s.bin[0]), bool(s.default_left[0])
        L = h[lay.ptr[f] : lay.ptr[f] + b + 1].sum(0) + (h[lay.missing_slot[f]] if dl else 0)
        np.testing.assert_allclose(s.left_sum[0], L)
        np.testing.assert_allclose(s.gain[0], sc(L) + sc(T - L) - sc(T), rtol=1e-12)
        best = -np.inf  # no candidate does better
        for f2 in range(lay.n_features):
            for b2 in range(lay.n_bins[f2]):
                for d2 in (False, True):
                    L2 = h[lay.ptr[f2] : lay.ptr[f2] + b2 + 1].sum(0) + (h[lay.missing_slot[f2]] if d2 else 0)
                    if min(L2[1::2].sum(), (T - L2)[1::2].sum()) >= 1.0:
                        best = max(best, sc(L2) + sc(T - L2) - sc(T))
        assert s.gain[0] >= best - 1e-9


def test_bad_multiclass_input():
    X, y = toy(100, seed=7)
    parts = vertical_split(X, GROUPS, y)
    with pytest.raises(ValueError, match='multi_output must be True or False'):
        SecureBoostClassifier(**FAST, multi_output='yes').fit(parts)
    with pytest.raises(ValueError, match='multi_output=True is for a classifier'):
        SecureBoostRegressor(**FAST, multi_output=True).fit(vertical_split(X, GROUPS, X[:, 0]))
    with pytest.raises(ValueError, match='base_score must be a probability'):
        SecureBoostClassifier(**FAST, base_score=[0.5, 0.5]).fit(parts)


def test_the_active_partys_check_refuses_labels_outside_the_classes():
    from fedgauss.secureboost import secureboost_check

    X, y = toy(60, seed=8)
    cfg = SecureBoostClassifier(**FAST).protocol_config(['active', 'passive1'], [4, 3], 60, n_classes=3)
    cfg['me'] = 'active'
    secureboost_check(dict(X=X[:, :4], y=y.astype(float)), cfg)  # 0, 1, 2: fine
    for bad in (np.r_[y[:-1], 3], np.r_[y[:-1], 0.5], y[:-1]):
        with pytest.raises(ValueError, match='active: the labels .y. must be classes 0 .. n_classes - 1'):
            secureboost_check(dict(X=X[:, :4], y=bad.astype(float)), cfg)


def test_multi_output_on_two_processes_sends_the_serial_runs_messages():
    "n_jobs=2: the chunks' encrypted sums in worker processes give every message and tree of the serial run."
    X, y = toy(1200, K=7, seed=10)
    parts = vertical_split(X, GROUPS, y, label_party=1)
    kw = dict(n_estimators=2, max_depth=3, max_bins=32, multi_output=True, **FAST)
    one, two = (SecureBoostClassifier(n_jobs=j, **kw).fit(parts) for j in (1, 2))
    assert len(one.channel_.messages) == len(two.channel_.messages)
    for a, b in zip(one.channel_.messages, two.channel_.messages):
        assert (a.round, a.sender, a.receiver, a.kind, a.nbytes) == (b.round, b.sender, b.receiver, b.kind, b.nbytes)
        if a.kind in ('gh', 'hist'):
            pa, pb = (p if isinstance(p, dict) else dict(bins=p) for p in (a.payload, b.payload))
            assert pa.keys() == pb.keys()
            assert all(np.asarray(pa[k]).tolist() == np.asarray(pb[k]).tolist() for k in pa)
    for t, u in zip(one.trees_, two.trees_):
        for att in ATTS:
            np.testing.assert_array_equal(getattr(t, att), getattr(u, att))


def test_both_attacks_take_a_multi_output_model():
    from fedgauss.secureboost import active_party_view, bin_recovery_attack, label_inference_attack

    X, y = toy(200, seed=11)
    mo = SecureBoostClassifier(**FAST, n_estimators=1, max_depth=2, multi_output=True).fit(vertical_split(X, GROUPS, y))
    view, _ = active_party_view(mo, 'passive1')
    assert len(view) == 3 and all(o['G'].shape == (200,) for o in view)  # one entry a class
    assert bin_recovery_attack(mo)['errors'] == 0
    r = label_inference_attack(mo, y)
    assert 0 <= r['accuracy'] <= 1 and r['base_rate'] == pytest.approx(np.bincount(y).max() / len(y))
    with pytest.raises(ValueError, match="labels outside the model's classes"):
        label_inference_attack(mo, y + 5)
    with pytest.raises(ValueError, match='199 labels for 200 training rows'):
        label_inference_attack(mo, y[:-1])


def test_a_multi_output_tree_prints_its_leaf_vectors():
    "`str(tree)` of a multi-output tree: each leaf line holds the K weights, XGBoost's `leaf=[...]`."
    X, y = toy(200, K=3, seed=2)
    sb = SecureBoostClassifier(**FAST, multi_output=True, n_estimators=1, max_depth=2, max_bins=8)
    sb.fit(vertical_split(X, GROUPS, y, label_party=0))
    t = sb.trees_[0]
    leaves = [line for line in str(t).splitlines() if ':leaf=' in line]
    assert len(leaves) == int(t.is_leaf.sum())
    for line in leaves:
        j = int(line.strip().split(':')[0])
        got = [float(v) for v in line.split('leaf=[')[1].split(']')[0].split(',')]
        np.testing.assert_allclose(got, t.value[j], rtol=1e-5)
