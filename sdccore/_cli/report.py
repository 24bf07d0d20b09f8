"""What the command line prints: notes and violations, the risk lines per variable, and the
regression check's coefficients (on the terminal and as JSON).  Standard library only."""

from __future__ import annotations

import sys

__all__ = []


def _say(notes, violations):
    """The notes and risk-floor warnings of a release, on standard error."""
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for line in violations:
        print(f"warning: {line}", file=sys.stderr)


def _risk_lines(risk, most=3):
    """'risk: ...' lines on standard error: for the variables the release adds most to, what the
    intruder's knowledge alone predicts and what the release adds (RiskProfile.explain)."""
    lines = risk.explain()  # the variables the release adds most to first
    for t in lines[:most]:
        print(f"risk: {t}", file=sys.stderr)
    if len(lines) > most:
        print(f"risk: ... {len(lines) - most} more variable(s): see the codebook (--codebook PATH)", file=sys.stderr)


_COEF_COLUMNS = ("coef_original", "lo_original", "hi_original", "coef_protected", "lo_protected", "hi_protected",
                 "overlap", "std_diff")


def _regression_json(model, table, **extra):
    terms = {}
    for term, row in table.iterrows():
        terms[term] = {k: _digits(float(row[k])) for k in table.columns if k in _COEF_COLUMNS or k in
                       ("overlap_lo", "overlap_hi")}
        if "sign_kept" in table:
            terms[term]["sign_kept"] = bool(row["sign_kept"]) if table["sign_kept"].dtype == bool \
                else _digits(float(row["sign_kept"]))
    return {"model": model, **{k: _digits(v) if isinstance(v, float) else v for k, v in extra.items()},
            "coefficients": terms}


def _print_coefficients(table):
    w = max(12, *(len(str(t)) for t in table.index))
    print(f"  {'term':<{w}s} {'original [95% CI]':>36s} {'protected [95% CI]':>36s} {'overlap':>8s}")
    for term, r in table.iterrows():
        o = f"{r.coef_original:.4g} [{r.lo_original:.4g}, {r.hi_original:.4g}]"
        p = f"{r.coef_protected:.4g} [{r.lo_protected:.4g}, {r.hi_protected:.4g}]"
        print(f"  {str(term):<{w}s} {o:>36s} {p:>36s} {r.overlap:8.3f}")


def _print_scores(scores):
    """``evaluate``'s scores, one a line under the analyses' registry's labels."""
    from .._measures.analyses import REGISTRY, label

    w = max(28, *(len(label(k)) for k in scores))
    for k, v in scores.items():
        higher = k in REGISTRY and REGISTRY[k].direction == "higher"
        print(f"  {label(k):<{w}s} {v:.4f}" + ("  (higher is better)" if higher else ""))


def _print_compared(summary, head, reps, marked=()):
    """``compare``'s headline score (``head``), then each plug-in analysis: per configuration
    its mean over the runs and the 95 % t interval of the mean, best first; the configurations
    ``marked`` with a *."""
    from .._measures.analyses import analysis_info, plugins

    keys = [head] + [a.name for a in plugins() if a.name in set(summary.score)]
    width = max([len(str(c)) for c in summary.config] + [6]) + (2 if marked else 0)
    for i, key in enumerate(keys):
        info = analysis_info(key)
        lower = info.direction == "lower"
        print(("\n" if i else "") + f"{info.label} over {reps} runs (mean and 95 % t interval of the mean; "
              f"{'lower' if lower else 'higher'} is better):")
        for r in summary[summary.score == key].sort_values("mean", ascending=lower).itertuples():
            name = f"{r.config} *" if r.config in marked else r.config
            print(f"  {name:<{width}s} {r.mean:.4f}  [{r.lo:.4f}, {r.hi:.4f}]")


def _digits(v, sig=12):
    return float(f"{v:.{sig}g}")


# ----------------------------------------------------------------------------- the CLI's words
# The library's messages name its keywords (exclude=['P1'], weights='w', allow_unsafe='...');
# the command line says its own flags instead, in this one place.

_CLI_WORDS = [  # whole phrases first (their wording changes with the flag)
    ("pass allow_unsafe='reason' (on the command line --allow-unsafe \"reason\")", "pass --allow-unsafe \"reason\""),
    ("--allow-unsafe \"reason\" (allow_unsafe='reason' in the library)", "--allow-unsafe \"reason\""),
    ("pass allow_unsafe='reason'", "pass --allow-unsafe \"reason\""),
    ("allow_unsafe='internal test file, not published'", "--allow-unsafe \"internal test file, not published\""),
    ("allow_unsafe must be", "--allow-unsafe must be"),
    ("no allow_unsafe reason overrides", "no --allow-unsafe reason overrides"),
    ("(exclude=[...])", "(--keep COLUMNS, released unchanged)"),
    ("exclude it (exclude=[...])", "keep it unchanged (--keep COLUMN)"),
    ("pass sensitive=[...]", "pass --sensitive COLUMNS"),
    ("pass for example rng=12345", "pass for example --seed 12345"),
    ("another seed (the Data page, or rng=)", "another seed (--seed)"),
    ("or leave those columns out (exclude)", "or release those columns unchanged (--keep COLUMNS)"),
    ("pass either rng= or seed=, not both", "give the seed once (--seed)"),
    ("or drop them from the file.", "or leave them out of the release (--drop COLUMNS)."),
    (") or drop them.", ") or leave them out of the release (--drop COLUMNS)."),
    (") or drop it.", ") or leave it out of the release (--drop COLUMN)."),
    ("floors must be a dict such as {'max_close_share': 0.2} or a RiskFloors",
     "floors must be a JSON object such as --set floors='{\"max_close_share\": 0.2}'"),
]
_FLAGS = {"exclude": "--keep", "sensitive": "--sensitive", "weights": "--weights", "strata": "--strata",
          "rng": "--seed", "seed": "--seed", "model": "--model", "models": "--model", "allow_unsafe": "--allow-unsafe",
          "method": "--method"}
_VALUE = r"(\[[^\]]*\]|\{[^}]*\}|'[^']*'|\"[^\"]*\"|[\w.+-]+)?"
_OPTION_NAMES = []  # the option names of every method (read once, at the first message)


def _options():
    if not _OPTION_NAMES:
        try:
            from .._methods import methods
            from .._protect.options import option_schema

            _OPTION_NAMES.extend(sorted({o.name for m in methods() for o in option_schema(m)}))
        except Exception:  # a message is still printed, untranslated
            _OPTION_NAMES.append("")
    return [n for n in _OPTION_NAMES if n]


def _literal(text):
    import ast

    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def _flag_value(text, flag):
    """A library value as the flag's argument: a list of names comma-joined, a string bare."""
    import shlex

    if text in ("[...]", "..."):
        return "COLUMNS" if flag in ("--keep", "--sensitive", "--strata") else "VALUE"
    v = _literal(text)
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        v = ",".join(v)
    return shlex.quote(v) if isinstance(v, str) else text


def _set_value(text):
    """A library value as --set takes it: JSON, a plain string bare."""
    import json
    import shlex

    v = _literal(text)
    try:
        out = v if isinstance(v, str) and v == text.strip("'\"") and v.isidentifier() else json.dumps(v)
    except (TypeError, ValueError):
        return text
    return out if out.isidentifier() or out.replace(".", "").replace("-", "").isdigit() else shlex.quote(out)


def cli_words(text, set_keys=()):
    """``text`` (a library message) with the library's keywords as the command line's flags:
    ``exclude=['P1']`` -> ``--keep P1``, ``weights='w'`` -> ``--weights w``, a method's
    option ``k=3`` -> ``--set k=3``; a keyword the user gave with ``--set`` (``set_keys``)
    stays ``--set key=value``."""
    import re

    for lib, cli in _CLI_WORDS:
        text = text.replace(lib, cli)
    names = set(_FLAGS) | set(_options())
    pattern = r"(?<![\w.\-'\"\[])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")=" + _VALUE

    kept = []  # the columns an exclude= names: also what --drop would take

    def swap(m):
        key, value = m.group(1), m.group(2)
        if m.string[max(0, m.start() - 6):m.start()] == "--set ":
            return m.group(0)
        if key == "exclude" and value and value != "[...]":
            kept.append(_flag_value(value, "--keep"))
        if key in _FLAGS and key not in set_keys:
            return _FLAGS[key] + (f" {_flag_value(value, _FLAGS[key])}" if value else "")
        return f"--set {key}=" + (_set_value(value) if value else "")

    text = re.sub(pattern, swap, text)
    return text.replace("--drop COLUMNS", f"--drop {kept[0]}") if len(kept) == 1 else text


def _analyses(args, orig, prot, sens):
    """What analysts keep (``evaluate --analyses``, ``--domains``), or None."""
    if not args.analyses:
        return None
    from .._measures.battery import analyst_checks

    doms = [c.strip() for c in args.domains.split(",") if c.strip()] if getattr(args, "domains", None) else None
    return analyst_checks(orig, prot, sensitive=sens, weights=args.weights, domains=doms)


def _analyses_json(kept):
    """The battery's table as JSON rows: 12 significant digits, null where a figure does not apply."""
    import math

    return [{k: ((None if math.isnan(v) else _digits(v)) if isinstance(v, float) else v) for k, v in row.items()}
            for row in kept.table.to_dict("records")]
