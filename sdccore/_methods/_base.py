"""What every method's module shares: the method contract (``MethodSteps``: every step a
method's module may provide, with its arguments), ``Option`` (one entry of the schema),
``Context`` (what the data-bound pass knows about the data), the plan, the perturbation and
the scale form a method's steps return.  Imports only numpy and pandas: the method modules and the schema stand on it."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np
import pandas as pd

__all__ = ["Option", "Context", "OMIT", "Plan", "Perturbed", "Scaled", "MethodSteps", "planned_share"]

OMIT = object()  # a default that leaves the option out of the effective options


# how the factors are extracted (factor_analyzer's methods), in words for the widgets
EXTRACTION_TEXT = {"minres": "minimum residuals (minres)", "ml": "maximum likelihood (ml)",
                   "principal": "principal axes (principal)"}


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


class MethodSteps(Protocol):
    """The method contract: what a method's steps module (or object) provides, and how the
    pipeline, the strata, the Dask engine, the codebook and the search call it.  ``options``
    and ``perturb`` are required; every other step is optional (a module without it gets the
    layer's default).  ``register_method`` checks a plug-in's steps against this contract
    (each present step callable with these arguments), and ``hook`` refuses a step name
    that is not here; ``tests/methods/test_contract.py`` checks every built-in module.
    """

    def options(self, method) -> list:
        """Its own ``Option`` entries (the common ones are added by the schema)."""

    def perturb(self, prep, plan, method, o, gen, Xk, full) -> "Perturbed":
        """The perturbation of the prepared columns ``Xk`` (records x prep.keep)."""

    def plan(self, prep, method, o) -> "Plan":
        """The factorization and what to perturb (decomposing methods)."""

    def check(self, method, o, ctx) -> None:
        """Limits that depend on the data (a ValueError naming the option)."""

    def risk_window(self, method, o) -> float | None:
        """A rank window an intruder who knows the method can exploit (a share of records)."""

    def loadings_prefix(self, method) -> str:
        """The factors' name prefix in tables ('F', 'PC')."""

    def variance_share(self, plan, method, m):
        """The perturbed factors' share of the variance (decomposing methods)."""

    def keeps(self, method, options) -> tuple:
        """(what it keeps exactly, what in expectation), in words for the codebook."""

    def min_stratum_size(self, method, m, k) -> int:
        """The fewest records a stratum needs."""

    def scale_refusal(self, method, options) -> str | None:
        """Why these options cannot run on the Dask engine, or None."""

    def perturb_scale(self, method, s) -> "Scaled":
        """Its form on the Dask engine (``s``: the engine's prepared step)."""

    def search_candidates(self, data, method, sensitive, base, decompose) -> tuple:
        """(candidates, size of the space, what, unit) for ``search``."""

    def release_check(self, method, o, prep, plaus, risk):
        """Its own check of the finished release: the risk profile with its violations added."""


CONTRACT = {name: len(inspect.signature(fn).parameters) - 1 for name, fn in vars(MethodSteps).items()
            if callable(fn) and not name.startswith("_")}  # step -> how many arguments it is called with


def contract_problems(obj, required=("options", "perturb")):
    """What in a steps object breaks the method contract (``MethodSteps``): a required step
    missing, a step that is not callable or cannot take the arguments it is called with.  A
    list of sentences (empty: it keeps the contract).  ``required=()``: only the signatures
    of the steps that are functions (``register_method``'s check; a missing or non-callable
    step is refused where it is called, naming the step)."""
    out = []
    for step in CONTRACT:
        fn = getattr(obj, step, None)
        if fn is None:
            if step in required:
                out.append(f"it has no {step} step")
            continue
        if not callable(fn):
            if required:
                out.append(f"{step} is {_what(fn)}, not a function")
            continue
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):  # a builtin without a signature: it is called and checked then
            continue
        want = [p for p in inspect.signature(getattr(MethodSteps, step)).parameters if p != "self"]
        try:
            sig.bind(*want)
        except TypeError:
            out.append(f"{step}{sig} cannot be called as {step}({', '.join(want)})")
    return out


@dataclass(frozen=True, kw_only=True)
class Scaled:
    """What a method's ``perturb_scale`` step returns on the Dask engine.

    Attributes
    ----------
    X : dask array
        The protected columns (records x prep.keep), lazy.
    notes : list of str
        What the step did, in words.
    plan : Plan or None
        The plan it used (decomposing methods), for the loadings and the floors.
    planned : list or None
        Per checked variable, the planned perturbed variance share.
    """

    X: object
    notes: list
    plan: object = None
    planned: list | None = None


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
    loadings: pd.DataFrame | None = None
    perturbed: tuple = ()
    planned: list | None = None
    basis: np.ndarray | None = None
    notes: tuple = ()


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


# ----------------------------------------------------------------------------- plug-in boundary

def _what(x):
    """What a step returned, in words: its type, and its shape, length or value."""
    shape = getattr(x, "shape", None)
    if x is None:
        return "None"
    if isinstance(shape, tuple):
        return f"{type(x).__name__} of shape {shape}"
    if isinstance(x, (list, tuple, dict)):
        return f"{type(x).__name__} of length {len(x)}"
    if isinstance(x, (str, int, float)):
        return f"{type(x).__name__} {x!r}"[:80]
    return type(x).__name__


def _arg(args, kwargs, i, name):
    return kwargs[name] if name in kwargs else args[i] if len(args) > i else None


def _check_perturbed(out, args, kwargs):
    """A ``Perturbed`` whose X has the shape of the columns handed to perturb (records x
    decomposed columns); int arrays become float.  Returns (the result, what was wrong or
    None, what it must be)."""
    Xk, prep = _arg(args, kwargs, 5, "Xk"), _arg(args, kwargs, 0, "prep")
    shape = getattr(Xk, "shape", None)
    if not isinstance(out, Perturbed):
        return out, _what(out), (f"it must return sdccore.Perturbed(X=array of shape {shape}, loadings=None, "
                                 f"perturbed=(), planned=None, basis=None, notes=())")
    X, n_check = out.X, len(getattr(prep, "check", ()))
    if not isinstance(X, np.ndarray) or X.shape != shape or X.dtype.kind not in "fiu":
        got = f"X of dtype {X.dtype} and shape {X.shape}" if isinstance(X, np.ndarray) else f"X as {_what(X)}"
        return out, f"a Perturbed with {got}", f"X must be a numeric array of shape {shape} (records x protected columns)"
    bad = int(np.size(X) - np.isfinite(X).sum())
    if bad:  # blamed on the data's columns before (rescale them), not on the plug-in
        return out, f"a Perturbed whose X holds {bad} value(s) that are not finite (NaN or inf)", "X must be finite"
    if out.planned is not None and (not isinstance(out.planned, (list, tuple)) or len(out.planned) != n_check
                                    or not all(p is None or isinstance(p, (int, float)) and 0 <= p <= 1
                                               for p in out.planned)):
        return out, f"a Perturbed with planned={_what(out.planned)}", \
            f"planned must be None or {n_check} shares between 0 and 1 (or None)"
    if not isinstance(out.notes, (list, tuple)) or not all(isinstance(s, str) for s in out.notes):
        return out, f"a Perturbed with notes={_what(out.notes)}", "notes must be a tuple of str"
    if out.loadings is not None and not isinstance(out.loadings, pd.DataFrame):
        return out, f"a Perturbed with loadings={_what(out.loadings)}", "loadings must be None or a DataFrame"
    if out.basis is not None and not (isinstance(out.basis, np.ndarray) and out.basis.ndim == 2
                                      and out.basis.shape[0] == shape[1]):
        return out, f"a Perturbed with basis={_what(out.basis)}", f"basis must be None or an array of {shape[1]} rows"
    if X.dtype.kind != "f":
        from dataclasses import replace

        out = replace(out, X=X.astype(np.float64))
    return out, None, None


def _kind(ok, want):
    """A result check: ``ok(out, args, kwargs)`` true for a good result, else ``want``."""
    return lambda out, args, kwargs: (out, None, None) if ok(out, args, kwargs) else \
        (out, _what(out), f"it must return {want}")


_STR2 = _kind(lambda out, a, k: isinstance(out, tuple) and len(out) == 2 and all(isinstance(s, str) for s in out),
              "two strings (what is kept exactly, what in expectation)")
_RESULTS = {
    "perturb": _check_perturbed,
    "plan": _kind(lambda out, a, k: isinstance(out, Plan), "a Plan (sdccore._methods._base.Plan)"),
    "options": _kind(lambda out, a, k: isinstance(out, (list, tuple)) and all(isinstance(o, Option) for o in out),
                     "a list of sdccore.Option (empty for none)"),
    "keeps": _STR2,
    "loadings_prefix": _kind(lambda out, a, k: isinstance(out, str), "a str such as 'F'"),
    "risk_window": _kind(lambda out, a, k: out is None or isinstance(out, (int, float, np.number))
                         and not isinstance(out, bool) and 0 <= out <= 1, "None or a share of the records in [0, 1]"),
    "min_stratum_size": _kind(lambda out, a, k: isinstance(out, (int, np.integer)) and not isinstance(out, bool)
                              and out >= 2, "a whole number of records of at least 2"),
    "scale_refusal": _kind(lambda out, a, k: out is None or isinstance(out, str), "None or a str (why not at scale)"),
    "release_check": _kind(lambda out, a, k: isinstance(out, type(_arg(a, k, 4, "risk"))),
                           "the risk profile it was given (with its violations added)"),
    "perturb_scale": _kind(lambda out, a, k: isinstance(out, Scaled), "a Scaled(X=dask array, notes=[...], plan=None, "
                                                                      "planned=None) (sdccore._methods._base.Scaled)"),
    "search_candidates": _kind(lambda out, a, k: isinstance(out, tuple) and len(out) == 4,
                               "a tuple (candidates, space, what, unit)"),
}
_REQUIRED = ("options", "perturb")
_VALIDATES = ("check",)  # steps whose ValueError/TypeError is their message to the user: passed through
_PASSED = (MemoryError, RecursionError, SystemError)  # the caller's own one-line answers (SystemError: Ctrl-C)


def _first_line(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


class PluginSteps:
    """A plug-in method's steps as the pipeline calls them: what each step returns is
    checked (type, shape) and a failure inside a step is one ``ValueError`` naming the
    plug-in, the step and the cause (kept as ``__cause__``).  Built-in methods are called
    directly (``steps``), at no cost."""

    __slots__ = ("_name", "_obj")

    def __init__(self, name, obj):
        self._name, self._obj = name, obj

    def __getattr__(self, attr):
        if attr.startswith("__") or attr in self.__slots__:
            raise AttributeError(attr)
        fn = getattr(self._obj, attr)  # AttributeError for an optional step the plug-in has not
        if not callable(fn):
            if attr in _REQUIRED:
                raise ValueError(f"plug-in method {self._name!r} has {attr}={_what(fn)}; it must be a function (see "
                                 f"sdccore._methods for its arguments and what it returns).")
            return fn
        name, check = self._name, _RESULTS.get(attr)

        def call(*args, **kwargs):
            try:
                out = fn(*args, **kwargs)
            except Exception as exc:
                if isinstance(exc, _PASSED) or attr in _VALIDATES and isinstance(exc, (ValueError, TypeError)):
                    raise
                raise ValueError(f"plug-in method {name!r} failed in {attr}: {type(exc).__name__}: "
                                 f"{_first_line(exc)}") from exc
            if check is None:
                return out
            out, got, must = check(out, args, kwargs)
            if got is not None:
                raise ValueError(f"plug-in method {name!r} returned {got} from {attr}; {must}.")
            return out

        call.__name__ = getattr(fn, "__name__", attr)
        return call


# ---------------------------------------------------------------------------- the codes
# The codes released unchanged (set-apart columns: sex, region, a firm's id in a panel, a
# year) as indicator columns, for the conditional methods to redraw the sensitive variables
# given them as well as given the public variables (``conditional``: IPSO's option
# ``condition='released'``).  With them in the basis the release keeps the mean of each
# sensitive variable in every domain of those codes and the OLS with the codes as regressors,
# which an analyst runs (on the diabetes file with sex set apart, IPSO given the public
# variables alone turned the gap in mean target between the sexes from 6.6 into 21.7).
#
# Which columns and levels (``indicators``):
#
# * a column not among the numeric ones protected, with 2 to ``MAX_LEVELS`` levels (a missing
#   cell is a level of its own): an id with a level per record or per household is no domain
#   and would fit every record exactly;
# * a level gets its own indicator only with at least ``MIN_LEVEL`` records; smaller levels
#   join the reference level (the largest), so that no record's fit is its own group's mean;
# * at most n / ``RECORDS_PER_COLUMN`` - (1 + p) indicator columns in all (p public variables),
#   columns with fewer levels first; a column that does not fit is left out and said.

MIN_LEVEL = 10
RECORDS_PER_COLUMN = 5


def indicators(data, numeric, p):
    """(n x q indicator matrix or None, [(column, levels with an indicator, levels)] used,
    [columns left out for room]) of the columns of ``data`` not in ``numeric``."""
    n = len(data)
    room = n // RECORDS_PER_COLUMN - (1 + p)
    cands = []
    for c in data.columns:
        if c in set(numeric):
            continue
        codes, uniq = pd.factorize(data[c], use_na_sentinel=False)
        if not 2 <= len(uniq) <= code_max_levels():
            continue
        counts = np.bincount(codes, minlength=len(uniq))
        big = [int(k) for k in np.flatnonzero(counts >= MIN_LEVEL)]
        if len(big) < 2:
            continue
        ref = max(big, key=lambda k: counts[k])
        cands.append((len(big) - 1, str(c), codes, [k for k in big if k != ref], len(uniq)))
    cols, used, left = [], [], []
    for width, c, codes, levels, total in sorted(cands, key=lambda t: t[0]):
        if width > room:
            left.append(c)
            continue
        room -= width
        cols += [(codes == k).astype(np.float64) for k in levels]
        used.append((c, width + 1, total))
    return (np.column_stack(cols) if cols else None), used, left


def words(used):
    """'sex (2 levels), year (20 of 22 levels)'."""
    return ", ".join(f"{c} ({k} levels)" if k == total else f"{c} ({k} of {total} levels)" for c, k, total in used)


def code_max_levels():
    from . import CODE_MAX_LEVELS  # the package's rule (the Dask engine's blocks read it too)

    return CODE_MAX_LEVELS
