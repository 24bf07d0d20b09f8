"""Suggested global recodings of key variables, each with what it buys and what it costs,
computed on the file (not estimated): the custodian's trade between recoding a key (every
record loses detail) and local suppression (a few records lose a value), as one weighs
sdcMicro's ``globalRecode`` / ``groupAndRename`` / ``topBotCoding`` against ``kAnon``.

The candidates, one key at a time (the other keys left as they are):

* a numeric key with many values (more than 15: age): bands of "nice" widths (1, 2 or 5
  times a power of ten) near a twentieth, a tenth and, if the tenth still leaves records
  below k, a fifth of its range (5, 10 and 20 years for ages 0-95), from a multiple of the
  width, the last band open ("90+"); a top code at the value above which fewer than k * c
  records lie, c the number of combinations of the other keys (so thin a tail that spread
  over those combinations it could not fill one to k: its values are each identifying), and a
  bottom code likewise;
* any other key: its rare categories (fewer than k records, or under 1 % of the records)
  merged into one "other" (with the next rarest if only one is rare); for numeric codes also,
  and for an ordered categorical instead, each rare level merged with its smaller neighbour by
  order until none is rare ("6-9"; a candidate that makes the same groups as "other" is left
  out).

For each: records below k before and after (fk as local suppression counts it, another
record's blank matching nothing, and sdcMicro's fk, a blank matching everything; the same on
a file without missing keys), sample uniques, the blanks ``local_suppression`` then needs (the
quantity a custodian trades), and the information lost (``recoding.information_lost``:
distinct values, entropy lost in bits, records whose category now holds several values).
The suggestions are ordered by what they buy per bit lost: suppressions saved / entropy lost."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe
from .frequencies import _group_ids, frequencies, key_codes
from .recoding import Recoding, _levels, information_lost
from .risk import key_risk
from .suppression import _checked, local_suppression

__all__ = ["DefaultRecodings", "RecodingOption", "RecodingSuggestions", "blank_warnings", "default_recodings",
           "suggest_recodings"]

MANY = 15  # a numeric key with more distinct values is cut into bands
RARE_SHARE = 0.01  # a category under 1 % of the records is rare (as is one with fewer than k)


@dataclass(frozen=True)
class RecodingOption:
    """One suggested recoding and its figures (``suggest_recodings``).

    Attributes
    ----------
    variable : str
        The key it recodes.
    recoding : Recoding
        The rule (``recode(data, {variable: recoding})`` applies it).
    description : str
        The rule in plain words, with the distinct values before and after.
    distinct_before, distinct_after : int
        The key's distinct values.
    below_k_before, below_k_after : int
        Records sharing their keys with fewer than k - 1 others, counted as local suppression
        counts (another record's blank matches nothing).
    below_k_sdcmicro_before, below_k_sdcmicro_after : int
        The same by sdcMicro's fk (a blank matches every value).
    uniques_before, uniques_after : int
        Sample uniques (sdcMicro's fk = 1).
    suppressions_before, suppressions_after : int
        The values ``local_suppression(data, keys, k)`` blanks without and with the recoding.
    entropy_lost : float
        Shannon entropy of the key before minus after, in bits.
    records_changed : float
        Share of the records (0-1) whose new category holds more than one original value.
    risk_before, risk_after : float or None
        With weights: expected re-identifications (``key_risk``) without and with it.
    """

    variable: str
    recoding: Recoding
    description: str
    distinct_before: int
    distinct_after: int
    below_k_before: int
    below_k_after: int
    below_k_sdcmicro_before: int
    below_k_sdcmicro_after: int
    uniques_before: int
    uniques_after: int
    suppressions_before: int
    suppressions_after: int
    entropy_lost: float
    records_changed: float
    risk_before: float | None = None
    risk_after: float | None = None

    @property
    def suppressions_saved(self) -> int:
        return self.suppressions_before - self.suppressions_after

    @property
    def saved_per_bit(self) -> float:
        """Suppressions saved per bit of entropy lost (inf for a saving at no loss)."""
        s = self.suppressions_saved
        return s / self.entropy_lost if self.entropy_lost > 0 else (math.inf if s > 0 else 0.0)

    def __repr__(self):
        return (f"RecodingOption({self.description!r}: suppressions {self.suppressions_before} -> "
                f"{self.suppressions_after}, {self.entropy_lost:.3f} bits lost)")


COLUMNS = ["variable", "recoding", "distinct values before", "distinct values after", "records below k before",
           "records below k after", "records below k after (sdcMicro fk)", "sample uniques before",
           "sample uniques after", "suppressions needed before", "suppressions needed after", "suppressions saved",
           "entropy lost (bits)", "suppressions saved per bit", "records changed (%)"]


@dataclass(frozen=True)
class RecodingSuggestions:
    """Suggested global recodings of the key variables, best buy first (``suggest_recodings``).

    Attributes
    ----------
    options : tuple of RecodingOption
        The candidates, ordered by suppressions saved per bit of entropy lost.
    keys : tuple of str
    k : int
    below_k : int
        Records below k without recoding (as local suppression counts).
    uniques : int
        Sample uniques without recoding.
    suppressions : int
        The values local suppression blanks without recoding.
    """

    options: tuple
    keys: tuple
    k: int
    below_k: int
    uniques: int
    suppressions: int

    def __len__(self):
        return len(self.options)

    def __iter__(self):
        return iter(self.options)

    def __getitem__(self, i):
        return self.options[i]

    def for_variable(self, variable) -> tuple:
        """The options that recode one key, in the order of the list."""
        return tuple(o for o in self.options if o.variable == variable)

    def table(self) -> pd.DataFrame:
        """One row an option, plain column names (records changed in percent)."""
        rows = [[o.variable, o.description, o.distinct_before, o.distinct_after, o.below_k_before, o.below_k_after,
                 o.below_k_sdcmicro_after, o.uniques_before, o.uniques_after, o.suppressions_before,
                 o.suppressions_after, o.suppressions_saved, round(o.entropy_lost, 4), round(o.saved_per_bit, 2),
                 round(100 * o.records_changed, 2)] for o in self.options]
        out = pd.DataFrame(rows, columns=COLUMNS)
        if self.options and self.options[0].risk_before is not None:
            out["expected re-identifications before"] = [round(o.risk_before, 4) for o in self.options]
            out["expected re-identifications after"] = [round(o.risk_after, 4) for o in self.options]
        return out

    def summary(self) -> str:
        head = (f"Keys {', '.join(self.keys)} at k={self.k}: {self.below_k:,} records below k, {self.uniques:,} "
                f"unique; local suppression alone blanks {self.suppressions:,} values.")
        if not self.options:
            return head + " No recoding to suggest (no key has rare categories or many values)."
        lines = [head, "Recodings, best buy (suppressions saved per bit lost) first:"]
        for o in self.options[:8]:
            lines.append(f"  {o.description}: {o.below_k_after:,} below k, {o.suppressions_after:,} suppressions "
                         f"({o.suppressions_saved:+,} saved) for {o.entropy_lost:.3f} bits, "
                         f"{100 * o.records_changed:.1f} % of records changed")
        return "\n".join(lines)

    def __repr__(self):
        best = f"; best: {self.options[0].description}" if self.options else ""
        text = f"RecodingSuggestions({len(self.options)} options for k={self.k}{best})"
        return text if len(text) < 240 else text[:236] + "...)"


def _nice(x):
    """The number of the form 1, 2 or 5 times a power of ten nearest to x (on a log scale)."""
    e = math.floor(math.log10(x))
    return min((m * 10.0 ** f for f in (e - 1, e, e + 1) for m in (1, 2, 5)),
               key=lambda c: abs(math.log(c / x)))


def _band_rule(key, lo, hi, w):
    """Bands of width w from a multiple of w below lo, the last band open (its start the last
    multiple at or below hi, one earlier if it would hold hi alone)."""
    start = math.floor(lo / w + 1e-9) * w
    starts = [round(start + i * w, 10) for i in range(int((hi - start) // w + 1e-9) + 1)]
    if len(starts) > 1 and starts[-1] >= hi:
        starts.pop()
    return Recoding.bands([int(s) if float(s).is_integer() else s for s in starts] + [math.inf], column=key,
                          right=False)


def _numeric_candidates(key, x, whole, k, c):
    """Bands of three widths (the widest marked: only if the middle leaves records below k),
    top and bottom codes."""
    x = x[np.isfinite(x)]
    if len(x) == 0 or x.min() == x.max():
        return []
    lo, hi = float(x.min()), float(x.max())
    out = []
    widths = sorted({_nice((hi - lo) / m) for m in (20, 10, 5)})
    for i, w in enumerate(widths):
        if whole and (w < 2 or not float(w).is_integer()):
            continue
        out.append((_band_rule(key, lo, hi, w), i == len(widths) - 1 and len(widths) == 3))
    vals, counts = np.unique(x, return_counts=True)
    above = counts[::-1].cumsum()[::-1] - counts  # records with a greater value
    thin = np.flatnonzero(above < k * c)
    if len(thin) and len(vals) - thin[0] - 1 >= 2 and thin[0] > 0:
        out.append((Recoding.top(_plain_number(vals[thin[0]]), column=key), False))
    below = counts.cumsum() - counts  # records with a smaller value
    thin = np.flatnonzero(below < k * c)
    if len(thin) and thin[-1] >= 2 and thin[-1] < len(vals) - 1:
        out.append((Recoding.bottom(_plain_number(vals[thin[-1]]), column=key), False))
    return out


def _plain_number(v):
    return int(v) if float(v).is_integer() else float(v)


def _label(levels, base="other"):
    taken = {str(v) for v in levels}
    label, i = base, 2
    while label in taken:
        label, i = f"{base} ({i})", i + 1
    return label


def _adjacent(levels, counts, rare):
    """Groups of adjacent levels: the rarest rare group merged with its smaller neighbour
    until none is rare."""
    groups = [[i] for i in range(len(levels))]
    size = [int(c) for c in counts]
    while len(groups) > 1:
        low = [g for g in range(len(groups)) if size[g] < rare]
        if not low:
            break
        g = min(low, key=lambda j: (size[j], j))
        nb = [j for j in (g - 1, g + 1) if 0 <= j < len(groups)]
        h = min(nb, key=lambda j: (size[j], j))
        a, b = min(g, h), max(g, h)
        groups[a:b + 1] = [groups[a] + groups[b]]
        size[a:b + 1] = [size[a] + size[b]]
    return groups


def _other(key, levels, counts, rare):
    """The rare levels into one "other" (with the next rarest if only one is rare: a rare
    level alone would only be renamed), or None."""
    if len(levels) <= 2:
        return None
    if len(rare) == 1:
        rare = sorted(rare + [min((i for i in range(len(levels)) if i not in rare), key=lambda i: counts[i])])
    if len(rare) >= len(levels):
        return None
    other = _label(levels)
    return Recoding.merge([(levels[i], other) for i in rare], column=key)


def _neighbours(key, levels, counts, rare_at):
    """Each rare level merged with its smaller neighbour by order, until none is rare ("6-9")."""
    pairs = []
    for g in _adjacent(levels, counts, rare_at):
        if len(g) > 1:
            first, last = levels[g[0]], levels[g[-1]]
            name = f"{first}-{last}" if isinstance(first, (int, float)) else f"{first} to {last}"
            pairs += [(levels[i], name) for i in g]
    return Recoding.merge(pairs, column=key) if pairs else None


def _partition(rule, levels):
    """The groups of levels a merge makes (to drop a candidate that repeats another)."""
    m = dict(rule.mapping)
    groups = {}
    for v in levels:
        groups.setdefault(m.get(v, ("kept", v)), []).append(v)
    return sorted(map(str, groups.values()))


def _categorical_candidates(key, s, k, n, numeric):
    """Rare categories into "other" (not for an ordered categorical); for numbers (codes that
    may or may not be ordered) and ordered categories, rare levels into their neighbours."""
    codes, levels = _levels(s)
    counts = np.bincount(codes[codes >= 0], minlength=len(levels))
    levels, counts = [lv for lv, c in zip(levels, counts) if c > 0], counts[counts > 0]
    rare_at = max(k, RARE_SHARE * n)
    rare = [i for i in range(len(levels)) if counts[i] < rare_at]
    if not rare:
        return []
    ordered = isinstance(s.dtype, pd.CategoricalDtype) and bool(s.cat.ordered)
    out = [r for r in (None if ordered else _other(key, levels, counts, rare),
                       _neighbours(key, levels, counts, rare_at) if ordered or numeric else None) if r is not None]
    if len(out) == 2 and _partition(out[0], levels) == _partition(out[1], levels):
        out.pop()
    return out


def _candidates(data, key, keys, k):
    """(Recoding, only if the previous one leaves records below k) for one key."""
    s = data[key]
    numeric = pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype)
    if numeric and s.nunique(dropna=True) > MANY:
        x = s.to_numpy(dtype=np.float64, na_value=np.nan)
        fin = x[np.isfinite(x)]
        others = [c for c in keys if c != key]
        C, _ = key_codes(data, others)
        full = (C >= 0).all(axis=1)
        c = len(np.unique(_group_ids(C[full]))) if others and full.any() else 1
        return _numeric_candidates(key, x, bool(np.all(fin == np.floor(fin))), k, c)
    return [(r, False) for r in _categorical_candidates(key, s, k, len(data), numeric)]


def _figures(data, keys, k, weights, importance):
    """(below k strict, below k sdcMicro, uniques, suppressions, expected re-identifications)."""
    C, _ = key_codes(data, keys)
    strict = frequencies(C, np.ones(len(C)), strict=True)[0]
    r = key_risk(data, keys, weights=weights, k=k)
    sup = local_suppression(data, keys, k, importance=importance).cells
    return (int((strict < k).sum()), r.below_k, r.sample_uniques, sup,
            r.expected_reidentifications if weights is not None else None)


def suggest_recodings(data, keys, k=3, *, weights=None, importance=None) -> RecodingSuggestions:
    """Suggest global recodings of the key variables, each with the records it lifts to k,
    the local suppressions it saves and the information it loses.

    Parameters
    ----------
    data : DataFrame
    keys : list of str
        The key variables (quasi-identifiers); a missing value matches every value.
    k : int
        The k of k-anonymity (default 3).
    weights : str, optional
        The sampling weights: adds expected re-identifications before and after.
    importance : list of str, optional
        The keys from most to least important, for the local suppression that is counted
        (default: the keys with the most distinct values blanked first).

    Returns
    -------
    RecodingSuggestions
        ``.table()`` for the figures, ``.options[i].recoding`` for a rule.

    Examples
    --------
    >>> import sdccore
    >>> from sdccore._keys.suggest import suggest_recodings
    >>> d = sdccore.load_dataset("testdata")
    >>> s = suggest_recodings(d, ["urbrur", "water", "sex", "age"], k=3)
    >>> s.suppressions, [o.suppressions_after for o in s.for_variable("age")]
    (676, [637, 114, 66, 28])
    """
    data = check_dataframe(data)
    keys, _ = _checked(data, keys, k, importance)
    base = _figures(data, keys, k, weights, importance)
    options = []
    for key in keys:
        prev = None
        for rule, conditional in _candidates(data, key, keys, k):
            if conditional and prev is not None and prev.below_k_after == 0:
                continue
            col = rule.apply(data[key])
            info = information_lost(data[key], col)
            if info["distinct_after"] >= info["distinct_before"]:
                continue  # merges nothing
            after = _figures(data.assign(**{key: col}), keys, k, weights, importance)
            prev = RecodingOption(
                variable=key, recoding=rule, description=rule.describe(data[key]),
                distinct_before=info["distinct_before"], distinct_after=info["distinct_after"],
                below_k_before=base[0], below_k_after=after[0], below_k_sdcmicro_before=base[1],
                below_k_sdcmicro_after=after[1], uniques_before=base[2], uniques_after=after[2],
                suppressions_before=base[3], suppressions_after=after[3], entropy_lost=info["entropy_lost"],
                records_changed=info["records_changed"], risk_before=base[4], risk_after=after[4])
            options.append(prev)
    order = sorted(range(len(options)), key=lambda i: (options[i].suppressions_saved <= 0, -options[i].saved_per_bit,
                                                       options[i].entropy_lost, i))
    return RecodingSuggestions(options=tuple(options[i] for i in order), keys=tuple(keys), k=int(k), below_k=base[0],
                               uniques=base[2], suppressions=base[3])


HEAVY = 0.10  # a key blank for this share of the records: every analysis with it loses them


def blank_warnings(data, sup, *, uneven=True) -> list:
    """What local suppression costs the analysts, in sentences for the custodian before a
    release (the Data, Run and Download pages, the report, the release's notes).

    Each key blank for at least HEAVY (10 %) of the records: an analyst's regression, table or
    domain estimate with it drops those records; with the suggested recoding of that key
    (``suggest_recodings``) that is the best buy among those needing at most half the blanks.
    Then where the blanks fall unevenly (``Suppression.uneven``): the records kept are not a
    random part of the file.

    Parameters
    ----------
    data : DataFrame
        The key variables as local suppression saw them (after the published recodings and PRAM).
    sup : Suppression
        From ``local_suppression`` on ``data``.
    uneven : bool
        Also say where the blanks fall unevenly (default True; ``Suppression.summary`` says it too).

    Returns
    -------
    list of str
        One sentence a heavily blanked key, then one for the uneven blanks; empty when neither.

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> keys = ["urbrur", "water", "sex", "age"]
    >>> w = sdccore.blank_warnings(d[keys], sdccore.local_suppression(d, keys, 3))
    >>> print(w[0].split(":")[0])
    age is blank for 14.7% of records (673 of 4,580)
    """
    n = len(sup.data)
    out = []
    heavy = {c: v for c, v in sup.per_key.items() if n and v >= HEAVY * n}
    if heavy:
        sug = suggest_recodings(data, list(sup.keys), sup.k)
        for c, v in heavy.items():
            fix = next((o for o in sug.for_variable(c) if o.suppressions_after <= sup.cells / 2), None)
            out.append(f"{c} is blank for {v / n:.1%} of records ({v:,} of {n:,}): every analysis with {c} runs on "
                       f"the other {1 - v / n:.1%}"
                       + (f"; recoded as {fix.description}, {fix.suppressions_after:,} key value(s) in all would be "
                          f"blank instead of {sup.cells:,} (recode the key: the Data page's recodings, or "
                          f"protect's recode option)" if fix else
                          "; no single recoding of it needs half as many blanks: recode more than one key, or ask "
                          "whether an intruder could know it"))
    uneven = sup.uneven() if uneven else []
    if uneven:
        out.append(f"Blanks fall unevenly: {'; '.join(uneven[:2])}; an analysis of one key by another sees fewer of "
                   f"those records, and not a random part of them")
    return out


@dataclass(frozen=True)
class DefaultRecodings:
    """The recodings a release applies until the custodian chooses (``default_recodings``).

    Attributes
    ----------
    rules : tuple of (str, Recoding)
        One rule a key, in the order they were chosen.
    reasons : tuple of str
        For each rule, in plain words, the blanks it saves on its key.
    blanks_before, blanks_after : dict
        Key -> values local suppression blanks without and with the rules.
    """

    rules: tuple
    reasons: tuple
    blanks_before: dict
    blanks_after: dict

    def to_dict(self) -> dict:
        """{key: the rule as a dict} (``Recoding.from_dict`` reads it back; a recipe's ``recode``)."""
        return {c: r.to_dict() for c, r in self.rules}

    def __len__(self):
        return len(self.rules)


def default_recodings(data, keys, k=3, *, household=None, household_size=False,
                      importance=None) -> DefaultRecodings:
    """The recodings of the keys that local suppression would otherwise blank for at least
    HEAVY (10 %) of the records, as a release's default: a key blank for a tenth of the file or
    more costs every analysis with it those records (testdata's nine suggested keys at k = 3
    blank age for 55 % of the persons).

    The most blanked such key first: among its candidates (those ``suggest_recodings`` lists:
    bands, top and bottom codes, merged rare categories) the one that leaves it blank for under
    HEAVY of the records with the least entropy lost; if none does, the one that leaves it
    blank the least, if that is at most half its blanks without it; else the key is left as it
    is (``blank_warnings`` then says so).  Then the next such key, on the file so recoded, until
    no key is blank for HEAVY of the records or none can be helped.

    Parameters
    ----------
    data : DataFrame
    keys : list of str
    k : int
        The k of k-anonymity (default 3).
    household, household_size, importance
        As in ``local_suppression`` (the blanks counted as the release will make them).

    Returns
    -------
    DefaultRecodings
        Empty (``len() == 0``) when no key is blank for HEAVY of the records.

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> keys = ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil"]
    >>> r = sdccore.default_recodings(d, keys, 3)
    >>> [c for c, _ in r.rules], r.blanks_before["age"], r.blanks_after["age"]
    (['age'], 2534, 132)
    """
    data = check_dataframe(data)
    keys, _ = _checked(data, keys, k, importance)
    n = len(data)

    def blanks(d):
        return local_suppression(d, keys, k, importance=importance, household=household,
                                 household_size=household_size).per_key

    before = now = blanks(data)
    d, rules, reasons, tried = data, [], [], set()
    while n:
        heavy = sorted((c for c in keys if now[c] >= HEAVY * n and c not in tried), key=lambda c: (-now[c], c))
        if not heavy:
            break
        key = heavy[0]
        tried.add(key)
        got = []
        for rule, _ in _candidates(data, key, keys, k):
            col = rule.apply(data[key])
            info = information_lost(data[key], col)
            if info["distinct_after"] < info["distinct_before"]:
                after = blanks(d.assign(**{key: col}))
                got.append((after[key] >= HEAVY * n, after[key] if after[key] >= HEAVY * n else 0,
                            info["entropy_lost"], len(got), rule, col, after))
        if not got:
            continue
        *_, rule, col, after = min(got, key=lambda g: g[:4])
        if after[key] > now[key] / 2 and after[key] >= HEAVY * n:
            continue
        reasons.append(f"{key} recoded ({rule.describe(data[key])}): local suppression would otherwise blank it for "
                       f"{now[key] / n:.1%} of records ({now[key]:,} of {n:,}), with it for {after[key] / n:.1%}")
        rules.append((key, rule))
        d, now = d.assign(**{key: col}), after
    return DefaultRecodings(rules=tuple(rules), reasons=tuple(reasons), blanks_before=dict(before),
                            blanks_after=dict(now))
