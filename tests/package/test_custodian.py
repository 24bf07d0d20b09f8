"""Issue 28, library side: roles that do not block, plausibility said exactly, integer
columns that stay integers, fix texts that name the method's own setting."""

import numpy as np
import pandas as pd
import pytest

import sdccore


def test_constant_and_time_index_columns():
    rng = np.random.default_rng(0)
    n_firms, years = 10, np.arange(1935, 1955)
    df = pd.DataFrame({"firm": np.repeat(np.arange(n_firms), len(years)).astype(str) + "x",
                       "year": np.tile(years, n_firms),
                       "inv": np.exp(rng.standard_normal(200)) * 100,
                       "value": np.exp(rng.standard_normal(200)) * 1000,
                       "YEAR2": np.full(200, 96)})
    s = sdccore.suggest_roles(df)
    assert s.roles["YEAR2"] == "excluded" and s.flags["YEAR2"] == "constant"
    assert s.roles["year"] == "excluded" and s.flags["year"] == "time"
    assert "1935-1954" in s.reasons["year"] and "Decide" in s.reasons["year"]
    assert s.roles["inv"] == "public" and "inv" not in s.flags


def test_plausible_bounds_keep_a_handful_of_negatives():
    d = sdccore.load_dataset("tarragona")
    # general FA on this file is refused since issue 38 (the intruders who know the method);
    # the bounds are what is tested here, not the floors
    why = "test: plausible bounds, not the floors"
    res = sdccore.protect(d, "fa", rng=1, allow_unsafe=why)
    p = res.plausibility
    for c in ("DEPRECIATION", "SHORT.TERM.DEBT", "CURRENT.ASSETS"):
        k = int((d[c] < 0).sum())
        assert 0 < k <= 3
        assert (res.data[c] < 0).sum() <= k and res.data[c].min() >= d[c].min()
        assert p.loc[c, "negative_original"] == k and p.loc[c, "negative_released"] <= k
    # 'sign', the old default, rebuilds old recipes as they were: it creates the negatives
    old = sdccore.protect(d, "fa", rng=1, bounds="sign", allow_unsafe=why)
    assert (old.data["DEPRECIATION"] < 0).sum() > 100
    # the mean's change is reported relative to the mean too (PAID.UP.CAPITAL moves about 40 %)
    assert p.loc["PAID.UP.CAPITAL", "mean_change_pct"] == pytest.approx(
        (res.data["PAID.UP.CAPITAL"].mean() - d["PAID.UP.CAPITAL"].mean()) / d["PAID.UP.CAPITAL"].mean())


def test_integer_columns_with_missing_cells_stay_integers():
    d = sdccore.load_dataset("tarragona")  # integer columns; with blanks pandas reads them as float
    d = d.astype({"SALES": float, "LABOR.COSTS": float})
    d.loc[[3, 10, 50], "SALES"] = np.nan
    d.loc[[7], "LABOR.COSTS"] = np.nan
    d["code"] = np.where(np.arange(len(d)) % 7 == 0, np.nan, np.arange(len(d)) % 5)
    # general PCA is refused on this file since issue 38; the written integers are tested here
    rel = sdccore.make_release(d, sdccore.Recipe({"method": "pca", "seed": 1, "exclude": ["code"]}),
                               allow_unsafe="test: integer columns in the file written, not the floors")
    text = rel.to_bytes("csv").decode()
    head = text.splitlines()[1].split(",")
    cols = text.splitlines()[0].split(",")
    assert not any(v.endswith(".0") for v in text.replace("\n", ",").split(",")), "a whole number written as x.0"
    assert cols[-1] == "code" and head[-1] in ("", "1", "0", "2", "3", "4")
    back = pd.read_csv(pd.io.common.BytesIO(text.encode()))
    assert back["SALES"].isna().sum() == 3 and back["code"].isna().sum() == d["code"].isna().sum()


@pytest.mark.parametrize("method,words", [("rankswap", "a larger rank-swap window p"), ("magg", "a larger group size k")])
def test_fix_texts_name_the_methods_own_setting(method, words):
    d = sdccore.load_dataset("tarragona")
    opts = {"p": 5.0} if method == "rankswap" else {"k": 3}
    with pytest.raises(sdccore.UnsafeReleaseError) as info:
        sdccore.protect(d, method, sensitive=["SALES"], rng=1, **opts)
    assert words in str(info.value)
    assert "noise of the sensitive variables alone" not in str(info.value)


def test_rebuilds_are_byte_identical_or_say_their_content_hash(tmp_path, capsys):
    """An .xlsx rebuild gives the same bytes (fixed times in the workbook); for every format the
    CLI prints a content hash that two rebuilds share."""
    import time

    from sdccore.__main__ import main

    d = sdccore.load_dataset("tarragona")
    a = sdccore.write_table(d.head(30), "xlsx")
    time.sleep(1.1)
    assert sdccore.write_table(d.head(30), "xlsx") == a
    src = tmp_path / "in.csv"
    d.to_csv(src, index=False)
    lines = []
    for i in range(2):
        out = tmp_path / f"out{i}.sav"
        # (general PCA is refused on this file since issue 38: the rebuild is tested, not the floors)
        assert main(["protect", str(src), "--method", "pca", "--seed", "4", "--out", str(out),
                     "--allow-unsafe", "test: byte-identical rebuilds"]) == 0
        lines.append(next(x for x in capsys.readouterr().err.splitlines() if x.startswith("wrote ")))
        time.sleep(1.1)
    hashes = [x.split("content sha256 ")[1].split()[0] for x in lines]
    assert hashes[0] == hashes[1]


@pytest.mark.parametrize("name", ["diabetes", "statecrime", "grunfeld"])
def test_files_never_seen_get_a_release_or_a_plain_reason(name):
    """Issue 28: with the defaults, roles as suggested, each file gets a suggested release or a
    reason that names the closest configuration and what broke, in general and selective mode."""
    sm = pytest.importorskip("statsmodels.api")
    from sklearn import datasets

    d, sens = {"diabetes": (datasets.load_diabetes(as_frame=True, scaled=False).frame, ["target"]),
               "statecrime": (sm.datasets.statecrime.load_pandas().data, ["violent"]),
               "grunfeld": (sm.datasets.grunfeld.load_pandas().data.drop(columns=["firm"]), ["invest"])}[name]
    roles = sdccore.suggest_roles(d)
    if name == "grunfeld":
        assert roles.flags["year"] == "time"  # flagged for a decision, left out here
    x = d[[c for c, r in roles.roles.items() if r == "public" or c in sens]]
    cfgs = {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"},
            "Rank swap": {"method": "rankswap"}, "IPSO": {"method": "ipso"}, "Shuffle": {"method": "shuffle"}}
    for mode in (sens, None):
        use = {k: v for k, v in cfgs.items() if mode or v["method"] not in sdccore.CONDITIONAL_METHODS}
        cmp_ = sdccore.compare(x, use, sensitive=mode, reps=3, rng=12345, n_jobs=1)
        best, why = cmp_.suggest(0.5)
        if best is None:
            # (since issue 38: a configuration may also pass in expectation where one record decides,
            # or pass over the runs but not in the run released with the page's seed)
            assert why.startswith("no configuration met the risk floors in every run (or in expectation, "
                                  "where one record decides). Closest: ") or \
                " met the risk floors over the runs, but the run released with seed 12345 breaks one: " in why
            assert "; fix: " in why  # the violation with the method's own fix
        else:
            # (since issue 38: a suggestion may break a floor in some runs, only in bands of < 10
            # records, if the mean over the runs meets it there; the reason says which)
            safe = cmp_.safety().set_index("config").loc[best]
            assert safe.expected_ok
            met = int(round(safe.floors_met * 3))
            if met == 3:
                assert "met every risk floor in all 3 runs" in why
            else:
                assert f"met every risk floor in {met} of 3 runs" in why and ", where it broke one, only in a band " \
                       "so small that one record decides" in why
