"""Command line: ``python -m sdccore protect|evaluate|compare|recommend|datasets|registered|warm ...``.

Errors print one line (``error: ...``) and exit with status 2; no traceback, no data.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import glob
import os
import signal
import sys

from ._cli.files import OUT_FORMATS, _CLEANUP, _numeric_both, _split_names, _report_pairs, _atomic_write, _check_named, _check_paths, _check_regular, _check_roles, _load_recipe, _missing_cells, _names, _out_format, _read, _read_csv, _same_file, _umask, _value, _without_dropped
from ._cli.cluster import SCHEDULER_WAIT, _client, _stop_children  # noqa: F401
from ._cli.report import (_COEF_COLUMNS, _analyses, _analyses_json, _digits, _print_coefficients,  # noqa: F401
                          _regression_json, _risk_lines, _say)
from ._cli.report import _print_scores, cli_words
from ._methods import methods

# the heavy modules (scipy, scikit-learn, numba) are imported by the command that needs them:
# ``python -m sdccore datasets`` starts in well under a second
METHODS = methods()  # the built-in methods (sdccore._methods imports nothing, so --help stays quick)


def _recipe_options(args):
    """The recipe (or an empty one) and its options with --set, --method, --sensitive and
    --seed applied on top."""
    from ._protect.recipe import Recipe

    recipe = _load_recipe(args.recipe) if args.recipe else Recipe({}, shuffle=False)
    if getattr(args, "shuffle_rows", False):
        recipe = dataclasses.replace(recipe, shuffle=True)
    options = dict(recipe.options)
    for item in args.set or []:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}.")
        key, val = item.split("=", 1)
        options[key.strip()] = _value(val.strip())
    if args.method:
        options["method"] = args.method
    options.setdefault("method", "fa")
    _split_names(options)
    if args.sensitive is not None:
        options["sensitive"] = _names(args.sensitive) or None
    if args.seed is not None:
        options.pop("rng", None)
        options["seed"] = args.seed
    elif "rng" in options:
        options["seed"] = options.pop("rng")
    return recipe, options


def _protect_dask(args):
    """protect with --engine dask: a Parquet data set (a folder) from Parquet or CSV files."""
    from ._scale.engine import _check_out, protect_dask, read_dask, read_head, scale_refusal
    if args.out == "-" or args.out.lower().endswith((".csv", ".xlsx", ".sav", ".dta", ".xpt")):
        raise ValueError(f"--engine dask writes a Parquet data set into a folder; give --out a folder, e.g. "
                         f"--out released/ (not {args.out}).")
    _check_out(args.out)
    if args.report or args.external_report:
        raise ValueError("--report and --external-report work with --engine memory (the report's measures need the "
                         "whole file in memory); with --engine dask, write the codebook (--codebook PATH), or report "
                         "on a sample: protect it with --engine memory and the same recipe.")
    if args.save_recipe:
        import glob as _glob
        if args.save_recipe == "-":
            raise ValueError("--save-recipe - is not supported; give a file path.")
        folder = os.path.dirname(os.path.abspath(args.save_recipe))
        if not os.path.isdir(folder):
            raise ValueError(f"--save-recipe: the folder {folder} does not exist; create it or write elsewhere. "
                             f"Nothing was written.")
        if os.path.isdir(args.save_recipe):
            raise ValueError(f"--save-recipe {args.save_recipe} is a folder; give a file name.")
        _check_regular("--save-recipe", args.save_recipe)
        inputs = ([args.recipe] if args.recipe else []) + (_glob.glob(args.input) or [args.input])
        if any(_same_file(args.save_recipe, i) for i in inputs):
            raise ValueError(f"--save-recipe {args.save_recipe} is one of the inputs; it would be overwritten. Write to "
                             f"another path.")
        if os.path.abspath(args.save_recipe).startswith(os.path.abspath(args.out).rstrip(os.sep) + os.sep):
            raise ValueError(f"--save-recipe {args.save_recipe} lies inside the release folder {args.out}; write it "
                             f"beside it.")
    recipe, options = _recipe_options(args)
    drop = list(recipe.drop) + _names(args.drop)
    keep = list(recipe.keep) + _names(args.keep)
    # the in-memory reading and role rules, before any cluster starts
    head = read_head(args.input)
    ddf = read_dask(args.input, head=head)  # lazy: checks that every file has the same columns
    why = scale_refusal(options)
    if why:
        raise ValueError(why)
    for note in head.notes:
        print(f"note: {note} (read from the first records of the first file; every file is read so)",
              file=sys.stderr)
    _check_roles(head.data.drop(columns=[c for c in drop if c in head.data.columns]), drop, keep,
                 options.get("exclude") if isinstance(options.get("exclude"), list) else None)
    out_abs = os.path.abspath(args.out.rstrip("/") or args.out)
    _CLEANUP.append(os.path.join(glob.escape(os.path.dirname(out_abs)),
                                 f".{glob.escape(os.path.basename(out_abs))}.sdccore-partial-*-{os.getpid()}"))
    client, cluster = _client(args)
    try:

        def show(job):
            fut = client.compute(job)
            if sys.stderr.isatty():
                from distributed import progress
                progress(fut)
            fut.result()

        def save(rec):  # written after the floors are checked, before the release is renamed into place
            _atomic_write([(args.save_recipe, rec.to_json().encode("utf-8"))])

        rel = protect_dask(ddf, options, args.out, drop=drop, keep=keep, sample=args.sample,
                           allow_unsafe=args.allow_unsafe, shuffle=recipe.shuffle, progress=show,
                           before_publish=save if args.save_recipe else None)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    _say(rel.notes, rel.risk.violations)
    _risk_lines(rel.risk)
    how = (f"own-record closeness over all {rel.n:,} records, the prior and the other intruders on a sample of "
           f"{rel.sample:,}")
    floors = f"met ({how})" if rel.risk.ok else f"BROKEN ({how}), released because: {args.allow_unsafe}"
    lowered = rel.risk.floors.lowered_text()
    if lowered:
        floors += f"; {lowered}, released because: {args.allow_unsafe}"
    print(f"wrote {args.out}: {rel.n:,} records as a Parquet data set (method {rel.options['method']}, seed "
          f"{rel.options['seed']}, engine dask; risk floors {floors})", file=sys.stderr)


def _protect(args):
    from ._protect.recipe import Recipe
    from ._release.release import make_release
    if args.engine == "dask":
        return _protect_dask(args)
    _check_paths(args)
    _out_format(args.out, None)  # an impossible format is refused before any work
    recipe, options = _recipe_options(args)
    _design_options(args, options)
    drop = list(recipe.drop) + _names(args.drop)
    keep = list(recipe.keep) + _names(args.keep)
    src = _read(args.input)
    excl = options.get("exclude")
    excl = {c for c in excl if isinstance(c, str)} if isinstance(excl, (list, tuple)) else set()  # validated later
    for key in ("strata", "weights", "keys", "household", "pram"):  # design and key columns: their own steps
        val = options.get(key)
        names = [val] if isinstance(val, str) else val if isinstance(val, (list, tuple)) else []  # validated later
        excl |= {c for c in names if isinstance(c, str)}
    data = _missing_cells(src.data, args.missing, set(drop) | set(keep) | excl)
    _check_named(data, drop, keep, args.input)
    recipe = Recipe(options, tuple(drop), tuple(keep), recipe.shuffle, recipe.version, recipe.versions)
    rel = make_release(data, recipe, allow_unsafe=args.allow_unsafe)
    res, out = rel.result, rel.data
    _check_roles(data, drop, keep, list(res.options.get("exclude") or []) + sorted(excl), src.value_labels,
                 keys=res.options.get("keys"), note_keys=True)  # after the data's own checks
    fmt = _out_format(args.out, src.format)
    body = rel.to_bytes(fmt, labels=src.labels, value_labels=src.value_labels, sep=src.sep or ",",
                        decimal=src.decimal or ".")
    pairs = []
    if args.save_recipe:
        pairs.append((args.save_recipe, rel.recipe.to_json().encode("utf-8")))
    if args.codebook:
        from ._release.codebook import codebook_bytes
        fmt_cb = "json" if args.codebook.lower().endswith(".json") else "csv"
        from ._report.assemble import release_codebook
        pairs.append((args.codebook, codebook_bytes(release_codebook(rel, data, src.labels), fmt_cb)))
    pairs += _report_pairs(args, rel, data, src.labels)
    digest = hashlib.sha256(body).hexdigest()[:12]
    # .xlsx, .sav and .dta files carry their creation time: the file's hash differs between two
    # rebuilds of the same release; the content hash (of the values, as CSV) does not
    content = "" if fmt == "csv" else f", content sha256 {hashlib.sha256(rel.to_bytes('csv')).hexdigest()[:12]}"
    _write_outputs(args.out, body, pairs, digest)
    _say(res.notes, res.risk.violations)
    _risk_lines(res.risk)
    print(f"wrote {'standard output' if args.out == '-' else args.out}: {out.shape[0]} records, {out.shape[1]} columns, "
          f"sha256 {digest}{content} "
          f"(method {res.method}, seed {res.options['seed']}; risk floors "
          f"{'met' if res.risk.ok else 'BROKEN, released because: ' + res.unsafe_reason}"
          f"{'; ' + res.risk.floors.lowered_text() + ', released because: ' + res.unsafe_reason if res.risk.floors.lowered() else ''})",
          file=sys.stderr)


def _design_options(args, options):
    """--strata and --weights into the options (an empty value removes them)."""
    if args.strata is not None:
        options["strata"] = _names(args.strata) or None
        if options["strata"] is None:
            options.pop("strata")
    if args.weights is not None:
        options["weights"] = args.weights.strip() or None


def _write_outputs(out, body, pairs, digest):
    """The release (to standard output with --out -) and the recipe and codebook beside it,
    each written whole or not at all."""
    if out == "-":
        if pairs:
            _atomic_write(pairs)
        sys.stdout.buffer.write(body)
        sys.stdout.buffer.flush()
        return
    pairs.append((out, body))
    inodes = _atomic_write(pairs)  # the recipe is renamed into place first, then the release
    try:
        replaced = os.stat(out).st_ino != inodes[-1]
    except OSError:
        replaced = True
    if replaced:
        print(f"note: another run replaced {out} right after this one wrote it (this run's file had "
              f"sha256 {digest}); the file there now is the other run's", file=sys.stderr)


def _evaluate_dask(args):
    import math

    from ._scale.engine import read_dask
    from ._scale.measures import evaluate_dask

    client, cluster = _client(args)
    try:
        ev = evaluate_dask(read_dask(args.original), read_dask(args.protected), sensitive=_sens(args),
                           sample=args.sample)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    table = ev.table
    _say(ev.notes, ())  # the plug-in analyses left out at scale
    if args.json:
        print(json.dumps({"records": ev.n, "sample": ev.sample,
                          "scores": {k: {**{c: (None if math.isnan(r[c]) else _digits(float(r[c])))
                                            for c in ("estimate", "lo", "hi")}, "how": r["how"]}
                                     for k, r in table.iterrows()},
                          "pil": {k: _digits(float(v)) for k, v in ev.pil.items()}}, indent=2))
    else:
        print(f"scores at scale, {ev.n:,} records, {ev.sample:,} of them sampled (95 % interval; 0 best, 1 worst):")
        for k, r in table.iterrows():
            iv = "exact" if math.isnan(r.lo) else f"[{r.lo:.4f}, {r.hi:.4f}]"
            print(f"  {k:<8s} {r.estimate:.4f}  {iv:<18s} {r.how}")


def _evaluate(args):
    if args.engine == "dask":
        return _evaluate_dask(args)
    from ._measures.evaluate import evaluate
    orig = _read_csv(args.original)
    prot = _read_csv(args.protected)
    orig, prot = _without_dropped(args, orig, prot)
    sens = [c.strip() for c in args.sensitive.split(",") if c.strip()] if args.sensitive else None
    checks = []
    if args.model:
        from ._measures.regression import regression_check
        checks = [regression_check(orig, prot, m) for m in args.model]  # a bad formula fails before the scores
    num = _numeric_both(orig, prot)
    ev = evaluate(orig[num], prot[num], sensitive=sens, **({"weights": args.weights} if args.weights else {}))
    kept = _analyses(args, orig, prot, sens)
    if args.json:
        # 12 significant digits: the last digits of a sum change with the BLAS kernel and
        # thread count (reduction order), so more would not be the same on another machine
        out = {k: _digits(v) for k, v in ev.scores.items()}
        if args.weights:
            out["weighted"] = {v: {k: _digits(float(x)) for k, x in row.items()}
                               for v, row in ev.details["weighted"].iterrows()}
        if checks:
            out["regression"] = [_regression_json(c.model, c.table, n_original=c.n_original,
                                                  n_protected=c.n_protected, mean_overlap=c.mean_overlap)
                                 for c in checks]
        if kept is not None:
            out["analyses"] = _analyses_json(kept)
        print(json.dumps(out, indent=2))
    else:
        print("score (0 best, 1 worst)")
        _print_scores(ev.scores)
        if ev.details.get("ps_fit") == "separated":
            print("  (the propensity model separates the two files: the release is recognisably not the original)")
        vt = ev.details["validity"]
        print("\nanalysis validity per variable (1 best): OLS CI overlap, R2 kept, correlations kept, "
              "distribution kept")
        for name, r in vt.iterrows():
            print(f"  {str(name):<28s} {r.validity:.3f}  (overlap {r.overlap:.3f}, R2 kept {r.r2_kept:.3f}, "
                  f"correlations {r.cor_kept:.3f}, distribution {r.marginal_kept:.3f})")
        if args.weights:
            t = ev.details["weighted"]
            print(f"\nweighted by {args.weights}: largest change of a weighted mean "
                  f"{t.mean_change_sd.abs().max():.2e} weighted sd (variable {t.mean_change_sd.abs().idxmax()}), "
                  f"of a weighted correlation {ev.details['weighted_cor_gap']:.4f}")
        if kept is not None:
            print()
            print(kept.summary())
        for c in checks:
            print(f"\nregression {c.model} (records used: original {c.n_original}, protected {c.n_protected}; "
                  f"mean interval overlap {c.mean_overlap:.3f}, 1 = same interval):")
            _print_coefficients(c.table)


def _sens(args):
    return [c.strip() for c in args.sensitive.split(",") if c.strip()] if args.sensitive else None


def _compare(args):
    from ._choose.compare import _check_models, compare, warm_workers
    from ._cli.compare import run
    data = _read_csv(args.input)
    drop, keep = _names(args.drop), _names(args.keep)
    _check_named(data, drop, keep, args.input)
    data = data.drop(columns=drop)
    _check_roles(data, drop, keep, None)  # ids and text columns decided as protect asks, before the runs
    run(args, data, keep, _sens(args), _one_line, compare, _check_models, warm_workers)


def _recommend(args):
    from ._choose.recommend import recommend
    data = _read_csv(args.input)
    r = recommend(data, sensitive=_sens(args))
    print(f"recommended: {r.label}" if r.label else
          "recommended: none (no method meets the risk floors with its default settings; the reasons say what breaks)")
    for why in r.reasons:
        print(f"  - {why}")
    print("This is a first choice from simulated files and rules, not a check of yours: `compare` runs every method "
          "on this file under the risk floors and the analyses researchers run, and suggests a release with the "
          "command that makes it (what the dashboard's Run page does).")


def _datasets(args):
    from ._io.datasets import list_datasets
    print(list_datasets().to_string(index=False))


def _registered(args):
    """The three registries: every method, intruder and analysis this command knows (the
    built-in ones and those the modules in SDCCORE_PLUGINS registered), a plug-in marked."""
    from ._measures import analyses
    from ._methods import BUILT_IN, method_info, methods
    from ._risk import registry

    rows = [("method", n, method_info(n).label, n not in BUILT_IN) for n in methods()]
    rows += [("intruder", n, registry.REGISTRY[n].label, n not in registry.BUILT_IN) for n in registry.REGISTRY]
    rows += [("analysis", n, a.label, n not in analyses.BUILT_IN) for n, a in analyses.REGISTRY.items()]
    w = max(len(n) for _, n, _, _ in rows)
    for kind, n, label, plugin in rows:
        print(f"{kind:<9s} {n:<{w}s}  {label}{'  (plug-in)' if plugin else ''}")


def _warm(args):
    from ._choose.warm import compile_kernels

    compile_kernels(progress=print)


def build_parser():
    p = _Parser(prog="python -m sdccore", description="Statistical disclosure control of continuous microdata.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    pr = sub.add_parser("protect", help="protect the numeric columns of a CSV file")
    pr.add_argument("input", help="input CSV, Excel, Parquet, SPSS (.sav), Stata (.dta) or SAS (.sas7bdat, .xpt); "
                                  "- reads standard input (CSV)")
    pr.add_argument("--method", choices=list(methods()))  # the registry's methods when the parser is built
    pr.add_argument("--sensitive", help="comma-separated sensitive column names (default: protect all)")
    pr.add_argument("--seed", type=int, help="random seed (recorded in the recipe)")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE", help="an option, e.g. --set n_factors=4 (repeatable)")
    pr.add_argument("--recipe", help="JSON recipe with options (from --save-recipe)")
    pr.add_argument("--out", required=True, help="output file; its extension chooses the format (.csv, .parquet, "
                                                 ".xlsx, .sav, .dta, .xpt; variable and value labels of an SPSS, "
                                                 "Stata or SAS input are kept); - writes CSV to standard output")
    pr.add_argument("--engine", choices=("memory", "dask"), default="memory",
                    help="dask: protect Parquet/CSV files (a glob) that do not fit in memory, on a Dask cluster; "
                         "--out is then a folder for the Parquet data set (the methods "
                         + ", ".join(methods(dask=True)) + ")")
    pr.add_argument("--scheduler", metavar="ADDRESS",
                    help="with --engine dask: a running Dask scheduler (tcp://host:8786); default a local cluster")
    pr.add_argument("--sample", type=int, default=20000,
                    help="with --engine dask: records drawn at random for the risk floors' linking and "
                         "reconstruction checks (default 20000; closeness and |cor| use every record)")
    pr.add_argument("--codebook", metavar="PATH",
                    help="write the codebook here (.json or .csv): per variable its role, method, rounding, what is "
                         "kept exactly and in expectation, and its residual risk")
    pr.add_argument("--save-recipe", help="write the effective options as JSON here")
    pr.add_argument("--report", metavar="PATH",
                    help="write the internal HTML report here (the dashboard's: risk floors, what analysts keep, "
                         "key variables, codebook; it holds the seed: keep it internal)")
    pr.add_argument("--external-report", metavar="PATH",
                    help="write the external HTML report here (no seed, no original values the release does not "
                         "show): the one to hand on")
    pr.add_argument("--shuffle-rows", action="store_true",
                    help="release the rows in an order drawn from the seed (the Download page's default), so that "
                         "their order tells nothing of the original's; recorded in the recipe")
    pr.add_argument("--drop", help="comma-separated columns to drop from the release (identifiers)")
    pr.add_argument("--keep", help="comma-separated columns to release unchanged on purpose")
    pr.add_argument("--strata", metavar="COLUMNS",
                    help="comma-separated columns whose groups are protected on their own (fa, pca, magg): group "
                         "means kept, no record mixed with another group's; released unchanged")
    pr.add_argument("--weights", metavar="COLUMN",
                    help="a sampling-weight column: released unchanged, weighted means kept (fa, pca, magg)")
    pr.add_argument("--missing", choices=("keep", "drop-records", "drop-columns"), default="keep",
                    help="missing cells: keep them missing in place and protect the observed ones (default), drop "
                         "the records that have them, or leave out the columns that have them")
    pr.add_argument("--allow-unsafe", metavar="REASON",
                    help="write a release that breaks a risk floor anyway (never for publication); the reason is "
                         "printed and recorded in the saved recipe")
    pr.set_defaults(func=_protect)
    ev = sub.add_parser("evaluate", help="disclosure risk and utility of a protected CSV")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument("--sensitive", help="comma-separated sensitive column names")
    ev.add_argument("--drop", help="comma-separated columns of the original that protect left out (--drop)")
    ev.add_argument("--json", action="store_true", help="print the scores as JSON")
    ev.add_argument("--engine", choices=("memory", "dask"), default="memory",
                    help="dask: the two files are globs of Parquet/CSV files; the scores are estimated on a random "
                         "sample of aligned records, with intervals")
    ev.add_argument("--scheduler", metavar="ADDRESS", help="with --engine dask: a running Dask scheduler")
    ev.add_argument("--sample", type=int, default=5000, help="with --engine dask: records sampled (default 5000)")
    ev.add_argument("--weights", metavar="COLUMN", help="a sampling-weight column in both files: left out of the "
                    "measures; weighted means and correlations of both files are reported")
    ev.add_argument("--model", action="append", metavar="FORMULA",
                    help="a linear regression to fit on both files, e.g. 'SALES ~ LABOR.COSTS + FIXED.ASSETS' "
                         "(repeatable): coefficients, 95%% intervals and their overlap")
    ev.add_argument("--analyses", action="store_true",
                    help="also what analysts keep: the OLS (also with the variable as a predictor), log-log, "
                         "log-level, median and 0.1/0.9 quantile regressions, domain means and the gaps between "
                         "them, the distribution, the top-10 %% share, the mean and the "
                         "correlations of each protected variable, each against its target (sdccore.analyst_checks)")
    ev.add_argument("--domains", metavar="COLUMNS", help="with --analyses: comma-separated columns whose levels are "
                    "the domains of the domain means and gaps (e.g. region,sex; default: the text columns "
                    "released unchanged with 2-30 levels, and in general protection whole-number codes)")
    ev.set_defaults(func=_evaluate)
    cp = sub.add_parser("compare", help="compare the Run page's methods over repeated runs and suggest a release")
    cp.add_argument("input")
    cp.add_argument("--sensitive", help="comma-separated sensitive column names")
    cp.add_argument("--reps", type=int, default=30)
    cp.add_argument("--seed", type=int)
    cp.add_argument("--json", action="store_true")
    cp.add_argument("--model", action="append", metavar="FORMULA",
                    help="a linear regression to fit on the original and every run's release (repeatable); "
                         "the interval overlaps are averaged over the runs")
    cp.add_argument("--require", action="append", metavar="FORMULA",
                    help="a regression that must hold in the suggested release (repeatable; also fitted as --model)")
    cp.add_argument("--methods", metavar="NAMES", help="comma-separated methods to compare (as --method of protect; "
                    "default: every method the dashboard's Run page offers for these roles)")
    cp.add_argument("--drop", help="comma-separated columns left out (identifiers), as protect's --drop")
    cp.add_argument("--keep", help="comma-separated columns released unchanged on purpose, as protect's --keep")
    cp.set_defaults(func=_compare)
    rc = sub.add_parser("recommend", help="recommend a method with its reasons")
    rc.add_argument("input")
    rc.add_argument("--sensitive", help="comma-separated sensitive column names")
    rc.set_defaults(func=_recommend)
    ds = sub.add_parser("datasets", help="list the bundled sample data sets")
    ds.set_defaults(func=_datasets)
    rg = sub.add_parser("registered", help="list every method, intruder and analysis (with the plug-ins that "
                                           "SDCCORE_PLUGINS names)")
    rg.set_defaults(func=_registered)
    wm = sub.add_parser("warm", help="compile the numerical kernels once (after installing: the first run then "
                                     "does not wait about 30 s for them)")
    wm.set_defaults(func=_warm)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: 'error: ...' and exit 2, like every other error here."""

    def error(self, message):
        raise _UsageError(f"{message}; see '{self.prog} --help'")


class _UsageError(Exception):
    pass


_SET_KEYS = []  # the options given with --set: a message naming one says --set key=value


def _one_line(text):
    """A message on one line, the library's keywords as the command line's flags
    (``_cli_report.cli_words``)."""
    return cli_words(" ".join(str(text).split()) or "unknown error", set(_SET_KEYS))


def main(argv=None):
    """Run the command line; every failure is one line on stderr and exit status 2 (130 for
    Ctrl-C), never a traceback."""
    try:
        from ._core.plugins import load_plugins

        load_plugins()  # the modules named in SDCCORE_PLUGINS register their methods, intruders, analyses
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
            _SET_KEYS[:] = [str(item).split("=", 1)[0].strip() for item in getattr(args, "set", None) or []]
        except _UsageError as exc:
            print(f"error: {_one_line(exc)}", file=sys.stderr)
            return 2
        args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        text = _one_line(exc) if str(exc) else type(exc).__name__
        if "libllvmlite" in text or "numba" in text.lower() and ".so" in text:
            text = ("a compiled part of the tool could not be loaded (often: too little memory for it); run again "
                    "with more memory. Nothing was written.")
        print(f"error: {text}", file=sys.stderr)
        return 2
    except RecursionError:
        print("error: the input is nested too deeply to be read; check the recipe or file.", file=sys.stderr)
        return 2
    except MemoryError:
        print("error: out of memory; protect fewer records or variables at once, or use a machine with more "
              "memory. Nothing was written.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except SystemError as exc:  # a compiled kernel interrupted by Ctrl-C reports it so
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt):
            return _interrupted()
        raise
    except Exception as exc:  # an engine's own error (Dask's, a worker's): one line, never a traceback
        if isinstance(exc.__cause__ or exc.__context__, KeyboardInterrupt) or type(exc).__name__ in (
                "AllExit", "CancelledError"):
            return _interrupted()
        text = _one_line(exc)
        if "llvmlite" in text or ".so" in text:  # a library that failed to load: its path says nothing to a user
            text = "a compiled part of the tool could not be loaded (often: too little memory); try again with more"
        print(f"error: {type(exc).__name__}: {text[:300]}", file=sys.stderr)
        return 2
    return 0





def _on_sigint(signum, frame):
    """Ctrl-C (or SIGTERM, exit 143) on the command line: one line, this process's worker processes ended, its
    temporary files and partial folders removed, exit 130, at once.  Raising
    KeyboardInterrupt into the running work instead let compiled kernels report it as a
    SystemError or crash (a segfault seen 1 time in 5), and worker processes and Dask's
    threads print tracebacks."""
    import shutil

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    what = "interrupted" if signum == signal.SIGINT else "stopped (SIGTERM)"
    cluster = sys.modules.get(__package__ + "._cli.cluster")
    if cluster is not None:  # the Dask workers' standard error: dropped from now on
        cluster.quiet_children()
    try:
        sys.stderr.write(f"error: {what}; nothing was written (an earlier output file is left as it was).\n")
        sys.stderr.flush()
        # a process a Dask nanny starts again after its worker is stopped (from this process,
        # so with its standard error) printed multiprocessing's EOFError traceback after the
        # line (a CI run): from now on what any process started here writes goes nowhere
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    except Exception:
        pass
    trackers = _stop_children()  # every worker process stopped and killed; the trackers to end last
    for pattern in list(_CLEANUP):
        for path in glob.glob(pattern):
            try:
                shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
            except OSError:
                pass
    for t in trackers:
        try:
            t.kill()
        except Exception:
            pass
    os._exit(128 + int(signum))


def _interrupted():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while stopping prints nothing more
    print("error: interrupted; nothing was written (an earlier output file is left as it was).", file=sys.stderr)
    return 130


def cli():
    """The ``sdccore`` command (``python -m sdccore`` and the console script of ``pip install``)."""
    signal.signal(signal.SIGINT, _on_sigint)
    signal.signal(signal.SIGTERM, _on_sigint)  # a SIGTERM left the workers running with the pipes open
    code = main()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the interpreter's shutdown is not interrupted
    pool = sys.modules.get(__package__ + "._choose.pool")
    if pool is not None:  # the results are out: the workers end now, not in a shutdown of 1-2 s
        pool.shutdown_all()
    sys.exit(code)


if __name__ == "__main__":
    cli()
