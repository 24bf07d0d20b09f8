"""Roles that are safe by default: identifiers found and dropped, codes set apart.

A text column unique per record (a patient id, a company name) released unchanged links
every record to its owner; a numeric identifier (a utility number) protected as if it
were a measurement is nonsense and may still identify; a 1/2-coded sex perturbed into
1.37 gives the perturbation away.  ``suggest_roles`` proposes a role for every column with
the reason in words; the dashboard pre-marks its suggestions, the command line refuses a
file whose identifier-like or text columns were not given a role.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe, numeric_columns

__all__ = ["suggest_roles", "RoleSuggestion"]

ROLES = ("sensitive", "public", "excluded", "identifier")
ID_WORDS = {"id", "ids", "code", "name", "key", "nr", "no", "number", "uuid", "identifier", "ident"}
UNIQUE_SHARE = 0.9       # a text column with at least this share of distinct values is an identifier
CODE_DISTINCT = 15       # a whole-number column with at most this many distinct values is a code


def _tokens(name: str):
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", str(name))
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def looks_like_id_name(name) -> bool:
    """Names such as id, patient_id, PatientID, UTILITYID, UTILNAME, firm code, record number."""
    text = str(name)
    if any(t in ID_WORDS for t in _tokens(text)):
        return True
    upper = text.upper()
    return (text.isupper() and (upper.endswith("ID") or "NAME" in upper or upper.endswith("CODE"))) or \
        bool(re.search(r"[a-z](Id|ID|Name|Code)$", text))


@dataclass(frozen=True)
class RoleSuggestion:
    """What ``suggest_roles`` returns.

    Attributes
    ----------
    roles : dict
        Column -> 'identifier', 'excluded' or 'public'.
    reasons : dict
        Column -> why, in words, for every column not simply 'public'.
    flags : dict
        Column -> kind: 'identifier', 'text', 'code', 'constant', 'time', 'household',
        'weight'.
    table : DataFrame
        One row a column: type, distinct values, role, reason.
    keys : tuple
        The suggested key variables (quasi-identifiers) for ``key_risk``: the codes and text
        categories set apart, and an age in whole years.
    household : str or None
        The suggested household id (released unchanged, never perturbed).
    weight : str or None
        The suggested sampling weight (released unchanged, never perturbed as data).
    """

    roles: dict
    reasons: dict
    flags: dict
    table: pd.DataFrame
    keys: tuple = ()
    household: str | None = None
    weight: str | None = None


def suggest_roles(data, *, preset=None, value_labels=None) -> RoleSuggestion:
    """A role for every column of ``data``, with the reason.

    * identifier: a text column with at least 90 % distinct values, or any column whose name
      says identifier (id, code, name, key, number, ...) and whose values are text or whole
      numbers, or a whole-number column with a different value on every record.
    * excluded (released unchanged) and flagged: other text columns ('text') and whole-number
      columns with at most 15 distinct values, each repeated (at least 4 records a value on
      average) and below 100,000 in size ('code': sex, month, region codes); constant
      columns ('constant': nothing to protect); a time index ('time': 16 to 100 consecutive
      whole numbers each repeated across records, such as a panel's years), flagged for a
      decision.  A numeric column with
      value labels (SPSS, Stata: ``ReadResult.value_labels``) is a code too, whatever its
      number of values.
    * public: every other numeric column (choose the sensitive ones yourself).

    Parameters
    ----------
    data : DataFrame
    preset : dict, optional
        {'identifier': [...], 'exclude': [...]} (a sample's known roles, ``dataset_roles``):
        wins over the rules.
    value_labels : dict, optional
        Column -> {code: label} as read from an SPSS or Stata file.

    Returns
    -------
    RoleSuggestion

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> df = pd.DataFrame({"firm_id": ["a1", "b2", "c3", "d4"], "sales": [1.5, 2.25, 3.0, 8.5]})
    >>> sdccore.suggest_roles(df).roles
    {'firm_id': 'identifier', 'sales': 'public'}
    """
    data = check_dataframe(data)
    n = len(data)
    num = set(numeric_columns(data))
    roles, reasons, flags, rows = {}, {}, {}, []
    preset = preset or {}
    for c in data.columns:
        s = data[c]
        distinct = int(s.nunique(dropna=True))
        design = _design_role(c, s, distinct, n, c in num, body=_body_measures(data.columns))
        if c in preset.get("identifier", ()):
            role, why, flag = "identifier", "the sample's documented identifier", "identifier"
        elif design is not None:
            role, why, flag = design
        elif c in preset.get("exclude", ()):
            role, why, flag = "excluded", "the sample's documented code or date column", "code"
        elif c not in num:
            role, why, flag = _text_role(c, distinct, n)
        else:
            role, why, flag = _numeric_role(c, s, distinct, n, value_labels)
        roles[c] = role
        if why:
            reasons[c] = why
        if flag:
            flags[c] = flag
        rows.append({"column": str(c), "type": "numeric" if c in num else "text", "distinct": distinct,
                     "suggested role": role, "reason": why})
    keys = tuple(c for c in data.columns if flags.get(c) in ("code", "text") or (c in num and _is_age(c, data[c])))
    first = lambda kind: next((c for c, f in flags.items() if f == kind), None)  # noqa: E731
    return RoleSuggestion(roles, reasons, flags, pd.DataFrame(rows), keys, first("household"), first("weight"))


HOUSEHOLD_WORDS = {"hid", "hhid", "household", "hh", "hhld", "hhno", "hhnum", "dwelling"}
WEIGHT_WORDS = {"wgt", "wght", "pweight", "fweight", "pwgt", "hhwgt"}
WEIGHT_CONTEXT = {"sampling", "sample", "survey", "design", "household", "hh", "person", "final", "base", "expansion",
                  "raking", "calibration", "calibrated", "pop", "grossing", "inflation"}
MAX_HOUSEHOLD = 30  # a household id: on average at most this many records share a value


BODY_WORDS = {"height", "bmi", "waist", "hip", "kg", "cm", "lbs", "stature", "bp", "cholesterol", "glucose"}
MIN_GROSSING = 500  # a bare 'weight' averaging more than this is no body weight (kg or lb): it grosses up to a population


def _body_measures(columns):
    """Whether the file has body measurements beside a 'weight' (then it is the body weight)."""
    return any(set(_tokens(c)) & BODY_WORDS for c in columns)


def _design_role(c, s, distinct, n, numeric, body=False):
    """A sampling weight or a household id, by its name and values (checked before the other
    rules: a household id named hh_id is no identifier to drop, a constant sampling weight is
    still the weight); None for other columns.  A column named only 'weight' is a sampling
    weight only by its values: constant, normalised to a mean of 1, or grossing up (a mean
    above 500, which no body weight in kg or lb reaches), and with no body measurement beside
    it (height, BMI ...): in a health file it is the body weight, a measurement to protect."""
    words = set(_tokens(c))
    named = words & WEIGHT_WORDS or ({"weight", "weights"} & words and words & WEIGHT_CONTEXT)
    bare = {"weight", "weights"} & words and not named and not body
    if numeric and (named or bare):
        x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
        if x.size and np.isfinite(x).all() and (x > 0).all():
            m = float(x.mean())
            if named:
                return ("excluded", "a sampling weight (its name and positive values): never perturbed as data, "
                        "released unchanged; the risk of the key variables and the weighted analyses use it", "weight")
            if distinct <= 1 or abs(m - 1) < 0.01 or m > MIN_GROSSING:
                how = ("constant" if distinct <= 1 else "normalised to a mean of 1" if abs(m - 1) < 0.01 else
                       f"averaging {m:,.0f}, so grossing up to a population; no body weight")
                return ("excluded", f"a sampling weight (named weight, positive values {how}): never perturbed as "
                        f"data, released unchanged; the risk of the key variables and the weighted analyses use it. "
                        f"If it is a measurement, make it public or sensitive", "weight")
    if words & HOUSEHOLD_WORDS and n >= 4 and n / MAX_HOUSEHOLD <= distinct < n:
        if not numeric or _whole(s):
            return ("excluded", f"a household id ({distinct} households, {n / distinct:.1f} persons each on average): "
                    f"kept as it is so that the persons of a household stay together, never perturbed", "household")
    return None


def _whole(s):
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    return x.size > 0 and bool(np.all(x == np.round(x)))


def _is_age(c, s):
    """An age in whole years (0-130), by its name: a key variable, whatever its role."""
    if "age" not in set(_tokens(c)):
        return False
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    return x.size > 0 and _whole(s) and x.min() >= 0 and x.max() <= 130


def _text_role(c, distinct, n):
    """A text column: an identifier when unique per record or so named, else excluded."""
    if n >= 5 and distinct >= UNIQUE_SHARE * n:
        return "identifier", f"text with {distinct} distinct values in {n} records: unique per record", "identifier"
    if looks_like_id_name(c):
        return "identifier", "text whose name says identifier", "identifier"
    return "excluded", f"text ({distinct} distinct values): released unchanged unless you drop it", "text"


def _numeric_role(c, s, distinct, n, value_labels):
    """A numeric column: a constant, a code, an identifier, a time index, or a public
    measurement (the default)."""
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    fin = x[np.isfinite(x)]
    whole = fin.size > 0 and bool(np.all(fin == np.round(fin)))
    if distinct <= 1:
        return ("excluded", "constant: the same value in every record, nothing to protect; released unchanged (a "
                "constant cannot be decomposed or protected)", "constant")
    if value_labels and value_labels.get(c):
        return ("excluded", f"has value labels ({len(value_labels[c])} coded categories in the original file): a "
                f"categorical variable, released unchanged unless you decide otherwise", "code")
    if looks_like_id_name(c) and whole:
        return "identifier", "whole numbers under a name that says identifier", "identifier"
    if whole and n >= 5 and distinct == n and _is_sequence(fin):
        return "identifier", "a different whole number on every record, in order: a record number", "identifier"
    if whole and _is_time_index(fin, distinct, n, c):
        lo_, hi_ = int(fin.min()), int(fin.max())
        return ("excluded", f"looks like a time index ({distinct} consecutive whole numbers {lo_}-{hi_}, each in about "
                f"{n // distinct} records: years, months or periods of a panel); released unchanged. Decide: "
                f"keep it excluded, or make it public or sensitive if the period itself needs protection", "time")
    if whole and distinct <= CODE_DISTINCT and n >= 4 * distinct and np.abs(fin).max() <= 1e5:
        return ("excluded", f"only {distinct} distinct whole numbers: a code or category (sex, month, region); "
                f"perturbing it gives impossible values, so it is released unchanged unless you decide otherwise",
                "code")
    return "public", "", None


TIME_DISTINCT = 100  # a time index of a panel: at most this many periods


TIME_WORDS = {"year", "yr", "month", "quarter", "week", "day", "date", "period", "time", "t", "wave", "round"}


def _is_time_index(x, distinct, n, name=""):
    """Consecutive whole numbers (a range without gaps), each repeated across units (at least
    two records a value on average), at most TIME_DISTINCT of them and more than CODE_DISTINCT
    (fewer are caught as codes), named as time (year, month, period, ...) or with values that
    read as years (1800-2200): grunfeld's year (20 years of 10 firms).  Codes 1-20 of an
    occupation are consecutive too, hence the name or the years."""
    if not CODE_DISTINCT < distinct <= TIME_DISTINCT or n < 2 * distinct:
        return False
    if int(x.max() - x.min()) + 1 != distinct:
        return False
    return bool(set(_tokens(name)) & TIME_WORDS) or (x.min() >= 1800 and x.max() <= 2200)


def _is_sequence(x):
    d = np.diff(x)
    return bool(np.all(d > 0) or np.all(d < 0))
