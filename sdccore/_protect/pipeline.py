"""``protect`` and ``decompose``: the public entry points of the protection engine."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from .._core import plausible as pl
from .._core.missing import prior_completion
from .._methods import hook, method_info, methods, steps
from .._methods._base import Perturbed as _Perturbed, Plan as _Plan, planned_share as _planned_share  # noqa: F401
from .options import METHODS, Context, bind_data, bind_static, min_swap_percent
from .._risk.intruders import change_structure
from .prepare import _dependency_report, _prepare
from .._core.tail import aggregate as aggregate_tail, words as tail_words
from .results import Decomposition, ProtectionResult  # noqa: F401  (re-exported)
from .._risk.floors import RiskFloors, RiskProfile, UnsafeReleaseError, risk_profile  # noqa: F401  (RiskProfile re-exported)
from .._core.validation import check_choice, numeric_columns, resolve_seed
from .keystep import household_floor as _household_floor, key_columns as _key_columns, keys_step as _keys_step

__all__ = ["protect", "decompose", "ProtectionResult", "Decomposition", "METHODS", "min_swap_percent"]

DETERMINISTIC = methods(deterministic=True)  # the built-in methods with the same release for every seed
DECOMPOSING = methods(decomposes=True)  # the built-in methods with a factorization (loadings, a plan)


# ----------------------------------------------------------------------------- plans

def _plan(prep, method, o):
    """Step 3 of the pipeline (decomposing methods): the factorization, the rotation and what to perturb."""
    return steps(method).plan(prep, method, o)


COMMON = ("exclude", "transform", "bounds", "rounding", "floors")


def _effective(method, prep, o, seed):
    """The options a recipe records: every effective option, the log-scale columns by name (so that a recipe
    reproduces them even if the 'auto' rule changes) and the seed."""
    eff = {"method": method, "sensitive": list(prep.sensitive_names) if prep.sensitive_names else None}
    if o.get("exclude"):
        eff["exclude"] = list(o["exclude"])
    eff.update((k, v) for k, v in o.items() if k not in COMMON)
    eff["transform"] = [prep.numeric[j] for j in prep.log_cols]
    eff["bounds"], eff["rounding"] = o["bounds"], o["rounding"]
    eff["floors"] = o["floors"].to_dict()
    if seed is not None:
        eff["seed"] = int(seed)
    return eff


def _settings(o, prep, method):
    """What the release publishes of its construction: the method's options, a conditional method's codes."""
    out = {k: v for k, v in o.items() if k not in COMMON}
    if method_info(method).conditional and o.get("condition", "released") == "released":
        from .._methods._base import indicators
        out["codes"] = indicators(prep.coded, prep.numeric, len(prep.keep) - len(prep.sens))[0]
    return out


def _assemble(data, numeric, Xp, as_int=()):
    """The released frame: data's index and column order, numeric columns from Xp; the
    columns in ``as_int`` (integer in the original, rounded to whole numbers) as int64."""
    num = pd.DataFrame(Xp, index=data.index, columns=numeric, copy=False)
    for c in as_int:
        num[c] = num[c].astype(np.int64)
    if len(numeric) == data.shape[1] and list(data.columns) == list(numeric):
        return num
    rest = data[[c for c in data.columns if c not in set(numeric)]]
    return pd.concat([num, rest], axis=1)[list(data.columns)]


def _below_floor(prep, share, floors):
    return tuple((prep.numeric[j], s) for j, s in zip(prep.check, share)
                 if s is not None and s < floors.min_perturbed_share)


# ----------------------------------------------------------------------------- public

def _bind(data, method, sensitive, options, methods=None, seed=None):
    """Steps 1-2 of the pipeline: options bound without the data (static pass), the data
    prepared (missing cells completed from the seed's "impute" stream), then the options
    bound to it (data-bound pass)."""
    method = check_choice(method, globals()["methods"]() if methods is None else methods, "method")
    static = bind_static(method, options, selective=bool(sensitive))
    _check_design(data, method, sensitive, static.pop("strata", None), static.pop("weights", None))
    exclude = static["exclude"]
    if static.get("keys") or static.get("pram"):  # keys and PRAM'd codes: never protected as measurements
        exclude = list(dict.fromkeys(list(exclude or []) + _key_columns(data, static, sensitive)))
    prep = _prepare(data, sensitive, exclude, static["transform"], seed)
    ctx = Context(bool(prep.sensitive_names), prep.X.shape[0], len(prep.keep), len(prep.numeric))
    return method, prep, bind_data(method, static, ctx)


def _check_design(data, method, sensitive, strata, weights):
    """The survey design options (strata, sampling weights) checked against the data (the
    schema has checked their types): ``decompose`` accepts what ``protect`` accepts."""
    from .strata import check_strata, check_weights
    from .._core.validation import check_dataframe

    if strata is not None:
        check_strata(check_dataframe(data), strata, method, sensitive)
    if weights is not None:
        check_weights(check_dataframe(data), weights, protect=True)


def decompose(data, method="fa", *, sensitive=None, **options):
    """The loadings and perturbed factors ``protect`` would use, without perturbing.

    Cheap after the correlation matrix (everything else is m x m work), so the dashboard can
    redraw loading plots on every widget change.

    Parameters
    ----------
    data : DataFrame
        As for ``protect``.
    method : {'fa', 'pca', 'pca_remove'}
    sensitive : list of column names, optional
        As for ``protect``.
    **options
        The options of ``protect`` for the method (see ``option_schema(method)``); ``seed``
        is accepted and ignored, ``bounds`` and ``rounding`` change nothing here.

    Returns
    -------
    Decomposition
        For pca_remove, ``perturbed`` are the removed components (the stop rule's choice
        with removed='auto', which needs one pass over the data per component tried) and
        ``perturbed_share`` the share of each variable's variance removed.

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.decompose(sdccore.load_dataset("tarragona"), "pca", sensitive=["SALES"])
    >>> d.loadings.shape
    (13, 13)
    """
    options = dict(options)
    seed = options.pop("seed", None)
    method, prep, o = _bind(data, method, sensitive, options, methods(decomposes=True),
                            seed=seed if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) else None)
    plan = _plan(prep, method, o)
    names = [prep.numeric[j] for j in prep.keep]
    prefix = hook(method, "loadings_prefix")(method)
    cols = [f"{prefix}{i + 1}" for i in range(plan.dec.L.shape[1])]
    load = pd.DataFrame(plan.dec.loadings, index=names, columns=cols)
    var = hook(method, "variance_share")(plan, method, len(prep.keep))
    share = (plan.dec.loadings[:, plan.sel] ** 2).sum(axis=1)
    return Decomposition(
        loadings=load,
        perturbed=tuple(s + 1 for s in plan.sel),
        variance=pd.Series(var, index=cols, name="variance share"),
        perturbed_share=pd.Series(np.clip(share, 0, 1), index=names, name="perturbed share"),
        dependencies=_dependency_report(prep),
        notes=prep.notes + plan.notes,
        options=_effective(method, prep, o, None),
        below_floor=_below_floor(prep, _planned_share(plan, prep), o["floors"]),
    )




def protect(data, method="fa", *, sensitive=None, rng=None, allow_unsafe=None, **options):
    """Protect the numeric columns of ``data``; refuse a release that breaks a risk floor.

    The pipeline: bind the options (``option_schema(method)``: types and choices, then the
    limits that depend on the data), prepare the data (transform, exact linear dependencies
    set aside), plan (factorization, rotation, which factors to perturb), perturb, assemble
    (rebuild, bounds, rounding) and check every risk floor.

    Parameters
    ----------
    data : DataFrame
        Records in rows.  Numeric columns are protected; other columns and those listed in
        ``exclude=[...]`` pass through unchanged.  The caller's frame is never modified.
    method : {'fa', 'pca', 'magg', 'rankswap', 'noise', 'pca_remove', 'ipso', 'shuffle', 'cfa'}
    sensitive : list of column names, optional
        None protects every numeric column (general protection).  Otherwise selective
        protection: fa rotates to isolate the sensitive variables and perturbs the factors
        that carry them; pca perturbs the components that load on them; magg aggregates
        only them; rankswap and noise touch only them; pca_remove changes every variable
        and the floors check the sensitive ones; ipso, shuffle and cfa (selective only)
        keep the public variables and redraw the sensitive ones given them
        (``sdccore._methods.conditional_kernel``: regression-preserving, data shuffling, conditional FA).
    rng : None, int or numpy.random.Generator
        The seed actually used is recorded in ``result.options['seed']``; ``seed=`` is
        accepted as an alias so that ``protect(data, **result.options)`` reproduces a run.
    allow_unsafe : str, optional
        By default a result that breaks a risk floor (``floors``, see ``RiskFloors``) raises
        ``UnsafeReleaseError`` naming the variable, the floor and the fix.  A reason given
        here returns it anyway, with the reason in ``result.unsafe_reason``.  Floors set
        below the defaults (``RiskFloors.lowered``) need a reason too: without one the
        release is refused; with one its notes name the lowered floors.
    **options
        The method's options: ``option_schema(method)`` lists each with its type, allowed
        values, default, when it applies and what it does.  In short: every method takes
        exclude, transform, bounds, rounding and floors; fa: n_factors, extraction,
        rotation, factors, criterion, threshold, perturbation (with p, noise_sd or k),
        residuals, scores; pca: components, threshold, perturbation (with p, noise_sd or
        k), residuals; magg: k, noise_model; rankswap: p (default 40 %); noise: noise_cov;
        pca_remove: removed, metric, threshold; ipso: classes; cfa: n_factors, extraction.  The old name ``noise`` (for noise_sd,
        noise_model or noise_cov) still works with a DeprecationWarning.  Survey design
        (any method unless said): ``strata=[columns]`` protects each group on its own
        (fa, pca, magg; group means kept, floors checked within groups, small groups
        refused), ``weights=column`` keeps the weighted means instead of the unweighted
        ones; both columns are released unchanged (``sdccore._protect.strata`` says what is exact).

    Returns
    -------
    ProtectionResult

    Raises
    ------
    TypeError, ValueError
        An option of the wrong type or out of range, naming the option and the fix.
    UnsafeReleaseError (a ValueError)
        When the release breaks a floor, or the floors are set below the defaults, and
        ``allow_unsafe`` is not given.

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> res = sdccore.protect(df, "ipso", sensitive=["SALES"], rng=12345)
    >>> res.options["seed"], res.risk.ok, res.data.shape
    (12345, True, (834, 13))

    General protection of every variable is refused on Tarragona: an intruder who knows the
    method takes back some of the 9 largest firms.  With a stated reason (a file that is not
    published) it is released, and without clipping at zero and rounding FA keeps the means
    exactly:

    >>> exact = sdccore.protect(df, "fa", rng=12345, bounds="none", rounding="none",
    ...                         allow_unsafe="internal file, not published")
    >>> exact.risk.ok, bool(abs(exact.data["SALES"].mean() - df["SALES"].mean()) < 1e-9 * df["SALES"].std())
    (False, True)
    """
    if allow_unsafe is not None and (not isinstance(allow_unsafe, str) or not allow_unsafe.strip()):
        raise TypeError("allow_unsafe must be a non-empty reason, e.g. allow_unsafe='internal test file, not published'.")
    res = _protect(data, method, sensitive, rng, options)
    _check_released(data, res)
    lowered = res.risk.floors.lowered_text()
    if lowered:
        if allow_unsafe is None:
            raise UnsafeReleaseError(
                f"release refused: the {lowered}. A release under floors below the defaults needs a stated reason: "
                f"pass allow_unsafe='reason' (on the command line --allow-unsafe \"reason\"), or keep the default "
                f"floors.", risk=res.risk)
        res = replace(res, unsafe_reason=allow_unsafe.strip(),
                      notes=res.notes + (f"{lowered}; released because: {allow_unsafe.strip()}",))
    if not res.risk.ok:
        if allow_unsafe is None:
            raise UnsafeReleaseError(
                "release refused, it breaks the risk floors: " + res.risk.message()
                + ". Change the configuration, or pass allow_unsafe='reason' for a file that is not published.",
                risk=res.risk)
        res = replace(res, unsafe_reason=allow_unsafe.strip(),
                      notes=res.notes + (f"released despite broken risk floors ({allow_unsafe.strip()}): "
                                         + res.risk.message(),))
    return res


def _check_released(data, res):
    """Refusals no reason overrides: a checked variable released unchanged in every record
    (nothing was perturbed: a swap window below one rank, values at float resolution), and
    non-finite values in a protected column."""
    names = list(res.risk.variables.index)
    same = [c for c in names if np.array_equal(res.data[c].to_numpy(dtype=float), data[c].to_numpy(dtype=float),
                                               equal_nan=True)]
    if same:
        floors = f"it breaks the risk floors: {res.risk.message()}. " if not res.risk.ok else ""
        raise UnsafeReleaseError(
            f"release refused, {floors}{', '.join(map(str, same))} would be released unchanged in every record "
            f"(nothing was perturbed), which no allow_unsafe reason overrides. Use another method or stronger options "
            f"(a larger rank-swap window, other factors, more noise).", risk=res.risk)
    blanks = set(res.options.get("keys") or ()) | set(res.options.get("pram") or ())  # changed on purpose
    changed = [c for c in numeric_columns(res.data) if c not in blanks and not res.data[c].equals(data[c])]
    # a missing cell of the original stays missing; any other non-finite value is a failure
    bad = [c for c in changed if (~np.isfinite(res.data[c].to_numpy(dtype=float))
                                  & ~np.isnan(data[c].to_numpy(dtype=float))).any()]
    if bad:
        raise ValueError(f"protection produced values that are not finite in {', '.join(map(str, bad))}; nothing is "
                         f"released. Rescale those columns (e.g. to thousands or millions) and try again.")


def _protect(data, method, sensitive, rng, options):
    """protect without the gate: the result carries its risk profile (compare and search
    record it per run and rank only configurations that meet the floors).

    The pipeline: bind the options and prepare the data (``_bind``), plan the
    factorization, rotation and selection (``_plan``), perturb (``_perturb``), assemble
    the release on the original scale (``_finish``, ``_assemble``) and measure its risk."""
    options = dict(options)
    if "seed" in options:
        if rng is not None:
            raise ValueError("pass either rng= or seed=, not both.")
        rng = options.pop("seed")
    seed = resolve_seed(rng)
    strata = options.pop("strata", None)
    if strata is not None and options.get("keys"):  # a stratum column is never blanked
        both = sorted(set([strata] if isinstance(strata, str) else strata) & set(options["keys"]))
        if both:
            raise ValueError(f"strata and keys share {', '.join(both)}: a stratum column is released unchanged and "
                             f"never blanked; leave it out of the keys (each group is made k-anonymous on its own).")
    if strata is not None:  # each group protected on its own (_strata module docstring)
        from .strata import protect_strata

        out, risk, plaus, notes, eff = protect_strata(data, method, sensitive, seed, options, strata, _protect)
        return ProtectionResult(out, None, (), eff, {}, notes, risk, plaus)
    from .strata import check_weights

    wname, w = check_weights(data, options.pop("weights", None), protect=True)
    if wname is not None:
        options["exclude"] = list(dict.fromkeys(list(options.get("exclude") or []) + [wname]))
    given = dict(options)  # what a replay of the construction binds again (the replay intruder)
    method, prep, o = _bind(data, method, sensitive, options, seed=seed)
    if w is not None:
        prep = replace(prep, weights=w)
    prep = _with_codes(prep, o)
    gen = np.random.default_rng(seed)
    info = method_info(method)
    plan = _plan(prep, method, o) if info.decomposes else None
    step = _perturb(prep, plan, method, o, gen)
    # rank swapping and shuffling release a permutation of each column's observed values:
    # nothing to shift
    tails = {}
    Xp, clipped, dec, as_int = _finish(prep, step.X, len(prep.keep) == prep.X.shape[1], o, not info.keeps_values, tails)
    observed = None
    if prep.missing is not None:
        observed = ~prep.missing
        as_int = [c for c in as_int if not prep.missing[:, prep.numeric.index(c)].any()]
        released = Xp.copy()
        released[prep.missing] = np.nan
    else:
        released = Xp
    out = _assemble(prep.data, prep.numeric, released, as_int)
    out, key_notes, key_codes = _keys_step(prep.data, out, o, seed)  # recoded, post-randomised, suppressed
    window = hook(method, "risk_window")
    risk = risk_profile(prep.X0, Xp, prep.numeric, prep.check, floors=o["floors"], planned_share=step.planned,
                        link_on=_link_columns(prep), structure=change_structure(prep, step.basis),
                        observed=observed, window=window(method, o) if window else None, method=method,
                        keys=key_codes, replays=_replays(Xp, as_int, prep, method, sensitive, given),
                        prior_original=prior_completion(prep.X0, prep.missing),
                        settings=_settings(o, prep, method))
    plaus = pl.report(prep.numeric, prep.X0, Xp, {prep.numeric[j] for j in prep.log_cols}, clipped, dec, o["bounds"])
    risk = _household_floor(risk, o, key_codes, data)
    own = hook(method, "release_check")  # the method's own check of the finished release (its module)
    if own is not None:
        risk = own(method, o, prep, plaus, risk)
    else:  # a heap at a bound (general PCA of grunfeld: 47 of 220 investments at 0) is no release
        risk = pl.with_violations(risk, pl.clipping_violations(plaus, [prep.numeric[j] for j in prep.check],
                                                               o["bounds"], len(prep.X0), pl.CLIP_FIX))
    notes = list(prep.notes) + list(step.notes) + key_notes + [tail_words(prep.numeric[c], *t) for c, t in tails.items()]
    for c, k in clipped.items():
        if k:
            notes.append(f"{prep.numeric[c]}: {k} value(s) outside the original's "
                         f"{'range' if o['bounds'] == 'observed' else 'sign'} were clipped")
    eff = _effective(method, prep, o, seed)
    if wname is not None:
        eff["weights"] = wname
        notes.append(f"sampling weights {wname!r}: released unchanged; "
                     + ("the weighted means are kept (a constant shift per column)" if not info.keeps_values else
                        f"{info.label} keeps each column's values, so its weighted means change"))
    return ProtectionResult(out, step.loadings, step.perturbed, eff, _dependency_report(prep), tuple(notes), risk,
                            plaus)


REPLAYS = ((2_000, 3), (50_000, 2), (None, 1))  # the replay intruder's replays by the file's records (up to)


def _with_codes(prep, o):
    """``prep`` with the keys as published for the conditional methods (``_Prepared.coded``)."""
    if not o.get("recode"):
        return prep
    from .keystep import recoded

    return replace(prep, codes=recoded(prep.data, o["recode"]))


def _replays(Xp, as_int, prep, method, sensitive, options):
    """The replay intruder's means (``IntruderContext.replays``): a function that makes the
    release again from the complete release ``Xp`` (as a frame, taken as the original) with
    the same method and options and the intruder's own seeds, once, when first asked, and
    returns the replayed files (records x numeric columns, in the release's column order); an
    empty list where the construction refuses the release."""
    made = []

    def run():
        if not made:
            made.append(_replay_all(_assemble(prep.data, prep.numeric, Xp, as_int), prep, method, sensitive,
                                    options))
        return made[0]
    return run


def _replay_all(release, prep, method, sensitive, options):
    import warnings

    info = method_info(method)
    out = []
    for s in range(next(r for most, r in REPLAYS if most is None or len(release) <= most)):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m, p, o = _bind(release, method, sensitive, dict(options), seed=s)
                if prep.weights is not None:
                    p = replace(p, weights=prep.weights)
                p = _with_codes(p, o)
                step = _perturb(p, _plan(p, m, o) if info.decomposes else None, m, o,
                                np.random.default_rng([2 ** 31 - 1, s]))  # the intruder's seeds, not the release's
                Xs = _finish(p, step.X, len(p.keep) == p.X.shape[1], o, not info.keeps_values)[0]
        except (ValueError, TypeError, np.linalg.LinAlgError):
            return []
        if list(p.numeric) != list(prep.numeric):
            return []
        out.append(Xs)
    return out


def _perturb(prep, plan, method, o, gen):
    """Step 4 of the pipeline: the method's perturbation (its module in the registry) of the
    decomposed columns, on our own copy of them."""
    full = len(prep.keep) == prep.X.shape[1]
    # prep.X is our own copy unless it is the original itself (no log columns)
    work = prep.X.copy() if prep.X is prep.X0 else prep.X
    Xk = work if full else work[:, prep.keep]
    return steps(method).perturb(prep, plan, method, o, gen, Xk, full)


def _link_columns(prep):
    """The variables an intruder links on: the public ones in selective protection (what they know); None in
    general protection or without public ones (each variable read after linking on the others: ``risk_profile``)."""
    pub = [j for j in range(len(prep.numeric)) if j not in set(prep.check)]
    return pub if prep.sensitive_names and pub else None


def _observed_means(Xpk, X0k, missing):
    """Shift each column's released cells so that their mean is the original's observed mean (the method kept
    the completed file's mean; the imputed cells are not released): covariances and positions unchanged."""
    for i in np.flatnonzero(missing.any(axis=0)):
        ob = ~missing[:, i]
        changed = Xpk[ob, i] != X0k[ob, i]
        if changed.any():  # a column left unchanged (public in selective protection) stays so
            Xpk[ob, i] += X0k[ob, i].mean() - Xpk[ob, i].mean()


def _observed_only(X0k, missing):
    """X0k with each missing cell replaced by an observed value of its column (for the
    decimals the observed values use)."""
    X = X0k.copy()
    for j in np.flatnonzero(missing.any(axis=0)):
        ob = ~missing[:, j]
        if ob.any():
            X[~ob, j] = X0k[ob, j][0]
    return X


def _finish(prep, Xpk, full, o, shift_means=True, tails=None):
    """Back to the original scale, bounds, the largest records' tail (``tail='aggregate'``;
    ``tails``, a dict, receives {numeric column: (records, mean)}), rounding, exact
    dependencies rebuilt; returns (Xp, clipped per numeric column, decimals per numeric
    column, integer column names)."""
    keep = prep.keep
    if prep.log_cols:
        pos = [keep.index(j) for j in prep.log_cols]
        pl.inverse(Xpk, pos, prep.log_scales)
    X0k = prep.X0 if full else prep.X0[:, keep]
    missing_k = None if prep.missing is None else prep.missing if full else prep.missing[:, keep]
    if shift_means:
        _shift_means(Xpk, X0k, prep.weights, missing_k)
    obs_k = None if missing_k is None else ~missing_k
    clipped_k = pl.apply_bounds(Xpk, X0k, o["bounds"], obs_k)
    clipped = {keep[i]: int(c) for i, c in enumerate(clipped_k)}
    if o.get("tail") == "aggregate":
        done = aggregate_tail(Xpk, X0k, [keep.index(j) for j in prep.check if j in keep], o["floors"].tolerance,
                              prep.weights, obs_k)
        if tails is not None:
            tails.update({keep[c]: t for c, t in done.items()})
    dec = {}
    if o["rounding"] == "original":
        # decimals from the observed cells only (an imputed cell has arbitrary digits)
        Xdec = X0k if missing_k is None else _observed_only(X0k, missing_k)
        dec_k = pl.round_columns(Xpk, Xdec, range(len(keep)))
        dec = {keep[i]: d for i, d in dec_k.items()}
    if full:
        Xp = Xpk
    else:
        Xp = np.empty_like(prep.X0)
        Xp[:, keep] = Xpk
    if prep.deps:
        Zp = (Xpk - prep.mean0[keep]) / prep.sd0[keep]
        for d in prep.deps:
            Xp[:, d.target] = prep.mean0[d.target] + prep.sd0[d.target] * (Zp @ d.beta)
        if o["rounding"] == "original":
            dec.update(pl.round_columns(Xp, prep.X0, [d.target for d in prep.deps]))
    as_int = _integer_columns(prep, Xp, dec) if o["rounding"] == "original" else []
    return Xp, clipped, dec, as_int


def _shift_means(Xpk, X0k, weights, missing_k):
    """The weighted means (with sampling weights) or the observed cells' means kept: a
    constant shift per column."""
    if weights is not None:
        from .strata import weighted_shift

        weighted_shift(Xpk, X0k, weights, missing_k)
    elif missing_k is not None:
        _observed_means(Xpk, X0k, missing_k)


def _integer_columns(prep, Xp, dec):
    """The columns integer in the original and rounded to whole numbers (released as int64)."""
    return [c for j, c in enumerate(prep.numeric)
            if (dec.get(j) == 0 and pd.api.types.is_integer_dtype(prep.data[c].dtype)
                and np.isfinite(Xp[:, j]).all() and np.abs(Xp[:, j]).max() < 2.0 ** 62)]
