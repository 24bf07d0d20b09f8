"""Risk, utility and selectivity measures (issue 3): hand-computed cases, invariants,
Monte Carlo checks of the asymptotic variances and an independent logistic fit."""

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special

import sdccore
from conftest import raw_protect
from sdccore._risk import linkage as _linkage
from sdccore._measures import utility as _utility

from conftest import correlated


def frame(a, cols=None):
    a = np.asarray(a, dtype=float)
    return pd.DataFrame(a, columns=cols or [f"v{j}" for j in range(a.shape[1])])


# ------------------------------------------------------------------ DBRL

def test_dbrl_two_swapped_records():
    X = frame([[0, 0], [10, 0], [0, 10], [10, 10]])
    Y = frame([[10, 0], [0, 0], [0, 10], [10, 10]])  # records 1 and 2 swapped
    assert sdccore.dbrl(X, Y) == 0.5


def test_dbrl_ties_count_one_over_t():
    X = frame([[0, 0], [5, 5], [9, 0], [0, 9]])
    # record 0's own protected copy and one other protected record are equally near
    Y = frame([[1, 0], [-1, 0], [9, 0], [0, 9]])
    # record 0: nearest {0, 1} tie -> 1/2; record 1 (5,5): nearest is (1,0)? compute by hand:
    # distances in standardized units are proportional to raw ones here (same sd per column? no),
    # so check against a brute-force computation instead of a hand number
    Xs = (X - X.mean()) / X.std(ddof=0)
    Ys = (Y - X.mean()) / X.std(ddof=0)
    D = ((Xs.to_numpy()[:, None, :] - Ys.to_numpy()[None, :, :]) ** 2).sum(-1)
    expect = np.mean([1 / np.isclose(D[i], D[i].min()).sum() if np.isclose(D[i, i], D[i].min()) else 0 for i in range(4)])
    assert sdccore.dbrl(X, Y) == pytest.approx(expect)
    assert sdccore.dbrl(X, Y) == pytest.approx((0.5 + 0 + 1 + 1) / 4)


def test_dbrl_identity_and_duplicates(tarragona):
    syn = correlated(500, 4)
    assert sdccore.dbrl(syn, syn) == 1.0
    # Tarragona has two pairs of identical records: each of those 4 records ties with its twin
    assert sdccore.dbrl(tarragona, tarragona) == pytest.approx((830 + 4 * 0.5) / 834)


def test_dbrl_kernel_equals_brute_force():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 5))
    Y = X + rng.standard_normal((300, 5)) * 0.7
    A, B = _linkage._standardized_pair(X, Y, list(range(5)))
    D = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    brute = np.mean(D.argmin(axis=1) == np.arange(300))
    assert sdccore.dbrl(frame(X), frame(Y)) == pytest.approx(brute)


# ------------------------------------------------------------------ ID

def test_interval_disclosure_hand_case():
    # one variable, 10 records, w = ceil(p*10/100) = 1 for p = 1..10
    x = np.arange(10.0)
    y = x[::-1].copy()  # protected values reversed; own reference
    X, Y = frame(np.c_[x, x]), frame(np.c_[y, y])
    # record i's protected value is 9-i (rank 9-i), interval = values of ranks 8-i..10-i = [8-i, 10-i]
    # x_i = i inside iff 8-i <= i <= 10-i  -> i in {4, 5}
    assert sdccore.interval_disclosure(X, Y, reference="own") == pytest.approx(0.2)
    assert sdccore.interval_disclosure(X, X, reference="own") == 1.0


def test_interval_disclosure_linked_uses_dbrl_link():
    X = frame([[0, 0], [10, 0], [0, 10], [10, 10]])
    Y = frame([[10, 0], [0, 0], [0, 10], [10, 10]])
    # linked records are the identical ones, so every value is disclosed
    assert sdccore.interval_disclosure(X, Y) == 1.0
    assert sdccore.interval_disclosure(X, Y, reference="own") < 1.0


# ------------------------------------------------------------------ PIL

def test_pil_values_formula():
    # 2 Phi(1) - 1 = 0.682689...
    assert _utility._pil_values([1.0], [1.0])[0] == pytest.approx(0.6826894921)
    assert _utility._pil_values([0.0, 1.0], [0.0, 0.0]).tolist() == [0.0, 1.0]


def test_pil_identity_zero_and_shift_one():
    syn = correlated(400, 4)
    assert sdccore.pil(syn, syn) == 0.0
    shifted = syn + 10 * syn.std(ddof=0)
    per, _ = _utility._pil_arrays(syn.to_numpy(), shifted.to_numpy())
    assert per["mean"] == pytest.approx(1.0)
    assert per["var"] < 1e-12 and per["cov"] < 1e-12  # a shift changes no central moment


@pytest.mark.parametrize("stat,est,var", [
    ("variance", lambda x: x.var(), lambda mu, n: (mu[4] - mu[2] ** 2) / n),
    ("third moment", lambda x: ((x - x.mean()) ** 3).mean(),
     lambda mu, n: (mu[6] - mu[3] ** 2 + 9 * mu[2] ** 3 - 6 * mu[2] * mu[4]) / n),
    ("fourth moment", lambda x: ((x - x.mean()) ** 4).mean(),
     lambda mu, n: (mu[8] - mu[4] ** 2 + 16 * mu[2] * mu[3] ** 2 - 8 * mu[3] * mu[5]) / n),
])
def test_asymptotic_variances_match_monte_carlo(stat, est, var):
    rng = np.random.default_rng(11)
    n = 400
    sims = np.array([est(rng.standard_normal(n)) for _ in range(2000)])
    # normal central moments: mu2=1, mu3=0, mu4=3, mu5=0, mu6=15, mu8=105
    mu = {2: 1.0, 3: 0.0, 4: 3.0, 5: 0.0, 6: 15.0, 8: 105.0}
    assert sims.var() == pytest.approx(var(mu, n), rel=0.10)


def test_pil_variances_used_in_code_match_monte_carlo():
    # the code's V for the mean, variance, covariance and correlation of one sample versus
    # the spread of those estimators over 2,000 samples of the same distribution
    rng = np.random.default_rng(5)
    C = np.array([[1.0, 0.6], [0.6, 1.0]])
    Lc = np.linalg.cholesky(C)
    n = 300
    stats_ = []
    for _ in range(2000):
        x = rng.standard_normal((n, 2)) @ Lc.T
        c = np.cov(x.T, bias=True)
        stats_.append([x[:, 0].mean(), c[0, 0], c[0, 1], c[0, 1] / np.sqrt(c[0, 0] * c[1, 1])])
    spread = np.var(stats_, axis=0)
    big = rng.standard_normal((200000, 2)) @ Lc.T
    mu2 = big.var(0)
    Cx = big - big.mean(0)
    mu4 = (Cx ** 4).mean(0)
    cov = (Cx[:, 0] * Cx[:, 1]).mean()
    mu22 = (Cx[:, 0] ** 2 * Cx[:, 1] ** 2).mean()
    rho = cov / np.sqrt(mu2[0] * mu2[1])
    V = [mu2[0] / n, (mu4[0] - mu2[0] ** 2) / n, (mu22 - cov ** 2) / n, (1 - rho ** 2) ** 2 / n]
    assert spread == pytest.approx(V, rel=0.10)


def test_quantile_variance_monte_carlo():
    rng = np.random.default_rng(8)
    n = 500
    med = np.array([np.quantile(rng.standard_normal(n), 0.5) for _ in range(2000)])
    from scipy import stats
    assert med.var() == pytest.approx(0.25 / (n * stats.norm.pdf(0) ** 2), rel=0.10)


# ------------------------------------------------------------------ PS

def _independent_ps(X, Y):
    W = np.vstack([X, Y])
    t = np.r_[np.zeros(len(X)), np.ones(len(Y))]
    Z = (W - W.mean(0)) / W.std(0)
    F = _utility.polynomial_features(Z)
    F = (F - F.mean(0)) / F.std(0)
    A = np.c_[np.ones(len(F)), F]

    def nll(b):
        eta = A @ b
        return np.sum(np.logaddexp(0, eta) - t * eta)

    def grad(b):
        return A.T @ (special.expit(A @ b) - t)

    b = optimize.minimize(nll, np.zeros(A.shape[1]), jac=grad, method="BFGS", options={"gtol": 1e-10, "maxiter": 5000}).x
    p = special.expit(A @ b)
    return 4 * np.mean((p - 0.5) ** 2)


def test_ps_agrees_with_independent_fit():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((150, 3))
    Y = X[rng.permutation(150)] * 1.1 + rng.standard_normal((150, 3)) * 0.3
    ours = sdccore.propensity_score(frame(X), frame(Y))
    assert ours == pytest.approx(_independent_ps(X, Y), abs=1e-6)
    assert 0 < ours < 1


def test_ps_identity_and_shift():
    syn = correlated(400, 4)
    assert sdccore.propensity_score(syn, syn) < 0.01
    assert sdccore.propensity_score(syn, syn + 10 * syn.std(ddof=0)) > 0.9
    assert _utility.polynomial_features(np.ones((2, 13))).shape[1] == 104
    assert _utility.polynomial_features(np.ones((2, 13)), 3).shape[1] == 117


# ------------------------------------------------------------------ selectivity and evaluate

def test_selectivity_extremes():
    syn = correlated(300, 4, seed=4)
    rng = np.random.default_rng(0)
    destroyed = syn.copy()
    destroyed["v0"] = rng.permutation(syn["v0"].to_numpy())
    sel = sdccore.selectivity(syn, destroyed, sensitive=["v0"])
    assert sel < 0.05  # |cor| of a random permutation is near 0, public kept exactly
    reverse = syn.copy()
    for c in ("v1", "v2", "v3"):
        reverse[c] = rng.permutation(syn[c].to_numpy())
    assert sdccore.selectivity(syn, reverse, sensitive=["v0"]) > 0.95
    # exact: sensitive exactly uncorrelated (constructed orthogonal), public identical
    x = np.array([1.0, 2, 3, 4])
    X = frame(np.c_[x, [1.0, 0, 1, 0]])
    Y = frame(np.c_[[2.0, 1, 4, 3], [1.0, 0, 1, 0]])  # cor(x, y) = 0.6 -> need exact 0 case
    xp = np.array([2.0, 4, 1, 3])  # cor(x, xp) = 0
    assert np.corrcoef(x, xp)[0, 1] == pytest.approx(0)
    Y = frame(np.c_[xp, [1.0, 0, 1, 0]])
    assert sdccore.selectivity(X, Y, sensitive=["v0"]) == pytest.approx(0)
    # sensitive kept exactly, public replaced by a column uncorrelated with it: selectivity 1
    assert np.corrcoef([1.0, 0, 1, 0], [1.0, 1, 0, 0])[0, 1] == pytest.approx(0)
    assert sdccore.selectivity(X, frame(np.c_[x, [1.0, 1, 0, 0]]), sensitive=["v0"]) == pytest.approx(1)


def test_evaluate_identity(tarragona):
    syn = correlated(600, 5)
    ev = sdccore.evaluate(syn, syn)
    s = ev.scores
    assert s["dbrl"] == 1 and s["id"] == 1 and s["pil"] == 0 and s["ps"] < 0.01
    assert s["summary"] == pytest.approx(0.5, abs=0.0025)
    ev = sdccore.evaluate(syn, syn, sensitive=["v0"])
    assert set(ev.scores) == {"dbrl", "id", "pil", "ps", "ps_shape", "validity_loss", "summary", "selectivity", "overall"}


def test_evaluate_scores_in_range_and_details(tarragona):
    res = raw_protect(tarragona, method="pca", rng=0)
    ev = sdccore.evaluate(tarragona, res.data, pil_statistics=5)
    assert all(0 <= v <= 1 for v in ev.scores.values())
    assert ev.details["id"].shape == (13, 10)
    assert list(ev.details["pil"].index) == ["mean", "var", "cov", "corr", "quantiles"]
    assert ev.details["pil"]["mean"] < 1e-6  # PCA swapping keeps means exactly
    for key in ("odr", "outliers", "frobenius", "kl", "skewness_bias", "kurtosis_bias"):
        assert key in ev.details


def test_evaluate_on_tarragona_close_to_pca_paper_table4(tarragona):
    # PCA paper Table 4: M-AGG k=3 gives DBRL 0.0461, ID 0.3426, PS2 0.0296 (100 runs)
    runs = [sdccore.evaluate(tarragona, raw_protect(tarragona, method="magg", k=3, rng=s).data).scores for s in range(5)]
    mean = {k: np.mean([r[k] for r in runs]) for k in ("dbrl", "id", "ps")}
    assert mean["dbrl"] == pytest.approx(0.046, abs=0.02)
    assert mean["id"] == pytest.approx(0.343, abs=0.03)
    assert mean["ps"] == pytest.approx(0.030, abs=0.01)


@pytest.mark.parametrize("mk,match", [
    (lambda X: (X, X.iloc[:-1]), "834 x 13 but protected is 833"),
    (lambda X: (X, X.rename(columns={"SALES": "S"})), "column names differ"),
    (lambda X: (X.assign(SALES=X.SALES.astype(str)), X.assign(SALES=X.SALES.astype(str))), "not numeric"),
    (lambda X: (X, X.assign(SALES=np.nan)), "fewer than 3 cells observed in both files"),
    (lambda X: (X, X.assign(SALES=np.inf)), "infinite"),
    (lambda X: (X.iloc[:1], X.iloc[:1]), "at least 2 records"),
])
def test_evaluate_bad_input(tarragona, mk, match):
    a, b = mk(tarragona)
    with pytest.raises(ValueError, match=match):
        sdccore.evaluate(a, b)


def test_zero_variance_variable_is_documented_behaviour():
    syn = correlated(200, 3)
    syn["c"] = 7.0
    prot = syn.copy()
    prot["v0"] = prot["v0"].to_numpy()[::-1]
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ev = sdccore.evaluate(syn, prot)
    # no warning spam from the computation (a process-wide "error" filter also caught, once, a
    # warning of another test's thread in the same worker: only the numerical ones count here)
    spam = [w for w in caught if issubclass(w.category, RuntimeWarning) or "sdccore" in str(w.filename)]
    assert not spam, [str(w.message) for w in spam]
    assert ev.details["ic"].loc["c", "abs_cor"] == 1.0
    assert np.isnan(ev.details["id"].loc["c"]).all()
    assert all(np.isfinite(v) for v in ev.scores.values())


@pytest.mark.parametrize("seed", range(4))
def test_float32_screened_nearest_equals_exact_brute_force(seed):
    """The float32 screen must never lose the exact nearest record: near-ties, duplicates
    (more than the candidate buffer holds), outlying rows and tiny distances."""
    rng = np.random.default_rng(seed)
    n, m = 400, int(rng.integers(1, 14))
    A = rng.standard_normal((n, m))
    A[:5] *= 1e3  # outliers make the rounding bound large for some rows
    B = A + rng.standard_normal((n, m)) * 10.0 ** rng.uniform(-9, 0)
    B[50:100] = B[50]  # 50 identical protected records: overflows the 32-candidate buffer
    A[60] = B[50]
    first, ties, own, dist = _linkage._nearest(A, B)
    D = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    for i in range(n):
        best = np.flatnonzero(D[i] == D[i].min())
        assert first[i] == best[0] and ties[i] == len(best) and own[i] == (i in best)
        assert dist[i] == pytest.approx(D[i].min(), rel=1e-12, abs=1e-300)
    # the own record elsewhere (the Dask engine links a sample against one partition)
    target = np.where(np.arange(n) % 3 == 0, np.arange(n)[::-1], -1)
    _, _, own2, _ = _linkage._nearest(A, B, target)
    for i in range(n):
        best = np.flatnonzero(D[i] == D[i].min())
        assert own2[i] == (target[i] in best)


@pytest.mark.parametrize("m", [13, 20])
def test_staged_nearest_over_many_tiles_equals_exact_brute_force(m):
    """Issue 42: with 10-24 columns the kernel sums the first 6 for every cell and the rest only
    for the cells whose partial sum is still within reach of the best so far (a float32 sum of
    non-negative terms never falls).  Over 12 tiles of released records, with exact duplicates
    and records copied from the originals (ties, distance 0), the first nearest, the number of
    ties, the own record and the distance are the brute force's; and most cells are out of
    reach after 6 columns here, so the staged path is the one tested."""
    rng = np.random.default_rng(m)
    n, nb = 300, 6000
    C = rng.standard_normal((m, m))
    A = rng.standard_normal((n, m)) @ C
    B = rng.standard_normal((nb, m)) @ C
    B[:n] = A + 0.3 * rng.standard_normal((n, m))
    B[1000:1100] = B[2000]  # 100 identical released records
    A[7] = B[2000]
    B[3000:3010] = A[10:20]  # exact copies: distance 0
    first, ties, own, dist = _linkage._nearest(A, B)
    D = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    for i in range(n):
        best = np.flatnonzero(D[i] == D[i].min())
        assert first[i] == best[0] and ties[i] == len(best) and own[i] == (i in best)
        assert dist[i] == pytest.approx(D[i].min(), rel=1e-12, abs=1e-300)
    part = ((A[:, None, :6] - B[None, :, :6]) ** 2).sum(-1)
    assert np.median((part <= dist[:, None] * 1.01).mean(axis=1)) < 1 / _linkage.SPARSE


# ------------------------------------------------------------------ PIL: variance of r (issue 10.1)

def _var_r_direct(x, y):
    """The delta-method variance written out for one pair (the other computation)."""
    n = len(x)
    x = (x - x.mean()) / x.std()
    y = (y - y.mean()) / y.std()
    rho = np.mean(x * y)
    t = x * y - rho * (x * x + y * y) / 2
    return np.mean(t * t) / n


def test_correlation_variance_reduces_to_normal_theory_on_normal_data():
    rng = np.random.default_rng(1)
    n = 200_000
    for rho in (0.0, 0.3, 0.8):
        x = rng.standard_normal(n)
        y = rho * x + np.sqrt(1 - rho ** 2) * rng.standard_normal(n)
        v = sdccore._measures.utility.correlation_variance(np.c_[x, y])[0]
        assert v == pytest.approx((1 - rho ** 2) ** 2 / n, rel=0.03)
        assert v == pytest.approx(_var_r_direct(x, y), rel=1e-9)


def test_correlation_variance_matches_monte_carlo_on_skewed_data():
    """Log-normal pairs (business-like skew): the variance of r over 3000 samples of 1000
    against the formula with the population's moments (one sample of 10^6, rescaled to n);
    normal theory is about three times too small here."""
    rng = np.random.default_rng(2)
    L = np.array([[1.0, 0.6], [0.0, 0.8]])

    def draw(k):
        return np.exp(0.8 * (rng.standard_normal((k, 2)) @ L))
    n, reps, big = 1000, 3000, 1_000_000
    rs = [np.corrcoef(draw(n), rowvar=False)[0, 1] for _ in range(reps)]
    mc = np.var(rs)
    v = sdccore._measures.utility.correlation_variance(draw(big))[0] * big / n
    assert v == pytest.approx(mc, rel=0.1)  # MC standard error of a variance over 3000 runs: ~3 %
    normal = (1 - np.mean(rs) ** 2) ** 2 / n
    assert mc > 2 * normal
    # on one sample it is what the direct formula gives, and non-negative
    X = draw(n)
    assert sdccore._measures.utility.correlation_variance(X)[0] == pytest.approx(_var_r_direct(X[:, 0], X[:, 1]), rel=1e-9)


# ------------------------------------------------------------------ ID: the intruder (issue 10.2)

def test_interval_disclosure_readings_on_a_hand_made_case():
    """s = p = 1..10; the release reverses both (record j gets 11 - j).  Own version: the
    interval (w = ceil(p 10 / 100) = 1 rank either side) around 11 - i holds i only for
    i = 5, 6: ID = 0.2.  Linked on the public p (or on all, or on s): original i links to the
    record j = 11 - i, whose s' is exactly i: ID = 1."""
    o = pd.DataFrame({"s": np.arange(1.0, 11), "p": np.arange(1.0, 11)})
    r = pd.DataFrame({"s": 11 - o.s, "p": 11 - o.p})
    expect = {"own": 0.2, "linked_public": 1.0, "linked_all": 1.0, "linked_sensitive": 1.0}
    for ref, v in expect.items():
        assert sdccore.interval_disclosure(o, r, variables=["s"], reference=ref) == pytest.approx(v), ref
        assert sdccore.evaluate(o, r, sensitive=["s"], id_reference=ref).scores["id"] == pytest.approx(v), ref
    # defaults: selective -> own, general -> linked on all; the same number from both functions
    assert sdccore.evaluate(o, r, sensitive=["s"]).options["id_reference"] == "own"
    assert sdccore.interval_disclosure(o, r, variables=["s"]) == pytest.approx(0.2)
    assert sdccore.evaluate(o, r).options["id_reference"] == "linked_all"
    assert sdccore.interval_disclosure(o, r) == sdccore.evaluate(o, r).scores["id"]
    with pytest.raises(ValueError, match="id_reference='nearest' is not supported"):
        sdccore.evaluate(o, r, sensitive=["s"], id_reference="nearest")


def test_interval_disclosure_one_policy_on_tarragona(tarragona):
    res = sdccore.protect(tarragona, method="fa", sensitive=["SALES"], rng=1, allow_unsafe="test")
    for ref in ("own", "linked_all", "linked_public", "linked_sensitive"):
        a = sdccore.interval_disclosure(tarragona, res.data, variables=["SALES"], reference=ref)
        b = sdccore.evaluate(tarragona, res.data, sensitive=["SALES"], id_reference=ref).scores["id"]
        assert a == b, ref


# ------------------------------------------------------------------ PS that sees shape (issue 10.7)

def test_shape_aware_ps_separates_a_symmetric_release_of_skewed_data():
    """Original: log-normal amounts (skewed, positive).  Release: normal draws with exactly the
    same means and covariance (so negative amounts, no skew).  The papers' PS barely sees it;
    the PS on normal scores does.  A row permutation of the original is invisible to both."""
    rng = np.random.default_rng(5)
    n = 1500
    Xo = np.exp(rng.standard_normal((n, 3)) @ np.array([[1.0, 0.5, 0.3], [0, 0.8, 0.2], [0, 0, 0.7]]))
    o = pd.DataFrame(Xo, columns=["a", "b", "c"])
    G = rng.standard_normal((n, 3))
    G = (G - G.mean(0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(G, rowvar=False, bias=True))).T
    Y = Xo.mean(0) + G @ np.linalg.cholesky(np.cov(Xo, rowvar=False, bias=True)).T
    r = pd.DataFrame(Y, columns=o.columns)
    assert (r < 0).any().any()
    np.testing.assert_allclose(np.cov(Y, rowvar=False, bias=True), np.cov(Xo, rowvar=False, bias=True), rtol=1e-9)
    ps = sdccore.propensity_score(o, r)
    shape = sdccore.propensity_score_shape(o, r)
    assert ps < 1e-6 and shape > 0.1  # measured: PS 3e-31 (moments match exactly), on normal scores 0.114
    perm = o.sample(frac=1.0, random_state=1).reset_index(drop=True)
    assert sdccore.propensity_score_shape(o, perm) < 1e-3 and sdccore.propensity_score(o, perm) < 1e-3
    ev = sdccore.evaluate(o, r)
    assert ev.scores["ps_shape"] == pytest.approx(shape) and "ps_shape" not in ("summary",)
    assert ev.scores["summary"] == pytest.approx((ev.scores["pil"] + ev.scores["ps"] + ev.scores["dbrl"]
                                                  + ev.scores["id"]) / 4)


def test_normal_scores_are_van_der_waerden():
    W = np.array([[3.0], [1.0], [2.0], [2.0]])
    from scipy import stats
    expect = stats.norm.ppf((np.array([4.0, 1.0, 2.5, 2.5]) - 0.5) / 4)
    np.testing.assert_allclose(sdccore._measures.utility.normal_scores(W)[:, 0], expect)


def test_ps_fit_reaches_the_penalised_maximum_where_newton_cholesky_hands_over_to_lbfgs():
    # issue 29: EIA, general rank swap: the Newton-Cholesky Hessian degenerates and scikit-learn
    # hands over to lbfgs (500 steps, 4.8 s, stopped below the maximum); the PS fit continues
    # with Newton-CG from there.  The score is the maximum of the same penalised likelihood: a
    # second, independent fit (Newton-CG from zero, run to convergence) gives it too.
    import warnings

    from sklearn.linear_model import LogisticRegression

    from sdccore._measures.utility import PS_RIDGE_C, _bounded_features, _ps_arrays

    d = sdccore.load_dataset("eia")
    roles = sdccore.dataset_roles("eia")
    d = d[[c for c in d.columns if c not in set(roles.get("identifier", [])) | set(roles.get("exclude", []))]]
    # (sdcMicro's rank swapping in pairs, the exchange of this case before recipe format 8)
    res = sdccore.protect(d, "rankswap", rng=3, exchange="pairs", allow_unsafe="test")
    X, Y = d.to_numpy(float), res.data[d.columns].to_numpy(float)
    score, fit, _ = _ps_arrays(X, Y)
    W = np.vstack([X, Y])
    Z = (W - W.mean(0)) / W.std(0)
    F = _bounded_features(Z, 2, len(W))
    F = (F - F.mean(0)) / F.std(0)
    t = np.r_[np.zeros(len(X)), np.ones(len(Y))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(C=PS_RIDGE_C, solver="newton-cg", max_iter=1000, tol=1e-10).fit(F, t)
    p = ref.predict_proba(F)[:, 1]
    assert score == pytest.approx(float(np.mean((p - 0.5) ** 2) / 0.25), abs=2e-3)
    assert score > 0.92 and fit == "separated"


def test_a_nearly_separated_ps_fit_converges_by_newton_cholesky_to_the_penalised_maximum():
    # issue 42: EIA, general rank swap (the default exchange), seed 3: Newton-Cholesky needs 108
    # steps and no degenerate Hessian; stopped at 60, Newton-CG took over (4 CPU-s) and stopped
    # 1.2e-6 from the maximum.  The score is a Newton-CG fit to tol 1e-12's to 1e-6, and no
    # Newton-CG fallback runs.
    import warnings
    from unittest import mock

    from sklearn.linear_model import LogisticRegression

    from sdccore._measures import utility as u

    d = sdccore.load_dataset("eia")
    roles = sdccore.dataset_roles("eia")
    d = d[[c for c in d.columns if c not in set(roles.get("identifier", [])) | set(roles.get("exclude", []))]]
    res = sdccore.protect(d, "rankswap", rng=3, allow_unsafe="test")
    X, Y = d.to_numpy(float), res.data[d.columns].to_numpy(float)
    solvers = []
    real = LogisticRegression.set_params

    def spy(self, **kw):
        solvers.append(kw.get("solver"))
        return real(self, **kw)
    with mock.patch.object(LogisticRegression, "set_params", spy):
        score, fit, _ = u._ps_arrays(X, Y)
    assert "newton-cg" not in solvers and fit == "separated"
    W = np.vstack([X, Y])
    Z = (W - W.mean(0)) / W.std(0)
    F = u._bounded_features(Z, 2, len(W))
    F = (F - F.mean(0)) / F.std(0)
    t = np.r_[np.zeros(len(X)), np.ones(len(Y))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(C=u.PS_RIDGE_C, solver="newton-cg", max_iter=3000, tol=1e-12).fit(F, t)
    p = ref.predict_proba(F)[:, 1]
    assert score == pytest.approx(float(np.mean((p - 0.5) ** 2) / 0.25), abs=1e-6)


def test_the_originals_pil_figures_are_kept_across_evaluations_and_change_nothing():
    # issue 29: the original's moments, quantiles and densities computed once per original
    from sdccore._risk import intruders as _intruders
    from sdccore._measures.utility import _pil_stats

    rng = np.random.default_rng(8)
    X = rng.gamma(2.0, 3.0, (400, 4))
    Y = X + rng.standard_normal((400, 4))
    Y2 = X * 1.01
    a = _pil_stats(X, Y)
    b = _pil_stats(X, Y2)
    assert a["mu"] is b["mu"] and a["dens"] is b["dens"]  # the same kept figures
    key = ("pil original", _intruders.data_key(X), True)
    assert key in _intruders._cache
    Cx = X - X.mean(0)
    assert np.array_equal(a["mu"][3], (Cx ** 3).mean(axis=0))
    assert np.array_equal(a["M31"], (Cx * Cx * Cx).T @ Cx / 400)
    kept = sdccore.pil(pd.DataFrame(X), pd.DataFrame(Y))
    _intruders._cache.clear()
    assert sdccore.pil(pd.DataFrame(X), pd.DataFrame(Y)) == kept  # computed afresh: the same value
