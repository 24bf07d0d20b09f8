"""IPSO, data shuffling, conditional FA and the quantile exchange (``_conditional``): the public
variables kept, the sensitive ones redrawn given them (selective protection only)."""

from __future__ import annotations

import numpy as np

import pandas as pd

from . import conditional_kernel as cd, residuals as rs, zeros as zp
from .residuals import OLS_TOL, ROOM_USED, _edges, _moments_kept, _rooms  # noqa: F401 (the quantile exchange's steps)
from .._core import plausible as pl
from ._base import EXTRACTION_TEXT, RECORDS_PER_COLUMN, Option, Perturbed, Scaled, indicators, words  # noqa: F401


def options(method):
    if method == "qexchange":
        return _qx_options(method)
    if method == "ipso":
        return [
            Option("classes", "ipso", "integer", 1, "Size classes",
                   "The residuals are handed from record to record (a random cycle: no record keeps its own) within "
                   "this many classes of similar predicted size, and exchanged where a value would fall below the "
                   "bounds. Default 1: on the samples one class kept the regression best (CI overlap >= 0.99) and "
                   "met the risk floors more often than 10 classes.", low=1, unit="classes"),
            Option("missing_rows", "ipso", "choice", "complete", "Regression kept with missing cells",
                   "With missing cells, which OLS of the sensitive variables on the public ones is kept exactly: "
                   "'complete' the one an analyst runs (incomplete records dropped), intercept included, and the one "
                   "on every record with the missing cells filled; 'both' as 'complete' with that intercept moved by "
                   "the observed mean's shift, 'filled' the latter only (what older recipes rebuild).",
                   choices=("complete", "both", "filled"),
                   choice_text={"complete": "on the complete records and on all records (missing cells filled)",
                                "both": "as 'complete', the complete records' intercept moved (older recipes)",
                                "filled": "on all records, missing cells filled by EM draws"},
                   when="with missing cells"),
            Option("top_band", "ipso", "choice", "random", "Largest records",
                   "How the largest max(5, 1 %) records of the sensitive variable are protected beyond the exchange: "
                   "'random' (the default) moves every released residual away from their values, the one each would "
                   "be handed if the released residuals were handed out by the size of the fit too, and spreads "
                   "their ratios of released to own value on a ladder whose rungs are handed to the records in a "
                   "random order, none within the tolerance of 1, so that no single constant divides more of them "
                   "back than the risk floors allow (a record is among the largest partly by its own residual, so "
                   "their released values fall short of their own by ratios that crowd together); 'ranks' spreads "
                   "the ratios in the order they had (the least move, but a record with a large residual of its own "
                   "then gets a low rung: the released residuals of the largest records mirror their own about the "
                   "fit; what a recipe made before the random order rebuilds); 'spread' as 'ranks' without the "
                   "residuals handed out by size (format 5); 'guard' only moves the residuals (before format 5).",
                   choices=("random", "ranks", "spread", "guard"),
                   choice_text={"random": "residuals moved away (also those handed out by size), ratios spread in "
                                          "a random order",
                                "ranks": "residuals moved away (also those handed out by size) and ratios spread",
                                "spread": "residuals moved away and ratios spread",
                                "guard": "residuals moved away only"}),
            Option("keep", "ipso", "choice", "ols", "Kept exactly",
                   "'ols': the OLS of each sensitive variable on the public ones (and the codes). 'scales': for a "
                   "skewed positive one (at most 5 % zeros, skewness above 1) also the OLS of its log on the public "
                   "ones (the skewed ones logged: the log-log and log-level regressions) and its sum of squares, each "
                   "value moved by a smooth factor (with missing cells, on the complete records); elsewhere the OLS "
                   "alone (said in the notes). On a persons file it kept log-log .92-.97 where 'ols' kept .11-.46; on firm files whose "
                   "OLS leans on the largest records it broke the floors there more often.",
                   choices=("ols", "scales"),
                   choice_text={"ols": "the OLS (raw scale)", "scales": "the OLS on the raw and on the log scale"}),
            cd.margin_option("ipso", "with keep='scales'"), zp.option(),
            Option("condition", "ipso", "choice", "released", "Conditioned on",
                   "What the sensitive variables are redrawn given: 'released' is the public variables and every "
                   "column released unchanged that has a few large levels (a set-apart code such as sex, region, "
                   "firm or year, as indicators; levels of fewer than 10 records join the reference), so that the "
                   "domain means and the regression with those codes are kept exactly; 'public' is the public "
                   "numeric variables only (what a recipe made before this option existed rebuilds).",
                   choices=("released", "public"),
                   choice_text={"released": "public variables and the codes released unchanged",
                                "public": "public numeric variables only"}),
        ]
    if method == "cfa":
        return [
            Option("n_factors", "cfa", "integer", lambda o, ctx: None, "Number of factors",
                   "Factors of the model whose law of the sensitive variables given the public ones is drawn from. "
                   "Default: Kaiser's rule (eigenvalues of the correlation matrix above 1); as many as variables "
                   "reproduces the sample's relations.", low=1),
            Option("extraction", "cfa", "choice", "minres", "Extraction", "How the factors are extracted.",
                   choices=tuple(EXTRACTION_TEXT), choice_text=EXTRACTION_TEXT),
        ]
    return []


def check(method, o, ctx):
    if method == "qexchange":
        return _qx_check(o, ctx)
    m = ctx.m
    if method == "cfa" and o.get("n_factors") is not None and m is not None and o["n_factors"] > m:
        raise ValueError(f"n_factors={o['n_factors']} is more than the {m} variables; choose 1 to {m}.")


def _ipso(prep, Xk, o, gen):
    sens, keep = prep.sens, prep.keep
    floor = None
    if o["bounds"] != "none":  # keep values within what the bounds will allow, where an exchange can
        X0s = prep.X0[:, [keep[j] for j in sens]]
        log = [keep[j] in prep.log_cols for j in sens]
        floor = np.array([-np.inf if lg else (X0s[:, a].min() if o["bounds"] == "observed" else
                                               (0.0 if X0s[:, a].min() >= 0 else -np.inf))
                          for a, lg in enumerate(log)])
    # no record's value left within the floors' tolerance of its own (on the original scale;
    # not for log-scale columns)
    near = np.array([0.0 if keep[j] in prep.log_cols else o["floors"].tolerance for j in sens])
    pub = [j for j in range(len(keep)) if j not in set(sens)]
    observed = None if prep.missing is None or o["missing_rows"] == "filled" else ~prep.missing[:, keep]
    extra, used, left_out = (indicators(prep.coded, prep.numeric, len(pub)) if o["condition"] == "released"
                             else (None, [], []))
    rows, left = cd.complete_rows(observed, sens, pub)
    try:
        Xpk = cd.ipso(Xk, sens, o["classes"], gen, floor, near, rows, o["floors"].max_close_share,
                      spread={"guard": False, "spread": True, "ranks": "ranks", "random": "random"}[o["top_band"]], extra=extra)
    except cd.LeverageError as exc:  # named by the public columns that cause it; never a value
        names = [prep.numeric[keep[j]] for j in pub]
        causes = [names[j] for j in cd.leverage_causes(Xk[:, pub], extra, exc.rows)]
        cause = (f"{', '.join(causes)} (a value that almost no other record has, such as the only nonzero one)"
                 if causes else "their combination of public values")
        fix = (f"top-code or group {causes[0]}, leave it out of the public variables (exclude=['{causes[0]}']) or "
               f"mark it sensitive" if causes else "top-code the public variables' rare values")
        raise ValueError(f"IPSO would release {len(exc.rows)} record(s) with their own "
                         f"{', '.join(prep.numeric[keep[j]] for j in sens)}: the regression on the public variables "
                         f"fits them exactly (leverage above {cd.LEVERAGE_MAX}), so no exchanged residual can stay on "
                         f"them. The cause: {cause}. Fix: {fix}; or use another method.") from None
    cd.complete_totals(Xk, Xpk, observed, rows, sens, pub, [keep[j] in prep.log_cols for j in sens], o)
    scales = _ipso_scales(prep, Xk, Xpk, pub, extra, near, cd.stays(o)) if o["keep"] == "scales" else (Xpk, "")
    return scales[0], _ipso_notes(prep, o, rows, left, len(pub), used, left_out) + ([scales[1]] if scales[1] else [])


def _ipso_notes(prep, o, rows, left, p, used, left_out):
    """What IPSO kept, in the release's notes."""
    given = "the public ones" + (f" and the codes released unchanged ({words(used)})" if used else "")
    kept = ("is kept exactly" if o.get("tail") != "aggregate" else
            "is kept exactly before the largest values are aggregated (tail='aggregate'), which moves it")
    return [f"the sensitive variables' OLS on {given} {kept} (fit + residuals passed "
            f"between records of similar predicted size, in {o['classes']} class{'' if o['classes'] == 1 else 'es'})"
            + cd.missing_words(prep.missing is not None and prep.missing[:, prep.keep].any(), o["missing_rows"],
                               rows, left, p)] + (
        [f"not conditioned on {', '.join(left_out)}: too many levels for the records (at most one indicator per "
         f"{RECORDS_PER_COLUMN} records); their domain means are close, not exact"] if left_out else [])


def _ipso_scales(prep, Xk, Xpk, pub, extra, near, stay):
    """keep='scales' (``conditional_kernel.ipso_scales``): (the release, its note)."""
    names = [prep.numeric[prep.keep[j]] for j in prep.sens]
    Z = Xk[:, pub] if extra is None else np.column_stack([Xk[:, pub], extra])
    seen = None if prep.missing is None else ~prep.missing[:, prep.keep]  # the observed cells
    Xp, fell = cd.ipso_scales(Xk, Xpk, prep.sens, Z, NEAR_MARGIN * near, seen, stay)
    done = [n for a, n in enumerate(names) if a not in fell]
    return Xp, ((f"{', '.join(done)}: also the OLS of the log on the public variables (skewed ones logged) and the "
                 f"sum of squares kept (keep='scales'{'' if prep.missing is None else ', on the complete records'})"
                 if done else "") + ("; " if done and fell else "")
                + (f"{', '.join(names[a] for a in fell)}: the OLS alone (not skewed positive, or the log scale "
                   f"could not be kept as well)" if fell else ""))


def _cfa(prep, Xk, full, o, gen):
    sens, keep = prep.sens, prep.keep
    Rk = prep.R[np.ix_(keep, keep)]
    k = o["n_factors"] if o.get("n_factors") is not None else cd.default_factors(Rk)
    Zk = prep.Z if full else prep.Z[:, keep]
    Xpk, roles = cd.cfa(Xk, Zk, Rk, prep.sd[keep], sens, k, o["extraction"], gen)
    names = [prep.numeric[keep[j]] for j in sens]
    notes = []
    for f, carried, known in roles:
        if max(carried) < 0.01:
            continue
        what = ", ".join(f"{c:.0%} of {nm}" for c, nm in zip(carried, names) if c >= 0.01)
        notes.append(f"factor F{f} carries {what}; the public variables determine {known:.0%} of it, the rest "
                     f"is redrawn")
    notes.append(f"{k} factor(s) ({'Kaiser rule' if o.get('n_factors') is None else 'as asked'}); the sensitive "
                 f"variables drawn from the model's law given the public ones")
    return Xpk, notes


def perturb(prep, plan, method, o, gen, Xk, full):
    sens, keep = prep.sens, prep.keep
    if not sens or len(sens) == len(keep):
        raise ValueError(f"method={method!r} redraws the sensitive variables given the public ones, and "
                         f"{'no' if not sens else 'every'} variable is sensitive here; leave at least one numeric "
                         f"variable public (or use fa, pca or magg).")
    # a value far beyond the rest of its column drives every other record's redraw: refused
    cd.refuse_far(Xk, [prep.numeric[j] for j in keep], method, None if prep.missing is None else
                  ~prep.missing[:, keep])
    if method == "qexchange":
        return _qexchange(prep, method, o, gen, Xk)
    if method == "ipso":
        Xpk, notes = zp.two_part(prep, Xk, o, gen, _ipso) if o["zeros"] == "pattern" else _ipso(prep, Xk, o, gen)
    elif method == "shuffle":
        Xpk = cd.shuffle(Xk, sens, gen)
        notes = ["each sensitive variable's original values handed out again in the order of a draw given the "
                 "public variables: every released value is a real one"]
    else:
        Xpk, notes = _cfa(prep, Xk, full, o, gen)
    return Perturbed(X=Xpk, notes=tuple(notes))


def release_check(method, o, prep, plaus, risk):
    """The finished release's check: a sensitive variable with more than ``CLIP_SHARE`` of its
    values clipped by the bounds breaks a floor (a heap at the bound is no redraw given the
    public variables; CFA on Tarragona SALES clipped 26 % to 0).  A quantile exchange's bands
    are attacked by the battery's band-mates intruder (``_risk.partner.band_mates``)."""
    names = [prep.numeric[j] for j in prep.check]
    fix = ("protect it on the log scale (transform=['{v}'] or transform='auto'), use bounds='tail', or top-code its "
           "largest values" if o.get("engine") != "dask" else  # the log scale and bounds='tail' need the file in memory
           "top-code its largest values, or protect it in memory on the log scale (transform=['{v}'])")
    fix += "; or IPSO, whose residual exchange keeps values above the bounds" if method == "cfa" else ""
    return pl.with_violations(risk, pl.clipping_violations(plaus, names, o["bounds"], len(prep.X0), fix))


# ------------------------------------------------------------------ the quantile exchange
# (``qexchange``, issue 39)
# Quantile exchange (``qexchange``): the public variables kept, each sensitive variable S
# redrawn so that every record stays in its own band between the regression quantiles of S
# given the released columns, at a place within the band that another record of that band
# and of similar predicted size held (selective protection only).
#
# Why (issue 39): IPSO keeps the OLS of S on the public variables exactly, but its exchanged
# residuals go to records of every size, so the median and tail regressions, the log-scale
# regressions and the marginal distribution of a skewed S are lost (Tarragona SALES: median
# regression CI overlap -.9, KS .23).  What analysts run besides the OLS is mostly a statement
# about S's conditional quantiles; this method keeps them by construction.
#
# The construction, per sensitive variable (in the order given; a later one given the public
# variables, the codes released unchanged and the sensitive variables released before it):
#
# 1. the regression quantiles of S on [1, predictors] at ``quantiles`` (default 0.1, 0.5 and
#    0.9; Koenker and Bassett's linear programme solved exactly, ``_core.quantreg.rq``; on
#    a file of more than ``FIT_RECORDS`` records, fitted on a random sample of that many),
#    evaluated at each record (sorted per record where two cross), and raised to the
#    variable's lower bound where the bounds keep it non-negative;
# 2. each record's band: how many of its planes lie below its own value (0 .. m); and its place
#    in the band: between two planes the fraction of the way from the lower to the upper one;
#    below the lowest or above the highest the distance beyond it in units of the record's
#    spread between the outer planes (at least ``MIN_SPREAD`` of the median spread), or, with a
#    lower bound, the fraction of the way from the bound to the lowest plane;
# 3. within each band the records are ordered by their median plane (their predicted size)
#    and cut into blocks of ``block`` records; each block's places are handed round a random
#    cycle, so no record keeps its own place, and each record's new value is its own band's
#    planes at the place it was handed;
# 4. a record whose new value lands within the risk floors' tolerance of its own takes the
#    place of another record of its block instead where one does not.
#
# What it keeps: every record between the same regression quantiles, so the quantile
# regressions at those quantiles (up to the few records on a plane), the distribution of S
# given the predictors within the bands (log-scale regressions, the marginal distribution,
# shares of the largest records, the share below a line) closely; means and the OLS only
# approximately (the exchange within a block moves values by the spread of their places).
# What an intruder learns: a record's band (which the release shows) and the places of the
# others of its block; the risk floors judge both, including the intruders who run this method
# again on the release.

QUANTILES = {"0.1,0.5,0.9": (0.1, 0.5, 0.9), "0.25,0.5,0.75": (0.25, 0.5, 0.75), "0.5": (0.5,),
             "0.1,0.25,0.5,0.75,0.9": (0.1, 0.25, 0.5, 0.75, 0.9)}
FIT_RECORDS = 20_000  # the regression quantiles of a larger file on a random sample of this many records
MIN_SPREAD = 0.1  # a record's spread between the outer planes: at least this share of the median spread
NEAR_MARGIN = 1.05  # as IPSO's: the repair keeps a little beyond the floors' tolerance


def _qx_options(method):
    return [
        Option("quantiles", method, "choice", "0.1,0.5,0.9", "Quantiles kept",
               "The regression quantiles of each sensitive variable given the released columns between which every "
               "record stays: more quantiles keep more of the conditional distribution and tell an intruder more "
               "of where a record lies (on the samples 0.1, 0.5, 0.9 met the risk floors where five quantiles did "
               "not).", choices=tuple(QUANTILES),
               choice_text={"0.1,0.5,0.9": "0.1, 0.5 and 0.9 (median and tails)",
                            "0.25,0.5,0.75": "0.25, 0.5 and 0.75 (median and quartiles)",
                            "0.5": "the median only (the most change)",
                            "0.1,0.25,0.5,0.75,0.9": "0.1, 0.25, 0.5, 0.75 and 0.9 (the least change)"}),
        Option("keep", method, "choice", "total", "Kept exactly",
               "After the exchange each value is moved within its band, never to within the floors' tolerance of "
               "its own value, so that 'total' keeps the total (the mean) of the sensitive variable exactly and "
               "'ols' its OLS on the released columns (its coefficients, so the mean and the domain means of the "
               "codes too). Where a few large records carry the OLS, keeping it moves them back toward their own "
               "values: on Tarragona SALES 'ols' kept the OLS (CI overlap .97) and 3 of 6 runs broke the floor "
               "of the largest records (the replay intruder), 'total' none. 'scales' keeps, for a skewed positive "
               "variable, the OLS on both scales (as 'ols', with its sum of squares, and the OLS of its log on the "
               "log of the skewed predictors and on them as they are), moving each value by a share of itself and "
               "back within its band in rounds.", choices=("total", "ols", "scales"),
               choice_text={"ols": "the OLS on the released columns (and the mean)", "total": "the total (the mean)",
                            "scales": "the OLS on the raw and the log scale (and the mean)"}),
        Option("block", method, "integer", 10, "Records per block",
               "Within each band between the quantiles, the records are ordered by predicted size and their places "
               "handed round within blocks of this many: larger blocks move values further (more change, more "
               "protection).", low=2, unit="records"),
        cd.margin_option(method),
    ]


def _qx_check(o, ctx):
    if ctx.n is not None and ctx.n < 2 * o["block"]:
        raise ValueError(f"block={o['block']} needs at least {2 * o['block']} records; this file has {ctx.n}: "
                         f"choose a smaller block (at least 2).")


def _design(Z):
    """[1, Z standardised] with constant columns left out."""
    sd = Z.std(axis=0)
    keep = sd > 0
    return np.column_stack([np.ones(len(Z)), (Z[:, keep] - Z[:, keep].mean(axis=0)) / sd[keep]]), keep, Z.mean(axis=0), sd


def planes(S, Z, Zr, taus, gen):
    """The regression quantiles of S on [1, Z] at ``taus`` evaluated at Z (original) and Zr
    (released predictors), each n x m sorted per record; None where the programme fails."""
    from .._core.quantreg import rq

    X, keep, mu, sd = _design(Z)
    rows = np.arange(len(S)) if len(S) <= FIT_RECORDS else np.sort(gen.choice(len(S), FIT_RECORDS, replace=False))
    Xr = np.column_stack([np.ones(len(Zr)), (Zr[:, keep] - mu[keep]) / sd[keep]])
    B = []
    for t in taus:
        b = rq(S[rows], X[rows], t)
        if b is None:
            return None
        B.append(b)
    B = np.column_stack(B)
    return np.sort(X @ B, axis=1), np.sort(Xr @ B, axis=1)


def _places(S, F, floor):
    """(band, place, spread) of each record given its planes F (n x m, sorted)."""
    n, m = F.shape
    band = (S[:, None] > F).sum(axis=1)
    width = F[:, -1] - F[:, 0]
    pos = width[width > 0]
    typical = np.median(pos) if len(pos) else np.median(np.abs(S - F[:, 0]))
    spread = np.maximum(width, MIN_SPREAD * typical) if m > 1 else np.full(n, max(typical, 0.0))
    spread = np.where(spread > 0, spread, 1.0)
    lo, hi = _edges(np.arange(n), band, F, floor)
    place = np.empty(n)
    inner = np.isfinite(lo) & np.isfinite(hi)
    gap = np.where(inner, hi - lo, 1.0)
    place[inner] = np.where(gap[inner] > 0, (S[inner] - lo[inner]) / np.where(gap[inner] > 0, gap[inner], 1), 0.5)
    top = band == m
    place[top] = (S[top] - lo[top]) / spread[top]
    bottom = ~np.isfinite(lo)
    place[bottom] = (hi[bottom] - S[bottom]) / spread[bottom]
    return band, place, spread


def _values(idx, u, band, F, floor, spread, b=None):
    """The values of records ``idx`` at places ``u`` of their own bands (planes F), or of bands
    ``b`` where given."""
    b = band[idx] if b is None else b
    lo, hi = _edges(idx, b, F, floor)
    with np.errstate(invalid="ignore", over="ignore"):  # the branch not taken may hold inf - inf
        return np.where(np.isfinite(lo) & np.isfinite(hi), lo + u * (hi - lo),
                        np.where(np.isfinite(lo), lo + u * spread[idx], hi - u * spread[idx]))


def blocks(band, F, size):
    """The exchange's blocks: each band's records by their median plane (predicted size), in len // size blocks."""
    mid, out = F[:, F.shape[1] // 2], []
    for b in np.unique(band):
        idx = np.flatnonzero(band == b)
        out += np.array_split(idx[np.argsort(mid[idx], kind="stable")], max(1, len(idx) // size))
    return out


def exchange(S, F, Fr, floor, block, gen, tol=None):
    """Quantile exchange of one variable (module docstring, steps 2-4): S the original values, F and Fr the planes
    at the original and released predictors (n x m, sorted, >= ``floor``), ``tol`` (n, absolute) the closeness a
    record must not keep.  Returns (released values, records left within ``tol`` of their own)."""
    band, place, spread = _places(S, F, floor)
    _off_planes(band, place, F.shape[1], gen)
    out = np.empty(len(S))
    left = 0
    for blk in blocks(band, F, block):
        if len(blk) < 2:  # a band of one record: the place of a record of another band of its kind
            i = blk[0]
            kind = (band == 0) if band[i] == 0 else (band == F.shape[1]) if band[i] == F.shape[1] else \
                (band > 0) & (band < F.shape[1])
            donors = gen.permutation(np.flatnonzero(kind & (np.arange(len(S)) != i)))
            cand = _values(np.full(len(donors), i), place[donors], band, Fr, floor, spread)
            good = np.ones(len(donors), bool) if tol is None else np.abs(cand - S[i]) > tol[i]
            out[i] = cand[np.argmax(good)] if good.any() else _values(blk, place[blk], band, Fr, floor, spread)[0]
            left += 0 if good.any() else 1
            continue
        order = gen.permutation(blk)
        out[order] = _values(order, place[np.roll(order, -1)], band, Fr, floor, spread)
        if tol is None:
            continue
        for i in order[np.abs(out[order] - S[order]) <= tol[order]]:
            cand = _values(np.full(len(blk), i), place[blk], band, Fr, floor, spread)
            good = (blk != i) & (np.abs(cand - S[i]) > tol[i])
            if good.any():
                out[i] = cand[gen.choice(np.flatnonzero(good))]
            else:
                left += 1
    if tol is not None and left:
        left = _off_flat_bands(S, out, band, place, Fr, floor, spread, tol, gen)
    return out, left


def _off_planes(band, place, m, gen):
    """The places of records on a plane (the programme's solution passes through about as many records as
    coefficients: place 0 or 1) replaced by another record's of the band: handed on, such a place puts its
    receiver exactly on its own plane, and that many values on a plane give an intruder the plane."""
    on = (np.abs(place) <= 1e-12) | ((band > 0) & (band < m) & (np.abs(place - 1) <= 1e-12))
    for b in np.unique(band[on]):
        pool = np.flatnonzero((band == b) & ~on)
        idx = np.flatnonzero((band == b) & on)
        if len(pool):
            place[idx] = place[gen.choice(pool, len(idx))]


def _off_flat_bands(S, out, band, place, F, floor, spread, tol, gen):
    """A record still within ``tol`` of its own value whose band has no width there (two
    planes through its own value, as the linear programme's solution passes through a few
    records; a 0 between the bound and planes raised to it) or no other record takes a place in the nearest band
    up or down where one lands beyond ``tol``: it leaves its band rather than be released as
    it is.  Returns the records left within ``tol``."""
    n, m = F.shape
    lo, hi = _edges(np.arange(n), band, F, floor)
    alone = np.bincount(band, minlength=m + 1)[band] < 2
    with np.errstate(invalid="ignore"):  # no value of its band lands beyond tol, or no other record is there
        flat = (np.maximum(hi - S, S - lo) <= tol) | alone
    near = np.abs(out - S) <= tol
    left = int(np.sum(near & ~flat))  # within tol in a band with room and others: the floors judge it
    for i in np.flatnonzero(near & flat):
        for b in (band[i] + d * k for k in range(1, m + 1) for d in (1, -1)):  # the nearest bands first
            if not 0 <= b <= m:
                continue
            donors = gen.permutation(np.flatnonzero(band == b))
            cand = _values(np.full(len(donors), i), place[donors], band, F, floor, spread, b=np.full(len(donors), b))
            good = np.abs(cand - S[i]) > tol[i]
            if good.any():
                out[i] = cand[np.argmax(good)]
                break
        else:
            left += 1
    return left


def _scales(S, y, Z, Zr, Fr, floor, tol, stay):
    """keep='scales' for a skewed positive S (``residuals.two_scales``); None where it does not apply."""
    if not rs.skewed_positive(S):
        return None
    lo, hi = _edges(np.arange(len(S)), (y[:, None] > Fr).sum(axis=1), Fr, floor)
    got = rs.two_scales(S, y, Z, Zr, lo, hi, tol, stay)
    return None if got is None or got[1] > rs.SCALE_TOL else (got[0], 0.0)  # not solved: the OLS step instead


def _qx_kept(S, y, Z, Zr, Fr, floor, tol, keep, log, stay=False):
    """Step 4 (or the two scales): (values, error left, whether 'scales' fell back to 'ols')."""
    got = _scales(S, y, Z, Zr, Fr, floor, tol, stay) if keep == "scales" and not log else None
    if got is not None:
        return got[0], got[1], False
    A = np.column_stack([np.ones(len(S)), Zr]) if keep != "total" else np.ones((len(S), 1))
    v, off = _moments_kept(S, y, A, Fr, floor, tol, stay)
    return v, off, keep == "scales"


def _qexchange(prep, method, o, gen, Xk):
    sens, keep = prep.sens, prep.keep
    names = [prep.numeric[keep[j]] for j in range(len(keep))]
    pub = [j for j in range(len(keep)) if j not in set(sens)]
    extra, used, left_out = indicators(prep.coded, prep.numeric, len(pub))
    Z = Xk[:, pub] if extra is None else np.column_stack([Xk[:, pub], extra])
    Zr = Z.copy()
    taus = QUANTILES[o["quantiles"]]
    out = Xk.copy()
    said = {"stuck": [], "loose": [], "one": [], "close": []}
    for j in sens:
        S = Xk[:, j]
        log = keep[j] in prep.log_cols
        floor = -np.inf
        if o["bounds"] != "none" and not log:
            x0 = prep.X0[:, keep[j]]
            x0 = x0[np.isfinite(x0)]
            floor = x0.min() if o["bounds"] == "observed" else (0.0 if x0.min() >= 0 else -np.inf)
        got = planes(S, Z, Zr, taus, gen)
        if got is None:
            raise ValueError(f"the regression quantiles of {names[j]} could not be solved (the linear programme "
                             f"failed); use IPSO or data shuffling for it.")
        F, Fr = (np.maximum(P, floor) for P in got) if np.isfinite(floor) else got
        tol = None if log else NEAR_MARGIN * o["floors"].tolerance * np.abs(S)
        out[:, j], left = exchange(S, F, Fr, floor, o["block"], gen, tol)
        out[:, j], off, fell = _qx_kept(S, out[:, j], Z, Zr, Fr, floor, tol, o["keep"], log, cd.stays(o))
        said["one"] += [names[j]] if fell else []
        if o["keep"] == "scales" and tol is not None and not fell:
            said["close"].append(f"{names[j]} ({int(np.sum(np.abs(out[:, j] - S) <= tol / NEAR_MARGIN))})")
        said["loose"] += [f"{names[j]} (normal equations off by {off:.1e} of their size)"] if off else []
        said["stuck"] += [f"{names[j]} ({left})"] if left else []
        Z, Zr = np.column_stack([Z, S]), np.column_stack([Zr, out[:, j]])  # the next one given this one too
    return Perturbed(X=out, notes=_qx_notes(o, taus, used, left_out, len(sens), said))


def _qx_notes(o, taus, used, left_out, n_sens, said):
    given = "the public variables" + (f" and the codes released unchanged ({words(used)})" if used else "")
    notes = [f"each sensitive variable kept between its regression quantiles at {', '.join(map(str, taus))} "
             f"given {given}" + (" and the sensitive variables before it" if n_sens > 1 else "")
             + f"; within its band each record takes the place of another of a block of {o['block']} records "
               f"of similar predicted size"]
    if left_out:
        notes.append(f"not conditioned on {', '.join(left_out)}: too many levels for the records")
    if said["stuck"]:
        notes.append("records whose every block-mate's place lands within the floors' tolerance of their own value, "
                     "left there: " + ", ".join(said["stuck"]))
    before = " and the sensitive variables before it (not on those after it)" if n_sens > 1 else ""
    kept = (" and its sum of squares kept exactly, and for a skewed one the OLS of its log on the log of the skewed "
            "predictors and on them as they are (log-log and log-level; the first keeps" if o["keep"] == "scales" else
            " kept exactly (so")
    what = ("the OLS of each sensitive variable on " + given + before + kept + " its mean" +
            (" and its mean in every domain of those codes" if used else "") + ")" if o["keep"] != "total" else
            "the total (so the mean) of each sensitive variable kept exactly")
    notes.append(what + f": each value then moved within its band by a share of itself (at most "
                        f"{ROOM_USED:.0%} of its room there)" if o["keep"] != "scales" else what + ": each value "
                 f"moved by a share of itself, then put back within its band, {rs.SCALE_ROUNDS} times")
    if said["close"]:
        notes.append("records the two scales' last steps left within the floors' tolerance of their own value (the "
                     "floors judge them): " + ", ".join(said["close"]))
    if said["one"]:
        notes.append("the OLS kept on its own scale only (not skewed and positive, or the two scales could not both "
                     "be kept within the bands): " + ", ".join(said["one"]))
    if said["loose"]:
        notes.append("where the bands leave too little room, kept approximately: " + ", ".join(said["loose"]))
    return tuple(notes)


def _qx_keeps(opts):
    taus = ", ".join(map(str, QUANTILES[(opts or {}).get("quantiles", "0.1,0.5,0.9")]))
    ols = (opts or {}).get("keep") in ("ols", "scales")
    both = " and, for a skewed positive variable, the OLS of its log" if (opts or {}).get("keep") == "scales" else ""
    return (("the OLS on the released columns" + both + " and the means" if ols else "the means")
            + f"; each record between the "
            f"regression quantiles at {taus} of the sensitive variables given the released columns",
            "those quantile regressions and the distribution within the bands (log-scale regressions, quantiles, shares "
            "of the largest records)" + ("" if ols else "; the OLS approximately"))


_KEEPS = {
    "ipso": ("means, covariances and the OLS of the sensitive variables on the public ones", ""),
    "shuffle": ("the variable's values: mean, variance, quantiles", "rank correlations with the public variables"),
    "cfa": ("means", "covariances (the factor model's law given the public variables)"),
}


def keeps(method, opts):
    return _qx_keeps(opts) if method == "qexchange" else _KEEPS[method]


def scale_refusal(method, options):
    if method == "ipso" and options.get("keep") == "scales":
        return "IPSO's keep='scales' is not built for the Dask engine; use keep='ols' or protect in memory"
    if method == "ipso" and options.get("zeros") == "pattern":
        return "IPSO's zeros='pattern' is not built for the Dask engine; use zeros='redraw' or protect in memory"
    if method == "qexchange":
        return ("the quantile exchange is not built for the Dask engine; protect the file in memory, or use IPSO or "
                "data shuffling at scale")
    if not options.get("sensitive"):
        return (f"{method} redraws the sensitive variables given the public ones: name them (--sensitive, or "
                f"'sensitive' in the recipe), or use fa, pca, magg or rankswap for general protection.")
    return None


_SCALE_WORDS = {
    "ipso": "each block keeps its own OLS of the sensitive variables on the public ones{codes} exactly, so the whole "
            "file keeps it too, and every mean{domains}",
    "shuffle": "each block's values handed out again within the block: the whole file's values, every quantile and "
               "the largest ones, are kept exactly",
    "cfa": "each block drawn from the factor model of its own correlations ({k} factor(s), chosen on the whole file); "
           "the whole file's means are exact",
}


def perturb_scale(method, s):
    """On the Dask engine: the file in random blocks, each protected in memory (the engine's
    ``in_blocks``); the number of factors of conditional FA chosen once, on the whole file."""
    keep = s.prep.keep
    k = s.o.get("n_factors") or cd.default_factors(s.prep.R[np.ix_(keep, keep)])
    X, nb, codes = s.in_blocks(method, s, {"n_factors": k} if method == "cfa" else {},
                               codes=s.o.get("condition") == "released")
    what = _SCALE_WORDS[method].format(codes=f" and on the codes {', '.join(codes)}" if codes else "",
                                       domains=", in each domain of those codes too" if codes else "", k=k)
    if nb == 1:
        head = (f"{method_label(method)} on the whole file as one block (a file of at most {s.block_max:,} records is "
                f"one: the in-memory release for this seed); {what}")
    else:
        head = (f"{method_label(method)} in {nb} random blocks of about {s.n / nb:,.0f} records (each record's block "
                f"drawn at random, each block protected as protect() protects a file of its records: every block a "
                f"random sample of the file); {what}")
    return Scaled(X=X, notes=[head])


def min_stratum_size(method, m, k=3):
    """A group protected on its own (strata=) is a file of its own: its regression on the public
    variables needs RECORDS_PER_COLUMN records a column, and at least 20."""
    return max(20, RECORDS_PER_COLUMN * (int(m) + 1))


def method_label(method):
    return {"ipso": "IPSO", "shuffle": "data shuffling", "cfa": "conditional FA"}[method]
