"""compare's round within domains (sdccore/_choose/rounds.py): an offered release whose
regressions within domains miss their target is compared again within strata of the domain
columns, and the suggestion weighs it by what its release keeps."""

import numpy as np
import pandas as pd

import sdccore
from sdccore._choose.rounds import strata_for


def _two_slopes(n=600):
    rng = np.random.default_rng(3)
    sex = np.where(rng.random(n) < 0.5, "F", "M")
    x = rng.lognormal(3, 0.5, n)
    z = rng.normal(50, 10, n)
    y = np.where(sex == "F", 100 + 8 * x + z, 300 + 1 * x + 3 * z) + rng.normal(0, 30, n)
    return pd.DataFrame({"sex": sex, "x": x, "z": z, "y": y})


def test_strata_for_takes_every_domain_column_where_the_groups_are_large_enough():
    d = _two_slopes().assign(region=np.tile(["N", "S", "E"], 200), year=np.repeat([2020, 2021], 300))
    ipso = {"method": "ipso", "exclude": ["year"]}
    # x, z and y: 5 records a column and the intercept, at least 20 a group (sex x region x year: 12 groups of 50)
    assert strata_for(d, ipso, ["y"]) == ("sex", "region", "year")
    # a region of 12 records: each column alone, the most levels first (region's 4 too small; then
    # sex and year, 2 levels each, in the data's order)
    d.loc[d.index[:12], "region"] = "W"
    assert strata_for(d, ipso, ["y"]) == ("sex",)
    # a key, the sensitive variable, a column with a missing cell or a single level are never strata
    assert strata_for(d.assign(region=d.region.where(d.index != 5)), {"method": "ipso", "keys": ["sex"]}, ["y"]) == ()
    assert strata_for(d[["x", "z", "y"]].assign(c="a"), {"method": "ipso"}, ["y"]) == ()


def test_an_offered_release_that_loses_the_regressions_within_domains_is_compared_within_strata():
    """Women's slopes differ from men's: pooled IPSO keeps the pooled OLS and loses the
    regressions within the sexes; 'IPSO within sex' keeps them, meets the floors and is
    suggested.  Rank swapping, which misses them too, is not compared again (it takes no strata)."""
    d = _two_slopes()
    r = sdccore.compare(d, {"IPSO": {"method": "ipso"}, "Rank swap": {"method": "rankswap"}}, sensitive=["y"],
                        reps=2, rng=1, domains=True)
    assert list(r.configs) == ["IPSO", "Rank swap", "IPSO within sex"]
    assert r.configs["IPSO within sex"] == {"method": "ipso", "strata": ["sex"]}
    assert "OLS within domains" in r.analyses["IPSO"][2] and "OLS within domains" in r.analyses["Rank swap"][2]
    met, n, missed = r.analyses["IPSO within sex"]
    assert "OLS within domains" not in missed and met > r.analyses["IPSO"][0] and n == r.analyses["IPSO"][1]
    label, why = r.suggest()
    assert label == "IPSO within sex" and f"keeps {met} of {n} analyses" in why
    # without domains=True the comparison is as before
    plain = sdccore.compare(d, {"IPSO": {"method": "ipso"}}, sensitive=["y"], reps=2, rng=1)
    assert list(plain.configs) == ["IPSO"]
