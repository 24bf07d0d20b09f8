"""The analyses' registry: each score of an evaluation (its name, label, direction, the measure,
and its form at scale or why there is none) in one table that every layer asks -- ``evaluate``
(``Evaluation.scores``), ``compare`` (its runs and summary), the command line, the dashboard
and the report -- as the methods' registry (``sdccore._methods``) is for methods and the
intruders' (``sdccore._risk.registry``) for intruders.

Ground floor: this module imports only ``_core.refs`` and no numpy, so the dashboard and the
command line read the labels before the measures load.

The built-in scores (DBRL, ID, PIL, PS ...) share their arrays and are computed together by
``evaluate`` (``measure`` None); a registered analysis is a function of the original and the
released file -- ``measure(original, released)``, two DataFrames of the same numeric columns,
rows aligned, missing cells NaN (the sampling-weight column left out) -- returning one number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .._core.refs import check_entry, is_ref, lookup, remove_entry, resolve

__all__ = ["AnalysisInfo", "analyses", "analysis_info", "register_analysis", "unregister_analysis"]


@dataclass(frozen=True)
class AnalysisInfo:
    """One analysis (a score of ``evaluate`` and ``compare``).

    Attributes
    ----------
    name : str
        Its key in ``Evaluation.scores`` and in a comparison's tables.
    label : str
        Its name on the dashboard, in the report and on the command line.
    measure : callable, str or None
        ``measure(original, released) -> float`` (two DataFrames, see the module docstring);
        a string "module:function" is imported on first use; None for a built-in score
        (``evaluate`` computes those together).
    direction : str
        "lower" (a loss or a risk: lower is better) or "higher" (what analysts keep).
    description : str
        What it measures, in a sentence (the report, the codebook).
    kind : str
        "risk" or "utility" (the dashboard's risk-utility axes and the report's sections).
    selective_only : bool
        Reported in selective protection only (``selectivity``, ``overall``).
    scale : callable, str or None
        Its form on the Dask engine: ``scale(original, released)`` on the engine's sample of
        records (two DataFrames, as ``measure`` takes them); None: not measured at scale.
    scale_refusal : str
        Why it has no form at scale (said when a Dask run leaves it out).
    """

    name: str
    label: str
    measure: Callable | str | None = field(default=None, repr=False, compare=False)
    direction: str = "lower"
    description: str = ""
    kind: str = "utility"
    selective_only: bool = False
    scale: Callable | str | None = field(default=None, repr=False, compare=False)
    scale_refusal: str = ""

    def run(self, original, released):
        """The measure on two DataFrames, as a float."""
        return float(resolve(self.measure)(original, released))

    def run_scale(self, original, released):
        """Its form at scale on the engine's sample, as a float."""
        v = resolve(self.scale)(original, released)
        if isinstance(v, (str, bytes, bool)):
            raise ValueError(f"analysis {self.name!r} returned {v!r:.80} at scale; it must return one number.")
        return float(v)


REGISTRY = {a.name: a for a in (
    AnalysisInfo("dbrl", "Record linkage (DBRL)", kind="risk",
                 description="share of records linked to their own release by distance-based record linkage"),
    AnalysisInfo("id", "Interval disclosure (ID)", kind="risk",
                 description="share of values within rank intervals around the released value of the intruder's record"),
    AnalysisInfo("pil", "Information loss (PIL)",
                 description="probabilistic information loss of means, variances, covariances, quantiles, skewness, "
                             "kurtosis"),
    AnalysisInfo("ps", "Propensity score (PS)",
                 description="how well a logistic model tells the release from the original (standardised data)"),
    AnalysisInfo("ps_shape", "PS on normal scores (sees skew and sign)",
                 description="the propensity score on normal scores: sees the distributions' shape"),
    AnalysisInfo("validity_loss", "Analysis validity lost",
                 description="what the regressions, correlations and distribution of the worst-kept checked variable "
                             "lose"),
    AnalysisInfo("summary", "Summary", kind="summary", description="(PIL + PS + DBRL + ID) / 4"),
    AnalysisInfo("selectivity", "Selectivity", selective_only=True, kind="summary",
                 description="mean IC of the sensitive variables (selective protection)"),
    AnalysisInfo("overall", "Overall", selective_only=True, kind="summary",
                 description="(PIL + PS + DBRL + ID + 2 selectivity) / 6 (selective protection)"),
)}
BUILT_IN = tuple(REGISTRY)  # every process knows these without a register call
# the columns of compare's runs and summary tables besides the scores: an analysis of one of
# these names would overwrite them
RESERVED = ("config", "run", "seed", "score", "mean", "lo", "hi", "run_lo", "run_hi", "reps", "floors_ok", "failing",
            "violation", "risk", "error", "variable", "band", "model")


def analyses(*, kind=None) -> tuple:
    """The registered analyses' names, in the order scores are reported (built-in first).

    Parameters
    ----------
    kind : str, optional
        Only "risk", "utility" or "summary" ones.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> import sdccore
    >>> sdccore.analyses(kind="risk")
    ('dbrl', 'id')
    """
    return tuple(n for n, a in REGISTRY.items() if kind is None or a.kind == kind)


def analysis_info(name) -> AnalysisInfo:
    """The registry's entry of an analysis.

    Parameters
    ----------
    name : str
        A registered analysis' name (``analyses()``); ValueError naming them otherwise.

    Returns
    -------
    AnalysisInfo

    Examples
    --------
    >>> import sdccore
    >>> sdccore.analysis_info("pil").label
    'Information loss (PIL)'
    """
    return lookup("analysis", name, REGISTRY)


def label(name) -> str:
    """An analysis' label (its name when it is no longer registered)."""
    info = REGISTRY.get(name)
    return info.label if info is not None else name


def labels() -> dict:
    """{name: label} of every registered analysis, in order."""
    return {n: a.label for n, a in REGISTRY.items()}


def plugins() -> tuple:
    """The analyses registered in this process beyond the built-in ones (they travel with a
    comparison's runs to its worker processes)."""
    return tuple(a for n, a in REGISTRY.items() if n not in BUILT_IN)


def register_analysis(info, *, replace=False):
    """Add an analysis: ``evaluate`` reports it in ``scores``, ``compare`` in its tables, the
    dashboard on the Run page, from then on.

    Parameters
    ----------
    info : AnalysisInfo
        Its name, label and measure (a function of the original and the released DataFrame).
    replace : bool
        Replace an analysis of that name (a built-in one cannot be replaced).

    Returns
    -------
    AnalysisInfo

    Examples
    --------
    >>> import sdccore
    >>> gap = sdccore.AnalysisInfo("mean_gap", "Largest mean change (in sds)",
    ...                            lambda o, r: ((r.mean() - o.mean()).abs() / o.std()).max())
    >>> sdccore.register_analysis(gap).name
    'mean_gap'
    >>> sdccore.unregister_analysis("mean_gap").name
    'mean_gap'
    """
    check_entry("analysis", info, AnalysisInfo, REGISTRY, BUILT_IN, replace, whose="the analysis'",
                make="sdccore.AnalysisInfo(name, label, measure)", example="mean_gap",
                label_hint="its name in words on the dashboard and in reports")
    if info.name in RESERVED:
        raise ValueError(f"the analysis' name {info.name!r} is a column of compare's tables ({', '.join(RESERVED)}); "
                         f"choose another name, e.g. {info.name + '_gap'!r}.")
    if not (callable(info.measure) or is_ref(info.measure)):
        raise TypeError(f"analysis {info.name!r}: measure must be a function of (original, released) DataFrames.")
    if info.direction not in ("lower", "higher"):
        raise ValueError(f"analysis {info.name!r}: direction must be 'lower' or 'higher' (which is better), "
                         f"not {info.direction!r}.")
    if info.kind not in ("risk", "utility"):
        raise ValueError(f"analysis {info.name!r}: kind must be 'risk' or 'utility', not {info.kind!r}.")
    REGISTRY[info.name] = info
    return info


def unregister_analysis(name):
    """Remove a registered analysis (not a built-in one).

    Parameters
    ----------
    name : str
        A plug-in analysis' name.

    Returns
    -------
    AnalysisInfo
        Its entry.

    Examples
    --------
    >>> import sdccore
    >>> _ = sdccore.register_analysis(sdccore.AnalysisInfo("rows", "Rows", lambda o, r: len(r)))
    >>> sdccore.unregister_analysis("rows").label
    'Rows'
    """
    return remove_entry("analysis", name, REGISTRY, BUILT_IN)
