"""The codebook (issue 14, part 6): per variable its role, method, rounding, what is kept
exactly and what in expectation, and its residual risk; its claims checked on the data."""

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore.__main__ import main as cli_main
from sdccore import codebook_bytes


@pytest.fixture(scope="module")
def eia():
    return sdccore.load_dataset("eia")


def _claims_hold(book, original, release):
    """Every 'means' / 'values' claimed exact is exact on the data (a second computation)."""
    checked = 0
    for v, row in book.iterrows():
        ex = str(row.get("exact") or "")
        if not row["in_release"] or not ex or "before bounds" in ex:
            continue
        x = original[v].to_numpy(float)
        y = release[v].to_numpy(float)
        ob = ~np.isnan(x)
        sd = x[ob].std()
        if ex == "every value":
            assert np.array_equal(x, y, equal_nan=True), v
        elif "values" in ex:
            assert np.array_equal(np.sort(x[ob]), np.sort(y[ob])), v
        elif ex.startswith("means") and "within" not in ex:
            assert abs(y[ob].mean() - x[ob].mean()) <= 1e-9 * sd, v
        checked += 1
    return checked


@pytest.mark.parametrize("method,extra", [("pca", {}), ("fa", {}), ("magg", {"noise_model": "exact"}),
                                          ("rankswap", {})])
def test_exact_claims_hold(eia, method, extra):
    d = eia.drop(columns=["UTILNAME", "STATE"])
    opts = {"method": method, "exclude": ["YEAR", "MONTH"], "seed": 3, **extra}
    if method == "rankswap":
        opts["sensitive"] = ["RESREVENUE", "RESSALES"]
    else:
        opts.update(bounds="none", rounding="none")
    rel = sdccore.make_release(d, sdccore.Recipe(opts, drop=("UTILITYID",), shuffle=False), allow_unsafe="codebook test")
    book = rel.codebook(d)
    assert book.loc["UTILITYID", "role"] == "identifier" and not book.loc["UTILITYID", "in_release"]
    assert book.loc["MONTH", "role"] == "excluded" and book.loc["MONTH", "method"] == "released unchanged"
    assert _claims_hold(book, d, rel.data) >= 2
    protected = book[book.role.isin(["protected", "sensitive"])]
    assert protected.meets_floors.notna().all() and (protected.perturbed_share > 0).all()
    # the per-variable risk is the release's own risk profile
    r = rel.result.risk.variables
    np.testing.assert_allclose(protected.close_own.to_numpy(float), r.loc[protected.index, "close_own"].to_numpy(float))


def test_bounds_and_rounding_are_said(eia):
    d = eia.drop(columns=["UTILITYID", "UTILNAME", "STATE"])
    # since issue 38 general PCA breaks the floors (intruders who know the method): the codebook of a
    # release made with a reason
    res = sdccore.protect(d, "pca", exclude=["YEAR", "MONTH"], rng=1, allow_unsafe="codebook test")
    book = sdccore.codebook(res, d)
    row = book.loc["RESREVENUE"]
    assert row.clipped > 0 and row.decimals == 0 and "before bounds and rounding" in row.exact
    want = (res.data.RESREVENUE.mean() - d.RESREVENUE.mean()) / d.RESREVENUE.std(ddof=0)
    assert row.mean_change_sd == pytest.approx(want, rel=1e-9)


def test_design_roles_missing_and_labels():
    df = sdccore.load_dataset("tarragona")
    rng = np.random.default_rng(1)
    d = df.assign(region=np.where(rng.random(len(df)) < 0.5, "a", "b"), w=rng.uniform(1, 9, len(df)))
    d.loc[d.index[::40], "SALES"] = np.nan
    res = sdccore.protect(d, "pca", strata=["region"], weights="w", rng=2, allow_unsafe="test")
    book = sdccore.codebook(res, d, labels={"SALES": "Turnover (EUR)"})
    assert book.loc["region", "role"] == "stratum" and book.loc["w", "role"] == "sampling weight"
    assert book.loc["SALES", "label"] == "Turnover (EUR)"
    assert book.loc["SALES", "missing_kept"] == int(d.SALES.isna().sum()) > 0
    assert "within each group of region" in book.loc["SALES", "exact"]
    assert "weighted means" in book.loc["SALES", "exact"]
    with pytest.raises(TypeError, match="result must be what protect returns"):
        sdccore.codebook(d)


def test_bytes_csv_and_json(eia):
    d = eia.drop(columns=["UTILITYID", "UTILNAME", "STATE"])
    # since issue 38 general PCA breaks the floors: the codebook of a release made with a reason
    res = sdccore.protect(d, "pca", exclude=["YEAR", "MONTH"], rng=1, allow_unsafe="codebook test")
    book = sdccore.codebook(res, d)
    back = pd.read_csv(io.BytesIO(codebook_bytes(book, "csv")), index_col=0)
    assert list(back.index) == list(book.index) and list(back.columns) == list(book.columns)
    doc = json.loads(codebook_bytes(book, "json"))
    assert set(doc["variables"]) == set(book.index) and "rankswap" in doc["_about"]
    assert doc["variables"]["RESSALES"]["role"] == "protected"
    with pytest.raises(ValueError, match="format='xml'"):
        codebook_bytes(book, "xml")


def _cli(args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli_main(args)
    return code, out.getvalue(), err.getvalue()


def test_cli_codebook(tmp_path):
    df = sdccore.load_dataset("tarragona")
    df.to_csv(tmp_path / "t.csv", index=False)
    # since issue 38 general PCA breaks the floors on Tarragona (intruders who know the method): released with
    # a reason, what is tested is the codebook the command line writes
    why = "codebook test"
    code, _, err = _cli(["protect", str(tmp_path / "t.csv"), "--method", "pca", "--seed", "1", "--out",
                         str(tmp_path / "p.csv"), "--codebook", str(tmp_path / "cb.json"), "--allow-unsafe", why])
    assert code == 0, err
    doc = json.loads((tmp_path / "cb.json").read_text())
    want = sdccore.codebook(sdccore.protect(df, "pca", rng=1, allow_unsafe=why), df)
    assert doc["variables"]["SALES"]["perturbed_share"] == pytest.approx(want.loc["SALES", "perturbed_share"])
    code, _, err = _cli(["protect", str(tmp_path / "t.csv"), "--method", "pca", "--seed", "1", "--out",
                         str(tmp_path / "p2.csv"), "--codebook", str(tmp_path / "cb.csv"), "--allow-unsafe", why])
    assert code == 0 and pd.read_csv(tmp_path / "cb.csv", index_col=0).shape[0] == 13
    code, _, err = _cli(["protect", str(tmp_path / "t.csv"), "--out", str(tmp_path / "x.csv"), "--codebook",
                         str(tmp_path / "x.csv")])
    assert code == 2 and "same file" in err
    code, _, err = _cli(["protect", str(tmp_path / "t.csv"), "--out", str(tmp_path / "y.csv"), "--codebook", "-"])
    assert code == 2 and "--codebook - is not supported" in err


def test_the_codebook_says_what_analysts_keep_per_variable():
    """With what analysts keep (``sdccore.report.release_codebook``): each checked variable's
    analyses with a target, figure and verdict, and those it misses; the figures are the
    battery's own (analyst_checks on the release, a second computation); an unchecked
    (public) variable gets none.  IPSO of Tarragona SALES keeps the OLS, not the median
    regression."""
    d = sdccore.load_dataset("tarragona")
    rel = sdccore.make_release(d, sdccore.Recipe({"method": "ipso", "sensitive": ["SALES"], "seed": 12345},
                                                 shuffle=False))
    book = sdccore.report.release_codebook(rel, d)
    kept, missed = book.loc["SALES", "analyses_kept"], book.loc["SALES", "analyses_missed"]
    battery = sdccore.analyst_checks(d, rel.data, sensitive=["SALES"]).table.set_index("analysis")
    ols = battery.loc["ols", "kept"]
    assert f"OLS regression {ols:.3f} (kept, target >= 0.9)" in kept
    assert f"median regression {battery.loc['median', 'kept']:.3f} (MISSED, target >= 0.7)" in kept
    assert "median regression" in missed and "OLS regression" not in missed
    assert set(missed.split(", ")) == {sdccore._measures.battery.LABELS[a] for a in battery.index
                                       if battery.loc[a, "ok"] is False}
    assert "Spearman" not in kept  # reported without a target: not a verdict
    assert book.loc["LABOR.COSTS", "analyses_kept"] == "" and book.loc["LABOR.COSTS", "analyses_missed"] == ""
    assert "analyses_kept" not in rel.codebook(d).columns  # without the battery, as before
    table = sdccore.report.codebook_table(book)
    assert table.loc["SALES", "what analysts keep"] == kept
