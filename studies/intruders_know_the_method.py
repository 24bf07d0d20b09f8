"""Issue 38: the release the dashboard would suggest, attacked by the battery of intruders who
know the method (residual assignment, models fitted on the release, own + correction, and the
earlier ones), per case: the suggestion (every offered method x 10 runs, ``suggest``), and
for it each intruder's share beyond the prior overall, in its worst size band and among the
largest 1 % of records, as the mean over the runs and in the run released (the dashboard's
seed 12345).  Cases that end with no suggestion say why.

    python studies/intruders_know_the_method.py          (about 1-10 minutes on 2 cores)

Writes studies/output/intruders_know_the_method.csv.  The data sets not bundled with sdccore
come with statsmodels (grunfeld, statecrime) and scikit-learn (diabetes), read offline.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sdccore  # noqa: E402

SELECTIVE = ("fa", "pca", "magg", "rankswap", "noise", "ipso", "shuffle", "cfa", "qexchange")
GENERAL = ("fa", "pca", "magg", "rankswap", "noise")
SEED = 12345


def _grunfeld():
    from statsmodels.datasets import grunfeld

    d = grunfeld.load_pandas().data
    d["firm"] = d["firm"].astype("category").cat.codes
    return d


def _statecrime():
    from statsmodels.datasets import statecrime

    return statecrime.load_pandas().data.reset_index(drop=True)


def _diabetes():
    from sklearn.datasets import load_diabetes

    d = load_diabetes(as_frame=True, scaled=False).frame
    return d


CASES = [  # (name, loader, sensitive or None for general protection, set apart)
    ("tarragona SALES", lambda: sdccore.load_dataset("tarragona"), ["SALES"], []),
    ("tarragona SALES + NET.PROFIT", lambda: sdccore.load_dataset("tarragona"), ["SALES", "NET.PROFIT"], []),
    ("casc FEDTAX", lambda: sdccore.load_dataset("casc"), ["FEDTAX"], []),
    ("eia TOTREVENUE + RESREVENUE", lambda: sdccore.load_dataset("eia"), ["TOTREVENUE", "RESREVENUE"],
     ["UTILITYID", "UTILNAME", "STATE", "YEAR", "MONTH"]),
    ("diabetes target, sex set apart", _diabetes, ["target"], ["sex"]),
    ("statecrime violent", _statecrime, ["violent"], []),
    ("grunfeld invest, firm and year set apart", _grunfeld, ["invest"], ["firm", "year"]),
    ("general: tarragona", lambda: sdccore.load_dataset("tarragona"), None, []),
    ("general: grunfeld", _grunfeld, None, ["firm", "year"]),
]


def _figures(bands_or_intr, intruders):
    """Per intruder: beyond the prior overall, worst size band, top 1 % (one run's long table)."""
    t = bands_or_intr
    out = {}
    for k in intruders:
        r = t[t.intruder == k]
        if not len(r):
            continue
        out[k] = (float(r[r.band == "all"].beyond_prior.max()),
                  float(r[~r.band.isin(["all", "top 1 %"])].beyond_prior.max()),
                  float(r[r.band == "top 1 %"].beyond_prior.max()) if (r.band == "top 1 %").any() else np.nan)
    return out


def case(name, load, sens, apart, reps=10):
    d = load()
    d = d.select_dtypes("number")
    apart = [c for c in apart if c in d]  # text columns (EIA's UTILNAME, STATE) are dropped above
    methods = SELECTIVE if sens else GENERAL
    configs = {m: {"method": m, **({"exclude": apart} if apart else {})} for m in methods}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = sdccore.compare(d, configs, sensitive=sens, reps=reps, rng=SEED, tails=True)
    best, why = c.suggest()
    rows = []
    if best is None:
        return [{"case": name, "suggestion": "none", "why": why}]
    safe = c.safety().set_index("config").loc[best]
    cfg = dict(c.configs[best])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        released = sdccore.protect(d, cfg.pop("method"), sensitive=sens, rng=SEED, allow_unsafe="the study", **cfg)
    names = sdccore.intruders()
    # the mean over the runs of each intruder's figures: recomputed from each run's protection
    per_run = []
    for seed in c.runs[c.runs.config == best].seed:
        cfg = dict(c.configs[best])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = sdccore.protect(d, cfg.pop("method"), sensitive=sens, rng=int(seed), allow_unsafe="the study", **cfg)
        per_run.append(_figures(r.risk.intruders, names))
    now = _figures(released.risk.intruders, names)
    for k in names:
        runs = [f[k] for f in per_run if k in f]
        if not runs and k not in now:
            continue
        mean = np.nanmean(np.array(runs, dtype=float), axis=0) if runs else [np.nan] * 3
        rel = now.get(k, (np.nan,) * 3)
        rows.append({"case": name, "suggestion": best, "runs_meeting_floors": float(safe.floors_met),
                     "expected_ok": bool(safe.expected_ok), "released_run_ok": bool(released.risk.ok),
                     "intruder": k, "beyond_all_mean": mean[0], "worst_band_mean": mean[1], "top1_mean": mean[2],
                     "beyond_all_released": rel[0], "worst_band_released": rel[1], "top1_released": rel[2],
                     "why": why})
    return rows


def main(cases=CASES, reps=10, write=True):
    rows = []
    for name, load, sens, apart in cases:
        rows += case(name, load, sens, apart, reps)
    out = pd.DataFrame(rows)
    if not write:
        return out  # a smoke run (tests/package/test_studies.py)
    pd.set_option("display.width", 250)
    print(out.drop(columns=["why"]).round(3).to_string(index=False))
    for name, g in out.groupby("case", sort=False):
        print(f"{name}: {g.why.iloc[0]}")
    out.to_csv(Path(__file__).resolve().parent / "output" / "intruders_know_the_method.csv", index=False)
    return out


if __name__ == "__main__":
    main()
