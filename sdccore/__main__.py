"""Command line: ``python -m sdccore protect|datasets ...``.

Errors print one line (``error: ...``) and exit with status 2; no traceback, no data.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import pandas as pd


from . import compare, evaluate, list_datasets, prepare_release, protect, read_table, recommend, release_csv, suggest_roles
from ._protect import LEGACY_DEFAULTS, RECIPE_VERSION


def _value(text):
    """--set values: JSON when it parses (numbers, lists, null), else the plain string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _read(path):
    """The same reader as the dashboard's upload: separator, decimal mark and encoding detected."""
    if not os.path.exists(path):
        raise ValueError(f"file not found: {path}")
    res = read_table(path)
    for note in res.notes:
        print(f"note: {note}", file=sys.stderr)
    return res


def _read_csv(path):
    return _read(path).data


def _names(text):
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def _check_roles(data, drop, keep, exclude):
    """Identifier-like and text columns need an explicit role: dropped or kept unchanged."""
    sug = suggest_roles(data)
    decided = set(drop) | set(keep) | set(exclude or ())
    ids = [c for c, f in sug.flags.items() if f == "identifier" and c not in decided]
    text = [c for c, f in sug.flags.items() if f == "text" and c not in decided]
    if ids:
        why = "; ".join(f"{c}: {sug.reasons[c]}" for c in ids[:3])
        raise ValueError(f"column(s) {', '.join(ids)} look like identifiers ({why}); drop them with --drop "
                         f"{','.join(ids)} or release them unchanged on purpose with --keep {','.join(ids)}.")
    if text:
        raise ValueError(f"text column(s) {', '.join(text)} would be released unchanged; say so with --keep "
                         f"{','.join(text)}, or drop them with --drop {','.join(text)}.")
    for c, f in sug.flags.items():
        if f == "code" and c not in decided:
            print(f"note: {c}: {sug.reasons[c]}; it is protected as a measurement here unless you --keep it",
                  file=sys.stderr)


def _protect(args):
    options = {}
    if args.recipe:
        try:
            with open(args.recipe, encoding="utf-8") as fh:
                options = json.load(fh)
        except FileNotFoundError:
            raise ValueError(f"recipe file not found: {args.recipe}") from None
        except ValueError:
            raise ValueError(f"{args.recipe} is not valid JSON; save the recipe the tool wrote with --save-recipe.") from None
        if not isinstance(options, dict):
            raise ValueError(f"{args.recipe} must hold a JSON object of options.")
    for item in args.set or []:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}.")
        key, val = item.split("=", 1)
        options[key.strip()] = _value(val.strip())
    if args.method:
        options["method"] = args.method
    options.setdefault("method", "fa")
    if args.sensitive is not None:
        options["sensitive"] = _names(args.sensitive) or None
    if args.seed is not None:
        options.pop("seed", None)
        options["rng"] = args.seed
    elif "seed" in options:
        options["rng"] = options.pop("seed")
    if args.recipe and "recipe_version" not in options:
        # a recipe written before plausible values existed: rebuild its file as it was then
        for key, val in LEGACY_DEFAULTS.items():
            options.setdefault(key, val)
    options.pop("recipe_version", None)
    options.pop("unsafe_reason", None)
    release = options.pop("release", None) or {}
    if not isinstance(release, dict):
        raise ValueError("the recipe's 'release' entry must be an object such as {\"drop\": [], \"shuffle\": true}.")
    drop = list(release.get("drop", [])) + _names(args.drop)
    keep = list(release.get("keep", [])) + _names(args.keep)
    src = _read(args.input)
    data = src.data
    missing = [c for c in drop + keep if c not in data.columns]
    if missing:
        raise ValueError(f"--drop/--keep name column(s) not in {args.input}: {', '.join(missing)}.")
    roles_data = data
    data = data.drop(columns=drop)
    numeric_kept = [c for c in keep if c in data.columns and c not in (options.get("exclude") or [])
                    and pd.api.types.is_numeric_dtype(data[c])]
    if numeric_kept:
        options["exclude"] = list(options.get("exclude") or []) + numeric_kept
    res = protect(data, allow_unsafe=args.allow_unsafe, **options)
    _check_roles(roles_data, drop, keep, options.get("exclude"))  # after the data's own checks
    out = prepare_release(res.data, shuffle=bool(release.get("shuffle")), rng=[int(res.options["seed"]), 1])
    with open(args.out, "wb") as fh:
        fh.write(release_csv(out, sep=src.sep or ",", decimal=src.decimal or "."))
    if args.save_recipe:
        recipe = dict(res.options)
        recipe["recipe_version"] = RECIPE_VERSION
        recipe["release"] = {"drop": drop, "keep": keep, "shuffle": bool(release.get("shuffle"))}
        if res.unsafe_reason:
            recipe["unsafe_reason"] = res.unsafe_reason  # a record only: a rerun refuses again without --allow-unsafe
        with open(args.save_recipe, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(recipe, indent=2, sort_keys=True))
    for note in res.notes:
        print(f"note: {note}", file=sys.stderr)
    for line in res.risk.violations:
        print(f"warning: {line}", file=sys.stderr)
    print(f"wrote {args.out}: {out.shape[0]} records, {out.shape[1]} columns "
          f"(method {res.method}, seed {res.options['seed']}; risk floors "
          f"{'met' if res.risk.ok else 'BROKEN, released because: ' + res.unsafe_reason})", file=sys.stderr)


def _evaluate(args):
    orig = _read_csv(args.original)
    prot = _read_csv(args.protected)
    sens = [c.strip() for c in args.sensitive.split(",") if c.strip()] if args.sensitive else None
    ev = evaluate(orig, prot, sensitive=sens)
    if args.json:
        print(json.dumps(ev.scores, indent=2))
    else:
        labels = {"dbrl": "record linkage (DBRL)", "id": "interval disclosure (ID)", "pil": "information loss (PIL)",
                  "ps": "propensity score (PS)", "summary": "summary", "selectivity": "selectivity", "overall": "overall"}
        print("score (0 best, 1 worst)")
        for k, v in ev.scores.items():
            print(f"  {labels[k]:<28s} {v:.4f}")


def _sens(args):
    return [c.strip() for c in args.sensitive.split(",") if c.strip()] if args.sensitive else None


def _compare(args):
    data = _read_csv(args.input)
    configs = {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"}}
    def progress(d, t):
        if not args.json and (d == t or d % max(1, t // 10) == 0):
            print(f"  {d}/{t} runs", file=sys.stderr)

    res = compare(data, configs, sensitive=_sens(args), reps=args.reps, rng=args.seed, progress=progress)
    if args.json:
        out = {lab: {r.score: {"mean": r.mean, "lo": r.lo, "hi": r.hi} for r in res.summary[res.summary.config == lab].itertuples()}
               for lab in configs}
        print(json.dumps({"reps": args.reps, "seed": res.seed, "results": out}, indent=2))
    else:
        key = "overall" if _sens(args) else "summary"
        print(f"{key} score over {args.reps} runs (mean and 95 % bootstrap interval; lower is better):")
        for r in res.summary[res.summary.score == key].sort_values("mean").itertuples():
            print(f"  {r.config:<6s} {r.mean:.4f}  [{r.lo:.4f}, {r.hi:.4f}]")


def _recommend(args):
    data = _read_csv(args.input)
    r = recommend(data, _sens(args))
    print(f"recommended: {r.label}")
    for why in r.reasons:
        print(f"  - {why}")


def _datasets(args):
    print(list_datasets().to_string(index=False))


def build_parser():
    p = argparse.ArgumentParser(prog="python -m sdccore", description="Statistical disclosure control of continuous microdata.")
    sub = p.add_subparsers(dest="command", required=True)
    pr = sub.add_parser("protect", help="protect the numeric columns of a CSV file")
    pr.add_argument("input", help="input CSV (separator detected)")
    pr.add_argument("--method", choices=["fa", "pca", "magg", "rankswap", "noise"])
    pr.add_argument("--sensitive", help="comma-separated sensitive column names (default: protect all)")
    pr.add_argument("--seed", type=int, help="random seed (recorded in the recipe)")
    pr.add_argument("--set", action="append", metavar="KEY=VALUE", help="an option, e.g. --set n_factors=4 (repeatable)")
    pr.add_argument("--recipe", help="JSON recipe with options (from --save-recipe)")
    pr.add_argument("--out", required=True, help="output CSV")
    pr.add_argument("--save-recipe", help="write the effective options as JSON here")
    pr.add_argument("--drop", help="comma-separated columns to drop from the release (identifiers)")
    pr.add_argument("--keep", help="comma-separated columns to release unchanged on purpose")
    pr.add_argument("--allow-unsafe", metavar="REASON",
                    help="write a release that breaks a risk floor anyway (never for publication); the reason is "
                         "printed and recorded in the saved recipe")
    pr.set_defaults(func=_protect)
    ev = sub.add_parser("evaluate", help="disclosure risk and utility of a protected CSV")
    ev.add_argument("original")
    ev.add_argument("protected")
    ev.add_argument("--sensitive", help="comma-separated sensitive column names")
    ev.add_argument("--json", action="store_true", help="print the scores as JSON")
    ev.set_defaults(func=_evaluate)
    cp = sub.add_parser("compare", help="compare FA, PCA and M-AGG over repeated runs")
    cp.add_argument("input")
    cp.add_argument("--sensitive", help="comma-separated sensitive column names")
    cp.add_argument("--reps", type=int, default=30)
    cp.add_argument("--seed", type=int)
    cp.add_argument("--json", action="store_true")
    cp.set_defaults(func=_compare)
    rc = sub.add_parser("recommend", help="recommend a method with its reasons")
    rc.add_argument("input")
    rc.add_argument("--sensitive", help="comma-separated sensitive column names")
    rc.set_defaults(func=_recommend)
    ds = sub.add_parser("datasets", help="list the bundled sample data sets")
    ds.set_defaults(func=_datasets)
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"error: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
