"""IPSO's two parts for amounts with a mass at 0 (``zeros='pattern'``): wages of persons of
whom a third do not work, exports of firms of whom two thirds export nothing.

Redrawn around a fit, such an amount loses its zeros: the non-exporters get small positive
values, or are clipped at 0 by the hundred (the release check then refuses it).  Here each
such sensitive amount is released in two parts, as a two-part (hurdle) model describes it:

1. **Who is at 0.**  Each record's pattern of zeros over those amounts is handed to another
   record of the same domain (the cell of the codes released unchanged, as IPSO conditions on
   them) with a similar predicted chance of being positive (the least-squares fit of the
   statuses on the public variables and codes), within blocks of ``BLOCK`` records in the
   order of that chance (ties in a random order, never the file's row order), and within the
   records at 0 on a public column whose zeros decide an amount's status (no hours, no wage:
   the rule holds in the release).  The share at 0 in the file and in every domain cell is the
   original's exactly; whether a record is at 0 is its own only by the draw.  The basis here
   and below: the public variables, the numeric columns set apart (released unchanged) and
   the codes.
2. **How much, where positive.**  On the records released positive, the log of the amount is
   given the original positives' least-squares fit on the public variables and codes, and the
   original positives' residuals (handed over with the patterns, made orthogonal to those
   records' basis and rescaled to the original's sum of squares), then redrawn by IPSO's
   random cycle (no record keeps its own residual).
3. **The largest records on a ladder** (``ladder``), as IPSO's own: their ratios of own to
   released value spaced apart on both sides of 1, in a random order.
4. **Both scales** (``_both``): each positive value moved by a smooth factor so that the
   amount's cross-products with the public variables, the codes and the sensitive variables
   released before it (zeros included) and its sum of squares are the original's (so every
   OLS among the released columns, the domain means and the total), and the coefficients of
   the OLS of its log on the same predictors among the positives (the second part of a hurdle
   model, a log-wage equation); weighted where the file has weights.  Where those equations
   cannot be solved, each domain cell's total instead (``_totals``, said in the notes).

The other sensitive variables are released first, by IPSO as chosen, given the public
variables.  What is not kept exactly: the log fit's residual variance, the regressions within
a domain, the median and tail quantile regressions, and robust (HC1) errors, which depend on
each record's residual.  The risk floors judge the release as any other.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from . import conditional_kernel as cd, residuals as rs
from .._core.plausible import PREDICTOR_ZEROS, skewed_positive
from .residuals import _basis, _match
from ._base import MIN_LEVEL, Option, indicators

ZERO_SHARE = 0.05  # an amount with at least this share at 0 (the battery's share at zero applies from here)
BLOCK = 10  # records per block within which the zero patterns are handed on
STEP_ROUNDS = 4  # rounds of residuals._steps (each of up to 80 Newton steps) for the two scales
PLACE_ROUNDS = 6  # rounds of moving a largest record off its own value and keeping both scales again
HOLE_MARGIN = 1.02  # the ladder's nearest rungs this much beyond the floors' tolerance of the own value
MIN_CELL = 20  # positives a domain cell needs for its own total (smaller cells share one factor)
RULE_SHARE = 0.05  # a range of a public column where an amount's status never changes, on this share of records


def option():
    return Option("zeros", "ipso", "choice", "redraw", "Amounts with a mass at 0",
                  "'redraw': every sensitive variable redrawn around its fit (an amount's zeros become small "
                  "values, or are clipped). 'pattern': each sensitive amount (no negative value; at least 5 % zeros, "
                  "or skewed) released in two parts: who is at 0 handed between records of the same domain with a "
                  "similar predicted chance (the share at 0 kept exactly in the file and each domain), and the "
                  "positive values redrawn on the log scale, keeping every OLS among the released columns, the log "
                  "fit's coefficients among the positives and each domain's total; the other sensitive variables by "
                  "IPSO as chosen.",
                  choices=("redraw", "pattern"),
                  choice_text={"redraw": "redrawn around the fit", "pattern": "who is at 0 kept per domain, positives "
                                                                              "on the log scale"})


def semicontinuous(x):
    """Whether a column is an amount with a mass at 0: finite, never negative, at least
    ZERO_SHARE of it 0 and at least 2 positive values."""
    x = np.asarray(x, dtype=np.float64)
    return bool(np.isfinite(x).all() and x.min() >= 0 and (x == 0).mean() >= ZERO_SHARE and (x > 0).sum() >= 2)


def amount(x):
    """Whether a sensitive column goes through the two parts: an amount with a mass at 0
    (``semicontinuous``), or a skewed positive one (turnover, a wage bill: at most 5 % zeros,
    skewness above 1), whose first part then hands nothing on and whose positives get the log
    scale and the cross-products with the amounts released before it (on an outside custodian's
    firm file, left to IPSO on the raw scale, turnover and the wage bill lost their
    distribution and every log-scale analysis: 3 of 19 analyses kept, 8 so)."""
    x = np.asarray(x, dtype=np.float64)
    return semicontinuous(x) or bool(np.isfinite(x).all() and skewed_positive(x))


def cells(codes, small, rules=None):
    """Integer cell of each record from the columns of ``codes`` (an n x c integer array; c may
    be 0) within the groups of ``rules`` (an n x r array; the hand-on never crosses them): the
    cell of all the codes where it holds at least ``small`` records, else the records left of
    it join those of the cells that share its first codes, one code fewer at a time (region
    and sex before region alone), the last left within their rule group.  Joining every small
    cell of region x sex x education into one (the first rule) broke 'no hours, no wage' for
    2 persons and moved capital's share at 0 in two regions by 0.7 points."""
    n = codes.shape[0]
    rules = np.zeros((n, 0), dtype=np.int64) if rules is None else rules
    out = np.full(n, -1, dtype=np.int64)
    top = 0
    for k in range(codes.shape[1], -1, -1):
        left = out < 0
        if not left.any():
            break
        _, cell = np.unique(np.column_stack([rules, codes[:, :k]])[left], axis=0, return_inverse=True)
        cell = cell.ravel()
        counts = np.bincount(cell)
        big = (counts[cell] >= small) | (k == 0)
        idx = np.flatnonzero(left)[big]
        out[idx] = top + cell[big]
        top += len(counts)
    return np.unique(out, return_inverse=True)[1].ravel()


def hand_on(score, cell, block, gen):
    """The record whose pattern each record takes (a permutation of 0..n-1): within each cell,
    records in the order of ``score`` (ties in a random order), blocks of ``block`` consecutive
    records (a last block of fewer joins the one before), a uniform permutation within each."""
    n = len(score)
    partner = np.arange(n)
    tie = gen.random(n)
    for c in np.unique(cell):
        idx = np.flatnonzero(cell == c)
        order = idx[np.lexsort((tie[idx], score[idx]))]
        starts = list(range(0, len(order), block))
        if len(starts) > 1 and len(order) - starts[-1] < block:
            starts.pop()
        for a, s in enumerate(starts):
            b = order[s:starts[a + 1] if a + 1 < len(starts) else len(order)]
            partner[b] = b[gen.permutation(len(b))]
    return partner


def positives(y, Lo, Lr, take, gen, classes):
    """The released logs of the positives (module docstring, step 2): ``y`` the logs of the
    original positives; ``Lo`` and ``Lr`` (n x p, the intercept first) the design of every
    record in the original and in the release (``residuals.log_design``: the public variables,
    the codes and the sensitive variables released before, skewed ones logged), the same where
    the columns are released unchanged; ``take`` (n,) the original positive each record
    released positive takes its residual from (-1: released at 0).  Returns the released logs
    on the records with take >= 0, in their order."""
    pos = np.flatnonzero(take >= 0)
    orig = np.sort(take[pos])  # the original positives (``take`` hands each of them to one record)
    beta, *_ = np.linalg.lstsq(Lo[orig], y, rcond=None)
    e = y - Lo[orig] @ beta
    resid = np.empty(len(Lo))
    resid[orig] = e
    QB = _basis(Lr[pos][:, 1:])
    Eb = _match(resid[take[pos]][:, None], QB, np.array([[e @ e]]))
    start = Lr[pos] @ beta + Eb[:, 0]
    out = cd.ipso(np.column_stack([Lr[pos][:, 1:], start]), [Lr.shape[1] - 1], classes, gen)
    return out[:, -1]


def two_part(prep, Xk, o, gen, ipso):
    """The release of ``zeros='pattern'``: (Xpk, notes); ``ipso(prep, Xk, o, gen)`` releases
    the other sensitive variables (``conditional._ipso``), first: each amount is then kept
    with them and with the amounts before it (their cross-products), so that every OLS among
    the released columns is the original's."""
    sens, keep = prep.sens, prep.keep
    names = [prep.numeric[keep[j]] for j in sens]
    X0k = prep.X0[:, keep]
    J = [a for a, j in enumerate(sens) if amount(X0k[:, j])]
    if not J:
        return ipso(prep, Xk, o, gen)[0], ["zeros='pattern': no sensitive variable is an amount (none negative, at "
                                           f"least {ZERO_SHARE:.0%} zeros or skewed); every one redrawn around its fit"]
    _refuse(prep, [sens[a] for a in J], [names[a] for a in J])
    pub = [j for j in range(len(keep)) if j not in set(sens)]
    D, codes, cols = _given(prep, Xk, pub, o)
    S0 = X0k[:, [sens[a] for a in J]]
    rules = _structural(Xk[:, pub], S0)
    partner = hand_on(_chance(D, Xk[:, pub], S0), cells(codes, BLOCK, rules), BLOCK, gen)
    out = Xk.copy()
    rest = [sens[a] for a in range(len(sens)) if a not in set(J)]
    if rest:  # the other sensitive variables first, by IPSO on the public variables
        both = pub + rest
        sub = replace(prep, keep=[keep[c] for c in both], sens=list(range(len(pub), len(both))))
        out[:, rest] = ipso(sub, Xk[:, both], o, gen)[0][:, len(pub):]
    Do, Dr, fell = np.column_stack([D, Xk[:, rest]]), np.column_stack([D, out[:, rest]]), {}
    cols += [prep.numeric[keep[j]] for j in rest]
    tcell = cells(codes, 0)
    for a in J:
        x = X0k[:, sens[a]]
        v = np.zeros(len(x))
        take = np.where(x[partner] > 0, partner, -1)
        v[take >= 0] = np.exp(_positive_logs(x, Do, Dr, cols, take, gen, o["classes"], names[a]))
        both, kind = _placed(x, v, Do, Dr, D.shape[1], prep.weights, o["floors"], gen, tcell)
        if kind:
            fell[names[a]] = kind
        out[:, sens[a]] = both
        Do, Dr, cols = np.column_stack([Do, x]), np.column_stack([Dr, both]), cols + [names[a]]
    return out, _notes([names[a] for a in J], fell, [prep.numeric[keep[j]] for j in rest])


def _given(prep, Xk, pub, o):
    """(the basis D: the public variables, the numeric columns set apart and the codes' indicators;
    the codes as integers, one column per code; D's column names), as IPSO's ``condition`` asks."""
    extra, used, _ = (indicators(prep.coded, prep.numeric, len(pub)) if o["condition"] == "released"
                      else (None, [], []))
    # the numeric columns set apart (released unchanged, complete) join the basis: an analyst's
    # regression has them among its predictors (a weight, a household size).  They are not among
    # the protected columns (prep.numeric), which hold the columns rebuilt from the released ones
    # (a total of the amounts, whose original would hand the amounts back): never those
    data = prep.coded
    apart = [c for c in data.columns if c not in set(prep.numeric) and pd.api.types.is_numeric_dtype(data[c])
             and not pd.api.types.is_bool_dtype(data[c]) and np.isfinite(data[c].to_numpy(dtype=np.float64)).all()]
    D = np.column_stack([Xk[:, pub]] + [data[c].to_numpy(dtype=np.float64) for c in apart]
                        + ([] if extra is None else [extra]))
    codes = np.column_stack([pd.factorize(prep.coded[c], use_na_sentinel=False)[0] for c, _, _ in used]
                            ) if used else np.zeros((len(Xk), 0), dtype=np.int64)
    names = [prep.numeric[prep.keep[j]] for j in pub] + [str(c) for c in apart] + [
        _level(extra[:, j] == 1, data, used) for j in range(0 if extra is None else extra.shape[1])]
    return D, codes, names


def _level(on, data, used):
    """'sector=ICT': the code and level an indicator column marks."""
    for c, _, _ in used:
        vals = pd.unique(data[c].to_numpy()[on])
        if len(vals) == 1:
            return f"{c}={vals[0]}"
    return "a code's level"


def _structural(P, S0):
    """The indicators of the public columns' ranges that decide an amount's status: below the
    least or above the largest value any record at 0 (or any positive one) has, where that holds
    for at least RULE_SHARE of the records (no wage without hours, no R&D under 10 employees,
    no pension under 62).  The patterns are handed on within them too, so that the release
    keeps each such rule exactly."""
    out, seen = [], set()
    n = len(P)
    for j in range(P.shape[1]):
        p = P[:, j]
        for b in range(S0.shape[1]):
            for side in (S0[:, b] > 0, S0[:, b] == 0):
                if not side.any():
                    continue
                for z in (p < p[side].min(), p > p[side].max()):
                    key = z.tobytes()
                    if RULE_SHARE * n <= z.sum() < n and key not in seen:
                        seen.add(key)
                        out.append(z.astype(np.int64))
    return np.column_stack(out) if out else np.zeros((n, 0), dtype=np.int64)


def _chance(D, P, S0):
    """Each record's predicted number of positive amounts: the least-squares fit of the
    statuses (S0 > 0) on [1, D] and an indicator of each public column's zeros (hours 0: no
    wage), the order in which the patterns are handed on."""
    zero = [(P[:, j] == 0).astype(np.float64) for j in range(P.shape[1]) if 0 < (P[:, j] == 0).mean() < 1]
    Q = _basis(np.column_stack([D] + zero) if zero else D)
    return (Q @ (Q.T @ (S0 > 0).astype(np.float64))).sum(axis=1)


def _positive_logs(x, Do, Dr, cols, take, gen, classes, name):
    """``positives`` for one amount on the log design of its predictors (``Do`` in the original,
    ``Dr`` in the release; ``cols`` their names) less the codes' levels that fewer than
    MIN_LEVEL of its original or released positives have, or lack (a sector with 3 firms doing
    R&D: their own fit would be their value); refused in one line, naming the columns, where
    its positives are still too few or a combination of public values too rare."""
    logged = {j for j in range(Do.shape[1]) if skewed_positive(Do[:, j], PREDICTOR_ZEROS)}
    Lo, Lr = rs.log_design(Do, logged, Dr)
    names = ["the intercept"] + _log_names(Do, logged, cols)
    pos, got = x > 0, take >= 0
    use = np.ones(Lo.shape[1], dtype=bool)
    for j in range(1, Lo.shape[1]):
        vals = np.unique(Lo[:, j])
        if len(vals) == 2:  # an indicator (standardised): each of its two values on enough positives
            few = min(int(np.sum(L[m, j] == v)) for L, m in ((Lo, pos), (Lr, got)) for v in vals)
            use[j] = few >= MIN_LEVEL
    Lo, Lr, names = Lo[:, use], Lr[:, use], [c for c, u in zip(names, use) if u]
    need = cd.min_rows(Lo.shape[1] - 1)
    if pos.sum() < need:
        raise ValueError(f"zeros='pattern': {name} has {int(pos.sum())} positive values, too few for the log-scale "
                         f"fit on {Lo.shape[1] - 1} predictors (the public variables, codes and amounts released before "
                         f"it; at least {need}); use zeros='redraw', or fewer public variables (exclude=[...]).")
    try:
        return positives(np.log(x[pos]), Lo, Lr, take, gen, classes)
    except cd.LeverageError as exc:
        causes = [names[1:][j] for j in cd.leverage_causes(Lr[got][:, 1:], None, exc.rows)]
        raise ValueError(f"zeros='pattern': among the records with a positive {name}, "
                         f"{', '.join(causes) if causes else 'a combination of public values'} "
                         f"{'is' if len(causes) == 1 else 'are'} too rare (their own fit would be their value); group "
                         f"the rare codes or top-code that public variable, leave it out (exclude=[...]), or use "
                         f"zeros='redraw'.") from None


def _log_names(D, logged, cols):
    """The names of ``residuals.log_design``'s columns after its intercept, in its order."""
    out = []
    for j, c in enumerate(cols):
        v = D[:, j]
        if v.std() > 0:
            out.append(c)
        if j in logged:
            lg = np.where(v > 0, np.log(np.where(v > 0, v, 1.0)), 0.0)
            if lg.std() > 0:
                out.append(f"log {c}")
            z = ~(v > 0)
            if z.any() and not z.all():
                out.append(f"{c} at 0")
    return out


def _notes(done, fell, rest):
    notes = [f"{', '.join(done)}: in two parts (zeros='pattern'): who is at 0 handed between records of the same "
             f"domain with a similar predicted chance, in blocks of {BLOCK} (the share at 0 kept in the file and each "
             f"domain); the positive values redrawn on the log scale, then moved by smooth factors so that the OLS on "
             f"the public variables, codes and the sensitive variables before it (zeros included), the sum of squares "
             f"and the coefficients of the positives' OLS of the log (skewed predictors logged) are the original's "
             f"exactly"]
    public = [n for n, k in fell.items() if k == "public"]
    if public:
        notes.append(f"{', '.join(public)}: the equations with the amounts released before it could not be solved; "
                     f"kept so on the public variables and codes alone (its OLS on the other amounts close, not exact)")
    totals = [n for n, k in fell.items() if k == "totals"]
    if totals:
        notes.append(f"{', '.join(totals)}: the two scales could not be kept; each domain's total kept instead (cells "
                     f"of at least {MIN_CELL} positives, the rest together), the regressions close, not exact")
    if rest:
        notes.append(f"{', '.join(rest)}: redrawn by IPSO on the public variables, first")
    return notes


def ladder(x, v, tol, most, gen):
    """``v`` with its largest records placed on a ladder, as IPSO's largest records are
    (``top_band='random'``): the records among the largest max(5, 1 %) of ``v`` or of ``x``,
    positive in both, are released at their own value divided by a rung, the rungs spaced on
    the log scale so that no window of the floors' tolerance (own / c within ``tol``) holds
    more than about half the share ``most`` of them, on both sides of 1 and none within
    ``tol`` of it, handed to the records in a random order.  Without it the largest persons'
    released wages fell short of their own by ratios that crowd together (a record is among
    the largest partly by its own residual, which the release hands elsewhere), and one
    constant took 11 to 12 of 30 back within 5 % (the floors' shrinkage intruder); with the
    ratios only spaced apart in their own order, the shortfall (own less released) still
    took 11.  The construction knows the own values; the intruder, knowing it, learns the
    rungs but not which record has which.  Returns (values, the band's records, their rungs,
    the gap between rungs)."""
    m = max(5, int(np.ceil(0.01 * len(x))))
    band = np.union1d(np.argsort(v, kind="stable")[-m:], np.argsort(x, kind="stable")[-m:])
    band = band[(x[band] > 0) & (v[band] > 0)]
    w = np.log((1 + tol) / (1 - tol))
    gap = w / max(1, int(np.floor(0.5 * most * len(band))))  # rungs one window may hold: about half the share
    if len(band) < 3:
        return v, band[:0], np.zeros(0), gap
    k = np.arange(len(band))
    hole = HOLE_MARGIN * -np.log(1 - tol)  # |released / own - 1| > tol on both sides of 1
    rungs = (np.where(k % 2 == 0, 1.0, -1.0) * (hole + gap * (k // 2)))[gen.permutation(len(band))]
    out = v.copy()
    out[band] = x[band] / np.exp(rungs)
    return out, band, rungs, gap


def _placed(x, v, Do, Dr, npub, w, floors, gen, cell):
    """One amount's positives from their redraw ``v`` (``_placed_on``) keeping its cross-products
    with every predictor; where those equations cannot be solved, with the public variables and
    codes alone (the first ``npub`` columns: the amounts released before it left out); else
    each domain cell's total (``_totals``).  Returns (values, '' or 'public' or 'totals')."""
    for k, kind in ((Do.shape[1], ""), (npub, "public")):
        if kind and k == Do.shape[1]:
            continue
        got = _placed_on(x, v, Do[:, :k], Dr[:, :k], w, floors, gen)
        if got is not None:
            return got, kind
    return _totals(x, ladder(x, v, floors.tolerance, floors.max_close_share, gen)[0], cell, w), "totals"


def _placed_on(x, v, Do, Dr, w, floors, gen):
    """Both scales (``_both``), the ladder of the largest records, both scales again; a record
    of the ladder that the last step brought within the floors' tolerance of its own value is
    moved one rung further out and the step taken again (at most PLACE_ROUNDS times: the
    smooth factors move the largest values most).  None where the equations cannot be solved."""
    eq = _equations(x, Do, Dr, w)  # the same for every step: only the values move
    first = _both(v, eq)
    if first is None:
        return None
    v, band, rungs, gap = ladder(x, first, floors.tolerance, floors.max_close_share, gen)
    for _ in range(PLACE_ROUNDS):
        both = _both(v, eq)
        if both is None:
            return None
        near = np.abs(both[band] / x[band] - 1) <= HOLE_MARGIN * floors.tolerance
        if not near.any():
            break
        rungs = np.where(near, rungs + np.sign(rungs) * gap, rungs)
        v = both.copy()
        v[band] = np.where(near, x[band] / np.exp(rungs), both[band])
    return both


def _equations(x, Do, Dr, w):
    """What ``_both`` solves for, from the original ``x`` and its predictors in the original
    (``Do``) and in the release (``Dr``; the public ones the same): (the release's log design
    (``residuals.log_design``: skewed predictors logged, with their zeros' indicator), the
    original's log fit on it over its positive records, the release's raw design [1, Dr]
    (standardised as Do), the targets (the original's cross-products with [1, Do] and its sum
    of squares), the scale, the weights or None), all weighted where the file has sampling
    weights ``w`` (the weighted least squares an analyst of a survey runs); None where the
    original has too few positive values for the log fit."""
    logged = {j for j in range(Do.shape[1]) if skewed_positive(Do[:, j], PREDICTOR_ZEROS)}
    Lo, Lr = rs.log_design(Do, logged, Dr)
    so = x > 0
    if so.sum() <= Lo.shape[1]:
        return None
    ww = np.ones(len(x)) if w is None else np.asarray(w, dtype=np.float64)
    r = np.sqrt(ww[so])
    b = np.linalg.lstsq(Lo[so] * r[:, None], np.log(x[so]) * r, rcond=None)[0]
    mu, sd = Do.mean(axis=0), Do.std(axis=0)
    on = sd > 0
    Ao = np.column_stack([np.ones(len(x)), (Do[:, on] - mu[on]) / sd[on]]) * ww[:, None]
    Ar = np.column_stack([np.ones(len(x)), (Dr[:, on] - mu[on]) / sd[on]]) * ww[:, None]
    sc = max(float(x.std()), np.finfo(float).tiny)
    return Lr, b, Ar, np.concatenate([Ao.T @ x, [(x / sc) @ (ww * x / sc)]]), sc, None if w is None else ww


def _both(v, eq):
    """``v`` (released at 0 where it is 0) with its positive values moved each by a smooth
    factor (``residuals._steps``) so that the equations ``eq`` (``_equations``) hold: its
    cross-products with the released columns (zeros included) and its sum of squares are the
    original's, and so is the OLS of its log over its positive records: every OLS of the
    amount on the released columns, on the raw scale and of its log, is the original's.  None
    where the equations cannot be solved to SCALE_TOL."""
    if eq is None or (v > 0).sum() <= eq[0].shape[1]:
        return None
    Lr, b, Ar, target, sc, wl = eq
    got = rs._steps(v, Lr, b, Ar, target, sc, w=wl)
    for _ in range(STEP_ROUNDS - 1):  # Newton's steps again from where they stopped (capital: .07 left once)
        if got is None or got[1] <= rs.SCALE_TOL:
            break
        more = rs._steps(got[0], Lr, b, Ar, target, sc, w=wl)
        if more is None or not more[1] < got[1]:
            break
        got = more
    return None if got is None or not got[1] <= rs.SCALE_TOL else got[0]


def _totals(x, v, cell, w):
    """``v`` scaled per cell of at least MIN_CELL positives (both in ``x`` and ``v``; the rest
    together) so that the cell's (weighted) total is ``x``'s."""
    w = np.ones(len(x)) if w is None else np.asarray(w, dtype=np.float64)
    out = v.copy()
    rest = np.zeros(len(x), dtype=bool)
    for c in np.unique(cell):
        m = cell == c
        if min((x[m] > 0).sum(), (v[m] > 0).sum()) >= MIN_CELL:
            out[m] *= (w[m] @ x[m]) / (w[m] @ v[m])
        else:
            rest |= m
    if rest.any() and w[rest] @ v[rest] > 0:
        out[rest] *= (w[rest] @ x[rest]) / (w[rest] @ v[rest])
    return out


def _refuse(prep, cols, names):
    """One line for what the two parts cannot take: missing cells or a log transform of an amount."""
    keep = prep.keep
    for j, nm in zip(cols, names):
        if prep.missing is not None and prep.missing[:, keep[j]].any():
            raise ValueError(f"zeros='pattern' needs {nm} complete ({int(prep.missing[:, keep[j]].sum())} cells "
                             f"missing): impute it first, or use zeros='redraw'.")
        if keep[j] in prep.log_cols:
            raise ValueError(f"zeros='pattern' puts {nm}'s positive values on the log scale itself; leave it out of "
                             f"transform, or use zeros='redraw'.")
