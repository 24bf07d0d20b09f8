"""Local suppression of key values to k-anonymity (sdcMicro's ``kAnon`` / ``localSuppression``):
a key value of a record that too few records share is blanked; the blank matches every value,
so the record joins the records that agree with it on its other keys.

Which records count: sdcMicro counts another record's blank as a match for every value
(``freqCalc``'s alpha = 1).  Suppression that leans on that can leave a rare record's own
values in the file: on its tutorial file (keys urbrur, water, sex, age; k = 3) 47 blanked ages
and a water code make every record "3-anonymous" that way, against the 674 blanks of sdcMicro's
``kAnon``, because each blank age counts as a look-alike of every record of its urbrur, water
and sex.  But the 627 rare records themselves keep their exact ages: an intruder who knows a
person is 87 and finds one 87-year-old in the cell beside a few blanks (and who knows that
blanks are made for rare records) picks the 87-year-old.  So a record here counts only the
records that show its own values (sdcMicro's alpha = 0; its own blanks match everything):
every record at risk is given a blank of its own, in the least important key that lifts it
to k alone, else the set of up to three keys that spares the more important ones (then the
fewest), else blanks least important first until it is lifted, until none is left (a blank
can take a record out of another rare record's company, hence rounds).  That needs one blank
per record at risk at least: 674 on the tutorial file, as sdcMicro's ``kAnon`` (which blanks
them key by key, 667 ages and 7 water codes).

And from the target's side (``_compatible_repair``): an intruder who knows a person's true keys
keeps the released records that agree with them, a blank agreeing with every value; a rare
person blanked alone can still be the only such record (sdcMicro's tutorial release leaves one:
the only record with its sex blanked).  So every person's true keys must meet k released
records too: the records nearest to them (differing in the least important keys) get those
keys blanked until they do; 676 blanks on the tutorial file.

The importance order: given (most important first), else the keys with the most distinct
values are blanked first (age before sex), as sdcMicro's default does."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe, check_names
from .frequencies import _group_ids, compatible_counts, frequencies, household_codes, key_codes, named_columns

__all__ = ["Suppression", "household_size_columns", "local_suppression"]

UNEVEN_POINTS = 0.10  # a level blanked this far above the file's share (and ...)
UNEVEN_SE = 3.0  # ... by more than this many binomial standard errors) is named (Suppression.uneven)
ROUNDS = 20  # a blank can take a record out of another's company: rounds until none is below k


@dataclass(frozen=True)
class Suppression:
    """What ``local_suppression`` returns.

    Attributes
    ----------
    data : DataFrame
        The file with the suppressed key values blank (missing); everything else unchanged.
    suppressed : DataFrame
        One boolean column a key: True where the value was blanked (the data's index).
    keys : tuple of str
    k : int
    order : tuple of str
        The keys in the order they were tried (least important first).
    """

    data: pd.DataFrame
    suppressed: pd.DataFrame
    keys: tuple
    k: int
    order: tuple

    @property
    def cells(self) -> int:
        """The number of values blanked."""
        return int(self.suppressed.to_numpy().sum())

    @property
    def per_key(self) -> dict:
        """Key -> values blanked."""
        return {c: int(self.suppressed[c].sum()) for c in self.keys}

    def uneven(self, min_records=20) -> list:
        """Where the blanks of a key fall unevenly: for each key with blanks, the level of
        another key (of at least ``min_records`` records showing it) with the largest share of
        that key blanked, when it is at least UNEVEN_POINTS above the share over the file and
        further above it than UNEVEN_SE binomial standard errors at that level's size (rare
        combinations sit in small regions and age groups, so an analysis of one key by another
        sees fewer of those records, and not at random: the analyst should know).  A fixed
        ratio to the file's share would miss a key blanked for 38 % of records and 69 % in one
        region, and flag 6 % against 0.8 % (9 records).  In words, largest first."""
        out = []
        for c in self.keys:
            blank = self.suppressed[c].to_numpy()
            overall = blank.mean()
            if not blank.any():
                continue
            for d in self.keys:
                if d == c:
                    continue
                lv = self.data[d]
                rates = pd.Series(blank).groupby(lv.to_numpy(), dropna=True).agg(["mean", "size"])
                rates = rates[rates["size"] >= min_records]
                if not len(rates):
                    continue
                top = rates["mean"].idxmax()
                r, size = float(rates.loc[top, "mean"]), int(rates.loc[top, "size"])
                se = np.sqrt(overall * (1 - overall) / size)
                if r - overall >= UNEVEN_POINTS and r - overall > UNEVEN_SE * se:
                    out.append((r - overall, f"{c} blanked for {overall:.1%} of records, {r:.1%} where {d} = {_level(top)} "
                                             f"({size:,} records)"))
        return [t for _, t in sorted(out, key=lambda x: -x[0])]

    def summary(self) -> str:
        per = ", ".join(f"{c} {v}" for c, v in self.per_key.items() if v) or "none"
        uneven = self.uneven()
        return (f"{self.cells:,} key value(s) blanked for {self.k}-anonymity on {', '.join(self.keys)} "
                f"({per}); a blank matches every value."
                + (f" Unevenly: {'; '.join(uneven[:2])} (an analysis of one key by another sees fewer of "
                   f"those records)." if uneven else ""))

    def __repr__(self):
        return f"Suppression(k={self.k}, {self.cells} cells: {self.per_key})"


def _level(v):
    """A level in words: a whole number stored as a float (a code with blanks) without '.0'."""
    return int(v) if isinstance(v, (float, np.floating)) and float(v).is_integer() else v


def _without(row, j):
    out = row.copy()
    out[j] = -1
    return out


def _checked(data, keys, k, importance):
    """(keys, the order they are blanked in) after the boundary checks."""
    keys = named_columns(keys, data, "keys", "key variables", ["region", "sex"])
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2:
        raise ValueError(f"k={k!r} must be a whole number of at least 2 (3 is usual).")
    if k > len(data):
        raise ValueError(f"k={k} is more than the {len(data)} records; no blank can make every record share its keys "
                         f"with {k - 1} others. Choose k of at most {len(data)}.")
    if importance is None:
        return keys, sorted(keys, key=lambda c: (-data[c].nunique(dropna=True), keys.index(c)))
    imp = check_names(list(importance), keys, "importance", "the keys")
    if sorted(imp) != sorted(keys):
        raise ValueError(f"importance must order every key ({', '.join(keys)}); missing: "
                         f"{', '.join(c for c in keys if c not in imp)}.")
    return keys, list(reversed(imp))


def _subset_counts(C, cols):
    """Per record: the records that show its values in the key columns ``cols`` (a record
    with a missing value there shows nothing), itself included."""
    ids = _group_ids(C[:, cols])
    full = (C[:, cols] >= 0).all(axis=1)
    return np.bincount(ids[full], minlength=int(ids.max()) + 1 if len(ids) else 0)[ids]


def _blanks(C, pos, k, avoid=()):
    """The mask of blanks (module docstring), in rounds: each record below k, rarest first,
    gets the blank(s) that lift it to k by the counts at the round's start (one blank: the least
    important key that does; else blanks in that order until it is lifted); the next round
    catches a record that another's blank took out of its company."""
    blank = np.zeros(C.shape, dtype=bool)
    for _ in range(ROUNDS):
        fk, _ = frequencies(C, np.ones(len(C)), strict=True)
        if (fk >= k).all():
            break
        counts = {}

        def company(i, row):  # the records showing record i's values where ``row`` shows them
            cols = tuple(int(j) for j in np.flatnonzero(row >= 0))
            if cols not in counts:
                counts[cols] = _subset_counts(C0, list(cols))
            return counts[cols][i]

        C0 = C.copy()
        for i in np.lexsort((np.arange(len(C)), fk)):  # rarest first
            if fk[i] >= k:
                break
            pick = _fewest(C[i], pos, lambda row: company(i, row) >= k, avoid)
            for j in (pick if pick is not None else pos):
                if C[i, j] < 0:
                    continue
                C[i, j] = -1
                blank[i, j] = True
                if pick is None and company(i, C[i]) >= k:
                    break
    return blank


def _compatible_repair(C, blank, pos, k, avoid=()):
    """The intruder who knows a person's true keys (``C``) keeps the released records that
    agree with them, a blank agreeing with every value (``compatible_counts``): a rare record
    blanked alone is still the only candidate for its own true values.  So while a record has
    fewer than k candidates, the records nearest to its true values (differing in the least
    important keys, then in the fewest; household variables last) get those keys blanked until
    k records are candidates; rarest first."""
    n = len(C)
    rank = np.empty(C.shape[1], dtype=np.int64)
    rank[pos] = np.arange(len(pos))  # 0: the least important key
    hh = np.zeros(C.shape[1], dtype=bool)
    hh[list(avoid)] = True
    W = np.where(blank, -1, C)
    counts = compatible_counts(C, W)
    for i in np.lexsort((np.arange(n), counts)):
        if counts[i] >= k:
            break
        known = C[i] >= 0  # a key the original leaves missing matches every value
        mism = (W >= 0) & (W != C[i]) & known
        cand = int((~mism.any(axis=1)).sum())
        if cand >= k:  # lifted by the blanks given to the records before it
            continue
        worst = np.where(mism, rank, -1).max(axis=1)
        order = np.lexsort((np.arange(n), mism.sum(axis=1), worst, (mism & hh).any(axis=1)))
        donors = order[mism[order].any(axis=1)][:k - cand]
        blank[donors] |= mism[donors]
        W[donors] = np.where(mism[donors], -1, W[donors])
    return blank


SEARCH = 3  # blanks a record's set is searched up to (then the keys in order, least important first)


def _fewest(row, pos, lifts, avoid=()):
    """The keys of a record to blank so that it is lifted to k (``lifts``): among the sets of
    up to SEARCH of its shown keys, those that spare the more important keys first (the set
    whose most important member is least important), then the fewest, then the least important
    (``pos`` is least important first); first without the keys in ``avoid`` (household
    variables: a blank there is a blank for every member), then with them; None when no such
    set does."""
    for allowed in ([j for j in pos if j not in set(avoid)], pos) if avoid else (pos,):
        shown = [j for j in allowed if row[j] >= 0]
        for t in range(len(shown)):  # sets whose most important key is shown[t]
            for m in range(1, min(SEARCH, t + 1) + 1):
                for rest in combinations(shown[:t], m - 1):
                    combo = list(rest) + [shown[t]]
                    r = row.copy()
                    r[combo] = -1
                    if lifts(r):
                        return combo
    return None


def _household_keys(data, keys, household):
    """The keys that are household variables: one value in every household (the water source,
    the region)."""
    hh = household_codes(data, household)
    return [c for c in keys if (pd.Series(pd.factorize(data[c])[0]).groupby(hh).nunique() <= 1).all()]


def _household_blanks(data, keys, blank, household):
    """A key that every household shows one value of (a household variable: the water source,
    the region) blanked for one member is blanked for every member: the others would show it."""
    hh = household_codes(data, household)
    for a, c in enumerate(keys):
        if blank[:, a].any() and c in _household_keys(data, [c], household):
            hit = np.isin(hh, hh[blank[:, a]])
            blank[:, a] |= hit & data[c].notna().to_numpy()
    return blank


def local_suppression(data, keys, k=3, *, importance=None, household=None, strata=None,
                      household_size=False) -> Suppression:
    """Blank key values until every record shares its keys with at least k - 1 others.

    Parameters
    ----------
    data : DataFrame
    keys : list of str
        The key variables (a missing value already matches every value).
    k : int
        The k of k-anonymity (default 3).
    importance : list of str, optional
        The keys from most to least important: the least important are blanked first.
        Default: the keys with the most distinct values are blanked first.
    household : str, optional
        The household id: a key that is one value per household (a household variable)
        blanked for one member is blanked for all, since the others would show it.
    strata : str or list of str, optional
        Columns whose groups (e.g. regions released as separate files, or protected on their
        own) are each made k-anonymous on their own: a record's look-alikes are counted within
        its group, which is what an intruder who knows the group sees.  Never blanked.
    household_size : bool
        With ``household``: the household's size counts as a key that is never blanked (released
        household ids show it; sizes shared by fewer than k persons grouped with the next size).

    Returns
    -------
    Suppression

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> s = sdccore.local_suppression(d, ["urbrur", "water", "sex", "age"], k=3)
    >>> s.cells, s.per_key["age"]  # sdcMicro's kAnon: 674, 667 of them ages (one person left identifiable)
    (676, 673)
    """
    data = check_dataframe(data)
    keys, order = _checked(data, keys, k, importance)
    if household is not None:
        (household,) = check_names([household], list(data.columns), "household", "the columns of data")
    if household is not None and household_size:
        return _with_household_size(data, keys, k, importance, household, strata, order)
    if strata is not None:
        return _by_stratum(data, keys, k, importance, household, strata, order)
    C, _ = key_codes(data, keys)
    pos = [keys.index(c) for c in order]
    # a household variable's blank is one for every member: blanked only where no other set lifts a record
    avoid = [keys.index(c) for c in _household_keys(data, keys, household)] if household is not None else []
    blank = np.zeros(C.shape, dtype=bool)
    for _ in range(ROUNDS):  # each step can take records out of another's company: again until none
        blank |= _blanks(np.where(blank, -1, C), pos, k, avoid)
        if household is not None:
            blank = _household_blanks(data, keys, blank, household)
        blank = _compatible_repair(C, blank, pos, k, avoid)
        if household is not None:
            blank = _household_blanks(data, keys, blank, household)
        W = np.where(blank, -1, C)
        if frequencies(W, np.ones(len(C)), strict=True)[0].min() >= k and compatible_counts(C, W).min() >= k:
            break
    out = data.copy()
    for a, c in enumerate(keys):
        if blank[:, a].any():
            col = out[c]
            if pd.api.types.is_integer_dtype(col) or pd.api.types.is_bool_dtype(col):
                out[c] = col.astype("Float64" if pd.api.types.is_integer_dtype(col) else "boolean")
            out.loc[blank[:, a], c] = pd.NA if str(out[c].dtype) in ("Float64", "boolean", "string") else np.nan
    return Suppression(data=out, suppressed=pd.DataFrame(blank, columns=keys, index=data.index), keys=tuple(keys),
                       k=int(k), order=tuple(order))


def _by_stratum(data, keys, k, importance, household, strata, order):
    """``local_suppression`` within each group of the strata columns (a record's look-alikes
    counted in its own group), put together in the file's order."""
    strata = [strata] if isinstance(strata, str) else list(strata)
    strata = check_names(strata, list(data.columns), "strata", "the columns of data")
    both = sorted(set(strata) & set(keys))
    if both:
        raise ValueError(f"strata and keys share {', '.join(both)}: a stratum column is never blanked; leave it out "
                         f"of the keys (its groups are counted apart already).")
    if data[strata].isna().any().any():
        raise ValueError(f"strata column(s) {', '.join(c for c in strata if data[c].isna().any())} have missing "
                         f"values; give those records a group of their own (e.g. 'unknown') or drop them.")
    groups = data.reset_index(drop=True).groupby(strata, sort=True, observed=True).indices  # no empty category
    small = [(g, len(ix)) for g, ix in groups.items() if len(ix) < k]
    if small:
        raise ValueError(f"strata: {len(small)} group(s) have fewer than k={k} records (e.g. {small[0][0]!r}: "
                         f"{small[0][1]}); no blank makes them {k}-anonymous. Merge small groups or lower k.")
    out = data.copy()
    blank = pd.DataFrame(False, index=data.index, columns=keys)
    for ix in groups.values():
        part = local_suppression(data.iloc[ix], keys, k, importance=importance, household=household)
        for c in keys:
            if part.suppressed[c].any():
                if str(out[c].dtype) != str(part.data[c].dtype):
                    out[c] = out[c].astype(part.data[c].dtype)
                out.iloc[ix, out.columns.get_loc(c)] = part.data[c].to_numpy()
        blank.iloc[ix] = part.suppressed.to_numpy()
    return Suppression(data=out, suppressed=blank, keys=tuple(keys), k=int(k), order=tuple(order))


SIZE = "\0household size"  # the household size's column while it counts as a key


def household_size_columns(data, household, *, skip=()):
    """The columns of ``data`` (besides ``skip`` and the household id) that show each person's
    household size though the ids are not released: the same value for every member of each
    household, households of two or more among them, and each value found with one household
    size only (testdata's household_weights, the sampling weight / household size: an intruder
    read the size off it and re-identified 723 persons the keys alone left 3-anonymous).
    ``protect`` says so in the release's notes, with the fix.

    Parameters
    ----------
    data : DataFrame
        The release (or the file) with the household id.
    household : str
        The household id column.
    skip : list of str
        Columns not to look at (the key variables).

    Returns
    -------
    list of str
        The columns that show the household size, in the data's order.

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> sdccore.household_size_columns(d, "ori_hid", skip=["sex", "age"])
    ['household_weights']
    """
    ids = data[household]
    known = ids.notna()
    if not known.any():
        return []
    size = ids.map(ids.value_counts())
    if not (size[known] >= 2).any():
        return []
    out = []
    for c in data.columns:
        if c == household or c in set(skip):
            continue
        v = data.loc[known, c]
        if v.isna().any() or v.groupby(ids[known]).nunique().max() > 1:
            continue
        if size[known].groupby(v).nunique().max() == 1:
            out.append(c)
    return out


def household_sizes(data, household, k):
    """Each record's household size (a missing id: a household of one), sizes that fewer than
    k persons share grouped with the next larger size (the largest with the next smaller)."""
    ids = data[household]
    size = ids.map(ids.value_counts()).where(ids.notna(), 1).astype(np.int64).to_numpy()
    while True:
        vals, counts = np.unique(size, return_counts=True)
        small = np.flatnonzero(counts < k)
        if not len(small) or len(vals) == 1:
            return size
        i = small[0]
        size[size == vals[i]] = vals[i + 1] if i + 1 < len(vals) else vals[i - 1]


def _with_household_size(data, keys, k, importance, household, strata, order):
    """``local_suppression`` with the household size as a key that is never blanked (a stratum)."""
    work = data.assign(**{SIZE: household_sizes(data, household, k)})
    strata = [strata] if isinstance(strata, str) else list(strata or [])
    s = _by_stratum(work, keys, k, importance, household, strata + [SIZE], order)
    return Suppression(data=s.data.drop(columns=SIZE), suppressed=s.suppressed, keys=s.keys, k=s.k, order=s.order)
