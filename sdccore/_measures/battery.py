"""What analysts keep: the analyses researchers run on a protected file, each fitted on the
original and on the release, per protected variable, against a stated target (issue 39).

Analysis validity (``validity``) scores the OLS that IPSO keeps by construction; this battery
looks at what such a release may break besides.  For each checked variable y (each sensitive
variable in selective protection; each variable the release changed in general protection):

* ``ols``      the OLS of y on every other variable (domain columns as indicators): the
  SMALLEST over the slopes of the confidence-interval overlap of Karr et al. (2006) at 95 %
  (1 when the intervals coincide, negative when they are apart; every coefficient's inference
  must hold, the mean over the slopes is in the note), target >= .9 (>= .8 in general
  protection).  Where the original's fit has no uncertainty (an accounting identity, R^2 = 1)
  the overlap does not apply.  The note says when the original's fit leans on its largest
  records (``leans``: without the max(5, 1 %) largest its slopes move by 2 standard errors or
  more), and the suggestion's list of misses names it;
* ``ols_robust``, ``domain_ols``  the same OLS with robust (HC1) errors, and within each domain
  level (the subgroup regressions and interactions with a domain), targets as ``ols``
  (``subgroups.py``);
* ``as_predictor``  the checked variable on the right-hand side: each other variable not
  checked itself regressed on it and the rest, the overlap of its slope, worst over them (at
  most 30), targets as
  ``ols`` (noise in a predictor biases its slope toward 0; the OLS of y itself cannot see it);
* ``loglog``   the same on the log scale, for a non-negative skewed y (at most 5 % zeros,
  skewness of the positive values > 1): log y on the log of such predictors and the others
  as they are, the zeros left out as an analyst's log leaves them; target >= .8.  More values
  <= 0 in the release than in the original make the analyst's fit impossible for those
  records: they are counted, left out of the released fit, and the target is not met;
* ``loglevel`` the log of such a y on the predictors as they are (the semi-log model of wage
  and turnover equations), target >= .8, values <= 0 as for ``loglog``;
* ``median``   the median regression (on the same predictors as ``ols``, solved exactly, its
  intervals R quantreg's "nid" sandwich, robust to a spread that grows with the predictors:
  ``quantreg.py``): its slopes' overlap, target >= .7;
* ``quantiles`` the same at the 0.1 and 0.9 quantiles (the worse of the two), where at least
  5 records per coefficient lie beyond each (Tarragona's 834 records and 13 coefficients:
  83 >= 65), target >= .7.  Files of more than 10,000 records: the quantile regressions on
  10,000 of their rows (a seeded sample of row numbers, the same rows in both files, each
  fit on those of them with a value; said in the note);
* ``domain_means``  the largest relative error of y's mean within a domain (each level of
  each domain column with at least 5 records: the set-apart or strata columns, a panel's
  time index), target <= 10 %;
* ``domain_gaps``  the gaps between the domain means (y on the indicators of one domain column's
  levels, the largest the reference): the smallest CI overlap of the contrasts, worst over the
  domain columns, target >= .8; the note says whether the means keep their order
  (``domains.py``); ``domain_spread``: the largest relative change of y's standard deviation
  in a domain level of at least 20 records, target <= 10 %;
* ``edits``, ``ratios``  an order between y and another variable that at least 99 % of the
  original's records obey (labour costs at most the sales), the increase of the records that
  break it, target 1 point; the median record-level ratio z / y (a cost share, a margin), target
  within 10 % (``ratios.py``);
* ``ks``       the Kolmogorov-Smirnov distance between y's original and released values,
  target <= .10 (the Wasserstein distance, in y's units, in the note);
* ``top10_share``  the change of the share of y's total held by its largest 10 % of records, in
  points, target <= 2 points (the largest 1 %'s is reported beside it);
* ``mean``     the relative change of y's mean, target <= 1 % (2 % in general protection);
* ``low_share`` for a non-negative y, the change of the share of records below 60 % of y's
  median (the at-risk-of-poverty rate of an income, Eurostat's definition; each file's own
  median), in points, target <= 1 point;
* ``gini``     for a non-negative y, the change of its Gini coefficient, target <= .01;
* ``zeros``    for a non-negative y with at least 5 % zeros, the largest change of the share at 0
  (in the file and each domain level of 30 records), target <= 2 points;
* ``pearson``, ``spearman``  the largest change of y's Pearson and Spearman correlation with
  another variable (reported, no target).

Weights (a sampling-weight column, positive) weight the means, the shares (the record on the
10 % boundary with the part of its weight inside) and the OLS fits (WLS with sandwich, HC1,
standard errors, as survey analysts use) and the median regression (each record's y and x
times its weight, as R's ``rq(weights = w)``); KS and Spearman are unweighted (said in the
notes).

A figure that can be computed on the original but not on the release (a variable released
blank, too few complete records) misses its target.

Domain columns (numbers or text): given; else the text columns released unchanged with 2 to 30
levels and no missing cell (region, sex), and, in general protection, the numeric columns
released unchanged whose values are whole numbers with 2 to 30 levels (the set-apart codes of a
category, a year); in selective protection no numeric column unless given (the public
variables are released unchanged too, and a count among them is no domain).  Predictors are standardised
by the original's mean and sd in both fits (the overlap does not depend on it, the median
regression's solver converges better); exactly collinear predictors are dropped (the same in
both fits).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._core.summary import Summary
from .._core.validation import check_dataframe
from .._core import quantreg
from .._core.plausible import MAX_ZEROS, PREDICTOR_ZEROS, SKEWED, skewed_positive as _skewed_positive  # noqa: F401
from .distribution import distribution as _distribution, top_share as _top_share, zero_share
from .domains import domain_gaps, domain_means, domain_spread, find_domains, wmean as _wmean
from .ratios import edits, ratios
from .regression import _overlap
from .subgroups import domain_ols, ols_intervals as _ols_qr, ols_robust

__all__ = ["analyst_checks", "AnalystChecks"]

LEVEL = 0.95
QR_RECORDS = 10_000  # quantile regressions of larger files on this many records (the same in both files)
TAILS = (0.1, 0.9)   # the tail quantile regressions ...
TAIL_RECORDS = 5     # ... where at least this many records per coefficient lie beyond each
MAX_RESPONSES = 30   # the checked variable as a predictor: of at most this many other variables
ANALYSES = ("ols", "ols_robust", "as_predictor", "loglog", "loglevel", "median", "quantiles", "domain_means",
            "domain_gaps", "domain_spread", "domain_ols", "edits", "ratios", "ks", "top10_share", "mean", "low_share", "gini", "zeros", "pearson", "spearman")
# (what the figure is, the target's direction, the target in selective and in general protection)
TARGETS = {
    "ols": ("CI overlap of the slopes", ">=", 0.9, 0.8),
    "ols_robust": ("CI overlap of the slopes with robust (HC1) errors", ">=", 0.9, 0.8),
    "as_predictor": ("CI overlap of its slope where it explains another variable", ">=", 0.9, 0.8),
    "loglog": ("CI overlap of the slopes (log scale)", ">=", 0.8, 0.8),
    "loglevel": ("CI overlap of the slopes (log of the variable, predictors as they are)", ">=", 0.8, 0.8),
    "median": ("CI overlap of the median regression's slopes", ">=", 0.7, 0.7),
    "quantiles": ("CI overlap of the 0.1 and 0.9 quantile regressions' slopes (the worse)", ">=", 0.7, 0.7),
    "domain_means": ("largest relative error of a domain mean", "<=", 0.10, 0.10),
    "domain_gaps": ("CI overlap of the gaps between domain means", ">=", 0.8, 0.8),
    "domain_spread": ("largest relative change of a domain's standard deviation", "<=", 0.10, 0.10),
    "domain_ols": ("CI overlap of the slopes within a domain (the worst level)", ">=", 0.9, 0.8),
    "edits": ("increase of the records breaking an order between two variables (points)", "<=", 0.01, 0.01),
    "ratios": ("relative change of a median record-level ratio", "<=", 0.10, 0.10),
    "ks": ("Kolmogorov-Smirnov distance", "<=", 0.10, 0.10),
    "top10_share": ("change of the largest 10 %'s share of the total (points)", "<=", 0.02, 0.02),
    "mean": ("relative change of the mean", "<=", 0.01, 0.02),
    "low_share": ("change of the share below 60 % of the median (points)", "<=", 0.01, 0.01),
    "gini": ("change of the Gini coefficient", "<=", 0.01, 0.01),
    "zeros": ("largest change of the share of records at 0, in the file or a domain (points)", "<=", 0.02, 0.02),
    "pearson": ("largest change of a Pearson correlation", None, None, None),
    "spearman": ("largest change of a Spearman correlation", None, None, None),
}
LABELS = {"ols": "OLS regression", "ols_robust": "OLS with robust errors", "as_predictor": "as a predictor (OLS)", "loglog": "log-log regression", "loglevel": "log-level regression",
          "median": "median regression", "quantiles": "tail quantile regressions", "domain_means": "domain means",
          "domain_gaps": "gaps between domains",
          "domain_spread": "spread within domains", "domain_ols": "OLS within domains", "edits": "edit rules (orders)", "ratios": "record-level ratios",
          "ks": "distribution (KS)", "top10_share": "top-10 % share", "mean": "mean",
          "low_share": "share below 60 % of median", "gini": "Gini coefficient", "zeros": "share at zero",
          "pearson": "Pearson correlations", "spearman": "Spearman correlations"}


@dataclass(frozen=True)
class AnalystChecks:
    """What ``analyst_checks`` returns.

    Attributes
    ----------
    table : DataFrame
        One row per checked variable and analysis: variable, analysis, original (the figure on
        the original: R squared, the mean ...), released (on the release), kept (the figure the
        target is about), target (">= 0.9"), ok (None without a target or where it does not
        apply) and note.
    worst : DataFrame
        Per analysis its worst checked variable: analysis, label, compared, variable, kept, target, ok, note.
    checked : tuple of str
        The variables checked.
    domains : tuple of str
        The domain columns the domain means used.
    selective : bool
        Selective protection (the targets of selective protection apply).
    """

    table: pd.DataFrame
    worst: pd.DataFrame
    checked: tuple
    domains: tuple
    selective: bool

    @property
    def ok(self) -> bool:
        """Every analysis with a target meets it for every checked variable."""
        return bool(self.table.ok.map(lambda v: v is not False).all())

    @property
    def failing(self) -> list:
        """(variable, analysis) pairs that miss their target."""
        return list(self.table[self.table.ok.map(lambda v: v is False)][["variable", "analysis"]].itertuples(False, None))

    def __repr__(self):
        return f"AnalystChecks({len(self.checked)} variable(s), {len(ANALYSES)} analyses; {len(self.failing)} missed)"

    def summary(self) -> Summary:
        """The verdict and, per analysis, its worst variable against its target."""
        head = "What analysts keep: every target met" if self.ok else _missed_words(self.table)
        items = []
        for r in self.worst.itertuples():
            if not np.isfinite(r.kept):
                items.append(f"{r.label:26s} {'':>20s}  n/a: {r.note}")
                continue
            mark = "" if r.ok is None else ("  ok" if r.ok else "  MISSED")
            lean = lean_words(r.note) if r.ok is False else ""
            items.append(f"{r.label:26s} {r.variable:>20s}: {_fmt(r.kept)} "
                         f"(target {r.target or 'none, reported'}){mark}" + (f" (the original leans on {lean})" if lean else ""))
        return Summary(head, items)


def _missed_words(table):
    """'What analysts keep: 3 of 19 analyses ...; missed: OLS regression (turnover, wage_bill); ...'."""
    judged = table[table.ok.map(lambda v: v is not None)]
    per = judged.groupby("analysis", sort=False).ok.apply(lambda v: all(x is True for x in v))
    miss = [(LABELS[a], list(judged.variable[(judged.analysis == a) & judged.ok.map(lambda v: v is False)]))
            for a in per.index[~per.to_numpy(bool)]]
    return (f"What analysts keep: {int(per.sum())} of {len(per)} analyses within their targets; missed: " + "; ".join(
        f"{lab} ({', '.join(vs[:3])}{', ...' if len(vs) > 3 else ''})" for lab, vs in miss))


def _fmt(v):
    return "n/a" if v is None or not np.isfinite(v) else f"{v:.3f}"


def _design(frame, predictors, domains, scale):
    """Standardised predictors (by ``scale``: the original's mean and sd) and domain dummies."""
    cols = [(frame[c].to_numpy(float) - scale[c][0]) / scale[c][1] for c in predictors]
    for d in domains:
        v = frame[d].to_numpy()
        cols += [(v == lv).astype(float) for lv in scale[d][1:]]
    X = np.column_stack([np.ones(len(frame))] + cols) if cols else np.ones((len(frame), 1))
    return X


def _independent(X):
    """Columns of X without exact collinearity (pivoted QR on the original's design)."""
    from scipy.linalg import qr

    _, R, piv = qr(X, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    keep = np.sort(piv[: int(np.sum(d > 1e-9 * d[0]))]) if len(d) else np.arange(X.shape[1])
    if 0 not in keep:
        keep = np.r_[0, keep]
    return keep


def _fit(kind, y, X, w):
    import statsmodels.api as sm

    ok = np.isfinite(y) & np.isfinite(X).all(axis=1) & (np.isfinite(w) if w is not None else True)
    linear = kind in ("ols", "robust")  # "robust": the OLS with HC1 errors (``subgroups.py``)
    if not linear and len(y) > QR_RECORDS:  # a seeded sample of the rows: the same records of both files
        pick = np.zeros(len(y), dtype=bool)
        pick[np.random.default_rng(0).choice(len(y), QR_RECORDS, replace=False)] = True
        ok &= pick
    y, X = y[ok], X[ok]
    if len(y) <= X.shape[1] + 1:
        return None
    if not linear:  # a quantile (0.5 for "median"): exact, with quantreg's "nid" intervals (quantreg.py)
        return quantreg.fit(y, X, 0.5 if kind == "median" else kind, LEVEL, None if w is None else w[ok])
    if w is None:  # plain OLS by one QR (statsmodels' figures, without its 25 ms of overhead a fit)
        try:
            return _ols_qr(y, X, robust=kind == "robust")
        except np.linalg.LinAlgError:  # a design the release made singular (a column constant there)
            return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sm.WLS(y, X, weights=w[ok]).fit(cov_type="HC1")  # sampling weights: sandwich errors
    ci = np.asarray(res.conf_int(alpha=1 - LEVEL))
    r2 = float(res.rsquared)
    return np.asarray(res.params), ci[:, 0], ci[:, 1], r2


LEAN_SE = 2.0  # the original's OLS slopes moving by this many standard errors without the largest records: said


def leans(yo, Xo, w=None):
    """(k, z): the original OLS's largest move of a slope, in its standard errors, when its k
    largest records by y (the risk floors' band of the largest: max(5, 1 %)) are left out;
    None where it cannot be told (weighted, too few records).  A slope that moves by several
    standard errors without them is carried by them: a release that protects them (the floor
    of the largest records) keeps it only by moving other records to make up for them (Tarragona
    SALES: 4.6 standard errors; IPSO keeps its OLS so and loses the log scale)."""
    ok = np.isfinite(yo) & np.isfinite(Xo).all(axis=1)
    y, X = yo[ok], Xo[ok]
    n, p = X.shape
    k = max(5, int(np.ceil(0.01 * n)))
    if w is not None or p < 2 or n - k < 2 * p + 10:
        return None
    beta, lo, hi, _ = _ols_qr(y, X)
    se = (hi - lo)[1:] / (2 * stats.t.ppf(0.5 + LEVEL / 2, n - p))
    rest = np.ones(n, bool)
    rest[np.argsort(y, kind="stable")[-k:]] = False
    Xr = X[rest]
    if np.linalg.matrix_rank(Xr) < p:
        return None
    b2 = np.linalg.lstsq(Xr, y[rest], rcond=None)[0]
    z = np.abs(b2 - beta)[1:] / np.where(se > 0, se, np.inf)
    return k, float(z.max()) if len(z) else 0.0


def _leans(yo, Xo, w):
    got = leans(yo, Xo, w)
    if got is None or got[1] < LEAN_SE:
        return ""
    return (f"; leans on its {got[0]} largest records: without them the original's slopes move by up to {got[1]:.1f} "
            f"standard errors, so a release that protects them keeps it only by moving other records to make up for "
            f"them, at a cost to other analyses")


def lean_words(note):
    """What an OLS note says its original leans on ('its 9 largest records: without them ...'),
    or '' (``_leans``)."""
    note = str(note)
    return note.split("; leans on ", 1)[1] if "; leans on " in note else ""


def _slopes_overlap(kind, yo, Xo, yr, Xr, w):
    """(kept, R2 original, R2 released, note, False or None): kept is the smallest overlap over
    the slopes (every coefficient's inference must hold: a mean over 20 domain contrasts would
    hide a key slope 6 standard errors off), the mean beside it in the note."""
    fo = _fit(kind, yo, Xo, w)
    if fo is None:
        return np.nan, np.nan, np.nan, "too few complete records in the original", None
    width = fo[2][1:] - fo[1][1:]
    if fo[3] > 1 - 1e-9 or np.any(width <= 1e-12 * np.maximum(np.abs(fo[0][1:]), 1e-300)):
        return np.nan, fo[3], np.nan, "does not apply: an exact identity (the original's fit has no uncertainty)", None
    fr = _fit(kind, yr, Xr, w)
    if fr is None:
        return np.nan, fo[3], np.nan, "cannot be fitted on the release (too few complete records)", False
    ov = _overlap(fo[1][1:], fo[2][1:], fr[1][1:], fr[2][1:])
    ov = ov[np.isfinite(ov)]
    if not len(ov):
        return np.nan, fo[3], fr[3], "no slope", None
    return float(ov.min()), fo[3], fr[3], f"mean over the {len(ov)} slopes {ov.mean():.3f}", None


def _log(v, zero=np.nan):
    """The log where positive; ``zero`` where 0 (a predictor's: 0, its indicator beside it); else missing."""
    with np.errstate(all="ignore"):
        return np.where(v == 0, zero, np.log(np.where(v > 0, v, np.nan)))


def _meets(kind, kept, selective):
    _, op, t_sel, t_gen = TARGETS[kind]
    if op is None or kept is None or not np.isfinite(kept):
        return None, ""
    t = t_sel if selective else t_gen
    return (bool(kept >= t) if op == ">=" else bool(kept <= t)), f"{op} {t:g}"


def analyst_checks(original, released, *, sensitive=None, domains=None, weights=None):
    """The analyses researchers run, fitted on the original and on the release, per checked
    variable, each against its target (module docstring).

    Parameters
    ----------
    original, released : DataFrame
        The same columns, rows aligned (a release of ``protect``); numeric columns are analysed.
    sensitive : list of str, optional
        Selective protection: the variables checked (each explained by every other).  Without
        it, every numeric variable the release changed is checked (general protection).
    domains : list of str, optional
        Columns whose levels are the domains of the domain means (default: found, see the
        module docstring).
    weights : str, optional
        A column of sampling weights (weights the means, shares and OLS fits).

    Returns
    -------
    AnalystChecks

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> rel = sdccore.protect(df, "ipso", sensitive=["SALES"], rng=12345).data
    >>> sdccore.analyst_checks(df, rel, sensitive=["SALES"]).worst.set_index("analysis").loc["ols", "ok"]
    True
    """
    from .._core.threads import one_thread

    with one_thread("blas"):  # small fits: a second BLAS thread waits and spins (Tarragona 0.26 CPU-s, not 0.9)
        return _checks(original, released, sensitive, domains, weights)


def _checks(original, released, sensitive, domains, weights):
    num, w, checked, selective = _inputs(original, released, sensitive, weights)
    doms = find_domains(original, released, domains, set(checked) | ({weights} if weights else set()), selective)
    scale = {}
    for c in num:
        v = original[c].to_numpy(float)
        sd = np.nanstd(v)
        scale[c] = (np.nanmean(v), sd if sd > 0 else 1.0)
    for d in doms:
        scale[d] = pd.unique(original[d].dropna())  # its levels (numbers or text), in order of appearance
    rows = []
    for y in checked:
        figures = _variable(original, released, y, [c for c in num if c not in doms], doms, scale, w, checked)
        for kind, (o, r, kept, note, forced) in figures.items():
            ok, target = _meets(kind, kept, selective)
            if (forced is None and ok is None and TARGETS[kind][1] is not None and np.isfinite(o) and not np.isfinite(r)
                    and "does not apply" not in note):
                ok, note = False, (note + "; " if note else "") + "cannot be computed on the release"
            rows.append({"variable": y, "analysis": kind, "original": o, "released": r, "kept": kept,
                         "target": target, "ok": False if forced is False else ok, "note": note})
    table = pd.DataFrame(rows, columns=["variable", "analysis", "original", "released", "kept", "target", "ok",
                                        "note"])
    return AnalystChecks(table, _worst(table), tuple(checked), tuple(doms), selective)


def _inputs(original, released, sensitive, weights):
    """(numeric columns analysed, weights or None, checked variables, selective), or the
    error that names the fix."""
    check_dataframe(original, "original")
    check_dataframe(released, "released")
    if list(original.columns) != list(released.columns) or len(original) != len(released):
        raise ValueError("original and released must have the same columns in the same order and the same "
                         "number of rows (pass the release protect returned for this original).")
    num = [c for c in original.columns if pd.api.types.is_numeric_dtype(original[c])
           and pd.api.types.is_numeric_dtype(released[c])]
    if weights is not None:
        if weights not in num:
            raise ValueError(f"weights={weights!r} is not a numeric column of the data; name the column that holds "
                             f"the sampling weights, or leave weights out.")
        num.remove(weights)
        w = original[weights].to_numpy(float)
        if not (np.isfinite(w).all() and (w > 0).all()):
            raise ValueError(f"weights={weights!r} holds missing, zero or negative values; sampling weights must be "
                             f"positive numbers (fix or drop those records, or leave weights out).")
    else:
        w = None
    if sensitive is None:
        checked = [c for c in num if not np.array_equal(original[c].to_numpy(float), released[c].to_numpy(float),
                                                         equal_nan=True)]
        return num, w, checked, False
    sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    if weights is not None and weights in sensitive:
        raise ValueError(f"weights={weights!r} is also named sensitive; the sampling weights are released unchanged "
                         f"and weight the analyses: name another column as weights, or leave weights out.")
    missing = [c for c in sensitive if c not in num]
    if missing:
        raise ValueError(f"sensitive: {missing} are not numeric columns of the data; name the numeric columns "
                         f"that were protected.")
    return num, w, sensitive, True


def _variable(original, released, y, num, doms, scale, w, checked=()):
    """{analysis: (original figure, released figure, kept, note, False where the target is
    missed whatever the figure, else None)} of the checked variable ``y``."""
    preds = [c for c in num if c != y and c not in doms and np.nanstd(original[c].to_numpy(float)) > 0]
    yo, yr = original[y].to_numpy(float), released[y].to_numpy(float)
    Xo, Xr = _design(original, preds, doms, scale), _design(released, preds, doms, scale)
    keep = _independent(np.nan_to_num(Xo))
    Xo, Xr = Xo[:, keep], Xr[:, keep]
    out = {}
    ov, r2o, r2r, note, forced = _slopes_overlap("ols", yo, Xo, yr, Xr, w)
    out["ols"] = (r2o, r2r, ov, "R squared original / released; " + note + _leans(yo, Xo, w), forced)
    out["ols_robust"] = ols_robust(yo, Xo, yr, Xr, w, _slopes_overlap)
    out["as_predictor"] = _as_predictor(original, released, y, preds, doms, scale, w, checked)
    out["loglog"] = _loglog(original, released, y, preds, doms, scale, keep, w)
    out["loglevel"] = _loglevel(y, yo, yr, Xo, Xr, w)
    ov, r2o, r2r, note, forced = _slopes_overlap("median", yo, Xo, yr, Xr, w)
    sample = (f"; on a sample of {QR_RECORDS:,} records (the same rows in both files)" if len(yo) > QR_RECORDS
              else "")
    out["median"] = (r2o, r2r, ov, "pseudo R squared original / released; " + note + sample, forced)
    out["quantiles"] = _tails(yo, yr, Xo, Xr, w, sample)
    out["domain_means"] = domain_means(original, yo, yr, doms, scale, w)
    out["domain_gaps"] = domain_gaps(original, yo, yr, doms, scale, w,
                                     lambda a, Xa, b, Xb, wr: _slopes_overlap("ols", a, Xa, b, Xb, wr))
    out["domain_spread"] = domain_spread(original, yo, yr, doms, scale, w)
    out["domain_ols"] = domain_ols(original, yo, yr, doms, scale, lambda others: (
        _design(original, preds, others, scale), _design(released, preds, others, scale)), w, _slopes_overlap, _independent)
    fo, fr = yo[np.isfinite(yo)], yr[np.isfinite(yr)]
    ks = float(stats.ks_2samp(fo, fr).statistic) if len(fo) and len(fr) else np.nan
    wd = f"Wasserstein distance {stats.wasserstein_distance(fo, fr):.4g} (in {y}'s units)" if len(fo) and len(fr) else ""
    out["ks"] = (np.nan, np.nan, ks, wd + ("; unweighted" if w is not None else ""),
                 False if len(fo) and not len(fr) else None)
    so, sr = _top_share(yo, w, 0.10), _top_share(yr, w, 0.10)
    out["top10_share"] = (so, sr, abs(sr - so), f"largest 1 %: {_fmt(_top_share(yo, w, 0.01))} -> "
                                                f"{_fmt(_top_share(yr, w, 0.01))}", None)
    mo, mr = _wmean(yo, w), _wmean(yr, w)
    out["mean"] = (mo, mr, abs(mr - mo) / abs(mo) if mo else np.nan, "", None)
    out["low_share"], out["gini"] = _distribution(yo, yr, w)
    out["zeros"] = zero_share(original, yo, yr, doms, scale, w)
    out["edits"], out["ratios"] = edits(original, released, y, preds, w), ratios(original, released, y, preds, w)
    out["pearson"] = _correlations(original, released, y, num, "pearson")
    out["spearman"] = _correlations(original, released, y, num, "spearman")
    return out


def _as_predictor(original, released, y, preds, doms, scale, w, checked):
    """y on the right-hand side: each other variable z regressed on y and the rest (domain
    columns as indicators), the overlap of y's slope, the worst over z (a release that adds
    noise to y attenuates it: errors in a predictor bias its slope toward 0, which the OLS of
    y itself does not show).  A checked z is left out: its own OLS holds y's slope already (in
    general protection of 30 variables that saves 30 x 29 fits).  As ``_variable``'s tuple."""
    worst = None
    responses = [c for c in preds if c not in checked]
    for z in responses[:MAX_RESPONSES]:
        xs = [y] + [c for c in preds if c != z]
        Xo, Xr = _design(original, xs, doms, scale), _design(released, xs, doms, scale)
        keep = _independent(np.nan_to_num(Xo))
        if 1 not in keep:  # y collinear with the others in the original: its slope is not defined
            continue
        zo, zr = original[z].to_numpy(float), released[z].to_numpy(float)
        fo, fr = _fit("ols", zo, Xo[:, keep], w), _fit("ols", zr, Xr[:, keep], w)
        if fo is None or fo[3] > 1 - 1e-9:
            continue
        if fr is None:
            return (np.nan, np.nan, np.nan, f"{z} on {y}: cannot be fitted on the release", False)
        i = int(np.flatnonzero(keep == 1)[0])
        ov = float(_overlap(fo[1][i:i + 1], fo[2][i:i + 1], fr[1][i:i + 1], fr[2][i:i + 1])[0])
        sd = scale[y][1]
        if worst is None or ov < worst[2]:
            worst = (np.nan, np.nan, ov, f"{z} on {y} and the rest: {y}'s slope {fo[0][i] / sd:.4g} -> "
                                         f"{fr[0][i] / sd:.4g} (per unit of {y})", None)
    if worst is None:
        return (np.nan, np.nan, np.nan, "does not apply: no other variable to explain (the checked ones' own OLS "
                                        "holds their slopes)", None)
    if len(responses) > MAX_RESPONSES:
        worst = worst[:3] + (worst[3] + f"; the first {MAX_RESPONSES} of {len(responses)} variables explained",) + worst[4:]
    return worst


def _loglevel(y, yo, yr, Xo, Xr, w):
    """The log of a skewed positive y on the predictors as they are (the semi-log model of
    wages and turnover), as ``_variable``'s tuple; values <= 0 as in ``_loglog``."""
    if not _skewed_positive(yo):
        return (np.nan, np.nan, np.nan, "does not apply (not positive and skewed)", None)
    bad = max(0, int(np.sum(yr <= 0) - np.sum(yo <= 0)))
    ov, r2o, r2r, note, forced = _slopes_overlap("ols", _log(yo), Xo, _log(yr), Xr, w)
    note = (f"log of {y} on the predictors as they are; R squared original / released; {note}"
            + (f"; {bad} more value(s) <= 0 in the release than in the original cannot be logged" if bad > 0 else ""))
    return (r2o, r2r, ov, note, False if bad > 0 else forced)


def _tails(yo, yr, Xo, Xr, w, sample):
    """The 0.1 and 0.9 quantile regressions (the worse overlap), where at least TAIL_RECORDS
    records per coefficient lie beyond each quantile; as ``_variable``'s tuple."""
    n = int(np.isfinite(yo).sum()) if len(yo) <= QR_RECORDS else QR_RECORDS
    need = TAIL_RECORDS * Xo.shape[1]
    if n * min(TAILS[0], 1 - TAILS[1]) < need:
        return (np.nan, np.nan, np.nan, f"does not apply: too few records for the tails ({need / TAILS[0]:,.0f} "
                                        f"needed for {Xo.shape[1]} coefficients)", None)
    got = {q: _slopes_overlap(q, yo, Xo, yr, Xr, w) for q in TAILS}
    worst = min(TAILS, key=lambda q: got[q][0] if np.isfinite(got[q][0]) else np.inf)
    ov, r2o, r2r, _, forced = got[worst]
    note = "; ".join(f"{q}: {got[q][0]:.3f}" for q in TAILS) + f"; pseudo R squared at {worst}" + sample
    return (r2o, r2r, ov, note, False if any(got[q][4] is False for q in TAILS) else forced)


def _loglog(original, released, y, preds, doms, scale, keep, w):
    """The log-scale OLS (module docstring) as ``_variable``'s tuple."""
    yo, yr = original[y].to_numpy(float), released[y].to_numpy(float)
    if not _skewed_positive(yo):
        return (np.nan, np.nan, np.nan, "does not apply (not positive and skewed)", None)
    logp = [c for c in preds if _skewed_positive(original[c].to_numpy(float), PREDICTOR_ZEROS)]
    Lo, Lr = original.copy(), released.copy()
    # values <= 0 cannot be logged: left out of the fit; more of them in the release than in the
    # original is damage the analyst sees (PCA's values clipped at 0).  A predictor's zeros (savings):
    # its log 0 there, with an indicator of them (the analyst's "no savings" dummy)
    bad = max(0, int(np.sum(yr <= 0) - np.sum(yo <= 0)))
    lscale, zo, zr = dict(scale), [], []
    for c in logp:
        vo, vr = original[c].to_numpy(float), released[c].to_numpy(float)
        Lo[c], Lr[c] = _log(vo, 0.0), _log(vr, 0.0)
        bad += max(0, int(np.sum(vr < 0) - np.sum(vo < 0)))
        lscale[c] = (np.nanmean(Lo[c]), np.nanstd(Lo[c]) or 1.0)
        if (vo == 0).any() and (vr == 0).any():  # (a release without zeros there: its logs show the damage)
            zo.append((vo == 0).astype(float))
            zr.append((vr == 0).astype(float))
    LXo = np.column_stack([_design(Lo, preds, doms, lscale)[:, keep]] + zo)
    LXr = np.column_stack([_design(Lr, preds, doms, lscale)[:, keep]] + zr)
    if zo:  # an indicator of zeros the others already span (two predictors 0 together): left out
        rows = np.isfinite(_log(yo)) & np.isfinite(LXo).all(axis=1)
        cols = _independent(LXo[rows]) if rows.sum() > LXo.shape[1] else np.arange(LXo.shape[1])
        LXo, LXr = LXo[:, cols], LXr[:, cols]
    ov, r2o, r2r, fit_note, forced = _slopes_overlap("ols", _log(yo), LXo, _log(yr), LXr, w)
    note = (f"log of {y} on the log of {len(logp)} skewed predictor(s); R squared original / released; {fit_note}"
            + (f"; {bad} more value(s) <= 0 in the release than in the original cannot be logged (left out "
               f"of the released fit)" if bad > 0 else ""))
    return (r2o, r2r, ov, note, False if bad > 0 else forced)


def _correlations(original, released, y, num, method):
    others = [c for c in num if c != y]
    if not others:
        return (np.nan, np.nan, np.nan, "no other variable", None)
    co = original[[y] + others].corr(method=method).iloc[0, 1:].to_numpy(float)
    cr = released[[y] + others].corr(method=method).iloc[0, 1:].to_numpy(float)
    d = np.abs(cr - co)
    return (np.nan, np.nan, float(np.nanmax(d)) if np.isfinite(d).any() else np.nan, "", None)


def _worst(table):
    """Per analysis its worst checked variable (a missed target first)."""
    rows = []
    for a in ANALYSES:
        t = table[(table.analysis == a) & table.kept.notna()]
        if not len(t):
            notes = table[table.analysis == a].note
            rows.append({"analysis": a, "label": LABELS[a], "compared": TARGETS[a][0], "variable": "", "kept": np.nan,
                         "target": "", "ok": None, "note": notes.iloc[0] if len(notes) else "no variable checked"})
            continue
        failed = t[t.ok.map(lambda v: v is False)]
        pool = failed if len(failed) else t  # a missed target first (log-log with values <= 0 may have a high overlap)
        i = pool.kept.idxmin() if TARGETS[a][1] == ">=" else pool.kept.idxmax()
        r = table.loc[i]
        rows.append({"analysis": a, "label": LABELS[a], "compared": TARGETS[a][0], "variable": r.variable,
                     "kept": r.kept, "target": r.target, "ok": r.ok, "note": r.note})
    return pd.DataFrame(rows, columns=["analysis", "label", "compared", "variable", "kept", "target", "ok", "note"])
