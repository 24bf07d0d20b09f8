"""Each study's smallest case runs, so the studies cannot rot unnoticed (issue 10.4)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "studies" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_pca_table4_smallest_case():
    mod = _load("pca_table4")
    df = mod.main(reps=2, rows_only={("pca", 1), ("rankswap", 5)})
    assert len(df) == 2 and np.isfinite(df[["pil", "dbrl", "id", "ps2"]].to_numpy()).all()


def test_fa_paper_figures_smallest_case(tmp_path):
    mod = _load("fa_paper_figures")
    # one run per configuration (the study's code is the same for any number; its tables and
    # the map's columns are checked, not its numbers); two data sets per map point, so that
    # the standard errors over data sets (FA_se) are computed, not set to 0 as for one
    f3 = mod.fig3(reps=1, grid=[0.0, 0.5])  # rho = 0 used to crash (eq5_valid divided by N - 2 = 0)
    assert {"sdccore", "paper"} <= set(f3.construction) and set(f3.method) >= {"PCA", "M-AGG"}
    maps = mod.map_part(tmp_path, True, grid=np.array([0.1, 0.5]), datasets=2, reps=1)
    for mp in maps.values():
        assert {"FA", "FA_se", "best", "winner"} <= set(mp.columns) and len(mp) >= 3


def test_safety_suggested_smallest_case():
    mod = _load("safety_suggested")
    out = mod.main(cases=[("casc", ["FEDTAX"], [])], reps=2, write=False)
    assert set(out["when"]) == {"before", "now"}


def test_factor_score_recovery_runs(capsys):
    _load("factor_score_recovery").main()
    assert "bartlett" in capsys.readouterr().out


def test_pca_removal_smallest_case():
    mod = _load("pca_removal")
    curve, comp, im = mod.main(reps=2, write=False, image_names=("camera",))
    assert curve.correlation.is_monotonic_decreasing and len(curve) == 13
    assert comp.loc["PCA-R stop", "floors_met"] == 0.0 and comp.loc["PCA-R stop", "max_reconstructed"] > 0.8
    assert im.ssim_matlab.is_monotonic_decreasing and im.psnr.is_monotonic_decreasing


def test_risk_beyond_prior_smallest_case():
    mod = _load("risk_beyond_prior")
    table, passes = mod.main(cases=[("casc", ["FEDTAX"])], methods={"Rank swap": ("rankswap", {}),
                                                                     "M-AGG": ("magg", {})}, reps=2, write=False)
    rs = table[(table.method == "Rank swap") & (table.intruder == "assignment")].iloc[0]
    # the value set handed out in the order P predicts: against the plain prior it was far beyond
    # it among the largest records (27 % of the 11 largest); the ranked prior (issue 38), the
    # other records' values in the order of a model, already gets what the value set gives there
    assert rs.prior > 0.6 and rs.top1_prior == pytest.approx(8 / 11) and rs.top1_beyond == 0 and rs.held_to_floors
    assert rs.beyond_prior < 0.02
    assert passes.set_index("method").loc["M-AGG", "floors_met"] == 0  # FEDTAX barely changed
    assert set(table.intruder) >= {"own", "linked", "assignment"}


def test_useful_safe_smallest_case():
    mod = _load("useful_safe")
    table, chosen = mod.main(cases=[("tarragona", ["SALES"])], methods={"Rank swap": {"method": "rankswap"},
                                                                        "IPSO": {"method": "ipso"}},
                             reps=2, write=False)
    t = table.set_index("method")
    # both meet the floors; rank swapping scrambles the regression, IPSO keeps it
    assert t.loc["IPSO", "floors_met"] == 1.0 and t.loc["Rank swap", "floors_met"] == 1.0
    # (measured: IPSO 1.0, rank swapping by shifted ranks .29)
    assert t.loc["IPSO", "overlap_worst"] >= 0.9 > 0.5 > t.loc["Rank swap", "overlap_worst"]
    assert t.loc["IPSO", "validity"] > t.loc["Rank swap", "validity"]
    assert chosen.iloc[0].suggested == "IPSO"
    # what analysts keep (issue 39): IPSO's OLS exact, its median regression and distribution not
    assert t.loc["IPSO", "an_ols"] == pytest.approx(1.0, abs=1e-6)
    assert t.loc["IPSO", "an_median"] < 0.7 and t.loc["IPSO", "an_ks"] > 0.1
    assert t.loc["IPSO", "an_loglevel"] < 0.8 and np.isfinite(t.loc["IPSO", "an_quantiles"])
    assert t.loc["IPSO", "analyses_met"] == 0.0
    assert t.loc["Rank swap", "an_ks"] == 0.0  # rank swapping releases the original values


def test_intruders_know_the_method_smallest_case():
    mod = _load("intruders_know_the_method")
    out = mod.main(cases=[mod.CASES[0]], reps=2, write=False)
    # Tarragona SALES: a suggestion, and every intruder of the battery measured on it
    assert out.suggestion.iloc[0] != "none"
    assert {"own", "assignment", "residual", "release_fit"} <= set(out.intruder)
    assert (out[["beyond_all_mean", "top1_mean"]].to_numpy() >= 0).all()
