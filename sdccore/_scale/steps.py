"""The Dask engine's steps between the plan and the written release (``_dask._protect_dask``
sequences them): the columns to protect, the exact linear dependencies rebuilt, the bounds
at scale, the release frame, its risk profile (whole-file figures and a sample) and the
notes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._io.partitions import _assemble_part
from .._core.streams import dask_sequence
from .._methods import hook


def _scale_columns(ddf, drop, keep, exclude, sensitive):
    """The frame without the dropped columns and its numeric columns to protect."""
    missing = [c for c in drop + keep + exclude + list(sensitive or []) if c not in ddf.columns]
    if missing:
        raise ValueError(f"column(s) {missing} are not in the data set; check the recipe and --drop/--keep.")
    work = ddf.drop(columns=drop) if drop else ddf
    num = [c for c in work.columns if pd.api.types.is_numeric_dtype(work.dtypes[c]) and c not in set(exclude)]
    if len(num) < 2:
        raise ValueError(f"the data set has {len(num)} numeric column(s) to protect; at least 2 are needed.")
    return work, num


def _with_dependencies(Xpk, m, prep, mean, sd):
    """Every numeric column of the release: the protected ones, and each exact linear
    dependency rebuilt from them."""
    import dask.array as da

    keepi = prep.keep
    mean_k, sd_k = mean[keepi], sd[keepi]
    cols = []
    for j in range(m):
        if j in keepi:
            cols.append(Xpk[:, keepi.index(j)])
        else:  # an exact linear dependency, rebuilt from the protected columns
            d = next(d for d in prep.deps if d.target == j)
            Zp = (Xpk - mean_k) / sd_k
            # term by term, not Zp @ beta: a matrix-vector product's last bit depends on the
            # memory's alignment, so the same seed gave other bytes on another worker
            acc = Zp[:, 0] * d.beta[0]
            for k in range(1, len(d.beta)):
                acc = acc + Zp[:, k] * d.beta[k]
            cols.append(mean[j] + sd[j] * acc)
    return da.stack(cols, axis=1)


def _bounds_at_scale(bounds, lo, hi):
    """Each column's lower and upper bound for the option ``bounds``."""
    if bounds == "sign":
        lo_b = np.where(lo >= 0, 0.0, -np.inf)
    elif bounds == "plausible":
        # at scale: no value below 0 where the original has none, none below the original's minimum
        # where it has some (in memory the count of negative values is kept too, which needs a sort)
        lo_b = np.where(lo >= 0, 0.0, lo)
    else:
        lo_b = lo if bounds == "observed" else np.full(len(lo), -np.inf)
    hi_b = hi if bounds == "observed" else np.full(len(hi), np.inf)
    return lo_b, hi_b


def _release_frame(work, Xp, num, as_int):
    """The release frame, partition by partition (the protected values have the same
    partitions); formulas in text cells neutralised."""
    import dask.dataframe as dd

    from .._io.write import neutralize_formulas

    prot = dd.from_dask_array(Xp, columns=num)
    rel = dd.map_partitions(_assemble_part, work, prot, num, as_int, list(work.columns), meta=work._meta,
                            align_dataframes=False, enforce_metadata=False)
    text = [c for c in rel.columns if not pd.api.types.is_numeric_dtype(rel.dtypes[c])]
    if text:
        rel = rel.map_partitions(neutralize_formulas, meta=work._meta)
    return rel


def _scale_risk(X, Yw, *, method, prep, o, plan, planned, seed, s, num, mean, lo, hi, n, sd_k):
    """The risk profile of the written release: |cor| and the own-record closeness, overall,
    per size band and among the largest 1 %, over every record (two passes; the own record
    is then counted WITH the release, an upper bound of its share beyond the prior); the
    prior, linking, reconstruction, assignment and identity intruders on a uniform sample of
    ``s`` records (issue 26)."""
    import dask.array as da

    from .floors import whole_file_figures
    from .._risk.intruders import change_structure
    from .._protect.pipeline import _link_columns
    from .._risk.floors import RiskFloors, risk_profile

    rng = np.random.default_rng(dask_sequence(seed, "floors_sample"))
    rows = np.sort(rng.choice(n, size=s, replace=False))
    X0s, Xps = da.compute(X[rows], Yw[rows])
    window = hook(method, "risk_window")
    whole = whole_file_figures(X, Yw, prep.check, n, mean, lo, hi, X0s, RiskFloors.from_value(o["floors"]))
    # every record's change in the span of the perturbed factors' loadings (residuals kept)
    basis = plan.dec.L[:, plan.sel] * sd_k[:, None] if plan is not None and o["residuals"] == "keep" else None
    return risk_profile(X0s, np.asarray(Xps, dtype=np.float64), num, prep.check, floors=o["floors"],
                        planned_share=planned, link_on=_link_columns(prep), structure=change_structure(prep, basis), whole=whole,
                        window=window(method, o) if window else None, method=method)


def _scale_notes(n, s, num, clipped, shift, bounds, rounding):
    """What the release notes say about the floors' sample and what bounds and rounding did."""
    notes = [f"risk floors: |cor| and the records kept close to the truth (overall, in every size band and among the "
             f"largest 1 %) counted over all {n:,} records; linking and reconstruction checked on {s:,} records drawn "
             f"at random"]
    notes += [f"{c}: {clipped[c]:,} value(s) outside the original's {'range' if bounds == 'observed' else 'sign'} were "
              f"clipped" for c in num if clipped[c]]
    worst = max(num, key=lambda c: abs(shift[c]))
    if abs(shift[worst]) > 1e-9:
        notes.append(f"bounds ({bounds!r}) and rounding ({rounding!r}) moved the means by up to {shift[worst]:+.2g} "
                     f"original sd ({worst}); with bounds='none' and rounding='none' they are exact")
    return notes
