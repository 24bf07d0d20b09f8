"""Every option of every protection method in one table, and the one validator.

Each ``Option`` says its type, allowed values or interval, default, when it applies and the
words the dashboard shows (label, help, one text per choice).  ``protect``, ``decompose``,
the recipe, the command line and the Configure page all read this table; nothing else
types out a vocabulary or a default.

Validation runs in two passes:

* ``bind_static(method, options, selective)``: names, types (checked before any cast),
  choices, static intervals and applicability ("criterion only with factors='auto'",
  "isolating rotations need sensitive variables"), defaults filled in;
* ``bind_data(method, bound, context)``: the limits that depend on the data (k at most
  n/2, factor labels within the number of variables, a rank-swap window of one rank, ...).

Both raise ``TypeError``/``ValueError`` naming the option and the fix.  Old spellings that
recipes in the wild use (``noise`` for three different things) are translated by
``translate_legacy`` with a note saying the new name.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ._perturb import PARAMETERS, PERTURBATIONS, RESIDUALS
from ._removal import DEFAULT_METRIC, DEFAULT_THRESHOLD as REMOVAL_THRESHOLD, UTILITY_METRICS, ssim_window
from ._validation import check_number
from ._methods import methods

__all__ = ["Option", "option_schema", "CONDITIONAL_METHODS"]

METHODS = methods()  # the registry (_methods) is the one list
CONDITIONAL = methods(conditional=True)  # keep the public variables, redraw the sensitive ones given them
CONDITIONAL_METHODS = CONDITIONAL
OMIT = object()  # a default that leaves the option out of the effective options

TRANSFORMS = ("none", "auto")
BOUNDS = ("plausible", "sign", "observed", "tail", "none")
ROUNDINGS = ("original", "none")


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
        or column names) or 'floors' (a dict of ``RiskFloors`` fields).
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
    applies: Callable | None = field(default=None, repr=False, compare=False)

    def default_for(self, bound, ctx):
        """The default given the options bound so far and the data context."""
        return self.default(bound, ctx) if callable(self.default) else self.default

    def allowed(self, selective):
        """The choices allowed with (or without) sensitive variables."""
        return tuple(c for c in self.choices if selective or c not in self.sensitive_only)

    @property
    def text(self):
        """The option as it is named in messages: name (label, unit)."""
        label = self.label[:-len(self.name) - 1] if self.label.endswith(" " + self.name) else self.label
        return f"{self.name} ({label[0].lower() + label[1:]}{', ' + self.unit if self.unit else ''})"


# ----------------------------------------------------------------------------- the table

PERTURBATION_TEXT = {
    "swap": "random permutation (the papers' choice; keeps each factor's distribution)",
    "rankswap": "rank swapping within a window of p % of the records",
    "noise": "normal noise with sd noise_sd % of the factor's sd, rescaled",
    "microagg": "univariate microaggregation in groups of k",
    "microagg_noise": "microaggregation in groups of k plus the lost variance as noise",
    "bootstrap": "resampling with replacement",
    "synthetic": "smoothed bootstrap (kernel draws)",
    "round": "rounding to a coarse grid",
}
ROTATION_TEXT = {
    "none": "none",
    "varimax": "varimax",
    "quartimax": "quartimax",
    "equamax": "equamax",
    "isolate_sensitive": "isolate the sensitive variables (factor 1 alone carries sensitive variable 1, ...)",
    "isolate_public": "isolate the public variables",
}
CRITERION_TEXT = {
    "sensitive_threshold": "|loading| >= t on a sensitive variable",
    "public_threshold": "all but those with |loading| >= t on a public variable",
    "sensitive_over_public": "loading larger on sensitive than on public variables",
}
METRIC_TEXT = {
    "correlation": "correlation of the flattened standardised data (higher is better)",
    "mean_abs": "mean absolute change, in sds (lower is better)",
    "max_row": "mean absolute change of the most changed record, in sds (lower is better)",
    "frobenius": "root mean square change, in sds (lower is better)",
    "kl": "Kullback-Leibler divergence of the fitted normals (lower is better)",
    "psnr": "PSNR of the data read as an image, dB (higher is better)",
    "ssim": "SSIM of the data read as an image (higher is better)",
}


def _common(method):
    return [
        Option("exclude", method, "names", None, "Excluded columns",
               "Numeric columns released unchanged (on purpose)."),
        Option("transform", method, "transform", "none", "Log scale",
               "'auto': skewed non-negative variables are protected on the log scale (means and covariances kept "
               "there, not exactly on the original scale); or a list of column names.",
               choices=TRANSFORMS, choice_text={"none": "none", "auto": "skewed non-negative variables"}),
        Option("bounds", method, "choice", "plausible", "Bounds",
               "plausible: no negative values where the original has none (clipped at 0, counted; means shift a "
               "little), and about as many as the original where it has a handful (at most 5 %). "
               "sign: no negative values where the original has none. "
               "observed: clipped to the original range. tail: the values below 0 and as many above them take the "
               "original's smallest values, the rest scaled to keep the mean (no mass at 0). none: exact means, "
               "implausible values.",
               choices=BOUNDS),
        Option("rounding", method, "choice", "original", "Rounding",
               "original: the original's decimals (integers stay integers); moves means by at most half a unit of "
               "the last digit.", choices=ROUNDINGS),
        Option("floors", method, "floors", None, "Risk floors",
               "A dict of RiskFloors fields (min_perturbed_share, max_abs_cor, tolerance, max_close_share, bands, "
               "top_records, hold_all_intruders); omitted fields keep their defaults."),
    ]


def _perturbation(method, word):
    def param(name):
        return lambda o, ctx: PARAMETERS[o["perturbation"]] is not None and PARAMETERS[o["perturbation"]][0] == name

    return [
        Option("perturbation", method, "choice", "swap", f"Perturbation of each {word}",
               f"How each perturbed {word}'s scores are changed.", choices=PERTURBATIONS,
               choice_text=PERTURBATION_TEXT),
        Option("p", method, "number", PARAMETERS["rankswap"][1], "Rank window p", "Rank-swap window in percent of "
               "the records (at least one rank).", low=0, high=100, low_open=True, unit="% of records",
               when="with perturbation='rankswap'", applies=param("p")),
        Option("noise_sd", method, "number", PARAMETERS["noise"][1], "Noise sd", f"Noise sd in percent of the "
               f"{word}'s sd.", low=0, low_open=True, unit=f"% of the {word}'s sd",
               when="with perturbation='noise'", applies=param("noise_sd")),
        Option("k", method, "integer", PARAMETERS["microagg"][1], "Group size k", "Microaggregation group size.",
               low=2, unit="records", when="with perturbation='microagg' or 'microagg_noise'", applies=param("k")),
    ]


def _fa():
    auto = lambda o, ctx: o["factors"] == "auto"  # noqa: E731
    return [
        Option("n_factors", "fa", "integer", lambda o, ctx: ctx.m, "Number of factors",
               "Default: as many as variables (zero factors are dropped).", low=1),
        Option("extraction", "fa", "choice", "minres", "Extraction", "How the factors are extracted.",
               choices=("minres", "ml", "principal")),
        Option("rotation", "fa", "choice", lambda o, ctx: "isolate_sensitive" if ctx.selective else "none",
               "Rotation", "isolate_sensitive: factor 1 alone carries sensitive variable 1, factors 1-2 variable "
               "2, ...", choices=tuple(ROTATION_TEXT), choice_text=ROTATION_TEXT,
               sensitive_only=("isolate_sensitive", "isolate_public")),
        Option("factors", "fa", "labels", lambda o, ctx: "auto" if ctx.selective else "all", "Factors to perturb",
               "'all', 'auto' (a criterion on the loadings of the sensitive variables) or 1-based factor numbers.",
               choices=("all", "auto"), sensitive_only=("auto",)),
        Option("criterion", "fa", "choice", "sensitive_threshold", "Criterion",
               "Which factors 'auto' perturbs.", choices=tuple(CRITERION_TEXT), choice_text=CRITERION_TEXT,
               when="with factors='auto'", applies=auto),
        Option("threshold", "fa", "number", 0.3, "Threshold t", "|loading| threshold of the criterion.", low=0,
               high=1, when="with factors='auto' and a threshold criterion",
               applies=lambda o, ctx: auto(o, ctx) and o["criterion"] != "sensitive_over_public"),
        *_perturbation("fa", "factor"),
        Option("residuals", "fa", "choice", lambda o, ctx: "keep" if ctx.selective else "swap_rows", "Residuals",
               "swap_rows (default in general protection): with fewer factors than variables, residuals kept "
               "unchanged let an intruder who knows the other variables invert the change exactly.",
               choices=RESIDUALS),
        Option("scores", "fa", "choice", "whitened", "Scores",
               "whitened keeps the covariance unbiased; regression is the papers' literal construction.",
               choices=("whitened", "regression")),
    ]


def _pca():
    return [
        Option("components", "pca", "labels", lambda o, ctx: "auto" if ctx.selective else "all",
               "Components to perturb", "'all', 'auto' (those loading on a sensitive variable) or 1-based "
               "component numbers.", choices=("all", "auto"), sensitive_only=("auto",)),
        Option("threshold", "pca", "number", 0.3, "Threshold t", "|loading| on a sensitive variable.", low=0, high=1,
               when="with components='auto'", applies=lambda o, ctx: o["components"] == "auto"),
        *_perturbation("pca", "component"),
        Option("residuals", "pca", "choice", "keep", "Residuals", "What happens to the part no component carries.",
               choices=RESIDUALS),
    ]


def _removal_threshold(o, ctx):
    if o["metric"] == DEFAULT_METRIC:
        return REMOVAL_THRESHOLD
    if o["removed"] == "auto":
        raise ValueError(f"metric={o['metric']!r} needs a threshold chosen on its scale: pass threshold=..., read off "
                         f"sdccore.removal_curve(data) (the Configure page's curve), or give removed=<number>.")
    return OMIT


SCHEMA = {
    "fa": _fa(),
    "pca": _pca(),
    "magg": [
        Option("k", "magg", "integer", 3, "Group size k",
               "MDAV groups of at least k records (sdcMicro's partition). Small k keeps more utility.", low=2,
               unit="records"),
        Option("noise_model", "magg", "choice", "published", "Noise",
               "published: N(0, lost covariance); exact: mean and covariance kept exactly; none: plain MDAV.",
               choices=("published", "exact", "none")),
    ],
    "rankswap": [
        Option("p", "rankswap", "number", 40.0, "Rank window p",
               "Each value is swapped with another whose rank differs by at most p % of the records. Default 40 %: "
               "smaller windows kept too many values within 5 % of the truth in some size band on the samples.",
               low=0, high=100, low_open=True, unit="% of records"),
    ],
    "noise": [
        Option("noise_cov", "noise", "number", 50.0, "Noise",
               "Correlated noise with covariance noise_cov % of the data's covariance.", low=0, low_open=True,
               unit="% of the covariance"),
    ],
    "ipso": [
        Option("classes", "ipso", "integer", 1, "Size classes",
               "The residuals are handed from record to record (a random cycle: no record keeps its own) within "
               "this many classes of similar predicted size, and exchanged where a value would fall below the "
               "bounds. Default 1: on the samples one class kept the regression best (CI overlap >= 0.99) and met "
               "the risk floors more often than 10 classes.", low=1, unit="classes"),
    ],
    "shuffle": [],
    "cfa": [
        Option("n_factors", "cfa", "integer", lambda o, ctx: None, "Number of factors",
               "Factors of the model whose law of the sensitive variables given the public ones is drawn from. "
               "Default: Kaiser's rule (eigenvalues of the correlation matrix above 1); as many as variables "
               "reproduces the sample's relations.", low=1),
        Option("extraction", "cfa", "choice", "minres", "Extraction", "How the factors are extracted.",
               choices=("minres", "ml", "principal")),
    ],
    "pca_remove": [
        Option("removed", "pca_remove", "removed", "auto", "Components removed",
               "'auto' (the utility stop rule) or the number of largest components to remove.", choices=("auto",),
               low=1),
        Option("metric", "pca_remove", "choice", DEFAULT_METRIC, "Utility metric",
               "The framework paper's four families: matrix norms, correlation, divergence, image quality.",
               choices=tuple(UTILITY_METRICS), choice_text=METRIC_TEXT),
        Option("threshold", "pca_remove", "number", _removal_threshold, "Threshold",
               "Components are removed while the metric still meets this (default 0.5 for 'correlation'; other "
               "metrics need one read off the removal curve)."),
    ],
}
for _m in SCHEMA:
    SCHEMA[_m] = tuple(SCHEMA[_m]) + tuple(o for o in _common(_m))

# the old spelling of each option: recipes written before version 3 use it
LEGACY_NAMES = {("fa", "noise"): "noise_sd", ("pca", "noise"): "noise_sd", ("magg", "noise"): "noise_model",
                ("noise", "noise"): "noise_cov"}
# what an option left out of a recipe written before these options existed meant
LEGACY_DEFAULTS = {"transform": "none", "bounds": "none", "rounding": "none"}


def option_schema(method):
    """The options of a protection method, in the order they are bound.

    Parameters
    ----------
    method : {'fa', 'pca', 'magg', 'rankswap', 'noise', 'pca_remove', 'ipso', 'shuffle', 'cfa'}

    Returns
    -------
    tuple of Option
        Each with its type, allowed values, default, when it applies and its help text.

    Examples
    --------
    >>> import sdccore
    >>> [o.name for o in sdccore.option_schema("rankswap")]
    ['p', 'exclude', 'transform', 'bounds', 'rounding', 'floors']
    """
    if not isinstance(method, str) or method not in SCHEMA:
        raise ValueError(f"method={method!r} is not supported; use one of {', '.join(map(repr, METHODS))}.")
    return SCHEMA[method]


def option(method, name):
    """One option of a method (KeyError if it has none of that name)."""
    for o in option_schema(method):
        if o.name == name:
            return o
    raise KeyError(name)


def translate_legacy(method, options, warn=True):
    """Options with old spellings renamed (a copy); a DeprecationWarning names the new one."""
    out = dict(options)
    for (m, old), new in LEGACY_NAMES.items():
        if m == method and old in out:
            if new in out:
                raise ValueError(f"options {old!r} and {new!r} are the same option ({old!r} is its old name); "
                                 f"pass only {new!r}.")
            if warn:
                warnings.warn(f"option {old!r} of method={method!r} is now called {new!r}; the old name still works "
                              f"but will be removed.", DeprecationWarning, stacklevel=4)
            out[new] = out.pop(old)
    return out


# ----------------------------------------------------------------------------- pass 1: static

def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _static_value(opt, value, selective):
    arg = opt.name
    if opt.kind == "choice":
        if not isinstance(value, str):
            raise TypeError(f"{arg} must be one of {', '.join(map(repr, opt.choices))}, not {type(value).__name__}.")
        if value not in opt.choices:
            raise ValueError(f"{arg}={value!r} is not supported; use one of {', '.join(map(repr, opt.choices))}.")
        _check_selective(opt, value, selective)
        return value
    if opt.kind in ("number", "integer"):
        return check_number(value, opt.text, low=opt.low, high=opt.high, integer=opt.kind == "integer",
                            low_open=opt.low_open)
    if opt.kind in ("labels", "removed"):
        if isinstance(value, str):
            if value not in opt.choices:
                raise ValueError(f"{arg}={value!r} is not supported; use {' or '.join(map(repr, opt.choices))} or "
                                 f"{'a list of 1-based numbers' if opt.kind == 'labels' else 'a number'}.")
            _check_selective(opt, value, selective)
            return value
        if opt.kind == "removed":
            return check_number(value, opt.text, low=opt.low, integer=True)
        return _labels(value, arg, "factor" if opt.method == "fa" else "component")
    if opt.kind in ("names", "transform"):
        if value is None and opt.kind == "names":
            return None
        if isinstance(value, str):
            if opt.kind == "transform":
                if value not in opt.choices:
                    raise ValueError(f"transform={value!r} is not supported; use 'none', 'auto' or a list of column "
                                     f"names.")
                return value
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
            raise TypeError(f"{arg} must be " + ("'auto', 'none' or " if opt.kind == "transform" else "")
                            + "a list of column names.")
        return list(value)
    if opt.kind == "floors":
        from ._safety import RiskFloors

        return RiskFloors.from_value(value)
    raise AssertionError(opt.kind)  # pragma: no cover -- the table's kinds are listed above


def _check_selective(opt, value, selective):
    if value in opt.sensitive_only and not selective:
        if opt.kind == "labels":
            raise ValueError(f"{opt.name}='auto' chooses what to perturb from the sensitive variables; pass "
                             f"sensitive=[...] or {opt.name}='all'.")
        raise ValueError(f"{opt.name}={value!r} needs sensitive variables; pass sensitive=[...] or another {opt.name}.")


def _labels(value, arg, word):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, (list, tuple)) or not value:
        raise TypeError(f"{arg} must be 'all', 'auto' or a non-empty list of 1-based {word} numbers, e.g. {arg}=[1, 2].")
    for v in value:
        if not _is_number(v) or not np.isfinite(float(v)) or int(v) != v:
            raise TypeError(f"{arg} must list whole {word} numbers, e.g. {arg}=[1, 2].")
    labs = [int(v) for v in value]
    if min(labs) < 1:
        raise ValueError(f"{arg} names {word}(s) {[b for b in labs if b < 1]}; {word}s are numbered from 1.")
    if len(set(labs)) != len(labs):
        raise ValueError(f"{arg} lists a {word} twice; list each once.")
    return sorted(labs)


def bind_static(method, options, selective, warn=True):
    """Pass 1: the effective options without looking at the data (defaults that need the
    data, such as n_factors, are left for ``bind_data``)."""
    schema = option_schema(method)
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict of option names and values, not {type(options).__name__}.")
    options = translate_legacy(method, options, warn)
    names = [o.name for o in schema]
    unknown = sorted(k for k in options if k not in names)
    if unknown:
        raise ValueError(f"option(s) {', '.join(map(repr, unknown))} do not apply to method={method!r}; its options "
                         f"are {', '.join(sorted(names))}.")
    ctx = Context(bool(selective))
    bound = {}
    for opt in schema:
        if opt.applies is not None and not opt.applies(bound, ctx):
            if opt.name in options:
                raise ValueError(f"option {opt.name!r} does not apply here: it applies only {opt.when}.")
            continue
        if opt.name in options:
            bound[opt.name] = _static_value(opt, options[opt.name], bool(selective))
            continue
        value = opt.default_for(bound, ctx)
        if value is OMIT:
            continue
        if value is None and opt.kind != "floors":  # exclude; n_factors (its default needs the data)
            bound[opt.name] = None
        else:
            bound[opt.name] = _static_value(opt, value, bool(selective))
    return bound


# ----------------------------------------------------------------------------- pass 2: data

def min_swap_percent(n):
    """The smallest rank-swap window that swaps anything on ``n`` records.

    The window is floor(p n / 100) ranks and must be at least one.

    Parameters
    ----------
    n : int
        Number of records.

    Returns
    -------
    float
        p in percent.

    Examples
    --------
    >>> import sdccore
    >>> sdccore.min_swap_percent(834)
    0.11990407673860912
    """
    return 100.0 / n


def bind_data(method, bound, ctx):
    """Pass 2: the limits that depend on the data; returns the completed options (a copy)."""
    o = dict(bound)
    n, m = ctx.n, ctx.m
    if "p" in o:
        p = o["p"]
        if np.floor(p * n / 100.0) < 1:
            raise ValueError(f"p={p:g} on {n} records gives a rank-swap window of {p * n / 100:.2g} rank(s), so no "
                             f"value would be swapped and the data would be released unchanged; use p of at least "
                             f"{min_swap_percent(n):.3g} (one rank).")
    if method == "magg" and n < 4:
        raise ValueError(f"microaggregation needs at least 4 records (two groups of at least 2); the data have {n}. "
                         f"Use a file with more records.")
    if "k" in o and o["k"] > n // 2:
        raise ValueError(f"k={o['k']} is larger than half the {n} records; choose k between 2 and {max(2, n // 2)}.")
    if method == "fa":
        top = ctx.m_total or m
        if o["n_factors"] is None:
            o["n_factors"] = m
        elif o["n_factors"] > top:
            raise ValueError(f"n_factors={o['n_factors']} is more than the {top} variables; choose 1 to {top}.")
    for key, word in (("factors", "factor"), ("components", "component")):
        if isinstance(o.get(key), list):
            bad = [lab for lab in o[key] if lab > m]
            if bad:
                raise ValueError(f"{key} names {word}(s) {bad}, but there are {m} ({word}s are numbered 1 to {m}).")
    if method in CONDITIONAL and not ctx.selective:
        raise ValueError(f"method={method!r} keeps the public variables and redraws the sensitive ones given them; "
                         f"pass sensitive=[...] (for general protection use fa, pca or magg).")
    if method == "cfa" and o.get("n_factors") is not None and m is not None and o["n_factors"] > m:
        raise ValueError(f"n_factors={o['n_factors']} is more than the {m} variables; choose 1 to {m}.")
    if method == "pca_remove":
        if m < 2:
            raise ValueError("removing principal components needs at least 2 variables (never all components are "
                             "removed).")
        if o["removed"] != "auto" and o["removed"] > m - 1:
            raise ValueError(f"removed={o['removed']} would remove all {m} components; choose 1 to {m - 1}.")
        if o["metric"] == "ssim" and ssim_window(n, m) is None:
            raise ValueError("metric='ssim' needs at least 3 records and 3 variables (the smallest image window); "
                             "choose another metric.")
    return o
