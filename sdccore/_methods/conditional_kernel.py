"""Protection that keeps the public variables P unchanged and redraws the sensitive ones S
given them, so that the release adds to what P already says about S nothing but what the
analysis needs (selective protection only).

All three work on the protection scale (``transform``) of the decomposed columns ``Xk``
(records x variables), ``sens`` the sensitive columns, the rest public:

* ``ipso`` -- regression-preserving (Burridge 2003, IPSO; Langsrud's RegSDC generalises it):
  S* = fit of S on [1, P] + E*, where E* are the OLS residuals E handed from record to
  record within classes of similar predicted size (each class a random cycle, so no record
  keeps its own; exchanged where a value would fall below the bounds or within the floors'
  tolerance of its own, then raised where the orthogonalisation still leaves a value below),
  then made orthogonal to [1, P] and rescaled so that E*'E* = E'E.  Exact:
  the OLS of S on P (coefficients, residual covariance, so standard errors and R^2), every
  mean, and the covariance matrix of (S, P); with the codes released unchanged in P as
  indicators (``codes``), the mean of S in each of their domains too.  Classes keep the residuals plausible for the
  record's size (a large firm's residual is not given to a small one).
* ``shuffle`` -- data shuffling (Muralidhar and Sarathy 2006), as sdcMicro's
  ``shuffle(method = "ds")``: normal scores of every column, an EGADP draw of S's scores
  given P's (conditional mean + normal noise made orthogonal to [1, P] and rescaled to the
  conditional covariance, so the scores' covariance with P is exact), then each S column's
  ORIGINAL values handed out in the rank order of its draw.  Exact: each S column's values
  (mean, variance, quantiles; every released value a real one); rank correlations kept
  in expectation.
* ``cfa`` -- factor analysis in a safe form: the factor model (``n_factors``, ``extraction``)
  fitted to the correlations implies Sigma = L L' + Psi; S is redrawn from the model's law of
  S given P, mean Sigma_SP Sigma_PP^-1 P, with noise orthogonal to [1, P] rescaled to the
  conditional covariance Sigma_SS - Sigma_SP Sigma_PP^-1 Sigma_PS.  Every factor's part of S
  that P does not determine is redrawn, so nothing of a record's own S survives beyond what
  P says; ``factor_roles`` says per factor how much of S it carries and how much of it P
  determines.  Exact: every mean; the covariance of S with P and of S given P are the
  model's (equal to the sample's when the model fits, e.g. as many factors as variables).

A value far beyond the rest of its column (``far_values``: more than 1e3 times the 99th
percentile of |x|, sensitive or public) would drive every other record's redraw: all three
refuse such a file before protecting (``refuse_far``: variable, row position and ratio, never
the value; fix: top-code, remove the record or protect on the log scale).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from scipy import stats

from .._core import decomp as dc
from . import methods
from ._base import Option
from .ladder import place_band
from .residuals import _basis, _guard_top, _match, _push

__all__ = []  # internal: reached through protect(method='ipso' | 'shuffle' | 'cfa')

CONDITIONAL = methods(conditional=True)
GUARD = True  # IPSO's largest records protected (``residuals._guard_top``); off only to show what it stops


def _classes(score, k):
    """k classes of (nearly) equal size by the rank of ``score`` (stable)."""
    order = np.argsort(score, kind="stable")
    return [c for c in np.array_split(order, max(1, min(k, len(score) // 2))) if len(c)]


def _cycle(idx, gen):
    """A random cyclic permutation of ``idx``: out[i] is the record whose residual i gets
    (never itself in classes of two or more)."""
    o = gen.permutation(idx)
    return o, np.roll(o, -1)


def _repair(fit, Ep, idx, floor, own=None, near=None):
    """See ``_repair_python`` (the definition); this runs ``_repair_kernel``, the same loop
    compiled (EIA, two sensitive variables: 1.9 s -> a few ms per IPSO run), where its
    distance sums add in the same order as numpy's (fewer than 8 columns).  The kernel finds
    each record's partner by walking outward from it in the order of the first column's fit
    (a partner's distance is at least that column's gap), instead of trying every record:
    the same partner, ties to the first in ``idx`` as the definition takes them (100,000
    records: 20.6 CPU-s -> well under one)."""
    if fit.shape[1] >= 8:
        return _repair_python(fit, Ep, idx, floor, own, near)
    use_near = near is not None
    own_ = own if use_near else np.zeros((1, 1))
    near_ = near if use_near else np.zeros((1, 1))
    idx = np.asarray(idx, dtype=np.int64)
    fit = np.ascontiguousarray(fit)
    order = np.argsort(fit[idx, 0], kind="stable").astype(np.int64)
    return int(_repair_kernel(fit, Ep, idx, order, np.asarray(floor, dtype=np.float64),
                              np.ascontiguousarray(own_), np.ascontiguousarray(near_), use_near))


@njit(cache=True)
def _repair_kernel(fit, Ep, idx, order, floor, own, near, use_near):
    s = fit.shape[1]
    nidx = idx.shape[0]

    def bad_at(i, k):  # record i holding residual row k
        for c in range(s):
            v = fit[i, c] + Ep[k, c]
            if v < floor[c]:
                return True
        if use_near:
            for c in range(s):
                v = fit[i, c] + Ep[k, c]
                if abs(v - own[i, c]) <= near[i, c]:
                    return True
        return False

    rank = np.empty(nidx, dtype=np.int64)  # position of idx[t] in the order of the first column's fit
    for r in range(nidx):
        rank[order[r]] = r
    todo = np.empty(nidx, dtype=np.int64)  # positions in idx
    nt = 0
    for t in range(nidx):
        if bad_at(idx[t], idx[t]):
            todo[nt] = t
            nt += 1
    left = 0
    tmp = np.empty(s)
    for a in range(nt):
        ti = todo[a]
        i = idx[ti]
        if not bad_at(i, i):
            continue
        best = -1
        bestt = nidx
        bestd = np.inf
        key = fit[i, 0]
        lo = rank[ti] - 1
        hi = rank[ti] + 1
        while lo >= 0 or hi < nidx:
            dl = key - fit[idx[order[lo]], 0] if lo >= 0 else np.inf
            dh = fit[idx[order[hi]], 0] - key if hi < nidx else np.inf
            if dl <= dh:
                if dl > bestd:  # every record left is farther in the first column alone
                    break
                t = order[lo]
                lo -= 1
            else:
                if dh > bestd:
                    break
                t = order[hi]
                hi += 1
            j = idx[t]
            if j == i:
                continue
            # record i can take j's residual and record j can take i's
            if bad_at(i, j) or bad_at(j, i):
                continue
            d = 0.0
            for c in range(s):
                d += abs(fit[j, c] - fit[i, c])
            if d < bestd or (d == bestd and t < bestt):  # ties: the first in idx, as the definition
                bestd = d
                best = j
                bestt = t
        if best < 0:
            left += 1
            continue
        for c in range(s):
            tmp[c] = Ep[i, c]
            Ep[i, c] = Ep[best, c]
            Ep[best, c] = tmp[c]
    return left


def _repair_python(fit, Ep, idx, floor, own=None, near=None):
    """Exchange residuals between records of one class so that fit + residual stays at or
    above ``floor`` (per column; -inf where the original has negative values) and, with
    ``own`` (the original values) and ``near`` (records x columns: the closeness tolerance
    in absolute units, 0 for none), no record's value lands within ``near`` of its own: each
    record that breaks a condition takes the residual of a class-mate that can give it and
    take its own in exchange (the nearest in predicted size).  Returns how many records
    could not be repaired."""
    def bad_at(i, e):
        v = fit[i] + e
        if (v < floor).any():
            return True
        return near is not None and (np.abs(v - own[i]) <= near[i]).any()

    def ok_rows(rows, e):  # rows that can hold residual(s) e (one per row or one for all)
        v = fit[rows] + e
        good = (v >= floor).all(axis=1)
        if near is not None:
            good &= ~(np.abs(v - own[rows]) <= near[rows]).any(axis=1)
        return good

    left = 0
    for i in [i for i in idx if bad_at(i, Ep[i])]:
        if not bad_at(i, Ep[i]):
            continue
        here = ok_rows(np.full(len(idx), i), Ep[idx])  # residuals record i can take
        there = ok_rows(idx, Ep[i])  # records that can take i's
        cand = np.flatnonzero(here & there & (idx != i))
        if len(cand) == 0:
            left += 1
            continue
        j = idx[cand[np.argmin(np.abs(fit[idx][cand] - fit[i]).sum(axis=1))]]
        Ep[[i, j]] = Ep[[j, i]]
    return left


def complete_rows(observed, sens, pub):
    """The row sets on which an analyst's OLS of a sensitive column on the public ones runs
    (that column and every public one observed: incomplete records dropped), one per distinct
    set that is not every row; ``observed`` is the n x columns mask of observed cells (None:
    no missing cell).  Returns (sets kept, records left out of sets set aside): a set is kept
    only when every group of records the kept sets cut out together holds at least
    ``min_rows(len(pub))`` records (the release holds each group's own fit exactly, which
    leans to each record's own value by its leverage)."""
    if observed is None:
        return [], 0
    n = observed.shape[0]
    base = observed[:, pub].all(axis=1)
    kept, seen, left = [], set(), 0
    for j in sens:
        rows = base & observed[:, j]
        key = rows.tobytes()
        if rows.all() or key in seen:
            continue
        seen.add(key)
        # every group of records the sets cut out together (the same membership in each) must
        # be large enough: two sets differing by 3 records would isolate those 3, and the
        # basis would fit them exactly (their other sensitive values released as they are)
        member = np.column_stack(kept + [rows])
        _, sizes = np.unique(member, axis=0, return_counts=True)
        if sizes.min() >= min_rows(len(pub)):
            kept.append(rows)
        else:
            left = max(left, n - int(rows.sum()))
    return kept, left


def min_rows(p):
    """Records needed on each side of a complete-row set (p public columns) to keep its OLS
    too: 10 per coefficient, so that the group's fit, which the release then holds exactly,
    leans to each record's own value by a leverage of 0.1 on average.  With 3 coefficients
    per 12 records (the first rule) an outside intruder fitting within 15 incomplete firms of
    600 took 3 of them within 5 % beyond every prior model, in every run (0.6 with the
    filled regression only); with 60 incomplete firms, 1 point more than the filled one."""
    return max(20, 10 * (1 + p))


def margin_option(method, when=""):
    """The ``margin`` option of the steps that keep values off their own (the quantile
    exchange's OLS or total step, and the two scales of both methods)."""
    return Option("margin", method, "choice", "stay", "Values near their own",
                  "A value that the last step (which keeps the total, the OLS or both scales exactly) would bring "
                  "within the risk floors' tolerance of the record's own value: 'stay' leaves it where it was before "
                  "that step and the other records carry the step; 'fixed' stops it at exactly the tolerance from "
                  "its own value (what a recipe made before format 9 rebuilds: on Tarragona SALES the quantile "
                  "exchange then released 59 of 834 firms at exactly 1.0525 times their own value, which a divisor "
                  "gives back).", choices=("stay", "fixed"),
                  choice_text={"stay": "left where they were", "fixed": "stopped at the tolerance (older recipes)"},
                  when=when)


def stays(o):
    """Whether the last steps leave a value they would bring near its own where it was (``margin``)."""
    return o.get("margin", "fixed") == "stay"


def complete_totals(Xk, Xp, observed, rows, sens, pub, log, o):
    """missing_rows='complete': in place, each sensitive column whose complete records' OLS the
    release keeps (its set among ``rows``) gets its other observed values
    (observed, but with a public cell missing) shifted by one constant so that its observed
    total is the original's.  The release's sum over the complete records is already the
    original's (their indicator is in IPSO's basis), so the pipeline's shift of the observed
    mean then moves nothing, and the complete records' intercept stays exact (it moved with
    that shift: 0.017 standard errors on tests/methods/test_ipso_missing.py's firms).  Not
    for a column on the log scale (``log``), whose mean is kept on the original scale."""
    if observed is None or not len(rows) or o["missing_rows"] != "complete" or o["keep"] == "scales":
        return  # (keep='scales' does this itself, on the records complete in every column)
    base = observed[:, pub].all(axis=1)
    sets = {r.tobytes() for r in rows}
    for a, j in enumerate(sens):
        comp = base & observed[:, j]
        other = observed[:, j] & ~comp
        if log[a] or comp.tobytes() not in sets or not other.any():
            continue
        Xp[other, j] += np.mean(Xk[other, j] - Xp[other, j])


def missing_words(any_missing, mode, rows, left, p):
    """Which OLS is kept where cells are missing (the analyst's drops the incomplete records)."""
    if not any_missing:
        return ""
    if rows:
        return ("; with the missing cells: on the complete records (as an analyst's regression drops the incomplete "
                f"ones{'' if mode == 'complete' else '; the intercept moved by the observed mean shift'}"
                ") and on all records with the missing cells filled")
    if mode == "filled":
        return ("; on all records with the missing cells filled (EM draws): the regression on the complete records "
                "is close but not exact (missing_rows='filled')")
    if left:
        return (f"; on all records with the missing cells filled (EM draws): only {left} record(s) have a missing "
                f"cell, too few to keep the complete records' regression as well (at least {min_rows(p)} needed: "
                f"the release would hold their group's own fit, which leans to each one's value), so that one is "
                f"close but not exact")
    return ""


def ipso(Xk, sens, classes, gen, floor=None, near=None, rows=(), most=0.2, spread=True, extra=None):
    """The regression-preserving release of columns ``sens`` of ``Xk`` (module docstring).
    ``rows``: complete-row sets (``complete_rows``) on which the OLS is kept as well: their
    indicator and the public columns masked to them join the basis, so that the released
    residuals are orthogonal to the public columns on those rows too.
    ``floor`` (per sensitive column, -inf for none): residuals are exchanged within the
    class so that no value falls below it where an exchange allows (``_repair``); ``near``
    (per sensitive column, the relative tolerance of the risk floors, 0 for none): nor lands
    within it of the record's own value.  The orthogonalisation may still move a few values,
    which the bounds then clip.  ``most``: the floors' largest share of a band an intruder may
    get; with ``spread`` the top band's ratios of released to own value are spread so that no
    intruder who divides the released values by one constant gets more (``residuals``).
    ``extra``: further columns of the basis (indicators of the codes released unchanged,
    ``codes.indicators``), so that the OLS on them and the domain means are kept too."""
    pub = [i for i in range(Xk.shape[1]) if i not in set(sens)]
    P = Xk[:, pub] if extra is None or not extra.shape[1] else np.column_stack([Xk[:, pub], extra])
    Q = _basis(np.column_stack([P] + [np.column_stack([r, P * r[:, None]]) for r in rows]) if len(rows) else P)
    lone = np.flatnonzero((Q * Q).sum(axis=1) > LEVERAGE_MAX)
    if len(lone):  # their own fit is their value: no exchanged residual can stay on them
        raise LeverageError(lone)
    S = Xk[:, sens]
    fit = Q @ (Q.T @ S)
    E = S - fit
    # size classes by the fitted values (what P says of the record's size), standardised and summed
    sd = fit.std(axis=0)
    score = ((fit - fit.mean(axis=0)) / np.where(sd > 0, sd, 1.0)).sum(axis=1)
    Ep = np.empty_like(E)
    groups = _classes(score, classes)
    for c in groups:
        to, frm = _cycle(c, gen)
        Ep[to] = E[frm]
    target = E.T @ E
    Es = _match(Ep, Q, target)
    if floor is None:
        floor = np.full(len(sens), -np.inf)
    tol = None if near is None or not np.any(near) else NEAR_MARGIN * np.abs(S) * np.asarray(near)[None, :]
    if np.isfinite(floor).any() or tol is not None:
        # exchange residuals so that the final values respect the conditions: the
        # orthogonalisation moves each record's residual by a small amount, so repeat with
        # that shift known
        for _ in range(REPAIR_ROUNDS):
            shifted = fit + (Es - Ep)
            v = shifted + Ep
            if not ((v < floor).any() or (tol is not None and (np.abs(v - S) <= tol).any())):
                break
            for c in groups:
                _repair(shifted, Ep, c, floor, S, tol)
            Es = _match(Ep, Q, target)
        # the orthogonalisation still moves some records below the floor (a residual handed to a
        # record of high leverage changes every projection): raise each such residual until the
        # value reaches a quarter of the way from the floor to the record's fitted value, and
        # match again; a few rounds (6 on Tarragona SALES) leave none below.  Exactness is kept:
        # every round ends with the orthogonal, rescaled residuals.
        Es = _push(fit, Es, Ep, Q, target, floor)
        # the guard of the top band (and its spread): with two or more sensitive variables
        # only with the spread, whose triangular match keeps a move of one column from
        # carrying another back to the truth (with the symmetric one, EIA RESREVENUE's top 1 %
        # went from .15 to .24 beyond the prior in every run)
        if tol is not None and GUARD and (S.shape[1] == 1 or spread):
            coded = extra is not None and extra.shape[1] > 0
            Es = _guard_top(fit, Es, S, Xk[:, pub], Q, rows, target, floor, near, gen, most, spread, coded=coded)
            if spread == "random":  # the band on its ladder, last and exactly
                Es = place_band(fit, Es, S, Xk[:, pub], Q, rows, target, floor, near, gen, most, coded=coded)
    out = Xk.copy()
    out[:, sens] = fit + Es
    return out


LEVERAGE_MAX = 0.99  # a record whose leverage in IPSO's basis is above this is released as it is: refused


class LeverageError(ValueError):
    """IPSO's basis fits records ``rows`` exactly (leverage above LEVERAGE_MAX): the
    orthogonalisation takes every exchanged residual off them, so each would be released
    with its own value (a public column that only that record has nonzero, say)."""

    def __init__(self, rows):
        super().__init__(f"{len(rows)} record(s) have leverage above {LEVERAGE_MAX} in IPSO's regression")
        self.rows = np.asarray(rows)


def leverage_causes(P, extra, rows):
    """The public columns (indices into P's columns) without which records ``rows`` no
    longer have leverage above LEVERAGE_MAX."""
    out = []
    for j in range(P.shape[1]):
        B = np.delete(P, j, axis=1)
        if extra is not None and extra.shape[1]:
            B = np.column_stack([B, extra])
        Q = _basis(B)
        if ((Q[rows] ** 2).sum(axis=1) <= LEVERAGE_MAX).all():
            out.append(j)
    return out


FAR = 1e3  # a value more than this many times its column's 99th percentile (|x|) is refused
FAR_QUANTILE = 0.99


def far_values(X, observed=None):
    """Per column of ``X`` (records x variables, the protection scale), the values far beyond
    the rest: |x| above ``FAR`` times the column's 99th percentile of |x| (the 'lower' one, an
    observed value: below 100 records the second largest, so one giant cannot raise its own
    reference).  Returns a list of (column, row position of the farthest, its ratio, how many
    far values) for the columns that have any; a column whose percentile is 0 is skipped.

    Why 1e3: the largest firm of a skewed but real file is 50-200 times the 99th percentile
    (Pareto tail with index 1, 300 records: at most 250 in 200 draws; the bundled Tarragona,
    CASC and EIA at most 4.2, lognormal sigma 2 or 3 at most 7), while one value 1e3 times the
    percentile outweighs, in the sum of squares, all the records below it together on files of
    up to a million records, so the redraw of every other record is driven by it (one 1e15
    among ordinary Tarragona sales: IPSO clipped 746 of 834 values to 0).  Milder giants (30
    times on Tarragona SALES already made IPSO clip 391 values) pass this rule and are caught
    by the clipped-share check of the release (``_plausible.clipping_violations``)."""
    out = []
    for j in range(X.shape[1]):
        a = np.abs(X[:, j] if observed is None else X[observed[:, j], j])
        rows = np.arange(X.shape[0]) if observed is None else np.flatnonzero(observed[:, j])
        if len(a) < 2:
            continue
        ref = float(np.quantile(a, FAR_QUANTILE, method="lower"))
        if not ref > 0:
            continue
        far = a > FAR * ref
        if far.any():
            i = int(np.argmax(a))
            out.append((j, int(rows[i]), float(a[i] / ref), int(far.sum())))
    return out


def refuse_far(X, names, method, observed=None):
    """``ValueError`` naming the first variable with a value far beyond the rest
    (``far_values``): its row position and the fix; never the value, nor its ratio."""
    found = far_values(X, observed)
    if not found:
        return
    j, row, ratio, k = found[0]
    more = "" if len(found) == 1 and k == 1 else \
        f" ({sum(f[3] for f in found) - 1} more far value(s) in {', '.join(names[f[0]] for f in found)})"
    # the ratio itself is not said: with the percentile, which a release shows roughly, it
    # would give the value away to its digits
    raise ValueError(f"{names[j]}: the record at row position {row} (0-based) is more than {FAR:,.0f} times the "
                     f"variable's 99th percentile (in absolute value), far beyond the rest{more}; method={method!r} "
                     f"would redraw the other records around it (most set to 0 by the bounds, or the value handed to "
                     f"another record). Top-code it, mark the "
                     f"record for removal, or protect the variable on the log scale (transform=['{names[j]}'], "
                     f"non-negative variables); nothing is released.")


REPAIR_ROUNDS = 5
NEAR_MARGIN = 1.0  # exchanges keep values this many tolerances away (1.5 measured worse: 1 of 10 runs on Tarragona SALES + NET.PROFIT)


def normal_scores(x):
    """Van der Waerden scores Phi^-1((rank - 1/2) / n), ties given their mean rank."""
    return stats.norm.ppf((stats.rankdata(x, method="average") - 0.5) / len(x))


def _conditional_draw(ZP, Sig, sens, pub, gen):
    """Draw of the S block given P under correlation Sigma: mean ZP B, noise orthogonal to
    [1, ZP] with sample covariance exactly n (Sigma_SS - Sigma_SP B)."""
    n = len(ZP)
    Spp = Sig[np.ix_(pub, pub)]
    Sps = Sig[np.ix_(pub, sens)]
    B = np.linalg.lstsq(Spp, Sps, rcond=None)[0]
    C = Sig[np.ix_(sens, sens)] - Sps.T @ B
    Q = _basis(ZP)
    N = gen.standard_normal((n, len(sens)))
    return ZP @ B + _match(N, Q, n * C), B, C


def shuffle(Xk, sens, gen):
    """Data shuffling of columns ``sens`` of ``Xk`` (module docstring)."""
    pub = [i for i in range(Xk.shape[1]) if i not in set(sens)]
    Z = np.column_stack([normal_scores(Xk[:, j]) for j in range(Xk.shape[1])])
    Z = (Z - Z.mean(axis=0)) / Z.std(axis=0)
    Sig = np.corrcoef(Z, rowvar=False)
    Y, _, _ = _conditional_draw(Z[:, pub], Sig, list(sens), pub, gen)
    out = Xk.copy()
    for a, j in enumerate(sens):
        vals = np.sort(Xk[:, j], kind="stable")
        out[np.argsort(Y[:, a], kind="stable"), j] = vals
    return out


def default_factors(R):
    """Kaiser's rule: the eigenvalues of the correlation matrix above 1 (at least 1)."""
    return max(1, int((np.linalg.eigvalsh(R) > 1.0).sum()))


def cfa(Xk, Zk, Rk, sd, sens, n_factors, extraction, gen):
    """The conditional factor-model release of columns ``sens`` (module docstring); returns
    (release, per-factor roles: list of (factor, share of each S's variance it carries,
    share of the factor P determines))."""
    m = Xk.shape[1]
    pub = [i for i in range(m) if i not in set(sens)]
    k = min(n_factors, m)
    L = dc.fa_loadings(Rk, k, extraction)
    L = L[:, (L * L).sum(axis=0) > dc.NULL_FACTOR]
    psi = np.clip(1.0 - (L * L).sum(axis=1), 0.0, None)
    Sig = L @ L.T + np.diag(psi)
    Zs, B, C = _conditional_draw(Zk[:, pub], Sig, sens, pub, gen)
    out = Xk.copy()
    mean = Xk[:, sens].mean(axis=0)
    out[:, sens] = mean + Zs * sd[sens]
    # per factor: share of each S's variance it carries, and how much of it P determines
    Spp = Sig[np.ix_(pub, pub)]
    roles = []
    for f in range(L.shape[1]):
        lp = L[pub, f]
        known = float(lp @ np.linalg.lstsq(Spp, lp, rcond=None)[0])
        roles.append((f + 1, [float(L[s, f] ** 2) for s in sens], min(max(known, 0.0), 1.0)))
    return out, roles


def ipso_scales(Xk, Xp, sens, Z, tol, seen=None, stay=False):
    """IPSO's keep='scales' (issue 39): each skewed positive sensitive column of the release
    ``Xp`` moved (``residuals.two_scales``, no bands: kept positive) so that its OLS on [1, Z]
    stays the original's and its OLS on the log design and its sum of squares become the
    original's too; a later sensitive column's design holds the earlier ones (original and
    released).  ``tol``: per sensitive column, the floors' tolerance (0: none).  With missing
    cells (``seen``: the observed cells of Xk's columns), on the complete records (those
    an analyst's regression keeps), and the other observed values of a column shifted by one
    constant so that its observed total is the original's (the pipeline's shift of the observed
    mean then moves nothing).  Returns (the release, the positions in ``sens`` that fell back
    to the OLS alone).  ``stay``: ``two_scales``'."""
    from .residuals import SCALE_TOL, skewed_positive, two_scales

    rows = np.ones(len(Xk), bool) if seen is None else seen.all(axis=1)
    Xp, Z, Zr, fell = Xp.copy(), Z[rows], Z[rows], []
    for a, j in enumerate(sens):
        S = Xk[rows, j]
        got = None
        if skewed_positive(S):
            inf = np.full(len(S), np.inf)
            got = two_scales(S, Xp[rows, j], Z, Zr, -inf, inf, tol[a] * np.abs(S) if tol[a] > 0 else None, stay)
        if got is not None and got[1] <= SCALE_TOL:
            Xp[rows, j] = got[0]
            other = ~rows & (True if seen is None else seen[:, j])
            if other.any():
                Xp[other, j] += np.mean(Xk[other, j] - Xp[other, j])
        else:
            fell.append(a)
        Z, Zr = np.column_stack([Z, S]), np.column_stack([Zr, Xp[rows, j]])
    return Xp, fell
