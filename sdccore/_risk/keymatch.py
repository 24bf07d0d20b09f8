"""The key-matching intruder (issue 40: one risk model across the categorical keys and the
continuous variables).  A survey file's key variables (region, sex, age ...) are what an
intruder knows for certain about a person; the release shows them unperturbed but for the
blanks of local suppression (a blank could be any value) and the published recodings (which
the intruder applies to what it knows: it knows how the release was made).  So it keeps the
released records whose keys agree with the target's, a blank agreeing with every value, and
then:

* takes the one nearest on the continuous variables it knows (standardised as every link is),
  and reads the target's released value there: linking within the key match, where the plain
  linking intruder searches the whole file;
* takes the mean and the median of the target over the matched records (with k-anonymity at
  least k of them; a narrow cell of look-alikes can give the value away without any link).

The prior gains what the keys alone give: the leave-one-out mean of the target over the
original records that share the target's keys (``key_prior``), so that what is counted beyond
the prior is what the release adds to the keys, not what the keys say about everyone.

The matching is exact and fast: the released records are grouped by their pattern of blanks
(a handful), and for each pattern by their values on the keys they show; a target's matches
in a pattern are the group that shows its own values there (one group-by per pattern), and
the nearest is searched only inside those groups."""

from __future__ import annotations

import numpy as np

from .._keys.frequencies import _group_ids

__all__ = []


def _matches(K0, K1):
    """[(targets, candidates)]: for each pattern of blanks among the released keys K1 (all
    records x keys, -1 a blank) and each group of released records of that pattern showing the
    same values, the sampled targets (rows of K0, their true keys) that those values agree with."""
    out = []
    blank = K1 < 0
    pat = _group_ids(blank.astype(np.int64))
    for p in np.unique(pat):
        cand = np.flatnonzero(pat == p)
        cols = np.flatnonzero(~blank[cand[0]])
        ids = _group_ids(np.vstack([K1[cand][:, cols], K0[:, cols]]))
        ic, it = ids[:len(cand)], ids[len(cand):]
        order = np.argsort(ic, kind="stable")
        starts = np.searchsorted(ic[order], np.arange(int(ids.max()) + 2))
        for g in np.unique(it):
            members = cand[order[starts[g]:starts[g + 1]]]
            if len(members):
                out.append((np.flatnonzero(it == g), members))
    return out


def _candidates(K0, K1):
    """Per target (row of K0), the released records whose keys agree with its own (concatenated
    over the patterns of blanks)."""
    per = [[] for _ in range(len(K0))]
    for targets, members in _matches(K0, K1):
        for t in targets:
            per[t].append(members)
    return [np.concatenate(c) if c else np.empty(0, np.int64) for c in per]


def key_match(ctx):
    """The key-matching intruder's guesses: the released value of the nearest key match on the
    known variables, and the mean and the median of the released values over the key matches
    (NaN where no released record matches, or its cell is not released)."""
    if ctx.keys is None or ctx.keys[0].shape[1] == 0:
        return None
    K0, K1 = ctx.keys[0][ctx.rows], ctx.keys[1]
    y = ctx.released[:, ctx.target].astype(float)
    if ctx.observed is not None:
        y = np.where(ctx.observed, y, np.nan)
    known = list(ctx.known)
    X = ctx.whole_original
    if known:
        sd = X[:, known].std(axis=0)
        use = [k for k, s in zip(known, sd) if s > 0]
        mean, sd = X[:, use].mean(axis=0), X[:, use].std(axis=0)
        A = (ctx.original[:, use] - mean) / sd
        B = (ctx.released[:, use] - mean) / sd
    n = len(ctx.rows)
    near, avg, med = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    cands = _candidates(K0, K1)
    for t, c in enumerate(cands):
        if not len(c):
            continue
        v = y[c]
        if np.isfinite(v).any():
            avg[t], med[t] = np.nanmean(v), np.nanmedian(v)
        if known and use:
            d = ((B[c] - A[t]) ** 2).sum(axis=1)
            near[t] = v[int(np.argmin(d))]  # the first of ties, as every link
        elif len(c) == 1:
            near[t] = v[0]
    return [near, avg, med]


def key_prior(ctx):
    """The keys' own prediction of the target: the leave-one-out mean of the target over the
    original records that share the target's keys (NaN for a record alone in its cell), or None
    without keys.  The intruder knows the keys; the release adds only what goes beyond this."""
    if ctx.keys is None or ctx.keys[0].shape[1] == 0:
        return None
    K = ctx.keys[0]  # every original record's keys (as the intruder reads them)
    x = ctx.whole_original[:, ctx.target].astype(float)
    ok = np.isfinite(x)
    g = _group_ids(K)
    s = np.bincount(g, weights=np.where(ok, x, 0.0))
    c = np.bincount(g, weights=ok.astype(float))
    gi = g[ctx.rows]
    own = np.where(ok[ctx.rows], x[ctx.rows], 0.0)
    cnt = c[gi] - ok[ctx.rows]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, (s[gi] - own) / cnt, np.nan)
