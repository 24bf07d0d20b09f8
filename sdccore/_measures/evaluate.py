"""``evaluate``: disclosure risk, utility loss and selectivity of a release in one call,
with a typed ``Scores`` object."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from .._risk.linkage import _dbrl_arrays, _indices, _pair, default_id_reference, linked_records
from .._core.missing import completed as _completed
from .._risk.scores import _id_arrays
from .._core.summary import Summary
from .._risk.floors import LINK_SAMPLE, RiskProfile, risk_profile
from .._core.threads import by_work
from .utility import _extras, _ic_arrays, _pil_arrays, _pil_observed, _pil_stat_names, _ps_arrays, check_ps_order, ps_terms
from .._core.validation import check_dataframe, make_rng
from .validity import validity_arrays

__all__ = ["evaluate", "Evaluation", "Scores"]


@dataclass(frozen=True)
class Scores(Mapping):
    """The scores of a release, each in [0, 1], lower is better.  Also a read-only mapping
    (``scores["dbrl"]``, ``dict(scores)``) over the scores present, in this order.

    Attributes
    ----------
    dbrl : float
        Distance-based record linkage: share of records linked to their own release.
    id : float
        Rank interval disclosure (the intruder of ``options['id_reference']``).
    pil : float
        Probabilistic information loss.
    ps : float
        Propensity score (Woo et al.) on standardised data.
    summary : float
        (pil + ps + dbrl + id) / 4, the papers' general score.
    ps_shape : float
        The propensity score on normal scores (sees distribution shape; not in summary).
    validity_loss : float
        1 - analysis validity (``sdccore._measures.validity``): what the OLS of each sensitive variable
        on the public ones (each variable on the others in general protection), its
        correlations and its distribution lose, for the worst-kept variable; not in summary.
    selectivity : float or None
        Mean IC (selective protection only).
    overall : float or None
        (pil + ps + dbrl + id + 2 selectivity) / 6 (selective protection only).
    extra : tuple of (str, float)
        The registered plug-in analyses' values (``sdccore.register_analysis``), in the
        registry's order; in the mapping after the built-in scores (keyword only).
    """

    dbrl: float
    id: float
    pil: float
    ps: float
    summary: float
    ps_shape: float
    validity_loss: float
    selectivity: float | None = None
    overall: float | None = None
    extra: tuple = field(default=(), kw_only=True)

    def _present(self):
        return [f.name for f in fields(self) if f.name != "extra" and getattr(self, f.name) is not None] + \
            [k for k, _ in self.extra]

    def __getitem__(self, key):
        if key not in self._present():
            raise KeyError(key)
        return dict(self.extra)[key] if key in dict(self.extra) else getattr(self, key)

    def __iter__(self):
        return iter(self._present())

    def __len__(self):
        return len(self._present())


# ----------------------------------------------------------------------------- evaluate

@dataclass(frozen=True)
class Evaluation:
    """Scores in [0, 1], lower is better, and their breakdown.

    Attributes
    ----------
    scores : Scores
        dbrl, id, pil, ps, summary, ps_shape; with sensitive variables also selectivity
        and overall.
    details : dict
        "id" (variables x p), "pil" (per statistic), "pil_components", "pil1", "pil2",
        "ic" (per variable: |cor(x, x')| and IC), "odr", "outliers", "skewness_bias",
        "kurtosis_bias", "ps_converged", "ps_fit" ('separated' when the
        propensity model separates the two files: the release is recognisably not the original), "validity" (per checked variable: the components of
        analysis validity, see ``analysis_validity``), and the framework paper's utility metrics (see
        ``UTILITY_METRICS``): "flat_correlation" (its "correlation"), "mean_abs",
        "max_row", "frobenius", "kl", "psnr", "ssim".
    options : dict
        The effective options.
    risk : RiskProfile or None
        Each sensitive variable (each variable in general protection) and each of its size
        bands against the risk floors (``floors`` option).
    """

    scores: Scores
    details: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)
    risk: RiskProfile | None = None

    def __repr__(self):
        sc = self.scores
        risk = "" if self.risk is None else ("; risk floors met" if self.risk.ok else "; risk floors BROKEN")
        return (f"Evaluation(dbrl {sc.dbrl:.3f}, id {sc.id:.3f}, pil {sc.pil:.3f}, ps {sc.ps:.3f}, "
                f"validity lost {sc.validity_loss:.3f}{risk})")

    def summary(self) -> Summary:
        """A few lines: every score (lower is better) and the risk profile's summary (a
        ``Summary``: the text, and ``as_html()``)."""
        lines = [f"{k}: {v:.4f}" for k, v in self.scores.items() if k not in dict(self.scores.extra)]
        lines += [_plugin_line(k, v).strip() for k, v in self.scores.extra]
        if self.details.get("ps_fit"):
            lines.append(f"PS fit: {self.details['ps_fit']}")
        if self.risk is not None:
            lines.append(self.risk.summary())
        head = "Evaluation (every score in [0, 1], lower is better):" if not self.scores.extra else \
            "Evaluation (the built-in scores in [0, 1], lower is better; each plug-in analysis as its label says):"
        return Summary(head, lines)


def evaluate(original, protected, *, sensitive=None, rng=None, _with_risk=True, _with_plugins=True, **options):
    """Disclosure risk, utility loss and (with ``sensitive``) selectivity of a release.

    The result's ``risk`` checks each sensitive variable (each variable in general
    protection) and each of its size bands against the risk floors, as ``protect`` does
    before it returns a release.

    Parameters
    ----------
    original, protected : DataFrame
        Same shape and numeric columns, record i of one is record i of the other.  Missing
        cells (NaN) are allowed: PIL, selectivity and the risk floors compare the cells
        observed in both files; linkage, interval disclosure (counted on observed cells) and
        the propensity score use each file completed at its EM conditional means.
    sensitive : list of str, optional
        Selective protection: the variables to protect (adds selectivity and overall).
    rng : None, int or numpy.random.Generator
        Accepted for API symmetry; every measure here is deterministic.
    **options
        ``linkage`` (variables for DBRL: the sensitive ones for selective protection, all
        for general), ``id_reference`` (the intruder of interval disclosure, one of
        ID_REFERENCES, explained in ID_REFERENCE_TEXT; default 'own' in selective
        protection, 'linked_all' in general protection; 'linked' with ``linkage``),
        ``pil_statistics`` ('7' or '5'), ``ps_order`` (2 or 3), ``floors`` (a dict of
        ``RiskFloors`` fields), ``weights`` (the name of a sampling-weight column present in
        both files: it is left out of the measures, and ``details['weighted']`` gives per
        variable the weighted mean of each file, their difference in weighted sds and the
        ratio of weighted sds; ``details['weighted_cor_gap']`` the largest change of a
        weighted correlation).  The risk measures stay unweighted: they are about the
        records in the file.

    Returns
    -------
    Evaluation

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> res = sdccore.protect(df, "pca", rng=1, allow_unsafe="internal file")
    >>> ev = sdccore.evaluate(df, res.data)
    >>> list(ev.scores)
    ['dbrl', 'id', 'pil', 'ps', 'summary', 'ps_shape', 'validity_loss']
    >>> ev.risk.ok  # general PCA of Tarragona: intruders who know the method take back some of its largest firms
    False
    """
    make_rng(rng)
    n = len(original) if hasattr(original, "__len__") else 0
    with by_work(min(n, LINK_SAMPLE) * n):  # threads chosen by the work (issue 42)
        return _evaluate(original, protected, sensitive, _with_risk, _with_plugins, options)


def _evaluate(original, protected, sensitive, _with_risk, _with_plugins, options):
    weights = options.pop("weights", None)
    original, protected, wname, w = _without_weights(original, protected, weights)
    _check_names(options)
    X, Y, cols = _pair(original, protected, missing=True)
    X0, Y0 = X, Y  # with missing cells (NaN)
    X, Y, obs = _completed(X, Y)
    sens = _indices(sensitive, cols, "sensitive") if sensitive else None
    linkage = options.get("linkage")
    link = _indices(linkage, cols, "linkage") if linkage else (sens or list(range(len(cols))))
    ref = options.get("id_reference")
    ref = ref if ref is not None else "linked" if linkage else default_id_reference(bool(sens))
    stat_names = _pil_stat_names(options.get("pil_statistics", 7))
    order = check_ps_order(options.get("ps_order", 2))
    d_score, first, ties, own = _dbrl_arrays(X, Y, link)
    id_vars = sens or list(range(len(cols)))
    # one linking policy with interval_disclosure (see ID_REFERENCE_TEXT); linking on S alone
    # ('linked_sensitive') would find the protected record whose S is nearest the original
    # S, so its interval almost always holds it (0.999 on Tarragona/SALES for every method)
    linked = linked_records(X, Y, id_vars, ref, link if linkage else None, known=(link, first))
    id_table = _id_arrays(X, Y, id_vars, linked, observed=obs)
    id_score = float(np.nanmean(id_table)) if np.isfinite(id_table).any() else 0.0
    per, comps = _pil_arrays(X, Y, stat_names) if obs is None else _pil_observed(X0, Y0, obs, stat_names)
    pil_score = float(np.mean(list(per.values())))
    ps_score, converged, _ = _ps_arrays(X, Y, order)
    ps_shape = _ps_arrays(X, Y, order, "normal_scores")[0]
    ic, cors = _ic_arrays(X, Y, set(sens or range(len(cols))), obs)
    sel = float(ic.mean()) if sens else None
    # ps_shape is reported beside the papers' PS, not inside their summary/overall (so those
    # stay comparable)
    check = sens or list(range(len(cols)))
    pub = [j for j in range(len(cols)) if j not in set(check)]
    validity, vtable = validity_arrays(X0, Y0, check, predictors=pub if sens and pub else None)
    vtable.index = pd.Index([cols[j] for j in check], name="variable")
    scores = Scores(d_score, id_score, pil_score, ps_score, (pil_score + ps_score + d_score + id_score) / 4, ps_shape,
                    1.0 - validity, sel, (pil_score + ps_score + d_score + id_score + 2 * sel) / 6 if sens else None,
                    extra=_plugin_scores(X0, Y0, cols) if _with_plugins else ())
    details = _details(id_table, id_vars, cols, per, comps, stat_names, ic, cors, sens, converged, order, X, obs,
                       vtable)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # constant columns make skewness/KL undefined: NaN/inf, no spam
        details.update(_extras(X, Y))
    if weights is not None:
        details.update(_weighted(X0, Y0, w, cols))
    risk = risk_profile(X, Y, cols, check, floors=options.get("floors"), link_on=pub if sens and pub else None,
                        observed=obs) if _with_risk else None
    return Evaluation(scores, details, _effective(cols, sens, link, wname, ref, len(stat_names), order, risk), risk)


def _plugin_line(name, value):
    from .analyses import REGISTRY

    info = REGISTRY.get(name)
    how = "" if info is None else f" ({info.label}{'; higher is better' if info.direction == 'higher' else ''})"
    return f"  {name}{how}: {value:.4f}"


def _plugin_scores(X0, Y0, cols):
    """(name, value) of every registered plug-in analysis (``analyses.plugins()``), each run on
    the two files as DataFrames of the numeric columns (rows aligned, missing cells NaN, the
    weight column left out); one ValueError naming the analysis that fails or does not
    return one number (a finite float, or NaN)."""
    import numbers

    from .._core.refs import resolve
    from .analyses import plugins

    out = []
    for info in plugins():
        o, r = pd.DataFrame(X0, columns=cols, copy=True), pd.DataFrame(Y0, columns=cols, copy=True)
        try:
            v = resolve(info.measure)(o, r)
        except Exception as exc:  # noqa: BLE001 - any fault of a plug-in is said once, with its name
            raise ValueError(f"analysis {info.name!r} failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or np.isinf(float(v)):
            raise ValueError(f"analysis {info.name!r} returned {v!r:.80}; it must return one number (a finite float, "
                             f"or NaN where it cannot be measured).")
        out.append((info.name, float(v)))
    return tuple(out)


def _effective(cols, sens, link, wname, ref, n_stats, order, risk):
    """The options the evaluation used, every default filled in."""
    return {"sensitive": [cols[j] for j in sens] if sens else None, "linkage": [cols[j] for j in link],
            **({"weights": wname} if wname is not None else {}),
            "id_reference": ref, "pil_statistics": n_stats, "ps_order": order,
            "floors": risk.floors.to_dict() if risk else None}


def _without_weights(original, protected, weights):
    """Both files without the sampling-weight column, its name and values (None, None
    without weights)."""
    if weights is None:
        return original, protected, None, None
    from .._protect.strata import check_weights

    wname, w = check_weights(check_dataframe(original, "original"), weights)
    if wname not in protected.columns:
        raise ValueError(f"weights={wname!r} must be a column of both files; the protected file has none.")
    return original.drop(columns=[wname]), protected.drop(columns=[wname]), wname, w


def _check_names(options):
    from .._protect.options import option_schema

    allowed = {o.name for o in option_schema("evaluate")}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))}; evaluate takes {', '.join(sorted(allowed))}.")


def _details(id_table, id_vars, cols, per, comps, stat_names, ic, cors, sens, converged, order, X, obs, vtable):
    checked = set(sens or range(len(cols)))
    return {
        "id": pd.DataFrame(id_table, index=[cols[j] for j in id_vars], columns=[f"p={p}" for p in range(1, 11)]),
        "pil": pd.Series(per, name="pil"),
        "pil1": float(np.mean([per.get(s, np.nan) for s in ("mean", "var", "cov")])),
        "pil2": float(np.nanmean([per.get(s, np.nan) for s in ("quantiles", "skew", "kurt")])),
        "pil_components": {s: comps[s] for s in stat_names},
        "ic": pd.DataFrame({"abs_cor": cors, "ic": ic, "sensitive": [j in checked for j in range(len(cols))]},
                           index=cols),
        "ps_converged": converged is True,
        # the PS model is fitted with a vanishing ridge (``_utility._ps_arrays``): "separated":
        # coefficients only the ridge holds back (the files are separated; plain maximum
        # likelihood has no maximum there); "ridge": the fit stopped at its iteration limit;
        # "": a well-determined maximum, the plain maximum likelihood's
        "ps_fit": "" if converged is True else converged,
        "ps_terms": ps_terms(len(cols), order, 2 * X.shape[0]),
        "missing_cells": 0 if obs is None else int((~obs).sum()),
        "validity": vtable,
    }


def _weighted(X, Y, w, cols):
    """Weighted means, sds and correlations of both files (cells observed in both; a
    pair of variables on the records observed in both files for both)."""
    obs = ~(np.isnan(X) | np.isnan(Y))
    rows = []
    for j, c in enumerate(cols):
        o = obs[:, j]
        wo = w[o] / w[o].sum()
        m0, m1 = wo @ X[o, j], wo @ Y[o, j]
        s0 = np.sqrt(wo @ (X[o, j] - m0) ** 2)
        s1 = np.sqrt(wo @ (Y[o, j] - m1) ** 2)
        rows.append({"variable": c, "mean_original": m0, "mean_protected": m1,
                     "mean_change_sd": (m1 - m0) / s0 if s0 > 0 else 0.0, "sd_ratio": s1 / s0 if s0 > 0 else 1.0})
    gap = 0.0
    full = obs.all(axis=1)
    if full.sum() >= 3:
        wf = w[full] / w[full].sum()

        def wcor(A):
            D = A - wf @ A
            C = (D * wf[:, None]).T @ D
            d = np.sqrt(np.diag(C))
            with np.errstate(invalid="ignore", divide="ignore"):
                return C / np.outer(d, d)
        gap = float(np.nanmax(np.abs(wcor(X[full]) - wcor(Y[full]))))
    return {"weighted": pd.DataFrame(rows).set_index("variable"), "weighted_cor_gap": gap}
