"""Plausible released values: log scale for skewed non-negative variables, sign and range
bounds, rounding to the original precision.

A release with negative sales, a 1/2 code turned into 1.37 or integers written as
86020.00000000001 gives the perturbation away and looks broken to its users.  Three
options of ``protect`` (all methods) deal with it; each changes what is exact:

* ``transform`` -- 'none' (default) or 'auto': every protected variable that is
  non-negative and skewed (sample skewness > 1) is protected on the log scale: log(x) when all values are
  positive, log(1 + x/s) with s the median of the positive values when some are zero, and
  transformed back afterwards.  Released values then stay non-negative (positive when
  the original is) and keep their skew.  Cost: means and covariances are kept (exactly /
  in expectation) on the log scale, not on the original one; the change of the mean on
  the original scale is reported per variable (``result.plausibility``).  A list of column
  names chooses the variables.  Not the default, on evidence: on Tarragona, PCA with SALES
  sensitive on the log scale multiplied the mean of PAID.UP.CAPITAL (skewness 7.6) by 84,
  because mixing components on the log scale and exponentiating back creates values far
  beyond the observed range; FA with an isolated, swapped factor is unharmed.  Use it per
  variable where the plausibility table shows a small mean change.
* ``bounds`` -- 'plausible' (default): a variable with no negative value in the original gets
  none in the release (values below 0 are set to 0; the count is reported); one with a
  handful (at most 5 % of records) keeps as many as the original has (the lowest released
  ones, none below the original's minimum), the other values below 0 set to 0 (general FA on
  Tarragona made 204 negative DEPRECIATION values where the original has 1).  'sign': only
  the first rule (the default before; recipes that name it rebuild as they did).  'observed':
  values are clipped to the original [min, max] (note: a clipped value equals an observed
  extreme, and the largest record's value is often known to be the largest).  'tail': in a
  variable with no negative value, the k released values below 0 and the k above them take
  the original's 2k smallest values in their order, and the rest are scaled to keep the mean:
  no negative value and no mass at 0, means exact.  Measured against 'sign' (general PCA and
  FA, 5 seeds): Tarragona 0 of 5 runs meet the floors (PAID.UP.CAPITAL's heap of identical
  small values is handed back to the records of its size band) against 5 of 5; CASC 3-4 of 5
  against 3 of 5, mean change 0 against 0.19-0.21 sd, 0 % new zeros against 6.5-6.9 %.  So
  'sign' stays the default and 'tail' is offered where the floors pass.  'none'.
  Exact linear combinations rebuilt from other columns are not clipped (the identity wins).
  A method may hold the clipped share to a floor (``clipping_violations``, at most
  ``CLIP_SHARE`` = 5 % of records under 'plausible', 'sign' or 'observed'): the conditional
  methods do, since a heap at the bound is no redraw given the public variables.
* ``rounding`` -- 'original' (default): each variable is rounded to the number of decimals
  its original values use (integers stay integers, up to 6 decimals; a variable that uses
  more is not rounded).  Rounding moves each value by at most half a unit of its last
  digit, so means and covariances change by at most that much.  'none'.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = []

TRANSFORMS = ("auto", "none")
BOUNDS = ("plausible", "sign", "observed", "tail", "none")
FEW_NEGATIVE = 0.05  # bounds='plausible': an original with at most this share of negative values keeps about as many
TAIL_FACTOR = 2  # bounds="tail": the released values below 0, and as many more above them, take the original lower tail
ROUNDINGS = ("original", "none")
SKEW_LOG = 1.0
MAX_DECIMALS = 6


def skewness(x):
    c = x - x.mean()
    s2 = (c * c).mean()
    return float((c ** 3).mean() / s2 ** 1.5) if s2 > 0 else 0.0


def auto_log_columns(X, names, candidates):
    """Names of the candidate columns (indices) that are non-negative and skewed."""
    out = []
    for j in candidates:
        x = X[:, j]
        if x.min() >= 0 and x.max() > 0 and skewness(x) > SKEW_LOG:
            out.append(names[j])
    return out


def log_scales(X, cols):
    """Per column: 0 for plain log (all positive), else the median of the positive values."""
    out = []
    for j in cols:
        x = X[:, j]
        if x.min() < 0:
            raise ValueError("cannot protect a column with negative values on the log scale")
        out.append(0.0 if x.min() > 0 else float(np.median(x[x > 0])))
    return np.array(out)


def forward(X, cols, scales):
    Y = X.copy()
    for j, s in zip(cols, scales):
        Y[:, j] = np.log(X[:, j]) if s == 0 else np.log1p(X[:, j] / s)
    return Y


def inverse(Y, cols, scales):
    for j, s in zip(cols, scales):
        with np.errstate(over="ignore"):
            Y[:, j] = np.exp(Y[:, j]) if s == 0 else s * np.expm1(Y[:, j])
    return Y


TINY = 1e-3  # below this largest |value|, decimals are counted in significant digits


def decimals(x):
    """Decimals the values of x use (0 for integers), or None when more than MAX_DECIMALS
    significant decimals.  A column whose largest |value| is below TINY is measured on its
    own scale (x * 10^k with the largest value in [0.1, 1)), so values at the 1e-20 scale
    keep their significant digits instead of all rounding to 0 (the absolute tolerance
    below called them whole numbers: 0 of 10,842 cells stayed nonzero)."""
    x = np.asarray(x, dtype=np.float64)
    top = float(np.max(np.abs(x))) if x.size else 0.0
    if 0 < top < TINY and np.isfinite(top):
        k = int(-np.floor(np.log10(top)))
        d = decimals(x * 10.0 ** k)
        return None if d is None else d + k
    # a decimal count that fails on an even sample fails on the column: the sample screens
    # (the answer is the column's own; on a million records 1.4 s -> 0.1 s for 30 columns)
    sample = x[:: max(1, len(x) // SCREEN)] if len(x) > 2 * SCREEN else None
    for d in range(MAX_DECIMALS + 1):
        if sample is not None and not _whole_at(sample, d):
            continue
        if _whole_at(x, d):
            return d
    return None


SCREEN = 4096  # values of the even sample that screens decimals()


def _whole_at(x, d):
    v = x * 10.0 ** d
    return bool(np.all(np.abs(v - np.round(v)) <= 1e-9 * np.maximum(1.0, np.abs(v))))


def apply_bounds(Yk, Xk, how, observed=None):
    """Clip (or, ``how='tail'``, replace the lower tail) in place, on the cells ``observed``
    (all by default, for 'tail'); returns the number of values changed per column."""
    changed = np.zeros(Xk.shape[1], dtype=np.int64)
    if how == "none":
        return changed
    if how == "tail":
        for j in range(Xk.shape[1]):
            ob = np.ones(len(Xk), dtype=bool) if observed is None else observed[:, j]
            x, y = Xk[ob, j], Yk[ob, j]
            if x.min() < 0:
                continue
            k = int((y < 0).sum())
            if k == 0:
                continue
            t = min(len(y), TAIL_FACTOR * k)
            low = np.argsort(y, kind="stable")[:t]
            before = y[low].sum()
            y[low] = np.sort(x, kind="stable")[:t]
            # keep the mean: the records above the tail give back what the tail gained, in
            # proportion to their values (none goes below the tail's largest value)
            rest = np.ones(len(y), dtype=bool)
            rest[low] = False
            gain = y[low].sum() - before
            if rest.any() and y[rest].sum() > gain:
                y[rest] *= 1.0 - gain / y[rest].sum()
            changed[j] = t
            Yk[ob, j] = y
        return changed
    for j in range(Xk.shape[1]):
        lo, hi = Xk[:, j].min(), Xk[:, j].max()
        if how in ("sign", "plausible"):
            if lo >= 0:
                bad = Yk[:, j] < 0
                changed[j] = int(bad.sum())
                Yk[bad, j] = 0.0
            elif how == "plausible":
                # counted on the cells released (a missing cell's completion is not released)
                ob = np.ones(len(Xk), dtype=bool) if observed is None else observed[:, j]
                k = int((Xk[ob, j] < 0).sum())
                if k <= FEW_NEGATIVE * int(ob.sum()):
                    # a handful of negative values in the original (a loss, a correction): the release
                    # keeps about as many, no lower than the original's minimum; the other values below
                    # 0 are set to 0 (DEPRECIATION on Tarragona has 1 negative value; general FA made 204)
                    y = Yk[:, j]
                    neg = np.flatnonzero((y < 0) & ob)
                    y[(y < 0) & ~ob] = 0.0
                    keep = neg[np.argsort(y[neg], kind="stable")[:k]] if k else neg[:0]
                    drop = np.setdiff1d(neg, keep)
                    low = keep[y[keep] < lo]
                    changed[j] = int(len(drop) + len(low))
                    y[drop] = 0.0
                    y[low] = lo
        else:
            bad = (Yk[:, j] < lo) | (Yk[:, j] > hi)
            changed[j] = int(bad.sum())
            np.clip(Yk[:, j], lo, hi, out=Yk[:, j])
    return changed


def round_columns(Y, X, cols):
    """Round Y[:, j] to the decimals of X[:, j] for j in cols; returns the decimals used."""
    used = {}
    for j in cols:
        d = decimals(X[:, j])
        if d is not None:
            Y[:, j] = np.round(Y[:, j], d)
        used[j] = d
    return used


def report(names, X, Y, log_cols, clipped, dec, bounds):
    """Per protected column: transform, bound, decimals, values clipped, the change of the
    mean on the original scale in original sds and relative to the mean, the sd ratio, and the
    negative values in the original and in the release."""
    rows = []
    for j, name in enumerate(names):
        sd = X[:, j].std()
        rows.append({
            "variable": name,
            "transform": "log" if name in log_cols else "none",
            "bounds": bounds if bounds not in ("sign", "plausible") or X[:, j].min() >= 0 else
            ("none" if bounds == "sign" else "plausible"),
            "decimals": dec.get(j) if dec else None,
            "clipped": int(clipped.get(j, 0)),
            "mean_change_sd": float((Y[:, j].mean() - X[:, j].mean()) / sd) if sd > 0 else 0.0,
            "mean_change_pct": (float((Y[:, j].mean() - X[:, j].mean()) / abs(X[:, j].mean()))
                                if X[:, j].mean() != 0 else 0.0),
            "sd_ratio": float(Y[:, j].std() / sd) if sd > 0 else 1.0,
            "negative_original": int((X[:, j] < 0).sum()),
            "negative_released": int((Y[:, j] < 0).sum()),
        })
    return pd.DataFrame(rows).set_index("variable")


CLIP_SHARE = 0.05  # more of a variable's released values clipped by the bounds than this breaks a floor
HEAPS = ("plausible", "sign", "observed")  # the bounds that set values to a bound ('tail' hands out original ones)


CLIP_FIX = ("protect it on the log scale (transform=['{v}'] or transform='auto'), use bounds='tail', or a method "
            "that keeps each column's values (rank swapping)")


def clipping_violations(plaus, names, bounds, n, fix):
    """Per variable of ``names`` whose values clipped (``plaus``, the ``report`` frame) exceed
    ``CLIP_SHARE`` of the ``n`` records under a clipping bound: (variable, message naming the
    share and ``fix``, which may name the variable as ``{v}``).  Counts only, no value."""
    if bounds not in HEAPS:
        return []
    out = []
    for v in names:
        k = int(plaus.loc[v, "clipped"]) if v in plaus.index else 0
        if n and k > CLIP_SHARE * n:
            out.append((v, f"{v}: {k / n:.1%} of its released values ({k} of {n}) were clipped by bounds={bounds!r} "
                           f"(floor: at most {CLIP_SHARE:.0%}; a heap at the bound is no protection of the variable and "
                           f"distorts it); fix: {fix.format(v=v)}"))
    return out


def with_violations(risk, found):
    """``risk`` (a RiskProfile) with the (variable, message) pairs ``found`` added as broken
    floors: the release gate refuses it unless a reason is given, and a comparison counts it."""
    if not found:
        return risk
    from dataclasses import replace

    variables = risk.variables.copy()
    if "ok" in variables.columns:
        variables.loc[[v for v, _ in found if v in variables.index], "ok"] = False
    return replace(risk, variables=variables, violations=tuple(risk.violations) + tuple(m for _, m in found),
                   failing=tuple(dict.fromkeys(tuple(risk.failing) + tuple(v for v, _ in found))))


def close(x, y, tol):
    """Which protected values ``y`` lie within ``tol`` (relative) of the truth ``x``:
    |y - x| <= tol |x| (the risk floors' closeness; here, with numpy alone, so that the Dask
    workers that count it need not load the compiled kernels of ``_safety``)."""
    with np.errstate(invalid="ignore"):
        return np.abs(y - x) <= tol * np.abs(x)


SKEWED = 1.0  # skewness above which a non-negative variable is analysed on the log scale
MAX_ZEROS = 0.05  # ... when at most this share of its values is 0
PREDICTOR_ZEROS = 0.5  # a predictor with up to this share of zeros: its log with an indicator of its zeros


def skewed_positive(v, max_zeros=MAX_ZEROS):
    """Non-negative, at most ``max_zeros`` of it 0, and skewed (the positive values' skewness
    above SKEWED): what an analyst takes logs of (its zeros left out); the analyses'
    log-scale regressions and the two scales of the quantile exchange and IPSO share this
    definition.  As a predictor (``max_zeros=PREDICTOR_ZEROS``) a skewed variable with up to
    half its values 0 (savings, assets) is logged too, with an indicator of its zeros (the
    analyst's log(savings) and "no savings" dummy)."""
    from scipy import stats

    v = np.asarray(v, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) <= 2 or v.min() < 0 or np.mean(v == 0) > max_zeros or not (v > 0).sum() > 2:
        return False
    pos = v[v > 0]
    if pos.max() - pos.min() <= 1e-9 * pos.max():  # one value (an indicator): nothing to log
        return False
    return bool(stats.skew(pos) > SKEWED)
