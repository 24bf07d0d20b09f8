"""What ``compare`` does after its runs: the run each configuration releases with the master
seed, held to the floors (``released_runs``), the largest records' second round
(``tail_round``, issue 38 item 4), the log scale's (``scales_round``, issue 39: an offered
release that loses a skewed variable's log-scale regressions, compared again with its method's
settings for both scales, ``MethodInfo.both_scales``) and the zeros' (``zeros_round``: a
sensitive amount with a mass at 0, compared again with ``MethodInfo.for_zeros``).

The second round: where no configuration can be offered and some broke a floor among the
largest 1 % of records (where 5 to 9 records decide and a method that leaves the tail to
chance passes or fails by the seed), each of those is compared again with its largest values
aggregated (``tail='aggregate'``, ``sdccore._core.tail``), labelled '<label> + largest
aggregated', with the same seeds, and both rounds are offered to ``suggest``.  Not the
default of every configuration: aggregating the largest records moves a regression on the raw
scale (they are its points of highest leverage: IPSO on Tarragona SALES + NET.PROFIT, smallest
CI overlap .17), so it is tried where nothing else is offered and chosen only by the
analysis validity it keeps.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

__all__ = []

TAIL_LABEL = " + largest aggregated"


def released_runs(data, cmp_, sensitive, seed, _protect):
    """({label: '' if the run the master seed releases meets every floor, else what breaks},
    {label: (analyses meeting their targets, analyses that apply, the labels of those missed)})
    for each configuration that met the floors over the runs (issue 38: the run released is
    held to the floors too, not only their expected share; issue 39: what analysts keep in
    that run, ``release_battery``, decides the suggestion); ``_protect``: the pipeline's."""
    from .._core.validation import name_list
    from .._measures.validity import release_battery

    safe = cmp_.safety()
    out, kept = {}, {}
    for label in (safe[safe.expected_ok.astype(bool)].config if len(safe) else []):
        cfg = dict(cmp_.configs[label])
        method = cfg.pop("method")
        try:
            res = _protect(data, method, sensitive, seed, cfg)
        except ValueError as exc:  # the runs did not fail on it; never expected
            out[label] = str(exc)
            continue
        out[label] = "" if res.risk.ok else res.risk.message()
        if res.risk.ok:  # only those can be suggested
            kept[label] = battery_count(release_battery(data, res.data, sensitive, name_list(cfg.get("exclude")), cfg))
    return out, kept


def battery_count(checks):
    """(met, applicable, labels missed) of an ``AnalystChecks``: each analysis with a target
    counted once, for its worst checked variable."""
    from .._measures.battery import lean_words

    w = checks.worst
    has = w[w.ok.map(lambda v: isinstance(v, (bool, np.bool_)))]
    missed = tuple(f"{r.label} ({r.variable} leans on {lean_words(r.note).split(':')[0]})" if lean_words(r.note)
                   else r.label for r in has[~has.ok.astype(bool)].itertuples())
    return int(has.ok.astype(bool).sum()), int(len(has)), missed


def without_failed(errors, rows, var_rows, band_rows, reg_rows):
    """The per-run tables without the configurations that failed in some run."""
    return ([x for x in rows if x["config"] not in errors],
            [v for v in var_rows if v["config"].iloc[0] not in errors],
            [b for b in band_rows if len(b) == 0 or b["config"].iloc[0] not in errors],
            [t for t in reg_rows if t["config"].iloc[0] not in errors])


def tail_candidates(cmp_):
    """The labels to compare again with tail='aggregate': none where a configuration can be
    offered; else each refused one whose runs broke a floor in the top 1 % band of a variable
    and whose largest values were not aggregated already."""
    safe = cmp_.safety()
    if not len(safe):
        return []
    refused = set(cmp_._refused(safe))
    if set(safe.config) - refused:
        return []
    b = cmp_.risk_bands
    out = []
    for label in safe.config:
        if label not in refused or cmp_.configs[label].get("tail") == "aggregate" or not len(b):
            continue
        top = b[(b.config == label) & (b.band == "top 1 %")]
        if len(top) and (top.beyond_prior > cmp_.floors_max_close_share(label) + 1e-12).any():
            out.append(label)
    return out


def tail_round(cmp_, run):
    """``cmp_`` with the second round (module docstring) merged in, or as it is where none is
    needed.  ``run(configs)``: compare these configurations with the first round's settings
    and master seed."""
    labels = tail_candidates(cmp_)
    if not labels:
        return cmp_
    again = {f"{lab}{TAIL_LABEL}": {**cmp_.configs[lab], "tail": "aggregate"} for lab in labels}
    return _again(cmp_, run, again)


class AllFailed(ValueError):
    """``compare``'s refusal where every configuration failed: its message the first one's,
    ``errors`` each configuration's (a round lists each with its own)."""

    def __init__(self, errors):
        super().__init__(next(iter(errors.values())))
        self.errors = dict(errors)


def _again(cmp_, run, configs, only=None):
    """``cmp_`` with the round ``run(configs)`` merged in (``only(round)``: the labels of it to
    keep, all without it; none kept: ``cmp_`` as it is), marked cancelled where the round was.
    Where every configuration of the round failed (``compare`` raises ``AllFailed`` then), its
    configurations are listed with each one's refusal: a round's refusal (a group too small for
    its strata, a code too rare among an amount's positives) is said beside the others, never
    the end of the whole comparison (an outside custodian's five tries: each threw the first
    round's minute of runs away)."""
    try:
        more = run(configs)
    except ValueError as exc:
        each = getattr(exc, "errors", None) or {}
        return replace(cmp_, configs={**cmp_.configs, **configs},
                       errors={**cmp_.errors, **{lab: each.get(lab, str(exc)) for lab in configs}})
    if more.cancelled:
        return replace(cmp_, cancelled=True)
    kept = list(more.configs) if only is None else only(more)
    return merged(cmp_, _only(more, kept)) if kept else cmp_


def merged(a, b):
    """Two comparisons of the same data, seed and settings as one (b's configurations after a's)."""
    def cat(x, y):
        return pd.concat([t for t in (x, y) if len(t)], ignore_index=True) if (len(x) or len(y)) else x
    return replace(a, summary=cat(a.summary, b.summary), runs=cat(a.runs, b.runs), configs={**a.configs, **b.configs},
                   seconds={k: a.seconds.get(k, 0.0) + b.seconds.get(k, 0.0) for k in {*a.seconds, *b.seconds}},
                   risk_variables=cat(a.risk_variables, b.risk_variables), risk_bands=cat(a.risk_bands, b.risk_bands),
                   errors={**a.errors, **b.errors}, regression=cat(a.regression, b.regression),
                   released={**a.released, **b.released}, analyses={**a.analyses, **b.analyses})


SCALES_LABEL = " + both scales"
LOG_SCALE = ("log-log regression", "log-level regression")


def scales_candidates(cmp_):
    """{label: the settings to compare it again with} (issue 39): each configuration that can be
    offered (its runs and its run released meet the floors) whose run released misses a
    log-scale regression of the battery, when its method keeps both scales on request and it
    was not compared so already, under its own label or another (``MethodInfo.both_scales``:
    IPSO with keep='scales' and 5 size classes, which on a persons file kept log-log .97 and the
    median regression .55 where one class kept .92 and .03)."""
    from .._methods import method_info

    out = {}
    for label, (_, _, missed) in (cmp_.analyses or {}).items():
        cfg = cmp_.configs[label]
        more = dict(method_info(cfg["method"]).both_scales)
        asked = {**cfg, **more} in cmp_.configs.values() or label + SCALES_LABEL in cmp_.configs
        if not more or cfg.get("keep") == "scales" or cmp_.released.get(label) or asked:
            continue
        if not any(m in LOG_SCALE for m in missed):
            continue
        out[label] = more
    return out


def scales_round(cmp_, run):
    """``cmp_`` with the configurations of ``scales_candidates`` compared again with their
    settings for both scales (labelled '<label> + both scales', the same seeds) merged in; as
    it is where there are none.  The suggestion then weighs both by the analyses their
    releases keep."""
    todo = scales_candidates(cmp_)
    if not todo:
        return cmp_
    # one whose run released still loses the log scale (EIA's TOTREVENUE, an identity: the OLS alone)
    # would be offered under a name that says what it did not do: left out
    def kept(more):
        lost = {lab for lab, (_, _, missed) in (more.analyses or {}).items() if any(m in LOG_SCALE for m in missed)}
        return [lab for lab in more.configs if lab not in lost]
    return _again(cmp_, run, {f"{lab}{SCALES_LABEL}": {**cmp_.configs[lab], **extra} for lab, extra in todo.items()},
                  kept)


ZEROS_LABEL = " + zeros kept"


def zeros_candidates(cmp_, data):
    """{label: the settings to compare it again with} (issue 39): where a sensitive variable is an
    amount with a mass at 0 (``_methods.zeros.semicontinuous``: wages of which a third are 0),
    each configuration whose method keeps such zeros on request (``MethodInfo.for_zeros``: IPSO
    in two parts) and was not compared so already.  Not only those offered: redrawn around its
    fit, IPSO clips such an amount's zeros by the hundred and is refused."""
    from .._methods import method_info
    from .._methods.zeros import semicontinuous

    sens = [c for c in (cmp_.sensitive or ()) if c in data and pd.api.types.is_numeric_dtype(data[c])]
    if not any(semicontinuous(data[c].to_numpy(dtype=np.float64)) for c in sens):
        return {}
    out = {}
    for label, cfg in cmp_.configs.items():
        more = dict(method_info(cfg["method"]).for_zeros)
        if not more or all(cfg.get(k) == v for k, v in more.items()) or label + ZEROS_LABEL in cmp_.configs:
            continue
        out[label] = more
    return out


def zeros_round(cmp_, data, run):
    """``cmp_`` with the configurations of ``zeros_candidates`` compared again with their
    settings for zeros (labelled '<label> + zeros kept', the same seeds) merged in; as it is
    where there are none or the comparison was cancelled."""
    todo = {} if cmp_.cancelled else zeros_candidates(cmp_, data)
    if not todo:
        return cmp_
    return _again(cmp_, run, {f"{lab}{ZEROS_LABEL}": {**cmp_.configs[lab], **extra} for lab, extra in todo.items()})


def _only(c, labels):
    """The comparison ``c`` with only the configurations ``labels``."""
    def rows(t):
        return t[t.config.isin(labels)].reset_index(drop=True) if len(t) and "config" in t else t
    return replace(c, summary=rows(c.summary), runs=rows(c.runs),
                   configs={k: v for k, v in c.configs.items() if k in labels},
                   risk_variables=rows(c.risk_variables), risk_bands=rows(c.risk_bands),
                   errors={k: v for k, v in c.errors.items() if k in labels}, regression=rows(c.regression),
                   released={k: v for k, v in c.released.items() if k in labels},
                   analyses={k: v for k, v in (c.analyses or {}).items() if k in labels})


WITHIN_LABEL = " within "
WITHIN = "OLS within domains"  # the battery's label (``battery.LABELS['domain_ols']``)
WITHIN_MOST = 2  # configurations compared again within domains (those that keep the most analyses)


def strata_for(data, cfg, sensitive):
    """The columns to protect within (strata=) so that each domain level's regression is kept: the
    set-apart columns and the text columns (not sensitive, not keys) with 2 to 30 levels and no
    missing cell, all of them together where every group holds the method's least records
    (``min_stratum_size``), else the one of them with the most levels that does; () where none does."""
    from .._core.validation import name_list, numeric_columns
    from .._measures.domains import MAX_LEVELS
    from .._protect.strata import min_stratum_size

    apart = name_list(cfg.get("exclude"))
    taken = set(name_list(sensitive)) | set(name_list(cfg.get("keys"))) | set(name_list(cfg.get("pram")))
    taken |= {cfg.get("household"), cfg.get("weights")}
    cols = [c for c in data.columns if c not in taken and (c in apart or not pd.api.types.is_numeric_dtype(data[c]))
            and not data[c].isna().any() and 2 <= data[c].nunique() <= MAX_LEVELS]
    m = len([c for c in numeric_columns(data) if c not in set(apart) | set(cols) | taken])
    need = min_stratum_size(cfg["method"], m)
    for tried in [cols] + [[c] for c in sorted(cols, key=lambda c: -data[c].nunique())]:
        if tried and data.groupby(tried).size().min() >= need:
            return tuple(tried)
    return ()


def domains_candidates(cmp_, data):
    """{label: strata} (issue 39): the configurations that can be offered, whose run released
    misses the regressions within domains and whose method protects within strata, at most
    WITHIN_MOST of them (those keeping the most analyses), with ``strata_for``'s columns."""
    from .._methods import method_info

    out = {}
    for label, (_, _, missed) in sorted((cmp_.analyses or {}).items(), key=lambda kv: -kv[1][0]):
        cfg = cmp_.configs[label]
        if (WITHIN not in missed or cfg.get("strata") or cmp_.released.get(label)
                or not method_info(cfg["method"]).strata or WITHIN_LABEL in label):
            continue
        strata = strata_for(data, cfg, cmp_.sensitive)
        if strata:
            out[label] = strata
        if len(out) == WITHIN_MOST:
            break
    return out


def domains_round(cmp_, data, run):
    """``cmp_`` with the configurations of ``domains_candidates`` compared again within their
    strata (labelled '<label> within <columns>', the same seeds) merged in; as it is where there
    are none.  A conditional method within strata keeps the sensitive variables' regression in
    each group, and so every regression within a domain of those columns."""
    todo = domains_candidates(cmp_, data)
    if not todo:
        return cmp_
    words = {lab: s[0] if len(s) == 1 else f"{', '.join(s[:-1])} and {s[-1]}" for lab, s in todo.items()}
    return _again(cmp_, run, {f"{lab}{WITHIN_LABEL}{words[lab]}": {**cmp_.configs[lab], "strata": list(s)}
                              for lab, s in todo.items()})
