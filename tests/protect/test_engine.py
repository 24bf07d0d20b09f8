"""Statistical guarantees of sdccore.protect (issue 2), on Tarragona and synthetic data."""

import numpy as np
import pandas as pd
import pytest

import sdccore
from conftest import no_risk_profile, raw_protect, releases_without_risk
from sdccore._core import decomp as dc
from sdccore._protect import pipeline as _protect
from sdccore._methods import factor as _factor



def _moments(df):
    X = df.to_numpy(float)
    return X.mean(axis=0), np.cov(X, rowvar=False, bias=True), X.std(axis=0)


# ------------------------------------------------------------------ exact reconstruction

# general FA swaps residual rows by default (see _safety): these keep them, to check the rebuild
@pytest.mark.parametrize("kw", [
    dict(method="fa", residuals="keep"),
    dict(method="fa", n_factors=3, rotation="varimax", residuals="keep"),
    dict(method="fa", extraction="ml", n_factors=4, residuals="keep"),
    dict(method="fa", extraction="principal", n_factors=5, rotation="quartimax", residuals="keep"),
    dict(method="fa", scores="regression", n_factors=4, residuals="keep"),
    dict(method="fa", sensitive=["SALES", "NET.PROFIT"]),
    dict(method="fa", sensitive=["SALES"], rotation="isolate_public", factors="all"),
    dict(method="pca"),
    dict(method="pca", sensitive=["SALES"]),
])
def test_identity_perturbation_rebuilds_data_exactly(tarragona, monkeypatch, kw):
    monkeypatch.setattr(_factor, "perturb_columns", lambda F, *a: F.copy())
    out = raw_protect(tarragona, rng=0, **kw).data
    X = tarragona.to_numpy(float)
    rel = np.abs(out.to_numpy(float) - X).max() / np.abs(X).max()
    assert rel < 1e-10


def test_identity_rebuild_with_dependency_and_residual_rows_kept(casc, monkeypatch):
    monkeypatch.setattr(_factor, "perturb_columns", lambda F, *a: F.copy())
    out = raw_protect(casc, method="fa", rng=0, residuals="keep").data
    X = casc.to_numpy(float)
    assert np.abs(out.to_numpy(float) - X).max() / np.abs(X).max() < 1e-10


# ------------------------------------------------------------------ whitened FA scores

def test_whitened_scores_are_orthonormal_and_orthogonal_to_residuals(tarragona):
    X = tarragona.to_numpy(float)
    _, _, Z = dc.standardize(X)
    R = dc.correlation(Z)
    n = len(Z)
    for k in (3, 7, 13):
        dec = dc.fa_decomposition(R, k, "minres")
        F = Z @ dec.G
        E = Z - F @ dec.L.T
        kk = F.shape[1]
        assert np.abs(F.T @ F / n - np.eye(kk)).max() < 1e-10
        assert np.abs(F.T @ E / n).max() < 1e-10
        # refitted loadings are the correlations of the variables with the scores
        cor = np.corrcoef(np.column_stack([Z, F]), rowvar=False)[: Z.shape[1], Z.shape[1]:]
        assert np.abs(cor - dec.L).max() < 1e-10
        assert ((dec.L ** 2).sum(axis=1) <= 1 + 1e-12).all()


def test_variance_share_matches_spec_figures(tarragona):
    # spec 1.1: whitened-refit shares 0.751 (k=3), 0.925 (k=7), 0.984 (k=13, 12 kept)
    X = tarragona.to_numpy(float)
    _, _, Z = dc.standardize(X)
    R = dc.correlation(Z)
    got = {}
    for k in (3, 7, 13):
        dec = dc.fa_decomposition(R, k, "minres")
        got[k] = ((dec.L ** 2).sum() / 13, dec.L.shape[1])
    assert got[3][0] == pytest.approx(0.751, abs=0.001)
    assert got[7][0] == pytest.approx(0.925, abs=0.001)
    assert got[13][0] == pytest.approx(0.984, abs=0.001)
    assert got[13][1] == 12


# ------------------------------------------------------------------ means and covariances

@pytest.mark.parametrize("kw", [
    dict(method="fa"), dict(method="fa", n_factors=3), dict(method="fa", rotation="varimax", n_factors=5),
    dict(method="pca"), dict(method="fa", sensitive=["SALES"]), dict(method="fa", factors=[2, 5]),
    dict(method="pca", components=[1, 3]),
])
def test_swapping_preserves_means_exactly(tarragona, kw):
    res = raw_protect(tarragona, rng=3, **kw)
    m0, _, sd = _moments(tarragona)
    m1, _, _ = _moments(res.data)
    assert np.abs(m1 - m0).max() / sd.min() < 1e-9
    assert not np.allclose(res.data.to_numpy(float), tarragona.to_numpy(float))


@pytest.mark.parametrize("data_name", ["tarragona", "synthetic"])
@pytest.mark.parametrize("kw", [dict(method="fa"), dict(method="fa", n_factors=3), dict(method="pca")])
def test_covariance_unbiased_over_seeds(request, monkeypatch, data_name, kw):
    df = request.getfixturevalue(data_name)
    _, C, _ = _moments(df)
    acc = np.zeros_like(C)
    for out in releases_without_risk(monkeypatch, df, range(50), **kw):
        acc += _moments(out)[1]
    acc /= 50
    assert np.linalg.norm(acc - C) / np.linalg.norm(C) < 0.01


def test_regression_scores_bias_the_covariance(tarragona, monkeypatch):
    # the papers' literal construction: about 5 % bias on Tarragona that does not average out
    _, C, _ = _moments(tarragona)
    acc = np.zeros_like(C)
    for out in releases_without_risk(monkeypatch, tarragona, range(50), method="fa", scores="regression"):
        acc += _moments(out)[1]
    err = np.linalg.norm(acc / 50 - C) / np.linalg.norm(C)
    assert err > 0.03


# ------------------------------------------------------------------ rotations

def test_isolating_rotation(tarragona):
    X = tarragona.to_numpy(float)
    _, _, Z = dc.standardize(X)
    R = dc.correlation(Z)
    dec = dc.fa_decomposition(R, 13, "minres")
    S = [6, 12, 3]
    T, chosen = dc.isolating_rotation(dec.L, S)
    k = T.shape[0]
    assert chosen == S
    assert np.abs(T.T @ T - np.eye(k)).max() < 1e-12
    LS = dec.L[S] @ T
    for i in range(len(S)):
        assert np.abs(LS[i, i + 1:]).max() < 1e-12  # lower trapezoidal
        assert LS[i, i] > 0
    F = Z @ dec.G
    assert np.abs((F @ T) @ (dec.L @ T).T - F @ dec.L.T).max() < 1e-10


def test_isolating_rotation_skips_rows_in_span():
    L = np.array([[0.8, 0.1, 0.0], [0.4, 0.05, 0.0], [0.1, 0.2, 0.7]])
    T, chosen = dc.isolating_rotation(L, [0, 1, 2])
    assert chosen == [0, 2]


def test_standard_rotation_is_orthogonal_and_matches_factor_analyzer(tarragona):
    from factor_analyzer import Rotator
    X = tarragona.to_numpy(float)
    _, _, Z = dc.standardize(X)
    dec = dc.fa_decomposition(dc.correlation(Z), 4, "minres")
    T = dc.standard_rotation(dec.L, "varimax")
    assert np.abs(T.T @ T - np.eye(4)).max() < 1e-12
    assert np.abs(dec.L @ T - Rotator("varimax").fit_transform(dec.L)).max() < 1e-6


def test_selection_criteria():
    L = np.array([[0.9, 0.2, 0.0], [0.1, 0.8, 0.35], [0.0, 0.1, 0.6]])
    S, P = [0], [1, 2]
    assert dc.select_factors(L, S, P, "sensitive_threshold", 0.3) == [0]
    assert dc.select_factors(L, S, P, "public_threshold", 0.3) == [0]
    assert dc.select_factors(L, S, P, "sensitive_over_public", 0) == [0]
    assert dc.select_factors(L, S, P, "sensitive_threshold", 0.15) == [0, 1]
    assert dc.select_components(L, [1], 0.3) == [1, 2]


def test_selective_fa_leaves_public_nearly_intact(tarragona):
    res = raw_protect(tarragona, sensitive=["SALES"], rng=1)
    assert res.options["rotation"] == "isolate_sensitive" and res.options["factors"] == "auto"
    X, Y = tarragona.to_numpy(float), res.data.to_numpy(float)
    cors = [np.corrcoef(X[:, j], Y[:, j])[0, 1] for j in range(13)]
    j = list(tarragona.columns).index("SALES")
    assert cors[j] < 0.5
    assert res.perturbed == (1,)


# ------------------------------------------------------------------ PCA

def test_pca_paper_table1_weights():
    x = [26.20, 98.61, 43.97, 55.67, 82.51, 33.52, 72.80, 40.26, 38.14, 97.50]
    y = [26.13, 124.85, 60.01, 126.72, 147.21, 87.71, 118.89, 32.56, 43.15, 165.31]
    z = [85.98, 74.25, 55.26, 68.07, 58.13, 52.91, 85.34, 80.02, 70.48, 48.00]
    X = np.column_stack([x, y, z])
    _, _, Z = dc.standardize(X)
    A, lam = dc.pca_decomposition(dc.correlation(Z))
    paper = np.array([[-0.6183, 0.4407, 0.6508], [-0.6656, 0.1468, -0.7317], [0.4180, 0.8856, -0.2026]])
    for c in range(3):
        s = np.sign(A[:, c] @ paper[:, c])
        assert np.abs(s * A[:, c] - paper[:, c]).max() < 5e-4
    # the paper's component standard deviations (with n-1): 1.5261, 0.9445, 0.3351
    assert np.sqrt(lam * 10 / 9) == pytest.approx([1.5261, 0.9445, 0.3351], abs=5e-4)
    # sign rule: the largest |weight| of each eigenvector is positive
    assert all(A[np.argmax(np.abs(A[:, c])), c] > 0 for c in range(3))


# ------------------------------------------------------------------ M-AGG

def test_magg_exact_keeps_mean_and_covariance(tarragona, synthetic):
    for df in (tarragona, synthetic):
        res = raw_protect(df, method="magg", noise_model="exact", k=3, rng=5)
        m0, C0, _ = _moments(df)
        m1, C1, _ = _moments(res.data)
        assert np.abs(m1 - m0).max() / np.abs(m0).max() < 1e-8
        assert np.abs(C1 - C0).max() / np.abs(C0).max() < 1e-8
        assert not np.allclose(res.data.to_numpy(float), df.to_numpy(float))


def test_magg_none_is_group_means_of_mdav(tarragona):
    res = raw_protect(tarragona, method="magg", noise_model="none", k=4, rng=0)
    X = tarragona.to_numpy(float)
    lab = sdccore.mdav_groups(X, 4)
    sizes = np.bincount(lab)
    assert sizes.min() >= 4 and sizes.max() <= 7
    for g in (0, 5, lab.max()):
        rows = lab == g
        assert np.allclose(res.data.to_numpy(float)[rows], X[rows].mean(axis=0), rtol=1e-12)


def test_magg_published_keeps_moments_in_expectation(tarragona, monkeypatch):
    m0, C0, sd = _moments(tarragona)
    accm, accC = 0, 0
    for out in releases_without_risk(monkeypatch, tarragona, range(30), method="magg"):
        m1, C1, _ = _moments(out)
        accm, accC = accm + m1, accC + C1
    assert np.abs(accm / 30 - m0).max() / sd.max() < 0.05
    assert np.linalg.norm(accC / 30 - C0) / np.linalg.norm(C0) < 0.02


def test_selective_magg_changes_only_sensitive(tarragona):
    res = raw_protect(tarragona, method="magg", sensitive=["SALES", "LABOR.COSTS"], noise_model="exact", rng=1)
    for c in tarragona.columns:
        same = np.array_equal(res.data[c].to_numpy(float), tarragona[c].to_numpy(float))
        assert same == (c not in ("SALES", "LABOR.COSTS"))
    S = tarragona[["SALES", "LABOR.COSTS"]].to_numpy(float)
    S1 = res.data[["SALES", "LABOR.COSTS"]].to_numpy(float)
    assert np.allclose(np.cov(S1.T, bias=True), np.cov(S.T, bias=True), rtol=1e-8)


# ------------------------------------------------------------------ baselines

def test_rankswap_baseline_keeps_marginals(tarragona):
    res = raw_protect(tarragona, method="rankswap", p=5, rng=2)
    for c in tarragona.columns:
        assert np.array_equal(np.sort(res.data[c].to_numpy(float)), np.sort(tarragona[c].to_numpy(float)))
    assert not res.data.equals(tarragona.astype(float))


def test_rankswap_window_respected():
    from sdccore._methods.perturbations import rankswap
    f = np.arange(1000, dtype=float)
    g = rankswap(f, 2.0, np.random.default_rng(0))
    assert np.abs(g - f).max() <= 20
    assert (g != f).mean() > 0.9
    assert np.array_equal(np.sort(g), f)


def test_correlated_noise_inflates_covariance_as_documented(synthetic, monkeypatch):
    _, C0, _ = _moments(synthetic)
    acc = 0
    for out in releases_without_risk(monkeypatch, synthetic, range(40), method="noise", noise_cov=20):
        acc = acc + _moments(out)[1]
    assert np.linalg.norm(acc / 40 - 1.2 * C0) / np.linalg.norm(C0) < 0.02


# ------------------------------------------------------------------ perturbations of factors

@pytest.mark.parametrize("pert,param", [("swap", None), ("rankswap", 10), ("noise", 30), ("microagg", 3),
                                        ("microagg_noise", 3), ("bootstrap", None), ("synthetic", None), ("round", None)])
def test_every_factor_perturbation_runs_and_changes_data(tarragona, monkeypatch, pert, param):
    kw = {"perturbation": pert}
    if param is not None:
        kw[{"rankswap": "p", "noise": "noise_sd"}.get(pert, "k")] = param
    res = raw_protect(tarragona, method="fa", n_factors=5, rng=0, **kw)
    assert np.isfinite(res.data.to_numpy(float)).all()
    assert not np.allclose(res.data.to_numpy(float), tarragona.to_numpy(float))
    with monkeypatch.context() as m:  # the rerun without the risk profile (see _releases): the same data
        m.setattr(_protect, "risk_profile", no_risk_profile)
        again = raw_protect(tarragona, **res.options)
    assert again.data.equals(res.data)


def test_univariate_perturbations_by_hand():
    from sdccore._methods import perturbations as pt
    f = np.array([5.0, 1.0, 3.0, 2.0, 4.0, 10.0, 7.0])
    assert np.allclose(pt.microagg(f, 3), [6.5, 2.0, 2.0, 2.0, 6.5, 6.5, 6.5])  # (4+5+7+10)/4
    g = pt.noise(f, 50, np.random.default_rng(1))
    assert g.mean() == pytest.approx(f.mean()) and g.std() == pytest.approx(f.std())
    assert np.allclose(pt.round_grid(np.array([0.0, 0.333, 1.0])), [0.0, 0.33, 1.0])
    # R: bw.nrd0(c(5,1,3,2,4,10,7)) = 1.340205 (0.9 * min(sd=3.101459, IQR=3.5/1.34) * 7^-0.2)
    assert pt.bw_nrd0(f) == pytest.approx(0.9 * min(np.std(f, ddof=1), 3.5 / 1.34) * 7 ** -0.2)


def test_residual_row_treatments(tarragona):
    for how in ("swap_rows", "bootstrap_rows"):
        res = raw_protect(tarragona, method="fa", n_factors=3, residuals=how, rng=0)
        assert np.isfinite(res.data.to_numpy(float)).all()
    # swapping residual rows keeps means exactly
    res = raw_protect(tarragona, method="fa", n_factors=3, residuals="swap_rows", rng=0)
    m0, _, sd = _moments(tarragona)
    assert np.abs(_moments(res.data)[0] - m0).max() / sd.min() < 1e-9


# ------------------------------------------------------------------ dependencies (CASC)

def test_casc_dependency_detected_and_kept(casc):
    res = raw_protect(casc, method="pca", rng=0)
    assert list(res.dependencies) == ["PTOTVAL"]
    coef = res.dependencies["PTOTVAL"]
    assert coef["PEARNVAL"] == pytest.approx(1, abs=1e-9) and coef["POTHVAL"] == pytest.approx(1, abs=1e-9)
    d = res.data
    assert np.abs(d.PTOTVAL - d.PEARNVAL - d.POTHVAL).max() < 1e-6 * casc.PTOTVAL.abs().max()
    assert any("PTOTVAL" in n for n in res.notes)
    assert not np.allclose(d.PTOTVAL, casc.PTOTVAL)


def test_sensitive_total_makes_its_parts_sensitive(casc):
    res = raw_protect(casc, method="magg", sensitive=["PTOTVAL"], rng=0, noise_model="exact")
    assert any("PEARNVAL" in n and "POTHVAL" in n for n in res.notes)
    assert np.array_equal(res.data.AGI.to_numpy(float), casc.AGI.to_numpy(float))
    assert not np.allclose(res.data.PEARNVAL, casc.PEARNVAL)


def test_no_false_dependency_on_tarragona(tarragona):
    assert raw_protect(tarragona, rng=0).dependencies == {}


# ------------------------------------------------------------------ reproducibility and frame handling

@pytest.mark.parametrize("method", ["fa", "pca", "magg", "rankswap", "noise"])
def test_same_seed_same_bytes_different_seed_differs(tarragona, monkeypatch, method):
    a = raw_protect(tarragona, method=method, rng=42)
    with monkeypatch.context() as m:  # the others without the risk profile (see _releases): the same data
        m.setattr(_protect, "risk_profile", no_risk_profile)
        b = raw_protect(tarragona, method=method, rng=42)
        c = raw_protect(tarragona, method=method, rng=43)
        again = raw_protect(tarragona, **a.options)
    assert a.data.to_numpy().tobytes() == b.data.to_numpy().tobytes()
    assert a.data.to_numpy().tobytes() != c.data.to_numpy().tobytes()
    assert again.data.to_numpy().tobytes() == a.data.to_numpy().tobytes()


def test_generator_and_none_record_a_reproducing_seed(tarragona):
    for rng in (None, np.random.default_rng(7)):
        res = raw_protect(tarragona, method="pca", rng=rng)
        assert isinstance(res.options["seed"], int)
        assert raw_protect(tarragona, **res.options).data.equals(res.data)


def test_options_are_json_and_frame_layout_kept(tarragona):
    import json
    df = tarragona.copy()
    df.index = [f"r{i}" for i in range(len(df))]
    df.insert(2, "name", [f"firm {i}" for i in range(len(df))])
    df["code"] = np.arange(len(df))
    before = df.copy()
    res = raw_protect(df, method="fa", sensitive=["SALES"], exclude=["code"], rng=1)
    json.loads(json.dumps(res.options))
    assert list(res.data.columns) == list(df.columns)
    assert list(res.data.index) == list(df.index)
    assert res.data["name"].equals(df["name"]) and res.data["code"].equals(df["code"])
    pd.testing.assert_frame_equal(df, before)  # the caller's frame is untouched
    assert res.options["exclude"] == ["code"]


def test_decompose_matches_protect(tarragona):
    dec = sdccore.decompose(tarragona, method="fa", sensitive=["SALES", "NET.PROFIT"])
    # ungated: this selective FA is refused by the reconstruction floor (see test_reconstruction)
    res = raw_protect(tarragona, method="fa", sensitive=["SALES", "NET.PROFIT"], rng=0)
    assert dec.perturbed == res.perturbed
    pd.testing.assert_frame_equal(dec.loadings, res.loadings)
    assert dec.perturbed_share.between(0, 1).all()
    assert dec.perturbed_share["SALES"] > 0.9


@pytest.mark.parametrize("extraction,k", [("minres", 2), ("minres", 4), ("ml", 2), ("ml", 3)])
def test_fa_fit_with_exact_gradient_agrees_with_factor_analyzer(tarragona, extraction, k):
    """Our fit (same objective, start and bounds as factor_analyzer, exact gradient, tight
    tolerance) and factor_analyzer's (finite-difference gradient) give the same common part."""
    import warnings

    from factor_analyzer import FactorAnalyzer

    from sdccore._core import decomp as dc

    R = np.corrcoef(tarragona.to_numpy(float), rowvar=False)
    L = dc.fa_loadings(R, k, extraction)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fa = FactorAnalyzer(n_factors=k, rotation=None, method=extraction, is_corr_matrix=True).fit(R.copy())
    L0 = fa.loadings_
    assert np.abs(L @ L.T - L0 @ L0.T).max() < 5e-5
    # and ours is at least as good a minimum of the objective
    obj = dc._ml_objective if extraction == "ml" else dc._uls_objective
    psi, psi0 = 1 - (L ** 2).sum(1), 1 - (L0 ** 2).sum(1)
    if extraction == "minres":
        assert obj(np.clip(psi, *dc.PSI_BOUNDS), R, k)[0] <= obj(np.clip(psi0, *dc.PSI_BOUNDS), R, k)[0] + 1e-12


def test_fa_fit_gradient_is_exact(tarragona):
    from scipy.optimize import approx_fprime

    from sdccore._core import decomp as dc

    R = np.corrcoef(tarragona.to_numpy(float), rowvar=False)
    psi = np.linspace(0.2, 0.7, R.shape[0])
    for obj in (dc._uls_objective, dc._ml_objective):
        for k in (2, 5):
            g = obj(psi, R, k)[1]
            num = approx_fprime(psi, lambda p: obj(p, R, k)[0], 1e-7)
            np.testing.assert_allclose(g, num, atol=5e-6)


# ------------------------------------------------------------------ factors that carry nothing (issue 10.3)

def test_null_factors_are_dropped_before_whitening():
    """between = 0.3, within = 0 on 4 variables: the FA model has three factors; the fourth
    has sum of squared loadings ~1e-16 and, whitened, used to show loadings of 0.6-0.9."""
    from sdccore._choose.recommend import eq5_data

    d = eq5_data(0.3, 0.0, 4, 500, 1)
    dec = sdccore.decompose(d, method="fa", sensitive=["S"])
    assert dec.loadings.shape[1] == 3
    assert any("carry no variance" in n for n in dec.notes)
    # between = within = 0: nothing at all for factors to carry
    with pytest.raises(ValueError, match="finds no common factor"):
        sdccore.decompose(eq5_data(0.0, 0.0, 4, 500, 1), method="fa", sensitive=["S"])


def test_near_identity_correlation_is_said_plainly():
    d = pd.DataFrame(np.random.default_rng(0).standard_normal((500, 2)), columns=["a", "b"])
    dec = sdccore.decompose(d, method="fa")
    assert any("close to the identity" in n and "Bartlett" in n for n in dec.notes)
    t = sdccore.load_dataset("tarragona")
    assert not any("close to the identity" in n for n in sdccore.decompose(t, method="fa").notes)


# ------------------------------------------------------------------ selective M-AGG keeps the covariance (issue 10.6)

@pytest.mark.parametrize("sens", [["SALES"], ["SALES", "NET.PROFIT"]])
def test_selective_magg_keeps_means_exactly_and_covariance_in_expectation(tarragona, monkeypatch, sens):
    X = tarragona.to_numpy(float)
    C0 = np.cov(X, rowvar=False, bias=True)
    sd = np.sqrt(np.diag(C0))
    Cs = []
    for out in releases_without_risk(monkeypatch, tarragona, range(50), method="magg", sensitive=sens):
        Y = out.to_numpy(float)
        np.testing.assert_allclose(Y.mean(0), X.mean(0), rtol=0, atol=1e-12 * sd.max())  # exactly, to rounding
        Cs.append(np.cov(Y, rowvar=False, bias=True))
    Cm = np.mean(Cs, axis=0)
    assert np.linalg.norm(Cm - C0) / np.linalg.norm(C0) < 0.01
    j = [list(tarragona.columns).index(s) for s in sens]
    assert np.abs((Cm - C0)[j] / np.outer(sd[j], sd)).max() < 0.01  # cov(S, P) in correlation units
    # 'exact': every run keeps them exactly
    Y = raw_protect(tarragona, method="magg", sensitive=sens, rng=3, noise_model="exact").data.to_numpy(float)
    np.testing.assert_allclose(np.cov(Y, rowvar=False, bias=True), C0, rtol=0, atol=1e-9 * np.abs(C0).max())


def test_rankswap_fenwick_equals_the_window_scan():
    """The O(n log n) rank swap (Fenwick tree over the ranks not yet swapped) picks exactly
    the rank the O(n x window) scan picks, for the same draws (issue 12: same distribution
    of swaps; here the same swaps), including windows of 0, 1, all and more than all ranks."""
    from sdccore._methods.perturbations import _rankswap_order, _rankswap_order_scan

    rng = np.random.default_rng(11)
    cases = [(1, 0), (2, 1), (3, 5), (7, 2), (64, 1), (65, 64), (500, 37), (834, 333), (1000, 1000), (1024, 100)]
    cases += [(int(n), int(rng.integers(0, n + 3))) for n in rng.integers(1, 3000, 40)]
    for n, w in cases:
        u = rng.random(n)
        fast, scan = _rankswap_order(n, w, u), _rankswap_order_scan(n, w, u)
        assert np.array_equal(fast, scan), (n, w)
        assert np.array_equal(fast[fast], np.arange(n))       # swaps are pairs
        assert np.all(np.abs(fast - np.arange(n)) <= w)        # within the window
