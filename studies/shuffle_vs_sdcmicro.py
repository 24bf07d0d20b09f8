"""Issue 27: sdccore's data shuffling (``protect(..., 'shuffle')``) beside sdcMicro's
``shuffle(method = "ds")`` on the same data, 10 seeds each (sdcMicro needs at least two
sensitive variables: Tarragona SALES + NET.PROFIT, EIA TOTREVENUE + RESREVENUE).

For each release: is every sensitive column a permutation of its original values; the
Spearman correlation of each sensitive variable with each public one (mean absolute
difference from the original's); analysis validity and its components (sdccore's measure
applied to both releases).  Needs R with sdcMicro (../shared/tools/build-sdcmicro.sh);
without Rscript it says so and stops.  Writes studies/output/shuffle_vs_sdcmicro.log.

    python studies/shuffle_vs_sdcmicro.py
"""

import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sdccore  # noqa: E402

CASES = [("tarragona", ["SALES", "NET.PROFIT"]), ("eia", ["TOTREVENUE", "RESREVENUE"])]
SEEDS = range(10)
R_SCRIPT = """
suppressMessages(library(sdcMicro))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1], check.names = FALSE)
sens <- strsplit(args[2], ",")[[1]]
pub <- setdiff(colnames(d), sens)
q <- function(x) paste0("`", x, "`")
form <- as.formula(paste(paste(q(sens), collapse = "+"), "~", paste(q(pub), collapse = "+")))
for (s in as.integer(strsplit(args[3], ",")[[1]])) {
  set.seed(s)
  r <- shuffle(d, form, method = "ds")
  out <- d
  out[, sens] <- r$shuffled[, sens]
  write.csv(out, file.path(args[4], paste0("sdcmicro_", s, ".csv")), row.names = FALSE)
}
"""


def _figures(d, rel, sens):
    pub = [c for c in d.columns if c not in sens]
    perm = all(np.array_equal(np.sort(rel[s].to_numpy(float)), np.sort(d[s].to_numpy(float))) for s in sens)
    r0 = d.rank().corr().loc[sens, pub].to_numpy()
    r1 = rel.rank().corr().loc[sens, pub].to_numpy()
    av = sdccore.analysis_validity(d, rel, sensitive=sens)
    v = av.variables
    return {"permutation": perm, "spearman_change": float(np.abs(r1 - r0).mean()), "validity": av.validity,
            "overlap": float(v.overlap.min()), "r2_kept": float(v.r2_kept.min()), "cor_kept": float(v.cor_kept.min())}


def main():
    if shutil.which("Rscript") is None:
        print("Rscript not found: build sdcMicro with ../shared/tools/build-sdcmicro.sh to run this study.")
        return None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "shuffle.R").write_text(R_SCRIPT)
        for name, sens in CASES:
            d = sdccore.load_dataset(name)
            roles = sdccore.dataset_roles(name)
            d = d.drop(columns=roles.get("identifier", []) + roles.get("exclude", [])).astype(float)
            src = tmp / f"{name}.csv"
            d.to_csv(src, index=False)
            subprocess.run(["Rscript", str(tmp / "shuffle.R"), str(src), ",".join(sens),
                            ",".join(map(str, SEEDS)), str(tmp)], check=True, capture_output=True)
            for s in SEEDS:
                rel = pd.read_csv(tmp / f"sdcmicro_{s}.csv")
                rows.append({"data": name, "tool": "sdcMicro ds", "seed": s, **_figures(d, rel, sens)})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    ours = sdccore.protect(d, "shuffle", sensitive=sens, rng=s, allow_unsafe="study").data
                rows.append({"data": name, "tool": "sdccore shuffle", "seed": s, **_figures(d, ours, sens)})
    t = pd.DataFrame(rows)
    summary = t.groupby(["data", "tool"]).agg(permutation=("permutation", "mean"),
                                              spearman_change=("spearman_change", "mean"),
                                              validity=("validity", "mean"), validity_sd=("validity", "std"),
                                              overlap=("overlap", "mean"), r2_kept=("r2_kept", "mean"),
                                              cor_kept=("cor_kept", "mean"))
    text = summary.round(4).to_string()
    out = Path(__file__).resolve().parent / "output"
    out.mkdir(exist_ok=True)
    (out / "shuffle_vs_sdcmicro.log").write_text(text + "\n")
    print(text)
    return summary


if __name__ == "__main__":
    main()
