"""Issue 26: risk as what the release adds to what the intruder already knows.

For every method in the tool on the bundled samples (selective: Tarragona SALES, Tarragona
SALES + NET.PROFIT, CASC FEDTAX, EIA TOTREVENUE + RESREVENUE; general: Tarragona, nothing
marked sensitive), ``reps`` runs each with the library's defaults, it prints per checked
variable and intruder the prior (what the intruder's knowledge alone predicts within 5 %),
the share with the release and the share beyond the prior (mean over the runs), overall, in
the worst size band and among the largest 1 %, and which configurations now pass the floors
in how many runs.  Writes studies/output/risk_beyond_prior.csv and .log.

    python studies/risk_beyond_prior.py          (a few minutes)
"""

import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sdccore  # noqa: E402

CASES = [("tarragona", ["SALES"]), ("tarragona", ["SALES", "NET.PROFIT"]), ("casc", ["FEDTAX"]),
         ("eia", ["TOTREVENUE", "RESREVENUE"]), ("tarragona", None)]
METHODS = {"FA": ("fa", {}), "PCA": ("pca", {}), "M-AGG": ("magg", {}), "Rank swap p=40": ("rankswap", {}),
           "Rank swap p=80": ("rankswap", {"p": 80.0}), "Noise": ("noise", {}), "PCA-R": ("pca_remove", {})}


def _one(d, sens, method, opts, seed, exclude):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = sdccore.protect(d, method, sensitive=sens, rng=seed, exclude=exclude,
                                  allow_unsafe="study: figures of releases that may break the floors", **opts)
        except ValueError as exc:  # a method that does not apply (general-only, options the data refuse)
            return None, str(exc).splitlines()[0][:120]
    return res.risk, ""


def main(cases=CASES, methods=METHODS, reps=5, write=True):
    rows, verdicts = [], []
    for name, sens in cases:
        d = sdccore.load_dataset(name)
        roles = sdccore.dataset_roles(name)
        d = d.drop(columns=roles.get("identifier", []))
        label = "+".join(sens) if sens else "general"
        for m_label, (method, opts) in methods.items():
            if method == "rankswap" and not sens:
                continue  # rank swapping is offered for sensitive variables
            passed, why, tabs = 0, "", []
            for r in range(reps):
                risk, err = _one(d, sens, method, opts, 1000 + r, roles.get("exclude", []))
                if risk is None:
                    why = err
                    break
                passed += risk.ok
                if not risk.ok and not why:
                    why = risk.violations[0][:160]
                tabs.append(risk.intruders)
            verdicts.append({"data": name, "sensitive": label, "method": m_label, "runs": len(tabs),
                             "floors_met": passed, "first_reason": why})
            if not tabs:
                continue
            t = pd.concat(tabs).groupby(["variable", "band", "intruder"], sort=False)[
                ["prior", "with_release", "beyond_prior"]].mean().reset_index()
            held = tabs[0].set_index(["variable", "band", "intruder"]).held
            for (var, intr), g in t.groupby(["variable", "intruder"], sort=False):
                g = g.set_index("band")
                bands = g.drop(index=[b for b in ("all", "top 1 %") if b in g.index])
                worst = bands.beyond_prior.idxmax() if len(bands) else None
                rows.append({"data": name, "sensitive": label, "method": m_label, "variable": var, "intruder": intr,
                             "held_to_floors": bool(held.get((var, "all", intr), False)),
                             "prior": g.prior.get("all"), "with_release": g.with_release.get("all"),
                             "beyond_prior": g.beyond_prior.get("all"),
                             "worst_band": worst, "worst_band_beyond": bands.beyond_prior.max() if worst else None,
                             "top1_prior": g.prior.get("top 1 %"), "top1_with": g.with_release.get("top 1 %"),
                             "top1_beyond": g.beyond_prior.get("top 1 %")})
    table, passes = pd.DataFrame(rows), pd.DataFrame(verdicts)
    if not write:
        return table, passes  # a smoke run (tests/package/test_studies.py)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", 160)
    out = Path(__file__).resolve().parent / "output"
    text = ("Per variable and intruder (mean over the runs):\n" + table.round(3).to_string(index=False)
            + "\n\nWhich configurations pass the floors (runs meeting every floor):\n" + passes.to_string(index=False))
    print(text)
    table.to_csv(out / "risk_beyond_prior.csv", index=False)
    (out / "risk_beyond_prior.log").write_text(text + "\n")
    return table, passes


if __name__ == "__main__":
    main()
