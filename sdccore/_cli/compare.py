"""``python -m sdccore compare``: the Run page's comparison on the command line.

The same configurations the dashboard's Run page offers (every registered method with its
defaults; the conditional ones where some variables are sensitive and some public), the same
second rounds (the largest records aggregated, the log scale, within domains), the same
risk floors and battery of analyses, and the same suggestion (``Comparison.suggest``), with
the command that makes the suggested release.  ``--methods`` narrows the list as the page's
method box does; ``--require`` marks a ``--model`` that must hold in the suggestion, as the
page's check box does."""

from __future__ import annotations

import json
import shlex
import sys

import pandas as pd

from .._methods import method_info, methods
from .report import _digits, _print_coefficients, _print_compared, _regression_json, cli_words

__all__ = []


def offered(data, sensitive, kept=()):
    """{label: config} of the Run page's methods for these roles: every dashboard method, the
    conditional ones only when some numeric columns are sensitive and some others public (not
    released unchanged by --keep: those are no predictors to redraw the sensitive ones given)."""
    from .._core.validation import numeric_columns

    public = bool(sensitive) and len(set(numeric_columns(data)) - set(sensitive) - set(kept)) > 0
    return {method_info(m).label: {"method": m} for m in methods(dashboard=True)
            if public or not method_info(m).conditional}


def chosen(data, sensitive, names, kept=()):
    """The configurations ``--methods`` names (method names as ``protect --method`` takes
    them), in the Run page's order; every offered one without it."""
    every = offered(data, sensitive, kept)
    if not names:
        return every
    want = [n.strip() for n in names.split(",") if n.strip()]
    known = set(methods())
    bad = [n for n in want if n not in known]
    if bad:
        raise ValueError(f"--methods names {', '.join(bad)}, which is no method; use some of "
                         f"{', '.join(methods(dashboard=True))}, e.g. --methods ipso,shuffle.")
    cond = [n for n in want if method_info(n).conditional and method_info(n).label not in every]
    if cond:
        raise ValueError(f"--methods names {', '.join(cond)}, which redraw the sensitive variables given the public "
                         f"ones: name some numeric columns in --sensitive and leave at least one out (public, not in "
                         f"--keep), or drop {', '.join(cond)} from --methods.")
    return {method_info(n).label: {"method": n} for n in want}


def _share(v):
    return f"{100 * v:.1f} %"


def configuration_lines(res):
    """One line per configuration compared: the runs meeting every floor, the most the
    release adds beyond the prior (and where), the analyses its released run keeps, or why
    it cannot be released."""
    safe = res.safety(fixes_here=True).set_index("config")
    vr = res.variable_risk()
    bands = res.band_risk()
    width = max([len(c) for c in safe.index] + [13])
    lines = []
    for label in safe.index:
        s = safe.loc[label]
        parts = [f"floors met in {round(s.floors_met * s.runs)} of {s.runs} runs"]
        v = vr[vr.config == label] if len(vr) else vr
        if len(v) and v.beyond_prior.notna().any():
            top = v.loc[v.beyond_prior.idxmax()]
            parts.append(f"over all records {_share(top.beyond_prior)} more within 5 % of {top.variable} than the "
                         f"public variables give")
        b = bands[(bands.config == label) & (bands.band == "top 1 %")] if len(bands) else bands
        if len(b) and b.beyond_max.notna().any():
            top = b.loc[b.beyond_max.idxmax()]
            parts.append(f"among the largest 1 % up to {_share(top.beyond_max)} ({top.variable}, worst run)")
        if label in res.analyses and res.analyses[label][1]:
            met, n, _ = res.analyses[label]
            parts.append(f"keeps {met} of {n} analyses")
        if s.violation:
            parts.append(f"first refusal: {cli_words(s.violation)}")
        elif res.released.get(label):
            parts.append(f"the run released: {cli_words(res.released[label])}")
        lines.append(f"  {label:<{width}s}  " + "; ".join(parts))
    for label, why in res.errors.items():
        lines.append(f"  {label:<{width}s}  not run on these data: {' '.join(str(why).split())}")
    return lines


def protect_command(args, res, label):
    """The ``protect`` command that makes the suggested release (the comparison's seed)."""
    cfg = dict(res.configs[label])
    words = ["python", "-m", "sdccore", "protect", args.input, "--method", cfg.pop("method")]
    if args.sensitive:
        words += ["--sensitive", args.sensitive]
    words += ["--seed", str(res.seed)]
    for flag, names in (("--drop", args.drop), ("--keep", args.keep)):
        if names:
            words += [flag, names]
    if args.keep:
        cfg.pop("exclude", None)  # what --keep says
    for key, value in cfg.items():
        words += ["--set", f"{key}={json.dumps(value)}"]
    # the rows in an order drawn from the seed, as the dashboard's Download page releases them
    return " ".join(shlex.quote(w) for w in words + ["--shuffle-rows", "--out", "RELEASE.csv"])


def json_doc(args, res, best, why, reg, one_line):
    """``compare --json``'s document."""
    out = {lab: {r.score: {"mean": _digits(r.mean), "lo": _digits(r.lo), "hi": _digits(r.hi)}
                 for r in res.summary[res.summary.config == lab].itertuples()} for lab in res.configs
           if lab in set(res.summary.config)}
    safe = res.safety().set_index("config")
    doc = {"reps": args.reps, "seed": res.seed, "results": out,
           "floors_met": {lab: _digits(v) for lab, v in safe.floors_met.items()},
           "analyses_kept": {lab: {"kept": met, "of": n, "missed": list(missed)}
                             for lab, (met, n, missed) in res.analyses.items()},
           "not_run": {lab: one_line(why_) for lab, why_ in res.errors.items()},
           "suggested": best, "why": why,
           "command": protect_command(args, res, best) if best else None}
    if len(reg):
        doc["regression"] = [dict(_regression_json(model, sub.set_index("term").drop(columns=["config", "model"])),
                                  config=label)
                             for (label, model), sub in reg.groupby(["config", "model"], sort=False)]
    return doc


def header(args, res, data, keep, sensitive):
    """What the lines say, and what the intruder is taken to know."""
    floor = max((res.floors_max_close_share(lab) for lab in res.configs), default=0.2)
    print(f"Every configuration over {args.reps} runs: the runs meeting every risk floor (an intruder who knows the "
          f"method gets a sensitive value within 5 % for at most {floor:.0%} of records more than the public variables "
          f"alone give, over all records and in every size band, among the largest and the most extreme), the most it "
          f"gets over all records (its variable), and the analyses researchers run that the released run keeps "
          f"within their targets (a refusal's fix names protect's options: --set KEY=VALUE):")
    if sensitive:
        from .._core.validation import numeric_columns

        public = [c for c in numeric_columns(data) if c not in set(sensitive) | set(keep)]
        other = [c for c in data.columns if c not in set(public) | set(sensitive)]
        print(f"(the intruder is taken to know each record's public variables, {', '.join(public) or 'none'}"
              + (f", and the columns released unchanged, {', '.join(other)}" if other else "") + ")")


def print_suggestion(args, res, best, why):
    if not best:
        print(f"\nNo release suggested: {why}")
        return
    print(f"\nSuggested release: {best}. {why}")
    print(f"Make it with:\n  {protect_command(args, res, best)}")
    sens = f" --sensitive {shlex.quote(args.sensitive)}" if args.sensitive else ""
    drop = f" --drop {shlex.quote(args.drop)}" if args.drop else ""
    print(f"What it keeps and misses of each analysis, by how much:\n  python -m sdccore evaluate "
          f"{shlex.quote(args.input)} RELEASE.csv{sens}{drop} --analyses")


def run(args, data, keep, sensitive, one_line, compare, check_models, warm_workers):
    """The command on ``data`` (the file read), with the comparison's functions handed in by
    ``__main__`` (so this module stays below the comparison and the readers in the package's floors)."""
    kept = [c for c in keep if pd.api.types.is_numeric_dtype(data[c])]  # numeric --keep: released unchanged
    configs = chosen(data, sensitive, args.methods, kept)
    if kept:
        configs = {lab: {**cfg, "exclude": kept} for lab, cfg in configs.items()}
    models = list(args.model or [])
    models += [m for m in (args.require or []) if m not in models]
    check_models(data, models or None)  # a formula's fault is said before the workers start (about 15 s)
    # the workers start now, ignoring the terminal's Ctrl-C while they start (never while
    # they import and work: a Ctrl-C held back then was lost and the run went on, issue 36)
    warm_workers(wait=True)

    def progress(d, t):
        if not args.json and (d == t or d % max(1, t // 10) == 0):
            print(f"  {d}/{t} runs", file=sys.stderr)

    res = compare(data, configs, sensitive=sensitive, reps=args.reps, rng=args.seed, progress=progress,
                  models=models or None, tails=True, scales=True, domains=True)
    best, why = res.suggest(require=args.require or None)
    why = cli_words(why)
    reg = res.regression_summary()
    if args.json:
        print(json.dumps(json_doc(args, res, best, why, reg, one_line), indent=2))
        return
    header(args, res, data, keep, sensitive)
    print("\n".join(configuration_lines(res)))
    print_suggestion(args, res, best, why)
    refused = set(res.safety().query("floors_met < 1").config)
    print("\nThe FA paper's scores (risk and information loss in one figure; they do not hold the risk floors: the "
          "configurations marked * broke a floor in some run):")
    _print_compared(res.summary, "overall" if sensitive else "summary", args.reps, refused)
    for (label, model), sub in (reg.groupby(["config", "model"], sort=False) if len(reg) else ()):
        print(f"\n{label}: regression {model}, protected coefficients and intervals averaged over {args.reps} "
              f"runs; overlap 1 = same interval:")
        _print_coefficients(sub.set_index("term"))
