"""Numbers written as text, cell by cell: missing marks, currency signs, thousands separators,
percent signs and parentheses for negatives (``looks_numeric``, ``_to_number``); what
``read_table``, the checks and the Dask reader share."""

from __future__ import annotations

import re

import pandas as pd

__all__ = []


# cells read as missing in a numeric column (compared in lower case, after trimming)
MISSING_MARKERS = ("", "-", "--", ".", "?", "na", "n/a", "n.a.", "nan", "null", "none", "#n/a", "missing")
_CURRENCY = "$€£¥₹₽₩¤"
_SPACES = "\u00a0\u202f\u2009\u2007 "
# thousands groups: one separator used throughout, groups of exactly three digits
_NUM_DOT = re.compile(r"^[-+]?(?:\d{1,3}(?P<g>[,'\u00a0\u202f\u2009\u2007 ])\d{3}(?:(?P=g)\d{3})*|\d*)"
                      r"(?:\.\d*)?(?:[eE][-+]?\d+)?$")
_NUM_COMMA = re.compile(r"^[-+]?(?:\d{1,3}(?P<g>[.'\u00a0\u202f\u2009\u2007 ])\d{3}(?:(?P=g)\d{3})*|\d*)"
                        r"(?:,\d*)?$")


def _clean_cells(s: pd.Series):
    """(core text, negative-in-parentheses, had currency, had percent, missing) per cell."""
    t = s.astype("string").str.strip(_SPACES + "\t").str.strip('"').str.strip("'").str.strip(_SPACES)
    t = t.str.replace("\u2212", "-", regex=False)  # the Unicode minus sign (typeset tables, some exports)
    missing = t.isna() | t.str.lower().isin(MISSING_MARKERS)
    paren = t.str.match(r"^\(.*\)$").fillna(False)
    t = t.where(~paren, t.str.slice(1, -1)).str.strip(_SPACES)
    # sign, currency and percent in any of the usual orders: -$1,234.50  $-1,234.50  12%
    sign = t.str.extract(r"^([-+]?)", expand=False).fillna("")
    body = t.str.replace(r"^[-+]", "", regex=True)
    cur = body.str.contains(f"^[{_CURRENCY}]|[{_CURRENCY}]$", regex=True).fillna(False)
    body = body.str.strip(_CURRENCY).str.strip(_SPACES)
    sign2 = body.str.extract(r"^([-+]?)", expand=False).fillna("")
    sign = sign.where(sign != "", sign2)
    body = body.where(sign2 == "", body.str.slice(1))
    pct = body.str.endswith("%").fillna(False)
    body = body.str.rstrip("%").str.strip(_SPACES)
    core = sign + body
    return core, paren, cur, pct, missing


def _parse_core(core: pd.Series, decimal: str):
    """Numbers from cleaned text under one decimal convention; NaN where the grammar fails."""
    pat = _NUM_DOT if decimal == "." else _NUM_COMMA
    ok = core.str.match(pat).fillna(False) & core.str.contains(r"\d", regex=True).fillna(False)
    group = "[,'\u00a0\u202f\u2009\u2007 ]" if decimal == "." else "[.'\u00a0\u202f\u2009\u2007 ]"
    t = core.str.replace(group, "", regex=True)
    if decimal == ",":
        t = t.str.replace(",", ".", regex=False)
    return pd.to_numeric(t.where(ok), errors="coerce")


def _to_number(s: pd.Series, decimal: str):
    """Text to numbers: thousands separators (one kind, groups of three), currency signs,
    percent signs, negatives in parentheses; the decimal mark made '.'.  NaN where a cell
    is not a number under this decimal convention."""
    core, paren, _, _, _ = _clean_cells(s)
    num = _parse_core(core, decimal)
    return num.where(~paren, -num)


def _number_cells(s: pd.Series):
    """(present, number): cells that are not missing-value marks, and cells that read as
    numbers under either decimal convention."""
    core, _, _, _, missing = _clean_cells(s)
    return ~missing, _parse_core(core, ".").notna() | _parse_core(core, ",").notna()


def looks_numeric(s: pd.Series) -> float:
    """Share of the present (non-missing-marker) cells of a text column that read as numbers
    under either decimal convention: 1.0 for numbers stored as text."""
    present, number = _number_cells(s)
    if present.sum() == 0:
        return 0.0
    return float((number & present).sum() / present.sum())
