"""What every method's module shares: ``Option`` (one entry of the schema), ``Context``
(what the data-bound pass knows about the data), the plan and the perturbation a method's
steps return.  Imports only numpy and pandas: the method modules and the schema stand on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

__all__ = ["Option", "Context", "OMIT", "Plan", "Perturbed", "planned_share"]

OMIT = object()  # a default that leaves the option out of the effective options


@dataclass(frozen=True)
class Context:
    """What the data-bound pass and the defaults need to know about the data."""

    selective: bool
    n: int | None = None        # records
    m: int | None = None        # variables decomposed (after setting aside exact combinations)
    m_total: int | None = None  # numeric variables protected


@dataclass(frozen=True)
class Option:
    """One option of one method.

    Attributes
    ----------
    name : str
        The keyword ``protect`` takes and the recipe records.
    method : str
        The method it belongs to (one of ``METHODS``).
    kind : str
        'choice', 'number', 'integer', 'labels' ('all', 'auto' or 1-based numbers),
        'removed' ('auto' or a number), 'names' (column names), 'transform' ('none', 'auto'
        or column names), 'column' (one column name), 'floors' (a dict of ``RiskFloors``
        fields); for ``compare`` and ``search`` also 'options' (a dict of another
        function's options) and 'formulas' (regression formulas); for the floors 'flag'
        (0 or 1).
    default : object
        The default, or a function of (options bound so far, Context) giving it.
    label, help : str
        The dashboard's widget label and help text (also the documentation).
    choices : tuple
        Allowed values of a 'choice' (and the words allowed for 'labels'/'removed').
    choice_text : dict
        A short description of each choice.
    sensitive_only : tuple
        Choices that need sensitive variables (selective protection).
    low, high, low_open : number or None, bool
        Static interval of a number; limits that depend on the data are checked by
        ``bind_data``.
    when : str
        When the option applies, in words ('' for always).
    unit : str
        Unit of a number ('%', 'records', ...).
    scale : float
        What the value is multiplied by where it is shown (100 for a share shown in %).
    """

    name: str
    method: str
    kind: str
    default: Any
    label: str
    help: str
    choices: tuple = ()
    choice_text: dict = field(default_factory=dict)
    sensitive_only: tuple = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    when: str = ""
    unit: str = ""
    scale: float = 1.0
    applies: Callable | None = field(default=None, repr=False, compare=False)

    def default_for(self, bound, ctx):
        """The default given the options bound so far and the data context."""
        return self.default(bound, ctx) if callable(self.default) else self.default

    def default_given(self, selective):
        """The default before the data are bound, with (or without) sensitive variables (the
        rotation, factors, components and residuals depend on it): what a form shows."""
        return self.default_for({}, Context(bool(selective)))

    def allowed(self, selective):
        """The choices allowed with (or without) sensitive variables."""
        return tuple(c for c in self.choices if selective or c not in self.sensitive_only)

    @property
    def text(self):
        """The option as it is named in messages: name (label, unit)."""
        label = self.label[:-len(self.name) - 1] if self.label.endswith(" " + self.name) else self.label
        return f"{self.name} ({label[0].lower() + label[1:]}{', ' + self.unit if self.unit else ''})"


@dataclass(frozen=True)
class Plan:
    """A decomposing method's plan: the factorization, the rotation and what to perturb."""

    dec: object         # _decomp.Factorization
    T: np.ndarray
    sel: list           # 0-based perturbed columns
    active: np.ndarray  # columns that may be perturbed (nonzero variance)
    notes: tuple


@dataclass(frozen=True)
class Perturbed:
    """What a method's ``perturb`` step returns (a plug-in method builds one).

    Attributes
    ----------
    X : ndarray
        The protected values of the decomposed columns, on the protection scale (records x
        ``prep.keep``); bounds, rounding and the original scale are the pipeline's.
    loadings : DataFrame or None
        The loadings shown for a decomposing method.
    perturbed : tuple
        The 1-based factors or components perturbed (empty for other methods).
    planned : list or None
        Per checked variable, the planned perturbed variance share (None: the floors use
        1 - cor(x, x')²).
    basis : ndarray or None
        The span of every record's change, for the structural intruder (None: unknown).
    notes : tuple of str
        What the step did, in words (the result's notes).
    """

    X: np.ndarray
    loadings: pd.DataFrame | None
    perturbed: tuple
    planned: list | None
    basis: np.ndarray | None
    notes: tuple


def planned_share(plan, prep):
    """Per checked variable, the perturbed variance share from the loadings (None for
    dependency targets, which have no loadings of their own)."""
    share = np.clip((plan.dec.loadings[:, plan.sel] ** 2).sum(axis=1), 0.0, 1.0)
    return [float(share[prep.keep.index(j)]) if j in prep.keep else None for j in prep.check]


def loadings_frame(plan, prep, prefix):
    """The loadings as a frame: the decomposed variables by name, columns F1.. or PC1.."""
    names = [prep.numeric[j] for j in prep.keep]
    return pd.DataFrame(plan.dec.loadings, index=names,
                        columns=[f"{prefix}{i + 1}" for i in range(plan.dec.L.shape[1])])
