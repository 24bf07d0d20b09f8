"""Property tests (hypothesis) of the core invariants, and numerical stability."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sdccore
from conftest import raw_protect
from sdccore._protect import pipeline as _protect
from sdccore._methods import factor as _factor

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def frames(draw, min_rows=12, max_rows=60, min_cols=2, max_cols=6):
    n = draw(st.integers(min_rows, max_rows))
    m = draw(st.integers(min_cols, max_cols))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, m)) + np.eye(m) * draw(st.floats(0.1, 3))
    X = rng.standard_normal((n, m)) @ A
    scales = 10.0 ** rng.uniform(-3, 6, m)
    shifts = rng.uniform(-1e4, 1e4, m)
    X = X * scales + shifts
    idx = pd.Index([f"r{i}" for i in rng.permutation(n)])
    return pd.DataFrame(X, columns=[f"v{j}" for j in range(m)], index=idx)


METHODS = st.sampled_from(["fa", "pca"])


@SETTINGS
@given(frames(), METHODS)
def test_reconstruction_without_perturbation(df, method):
    orig = _factor.perturb_columns
    _factor.perturb_columns = lambda F, *a: F.copy()
    try:
        out = raw_protect(df, method=method, rng=0, residuals="keep").data.to_numpy(float)
    finally:
        _factor.perturb_columns = orig
    X = df.to_numpy(float)
    scale = np.abs(X).max(0) + X.std(0)
    assert np.all(np.abs(out - X) <= 1e-9 * scale)


@SETTINGS
@given(frames(), METHODS, st.integers(0, 2**31))
def test_swapping_keeps_means_exactly_and_shape(df, method, seed):
    res = raw_protect(df, method=method, rng=seed)
    out = res.data
    assert list(out.columns) == list(df.columns) and list(out.index) == list(df.index) and out.shape == df.shape
    X, Y = df.to_numpy(float), out.to_numpy(float)
    assert np.isfinite(Y).all()
    assert np.all(np.abs(Y.mean(0) - X.mean(0)) <= 1e-9 * X.std(0) + 1e-13 * np.abs(X.mean(0)))


@SETTINGS
@given(frames(), st.sampled_from(["fa", "pca", "magg", "rankswap", "noise"]), st.integers(0, 2**31))
def test_same_seed_same_output_and_finite(df, method, seed):
    a = raw_protect(df, method=method, rng=seed)
    b = raw_protect(df, method=method, rng=seed)
    assert a.data.to_numpy().tobytes() == b.data.to_numpy().tobytes()
    assert np.isfinite(a.data.to_numpy(float)).all()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frames(min_rows=15, max_rows=40, max_cols=4), st.sampled_from(["fa", "pca", "magg", "rankswap"]),
       st.booleans())
def test_every_score_within_unit_interval(df, method, selective):
    sens = [df.columns[0]] if selective else None
    try:
        res = raw_protect(df, method=method, sensitive=sens, rng=1)
    except ValueError as exc:
        # a sensitive variable no factor loads on (uncorrelated with the others: FA gives it no
        # communality) is refused with the fix, not protected by nothing; found by this test on
        # a generated frame, and refused the same way before the method registry
        assert method == "fa" and selective and "select no factor to perturb" in str(exc), str(exc)
        return
    ev = sdccore.evaluate(df, res.data, sensitive=sens)
    for k, v in ev.scores.items():
        assert 0.0 <= v <= 1.0, (k, v)


# ------------------------------------------------------------------ numerical stability

def _check_release(df, res, mean_tol=1e-8):
    X, Y = df.to_numpy(float), res.data.to_numpy(float)
    assert np.isfinite(Y).all()
    assert np.all(np.abs(Y.mean(0) - X.mean(0)) <= mean_tol * X.std(0) + 1e-12 * np.abs(X.mean(0)))


@pytest.mark.parametrize("method", ["fa", "pca", "magg"])
def test_near_singular_correlation(method):
    rng = np.random.default_rng(0)
    n = 400
    a, b = rng.standard_normal(n), rng.standard_normal(n)
    c = a + b + 1e-6 * rng.standard_normal(n)  # condition number ~1e12
    df = pd.DataFrame({"a": a, "b": b, "c": c, "d": rng.standard_normal(n)})
    res = raw_protect(df, method=method, rng=1, **({"noise_model": "exact"} if method == "magg" else {}))
    _check_release(df, res, mean_tol=1e-8 if method != "magg" else 1e-6)


@pytest.mark.parametrize("method", ["fa", "pca", "magg"])
def test_tiny_and_huge_scales(method):
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((300, 3)) @ np.array([[1, 0.5, 0.2], [0, 1, 0.4], [0, 0, 1]])
    df = pd.DataFrame({"tiny": Z[:, 0] * 1e-12, "huge": Z[:, 1] * 1e12 + 5e12, "mid": Z[:, 2]})
    res = raw_protect(df, method=method, rng=2, **({"noise_model": "exact"} if method == "magg" else {}))
    _check_release(df, res, mean_tol=1e-8)
    # the covariance structure survives the mix of scales (correlations compared)
    if method == "magg":
        assert np.allclose(np.corrcoef(res.data.T), np.corrcoef(df.T), atol=1e-8)


def test_heavy_tails_fa_covariance_unbiased():
    rng = np.random.default_rng(3)
    X = rng.standard_t(2.5, size=(600, 4)) @ np.array([[1, 0.6, 0.3, 0], [0, 1, 0.5, 0.2], [0, 0, 1, 0.4], [0, 0, 0, 1]])
    df = pd.DataFrame(X, columns=list("abcd"))
    C = np.cov(X.T, bias=True)
    acc = np.zeros_like(C)
    for s in range(50):
        res = raw_protect(df, method="fa", rng=s)
        _check_release(df, res)
        acc += np.cov(res.data.to_numpy().T, bias=True)
    assert np.linalg.norm(acc / 50 - C) / np.linalg.norm(C) < 0.02


def test_evaluate_on_extreme_scales_is_finite():
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"tiny": rng.standard_normal(200) * 1e-12, "huge": rng.standard_normal(200) * 1e12,
                       "c": rng.standard_cauchy(200)})
    res = raw_protect(df, method="pca", rng=0)
    ev = sdccore.evaluate(df, res.data)
    assert all(np.isfinite(v) and 0 <= v <= 1 for v in ev.scores.values())
