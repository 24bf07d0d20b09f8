"""The battery's record-level relations (``battery.py``): what an analyst computes from two
variables of the same record, which means and covariances do not hold.

* ``edits``: an order between the checked variable y and another variable z that (nearly) every
  original record obeys -- labour costs at most the sales, a tax at most the income -- is an
  edit rule the data custodian's own checks would apply; a release that breaks it for many
  records gives firms whose costs exceed their turnover (an outside analyst found 0.7 % of
  Tarragona's firms with labour costs above sales and 14.9 % in a release that kept every
  mean and covariance).  The figure: the largest increase, in points, of the share of records
  that break such an order (one held by at least 99 % of the original's records with both
  values), target at most 1 point.
* ``ratios``: the median over the records of z / y (a labour-cost share, a margin, a rent-to-
  income ratio) for each other variable z that is positive where y is (at least 90 % of the
  records with both) and an amount of its kind (the original's median ratio between 1/100 and
  100: not an age over an income), in each file: the largest relative change, target within
  10 %.

Weights weight the shares and the medians where the file has them."""

from __future__ import annotations

import numpy as np

from .distribution import _wquantile

__all__ = []

EDIT_SHARE = 0.99    # an order obeyed by at least this share of the original's records is an edit rule
POSITIVE = 0.90      # z / y is a ratio an analyst reads where both are positive on this share of records
SAME_KIND = 100.0    # ... and where its median lies within a factor of this of 1 (amounts of a kind, not age / income)


def _share(mask, w):
    return float(mask.mean()) if w is None else float(np.sum(w[mask]) / np.sum(w))


def edits(original, released, y, others, w):
    """The battery's tuple (original, released, kept, note, forced) of the edit rules between y
    and ``others`` (module docstring)."""
    yo, yr = original[y].to_numpy(float), released[y].to_numpy(float)
    worst = None
    for z in others:
        zo, zr = original[z].to_numpy(float), released[z].to_numpy(float)
        both = np.isfinite(yo) & np.isfinite(zo) & np.isfinite(yr) & np.isfinite(zr)
        if both.sum() < 20:
            continue
        ww = None if w is None else w[both]
        for above, word in ((True, f"{z} above {y}"), (False, f"{z} below {y}")):
            # the order "z <= y" (above=True: records with z above y break it) or "z >= y"
            bo = zo[both] > yo[both] if above else zo[both] < yo[both]
            if 1.0 - _share(bo, ww) < EDIT_SHARE:
                continue
            br = zr[both] > yr[both] if above else zr[both] < yr[both]
            so, sr = _share(bo, ww), _share(br, ww)
            if worst is None or sr - so > worst[2]:
                worst = (so, sr, sr - so, f"{word}: {so:.1%} of records -> {sr:.1%} (an order {1 - so:.1%} of the "
                                          f"original's records obey)")
    if worst is None:
        return (np.nan, np.nan, np.nan, "does not apply: no order between it and another variable that at least "
                                        f"{EDIT_SHARE:.0%} of the records obey", None)
    return (worst[0], worst[1], max(worst[2], 0.0), worst[3], None)


def ratios(original, released, y, others, w):
    """The battery's tuple of the median record-level ratios z / y (module docstring)."""
    yo, yr = original[y].to_numpy(float), released[y].to_numpy(float)
    worst = None
    for z in others:
        zo, zr = original[z].to_numpy(float), released[z].to_numpy(float)
        seen = np.isfinite(yo) & np.isfinite(zo)
        if seen.sum() < 20 or np.mean((yo[seen] > 0) & (zo[seen] > 0)) < POSITIVE:
            continue
        po = seen & (yo > 0) & (zo > 0)
        pr = np.isfinite(yr) & np.isfinite(zr) & (yr > 0) & (zr > 0)
        if not pr.any():
            return (np.nan, np.nan, np.nan, f"{z} / {y}: no record with both positive in the release", False)
        mo = _wquantile(zo[po] / yo[po], None if w is None else w[po], 0.5)
        if not 1.0 / SAME_KIND <= mo <= SAME_KIND:
            continue
        mr = _wquantile(zr[pr] / yr[pr], None if w is None else w[pr], 0.5)
        e = abs(mr - mo) / mo
        if worst is None or e > worst[2]:
            worst = (mo, mr, e, f"median {z} / {y}: {mo:.4g} -> {mr:.4g}")
    if worst is None:
        return (np.nan, np.nan, np.nan, f"does not apply: no other variable positive where {y} is", None)
    return worst + (None,)
