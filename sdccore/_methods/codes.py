"""The codes released unchanged (set-apart columns: sex, region, a firm's id in a panel, a
year) as indicator columns, for the conditional methods to redraw the sensitive variables
given them as well as given the public variables (``conditional``: IPSO's option
``condition='released'``).  With them in the basis the release keeps the mean of each
sensitive variable in every domain of those codes and the OLS with the codes as regressors,
which an analyst runs (on the diabetes file with sex set apart, IPSO given the public
variables alone turned the gap in mean target between the sexes from 6.6 into 21.7).

Which columns and levels (``indicators``):

* a column not among the numeric ones protected, with 2 to ``MAX_LEVELS`` levels (a missing
  cell is a level of its own): an id with a level per record or per household is no domain
  and would fit every record exactly;
* a level gets its own indicator only with at least ``MIN_LEVEL`` records; smaller levels
  join the reference level (the largest), so that no record's fit is its own group's mean;
* at most n / ``RECORDS_PER_COLUMN`` - (1 + p) indicator columns in all (p public variables),
  columns with fewer levels first; a column that does not fit is left out and said.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = []

MAX_LEVELS = 50
MIN_LEVEL = 10
RECORDS_PER_COLUMN = 5


def indicators(data, numeric, p):
    """(n x q indicator matrix or None, [(column, levels with an indicator, levels)] used,
    [columns left out for room]) of the columns of ``data`` not in ``numeric``."""
    n = len(data)
    room = n // RECORDS_PER_COLUMN - (1 + p)
    cands = []
    for c in data.columns:
        if c in set(numeric):
            continue
        codes, uniq = pd.factorize(data[c], use_na_sentinel=False)
        if not 2 <= len(uniq) <= MAX_LEVELS:
            continue
        counts = np.bincount(codes, minlength=len(uniq))
        big = [int(k) for k in np.flatnonzero(counts >= MIN_LEVEL)]
        if len(big) < 2:
            continue
        ref = max(big, key=lambda k: counts[k])
        cands.append((len(big) - 1, str(c), codes, [k for k in big if k != ref], len(uniq)))
    cols, used, left = [], [], []
    for width, c, codes, levels, total in sorted(cands, key=lambda t: t[0]):
        if width > room:
            left.append(c)
            continue
        room -= width
        cols += [(codes == k).astype(np.float64) for k in levels]
        used.append((c, width + 1, total))
    return (np.column_stack(cols) if cols else None), used, left


def words(used):
    """'sex (2 levels), year (20 of 22 levels)'."""
    return ", ".join(f"{c} ({k} levels)" if k == total else f"{c} ({k} of {total} levels)" for c, k, total in used)
