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

import numpy as np

from .._methods import hook, method_info, methods, on_change, steps
from .._methods._base import OMIT, Context, Option  # noqa: F401  (Option and Context re-exported)
from .._core.validation import check_number
from .._core.tail import TAILS

__all__ = ["Option", "option_schema", "CONDITIONAL_METHODS"]

METHODS = methods()  # the built-in methods (the registry, _methods, is the one list; ask it for the live one)
CONDITIONAL = methods(conditional=True)  # keep the public variables, redraw the sensitive ones given them
CONDITIONAL_METHODS = CONDITIONAL

TRANSFORMS = ("none", "auto")
BOUNDS = ("plausible", "sign", "observed", "tail", "none")
ROUNDINGS = ("original", "none")


# ----------------------------------------------------------------------------- the table

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
        Option("tail", method, "choice", "none", "Largest records",
               "none: the largest values as the method leaves them. aggregate: each protected variable's largest "
               "released values (max(5, 1 %) of the records, at most 100, a few more where their mean would land "
               "near a record's own value) replaced by their mean, the total kept: the largest records protected on "
               "purpose, not by the luck of a seed; it moves regressions on the raw scale, whose points of highest "
               "leverage they are (a comparison tries it where nothing else can be offered).", choices=TAILS,
               choice_text={"none": "as the method leaves them", "aggregate": "largest values replaced by their mean"}),
        Option("floors", method, "floors", None, "Risk floors",
               "A dict of RiskFloors fields (min_perturbed_share, max_abs_cor, tolerance, max_close_share, bands, "
               "top_records, hold_all_intruders); omitted fields keep their defaults."),
        *([Option("strata", method, "names", OMIT, "Strata",
                  "Columns whose groups (e.g. region x size class) are each protected on their own; released "
                  "unchanged.")] if method_info(method).strata else []),
        Option("weights", method, "column", OMIT, "Sampling weights",
               "A numeric column of positive sampling weights: released unchanged, and the weighted means kept "
               "(a constant shift per column; methods that release each column's own values cannot keep them)."),
        Option("keys", method, "names", OMIT, "Key variables",
               "Categorical key variables (quasi-identifiers: region, sex, age ...), never perturbed as data: made "
               "k-anonymous by local suppression (sdccore.local_suppression: every record whose keys fewer than "
               "k_anonymity records show gets a blank of its own, the least important key first; a blank matches every value)."),
        Option("k_anonymity", method, "integer", 3, "k-anonymity",
               "Every combination of key values shown by at least k records after the suppression.", low=2,
               unit="records", when="with key variables", applies=lambda o, ctx: o.get("keys") is not None),
        Option("household", method, "column", OMIT, "Household id",
               "The household id: released unchanged; a key that is one value per household (a household variable "
               "such as the water source) blanked for one member is blanked for every member, who would show it.",
               when="with key variables", applies=lambda o, ctx: o.get("keys") is not None),
        Option("household_ids", method, "choice", "drop", "Household ids",
               "drop: no household link released (the column left empty): the safe default, since released ids "
               "show each household's make-up (its size and its members' keys), which few households share; "
               "new: each household given a new random number (shuffle the rows as make_release does, or their "
               "order gives the old ids back); kept: as they are. With new or kept the household size counts as a "
               "key of the suppression, and households whose make-up no other household shares break a floor.",
               choices=("drop", "new", "kept"), when="with a household id",
               applies=lambda o, ctx: o.get("household") is not None),
        Option("recode", method, "recodings", OMIT, "Recodings of the keys",
               "A dict key variable -> its global recoding (sdccore.Recoding or its dict: age bands, merged rare "
               "categories, a top code), applied before the suppression; sdccore.suggest_recodings shows what each "
               "saves and loses.", when="with key variables", applies=lambda o, ctx: o.get("keys") is not None),
        Option("pram", method, "names", OMIT, "PRAM",
               "Categorical columns (keys or columns set apart) post-randomised with an invariant transition "
               "matrix (sdccore.pram, as sdcMicro's pram): the expected count of every category kept, no single "
               "category to be trusted; before the suppression."),
        Option("pram_pd", method, "number", 0.8, "PRAM: least chance to keep a category",
               "Each category's chance to stay unchanged before the invariance step is drawn in [pram_pd, 1] "
               "(sdcMicro's pd).", low=0, high=1, low_open=True, when="with PRAM",
               applies=lambda o, ctx: o.get("pram") is not None),
        Option("pram_alpha", method, "number", 0.5, "PRAM: share of the randomisation",
               "The invariant matrix mixed with keeping the value: alpha R + (1 - alpha) I (sdcMicro's alpha).",
               low=0, high=1, when="with PRAM", applies=lambda o, ctx: o.get("pram") is not None),
    ]


def _schema(method):
    """A method's options in the order they are bound: its own (from its module in the
    registry), then the common ones."""
    return tuple(steps(method).options(method)) + tuple(_common(method))


_CACHE = {}
on_change(_CACHE.clear)  # a method registered or removed: its schema is read again


# the old spelling of each option: recipes written before version 3 use it
LEGACY_NAMES = {("fa", "noise"): "noise_sd", ("pca", "noise"): "noise_sd", ("magg", "noise"): "noise_model",
                ("noise", "noise"): "noise_cov"}
# what an option left out of a recipe written before these options existed meant
LEGACY_DEFAULTS = {"transform": "none", "bounds": "none", "rounding": "none"}
# an option a method gained in recipe format v: what a recipe of an earlier format, which
# lacks it, meant ((method, option) -> value)
LEGACY_BEFORE = {4: {("ipso", "missing_rows"): "filled"}, 5: {("ipso", "top_band"): "guard"},
                 6: {("ipso", "condition"): "public"}, 8: {("rankswap", "exchange"): "pairs"},
                 9: {("ipso", "margin"): "fixed", ("qexchange", "margin"): "fixed"}}


def _evaluate_options():
    from .._risk.linkage import ID_REFERENCES

    f = "evaluate"
    return (
        Option("linkage", f, "names", None, "Linkage variables",
               "Variables the record-linkage intruder (DBRL) links on: the sensitive ones in selective protection, "
               "all in general protection."),
        Option("id_reference", f, "choice", None, "Interval-disclosure intruder",
               "Whose interval is checked (ID_REFERENCE_TEXT explains each): 'own' in selective protection, "
               "'linked_all' in general protection, 'linked' with linkage.", choices=tuple(ID_REFERENCES)),
        Option("pil_statistics", f, "choice", 7, "PIL statistics",
               "7: means, variances, covariances, correlations, quantiles, densities and the distance to the "
               "original; 5: the published five.", choices=(7, 5)),
        Option("ps_order", f, "integer", 2, "Propensity-score order",
               "Order of the polynomial terms of the propensity-score model.", low=2, high=3),
        Option("floors", f, "floors", None, "Risk floors", "A dict of RiskFloors fields, as for protect."),
        Option("weights", f, "column", None, "Sampling weights",
               "A sampling-weight column in both files: left out of the measures; weighted means and sds are "
               "compared in details['weighted']."),
    )


def _compare_options():
    f = "compare"
    return (
        Option("reps", f, "integer", 30, "Repetitions", "Runs per configuration (each its own seed).", low=1,
               unit="runs"),
        Option("evaluate_options", f, "options", None, "Evaluation options",
               "A dict of evaluate's options (option_schema('evaluate')) for every run."),
        Option("n_jobs", f, "integer", None, "Processes",
               "Processes running the runs side by side (default: the machine's cores; SDCCORE_JOBS overrides).",
               low=1),
        Option("models", f, "formulas", None, "Regressions",
               "Linear regressions fitted on the original and every release ('Y ~ X1 + X2')."),
        Option("released", f, "flag", True, "Check the run released",
               "Also protect each configuration that met the floors over the runs with the master seed itself (the "
               "run a release with that seed publishes) and hold it to the floors: suggest offers none whose run "
               "released breaks one. True by default; search's comparisons switch it off."),
    )


def _search_options():
    f = "search"
    return (
        Option("reps", f, "integer", 10, "Repetitions", "Runs per candidate at most.", low=2, unit="runs"),
        Option("budget", f, "integer", 300, "Budget", "protect+evaluate runs in all.", low=1, unit="runs"),
        Option("base", f, "options", None, "Base configuration",
               "Options every candidate shares (protect's options of the method)."),
    )


def _floors_options():
    from .._risk.settings import RiskFloors

    d, f = RiskFloors(), "floors"
    return (
        Option("min_perturbed_share", f, "number", d.min_perturbed_share, "Perturbed share at least",
               "The least share of each sensitive variable's variance the protection must change.", low=0, high=1,
               unit="%", scale=100),
        Option("max_abs_cor", f, "number", d.max_abs_cor, "|cor(x, x')| at most",
               "The largest correlation of a variable with its released self (in selective protection: of the part "
               "the public variables do not explain).", low=0, high=1),
        Option("tolerance", f, "number", d.tolerance, "Tolerance",
               "A record is close when its released value lies within this share of its true value.", low=0,
               high=1, low_open=True, unit="% of the value", scale=100),
        Option("max_close_share", f, "number", d.max_close_share, "Records within it at most",
               "The most records any intruder may put within the tolerance beyond what it already knew (the "
               "prior), overall, in every size band and among the largest records.", low=0, high=1, unit="%",
               scale=100),
        Option("bands", f, "integer", d.bands, "Size bands",
               "Quantile bands of each variable's original values; every band must meet the floors.", low=1,
               high=100),
        Option("top_records", f, "integer", d.top_records, "Largest records at least",
               "The least number of records in the band of the largest 1 %.", low=1, high=100, unit="records"),
        Option("hold_all_intruders", f, "flag", d.hold_all_intruders,
               "General protection: hold every intruder to the floors (the default; unticked is a lowering that "
               "needs a reason)",
               "By default general protection holds every intruder to the floors in every size band, as selective "
               "protection does. Unticked, the regression, assignment, residual, model and correction intruders "
               "and the linked record band by band are only reported: a lowering, released only with a stated "
               "reason (held, they refuse general FA and PCA on Tarragona in every seed tried, at 2 or 3 of its 9 "
               "largest firms).", choices=(0, 1)),
    )


FUNCTIONS = {"evaluate": _evaluate_options, "compare": _compare_options, "search": _search_options,
             "floors": _floors_options}


def option_schema(method):
    """The options of a protection method (or of ``evaluate``, ``compare``, ``search``).

    Parameters
    ----------
    method : str
        A protection method ({'fa', 'pca', 'magg', 'rankswap', 'noise', 'pca_remove',
        'ipso', 'shuffle', 'cfa'} and any registered one): its options in the order they
        are bound; 'evaluate', 'compare' or 'search': the options those functions take;
        'floors': the fields of ``RiskFloors`` (the ``floors`` option of each).

    Returns
    -------
    tuple of Option
        Each with its type, allowed values, default, when it applies and its help text.

    Examples
    --------
    >>> import sdccore
    >>> [o.name for o in sdccore.option_schema("rankswap")][:8]
    ['p', 'exchange', 'exclude', 'transform', 'bounds', 'rounding', 'tail', 'floors']
    """
    if isinstance(method, str) and method in FUNCTIONS:
        return FUNCTIONS[method]()
    if not isinstance(method, str) or method not in methods():
        raise ValueError(f"method={method!r} is not supported; use one of {', '.join(map(repr, methods()))}.")
    if method not in _CACHE:
        _CACHE[method] = _schema(method)
    return _CACHE[method]


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
        return _labels(value, arg, opt.name[:-1])  # 'factors' -> factor, 'components' -> component
    if opt.kind == "column":
        if value is None:
            return None
        if not isinstance(value, str):
            raise TypeError(f"{arg} must be the name of a column (a string), e.g. {arg}='weight'; not "
                            f"{type(value).__name__}.")
        return value
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
    if opt.kind in _STRUCTURED:
        return _STRUCTURED[opt.kind](value, arg)
    raise AssertionError(opt.kind)  # pragma: no cover -- the table's kinds are listed above


def _recodings(value, arg):
    """A dict key -> Recoding (or its dict), as JSON-safe dicts (a recipe's form)."""
    from .._keys.recoding import Recoding

    if not isinstance(value, dict) or not all(isinstance(c, str) for c in value):
        raise TypeError(f"{arg} must be a dict of key variable -> recoding, e.g. {arg}={{'age': "
                        f"{{'kind': 'bands', 'breaks': [0, 20, 40, 60, 'inf']}}}}.")
    out = {}
    for c, r in value.items():
        try:
            out[c] = (r if isinstance(r, Recoding) else Recoding.from_dict(r)).to_dict()
        except (TypeError, ValueError) as e:
            raise type(e)(f"{arg}[{c!r}]: {e}") from None
    return out


def _floors(value, arg):
    from .._risk.settings import RiskFloors

    return RiskFloors.from_value(value)


_STRUCTURED = {"recodings": _recodings, "floors": _floors}  # option kinds whose value is a structure


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
    if method_info(method).conditional and not ctx.selective:
        raise ValueError(f"method={method!r} keeps the public variables and redraws the sensitive ones given them; "
                         f"pass sensitive=[...] (for general protection use fa, pca or magg).")
    check = hook(method, "check")  # the method's own limits (its module in the registry)
    if check is not None:
        check(method, o, ctx)
    if "k" in o and o["k"] > n // 2:
        raise ValueError(f"k={o['k']} is larger than half the {n} records; choose k between 2 and {max(2, n // 2)}.")
    return o
