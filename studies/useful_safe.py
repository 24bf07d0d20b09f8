"""Issue 27: useful under the floors.  For each sample (selective: Tarragona SALES, Tarragona
SALES + NET.PROFIT, CASC FEDTAX, EIA TOTREVENUE + RESREVENUE) and every method of the tool
with its defaults, ``reps`` runs (``compare``): runs meeting every risk floor; risk beyond
the prior (overall, worst size band, largest 1 %, the worst over the runs and sensitive
variables); analysis validity (mean and lower end of the 95 % interval over the runs); its
regression CI overlap and R^2 kept (worst variable, worst run); PIL; PS; values clipped to
the bounds; what analysts keep (``analyst_checks``, issue 39: OLS, log-log, log-level,
median and 0.1/0.9 quantile regression overlaps, domain means, KS, the top-10 % share's
change, the mean's, the share below 60 % of the median and the Gini coefficient's, each for the worst
sensitive variable and averaged over the runs, columns an_*; analyses_met: the share of runs
meeting every target); and the release ``Comparison.suggest`` picks (with the comparison's second
rounds, the largest records', the log scale's and the domains', as the Run page runs them).  Draws the risk-utility chart with
analysis validity per sample (HTML).  Writes studies/output/useful_safe.csv, .log and
useful_safe_<sample>.html.

    python studies/useful_safe.py            (about 3 minutes on 2 cores)
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sdccore  # noqa: E402

CASES = [("tarragona", ["SALES"]), ("tarragona", ["SALES", "NET.PROFIT"]), ("casc", ["FEDTAX"]),
         ("eia", ["TOTREVENUE", "RESREVENUE"])]
METHODS = {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"},
           "Rank swap": {"method": "rankswap"}, "IPSO": {"method": "ipso"}, "Shuffle": {"method": "shuffle"},
           "FA-cond": {"method": "cfa"}, "Q-exchange": {"method": "qexchange"},
           "Q-exchange OLS": {"method": "qexchange", "keep": "ols"},
           "Q-exchange scales": {"method": "qexchange", "keep": "scales"}}


# the analyses of sdccore.analyst_checks reported per method: the worst sensitive variable's
# figure, mean over the runs (an overlap: higher is better; an error or distance: lower)
from sdccore._measures.battery import ANALYSES as BATTERY  # noqa: E402  (every analysis of the battery)


def _validity_detail(d, c, sens, label, reps):
    """The worst overlap and R^2 kept over the runs and variables, and the values clipped,
    re-protecting each run with its recorded seed (the comparison keeps no data)."""
    from sdccore._protect.pipeline import _protect

    runs = c.runs[c.runs.config == label]
    worst_o, worst_r, clipped = 1.0, 1.0, 0
    kept, met = {a: [] for a in BATTERY}, []
    for seed in runs.seed:
        res = _protect(d, c.configs[label]["method"], sens, int(seed),
                       {k: v for k, v in c.configs[label].items() if k != "method"})
        av = sdccore.analysis_validity(d, res.data, sensitive=sens)
        worst_o = min(worst_o, float(av.variables.overlap.min()))
        worst_r = min(worst_r, float(av.variables.r2_kept.min()))
        clipped += int(res.plausibility.loc[sens, "clipped"].sum())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ac = sdccore.analyst_checks(d, res.data, sensitive=sens)  # what analysts keep (issue 39)
        w = ac.worst.set_index("analysis")
        for a in BATTERY:
            kept[a].append(float(w.loc[a, "kept"]))
        met.append(ac.ok)
    battery = {a: float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
               for a, v in ((a, np.asarray(kept[a])) for a in BATTERY)}
    return worst_o, worst_r, clipped / max(len(runs), 1), battery, float(np.mean(met)) if met else float("nan")


def main(cases=CASES, methods=METHODS, reps=10, write=True):
    rows, picks, figs = [], [], {}
    for name, sens in cases:
        d = sdccore.load_dataset(name)
        roles = sdccore.dataset_roles(name)
        d = d.drop(columns=roles.get("identifier", []) + roles.get("exclude", []))
        label = "+".join(sens)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c = sdccore.compare(d, {k: dict(v) for k, v in methods.items()}, sensitive=sens, reps=reps, rng=12345,
                                n_jobs=1, tails=True, scales=True, domains=True)
        ru = c.risk_utility().set_index("config")
        safe = c.safety().set_index("config")
        rv = c.risk_variables
        rb = c.risk_bands
        for lab in ru.index:
            v = rv[rv.config == lab]
            b = rb[(rb.config == lab) & (rb.band != "top 1 %")]
            top = rb[(rb.config == lab) & (rb.band == "top 1 %")]
            wo, wr, clip, battery, met = _validity_detail(d, c, sens, lab, reps)
            pil = c.summary[(c.summary.config == lab) & (c.summary.score == "pil")]["mean"].iloc[0]
            ps = c.summary[(c.summary.config == lab) & (c.summary.score == "ps")]["mean"].iloc[0]
            rows.append({"data": name, "sensitive": label, "method": lab, "runs": int(ru.loc[lab, "reps"]),
                         "floors_met": float(safe.loc[lab, "floors_met"]),
                         "beyond_prior": float(v.beyond_prior.max()),
                         "worst_band": float(b.beyond_prior.max()) if len(b) else float("nan"),
                         "top_1pct": float(top.beyond_prior.max()) if len(top) else float("nan"),
                         "validity": 1 - float(ru.loc[lab, "validity_loss"]),
                         "validity_lo": 1 - float(ru.loc[lab, "validity_loss_hi"]),
                         "overlap_worst": wo, "r2_kept_worst": wr, "pil": pil, "ps": ps, "clipped": clip,
                         **{f"an_{a}": v for a, v in battery.items()}, "analyses_met": met})
        best, why = c.suggest(0.5)
        picks.append({"data": name, "sensitive": label, "suggested": best or "none", "why": why})
        try:
            from ui import figures

            figs[f"{name}_{label}"] = figures.risk_utility_figure(
                c.risk_utility(), "runs", "validity_loss", list(safe[safe.floors_met < 1].index))
        except ImportError:  # plotly missing: the table is the result
            pass
    table, chosen = pd.DataFrame(rows), pd.DataFrame(picks)
    if not write:
        return table, chosen
    out = Path(__file__).resolve().parent / "output"
    out.mkdir(exist_ok=True)
    table.to_csv(out / "useful_safe.csv", index=False)
    with pd.option_context("display.width", 220, "display.max_columns", 30, "display.max_colwidth", 200):
        text = (table.round(3).to_string(index=False) + "\n\nsuggested releases\n"
                + chosen.to_string(index=False) + "\n")
    (out / "useful_safe.log").write_text(text)
    for key, fig in figs.items():
        fig.write_html(out / f"useful_safe_{key.replace('+', '_').replace('.', '_')}.html", include_plotlyjs="cdn")
    print(text)
    return table, chosen


if __name__ == "__main__":
    main()
