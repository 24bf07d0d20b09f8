"""Issue 9: no release leaves the tool with a sensitive value, an identifier or a tail in the
clear.  Each finding of the issue is a test here (library, CLI, AppTest); the property test
at the end draws data, roles and configurations at random."""

import io
import json
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

import sdccore
from sdccore._io import read as _io
from sdccore.__main__ import main as cli_main

# streamlit's scan for custom components made once (conftest.component_manifests_scanned_once)
pytestmark = pytest.mark.usefixtures("component_manifests_scanned_once")

SENS2 = ["SALES", "NET.PROFIT"]
ROOT = Path(__file__).resolve().parents[2]


def _eia():
    return sdccore.load_dataset("eia").drop(columns=["UTILITYID", "UTILNAME", "STATE", "YEAR", "MONTH"])


def _cli(*args):
    err = io.StringIO()
    with redirect_stderr(err):
        code = cli_main(list(args))
    return code, err.getvalue()


def _independent_floor_check(X, Y, j, known, floors):
    """The own-record floors computed again, independently of sdccore (issue 26's rule, with
    issue 38's prior): the share of records whose own released value is within the tolerance
    and that no single prior model (OLS, log-OLS, 5-NN on the known variables, the mean,
    median and percentiles of the others, leave-one-out; the published fits; cross-fitted
    boosting: re-implemented with loops in tests/prior_reference.py) already gets, i.e. the
    fewest hits outside any one model's, overall, per band and in the largest 1 %; |cor| and
    the perturbed share on the part of x the known variables do not explain."""
    from prior_reference import _ref_priors

    x, y = X[:, j], Y[:, j]
    A = np.c_[np.ones(len(x)), X[:, known]]
    beta = np.linalg.lstsq(A, x, rcond=None)[0]
    ex, ey = x - A @ beta, y - A @ beta
    cor = abs(np.corrcoef(ex, ey)[0, 1]) if ex.std() > 1e-12 * np.abs(x).max() and ey.std() > 0 else 0.0
    close = np.abs(y - x) <= floors.tolerance * np.abs(x)
    prior = {m: np.abs(e - x) <= floors.tolerance * np.abs(x) for m, e in _ref_priors(X[:, known], x).items()}

    def beyond(idx):
        # (since issue 38: the fewest hits outside any one prior model's; before, outside the
        # model with the most hits, which is never lower)
        return min((close[idx] & ~h[idx]).mean() for h in prior.values())
    order = np.argsort(x, kind="stable")
    bands = np.array_split(order, floors.bands)
    top = order[len(x) - max(floors.top_records, int(np.ceil(0.01 * len(x)))):]
    worst = max([beyond(b) for b in bands] + [beyond(top)])
    return (cor <= floors.max_abs_cor and 1 - cor ** 2 >= floors.min_perturbed_share
            and beyond(np.arange(len(x))) <= floors.max_close_share and worst <= floors.max_close_share)


# ------------------------------------------------------------------ finding 1: the search's "best"

def test_isolating_mask_without_the_sensitive_factor_is_refused_everywhere(tarragona, tmp_path):
    cfg = dict(method="fa", sensitive=SENS2, rotation="isolate_sensitive", factors=[2])
    dec = sdccore.decompose(tarragona, **cfg)
    assert dict(dec.below_floor)["SALES"] < 1e-9  # factor 1 alone carries SALES
    with pytest.raises(sdccore.UnsafeReleaseError, match="SALES: only 0.0% of its variance not explained by the public variables is perturbed") as ei:
        sdccore.protect(tarragona, rng=1, **cfg)
    assert ei.value.risk is not None and "SALES" in ei.value.risk.failing
    # the CLI, from a recipe as the hook writes it: exit 2, one line naming SALES, no file
    tarragona.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "r.json").write_text(json.dumps({**cfg, "seed": 1}))
    code, text = _cli("protect", str(tmp_path / "t.csv"), "--recipe", str(tmp_path / "r.json"),
                      "--out", str(tmp_path / "o.csv"))
    assert code == 2 and text.startswith("error: release refused") and "SALES" in text
    assert len(text.strip().splitlines()) == 1 and not (tmp_path / "o.csv").exists()
    # with a reason it is written, and says so
    code, text = _cli("protect", str(tmp_path / "t.csv"), "--recipe", str(tmp_path / "r.json"),
                      "--out", str(tmp_path / "o.csv"), "--allow-unsafe", "internal check of the gate")
    assert code == 0 and "BROKEN, released because: internal check of the gate" in text


def test_search_ranks_only_configurations_that_meet_the_floors(tarragona):
    # general protection: selective FA masks all break the reconstruction floor now, and since
    # issue 38 every PCA mask run breaks a floor too (the intruders who know the method): none
    # is ranked, and the note says so.  Each candidate gets 5 runs first (search's first pass),
    # so a budget of 10 runs the first two masks ([1, 2] and [1, 2, 3]; 26 others are refused
    # before running): the ranking, the note and "every mask run broke a floor" are checked as
    # with more masks (a budget of 60 ran 12 of them, six times the runs)
    res = sdccore.search(tarragona, "pca", reps=4, budget=10, rng=12345)
    assert res.refused > 0 and len(res.ranking) == 0 and "no candidate met the risk floors" in res.note
    assert res.tried == 2 and len(res.refusals) == res.tried  # every mask run broke a floor in a run
    # where some candidates pass, only those are ranked.  M-AGG of SALES alone meets the default
    # floors for no k from 2 to 100 in 5 runs since the replay intruder (issue 38: 3 of the 9
    # largest firms back from k = 12, the one k that passed before); with the floors' share
    # lowered to 30 % and no bounds (``base``: M-AGG's noise sets 19-20 % of SALES to 0 under the
    # default bounds, a heap that breaks a floor since issue 39), the k values run in order, 5 runs
    # each, with the same seeds whatever the budget: a budget of 45 reaches k = 12 (the ninth);
    # k = 7, 8, 10 and 12 pass and are ranked, the five others are refused
    sel = sdccore.search(tarragona, "magg", sensitive=["SALES"], reps=4, budget=45, rng=12345,
                         base={"floors": {"max_close_share": 0.3}, "bounds": "none"})
    assert sel.refused == 5 and sorted(sel.ranking.config) == ["magg bounds=none k=10", "magg bounds=none k=12",
                                                               "magg bounds=none k=7", "magg bounds=none k=8"]
    assert not set(sel.ranking.config) & set(sel.refusals.config)
    for opts in sel.ranking.options.head(3):
        cfg = json.loads(opts)
        method = cfg.pop("method")
        out = sdccore.protect(tarragona, method=method, sensitive=["SALES"], rng=3,
                              allow_unsafe="another seed of a ranked k", **cfg)
        v = out.risk.variables.loc["SALES"]
        assert np.abs(out.data.SALES - tarragona.SALES).max() > 0
        # (selective protection: |cor| of the part the public variables do not explain)
        assert v.residual_cor <= 0.9 and v.perturbed_share >= 0.3


# ------------------------------------------------------------------ finding 2: a hand-picked mask

def _diabetes_like(n=442, seed=0):
    """A weakly related target beside correlated predictors (the shape of sklearn's diabetes)."""
    rng = np.random.default_rng(seed)
    f = rng.standard_normal((n, 2))
    X = np.column_stack([f[:, 0] + 0.5 * rng.standard_normal(n) for _ in range(3)]
                        + [f[:, 1] + 0.5 * rng.standard_normal(n) for _ in range(3)])
    target = 150 + 40 * (0.4 * f[:, 0] + rng.standard_normal(n))
    df = pd.DataFrame(X * 10 + 50, columns=[f"x{i}" for i in range(6)])
    df["target"] = np.round(target)
    return df


def test_mask_that_leaves_a_sensitive_variable_unperturbed_is_flagged_and_refused():
    d = _diabetes_like()
    cfg = dict(method="fa", sensitive=["target"], rotation="isolate_sensitive", factors=[5])
    dec = sdccore.decompose(d, **cfg)
    assert dec.below_floor and dec.below_floor[0][0] == "target" and dec.below_floor[0][1] < 0.01
    with pytest.raises(sdccore.UnsafeReleaseError, match="target"):
        sdccore.protect(d, rng=0, **cfg)


def test_configure_page_says_no_release_before_running():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    at.switch_page("pages/3_configure.py").run()
    at.radio(key="fa_selection").set_value("manual").run()
    at.checkbox(key="fa_mask_1").uncheck().run()
    at.checkbox(key="fa_mask_3").check().run()
    assert not at.exception
    assert any("SALES: only" in e.value and "no release can be made" in e.value for e in at.error)
    # the one-run preview says which floor breaks
    assert any("SALES:" in e.value and "floor" in e.value for e in at.error[1:])


# ------------------------------------------------------------------ finding 3: the pre-selected near-copy

def test_near_copy_is_never_suggested():
    eia = _eia()
    # (2 runs each: M-AGG is a near-copy in every run, so "met the floors in no run" and
    # |cor| > 0.99 need no third run to be told apart from chance)
    cmp_ = sdccore.compare(eia, {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"}},
                           sensitive=["TOTREVENUE", "RESREVENUE"], reps=2, rng=1)
    safe = cmp_.safety().set_index("config")
    assert safe.loc["M-AGG", "floors_met"] == 0.0  # |cor(x, x')| 0.999: a near-copy
    assert "|cor(original, protected)|" in safe.loc["M-AGG", "violation"] or "perturbed" in safe.loc["M-AGG", "violation"]
    vr = cmp_.variable_risk().set_index(["config", "variable"])
    assert vr.loc[("M-AGG", "TOTREVENUE"), "abs_cor"] > 0.99
    best, why = cmp_.suggest()
    assert best != "M-AGG"
    if best is not None:
        assert safe.loc[best, "floors_met"] == 1.0


def test_suggestion_respects_the_risk_ceiling(tarragona):
    # (since issue 38 general FA is refused on this file at every seed: one configuration that
    # meets the floors, selective IPSO, beside one that does not, M-AGG of SALES alone)
    cmp_ = sdccore.compare(tarragona, {"IPSO": {"method": "ipso"}, "M-AGG": {"method": "magg"}}, sensitive=["SALES"],
                           reps=3, rng=2)
    assert cmp_.suggest()[0] == "IPSO"
    ru = cmp_.risk_utility().set_index("config")
    assert cmp_.suggest(max_risk=ru.loc["IPSO", "risk_hi"] + 1e-6)[0] == "IPSO"
    assert cmp_.suggest(max_risk=ru.loc["IPSO", "risk_hi"] - 1e-6)[0] is None


# ------------------------------------------------------------------ finding 4: the tail

def test_largest_records_kept_close_are_caught(tarragona):
    with pytest.raises(sdccore.UnsafeReleaseError) as ei:
        sdccore.protect(tarragona, method="magg", sensitive=["SALES"], rng=0)
    b = ei.value.risk.bands.set_index("band")
    assert b.loc["10", "close_own"] > 0.2 and b.loc["10", "median_rel_error"] < 0.1
    assert "size band" in str(ei.value) or "largest records" in str(ei.value) or "SALES" in str(ei.value)
    # the same figures from evaluate, for library and CLI users
    res = sdccore.protect(tarragona, method="magg", sensitive=["SALES"], rng=0, allow_unsafe="test of the tail")
    ev = sdccore.evaluate(tarragona, res.data, sensitive=["SALES"])
    assert isinstance(ev.risk, sdccore.RiskProfile) and not ev.risk.ok
    top = ev.risk.bands[ev.risk.bands.band == "top 1 %"]
    assert len(top) == 1 and top.records.iloc[0] >= 5


def test_band_figures_match_a_direct_count(tarragona):
    res = sdccore.protect(tarragona, method="fa", sensitive=["SALES"], rng=4, allow_unsafe="figures only")
    x, y = tarragona.SALES.to_numpy(float), res.data.SALES.to_numpy(float)
    order = np.argsort(x, kind="stable")
    top = order[-res.risk.bands.records.iloc[-1]:]
    direct = np.mean(np.abs(y[top] - x[top]) <= 0.05 * np.abs(x[top]))
    # beyond the prior: at most the direct count, at least the direct count less what the prior gets
    b = res.risk.bands.iloc[-1]
    assert direct - b.prior - 1e-15 <= b.close_own <= direct + 1e-15
    v = res.risk.variables.loc["SALES"]
    direct_all = np.mean(np.abs(y - x) <= 0.05 * np.abs(x))
    assert direct_all - v.prior - 1e-15 <= v.close_own <= direct_all + 1e-15


# ------------------------------------------------------------------ finding 5: identifiers

def test_identifier_columns_are_suggested_with_reasons():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"patient_id": [f"P{i:04d}" for i in range(200)], "age": rng.integers(20, 80, 200),
                       "sex": rng.integers(1, 3, 200), "income": rng.lognormal(10, 1, 200),
                       "bmi": rng.normal(25, 4, 200)})
    sug = sdccore.suggest_roles(df)
    assert sug.roles["patient_id"] == "identifier" and "unique per record" in sug.reasons["patient_id"]
    assert sug.roles["sex"] == "excluded" and sug.flags["sex"] == "code"
    assert sug.roles["income"] == "public" and sug.roles["age"] == "public"
    eia = sdccore.suggest_roles(sdccore.load_dataset("eia"))
    assert eia.roles["UTILITYID"] == "identifier" and eia.roles["UTILNAME"] == "identifier"


def test_cli_refuses_an_unhandled_identifier(tmp_path):
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"patient_id": [f"P{i:04d}" for i in range(300)]})
    z = rng.standard_normal((300, 1))
    for j in range(4):
        df[f"v{j}"] = np.round(np.exp(z[:, 0] + 0.6 * rng.standard_normal(300)) * 1000, 2)
    df.to_csv(tmp_path / "p.csv", index=False)
    # (general protection of this file is refused by the floors since issue 38, and the CLI checks
    # the roles after protecting: the identifier is tested here, not the floors)
    why = ["--allow-unsafe", "test: the identifier check"]
    code, text = _cli("protect", str(tmp_path / "p.csv"), "--out", str(tmp_path / "o.csv"), "--seed", "1", *why)
    assert code == 2 and "patient_id" in text and "--drop patient_id" in text
    code, text = _cli("protect", str(tmp_path / "p.csv"), "--out", str(tmp_path / "o.csv"), "--seed", "1",
                      "--drop", "patient_id", *why)
    assert code == 0, text
    out = pd.read_csv(tmp_path / "o.csv")
    assert "patient_id" not in out.columns and list(out.columns) == [f"v{j}" for j in range(4)]


def test_eia_sample_roles_are_shown_and_survive_edits_and_page_changes():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.selectbox(key="sample_choice").set_value("eia").run()
    assert set(at.multiselect(key="identifier_select").value) == {"UTILITYID", "UTILNAME"}
    assert {"STATE", "YEAR", "MONTH"} <= set(at.multiselect(key="excluded_select").value)
    at.multiselect(key="sensitive_select").set_value(["TOTREVENUE"]).run()
    assert set(at.multiselect(key="identifier_select").value) == {"UTILITYID", "UTILNAME"}
    at.switch_page("pages/2_explore.py").run()
    at.switch_page("pages/1_data.py").run()
    assert set(at.multiselect(key="identifier_select").value) == {"UTILITYID", "UTILNAME"}
    assert at.session_state["roles"]["TOTREVENUE"] == "sensitive"
    # STATE is a suggested key (released k-anonymous: a decision of its own); taken out of the keys it is a text
    # column released unchanged, red until confirmed
    assert not any("STATE" in e.value for e in at.error)
    at.multiselect(key="keys_select").set_value(["MONTH"]).run()
    assert any("STATE" in e.value for e in at.error)


def test_text_passthrough_blocks_download_until_confirmed():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.selectbox(key="sample_choice").set_value("eia").run()
    # (since issue 38 no method meets the floors in general protection on this file, and the page
    # says so before anything else: a sensitive variable, so that a release is offered)
    at.multiselect(key="sensitive_select").set_value(["TOTREVENUE"]).run()
    at.multiselect(key="keys_select").set_value(["MONTH"]).run()  # STATE not a key: released unchanged as text
    at.switch_page("pages/5_download.py").run()
    assert any("Download blocked" in e.value and "STATE" in e.value for e in at.error)
    assert not [b for b in at.get("download_button") if b.label == "Download the protected CSV"]
    at.switch_page("pages/1_data.py").run()
    at.checkbox(key="confirm_passthrough").check().run()
    assert at.session_state["passthrough_confirmed"] is True
    at.switch_page("pages/5_download.py").run()
    at.button(key="prepare_release").click().run()  # nothing is protected until asked (issue 41)
    assert not at.exception and not any("Download blocked" in e.value for e in at.error)
    assert [b for b in at.get("download_button") if b.label == "Download the protected CSV"]


# ------------------------------------------------------------------ finding 6: plausible values

def test_released_values_are_plausible(tarragona):
    res = sdccore.protect(tarragona, method="fa", sensitive=["SALES"], rng=1, transform="auto",
                          allow_unsafe="plausibility only")
    out = res.data
    for c in tarragona.columns:
        if tarragona[c].min() >= 0:
            assert out[c].min() >= 0, c  # no negative sales, assets or costs
        assert out[c].dtype == np.int64, c  # integers stay integers
    assert "SALES" in res.options["transform"] and res.plausibility.loc["SALES", "transform"] == "log"
    csv = _io.release_csv(out).decode()
    assert ".0000000000" not in csv and "e+" not in csv
    # the guarantee that changes is stated: means kept on the log scale; the change is reported
    assert abs(res.plausibility.loc["SALES", "mean_change_sd"]) < 1.0
    # by default: original scale, sign kept by clipping (counted), integers kept
    d = sdccore.protect(tarragona, method="fa", sensitive=["SALES"], rng=1, allow_unsafe="plausibility only")
    assert d.options["transform"] == [] and d.options["bounds"] == "plausible" and d.options["rounding"] == "original"
    assert d.data.SALES.min() >= 0 and d.data.SALES.dtype == np.int64
    assert d.plausibility.loc["SALES", "clipped"] == int((raw := sdccore.protect(
        tarragona, method="fa", sensitive=["SALES"], rng=1, bounds="none", rounding="none",
        allow_unsafe="plausibility only").data.SALES < 0).sum())


def test_release_written_in_the_upload_format(tmp_path, tarragona):
    t = tarragona.iloc[:300].copy()
    t["SALES"] = t["SALES"] / 100  # two decimals
    src = tmp_path / "semi.csv"
    src.write_text(t.to_csv(index=False, sep=";", decimal=","))
    # (general FA is refused on this file since issue 38: the file's format is tested, not the floors)
    code, text = _cli("protect", str(src), "--out", str(tmp_path / "o.csv"), "--seed", "2", "--method", "fa",
                      "--allow-unsafe", "test: the upload's format")
    assert code == 0, text
    raw = (tmp_path / "o.csv").read_text()
    assert raw.splitlines()[0].count(";") == t.shape[1] - 1
    back = sdccore.read_table(tmp_path / "o.csv")
    assert back.sep == ";" and back.decimal == ","
    assert np.allclose(np.round(back.data.SALES * 100), back.data.SALES * 100, rtol=0, atol=1e-6)  # two decimals


def test_old_recipes_without_a_version_rebuild_their_file(tmp_path, tarragona):
    """A recipe from before plausible values (no recipe_version) is replayed with the steps off."""
    tarragona.to_csv(tmp_path / "t.csv", index=False)
    old = {"method": "pca", "sensitive": None, "components": "all", "perturbation": "swap", "residuals": "keep",
           "seed": 5}
    (tmp_path / "old.json").write_text(json.dumps(old))
    # (general PCA is refused on this file since issue 38: the replay is tested, not the floors)
    why = "test: an old recipe replayed"
    code, text = _cli("protect", str(tmp_path / "t.csv"), "--recipe", str(tmp_path / "old.json"),
                      "--out", str(tmp_path / "o.csv"), "--allow-unsafe", why)
    assert code == 0, text
    expect = sdccore.protect(tarragona, method="pca", rng=5, transform="none", bounds="none", rounding="none",
                             allow_unsafe=why).data
    got = pd.read_csv(tmp_path / "o.csv")
    np.testing.assert_allclose(got.to_numpy(), expect.to_numpy(), rtol=1e-12)


def test_server_binds_loopback_and_loads_no_outside_icon():
    conf = open(ROOT / ".streamlit" / "config.toml").read()
    assert 'address = "127.0.0.1"' in conf
    app = open(ROOT / "app.py").read()
    assert "page_icon=str(ICON)" in app and ":material/shield:" not in app


# ------------------------------------------------------------------ property: nothing unsafe is offered

def _frame(n, m, seed, scale):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((m, m)) * scale
    X = rng.standard_normal((n, m)) @ (np.eye(m) + A)
    X[:, 0] = np.exp(X[:, 0])  # a skewed positive variable
    return pd.DataFrame(np.round(X * 100, 2), columns=[f"v{j}" for j in range(m)])


SCALES = []


@st.composite
def _case(draw):
    n = draw(st.integers(60, 200))
    m = draw(st.integers(3, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    scale = draw(st.floats(0.0, 1.5))
    SCALES.append((n, m, seed, scale))
    df = _frame(n, m, seed, scale)
    k = draw(st.integers(1, m - 1))
    sens = sorted(draw(st.sets(st.sampled_from(list(df.columns)), min_size=1, max_size=k)))
    method = draw(st.sampled_from(["fa", "pca", "magg", "rankswap", "noise"]))
    opts = {}
    if method == "fa":
        opts["factors"] = draw(st.sampled_from(["auto", [1], [2], [1, 2], "all"]))
    elif method == "pca":
        opts["components"] = draw(st.sampled_from(["auto", [1], [2], "all"]))
    return df, sens, method, opts, seed


# derandomized so that CI runs the same 40 cases each time; the example is a case a random run
# found when the bands were cut differently here and in sdccore (2 of 9 records close in band 1)
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_no_offered_release_breaks_a_floor(case):
    df, sens, method, opts, seed = case
    try:
        res = sdccore.protect(df, method=method, sensitive=sens, rng=seed, **opts)
    except sdccore.UnsafeReleaseError as exc:
        assert exc.risk is not None and not exc.risk.ok and any(v in str(exc) for v in exc.risk.failing)
        return
    except ValueError:
        return  # e.g. options that select nothing: refused with its own message
    floors = sdccore.RiskFloors()
    assert res.risk.ok
    X, Y = df.to_numpy(float), res.data[list(df.columns)].to_numpy(float)
    known = [k for k, c in enumerate(df.columns) if c not in sens]
    for v in sens:
        assert _independent_floor_check(X, Y, list(df.columns).index(v), known, floors), v
    assert sdccore.evaluate(df, res.data, sensitive=sens).risk.ok


def test_bands_are_cut_as_documented_a_case_the_property_test_found():
    """81 records, 10 bands: array_split gives band 1 nine records, two of them close (22 %).

    Before, sdccore cut at round(linspace) (8 records, one close: 12.5 %) and let the release
    through, while the independent check above, cutting as documented, failed it.  Since
    issue 38 the prior has the percentiles of the others: the 10th gets one of the two, so
    both counts give 1 of 9 beyond the prior and the own floors hold; the release is refused
    by the reconstruction intruder instead."""
    df = _frame(81, 5, 58612999, 1.375)
    with pytest.raises(sdccore.UnsafeReleaseError, match=r"v3: in size band") as ei:
        sdccore.protect(df, method="fa", sensitive=["v3"], rng=58612999, factors="auto")
    b = ei.value.risk.bands.set_index(["variable", "band"])
    assert b.loc[("v3", "1"), "records"] == 9 and b.loc[("v3", "10"), "records"] == 8
    Y = sdccore.protect(df, method="fa", sensitive=["v3"], rng=58612999, factors="auto",
                        allow_unsafe="test").data[list(df.columns)].to_numpy(float)
    x, y = df.v3.to_numpy(float), Y[:, 3]
    band1 = np.array_split(np.argsort(x, kind="stable"), 10)[0]
    assert np.sum(np.abs(y[band1] - x[band1]) <= 0.05 * np.abs(x[band1])) == 2  # two of the nine close
    # (since issue 38: one of them is within 5 % of the others' 10th percentile, a prior model)
    assert b.loc[("v3", "1"), "close_own"] == pytest.approx(1 / 9)
    assert _independent_floor_check(df.to_numpy(float), Y, 3, [0, 1, 2, 4], sdccore.RiskFloors())
    assert ei.value.risk.variables.loc["v3", "intruder"] == "reconstruction"


def test_size_bands_in_linear_time_are_the_stable_order_cut_as_array_split():
    # issue 29: the bands without a sort; ties at a cut go by record order, as a stable sort puts them
    from sdccore._risk.floors import rank_bands

    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 11, 100, 1001):
        for bands in (1, 3, 10):
            for x in (rng.standard_normal(n), np.round(rng.standard_normal(n)), np.zeros(n), rng.standard_normal(n)[:, None].repeat(2, 1)[:, 0]):
                top = max(1, int(np.ceil(0.01 * n))) if n > 1 else None
                order = np.argsort(x, kind="stable")
                ref = [np.sort(s) for s in np.array_split(order, bands)] + ([np.sort(order[n - top:])] if top else [])
                got = rank_bands(x, bands, top)
                assert len(got) == len(ref) and all(np.array_equal(a, b) for a, b in zip(got, ref)), (n, bands)


def test_decimals_screened_on_a_sample_give_the_columns_own_answer():
    from sdccore._core.plausible import decimals

    x = np.round(np.random.default_rng(1).standard_normal(50_000) * 100, 2)
    assert decimals(x) == 2
    x[-1] = 0.125  # one value the even sample misses needs three decimals
    assert decimals(x) == 3
    assert decimals(np.arange(20_000.0)) == 0
