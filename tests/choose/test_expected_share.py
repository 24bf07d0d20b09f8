"""Bands so small that one record decides (issue 38, point 5): a run that breaks the floors
only there is judged on the expected share over the runs as well; the suggestion needs that
mean to meet the floor, and every other floor in every run."""
from dataclasses import replace

import numpy as np
import pytest

import sdccore
from sdccore._risk.floors import risk_profile


@pytest.fixture(scope="module")
def ipso_runs():
    datasets = pytest.importorskip("statsmodels.datasets")
    d = datasets.statecrime.load_pandas().data.reset_index(drop=True)
    return sdccore.compare(d, {"ipso": {"method": "ipso"}}, sensitive=["violent"], reps=6, rng=8, n_jobs=1)


def test_a_run_broken_only_where_one_record_decides_is_judged_on_the_mean_over_runs(ipso_runs):
    c = ipso_runs
    safe = c.safety().set_index("config")
    # IPSO on statecrime's violent-crime rate (51 states, size bands of 5): in one run of six
    # the model intruder gets 2 of the 5 states of size band 5 beyond the prior (40 % > 20 %),
    # in the others at most 1 (the best intruder of each run; Tarragona SALES, the case here
    # before, met every floor in every run once IPSO guarded its largest firms; seed 6, the
    # seed here before the replay intruder and the random ladder, now meets them in all six)
    assert safe.loc["ipso", "floors_met"] == pytest.approx(5 / 6)
    bad = c.runs[~c.runs.floors_ok.astype(bool)]
    assert len(bad) == 1 and bad.one_record_decides.all()
    assert "size band 5 of 10 (5 records: each is 20%, so one record decides)" in bad.violation.iloc[0]
    band = c.risk_bands.query("config == 'ipso' and band == '5'")
    assert (band.records == 5).all()
    # the expected share, by hand: the mean of the six runs' shares beyond the prior, 1.0 / 6 =
    # 17 %, within the floor (1.2 / 6, at the floor, before the ranked prior explained the first
    # run's record)
    assert band.beyond_prior.tolist() == pytest.approx([0, 0.4, 0.2, 0.2, 0, 0.2])
    assert band.beyond_prior.mean() == pytest.approx(1.0 / 6) and bool(safe.loc["ipso", "expected_ok"])
    best, why = c.suggest()
    assert best == "ipso" and "in 5 of 6 runs" in why and "one record decides" in why


def test_the_expected_share_must_meet_the_floor_and_only_small_bands_may_fail(ipso_runs):
    c = ipso_runs
    # the same runs with band 5's share at 30 % in every run: the mean breaks the floor
    b = c.risk_bands.copy()
    b.loc[b.band == "5", "beyond_prior"] = 0.3
    assert not bool(replace(c, risk_bands=b).safety().expected_ok.iloc[0])
    assert replace(c, risk_bands=b).suggest()[0] is None
    # a run broken in a band of more records (not luck): no suggestion whatever the mean
    runs = c.runs.copy()
    runs["one_record_decides"] = False
    assert not bool(replace(c, runs=runs).safety().expected_ok.iloc[0])


def test_one_record_decides_only_when_every_violation_is_in_a_small_band():
    rng = np.random.default_rng(8)
    X = rng.lognormal(3, 0.5, (300, 3))
    copy = risk_profile(X, X.copy(), ["a", "b", "c"], [0, 1, 2])
    assert not copy.ok and not copy.one_record_decides  # broken everywhere
    fine = risk_profile(X, X * rng.lognormal(0, 0.5, X.shape), ["a", "b", "c"], [0, 1, 2])
    assert fine.ok and not fine.one_record_decides
