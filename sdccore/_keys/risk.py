"""Identity risk of the key variables (sdcMicro's ``measure_risk``, ``indivRisk`` with its
default ``method='approx'``, and ``measure_hier``).

Per record, from its sample frequency fk and population estimate Fk (``frequencies``), with
p = fk / Fk, Benedetti and Franconi's individual risk (the probability that a record of the
file is re-identified by an intruder who matches on the keys), as sdcMicro approximates it:

* fk = 1:  p / (1 - p) * log(1 / p)
* fk = 2:  p / (1 - p) - (p / (1 - p))^2 * log(1 / p)
* fk > 2:  p / (fk - (1 - p))

Where Fk <= fk (no weights, or weights that make the file its own population) the formulas
break down (sdcMicro returns NaN); here the risk is then 1 / fk, the chance of picking the
right one of the fk records that share the keys, and the result says so.  The expected
number of re-identifications is the sum of the risks, the global risk their mean.  A
household is re-identified if any of its members is: each member carries 1 - prod(1 - r) over
the household (sdcMicro's hierarchical risk with ``fast_hier``).  On sdcMicro's tutorial file
(testdata, keys urbrur, water, sex, age, weight sampling_weight, household ori_hid) every
figure equals sdcMicro 5.8's (``tests/keys/test_key_risk.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._core.validation import check_dataframe, check_names
from .frequencies import frequencies, household_codes, key_codes, named_columns

__all__ = ["KeyRisk", "key_risk"]


@dataclass(frozen=True)
class KeyRisk:
    """The identity risk of a file's key variables (``key_risk``).

    Attributes
    ----------
    keys : tuple of str
        The key variables.
    k : int
        The k of k-anonymity the figures count against.
    records : DataFrame
        Per record (the data's index): ``fk`` (records sharing its keys, a missing value
        matching every value), ``Fk`` (their weights' sum), ``risk`` (individual risk) and,
        with a household column, ``household_risk``.
    weights : str or None
    household : str or None
    unweighted : bool
        True where Fk <= fk for some record (no weights): those risks are 1 / fk.
    """

    keys: tuple
    k: int
    records: pd.DataFrame
    weights: str | None = None
    household: str | None = None
    unweighted: bool = False

    @property
    def sample_uniques(self) -> int:
        """Records whose key combination no other record shares (fk = 1)."""
        return int((self.records.fk == 1).sum())

    @property
    def below_k(self) -> int:
        """Records with fewer than k records sharing their keys (the k-anonymity violations)."""
        return int((self.records.fk < self.k).sum())

    @property
    def expected_reidentifications(self) -> float:
        return float(self.records.risk.sum())

    @property
    def global_risk(self) -> float:
        return float(self.records.risk.mean()) if len(self.records) else 0.0

    @property
    def max_risk(self) -> float:
        return float(self.records.risk.max()) if len(self.records) else 0.0

    @property
    def household_expected(self) -> float | None:
        """Expected re-identified persons when a household falls with any member (None
        without a household column)."""
        return float(self.records.household_risk.sum()) if "household_risk" in self.records else None

    @property
    def household_uniques(self) -> int | None:
        """Persons whose household's make-up (size and every member's keys) no other household
        shares (None without a household column)."""
        return int(self.records.household_unique.sum()) if "household_unique" in self.records else None

    @property
    def household_global(self) -> float | None:
        return float(self.records.household_risk.mean()) if "household_risk" in self.records else None

    def combinations(self) -> pd.DataFrame:
        """The key combinations of complete records, rarest first: their values, fk and Fk."""
        r = self.records
        return (r.groupby(list(self.keys), dropna=True, sort=False)
                .agg(fk=("fk", "first"), Fk=("Fk", "first")).reset_index()
                .sort_values(["fk", "Fk"], kind="stable").reset_index(drop=True))

    def summary(self) -> str:
        """The figures in plain words."""
        lines = summary_lines(self, len(self.records))
        if self.household is not None:
            lines.append(f"Households ({self.household}): a household falls if any member does; expected "
                         f"re-identified persons {self.household_expected:.2f} ({100 * self.household_global:.2f} %); "
                         f"{self.household_uniques:,} persons live in a household whose make-up (size and every "
                         f"member's keys) no other household shares.")
        return "\n".join(lines)

    def __repr__(self):
        return (f"KeyRisk({len(self.keys)} keys, {len(self.records)} records: {self.sample_uniques} unique, "
                f"{self.below_k} below k={self.k}, expected re-identifications {self.expected_reidentifications:.2f})")


def summary_lines(r, n):
    """The two sentences of a key risk's summary (``KeyRisk`` and ``DaskKeyRisk``): uniques and
    k-anonymity, then the individual risk."""
    return [f"Keys {', '.join(r.keys)} on {n:,} records: {r.sample_uniques:,} are unique (no other record shares "
            f"their keys) and {r.below_k:,} have fewer than {r.k} records sharing them (not {r.k}-anonymous).",
            f"Individual risk: expected re-identifications {r.expected_reidentifications:.2f} "
            f"({100 * r.global_risk:.2f} % of the records), the highest {r.max_risk:.4f}"
            + (" (no sampling weights: a record's risk is 1 / fk)" if r.unweighted else "") + "."]


def check_k(k):
    """k of k-anonymity: a whole number of at least 1, else a ValueError with the usual value."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k={k!r} must be a whole number of at least 1 (3 is usual).")
    return int(k)


def individual_risk(fk, Fk):
    """sdcMicro's approximate individual risk per record (module docstring); 1 / fk where Fk
    <= fk.  Returns (risk, any record unweighted)."""
    fk = np.asarray(fk, dtype=np.float64)
    Fk = np.asarray(Fk, dtype=np.float64)
    flat = Fk <= fk
    p = np.where(flat, 0.5, fk / np.where(Fk > 0, Fk, 1.0))
    q = p / (1.0 - p)
    r = np.where(fk > 2, p / (fk - (1.0 - p)), np.where(fk == 2, q - q * q * np.log(1.0 / p), q * np.log(1.0 / p)))
    return np.where(flat, 1.0 / fk, r), bool(flat.any())


def household_unique(C, hh):
    """Per record: whether its household's make-up (its size and the key values of every member,
    a blank as a value of its own) is shared by no other household.  Released household ids
    show the make-up: anyone who knows who lives in a household (a neighbour: their sexes and
    ages) finds it, whatever each member's own k-anonymity."""
    if len(C) == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort(tuple(C[:, j] for j in reversed(range(C.shape[1]))) + (hh,))
    rows = [tuple(r) for r in C[order].tolist()]
    members = {}
    for h, r in zip(hh[order].tolist(), rows):
        members.setdefault(h, []).append(r)
    make_up = {h: tuple(m) for h, m in members.items()}  # members sorted by their keys: a multiset
    count = pd.Series(list(make_up.values())).value_counts()
    unique_h = {h for h, m in make_up.items() if count[m] == 1}
    return np.array([h in unique_h for h in hh.tolist()])


def key_risk(data, keys, *, weights=None, household=None, k=3) -> KeyRisk:
    """The identity risk of the key variables of a file, as sdcMicro measures it.

    Parameters
    ----------
    data : DataFrame
    keys : list of str
        The key variables (quasi-identifiers: region, sex, age, occupation ...); numbers or
        text, each value a category; a missing value matches every value.
    weights : str, optional
        The column of sampling weights (positive numbers); without it every record stands
        for itself and a record's risk is 1 / fk.
    household : str, optional
        The column of household ids: adds each record's household risk.
    k : int
        The k of k-anonymity that ``below_k`` counts against (default 3).

    Returns
    -------
    KeyRisk

    Examples
    --------
    >>> import sdccore
    >>> d = sdccore.load_dataset("testdata")
    >>> r = sdccore.key_risk(d, ["urbrur", "water", "sex", "age"], weights="sampling_weight", household="ori_hid")
    >>> r.sample_uniques, r.below_k, round(r.expected_reidentifications, 4)
    (330, 674, 24.7839)
    """
    data = check_dataframe(data)
    keys = named_columns(keys, data, "keys", "key variables", ["region", "sex", "age"])
    check_k(k)
    n = len(data)
    w = np.ones(n)
    if weights is not None:
        (weights,) = check_names([weights], list(data.columns), "weights", "the columns of data")
        if weights in keys:
            raise ValueError(f"weights={weights!r} is also a key; a sampling weight is no quasi-identifier.")
        w = pd.to_numeric(data[weights], errors="coerce").to_numpy(np.float64)
        bad = ~np.isfinite(w) | (w <= 0)
        if bad.any():
            raise ValueError(f"weights={weights!r} has {int(bad.sum())} value(s) that are missing, not numbers or not "
                             f"positive (first at row {int(np.flatnonzero(bad)[0])}); every record needs a positive "
                             f"sampling weight.")
    if household is not None:
        (household,) = check_names([household], list(data.columns), "household", "the columns of data")
    C, _ = key_codes(data, keys)
    fk, Fk = frequencies(C, w)
    risk, flat = individual_risk(fk, Fk)
    rec = pd.DataFrame({**{c: data[c].to_numpy() for c in keys}, "fk": fk, "Fk": Fk, "risk": risk}, index=data.index)
    if household is not None:
        codes = household_codes(data, household)  # a missing id: a household alone
        surv = np.ones(codes.max() + 1 if n else 0)
        np.multiply.at(surv, codes, 1.0 - risk)
        rec["household_risk"] = 1.0 - surv[codes]
        rec["household_unique"] = household_unique(C, codes)
    return KeyRisk(keys=tuple(keys), k=int(k), records=rec, weights=weights, household=household, unweighted=flat)
