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


def _digits(v, sig=12):
    return float(f"{v:.{sig}g}")
