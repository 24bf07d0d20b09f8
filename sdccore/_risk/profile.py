"""The result of the risk floors' check (``RiskProfile``): per checked variable, per size band
and per intruder, the shares each intruder gets beyond the prior, the violations in words and
the floors held.  Measured by ``floors.risk_profile``; here, below the pipeline and strata,
only the result and its words."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._core.summary import Summary
from .settings import RiskFloors

__all__ = ["RiskProfile"]


@dataclass(frozen=True)
class RiskProfile:
    """Per-variable and per-band residual risk of one release.

    Attributes
    ----------
    variables : DataFrame
        One row per checked variable: perturbed_share and residual_cor (in selective
        protection of the part the public variables do not explain), abs_cor; prior (the
        share of records the intruder's knowledge alone predicts within the tolerance, best of
        the prior models) and prior_model; per intruder the share of records it gets within
        the tolerance beyond that prior: close_own, close_linked, close_reconstructed,
        close_assignment, close_identity (NaN where the intruder does not apply); intruder
        (the one that did best among those held to the floors), with_release (its share with
        the release) and beyond_prior (its share beyond the prior); worst_band_close and
        worst_band (the largest beyond-prior share over the size bands); reported_only (the
        intruders measured but not held to the floors, with their figures); intruders (all
        those tried); ok.
    bands : DataFrame
        One row per variable and band: variable, band ("1".."10", "top 1 %"), lo, hi
        (original values), records, close_own, close_reconstructed (beyond the prior), prior
        (the best prior model's share in the band), intruder, with_release, beyond_prior (the
        floored figure), median_rel_error, ok, reported_only.
    violations : tuple of str
        Plain-language messages, each naming the variable, the floor and the fix; empty
        when every floor is met.
    floors : RiskFloors
        The floors used.
    linked_sample : int
        Number of original records linked (all of them up to 5000).
    failing : tuple of str
        The variables that break a floor.
    intruders : DataFrame
        Every intruder's figures: one row per variable, record set ("all", the size bands,
        "top 1 %") and intruder, with prior (the best prior model's share there),
        with_release, beyond_prior and held (whether the floors apply to it there).
    """

    variables: pd.DataFrame
    bands: pd.DataFrame
    violations: tuple
    floors: RiskFloors
    linked_sample: int
    failing: tuple = field(default=())
    intruders: pd.DataFrame = field(default_factory=pd.DataFrame)

    def __repr__(self):
        status = "every floor met" if self.ok else f"{len(self.violations)} violation(s) in {', '.join(self.failing)}"
        return (f"RiskProfile({status}; {len(self.variables)} variable(s) checked; at most "
                f"{self.floors.max_close_share:.0%} of records within {self.floors.tolerance:.0%} beyond the prior)")

    def summary(self) -> Summary:
        """A few lines: the verdict, then per checked variable what the release adds beyond
        the prior (its strongest held intruder) and whether it meets the floors (a ``Summary``:
        the text, and ``as_html()``)."""
        lines = [f"{name}: {r.beyond_prior:.1%} beyond the prior ({_heading(r.intruder)}), "
                 f"{'meets the floors' if r.ok else 'BREAKS a floor'}" for name, r in self.variables.iterrows()]
        lines += [f"violation: {v}" for v in self.violations[:3]]
        return Summary(repr(self), lines)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def one_record_decides(self) -> bool:
        """True when the release breaks the floors only in size bands so small that one record
        decides (fewer than 10 records: each is 10 % or more of its band).  Whether such a band
        is disclosed is then judged on the expected share over runs as well (``compare``
        suggests a configuration only if that mean meets the floor too)."""
        from .settings import ONE_RECORD

        return bool(self.violations) and all(ONE_RECORD in v for v in self.violations)

    def explain(self):
        """One short sentence per checked variable: the share of records the intruder's knowledge
        alone puts within the tolerance (the prior), the share more that the release finds (records
        no prior model gets: the prior and the release together reach both), overall and among the
        largest records, and which intruder did best.  The variables the release adds most to come
        first (ties in the profile's order); the figures with the release are in ``variables``."""
        v, b = self.variables, self.bands
        tol = self.floors.tolerance
        out = []
        for name, r in v.iloc[np.argsort(-v.beyond_prior.to_numpy(dtype=float), kind="stable")].iterrows():
            top = b[(b.variable == name) & (b.band == "top 1 %")]
            tail = ""
            if len(top):
                t = top.iloc[0]
                tail = (f"; largest 1 %: {t.prior:.0%} known, "
                        + (f"{t.beyond_prior:.0%} more ({_heading(t.intruder)})" if t.beyond_prior > 0
                           else "none more"))
            adds = f"{r.beyond_prior:.0%} more ({_heading(r.intruder)})" if r.beyond_prior > 0 else "none more"
            out.append(f"{name}: {r.prior:.0%} known within {tol:.0%} beforehand ({prior_words(r.prior_model)}); "
                       f"the release finds {adds}{tail}.")
        return out

    def message(self) -> str:
        if self.ok:
            return "every checked variable meets the risk floors"
        more = f" (and {len(self.violations) - 3} more)" if len(self.violations) > 3 else ""
        return "; ".join(self.violations[:3]) + more


_PRIOR_WORDS = {"ols": "linear regression", "log-ols": "regression on the log scale", "knn": "nearest neighbours",
                "boosting": "gradient boosting", "ols-by-size": "regression by size", "mean": "the mean",
                "median": "the median", "ols-ranked": "regression, ranked", "log-ols-ranked": "log regression, ranked",
                "knn-ranked": "neighbours, ranked", "boosting-ranked": "boosting, ranked"}


def prior_words(model) -> str:
    """A prior model's name in words ('P10': the 10th percentile)."""
    m = str(model)
    if " + " in m:  # a fit and a ranked model, halfway between them
        a, b = m.split(" + ", 1)
        return f"{prior_words(a)} with {prior_words(b)}"
    if m in _PRIOR_WORDS:
        return _PRIOR_WORDS[m]
    if m[:1] == "P" and m[1:].isdigit():
        n = int(m[1:])
        suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
        return f"the {n}{suffix} percentile"
    return m


def _heading(intruder) -> str:
    """An intruder's heading in words (its name when no longer registered)."""
    from .registry import intruder_info

    try:
        return intruder_info(intruder).heading
    except ValueError:
        return str(intruder)
