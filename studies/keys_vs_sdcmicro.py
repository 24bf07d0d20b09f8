"""Issue 40: the key variables of sdcMicro's tutorial file (testdata: 4,580 persons, household
ori_hid, weight sampling_weight) measured and suppressed by sdccore and by sdcMicro, side by
side: sample uniques, records below k, the sum of the individual risks and the household risk,
the cells local suppression blanks to k-anonymity, and the CPU seconds each takes.

Cases: the tutorial's keys (urbrur, water, sex, age) at k = 3 and k = 5; age in 10-year bands
(a global recoding) first; age kept as the most important key; the nine categorical columns
as keys.  sdcMicro's figures are computed here when Rscript with sdcMicro is installed
(../shared/tools/build-sdcmicro.sh), else the figures recorded on 2026-11-29 with sdcMicro
5.8.1 are shown (marked "recorded").  CPU seconds: time.process_time here, proc.time()'s user +
system in R, each the best of three.  Writes studies/output/keys_vs_sdcmicro.log and .csv.

    python studies/keys_vs_sdcmicro.py
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sdccore  # noqa: E402
from sdccore._keys.frequencies import compatible_counts, frequencies, joint_codes  # noqa: E402

OUT = Path(__file__).resolve().parent / "output"
KEYS = ["urbrur", "water", "sex", "age"]
ALL9 = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil"]
TENS = [0, 10, 20, 30, 40, 50, 60, 70, 80, float("inf")]  # [a, b): sdcMicro's c(-1, 9, ..., 79, Inf)
# (name, keys, k, 10-year age bands, importance from most to least important or None)
CASES = [("tutorial keys, k = 3", KEYS, 3, False, None),
         ("tutorial keys, k = 5", KEYS, 5, False, None),
         ("age in 10-year bands, k = 3", KEYS, 3, True, None),
         ("age kept (most important), k = 3", KEYS, 3, False, ["age", "water", "urbrur", "sex"]),
         ("nine categorical keys, k = 3", ALL9, 3, False, None)]
# sdcMicro 5.8.1 on this machine, 2026-11-29 (the R script below): uniques, below k, risk sum,
# household risk, kAnon cells, kAnon CPU seconds
RECORDED = {"tutorial keys, k = 3": (330, 674, 24.7838722150, 117.2022050762, 674, 0.659),
            "age in 10-year bands, k = 3": (18, 42, 2.6365333828, None, 42, 0.117),
            "age kept (most important), k = 3": (330, 674, 24.7838722150, 117.2022050762, 699, 1.62)}

R_SCRIPT = r"""
suppressMessages(library(sdcMicro))
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(args[1])
keys <- strsplit(args[2], ",")[[1]]
k <- as.integer(args[3])
imp <- if (args[5] == "none") NULL else as.integer(strsplit(args[5], ",")[[1]])
for (v in keys) if (!(args[4] == "bands" && v == "age")) d[[v]] <- as.factor(d[[v]])  # age banded below
sdc <- createSdcObj(d, keyVars = keys, w = "sampling_weight", hhId = "ori_hid")
if (args[4] == "bands") sdc <- globalRecode(sdc, column = "age", breaks = c(-1, 9, 19, 29, 39, 49, 59, 69, 79, Inf))
r <- sdc@risk
best <- Inf
for (i in 1:3) {
  t0 <- proc.time(); s <- kAnon(sdc, k = k, importance = imp); t1 <- proc.time()
  best <- min(best, (t1 - t0)[1] + (t1 - t0)[2])
}
write.csv(extractManipData(s), args[6], row.names = FALSE)
cat(sum(r$individual[, "fk"] == 1), sum(r$individual[, "fk"] < k), sprintf("%.10f", sum(r$individual[, "risk"])),
    sprintf("%.10f", r$global$hier_risk_ER), sum(s@localSuppression$totalSupps), best, "\n")
"""


def left(truth, released, keys, k):
    """(records whose own released key values fewer than k records show, persons whose true keys
    fewer than k released records agree with), a blank agreeing with every value."""
    T, R = joint_codes(truth, released, keys)
    own = frequencies(R, np.ones(len(R)), strict=True)[0]
    return int((own < k).sum()), int((compatible_counts(T, R) < k).sum())


def ours(d, keys, k, bands, importance):
    if bands:
        d = sdccore.recode(d, {"age": sdccore.Recoding.bands(TENS, right=False)})
    r = sdccore.key_risk(d, keys, weights="sampling_weight", household="ori_hid", k=k)
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        s = sdccore.local_suppression(d, keys, k, importance=importance)
        best = min(best, time.process_time() - t0)
    assert sdccore.key_risk(s.data, keys, k=k).below_k == 0
    return (r.sample_uniques, r.below_k, r.expected_reidentifications, r.household_expected, s.cells, best,
            s.per_key, left(d, s.data, keys, k))


def theirs(d, keys, k, bands, importance, path):
    if shutil.which("Rscript") is None:
        return None
    imp = "none" if importance is None else ",".join(str(1 + importance.index(c)) for c in keys)
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as f:
        f.write(R_SCRIPT)
    out = Path(path).with_name("sdcmicro_out.csv")
    run = subprocess.run(["Rscript", f.name, str(path), ",".join(keys), str(k), "bands" if bands else "exact", imp,
                          str(out)], capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        print(f"sdcMicro failed: {run.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    u, b, s, h, c, t = run.stdout.split()
    truth = sdccore.recode(d, {"age": sdccore.Recoding.bands(TENS, right=False)}) if bands else d
    rel = pd.read_csv(out)
    if bands:  # sdcMicro's bands as labels: the same groups, coded apart
        rel["age"] = truth["age"].astype(object).where(rel["age"].notna(), None)
    return int(u), int(b), float(s), float(h), int(c), float(t), left(truth, rel, keys, k)


def main():
    d = sdccore.load_dataset("testdata")
    OUT.mkdir(exist_ok=True)
    rows, lines = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "testdata.csv"
        d.to_csv(path, index=False)
        for name, keys, k, bands, imp in CASES:
            a = ours(d, keys, k, bands, imp)
            b = theirs(d, keys, k, bands, imp, path)
            src = "computed"
            if b is None and name in RECORDED:
                b, src = RECORDED[name], "recorded"
            row = {"case": name, "uniques": a[0], "below_k": a[1], "risk_sum": round(a[2], 10),
                   "household_risk": round(a[3], 10), "cells": a[4], "cpu_s": round(a[5], 4)}
            if b is not None:
                row.update({"sdcmicro_uniques": b[0], "sdcmicro_below_k": b[1], "sdcmicro_risk_sum": b[2],
                            "sdcmicro_household_risk": b[3], "sdcmicro_cells": b[4], "sdcmicro_cpu_s": b[5],
                            "sdcmicro": src})
            rows.append(row)
            per = ", ".join(f"{c} {v}" for c, v in a[6].items() if v)
            row.update(own_left=a[7][0], target_left=a[7][1])
            line = (f"{name}: uniques {a[0]}, below k {a[1]}, risk sum {a[2]:.6f}, household {a[3]:.6f}; "
                    f"suppression {a[4]} cells ({per}) in {a[5]:.3f} CPU-s, leaving {a[7][0]} records whose own "
                    f"values and {a[7][1]} persons whose true keys fewer than k records show")
            if b is not None:
                line += (f" | sdcMicro ({src}): uniques {b[0]}, below k {b[1]}, risk sum {b[2]:.6f}"
                         + (f", household {b[3]:.6f}" if b[3] is not None else "")
                         + f"; kAnon {b[4]} cells in {b[5]:.3f} CPU-s"
                         + (f", leaving {b[6][0]} and {b[6][1]}" if len(b) > 6 else ""))
                if len(b) > 6:
                    row.update(sdcmicro_own_left=b[6][0], sdcmicro_target_left=b[6][1])
            print(line, flush=True)
            lines.append(line)
    pd.DataFrame(rows).to_csv(OUT / "keys_vs_sdcmicro.csv", index=False)
    (OUT / "keys_vs_sdcmicro.log").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
