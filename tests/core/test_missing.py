"""Missing cells: the EM estimate, protection that keeps missing cells missing in place, the
measures on observed cells, the command line's --missing and the dashboard's choices."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import sdccore
from conftest import raw_protect, releases_without_risk, run_cli
from sdccore._core.missing import complete, em_normal, prior_completion
from sdccore._measures.utility import _pil_arrays, _pil_observed
from sdccore._protect import pipeline

ROOT = Path(__file__).resolve().parents[2]


def with_missing(df, share=0.05, seed=0, block=False):
    """``df`` with cells missing at random (and a block of 40 records missing their last
    three numeric columns with ``block``)."""
    rng = np.random.default_rng(seed)
    d = df.copy()
    num = list(d.select_dtypes("number").columns)
    M = rng.random((len(d), len(num))) < share
    if block:
        M[100:140, -3:] = True
    for j, c in enumerate(num):
        d[c] = d[c].astype(float)
        d.loc[M[:, j], c] = np.nan
    return d, M


@pytest.fixture(scope="module")
def tarr():
    return sdccore.load_dataset("tarragona")


@pytest.fixture(scope="module")
def seven(tarr):
    """Tarragona's first seven variables (FIXED.ASSETS to SALES), all 834 firms: for tests whose
    property does not depend on the number of variables.  With 10 % of the cells missing, the
    EM estimate on all 13 (nearly collinear: the profits and costs) takes 167 iterations of its
    loop over the missingness patterns, about 4 CPU-s a call; on these seven 40, 0.2 CPU-s."""
    return tarr.iloc[:, :7]


# ----------------------------------------------------------------------------- EM

def test_em_on_complete_data_is_the_sample_moments():
    X = np.random.default_rng(1).standard_normal((50, 3))
    mu, S, it = em_normal(X)
    C = X - X.mean(0)
    assert it == 0
    np.testing.assert_allclose(mu, X.mean(0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(S, C.T @ C / 50, rtol=1e-14)


def test_em_matches_the_closed_form_of_a_monotone_bivariate_pattern():
    """x complete, y missing in some records: the ML estimates have a closed form (Anderson
    1957; Little and Rubin 2002, section 7.2): regress y on x in the complete records and
    carry the regression to all records' x."""
    rng = np.random.default_rng(2)
    x = rng.normal(10, 2, 400)
    y = 3 + 0.8 * x + rng.normal(0, 1, 400)
    y_obs = y.copy()
    y_obs[rng.random(400) < 0.3] = np.nan
    X = np.c_[x, y_obs]
    mu, S, _ = em_normal(X, tol=1e-13, max_iter=5000)
    c = ~np.isnan(y_obs)
    xc, yc = x[c], y_obs[c]
    sxx_c = np.mean((xc - xc.mean()) ** 2)
    sxy_c = np.mean((xc - xc.mean()) * (yc - yc.mean()))
    syy_c = np.mean((yc - yc.mean()) ** 2)
    b = sxy_c / sxx_c
    sxx = np.mean((x - x.mean()) ** 2)
    mu_y = yc.mean() + b * (x.mean() - xc.mean())
    syy = syy_c - b ** 2 * (sxx_c - sxx)  # residual variance + b^2 sxx
    sxy = b * sxx
    np.testing.assert_allclose(mu, [x.mean(), mu_y], rtol=1e-9)
    np.testing.assert_allclose(S, [[sxx, sxy], [sxy, syy]], rtol=1e-7)


def test_complete_fills_only_missing_cells_within_observed_range(seven):
    # about a fifth of the drawn cells end at their column's observed minimum or maximum: the range is
    # enforced, not merely met
    d, M = with_missing(seven, 0.1, block=True)
    X = d.to_numpy(float)
    Xc, mask = complete(X, np.random.default_rng(3))
    assert (mask == M).all() and np.isfinite(Xc).all()
    np.testing.assert_array_equal(Xc[~M], X[~M])
    assert (Xc >= np.nanmin(X, 0)).all() and (Xc <= np.nanmax(X, 0)).all()
    # the deterministic completion is the conditional mean: the same every time
    np.testing.assert_array_equal(complete(X)[0], complete(X)[0])


# ----------------------------------------------------------------------------- protect

@pytest.mark.parametrize("method,opts", [("fa", {}), ("pca", {}), ("magg", {"k": 5}),
                                         ("rankswap", {"p": 40}), ("noise", {})])
def test_protect_keeps_missing_cells_missing_in_place(seven, method, opts):
    d, M = with_missing(seven, 0.05, block=True)
    res = sdccore.protect(d, method, rng=4, allow_unsafe="test", **opts)
    num = list(d.columns)
    out = res.data[num].to_numpy(float)
    np.testing.assert_array_equal(np.isnan(out), M)
    assert any("missing cell(s) kept missing" in n for n in res.notes)
    again = sdccore.protect(d, method, rng=4, allow_unsafe="test", **opts)
    pd.testing.assert_frame_equal(res.data, again.data)
    # the observed cells are protected (changed), not passed through
    assert (out[~M] != d.to_numpy(float)[~M]).mean() > 0.3


@pytest.mark.parametrize("method", ["fa", "pca", "magg", "noise", "rankswap"])
def test_observed_means_are_exact(method):
    """The method keeps the completed file's means; a constant shift per column then makes
    the released (observed) cells' means the original observed means, exactly; rank
    swapping releases a permutation of each column's observed values."""
    rng = np.random.default_rng(5)
    C = rng.standard_normal((4, 4))
    df = pd.DataFrame(rng.standard_normal((300, 4)) @ C + 10, columns=list("abcd"))
    d, M = with_missing(df, 0.1, seed=6)
    res = sdccore.protect(d, method, rng=1, bounds="none", rounding="none", allow_unsafe="test")
    np.testing.assert_allclose(res.data.mean().to_numpy(), d.mean().to_numpy(), rtol=1e-12)
    if method == "rankswap":
        for c in d.columns:
            assert sorted(res.data[c].dropna()) == sorted(d[c].dropna())


def test_observed_covariance_is_kept_in_expectation(monkeypatch):
    """Over seeds, PCA's release keeps the observed pairs' covariance up to sampling noise
    (the completed file's covariance is exact, the imputed cells are drawn from the EM
    model): the mean over 40 seeds is within 5 % of the original's.  The releases are made
    by protect's engine without the risk profile, which is measured on the finished release,
    changes nothing in it and was most of each run's time; the first seed's release is
    checked bit for bit against the whole pipeline's (conftest.releases_without_risk)."""
    rng = np.random.default_rng(11)
    C = rng.standard_normal((4, 4))
    df = pd.DataFrame(rng.standard_normal((400, 4)) @ C, columns=list("abcd"))
    d, M = with_missing(df, 0.1, seed=12)
    target = d.cov().to_numpy()
    releases = releases_without_risk(monkeypatch, d, range(40), method="pca")
    covs = [r.cov().to_numpy() for r in releases]
    rel = np.linalg.norm(np.mean(covs, axis=0) - target) / np.linalg.norm(target)
    assert rel < 0.05, rel


def test_complete_data_give_the_same_release_as_before(tarr):
    """Nothing missing: no imputation stream is drawn, the release is unchanged."""
    # general PCA is refused since issue 38 (intruders who know the method): the release is
    # only the vehicle here, passed with a reason
    a = sdccore.protect(tarr, "pca", rng=7, allow_unsafe="test of the imputation stream")
    b = sdccore.protect(tarr.astype(float), "pca", rng=7, allow_unsafe="test of the imputation stream")
    pd.testing.assert_frame_equal(a.data.astype(float), b.data.astype(float))
    assert not any("missing" in n for n in a.notes)


def test_missing_cells_never_count_as_disclosed(tarr):
    """The identity 'release' with half of SALES missing: only the observed half can be
    close to the truth, so the own record's share with the release is the observed share, not 1
    (and beyond the prior at most that)."""
    d = tarr.copy()
    d["SALES"] = d["SALES"].astype(float)
    d.loc[d.index[::2], "SALES"] = np.nan
    ev = sdccore.evaluate(d, d, sensitive=["SALES"])
    v = ev.risk.variables.loc["SALES"]
    assert v.with_release == pytest.approx(0.5, abs=1e-3)
    assert 0.5 - v.prior - 1e-3 <= v.close_own <= 0.5 + 1e-3
    assert ev.details["missing_cells"] == int(d["SALES"].isna().sum())


def test_too_few_observed_values_is_a_clear_error(tarr):
    d = tarr.copy().astype(float)
    d.loc[d.index[2:], "SALES"] = np.nan
    with pytest.raises(ValueError, match="SALES have fewer than 3 observed values"):
        sdccore.protect(d, "pca", rng=1)
    d = tarr.copy().astype(float)
    d.iloc[3, 2] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        sdccore.protect(d, "pca", rng=1)


# ----------------------------------------------------------------------------- measures

def test_observed_pil_equals_pil_on_complete_data(tarr):
    res = sdccore.protect(tarr, "pca", rng=8, allow_unsafe="test of PIL, not published")  # refused since issue 38
    X, Y = tarr.to_numpy(float), res.data.to_numpy(float)
    a, ca = _pil_arrays(X, Y)
    b, cb = _pil_observed(X, Y, np.ones_like(X, bool))
    for s in a:
        assert a[s] == pytest.approx(b[s], rel=1e-12, abs=1e-15)


def test_observed_pil_uses_pairwise_records(seven):
    """PIL of the correlation of one pair equals PIL on that pair's complete records."""
    d, M = with_missing(seven, 0.1, seed=9)
    res = sdccore.protect(d, "pca", rng=9, allow_unsafe="test of PIL, not published")  # refused since issue 38
    X, Y = d.to_numpy(float), res.data.to_numpy(float)
    _, comps = _pil_observed(X, Y, ~np.isnan(X))
    r = ~np.isnan(X[:, 0]) & ~np.isnan(X[:, 1])
    _, one = _pil_arrays(X[r][:, :2], Y[r][:, :2])
    assert comps["corr"][0] == pytest.approx(one["corr"][0], rel=1e-12)
    assert comps["mean"][0] == pytest.approx(_pil_arrays(X[~np.isnan(X[:, 0])][:, :1],
                                                         Y[~np.isnan(X[:, 0])][:, :1])[1]["mean"][0], rel=1e-12)


def test_every_measure_accepts_missing_cells(seven):
    d, M = with_missing(seven, 0.05, block=True)
    res = sdccore.protect(d, "pca", rng=10, allow_unsafe="test of the measures")  # refused since issue 38
    ev = sdccore.evaluate(d, res.data, sensitive=["SALES"])
    for k, v in ev.scores.items():
        assert 0.0 <= v <= 1.0, k
    assert sdccore.pil(d, res.data) == pytest.approx(ev.scores["pil"], rel=1e-12)
    assert sdccore.selectivity(d, res.data, sensitive=["SALES"]) == pytest.approx(ev.scores["selectivity"], rel=1e-12)
    assert 0 <= sdccore.dbrl(d, res.data) <= 1
    assert 0 <= sdccore.propensity_score(d, res.data) <= 1
    assert 0 <= sdccore.interval_disclosure(d, res.data) <= 1


# ----------------------------------------------------------------------------- CLI

# general PCA is refused since issue 38 (intruders who know the method); the CLI tests are
# about the missing cells, so the release goes out with a reason
UNSAFE = ("--allow-unsafe", "test of the missing cells, not published")


def _cli(*args):
    """``python -m sdccore ARGS`` in this process (conftest.run_cli): what is tested is what the
    command does with missing cells, not a new interpreter's start (about 2.5 CPU-s a run)."""
    code, out, err = run_cli(list(args))
    return SimpleNamespace(returncode=code, stdout=out, stderr=err)


def test_cli_keeps_missing_cells_and_offers_drop(tmp_path, tarr):
    d, M = with_missing(tarr, 0.05, block=True)
    src = tmp_path / "in.csv"
    d.to_csv(src, index=False)
    r = _cli("protect", str(src), "--method", "pca", "--seed", "3", *UNSAFE, "--out", str(tmp_path / "out.csv"))
    assert r.returncode == 0, r.stderr
    out = pd.read_csv(tmp_path / "out.csv")
    np.testing.assert_array_equal(out.isna().to_numpy(), M)
    assert "missing cell(s) kept missing" in r.stderr
    r = _cli("protect", str(src), "--method", "pca", "--seed", "3", *UNSAFE, "--missing", "drop-records",
             "--out", str(tmp_path / "rows.csv"))
    assert r.returncode == 0, r.stderr
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert len(rows) == int((~M.any(axis=1)).sum()) and not rows.isna().any().any()
    r = _cli("protect", str(src), "--method", "pca", "--seed", "3", *UNSAFE, "--missing", "drop-columns",
             "--out", str(tmp_path / "cols.csv"))
    # every column has a missing cell here: nothing left to protect, said in one line
    assert r.returncode == 2 and r.stderr.startswith("error: --missing drop-columns would leave 0 numeric")
    assert r.stderr.count("\n") == 1


def test_cli_drop_columns_leaves_out_only_incomplete_columns(tmp_path, tarr):
    d = tarr.copy().astype(float)
    d.loc[d.index[:5], "SALES"] = np.nan
    src = tmp_path / "in.csv"
    d.to_csv(src, index=False)
    r = _cli("protect", str(src), "--method", "pca", "--seed", "3", *UNSAFE, "--missing", "drop-columns",
             "--out", str(tmp_path / "cols.csv"))
    assert r.returncode == 0, r.stderr
    out = pd.read_csv(tmp_path / "cols.csv")
    assert "SALES" not in out.columns and len(out.columns) == len(d.columns) - 1


# ----------------------------------------------------------------------------- dashboard

def _app_with(df, name="mine.csv"):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.session_state["data"] = df
    at.session_state["data_name"] = name
    at.session_state["data_token"] = name + str(df.shape)
    at.session_state["roles"] = {c: "public" for c in df.columns}
    return at


def test_dashboard_keeps_missing_by_default_and_offers_one_click_choices(monkeypatch, seven):
    # seven variables: the Explore page completes the file with the EM estimate ten times, most of
    # its time on all 13
    monkeypatch.setenv("SDC_DEBUG", "1")
    monkeypatch.chdir(ROOT)
    d, M = with_missing(seven, 0.03, block=True)
    at = _app_with(d)
    at.switch_page("pages/1_data.py").run()
    assert not at.exception
    assert any("stay missing, in place" in i.value for i in at.info)
    assert at.radio(key="missing_choice").value == "keep"
    for page in ["pages/2_explore.py", "pages/3_configure.py", "pages/4_run.py", "pages/5_download.py"]:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
    at.switch_page("pages/1_data.py").run()
    at.radio(key="missing_choice").set_value("drop_records").run()
    at.button(key="apply_missing_choice").click().run()
    assert not at.exception
    assert len(at.session_state["data"]) == int((~M.any(axis=1)).sum())
    assert not at.session_state["data"].isna().any().any()


def test_rounding_uses_the_observed_cells_decimals(tarr):
    """An imputed cell has arbitrary digits: the decimals come from the observed cells (found
    walking the app with an SPSS file whose amounts have 2 decimals)."""
    d = tarr.astype(float) / 100  # two decimals
    d.loc[d.index[::9], "SALES"] = np.nan
    res = sdccore.protect(d, "fa", rng=2, allow_unsafe="rounding test")
    assert res.plausibility.loc["SALES", "decimals"] == 2
    v = res.data.SALES.dropna().to_numpy()
    assert np.allclose(v * 100, np.round(v * 100), atol=1e-6)


def test_the_priors_of_a_file_with_missing_cells_are_the_same_in_every_run(seven, monkeypatch):
    """Each run completes the missing cells by its own draws; the floors' priors read the
    original with those cells at their EM conditional means instead (what an intruder would
    guess of a cell nobody knows), so they are fitted once per data set, not once per seed (a
    households file with 5 % of incomes blank fitted the boosted prior again in every run: 28 of
    the Run page's 34 s), and the same seed still gives the same risk tables whatever ran before."""
    from sdccore._risk import attacks, intruders

    d, M = with_missing(seven, 0.05, seed=4)
    X = d.to_numpy(float)
    # the priors' original: the cells drawn from the fixed "prior" stream (not the conditional
    # means, which are conditioned on the target too), the observed ones as they are, whatever
    # the run's own draws
    from sdccore._core.streams import child_rng

    prior = prior_completion(complete(X, np.random.default_rng(9))[0], M)
    again = prior_completion(complete(X, np.random.default_rng(1))[0], M)
    assert np.array_equal(prior, again)
    np.testing.assert_allclose(prior, complete(X, child_rng(0, "prior"))[0], rtol=1e-12, atol=1e-8)
    assert np.array_equal(prior[~M], X[~M]) and not np.allclose(prior[M], complete(X)[0][M])
    assert prior_completion(X, np.zeros_like(M)) is None
    fits = []
    fresh = intruders.prior_estimates
    monkeypatch.setattr(intruders, "prior_estimates", lambda *a, **k: fits.append(1) or fresh(*a, **k))
    monkeypatch.setattr(attacks, "prior_estimates", intruders.prior_estimates)
    intruders._cache.clear()
    first = sdccore.protect(d, "ipso", sensitive=["SALES"], rng=1, allow_unsafe="test").risk
    n_first = len(fits)
    assert n_first >= 1
    other = sdccore.protect(d, "ipso", sensitive=["SALES"], rng=2, allow_unsafe="test").risk
    assert len(fits) == n_first                      # no prior fitted again for another seed
    assert other.variables.prior.equals(first.variables.prior)
    intruders._cache.clear()                         # a cold cache: the same tables for the same seed
    again = sdccore.protect(d, "ipso", sensitive=["SALES"], rng=2, allow_unsafe="test").risk
    pd.testing.assert_frame_equal(again.variables, other.variables)
    pd.testing.assert_frame_equal(again.intruders, other.intruders)
    # a cell missing from the original is never a prior hit either
    ctx_rows = np.arange(len(d))
    from sdccore._risk.registry import IntruderContext

    ctx = IntruderContext(variable="SALES", target=6, names=tuple(d.columns), original=complete(X)[0],
                          released=complete(X)[0], rows=ctx_rows, linked=ctx_rows, known=tuple(range(6)),
                          selective=True, observed=~M[:, 6], key=("t", 1), prior_original=prior, prior_key=("t", 2))
    models, PH = attacks.prior_hits(ctx)
    assert not PH[:, M[:, 6]].any() and PH[:, ~M[:, 6]].any()


def test_with_keys_the_same_seed_gives_the_same_prior_hits_whatever_ran_before():
    """The keys' own prior reads the run's original (its draws for the missing cells): its hits
    are kept with that run, not with the priors of the data set.  An outside review's case: 400
    records, a target set by a key and a known column, 40 of its cells missing and drawn anew
    in each run; the key prior's hits for seed 2 were 230 from a cold cache and 215 after seed 1."""
    from sdccore._risk import attacks, intruders
    from sdccore._risk.registry import IntruderContext

    g = np.random.default_rng(1)
    n = 400
    keys = g.integers(0, 8, size=(n, 1))
    X = np.c_[g.standard_normal((n, 2)), np.zeros(n)]
    X[:, 2] = 100 + 10 * keys[:, 0] + X[:, 0] + 0.3 * g.standard_normal(n)
    miss = np.zeros(n, bool)
    miss[g.choice(n, 40, replace=False)] = True
    prior = X.copy()
    prior[miss, 2] = 100 + 10 * keys[miss, 0] + X[miss, 0]
    rows = np.arange(n)

    def ctx(seed):
        W = prior.copy()
        W[miss, 2] += 30 * np.random.default_rng(seed).standard_normal(miss.sum())
        return IntruderContext(variable="t", target=2, names=("a", "b", "t"), original=W, released=W, rows=rows,
                               linked=rows, known=(0, 1), selective=True, observed=~miss, tolerance=0.01,
                               whole_original=W, key=intruders.data_key(W), prior_original=prior,
                               prior_key=("test prior", 1), keys=(keys, keys))

    def hits(order):
        intruders._cache.clear()
        for s_ in order:
            models, PH = attacks.prior_hits(ctx(s_))
        return models, PH

    (m_cold, cold), (m_warm, warm) = hits([2]), hits([1, 2])
    assert m_cold == m_warm and "key cell mean" in m_cold
    assert np.array_equal(cold, warm)
    intruders._cache.clear()
