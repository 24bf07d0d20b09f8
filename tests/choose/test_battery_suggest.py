"""Issue 39: the suggestion reads what analysts keep.  compare fits the battery on the run each
safe configuration releases (Comparison.analyses) and suggest prefers the configuration that
keeps the most analyses within their targets, those within one of the most counting as equal,
then analysis validity."""

from dataclasses import replace

import pytest

import sdccore
from sdccore._choose.rounds import battery_count


@pytest.fixture(scope="module")
def cmp_():
    d = sdccore.load_dataset("tarragona")
    configs = {"IPSO": {"method": "ipso"}, "Shuffle": {"method": "shuffle"}, "Rank swap": {"method": "rankswap"}}
    return d, sdccore.compare(d, configs, sensitive=["SALES"], reps=2, rng=12345, n_jobs=1)


def test_the_battery_of_the_run_released_is_the_one_analyst_checks_gives(cmp_):
    d, c = cmp_
    # every configuration whose run released meets the floors (the only ones suggest offers)
    safe = {k for k, v in c.released.items() if v == ""}
    assert set(c.analyses) == safe and {"IPSO", "Shuffle"} <= safe
    for label, (met, n, missed) in c.analyses.items():
        cfg = dict(c.configs[label])
        res = sdccore.protect(d, sensitive=["SALES"], rng=c.seed, **cfg)  # the run the comparison's seed releases
        ac = sdccore.analyst_checks(d, res.data, sensitive=["SALES"])
        w = ac.worst[[isinstance(v, bool) for v in ac.worst.ok]]  # the analyses with a target that apply
        assert n == len(w) == 14 and met == int(w.ok.astype(bool).sum()) and met + len(missed) == n
        # a missed OLS names the largest records its original leans on (Tarragona SALES: 9, 4.6 standard errors)
        assert {m.split(" (SALES leans")[0] for m in missed} == set(w[~w.ok.astype(bool)].label)
        assert all(m == "OLS regression (SALES leans on its 9 largest records)" for m in missed if "leans" in m)
        assert battery_count(ac) == (met, n, missed)
    # what each keeps by construction: IPSO the OLS and the mean, shuffling the distribution
    assert {"OLS regression", "as a predictor (OLS)", "mean"}.isdisjoint(c.analyses["IPSO"][2])
    assert {"distribution (KS)", "Gini coefficient", "mean"}.isdisjoint(c.analyses["Shuffle"][2])


def test_the_most_analyses_kept_decides_then_validity(cmp_):
    _, c = cmp_
    validity = c.risk_utility().set_index("config").validity_loss_hi
    assert validity["IPSO"] < validity["Shuffle"] < validity["Rank swap"]  # IPSO keeps the OLS best
    safe = set(c.safety().query("expected_ok").config)
    assert {"IPSO", "Shuffle", "Rank swap"} <= safe

    def pick(**kept):
        return replace(c, analyses={k.replace("_", " "): (m, 10, ()) for k, m in kept.items()}).suggest()

    # the most kept wins however its validity compares
    assert pick(IPSO=4, Shuffle=5, Rank_swap=7)[0] == "Rank swap"
    # within one analysis of the most kept: equal, and analysis validity decides
    assert pick(IPSO=4, Shuffle=5, Rank_swap=5)[0] == "IPSO"
    # one more than that is not equal
    assert pick(IPSO=3, Shuffle=5, Rank_swap=4)[0] == "Shuffle"
    label, why = pick(IPSO=3, Shuffle=5, Rank_swap=4)
    assert "keeps 5 of 10 analyses researchers run within their targets" in why
    assert "IPSO 3 of 10" in why and "Rank swap 4 of 10" in why
    # without the battery (released=False, as search runs it): analysis validity alone
    assert replace(c, analyses={}).suggest()[0] == "IPSO"


def test_the_runs_are_counted_in_plain_words(cmp_):
    """A comparison of two runs says "in both runs", not "in all 2 runs" (a custodian's reading)."""
    _, c = cmp_
    label, why = c.suggest()
    assert c.safety().set_index("config").floors_met[label] == 1.0 and set(c.runs.groupby("config").size()) == {2}
    assert "met every risk floor in both runs" in why and "in all 2 runs" not in why
