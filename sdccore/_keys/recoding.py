"""Global recoding of categorical key variables (sdcMicro's ``globalRecode``,
``groupAndRename`` and ``topBotCoding``): every record's value of a key is replaced by a
coarser category, the same way in the whole file, so that rare combinations of keys meet
others and fewer values need to be blanked by local suppression.

A ``Recoding`` is a rule for one column, of one of four kinds:

* ``"bands"``: a numeric key cut into intervals at ``breaks``, as sdcMicro's ``globalRecode``
  cuts with R's ``cut``: right-closed intervals (a, b] by default (``right=True``), the lowest
  break itself outside unless ``include_lowest`` (R's ``include.lowest``); ``right=False``
  gives [a, b).  sdcMicro turns a value outside every interval into NA, a blank that matches
  every value (a suppression nobody asked for): here it is refused, with the fix.  Labels
  are in the variable's units: on whole numbers (age) the interval (19, 29] reads "20-29" and
  an open last band (89, inf] "90+"; otherwise R's own "(0,2.5]".
* ``"merge"``: categories mapped to new ones (sdcMicro's ``groupAndRename``: rare levels into
  "other", adjacent levels into one); a category the mapping names must occur in the column.
* ``"top"`` / ``"bottom"``: values above (below) ``value`` replaced by ``replacement``, as
  ``topBotCoding`` does (strictly above: x > value); the default replacement is a label,
  "70+" for ages above 69, "under 5" for values below 5.

A missing value stays missing.  The information a recoding loses is measured on the values
themselves: the distinct values before and after, Shannon's entropy of the variable before
minus after (in bits; a recoding is a function of the value, so it never gains), and the
share of records whose new category holds more than one original value (a one-to-one
relabelling changes nothing a user can tell apart).  ``recode`` applies rules to a file; the
rules go into recipes through ``to_dict`` / ``from_dict`` (JSON-safe)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe, check_names

__all__ = ["Recoding", "recode"]

KINDS = ("bands", "merge", "top", "bottom")
# the fields each kind uses beside kind and column (a field of another kind left at its default)
FIELDS = {"bands": ("breaks", "right", "include_lowest", "labels"), "merge": ("mapping",),
          "top": ("value", "replacement"), "bottom": ("value", "replacement")}
DEFAULTS = {"breaks": (), "right": True, "include_lowest": False, "labels": None, "mapping": (), "value": None,
            "replacement": None}


def _real(x):
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _plain(x):
    """A JSON-safe Python scalar (numpy scalars unwrapped)."""
    return x.item() if isinstance(x, np.generic) else x


def _num(x):
    """A number as R's ``cut`` labels it (``formatC(digits = 8)``): 10, 2.5, Inf."""
    x = float(x)
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return str(int(x)) if x.is_integer() else f"{x:.8g}"


def _span(lo, hi):
    return f"{lo} to {hi}" if lo < 0 or hi < 0 else f"{lo}-{hi}"


def _whole_label(a, b, closed_a, closed_b):
    """The label of an interval holding whole numbers: "20-29", "90+", "up to 9", "7"."""
    lo = -math.inf if math.isinf(a) else (math.ceil(a) if closed_a else math.floor(a) + 1)
    hi = math.inf if math.isinf(b) else (math.floor(b) if closed_b else math.ceil(b) - 1)
    if math.isinf(lo) and math.isinf(hi):
        return "all"
    if math.isinf(hi):
        return f"{lo}+"
    if math.isinf(lo):
        return f"up to {hi}"
    return str(lo) if lo == hi else (_span(lo, hi) if lo < hi else None)


def band_labels(breaks, right=True, include_lowest=False, whole=True):
    """The automatic labels of the bands (module docstring); R's "(a,b]" notation when the
    values are not whole numbers or a band would hold none."""
    nb = len(breaks) - 1
    out = []
    for i in range(nb):
        a, b = float(breaks[i]), float(breaks[i + 1])
        closed_a = (not right) or (include_lowest and i == 0)
        closed_b = right or (include_lowest and i == nb - 1)
        lab = _whole_label(a, b, closed_a, closed_b) if whole else None
        r_label = ("[" if closed_a else "(") + f"{_num(a)},{_num(b)}" + ("]" if closed_b else ")")
        out.append(lab if lab is not None else r_label)
    if len(set(out)) < len(out):  # whole-number labels that coincide: the intervals' own notation
        return band_labels(breaks, right, include_lowest, whole=False)
    return tuple(out)


def _name(col):
    return f"{col}: " if col else ""


def _check_bands(r):
    col = _name(r.column)
    b = list(r.breaks)
    if len(b) < 2 or not all(_real(x) for x in b) or any(math.isnan(float(x)) for x in b):
        raise ValueError(f"{col}breaks={b!r} must be at least two numbers (cut points), e.g. breaks=[0, 10, 20, "
                         f"float('inf')].")
    if any(float(x) >= float(y) for x, y in zip(b, b[1:])):
        raise ValueError(f"{col}breaks={b!r} must increase strictly; sort them and drop repeated cut points.")
    if not isinstance(r.right, bool) or not isinstance(r.include_lowest, bool):
        raise ValueError(f"{col}right and include_lowest must be True or False.")
    if r.labels is not None:
        labs = list(r.labels)
        if len(labs) != len(b) - 1 or len(set(labs)) != len(labs) or not all(isinstance(x, str) or _real(x)
                                                                              for x in labs):
            raise ValueError(f"{col}labels must be {len(b) - 1} distinct names, one for each band between the "
                             f"{len(b)} breaks (or None for automatic labels such as '20-29').")


def _check_merge(r):
    col = _name(r.column)
    if not r.mapping:
        raise ValueError(f"{col}mapping is empty; give the categories to merge, e.g. mapping={{'7': 'other', "
                         f"'9': 'other'}}.")
    olds = [o for o, _ in r.mapping]
    for v in olds + [n for _, n in r.mapping]:
        if not (isinstance(v, (str, bool)) or _real(v)) or (_real(v) and math.isnan(float(v))):
            raise ValueError(f"{col}mapping must map categories (text or numbers) to categories (text or numbers); "
                             f"a missing value or another object is no category (to blank values use "
                             f"local_suppression).")
    if len(set(olds)) < len(olds):
        raise ValueError(f"{col}mapping names a category twice; list each category once.")


def _check_cut(r):
    col = _name(r.column)
    if not _real(r.value) or not math.isfinite(float(r.value)):
        raise ValueError(f"{col}value={r.value!r} must be a finite number: the threshold of the {r.kind} coding.")
    rep = r.replacement
    if rep is not None and not (isinstance(rep, str) or (_real(rep) and math.isfinite(float(rep)))):
        raise ValueError(f"{col}replacement={rep!r} must be a label (text), a finite number or None (a label "
                         f"such as '85+').")


def _pairs(mapping):
    if isinstance(mapping, dict):
        mapping = list(mapping.items())
    try:
        return tuple((_plain(o), _plain(n)) for o, n in mapping)
    except (TypeError, ValueError):
        raise ValueError("mapping must be a dict {old category: new category} or a list of [old, new] "
                         "pairs.") from None


@dataclass(frozen=True)
class Recoding:
    """A global recoding rule for one key variable (``recode``, ``suggest_recodings``).

    Attributes
    ----------
    kind : str
        "bands", "merge", "top" or "bottom" (module docstring).
    column : str or None
        The column it recodes (None: whichever it is applied to).
    breaks : tuple of float
        bands: the cut points, increasing; ``float('inf')`` ends an open band ("90+").
    right : bool
        bands: intervals closed on the right, (a, b], as sdcMicro's ``globalRecode`` (True) or
        [a, b) (False).
    include_lowest : bool
        bands: the lowest break belongs to the first interval (right=False: the highest to the
        last), as R's ``include.lowest``.
    labels : tuple or None
        bands: one name a band; None for automatic labels in the variable's units.
    mapping : tuple of (old, new) pairs
        merge: each listed category and its new category; others are kept.
    value : float or None
        top/bottom: the threshold (values strictly above / below it are replaced).
    replacement : str, float or None
        top/bottom: what replaces them; None for a label such as "85+" or "under 5".
    """

    kind: str
    column: str | None = None
    breaks: tuple = ()
    right: bool = True
    include_lowest: bool = False
    labels: tuple | None = None
    mapping: tuple = ()
    value: float | None = None
    replacement: object = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{_name(self.column)}kind={self.kind!r} is not a recoding; choose one of "
                             f"{', '.join(KINDS)}.")
        if self.column is not None and not isinstance(self.column, str):
            raise ValueError(f"column={self.column!r} must be a column name (text) or None.")
        set_ = lambda f, v: object.__setattr__(self, f, v)  # noqa: E731
        for f in ("breaks", "labels"):
            v = getattr(self, f)
            if v is None or isinstance(v, str) or not hasattr(v, "__iter__"):
                if f == "breaks" or v is not None:
                    raise ValueError(f"{_name(self.column)}{f}={v!r} must be a list"
                                     + (" of cut points, e.g. breaks=[0, 10, 20, float('inf')] (sdcMicro's number "
                                        "of intervals is not taken: name the cut points)." if f == "breaks" else
                                        " of band names, one a band."))
                continue
            set_(f, tuple(_plain(x) for x in v))
        set_("mapping", _pairs(self.mapping))
        set_("value", _plain(self.value))
        set_("replacement", _plain(self.replacement))
        other = [f for f in DEFAULTS if f not in FIELDS[self.kind] and getattr(self, f) != DEFAULTS[f]]
        if other:
            raise ValueError(f"{_name(self.column)}{', '.join(other)} {'is' if len(other) == 1 else 'are'} not used by "
                             f"a {self.kind} recoding; leave {'it' if len(other) == 1 else 'them'} out.")
        {"bands": _check_bands, "merge": _check_merge}.get(self.kind, _check_cut)(self)

    # constructors ------------------------------------------------------------------------
    @classmethod
    def bands(cls, breaks, *, column=None, right=True, include_lowest=False, labels=None):
        """Intervals of a numeric key (sdcMicro's ``globalRecode(x, breaks)``)."""
        return cls("bands", column, breaks=breaks, right=right, include_lowest=include_lowest, labels=labels)

    @classmethod
    def merge(cls, mapping, *, column=None):
        """Categories mapped to new ones: {old: new}."""
        return cls("merge", column, mapping=mapping)

    @classmethod
    def group(cls, before, after, *, column=None):
        """sdcMicro's ``groupAndRename(x, before, after)``: the categories ``before`` become ``after``."""
        if isinstance(before, (str, bytes)) or not hasattr(before, "__iter__"):
            before = [before]
        return cls("merge", column, mapping=[(b, after) for b in before])

    @classmethod
    def top(cls, value, *, column=None, replacement=None):
        """Values above ``value`` replaced (sdcMicro's ``topBotCoding(kind='top')``)."""
        return cls("top", column, value=value, replacement=replacement)

    @classmethod
    def bottom(cls, value, *, column=None, replacement=None):
        """Values below ``value`` replaced (sdcMicro's ``topBotCoding(kind='bottom')``)."""
        return cls("bottom", column, value=value, replacement=replacement)

    # applying ----------------------------------------------------------------------------
    def apply(self, series) -> pd.Series:
        """The recoded column (same index and name); a missing value stays missing."""
        if not isinstance(series, pd.Series):
            raise TypeError(f"{_name(self.column)}apply takes a pandas Series (one column), not "
                             f"{type(series).__name__}.")
        if self.kind == "merge":
            return _merge(self, series)
        x, whole = _numbers(self, series)
        return _bands(self, series, x, whole) if self.kind == "bands" else _cut(self, series, x, whole)

    def label(self, whole=True):
        """top/bottom: the replacement (the automatic label for whole numbers or not)."""
        if self.replacement is not None or self.kind not in ("top", "bottom"):
            return self.replacement
        v = float(self.value)
        if self.kind == "top":
            return f"{math.floor(v) + 1}+" if whole else f"over {_num(v)}"
        return f"under {_num(v)}"

    def information_lost(self, series) -> dict:
        """What recoding ``series`` loses: distinct values before and after, entropy lost
        (bits) and the share of records whose new category holds several original values."""
        return information_lost(series, self.apply(series))

    def describe(self, series=None) -> str:
        """The rule in one line of plain words; with the column, the distinct values before
        and after ("age in bands of 10: 0-9, 10-19, ..., 90+ (88 values -> 10)")."""
        name = self.column or (series.name if series is not None and series.name is not None else "the variable")
        whole = True
        if series is not None and self.kind != "merge":
            whole = _numbers(self, series)[1]
        elif self.kind == "bands":
            whole = all(math.isinf(float(b)) or float(b).is_integer() for b in self.breaks)
        text = {"bands": _describe_bands, "merge": _describe_merge}.get(self.kind, _describe_cut)(self, name, whole)
        if series is not None:
            info = self.information_lost(series)
            text += f" ({info['distinct_before']} values -> {info['distinct_after']})"
        return text

    # recipes -----------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The rule as JSON-safe data (infinite breaks as "inf" / "-inf"); ``from_dict`` reads it."""
        out = {"kind": self.kind, "column": self.column}
        for f in FIELDS[self.kind]:
            v = getattr(self, f)
            if f == "breaks":
                v = [("inf" if b > 0 else "-inf") if math.isinf(float(b)) else b for b in v]
            elif f == "mapping":
                v = [[o, n] for o, n in v]
            elif f == "labels" and v is not None:
                v = list(v)
            out[f] = v
        return out

    @classmethod
    def from_dict(cls, d) -> Recoding:
        """The rule ``to_dict`` wrote."""
        if isinstance(d, Recoding):
            return d
        if not isinstance(d, dict) or "kind" not in d:
            raise ValueError(f"a recoding must be a Recoding or a dict with a 'kind' ({', '.join(KINDS)}), not "
                             f"{type(d).__name__}.")
        unknown = sorted(set(d) - set(DEFAULTS) - {"kind", "column"})
        if unknown:
            raise ValueError(f"{_name(d.get('column'))}the recoding has unknown field(s) {', '.join(unknown)}; the "
                             f"fields are kind, column, {', '.join(DEFAULTS)}.")
        kw = dict(d)
        if isinstance(kw.get("breaks"), (list, tuple)):
            kw["breaks"] = tuple(float(b) if isinstance(b, str) and b in ("inf", "-inf") else b for b in kw["breaks"])
        return cls(**kw)

    def __repr__(self):
        return f"Recoding({self.describe()!r})"


def _numbers(rule, series):
    """(the values as floats, NaN for missing; whether all are whole numbers) of a numeric
    column, else a ValueError with the fix."""
    s = series
    ok = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
    if not ok and s.dtype == object:
        t = pd.to_numeric(s, errors="coerce")
        ok = bool((t.notna() == s.notna()).all()) and not s.map(lambda v: isinstance(v, (bool, np.bool_))).any()
        s = t
    if not ok:
        col = rule.column or series.name
        raise ValueError(f"{_name(col)}{rule.kind} coding needs numbers, and this column holds categories "
                         f"({series.dtype}); merge its categories instead (Recoding.merge).")
    x = s.to_numpy(dtype=np.float64, na_value=np.nan)
    fin = x[np.isfinite(x)]
    return x, bool(np.all(fin == np.floor(fin)))


def _bands(rule, series, x, whole):
    b = np.asarray(rule.breaks, dtype=np.float64)
    nb = len(b) - 1
    idx = np.searchsorted(b, x, side="left" if rule.right else "right") - 1
    if rule.include_lowest:
        idx[x == b[0 if rule.right else -1]] = 0 if rule.right else nb - 1
    miss = np.isnan(x)
    out = ~miss & ((idx < 0) | (idx >= nb))
    if out.any():
        col = rule.column or series.name
        edge = ("(a, b]: the lowest break itself is outside" if rule.right
                else "[a, b): the highest break itself is outside")
        raise ValueError(f"{_name(col)}{int(out.sum())} value(s) fall outside the bands of breaks={list(rule.breaks)} "
                         f"(intervals {edge}); sdcMicro would make them missing. Extend the breaks to cover every "
                         f"value (float('-inf') / float('inf') at the ends), or pass include_lowest=True.")
    labels = list(rule.labels) if rule.labels is not None else list(band_labels(rule.breaks, rule.right,
                                                                                rule.include_lowest, whole))
    codes = np.where(miss, -1, idx)
    cat = pd.Categorical.from_codes(codes, categories=pd.Index(labels, dtype=object), ordered=True)
    return pd.Series(cat, index=series.index, name=series.name)


def _cut(rule, series, x, whole):
    hit = (x > float(rule.value)) if rule.kind == "top" else (x < float(rule.value))
    rep = rule.label(whole)
    if not isinstance(rep, str):  # a number: the column stays numeric, as topBotCoding leaves it
        return series.where(~pd.Series(hit, index=series.index), rep)
    keep = ~np.isnan(x) & ~hit
    vals = series.to_numpy(dtype=object)
    rest = sorted(set(pd.unique(x[keep])))
    first = {}
    for v, xv in zip(vals[keep], x[keep]):  # each kept number's own value (an int stays an int)
        first.setdefault(xv, _plain(v))
    cats = [first[v] for v in rest]
    codes = np.full(len(x), -1, dtype=np.int64)
    codes[keep] = np.searchsorted(np.asarray(rest, dtype=np.float64), x[keep]) + (1 if rule.kind == "bottom" else 0)
    if rep in cats:
        raise ValueError(f"{_name(rule.column or series.name)}replacement={rep!r} is a value the column keeps; choose "
                         f"another label.")
    if rule.kind == "top":
        codes[hit] = len(cats)
        cats = cats + [rep]
    else:
        codes[hit] = 0
        cats = [rep] + cats
    cat = pd.Categorical.from_codes(codes, categories=pd.Index(cats, dtype=object), ordered=True)
    return pd.Series(cat, index=series.index, name=series.name)


def _levels(series):
    """(codes with -1 for missing, the levels in order: a categorical's own, else sorted
    where they compare, else as they appear)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return series.cat.codes.to_numpy(np.int64), [_plain(v) for v in series.cat.categories]
    codes, uniq = pd.factorize(series, use_na_sentinel=True)
    uniq = [_plain(v) for v in uniq]
    try:
        order = sorted(range(len(uniq)), key=lambda i: uniq[i])
    except TypeError:
        return codes.astype(np.int64), uniq
    pos = np.empty(len(uniq), dtype=np.int64)
    pos[order] = np.arange(len(uniq))
    return np.where(codes >= 0, pos[np.maximum(codes, 0)] if len(uniq) else codes, -1), [uniq[i] for i in order]


def _merge(rule, series):
    codes, levels = _levels(series)
    m = dict(rule.mapping)
    held = set(levels)
    absent = [o for o in m if o not in held]
    if absent:
        col = rule.column or series.name
        raise ValueError(f"{_name(col)}mapping names {len(absent)} categor{'y' if len(absent) == 1 else 'ies'} the "
                         f"column does not hold ({', '.join(map(repr, absent[:5]))}); as sdcMicro's groupAndRename, "
                         f"every category to merge must be one of the column's (check text '6' against number 6).")
    new = [m.get(v, v) for v in levels]
    cats = list(dict.fromkeys(new))
    pos = {v: i for i, v in enumerate(cats)}
    to = np.array([pos[v] for v in new], dtype=np.int64)
    nc = np.where(codes >= 0, to[np.maximum(codes, 0)] if len(to) else codes, -1)
    numeric = pd.api.types.is_numeric_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype)
    if numeric and all(_real(v) for v in cats):  # numbers to numbers: the column stays numeric
        vals = np.asarray(cats, dtype=np.float64)[np.maximum(nc, 0)]
        vals[nc < 0] = np.nan
        out = pd.Series(vals, index=series.index, name=series.name)
        if pd.api.types.is_integer_dtype(series.dtype) and (nc >= 0).all() and all(float(v).is_integer() for v in cats):
            out = out.astype(series.dtype)
        return out
    ordered = isinstance(series.dtype, pd.CategoricalDtype) and bool(series.cat.ordered)
    cat = pd.Categorical.from_codes(nc, categories=pd.Index(cats, dtype=object), ordered=ordered)
    return pd.Series(cat, index=series.index, name=series.name)


def _short(labels, at_most=5):
    labels = [str(x) for x in labels]
    return ", ".join(labels if len(labels) <= at_most else labels[:2] + ["..."] + labels[-1:])


def _describe_bands(rule, name, whole):
    labels = rule.labels or band_labels(rule.breaks, rule.right, rule.include_lowest, whole)
    widths = {float(b) - float(a) for a, b in zip(rule.breaks, rule.breaks[1:]) if math.isfinite(float(b) - float(a))}
    head = f"{name} in bands of {_num(widths.pop())}" if len(widths) == 1 else f"{name} in {len(labels)} bands"
    return f"{head}: {_short(labels)}"


def _describe_merge(rule, name, whole):
    groups = {}
    for o, n in rule.mapping:
        groups.setdefault(n, []).append(o)
    parts = [f"{_short(olds, 4)} -> {new}" for new, olds in groups.items()]
    return f"{name}: " + "; ".join(parts[:4]) + ("; ..." if len(parts) > 4 else "")


def _describe_cut(rule, name, whole):
    side = "above" if rule.kind == "top" else "below"
    return f"{name} {rule.kind}-coded: values {side} {_num(rule.value)} -> {rule.label(whole)}"


def entropy(series) -> float:
    """Shannon's entropy (bits) of a column's observed values (missing values left out)."""
    codes = pd.factorize(series, use_na_sentinel=True)[0]
    counts = np.bincount(codes[codes >= 0]).astype(np.float64)
    p = counts[counts > 0] / max(counts.sum(), 1.0)
    return float(-(p * np.log2(p)).sum())


def information_lost(before, after) -> dict:
    """Distinct values before/after, entropy lost (bits) and the share of records whose new
    category holds more than one original value."""
    b = pd.factorize(before, use_na_sentinel=True)[0]
    a = pd.factorize(after, use_na_sentinel=True)[0]
    ok = (a >= 0) & (b >= 0)
    changed = 0.0
    if ok.any():
        pairs = np.unique(np.column_stack([a[ok], b[ok]]), axis=0)
        several = np.bincount(pairs[:, 0], minlength=int(a.max()) + 1) > 1
        changed = float(several[a[ok]].sum()) / len(a)
    lost = entropy(before) - entropy(after)
    return {"distinct_before": int(before.nunique(dropna=True)), "distinct_after": int(after.nunique(dropna=True)),
            "entropy_lost": 0.0 if abs(lost) < 1e-12 else lost, "records_changed": changed}


def _rule(col, r):
    try:
        rule = Recoding.from_dict(r)
    except ValueError as e:
        raise ValueError(f"rules[{col!r}]: {e}") from None
    if rule.column is not None and rule.column != col:
        raise ValueError(f"rules[{col!r}] is a recoding of column {rule.column!r}; key each rule by the column it "
                         f"recodes.")
    return replace(rule, column=col)


def recode(data, rules) -> pd.DataFrame:
    """Globally recode key variables: each rule replaces a column's values by coarser
    categories (bands, merged categories, top or bottom codes).

    Parameters
    ----------
    data : DataFrame
    rules : dict
        Column -> ``Recoding`` (or the dict its ``to_dict`` gives); a list of Recodings that
        name their columns is applied in order.

    Returns
    -------
    DataFrame
        A copy of the file with the columns recoded; a missing value stays missing.

    Examples
    --------
    >>> import sdccore
    >>> from sdccore._keys.recoding import Recoding, recode
    >>> d = sdccore.load_dataset("testdata")
    >>> r = recode(d, {"age": Recoding.bands([0, 10, 20, 30, 40, 50, 60, 70, 80, 90, float("inf")], right=False)})
    >>> r.age.value_counts(sort=False).tolist()
    [1226, 1110, 635, 629, 447, 250, 200, 70, 10, 3]
    """
    data = check_dataframe(data)
    if isinstance(rules, Recoding):
        rules = [rules]
    if isinstance(rules, (list, tuple)):
        if not all(isinstance(r, Recoding) and r.column for r in rules):
            raise ValueError("rules as a list must hold Recodings that name their column (column='age'); or pass a "
                             "dict {column: Recoding}.")
        pairs = [(r.column, r) for r in rules]
    elif isinstance(rules, dict):
        pairs = list(rules.items())
    else:
        raise ValueError(f"rules must be a dict {{column: Recoding}}, not {type(rules).__name__}; e.g. rules={{'age': "
                         f"Recoding.bands([0, 10, 20, float('inf')], right=False)}}.")
    if not pairs:
        raise ValueError("rules is empty; give at least one {column: Recoding}.")
    check_names(list(dict.fromkeys(c for c, _ in pairs)), list(data.columns), "rules", "the columns of data")
    out = data.copy()
    for col, r in pairs:
        out[col] = _rule(col, r).apply(out[col])
    return out
