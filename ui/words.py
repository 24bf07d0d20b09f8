"""Plain words the pages and reports share (beside ``ui.common``'s labels): an intruder's heading,
and the warning a green verdict needs when most of a variable was known before any release.
No Streamlit here: the pages show the words."""

from __future__ import annotations

import sdccore


def intruder_heading(name) -> str:
    """An intruder's heading in words (its name when it is no longer registered)."""
    try:
        return sdccore.intruder_info(name).heading
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
