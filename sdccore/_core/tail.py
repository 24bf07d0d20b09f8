"""The largest records protected on purpose (issue 38, item 4): ``tail='aggregate'``.

With 5 to 9 records in a small file's top 1 %, two records over the floor break it, so a
method that leaves the tail to chance passes or fails by the seed; and the largest values are
the ones an intruder who knows the value set (rank swapping, shuffling) or the spread of the
release (IPSO, noise) hands back to the largest records: ranked by what it knows, the largest
released value goes to the largest record.  So after the method, each protected variable's
largest released values are replaced by their mean:

* the group: the ``tail_records(n)`` largest released values, max(5, 1 %) of the records and
  at most TAIL_MAX (a large file's top 1 % is dense, and only its first records stand apart);
* grown, one record at a time up to twice that, while the mean lands within 1.5 tolerances of
  the original value of a member or of one of the largest original values (that record would
  be handed its own value back, by its own release or by anyone who ranks it among the
  largest): the first size whose mean lands near none (the first size if none does);
* the mean weighted by the sampling weights where the file has them, so the (weighted) total
  is kept exactly; the shares of the total held by the largest 1 % and 10 % too, where the
  group is the top 1 %.

Missing cells (released missing) take no part.  An intruder who knows this learns the group's
size and total, not any member's value.  What it costs: the values within the top group (its
spread; the group's total, mean and the shares of the total held by the largest 1 % and 10 %
are kept) and, for IPSO, the exactness of the OLS on the public variables: the largest
records are its points of highest leverage, so their change moves the coefficients a little
(measured in ``studies/useful_safe.py``); the least change of the other records that would
restore it exactly (their residuals moved to be orthogonal again) set 120 of Tarragona's 834
SALES values below 0.
"""

from __future__ import annotations

import numpy as np

__all__ = []

TAILS = ("aggregate", "none")
TAIL_SHARE = 0.01
TAIL_MIN = 5
TAIL_MAX = 100
TAIL_MARGIN = 1.5  # the mean kept this many tolerances away from every original value


def tail_records(n):
    """How many of the largest values are aggregated in a column of ``n`` released values."""
    return int(min(n, max(TAIL_MIN, min(TAIL_MAX, int(np.ceil(TAIL_SHARE * n))))))


def top_group(released, original, tolerance, weights=None):
    """(the positions of the group in ``released``, its mean): the largest released values,
    as many as ``tail_records`` gives and more while their mean lands within TAIL_MARGIN
    tolerances of the original value of a member or of one of the 2 x tail_records largest
    original values (the records the mean is handed to, by their own release or by anyone who
    ranks them among the largest; the module docstring).  ``released`` and ``original`` hold
    the observed cells only; ``weights`` aligned with them."""
    n = len(released)
    g0 = tail_records(n)
    if n < 2 * TAIL_MIN:
        return np.array([], dtype=np.int64), np.nan
    order = np.argsort(released, kind="stable")[::-1]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    cw = np.cumsum(w[order])
    cs = np.cumsum(w[order] * released[order])
    largest = np.sort(original)[-2 * g0:]
    for g in range(g0, min(2 * g0, n - 1) + 1):
        m = cs[g - 1] / cw[g - 1]
        if not _lands_near(m, np.sort(np.r_[largest, original[order[:g]]]), tolerance):
            return order[:g], float(m)
    return order[:g0], float(cs[g0 - 1] / cw[g0 - 1])


def _lands_near(m, xs, tolerance):
    """Whether ``m`` lies within TAIL_MARGIN tolerances (relative) of a value of sorted ``xs``."""
    w = TAIL_MARGIN * tolerance
    # |x - m| <= w |x|  <=>  x in [m / (1 + w), m / (1 - w)] for m > 0 (mirrored for m < 0)
    lo, hi = sorted((m / (1 + w), m / (1 - w))) if w < 1 else (-np.inf, np.inf)
    i = np.searchsorted(xs, lo, side="left")
    return bool(i < len(xs) and xs[i] <= hi)


def aggregate(Xk, X0k, cols, tolerance, weights=None, observed=None):
    """Each column ``cols`` of ``Xk`` (in place): its top group replaced by the group's mean.
    ``X0k`` the original (same columns), ``observed`` (optional) the cells released.  Returns
    {column: (records aggregated, their mean)}."""
    done = {}
    for c in cols:
        ob = np.ones(len(Xk), dtype=bool) if observed is None else observed[:, c]
        idx = np.flatnonzero(ob)
        w = None if weights is None else weights[idx]
        pos, m = top_group(Xk[idx, c], X0k[idx, c], tolerance, w)
        if len(pos):
            Xk[idx[pos], c] = m
            done[c] = (len(pos), m)
    return done


def words(name, g, m):
    """The note of one aggregated column."""
    return (f"{name}: the {g} largest released values replaced by their mean ({m:,.6g}): the largest records "
            f"protected on purpose, their total kept (tail='aggregate'); regressions on the raw scale move, "
            f"the largest records being their points of highest leverage")
