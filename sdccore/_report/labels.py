"""Plain words that the reports, the dashboard and the command line share: the measures' labels
(from the analyses' registry), an intruder's heading, and the warning a green verdict needs when
most of a variable was known before any release."""

from __future__ import annotations

from collections.abc import Mapping

from .._measures.analyses import analyses, analysis_info
from .._risk.registry import intruder_info


class _ScoreNames(Mapping):
    """{score: label} read from the analyses' registry at each use, in its order (a plug-in
    analysis registered after the app started included); a score no longer registered is
    labelled by its name."""

    def __getitem__(self, key):
        return analysis_info(key).label if key in self else key

    def __contains__(self, key):
        return key in analyses()

    def __iter__(self):
        return iter(analyses())

    def __len__(self):
        return len(analyses())


SCORE_NAMES = _ScoreNames()


def intruder_heading(name) -> str:
    """An intruder's heading in words (its name when it is no longer registered)."""
    try:
        return intruder_info(name).heading
    except ValueError:
        return str(name)


PRIOR_MOST = 0.5  # the prior gets more than this share: the release cannot protect what is already known


def prior_warning(risk) -> str | None:
    """When what the intruder already knows predicts a protected variable for most records
    (the prior), the release can add little and protect nothing: a green verdict would mislead.
    The words, or None."""
    v = risk.variables
    high = v[v.prior.astype(float) > PRIOR_MOST]
    if not len(high):
        return None
    tol = risk.floors.tolerance
    what = "; ".join(f"{name} for {p:.0%} of records" for name, p in high.prior.astype(float).items())
    return (f"Already revealed before any release: what an intruder knows (the other variables) predicts within "
            f"{tol:.0%} {what}. Meeting the floors then means the release adds little, not that these values are "
            f"protected. Mark the variables that determine them sensitive too, or leave these out of the release.")


MEAN_TOLERANCE = 0.01  # a release that moves a protected variable's mean more than this says so


def mean_shifts(original, released, columns):
    """{column: relative change of its mean, (released - original) / |original|} over the numeric
    columns both frames hold (missing cells left out; a zero original mean gives no figure)."""
    import numpy as np
    import pandas as pd

    out = {}
    for c in columns:
        if c in original and c in released and pd.api.types.is_numeric_dtype(original[c]) \
                and pd.api.types.is_numeric_dtype(released[c]):
            m0, m1 = float(original[c].mean()), float(released[c].mean())
            if np.isfinite(m0) and np.isfinite(m1) and m0 != 0:
                out[c] = (m1 - m0) / abs(m0)
    return out


def mean_shift_warning(original, released, columns, tolerance=MEAN_TOLERANCE) -> str | None:
    """Words for the means a release moves by more than ``tolerance`` (the largest first), or None:
    totals and means estimated from the release are off by as much."""
    moved = sorted(((c, s) for c, s in mean_shifts(original, released, columns).items() if abs(s) > tolerance),
                   key=lambda cs: -abs(cs[1]))
    if not moved:
        return None
    what = ", ".join(f"{c} {s:+.1%}" for c, s in moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
    return (f"Means moved by more than {tolerance:.0%}: {what}. Means and totals estimated from this release are off "
            f"by as much. Values clipped to the original's sign or range move means: the method's bounds setting, or a "
            f"method that keeps values in range (rank swapping, M-AGG, IPSO), avoids it.")
