"""DP federated GBDT with K >= 3 classes (issue 29): the softmax release's l2 sensitivity (checked on the client's own
code, neighbour by neighbour), the queries and the epsilon recomputed from the transcript alone, the noise scales
calibrated to the derived sensitivities, the round's K class trees against a brute force, labels and probabilities,
and the refusals."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax
from sklearn.datasets import load_iris, make_classification

from fedgauss.dp import RDPAccountant, gaussian_epsilon
from fedgauss.dpgbdt import (
    DPGBDTClassifier,
    DPGBDTClient,
    clip_rows,
    clipped_gain,
    initial_candidates,
    random_tree_splits,
    route,
    softmax_gh,
    softmax_sensitivity,
)
from fedgauss.dpgbdt_programs import dpgbdt_check
from fedgauss.federation import Channel

NC, J = 3, 4  # clients, classes
PUB = dict(feature_bounds=(-8, 8), max_rows=1500)


@pytest.fixture(scope='module')
def data():
    return make_classification(1500, 6, n_informative=4, n_classes=J, n_clusters_per_class=1, random_state=0)


def _fit(data, **kw):
    X, y = data
    kw = {**dict(n_estimators=6, n_clients=NC, rng=0, n_candidates=8, max_depth=3), **PUB, **kw}
    return DPGBDTClassifier(**kw).fit(X, y)


def _recount(m):
    """Queries per component recomputed from the transcript alone: a release of the K class trees of a round carries K
    times the binary tree's values (the row-total Hessian histogram does not), and costs what the binary one costs."""
    t = m.channel_.transcript
    t = t[t.sender.str.startswith('client') & t.kind.str.startswith('noisy ')]
    vals = t.groupby('kind').bytes.sum() / 8 / NC  # values released per component (each client sends all of them)
    mult = 2 if m.gh_release == 'split' else 1
    L, Q1, d = 2**m.max_depth, m.n_candidates + 1, m.max_depth
    per = {
        'leaves': lambda v: v / (2 * L * J) * mult,  # one (G, H) leaf vector per class tree, one query per round
        'hessian histogram': lambda v: v / Q1,  # one query per feature histogram
        'histograms': lambda v: v / (2 * (L - 1) * Q1 * J) * d * mult,
        'root': lambda v: v / (2 * J) * mult,
        'left sums': lambda v: v / (2 * (L - 1) * J) * d * mult,
    }
    return {kind[len('noisy ') :]: int(round(per[kind[len('noisy ') :]](v))) for kind, v in vals.items()}


CONFIGS = [
    dict(),
    dict(gh_release='vector'),
    dict(split_method='hist', split_candidates='uniform'),
    dict(split_method='partially_random', split_candidates='uniform'),
    dict(feature_interaction='cyclical', k=1, ih_rounds=2),
    dict(weight_update='gradient', noise='aggregator'),
]


@pytest.mark.parametrize('kw', CONFIGS, ids=[str(c) for c in CONFIGS])
@pytest.mark.parametrize('accountant', ['rdp', 'exact'])
def test_transcript_recount_gives_back_epsilon(data, kw, accountant):
    "As for binary (test_dpgbdt.py): the plan's queries, recounted from the transcript, give back the target epsilon."
    m = _fit(data, accountant=accountant, epsilon=1.0, **kw)
    assert len(m.classes_) == J and m.tree_leaves_.shape[0] == J * len(m.tree_features_) // J
    q = _recount(m)
    assert q == m.queries_
    binary = _fit((data[0], data[1] % 2), accountant=accountant, epsilon=1.0, **kw)
    assert binary.queries_ == m.queries_  # K class trees per round cost the queries of one binary tree
    C = sum(q.values())
    z, delta = m.noise_multiplier_, 1 / 1500
    eps = (
        RDPAccountant().add_gaussian(z, C).epsilon(delta)
        if accountant == 'rdp'
        else gaussian_epsilon(z / math.sqrt(C), delta)
    )
    assert 1.0 - 1e-4 < eps <= 1.0, eps
    assert m.privacy_spent_[0] == pytest.approx(eps) and m.privacy_spent_[1] == delta


@pytest.mark.parametrize('wu', ['newton', 'gradient'])
def test_noise_is_calibrated_to_the_softmax_sensitivities(data, wu):
    "Each component's integer sensitivity is 2^f Δ + sqrt(d_max), with Δ the derived one and d_max K times binary's."
    m = _fit(data, epsilon=1.0, weight_update=wu)
    b = _fit((data[0], data[1] % 2), epsilon=1.0, weight_update=wu)
    dg, dh, dih = softmax_sensitivity(J, wu)
    assert m._dmax == J * b._dmax
    f = 2.0**m.frac_bits_
    assert m._dz == pytest.approx(
        dict(g=f * dg + math.sqrt(m._dmax), h=f * dh + math.sqrt(m._dmax), ih=f * dih + math.sqrt(m._dmax))
    )


def test_sensitivity_bounds_by_search():
    "Random search over p (concentrated to flat) and labels, plus the vertices with a wrong label: never above."
    g = np.random.default_rng(0)
    for K in (3, 5, 10):
        dg, dh, dih = softmax_sensitivity(K)
        p = np.vstack([g.dirichlet(np.full(K, a), 5000) for a in (0.01, 0.5, 1.0, 50.0)] + [np.eye(K)])
        y = np.eye(K)[g.integers(K, size=len(p))]
        y[-K:] = np.roll(np.eye(K), 1, 0)
        gr, h = p - y, 2 * p * (1 - p)
        assert np.linalg.norm(gr, axis=1).max() <= dg + 1e-12 and np.linalg.norm(gr, axis=1).max() > dg - 1e-9
        assert np.abs(gr).sum(1).max() <= 2 + 1e-12
        assert np.linalg.norm(h, axis=1).max() <= dh and h.sum(1).max() <= dih + 1e-12
        assert np.linalg.norm(h, axis=1).max() >= 2 * (K - 1) / K**1.5 - 1e-3  # the uniform p: the bound is near
    np.testing.assert_allclose(np.linalg.norm(clip_rows(g.normal(size=(50, 3)) * 9, 2.0), axis=1), 2.0)


def test_hessian_bound_is_the_maximum_over_the_simplex():
    """Δ_h = 4 / (3 sqrt 3) for every K >= 3: a local search (SLSQP on the simplex, many starts) never exceeds it, and
    three classes sharing the mass equally reach it; the cruder sqrt(1 - 1/K) is larger."""
    from scipy.optimize import minimize

    g = np.random.default_rng(2)
    for K in (3, 5, 10):
        dh = softmax_sensitivity(K)[1]
        neg = lambda p: -np.sum((2 * p * (1 - p)) ** 2)
        cons = ({'type': 'eq', 'fun': lambda p: p.sum() - 1},)
        best = max(
            -minimize(neg, g.dirichlet(np.ones(K)), bounds=[(0, 1)] * K, constraints=cons, method='SLSQP').fun
            for _ in range(40)
        )
        assert math.sqrt(best) <= dh + 1e-9 and math.sqrt(best) > dh - 1e-6
        assert dh == pytest.approx(np.linalg.norm(np.full(3, 4 / 9)), rel=1e-15) and dh < math.sqrt(1 - 1 / K)


def test_one_row_moves_a_release_by_at_most_the_bound():
    """Neighbours on the client's own code: the K class trees' leaf sums without row r differ from those with it by
    at most (sqrt 2, 4 / (3 sqrt 3)) in l2, for every r; margins far from 0 bring the gradient bound close."""
    gen = np.random.default_rng(1)
    n, F, K, d = 200, 3, 4, 3
    X, y = gen.normal(size=(n, F)), gen.integers(K, size=n).astype(float)
    cand = initial_candidates('uniform', np.full(F, -3.0), np.full(F, 3.0), 8)
    trees = [random_tree_splits(cand, [0, 1, 2], d, gen) for _ in range(K)]
    f = np.stack([t[0] for t in trees])
    thr = np.stack([np.where(t[1] >= 0, cand[t[0], np.maximum(t[1], 0)], np.inf) for t in trees])
    margin = gen.normal(size=(n, K)) * 8

    def sums(rows):
        c = DPGBDTClient('c', Channel(), X[rows], y[rows])
        c.setup(cand, 'softmax', *softmax_sensitivity(K)[:2], 'newton', 1.0, n_outputs=K)
        c.margin = margin[rows]
        c.gradients()
        return c.leaf_sums(f, thr, d)

    G, H = sums(np.arange(n))
    dG = [np.linalg.norm(G - sums(np.delete(np.arange(n), r))[0]) for r in range(n)]
    dH = [np.linalg.norm(H - sums(np.delete(np.arange(n), r))[1]) for r in range(0, n, 7)]
    assert max(dG) <= math.sqrt(2) + 1e-9 and max(dG) > 1.3
    assert max(dH) <= 4 / (3 * math.sqrt(3)) + 1e-9


def test_first_round_leaves_against_a_brute_force():
    "Non-private, round 0 (p = 1/K): each class tree's leaves are -G/(H + λ) of its own rows, summed by hand."
    X, y = load_iris(return_X_y=True)
    m = DPGBDTClassifier(epsilon=None, n_estimators=1, learning_rate=1.0, leaf_clip=math.inf, n_clients=3, rng=2)
    m.fit(X, y)
    K = 3
    g, h = softmax_gh(np.zeros((len(y), K)), y)
    for j in range(K):
        leaf = route(X, m.tree_features_[j], m.tree_thresholds_[j], m.max_depth)
        G, H = np.bincount(leaf, g[:, j], 2**m.max_depth), np.bincount(leaf, h[:, j], 2**m.max_depth)
        want = np.where(H > 0, -G / (H + m.reg_lambda), 0.0)
        np.testing.assert_allclose(m.tree_leaves_[j], want, atol=1e-3)  # fixed point: 2^-16 per row


def test_hist_root_splits_against_a_brute_force():
    """Non-private hist, round 0: each class tree's root split has the largest gain of its own class over every
    feature and candidate (ties, e.g. the thresholds that all separate setosa, may go either way)."""
    X, y = load_iris(return_X_y=True)
    m = DPGBDTClassifier(epsilon=None, split_method='hist', split_candidates='uniform', n_estimators=1, max_depth=2)
    m.set_params(n_clients=3, rng=0, n_candidates=16).fit(X, y)
    g, h = softmax_gh(np.zeros((len(y), 3)), y)
    cand = initial_candidates('uniform', X.min(0), X.max(0), 16)
    gain = lambda x, t, j: clipped_gain(
        g[x < t, j].sum(), h[x < t, j].sum(), g[x >= t, j].sum(), h[x >= t, j].sum(), 1.0
    )
    for j in range(3):
        best = max(gain(x, t, j) for x, c in zip(X.T, cand) for t in c[np.isfinite(c)])
        got = gain(X[:, m.tree_features_[j, 0]], m.tree_thresholds_[j, 0], j)
        assert got == pytest.approx(best, rel=1e-6) and best > 1, (j, got, best)


@pytest.mark.parametrize(
    'labels',
    [np.array(['setosa', 'versicolor', 'virginica']), np.array([30, 10, 20]), np.array([2.0, -1.0, 7.0])],
    ids=['str', 'int', 'float'],
)
def test_labels_classes_and_probabilities(labels):
    X, y = load_iris(return_X_y=True)
    yy = labels[y]
    m = DPGBDTClassifier(epsilon=4.0, feature_bounds=(0, 8), max_rows=150, n_estimators=10, n_clients=3, rng=0)
    m.fit(X, yy)
    np.testing.assert_array_equal(m.classes_, np.unique(labels))
    p = m.predict_proba(X)
    assert p.shape == (150, 3) and np.allclose(p.sum(1), 1.0) and (p >= 0).all()
    np.testing.assert_array_equal(m.predict(X), m.classes_[p.argmax(1)])
    np.testing.assert_allclose(softmax(m.decision_function(X), axis=1), p)
    assert set(m.predict(X)) <= set(labels) and (m.predict(X) == yy).mean() > 0.6
    Xd = pd.DataFrame(X, columns=list('abcd'))
    md = DPGBDTClassifier(**m.get_params()).fit(Xd, pd.Series(pd.Categorical(yy)))
    np.testing.assert_array_equal(md.predict_proba(Xd), p)  # a DataFrame and categorical labels: the same model


def test_non_private_learns():
    X, y = load_iris(return_X_y=True)
    for sm in ('totally_random', 'hist', 'partially_random'):
        m = DPGBDTClassifier(epsilon=None, split_method=sm, n_estimators=20, n_clients=3, rng=0).fit(X, y)
        assert m.score(X, y) > 0.9, (sm, m.score(X, y))


def test_refusals():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(ValueError, match="'averaging' averages 0/1 labels: binary only"):
        DPGBDTClassifier(weight_update='averaging', epsilon=None).fit(X, y)
    cfg = dict(n_features=4, me='client0', n_outputs=3)
    dpgbdt_check({'X': X[:5], 'y': np.array([0.0, 1, 2, 2, 0])}, cfg)
    with pytest.raises(ValueError, match='class codes 0..2'):
        dpgbdt_check({'X': X[:5], 'y': np.array([0.0, 1, 3, 2, 0])}, cfg)
    with pytest.raises(ValueError, match='n_classes'):
        softmax_sensitivity(2)


# ---- (G, H) as one query with the joint sensitivity (gh_release='joint') ----


def test_joint_release_of_k_classes_uses_sqrt_2(data):
    "K classes: the pair's sensitivity is sqrt(2), not hypot(sqrt(2), 4/(3 sqrt(3))); each client's rows are within it."
    vec, joint = (_fit(data, gh_release=g, epsilon=1.0) for g in ('vector', 'joint'))
    assert _recount(joint) == joint.queries_ == vec.queries_
    assert joint._dz['g'] == 2.0**joint.frac_bits_ * math.sqrt(2) + math.sqrt(joint._dmax)
    assert vec._dz['g'] == 2.0**vec.frac_bits_ * math.hypot(*softmax_sensitivity(J)[:2]) + math.sqrt(vec._dmax)
    assert joint._scales_drawn['g'] < 0.89 * vec._scales_drawn['g']  # 12 % less noise at the same epsilon
    for c in joint._parties:
        c.gradients()
        assert np.linalg.norm(np.hstack([c.g, c.h]), axis=1).max() <= math.sqrt(2) + 1e-12
    m = np.random.default_rng(0).normal(size=(400, J)) * 4
    y = np.random.default_rng(1).integers(J, size=400)
    g, h = softmax_gh(m, y, joint=True)  # exact rows: nothing clipped
    np.testing.assert_allclose(g, softmax(m, axis=1) - np.eye(J)[y], atol=1e-12)
