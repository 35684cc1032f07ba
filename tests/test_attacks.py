"""Attacks that once worked, kept as tests (issue 26)."""

# ---- DP-GBDT: public quantities, the discrete noise, secret randomness (issue 26 §2) ----


def _dpgbdt_outlier_data():
    import numpy as np

    X = np.random.default_rng(3).normal(size=(2000, 3))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y, np.vstack([X, [[123.456, 0.0, 0.0]]]), np.r_[y, 1]


def _dpgbdt_fit_or_refuse(X, y, **kw):
    "The fit's model, or None if the estimator refuses for lack of a declared public quantity (the honest default)."
    import pytest

    from fedgauss.dpgbdt import DPGBDTClassifier

    try:
        return DPGBDTClassifier(**kw).fit(X, y)
    except ValueError as e:
        if 'feature_bounds' in str(e) or 'delta' in str(e):
            return None
        pytest.fail(f"unexpected error: {e}")


def test_dpgbdt_outlier_row_does_not_move_the_released_thresholds():
    """Issue 26 §2: with default arguments, bounds read from the pooled data put one row (x0 = 123.456 among 2 000
    normal rows) into the released thresholds (a threshold near 112; 2.9 without the row) while privacy_spent_ said
    epsilon = 1. Now a private fit without public bounds is refused, and with declared bounds the thresholds are the
    same with and without the row, given the same randomness."""
    import numpy as np

    X, y, X1, y1 = _dpgbdt_outlier_data()
    kw = dict(epsilon=1.0, split_candidates='uniform', n_estimators=10, n_clients=2, rng=7)
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw), _dpgbdt_fit_or_refuse(X1, y1, **kw)
    if a is not None and b is not None:  # a default fit that runs must not let the row into the thresholds
        top = lambda m: m.tree_thresholds_[np.isfinite(m.tree_thresholds_)].max()
        assert np.array_equal(a.tree_thresholds_, b.tree_thresholds_), (
            f"one row moved the thresholds: max {top(b):.1f} with it, {top(a):.1f} without, while privacy_spent_ = "
            f"{b.privacy_spent_}"
        )
    kw |= dict(feature_bounds=(-5, 5), delta=1e-4)
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw), _dpgbdt_fit_or_refuse(X1, y1, **kw)
    assert np.array_equal(a.tree_thresholds_, b.tree_thresholds_)
    assert (
        np.isfinite(b.tree_thresholds_).any()
        and np.nanmax(np.abs(b.tree_thresholds_[np.isfinite(b.tree_thresholds_)])) <= 5
    )


def test_dpgbdt_noise_does_not_depend_on_the_private_row_count():
    """delta = 1/n read the private n, and the noise multiplier calibrated to it: neighbours (n and n + 1 rows) got
    different noise scales, so the noise itself told whether a row was there. Now delta (or max_rows) is declared."""
    X, y, _, _ = _dpgbdt_outlier_data()
    kw = dict(epsilon=1.0, split_candidates='uniform', n_estimators=4, n_clients=2, rng=7)
    kw['feature_bounds'] = [(-5, 5)] * 3
    X1, y1 = X[:-1], y[:-1]  # a neighbour: one row removed
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw), _dpgbdt_fit_or_refuse(X1, y1, **kw)
    if a is not None and b is not None:
        assert a.noise_multiplier_ == b.noise_multiplier_ and a.privacy_spent_ == b.privacy_spent_, (
            f"the noise read n: z = {a.noise_multiplier_!r} with {len(X)} rows, {b.noise_multiplier_!r} with {len(X1)}"
        )
    a, b = _dpgbdt_fit_or_refuse(X, y, **kw, max_rows=5000), _dpgbdt_fit_or_refuse(X1, y1, **kw, max_rows=5000)
    assert a.noise_multiplier_ == b.noise_multiplier_ and a.privacy_spent_ == b.privacy_spent_ and a.delta_ == 1 / 5000


def _pcg64_find(gen, pattern: bytes, limit=1 << 22, chunk=1 << 16):
    "Rewind a copy of a PCG64 generator up to `limit` words and look for `pattern` among its outputs; True if found."
    import copy

    import numpy as np

    bg = getattr(gen, 'bit_generator', None)
    if not isinstance(bg, np.random.PCG64):
        return False
    back = 0
    while back < limit:
        back += chunk
        b = copy.deepcopy(bg)
        b.advance((1 << 128) - back)  # PCG64 steps backwards as easily as forwards
        if b.random_raw(chunk + 8).tobytes().find(pattern) >= 0:
            return True
    return False


def test_dpgbdt_server_generator_does_not_lead_to_the_clients_secrets():
    """In the simulator the aggregator's program got the estimator's numpy generator, from which the estimator had just
    drawn every client's Diffie-Hellman secret: rewinding it (PCG64 advances backwards) gave the server all the secrets,
    hence every pairwise mask, hence each client's unmasked statistics (with noise='aggregator', exactly). Now each
    party's secrets come from its own ChaCha20 generator and the server's generator is derived one-way from the key."""
    from sklearn.datasets import make_classification

    from fedgauss.dpgbdt import DPGBDTClassifier

    X, y = make_classification(300, 4, random_state=0)
    kw = dict(n_estimators=2, max_depth=2, n_candidates=4, split_candidates='uniform', n_clients=3, rng=5)
    try:
        est = DPGBDTClassifier(**kw, noise='aggregator', feature_bounds=(-6, 6), max_rows=300)
    except TypeError:  # before max_rows existed
        est = DPGBDTClassifier(**kw, noise='aggregator', feature_bounds=[(-6, 6)] * 4)
    datas, cfg, srv = est.protocol_inputs(X, y)
    found = [p for p in cfg['parties'] if _pcg64_find(srv, bytes(datas[p]['secret']))]
    assert not found, f"the server's generator gives back the Diffie-Hellman secrets of {found}"


def test_dpgbdt_mask_streams_and_secrets_come_from_secret_generators():
    """The pairwise mask streams were numpy PCG64 generators (state recoverable from outputs); the secrets and noise of
    a client whose program got a numpy generator were drawn from it directly. Now: ChaCha20 (fedgauss.entropy)."""
    import numpy as np

    import fedgauss.dpgbdt as mod
    from fedgauss.federation import Channel

    assert type(mod._prg(12345).bit_generator).__name__ == 'ChaCha'
    ch = Channel()
    cl = [mod.SecAggClient(f'client{i}', ch) for i in range(3)]
    mod.key_agreement('server', cl, np.random.default_rng(0))
    assert all(type(g.bit_generator).__name__ == 'ChaCha' for c in cl for _, g in c._streams.values())
    # a client's secret is not the numpy generator's output it was handed
    g = np.random.default_rng(1)
    c = mod.SecAggClient('client0', Channel())
    c.key_agree('server', g)
    assert c._secret.to_bytes(32, 'big') != np.random.default_rng(1).bytes(32)
