"""Reproduce the FA paper's Fig. 3 and Fig. 6 and regenerate the map used by recommend().

    python studies/fa_paper_figures.py [--quick] [--map-only]

Both with sdccore's default FA (whitened scores, as many factors as variables) and with the
paper's construction (scores='regression', residuals kept; ID on each record's own
protected version, the default in selective protection), side by side.

Fig. 3: two variables with correlation 0..0.95, general protection, summary score of FA,
PCA and M-AGG with 95 % t intervals of the mean -> studies/output/fig3_two_variables.csv.
Fig. 6: the (between, within) grid of eq. 5 (one sensitive variable out of N = 6), 3 data
sets x 5 runs per point, ties within noise marked: with the paper's construction the overall
score of its three methods; with sdccore's every method of the tool, where only a method that
met every risk floor in every run can win and the best analysis validity wins ->
sdccore/data/bw_map.csv (sdccore's defaults: the map recommend() uses) and
studies/output/fig6_map_{sdccore,paper}.csv.  Prints how often the cookbook and each map
agree.  About 12 minutes.
"""

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import sdccore  # noqa: E402
from sdccore._choose import recommend as rec  # noqa: E402


def fig3(reps, n=300, grid=np.round(np.arange(0.0, 0.96, 0.05), 2)):
    rows = []
    g = np.random.default_rng(3)
    for rho in grid:
        data = rec.eq5_data(rho, 0.0, 2, n, int(g.integers(2**63 - 1)))
        data.columns = ["x1", "x2"]
        for construction, fa in (("sdccore", {"method": "fa"}), ("paper", {"method": "fa", "scores": "regression"})):
            configs = {"FA": fa, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg", "k": 3}}
            try:
                c = sdccore.compare(data, configs, reps=reps, rng=int(g.integers(2**63 - 1)))
            except ValueError as exc:  # e.g. FA with rho = 0: no common factor
                print(f"  rho {rho}: {exc}")
                continue
            tab = c.table("summary")
            for name in tab.index:
                rows.append({"construction": construction, "correlation": rho, "method": name,
                             **tab.loc[name, ["mean", "lo", "hi"]].to_dict()})
    return pd.DataFrame(rows)


def main(quick=False):
    out = ROOT / "studies" / "output"
    out.mkdir(exist_ok=True)
    t = time.time()
    if "--map-only" in sys.argv:
        return map_part(out, quick)
    f3 = fig3(reps=5 if quick else 20)
    f3.to_csv(out / "fig3_two_variables.csv", index=False)
    for construction in ("sdccore", "paper"):
        piv = f3[f3.construction == construction].pivot(index="correlation", columns="method", values="mean")
        print(f"Fig. 3 (summary, general protection, two variables), FA as {construction}:")
        print(piv.round(3).to_string())
        print(f"  FA - M-AGG at rho=0.1: {piv.loc[0.1, 'FA'] - piv.loc[0.1, 'M-AGG']:+.3f}, "
              f"at rho=0.9: {piv.loc[0.9, 'FA'] - piv.loc[0.9, 'M-AGG']:+.3f}")
    print("FA paper: FA improves with the correlation and beats M-AGG above about 0.5; PCA and M-AGG flat.")
    print(f"  ({time.time() - t:.0f} s)")
    map_part(out, quick)


def agreement(mp):
    agree = total = 0
    for r in mp.itertuples():
        lab, _ = rec._cookbook(r.between, r.within)
        if lab is not None:
            total += 1
            agree += lab in str(r.best).split(" or ")
    return agree, total


def map_part(out, quick, grid=None, datasets=None, reps=None):
    t = time.time()
    kw = {} if grid is None else {"grid": grid}
    datasets = datasets or (1 if quick else 3)
    reps = reps or (2 if quick else 5)
    maps = {}
    # sdccore's map: every method, only those meeting every floor in every run can win, by analysis
    # validity (the map recommend() uses); the paper's: its three methods by the overall score
    for construction, configs, criterion in (("sdccore", rec.MAP_CONFIGS, "validity"),
                                             ("paper", rec.PAPER_CONFIGS, "overall")):
        mp = rec.simulate_bw_map(reps=reps, datasets=datasets, rng=6, configs=configs, criterion=criterion, **kw)
        maps[construction] = mp
        if grid is not None:
            continue  # a smoke run (tests/package/test_studies.py): nothing written
        mp.to_csv(out / f"fig6_map_{construction}.csv", index=False)
        if construction == "sdccore" and not quick:
            mp.to_csv(ROOT / "sdccore" / "data" / "bw_map.csv", index=False)
        print(f"\nFig. 6 map, FA as {construction} ({datasets} data sets x {reps} runs per point), best method "
              f"(ties within noise joined by 'or') by between row, within column:")
        print(mp.pivot(index="between", columns="within", values="best").fillna("").to_string())
        a, n = agreement(mp)
        print(f"cookbook and the {construction} map agree at {a} of {n} grid points where the cookbook decides")
    print(f"  ({time.time() - t:.0f} s)")
    return maps


if __name__ == "__main__":
    main("--quick" in sys.argv)
