"""Post-randomisation (PRAM) of categorical key variables with sdcMicro's invariant transition
matrix: the matrix equals sdcMicro 5.8.1's for the same diagonal draws, keeps the category
shares (p Rs = p), and the randomised file keeps every category's expected count."""
from fractions import Fraction as F

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore._keys.pram import MAX_LEVELS, Pram, _matrices, _redraw, pram


@pytest.fixture(scope="module")
def testdata():
    return sdccore.load_dataset("testdata")


def _file(n=2000, counts=(1000, 600, 300, 100), seed=0):
    """n records, 4 categories of the given counts (shuffled), and a stratum column."""
    g = np.random.default_rng(seed)
    x = g.permutation(np.repeat(np.arange(1, len(counts) + 1), counts))
    return pd.DataFrame({"x": x, "region": g.integers(0, 3, n), "y": g.normal(size=n)})


def _shares(col):
    v = col.dropna()
    return v.value_counts(normalize=True)


# (1) invariance -------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.5, 1.0, 0.2])
@pytest.mark.parametrize("strata", [None, ["urbrur", "sex"]])
def test_every_matrix_is_invariant_and_stochastic(testdata, alpha, strata):
    r = pram(testdata, ["water", "roof"], pd=0.6, alpha=alpha, strata=strata, rng=3)
    assert len(r.matrices) == (2 if strata is None else 8)
    for key, Rs in r.matrices.items():
        v = key if strata is None else key[0]
        rows = np.ones(len(testdata), bool) if strata is None else \
            (testdata[strata].apply(tuple, axis=1) == key[1]).to_numpy()
        p = _shares(testdata.loc[rows, v]).reindex(Rs.index, fill_value=0.0).to_numpy()
        M = Rs.to_numpy()
        np.testing.assert_allclose(p @ M, p, rtol=0, atol=1e-12)          # p Rs = p
        np.testing.assert_allclose(M.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert (M >= 0).all()
        assert (np.diag(M) >= 1 - alpha - 1e-12).all()                   # Rs = alpha R + (1 - alpha) I
        B = p[:, None] * M
        np.testing.assert_allclose(B, B.T, rtol=0, atol=1e-12)           # p_i Rs_ij = p_j Rs_ji
        assert (M[np.ix_(p > 0, p == 0)] == 0).all()                      # an absent category is never drawn
        assert list(Rs.index) == list(Rs.columns) == sorted(testdata[v].unique())


# (2) a case computed by hand ------------------------------------------------------------

def test_two_categories_by_hand():
    # p = (3/4, 1/4), pds = (0.9, 0.8), alpha = 1/2
    # P = [[9/10, 1/10], [2/10, 8/10]];  s = p P = (29/40, 11/40)
    # Q_kj = P_jk p_j / s_k:  Q = [[27/29, 2/29], [3/11, 8/11]]
    # R = P Q = [[276/319, 43/319], [129/319, 190/319]]   (p R = (3/4, 1/4): 207/319 + 32.25/319 = 3/4)
    # Rs = R / 2 + I / 2 = [[595/638, 43/638], [129/638, 509/638]]
    P, Q, R, Rs = _matrices([0.75, 0.25], [0.9, 0.8], 0.5)
    frac = lambda rows: np.array([[float(x) for x in r] for r in rows])  # noqa: E731
    np.testing.assert_allclose(P, frac([[F(9, 10), F(1, 10)], [F(2, 10), F(8, 10)]]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(Q, frac([[F(27, 29), F(2, 29)], [F(3, 11), F(8, 11)]]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(R, frac([[F(276, 319), F(43, 319)], [F(129, 319), F(190, 319)]]), rtol=0, atol=1e-15)
    np.testing.assert_allclose(Rs, frac([[F(595, 638), F(43, 638)], [F(129, 638), F(509, 638)]]), rtol=0,
                               atol=1e-15)
    # the shares' scale cancels in Q (sdcMicro divides the counts by the sum of the factor codes)
    np.testing.assert_allclose(_matrices([75, 25], [0.9, 0.8], 0.5)[3], Rs, rtol=0, atol=1e-15)


def test_one_category_never_changes_and_pd_1_or_alpha_0_change_nothing():
    _, _, R, Rs = _matrices([1.0], [0.85], 0.5)
    assert R.tolist() == [[1.0]] and Rs.tolist() == [[1.0]]
    d = _file()
    assert pram(d, "x", pd=1.0, rng=1).per_variable == {"x": 0}
    assert pram(d, "x", alpha=0.0, rng=1).per_variable == {"x": 0}
    one = pd.DataFrame({"k": ["a"] * 5, "z": range(5)})
    r = pram(one, "k", rng=1)
    assert r.per_variable == {"k": 0} and r.matrices["k"].to_numpy().tolist() == [[1.0]]


# (3) sdcMicro's own code ----------------------------------------------------------------

def test_matrix_equals_sdcmicros():
    # R 4, sdcMicro 5.8.1: calcTransitionMatrix, the function pramWORK defines, taken from its body;
    # the same seed before runif and before the call makes it draw the pds printed:
    #   env <- new.env(); eval(body(sdcMicro:::pramWORK)[[2]], envir = env); ctm <- env$calcTransitionMatrix
    #   x <- factor(rep(c("a", "b", "c"), c(50, 30, 20)))
    #   set.seed(2024); sprintf("%.17g", runif(3, 0.6, 1))
    #   set.seed(2024); sprintf("%.17g", t(ctm(x, pd = 0.6, alpha = 0.7)))
    pds = [0.93477701619267461, 0.72834701305255289, 0.87214533127844329]
    want = [[0.89021055311711017, 0.075348871098983555, 0.034440575783906274],
            [0.12558145183163927, 0.77411291193663323, 0.10030563623172761],
            [0.086101439459765686, 0.15045845434759142, 0.76344010619264291]]
    np.testing.assert_allclose(_matrices(np.array([50, 30, 20]) / 100, pds, 0.7)[3], want, rtol=0, atol=1e-15)
    # a level no record has (d):
    #   y <- factor(rep(c("a", "b", "c"), c(7, 2, 1)), levels = c("a", "b", "c", "d"))
    #   set.seed(7); runif(4, 0.8, 1); set.seed(7); t(ctm(y, pd = 0.8, alpha = 0.5))
    pds = [0.9977818595711142, 0.87954909065738329, 0.82313955575227737, 0.81394973574206242]
    want = [[0.98915505017291561, 0.0062185359821583762, 0.0046264138449259914, 0],
            [0.021764875937554311, 0.93746810122022595, 0.040767022842219808, 0],
            [0.032384896914481938, 0.081534045684439602, 0.88608105740107845, 0],
            [0.045250886004159434, 0.25927911410795201, 0.19546999988788863, 0.5]]
    np.testing.assert_allclose(_matrices(np.array([7, 2, 1, 0]) / 10, pds, 0.5)[3], want, rtol=0, atol=1e-15)


def test_changes_on_testdata_as_many_as_sdcmicros(testdata):
    # R 4, sdcMicro 5.8.1, testdata with water and roof as factors, default pd = 0.8, alpha = 0.5:
    #   for (s in 1:500) { set.seed(s); r <- pram(testdata, variables = c("water", "roof"))
    #                      sum(r$water != r$water_pram); sum(r$roof != r$roof_pram) }
    #   means 329.080 and 188.528 changed values, standard deviations 89.037 and 69.730.
    # The pds vary by run, so the count does; ours over 200 runs: the difference of the two means
    # has a standard error of sqrt(89^2 / 500 + 89^2 / 200) = 7.5 (water), 5.8 (roof); 4 of them allowed.
    ch = np.array([list(pram(testdata, ["water", "roof"], rng=s).per_variable.values()) for s in range(200)])
    assert abs(ch[:, 0].mean() - 329.080) < 4 * 7.5
    assert abs(ch[:, 1].mean() - 188.528) < 4 * 5.8
    assert ch[:, 0].std(ddof=1) == pytest.approx(89.037, rel=0.2)
    assert ch[:, 1].std(ddof=1) == pytest.approx(69.730, rel=0.2)


# (4) reproducibility --------------------------------------------------------------------

def test_same_seed_same_file_other_seed_other_file(testdata):
    a = pram(testdata, ["water", "roof"], strata=["urbrur"], rng=11)
    b = pram(testdata, ["water", "roof"], strata=["urbrur"], rng=11)
    pd.testing.assert_frame_equal(a.data, b.data)
    pd.testing.assert_frame_equal(a.changed, b.changed)
    assert a.matrices.keys() == b.matrices.keys()
    for k in a.matrices:
        assert a.matrices[k].to_numpy().tobytes() == b.matrices[k].to_numpy().tobytes()
    c = pram(testdata, ["water", "roof"], strata=["urbrur"], rng=12)
    assert not a.data.equals(c.data)
    assert not np.array_equal(a.matrices[("water", 1)].to_numpy(), c.matrices[("water", 1)].to_numpy())
    g = pram(testdata, ["water", "roof"], strata=["urbrur"], rng=np.random.default_rng(11))
    pd.testing.assert_frame_equal(a.data, g.data)


def test_the_documented_draw_order():
    # pds: L uniforms; then per category in order one uniform per record of it, in file order
    d = _file(n=300, counts=(150, 90, 45, 15))
    r = pram(d, "x", pd=0.7, alpha=0.6, rng=5)
    g = np.random.default_rng(5)
    codes = d.x.to_numpy() - 1
    Rs = _matrices(np.bincount(codes) / len(codes), 0.7 + (1 - 0.7) * g.random(4), 0.6)[3]
    np.testing.assert_array_equal(r.matrices["x"].to_numpy(), Rs)
    new = codes.copy()
    for i in range(4):
        at = np.flatnonzero(codes == i)
        new[at] = np.searchsorted(np.cumsum(Rs[i]), g.random(len(at)), side="right")
    np.testing.assert_array_equal(r.data.x.to_numpy(), new + 1)


# (5) expected counts kept ---------------------------------------------------------------

def test_expected_counts_kept_while_p_alone_drifts():
    d = _file()
    n0 = np.array([1000, 600, 300, 100])
    runs = 200
    inv = np.array([np.bincount(pram(d, "x", alpha=1.0, rng=s).data.x - 1, minlength=4) for s in range(runs)])
    # PRAM with P alone (no backward matrix): the same pds, the records redrawn from P's rows
    codes, p = d.x.to_numpy() - 1, n0 / n0.sum()
    fwd = []
    for s in range(runs):
        g = np.random.default_rng(s)
        fwd.append(np.bincount(_redraw(codes, _matrices(p, 0.8 + 0.2 * g.random(4), 1.0)[0], g), minlength=4))
    fwd = np.array(fwd)
    # the runs are independent, so the mean count of a category has standard error sd / sqrt(runs);
    # 4 standard errors leave a false alarm with chance 6e-5 per category (and the seeds are fixed)
    se = inv.std(axis=0, ddof=1) / np.sqrt(runs)
    assert (np.abs(inv.mean(axis=0) - n0) < 4 * se).all(), (inv.mean(axis=0), se)
    assert (inv.sum(axis=1) == 2000).all()
    # P pulls towards equal shares: the rare category gains about 1900 * 0.1 / 3 - 100 * 0.1 = 53
    se_f = fwd.std(axis=0, ddof=1) / np.sqrt(runs)
    drift = fwd.mean(axis=0) - n0
    assert drift[3] > 40 and drift[3] > 10 * se_f[3]
    assert drift[0] < -40 and drift[0] < -10 * se_f[0]


# (6) missing values ---------------------------------------------------------------------

def test_missing_values_stay_and_none_is_made():
    d = _file(n=1000, counts=(400, 300, 200, 100))
    d["f"] = d.x.astype(float)
    d.loc[::7, "f"] = np.nan
    d["s"] = d.x.map({1: "a", 2: "b", 3: "c", 4: "d"}).astype(object)
    d.loc[::5, "s"] = None
    d["c"] = pd.Categorical(d.x.map({1: "lo", 2: "mid", 3: "hi", 4: "top"}), categories=["lo", "mid", "hi", "top"],
                            ordered=True)
    d.loc[::3, "c"] = np.nan
    d["i"] = d.x.astype("Int64")
    d.loc[::4, "i"] = pd.NA
    d.loc[d.region == 0, "i"] = pd.NA  # a stratum where i is all missing
    r = pram(d, ["f", "s", "c", "i"], pd=0.5, alpha=1.0, strata=["region"], rng=2)
    for v in ["f", "s", "c", "i"]:
        np.testing.assert_array_equal(r.data[v].isna().to_numpy(), d[v].isna().to_numpy())
        assert not r.changed.loc[d[v].isna(), v].any()
        assert r.changed[v].sum() > 50
        assert r.data[v].dtype == d[v].dtype
    assert ("i", 0) not in r.matrices and ("i", 1) in r.matrices
    assert list(r.data.c.cat.categories) == ["lo", "mid", "hi", "top"] and r.data.c.cat.ordered
    assert set(r.data.s.dropna()) <= {"a", "b", "c", "d"}
    pd.testing.assert_frame_equal(r.data.drop(columns=["f", "s", "c", "i"]), d.drop(columns=["f", "s", "c", "i"]))
    assert (r.changed.to_numpy() == (r.data[["f", "s", "c", "i"]].astype(object).where(d[["f", "s", "c", "i"]].notna())
                                     != d[["f", "s", "c", "i"]].astype(object)).to_numpy() & d[["f", "s", "c", "i"]]
            .notna().to_numpy()).all()


# (7) the share changed ------------------------------------------------------------------

def test_changes_match_the_diagonal():
    # given Rs, a record of category i changes with chance 1 - Rs_ii: the count changed has mean
    # sum_i n_i (1 - Rs_ii) and variance sum_i n_i Rs_ii (1 - Rs_ii)
    d = _file()
    n = d.x.value_counts().sort_index().to_numpy()
    z = []
    for s in range(50):
        r = pram(d, "x", rng=s)
        diag = np.diag(r.matrices["x"].to_numpy())
        mean, var = (n * (1 - diag)).sum(), (n * diag * (1 - diag)).sum()
        z.append((r.per_variable["x"] - mean) / np.sqrt(var))
        assert r.per_variable["x"] / 2000 == pytest.approx(1 - (n / 2000 * diag).sum(), abs=4 * np.sqrt(var) / 2000)
    assert abs(np.mean(z)) < 4 / np.sqrt(50)   # 50 independent standardised counts
    assert 0.6 < np.std(z) < 1.4


# (8) given matrices and bad input --------------------------------------------------------

def test_given_transition_matrices():
    d = _file(n=200, counts=(100, 60, 30, 10))
    assert pram(d, "x", pd=np.eye(4), rng=1).per_variable == {"x": 0}
    swap = np.eye(4)[[1, 0, 3, 2]]   # 1 <-> 2, 3 <-> 4 with certainty
    r = pram(d, "x", pd=swap, alpha=0.3, rng=1)
    np.testing.assert_array_equal(r.data.x.to_numpy(), d.x.map({1: 2, 2: 1, 3: 4, 4: 3}).to_numpy())
    assert r.alpha == {"x": None} and r.per_variable == {"x": 200}
    frame = pd.DataFrame(swap, index=[1, 2, 3, 4], columns=[1, 2, 3, 4]).loc[[3, 1, 4, 2], [2, 4, 1, 3]]
    pd.testing.assert_frame_equal(pram(d, "x", pd=frame, rng=1).data, r.data)   # labels in any order
    d["w"] = d.x.map({1: "u", 2: "v", 3: "u", 4: "v"})
    both = pram(d, ["x", "w"], pd={"x": swap, "w": 0.8}, alpha={"x": 0.5, "w": 1.0}, strata="region", rng=4)
    assert (both.data.x == r.data.x).all() and both.alpha == {"x": None, "w": 1.0}
    assert both.summary().endswith("expected count (for x the matrix given, as it is).")
    assert both.pd["w"] == 0.8 and both.matrices[("x", 0)].to_numpy().tolist() == swap.tolist()
    none = pram(d, ["x", "w"], pd={"x": swap, "w": 0.8}, alpha={"x": None, "w": 1.0}, strata="region", rng=4)
    pd.testing.assert_frame_equal(none.data, both.data)   # alpha is ignored for a given matrix (sdcMicro: NA)


def test_missing_strata_values_form_a_stratum_sorted_last():
    d = _file(n=600, counts=(300, 200, 80, 20)).astype({"region": float})
    d.loc[d.region == 2, "region"] = np.nan
    r = pram(d, "x", strata="region", rng=8)
    keys = list(r.matrices)
    assert keys[:2] == [("x", 0.0), ("x", 1.0)] and len(keys) == 3 and np.isnan(keys[2][1])
    nan_rows = d.region.isna()
    n = d.loc[nan_rows, "x"].value_counts().sort_index().to_numpy()
    np.testing.assert_allclose(n @ r.matrices[keys[2]].to_numpy(), n, rtol=1e-12)
    assert r.changed.loc[nan_rows, "x"].any()


@pytest.mark.parametrize("kwargs, arg", [
    (dict(variables=["nope"]), "variables"),
    (dict(variables=[]), "variables"),
    (dict(pd=0.0), "pd"), (dict(pd=1.5), "pd"), (dict(pd=-0.2), "pd"), (dict(pd=np.nan), "pd"),
    (dict(alpha=-0.1), "alpha"), (dict(alpha=1.01), "alpha"),
    (dict(variables=["y"]), "variables"),          # 2,000 distinct numbers: a continuous column
    (dict(strata=["nope"]), "strata"), (dict(strata=["x"]), "strata"),
    (dict(pd=np.eye(3)), "pd"), (dict(pd=np.ones((4, 3)) / 3), "pd"), (dict(pd=np.full((4, 4), 0.3)), "pd"),
    (dict(pd=-np.eye(4)[[1, 0, 3, 2]] + 2 * np.eye(4)), "pd"),
    (dict(pd=pd.DataFrame(np.eye(4), index=list("abcd"), columns=list("abcd"))), "pd"),
    (dict(variables=["x", "region"], pd=np.eye(4)), "pd"),
    (dict(pd={"other": 0.8}), "pd"), (dict(alpha={"x": 0.5, "region": 0.5}), "alpha"), (dict(alpha=None), "alpha"),
])
def test_bad_input_names_the_argument(kwargs, arg):
    d = _file()
    kwargs = {"variables": ["x"], **kwargs}
    with pytest.raises(ValueError, match=rf"^{arg}\b|{arg}="):
        pram(d, **kwargs)


def test_too_many_levels_says_recode_and_type_errors(testdata):
    with pytest.raises(ValueError, match=f"variables: age has 88 distinct values .at most {MAX_LEVELS}.*recode"):
        pram(testdata, "age", rng=1)
    with pytest.raises(TypeError, match="data"):
        pram(testdata.to_numpy(), "water")
    with pytest.raises(TypeError, match="rng"):
        pram(testdata, "water", rng="seed")
    with pytest.raises(TypeError, match="pd"):
        pram(testdata, "water", pd="high")


# (9) the tutorial file ------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("strata", [None, ["urbrur", "sex"]])
def test_testdata_counts_within_sampling_error(testdata, seed, strata):
    # given the matrices, the count of category j is a sum of independent draws: mean sum_i n_i Rs_ij
    # (= n_j: invariance) and variance sum_i n_i Rs_ij (1 - Rs_ij); 4 standard deviations allowed
    r = pram(testdata, ["water", "roof"], strata=strata, rng=seed)
    groups = [(None, np.ones(len(testdata), bool))] if strata is None else \
        [(k, (testdata[strata].apply(tuple, axis=1) == k).to_numpy()) for k in testdata.groupby(strata).groups]
    for v in ["water", "roof"]:
        for key, rows in groups:
            Rs = r.matrices[v if key is None else (v, key)]
            n = testdata.loc[rows, v].value_counts().reindex(Rs.index, fill_value=0).to_numpy()
            after = r.data.loc[rows, v].value_counts().reindex(Rs.index, fill_value=0).to_numpy()
            M = Rs.to_numpy()
            np.testing.assert_allclose(n @ M, n, rtol=1e-12)
            sd = np.sqrt((n[:, None] * M * (1 - M)).sum(axis=0))
            assert (np.abs(after - n) <= 4 * sd + 1e-9).all(), (v, key, after, n)
            assert after.sum() == n.sum()
        assert r.changed[v].sum() > 0
    assert (r.data.drop(columns=["water", "roof"]) == testdata.drop(columns=["water", "roof"])).all().all()


def test_result_reads(testdata):
    r = pram(testdata, ["water", "roof"], rng=1)
    assert isinstance(r, Pram) and r.variables == ("water", "roof") and r.pd == {"water": 0.8, "roof": 0.8}
    assert r.per_variable == {"water": 320, "roof": 201}
    assert r.per_variable == {v: int((r.data[v] != testdata[v]).sum()) for v in r.variables}
    assert r.summary() == ("PRAM changed 320 of 4,580 values of water, 201 of 4,580 values of roof, each redrawn "
                           "from an invariant transition matrix that keeps every category's expected count.")
    assert repr(r) == "Pram(water, roof; changed {'water': 320, 'roof': 201})"
    s = pram(testdata, "roof", strata=["urbrur", "sex"], rng=1)
    assert "within the strata of urbrur, sex" in s.summary() and repr(s).endswith("strata urbrur, sex)")
    assert sorted(s.matrices) == [("roof", (1, 1)), ("roof", (1, 2)), ("roof", (2, 1)), ("roof", (2, 2))]
    with pytest.raises(Exception):
        r.variables = ()
    # the documented example
    assert r.data.water.value_counts().sort_index().tolist() == [596, 64, 1481, 1769, 571, 30, 37, 32]
