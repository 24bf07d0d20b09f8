"""What ``protect`` and ``decompose`` return (frozen dataclasses with short reprs and a
``summary()``): below the pipeline, so that the codebook and the release can name them
without importing it."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .._core.summary import Summary
from .._risk.profile import RiskProfile

__all__ = ["ProtectionResult", "Decomposition"]


@dataclass(frozen=True)
class ProtectionResult:
    """What ``protect`` returns.

    Attributes
    ----------
    data : DataFrame
        Same index, columns and order as the input; the protected numeric columns changed,
        the others passed through.
    loadings : DataFrame or None
        Variables x factors/components (correlations), for fa/pca.
    perturbed : tuple of int
        1-based labels of the perturbed factors/components (fa/pca), else ().
    options : dict
        Every effective option incl. method, sensitive and seed (JSON-serialisable);
        ``protect(data, **options)`` reproduces ``data`` exactly.
    dependencies : dict
        {column: {predictor: coefficient, ..., "(intercept)": a}} for columns that are
        exact linear combinations of others, rebuilt from the protected parts.
    notes : tuple of str
        Plain-language remarks (dropped factors, widened sensitive set, ...).
    risk : RiskProfile
        Each sensitive variable (every protected one in general protection) and each of its
        size bands against the risk floors.
    plausibility : DataFrame
        Per protected variable: transform, bounds, decimals, values clipped, change of mean
        (in original sds) and sd ratio on the original scale.
    unsafe_reason : str or None
        The reason given with ``allow_unsafe`` for a release that breaks a floor.
    """

    data: pd.DataFrame
    loadings: pd.DataFrame | None
    perturbed: tuple
    options: dict
    dependencies: dict = field(default_factory=dict)
    notes: tuple = ()
    risk: RiskProfile | None = None
    plausibility: pd.DataFrame | None = None
    unsafe_reason: str | None = None

    def __repr__(self):
        o = self.options
        sens = o.get("sensitive")
        what = f"sensitive {', '.join(sens)}" if sens else "general protection"
        risk = "no risk profile" if self.risk is None else ("risk floors met" if self.risk.ok else
                                                            f"risk floors BROKEN ({', '.join(self.risk.failing)})")
        return (f"ProtectionResult(method {o.get('method')!r}, {len(self.data):,} records x {self.data.shape[1]} "
                f"columns, {what}, seed {o.get('seed')}; {risk}{'; unsafe: ' + self.unsafe_reason if self.unsafe_reason else ''})")

    def summary(self) -> Summary:
        """A few lines: the repr, the risk profile's summary and the notes (a ``Summary``: the
        text, and ``as_html()``)."""
        parts = []
        if self.perturbed:
            parts.append(f"factors or components perturbed: {', '.join(map(str, self.perturbed))}")
        if self.risk is not None:
            parts.append(self.risk.summary())
        parts += [f"note: {n}" for n in self.notes]
        return Summary(repr(self), parts)

    @property
    def method(self):
        return self.options["method"]

    def recipe_json(self) -> str:
        """The options as a versioned recipe (``python -m sdccore protect --recipe``)."""
        from .recipe import Recipe

        return Recipe.from_result(self, shuffle=False).to_json()


@dataclass(frozen=True)
class Decomposition:
    """The factors or components ``protect`` would use, without protecting anything (what
    ``decompose`` returns).

    Attributes
    ----------
    loadings : DataFrame
        Variables x factors (correlations), after rotation.
    perturbed : tuple of int
        1-based labels of the factors the options select.
    variance : Series
        Share of each factor's variance in the total (PCA: eigenvalue / m; FA: sum of
        squared loadings / m).
    perturbed_share : Series
        Per variable, the share of its variance carried by the perturbed factors (sum of
        squared loadings over them): what protection will change.
    dependencies : dict
        Exact linear combinations set aside, as in ``ProtectionResult``.
    notes : tuple of str
        Plain-language remarks.
    options : dict
        The effective options.
    below_floor : tuple of (str, float)
        (variable, share) for each sensitive variable (each variable in general protection)
        whose perturbed share is below the floor: ``protect`` would refuse this
        configuration.
    """

    loadings: pd.DataFrame
    perturbed: tuple
    variance: pd.Series
    perturbed_share: pd.Series
    dependencies: dict
    notes: tuple
    options: dict
    below_floor: tuple = ()   # (variable, share) of checked variables below floors.min_perturbed_share
