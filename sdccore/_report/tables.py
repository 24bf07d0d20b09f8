"""The report's tables (the dashboard shows the same ones): results in, readable tables out, with
plain headings and percentages.  No statistics here."""

from __future__ import annotations

import pandas as pd

from .._risk.registry import intruder_info
from .._risk.registry import intruders as registered_intruders
from .labels import SCORE_NAMES, intruder_heading

# the shares read as a custodian would add them: known beforehand, found more by the release
# (records no prior model gets), and the best intruder's own hits (some of them known beforehand)
_RISK_WORDS = {"prior": "known beforehand (prior)", "beyond_prior": "found more by the release",
               "intruder": "best intruder", "with_release": "hits with the release",
               "perturbed_share": "perturbed share", "abs_cor": "|cor(x, x')|",
               "residual_cor": "|cor| of the part the public variables do not explain",
               "worst_band_close": "worst size band (beyond prior)",
               "worst_band": "worst band", "prior_model": "prior model",
               "reported_only": "measured, not held to the floors", "intruders": "intruders tried", "ok": "meets floors"}


def _intruder_columns():
    """{wide column: the intruder's registry entry} (sdccore's intruders' registry)."""
    return {intruder_info(n).column: intruder_info(n) for n in registered_intruders()
            if intruder_info(n).column}


def risk_columns():
    """The risk tables' headings: each intruder's from the intruders' registry."""
    return {**_RISK_WORDS, **{c: f"{i.heading} (beyond prior)" for c, i in _intruder_columns().items()}}


def not_applicable():
    """Why a figure is missing (NaN): the intruder does not apply to this release (the registry says)."""
    return {**{c: f"n/a: {i.absent}" for c, i in _intruder_columns().items() if i.absent}, "perturbed_share": "n/a"}


def _shares():
    return ("prior", "beyond_prior", "with_release", "perturbed_share", *_intruder_columns(), "worst_band_close")


def intruder_table(intruders: pd.DataFrame) -> pd.DataFrame:
    """RiskProfile.intruders (long: variable, band, intruder ...) as variables x intruders of
    the share each gets beyond the prior over all records, headed by the registry's words, a
    '(reported)' mark on those not held to the floors (a table, not a figure)."""
    t = intruders[intruders.band == "all"] if len(intruders) else intruders
    if len(t) == 0:
        return pd.DataFrame()
    order = [n for n in registered_intruders() if n in set(t.intruder)] + sorted(set(t.intruder) - set(registered_intruders()))
    wide = t.pivot(index="variable", columns="intruder", values="beyond_prior").reindex(columns=order)
    held = t.groupby("intruder").held.any()

    def head(n):
        try:
            h = intruder_info(n).heading
        except ValueError:
            h = n
        return h + ("" if held.get(n, True) else " (reported)")

    wide = wide.apply(lambda col: col.map(lambda v: "n/a" if pd.isna(v) else f"{v:.1%}"))
    wide.columns = [head(n) for n in wide.columns]
    return wide.rename_axis("variable (share of records beyond the prior)")


def _headings(names) -> str:
    """'own, release_fit' as the intruders' headings: 'own record, fitted on release'."""
    return ", ".join(intruder_heading(n.strip()) for n in str(names).split(",") if n.strip())


def risk_table(variables: pd.DataFrame) -> pd.DataFrame:
    """Per-variable risk with readable headers and percentages (a table, not a figure): the
    prior and what the release adds first, then each intruder."""
    t = variables.copy()
    first = [c for c in ("prior", "beyond_prior", "intruder", "with_release") if c in t]
    t = t[first + [c for c in t.columns if c not in first]]
    for c in _shares():
        if c in t:
            why = not_applicable().get(c, "not assessed")
            t[c] = (t[c].astype(float) * 100).map(lambda v, w=why: w if v != v else f"{v:.1f} %")
    for c in ("abs_cor", "residual_cor"):
        if c in t:
            t[c] = t[c].astype(float).map(lambda v: "" if v != v else f"{v:.3f}")
    t["ok"] = t["ok"].map({True: "yes", False: "NO"}) if t["ok"].dtype == bool else t["ok"]
    for c in ("intruder", "intruders"):  # the intruders' headings, not their internal names
        if c in t:
            t[c] = t[c].map(_headings)
    return t.rename(columns=risk_columns())


def analyses_table(checks) -> pd.DataFrame:
    """What analysts keep (``sdccore.AnalystChecks``), one row per analysis: its worst checked
    variable's figure against the target, in words (a table, not a figure)."""
    rows = []
    for r in checks.worst.itertuples():
        applies = r.kept == r.kept
        kept = ("yes" if r.ok else "NO") if r.ok is not None else ("reported" if applies else "does not apply")
        rows.append({"Analysis": r.label, "What is compared": r.compared, "Worst variable": r.variable,
                     "Figure": f"{r.kept:.3f}" if applies else "n/a", "Target": r.target or "-", "Kept": kept})
    return pd.DataFrame(rows)


def analyses_not_applying(checks) -> str:
    """Why the analyses that do not apply to this file do not (one sentence each), or ''."""
    return " ".join(f"{r.label}: {r.note}." for r in checks.worst.itertuples() if r.kept != r.kept)


def plausibility_table(plaus: pd.DataFrame) -> pd.DataFrame:
    t = plaus.copy()
    t["mean_change_sd"] = t["mean_change_sd"].map(lambda v: f"{v:+.3f} sd")
    if "mean_change_pct" in t:
        t["mean_change_pct"] = t["mean_change_pct"].map(lambda v: f"{100 * v:+.1f} %")
    t["sd_ratio"] = t["sd_ratio"].map(lambda v: f"{v:.3f}")
    return t.rename(columns={"mean_change_sd": "mean change (sd)", "mean_change_pct": "mean change (% of the mean)",
                             "sd_ratio": "sd ratio (released / original)", "clipped": "values clipped",
                             "negative_original": "negative values: original", "negative_released": "released"})


def regression_table(table: pd.DataFrame) -> pd.DataFrame:
    """The coefficients side by side, readable: 'estimate [lo, hi]' for the original and the
    release, the interval overlap (1 = the same interval, below 0 = apart) and the
    standardised difference."""
    t = table.reset_index() if "term" not in table.columns else table.copy()

    def ci(r, which):
        return f"{r['coef_' + which]:.4g} [{r['lo_' + which]:.4g}, {r['hi_' + which]:.4g}]"

    out = pd.DataFrame({"coefficient": t["term"].astype(str), "original [95 % CI]": t.apply(ci, axis=1, which="original"),
                        "protected [95 % CI]": t.apply(ci, axis=1, which="protected"),
                        "CI overlap": t["overlap"].round(3), "(b' - b) / se": t["std_diff"].round(2)})
    if "config" in t.columns:
        out.insert(0, "method", t["config"].astype(str))
    if "sign_kept" in t.columns:
        out["sign kept"] = (t["sign_kept"].map(lambda v: "yes" if v is True else "no" if v is False else f"{v:.0%} of runs"))
    return out


def codebook_table(book: pd.DataFrame) -> pd.DataFrame:
    """The codebook with readable headers and percentages (a table, not a figure)."""
    t = book.copy()
    for c in ("perturbed_share", "close_own", "close_linked", "prior", "beyond_prior"):
        if c in t:
            t[c] = t[c].map(lambda v: "" if pd.isna(v) else f"{v:.1%}")
    if "abs_cor" in t:
        t["abs_cor"] = t["abs_cor"].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    for c in ("intruder", "intruders_tried"):  # the intruders' headings, not their internal names
        if c in t:
            t[c] = t[c].map(lambda v: _headings(v) if isinstance(v, str) else "")
    if "meets_floors" in t:
        t["meets_floors"] = t["meets_floors"].map(lambda v: "yes" if v is True else "NO" if v is False else
                                                  "" if pd.isna(v) else v)
    return t.rename(columns={"in_release": "in the release", "in_expectation": "kept in expectation",
                             "exact": "kept exactly", "missing_kept": "missing cells kept",
                             "perturbed_share": "perturbed share", "abs_cor": "|cor(x, x')|",
                             "close_own": "own record (beyond prior)", "close_linked": "linked record (beyond prior)",
                             "prior": "known beforehand (prior)", "beyond_prior": "found more by the release",
                             "intruder": "best intruder", "intruders_tried": "intruders tried",
                             "meets_floors": "meets floors", "mean_change_sd": "mean moved by bounds/rounding (sd)",
                             "analyses_kept": "what analysts keep", "analyses_missed": "analyses missed"})


def history_table(entries: list) -> pd.DataFrame:
    """One row per run of the session's history: when, what, seed and the headline scores."""
    rows = []
    for h in entries:
        s = h["scores"]
        risk = h.get("risk")
        ok = None
        if risk is not None and len(risk):
            ok = bool(risk["ok"].all()) if "ok" in risk else bool((risk.get("runs_ok", 0) == 1).all())
        pct = lambda v: "" if v is None or v != v else f"{100 * v:.1f} %"  # noqa: E731
        rows.append({"#": h["id"], "time": h["time"], "kind": h["kind"], "configuration": h["label"],
                     "data": h["data_name"], "seed": h["seed"], "runs": h.get("reps", 1),
                     SCORE_NAMES["dbrl"]: pct(s.get("dbrl")), SCORE_NAMES["id"]: pct(s.get("id")),
                     SCORE_NAMES["pil"]: pct(s.get("pil")), SCORE_NAMES["ps"]: pct(s.get("ps")),
                     SCORE_NAMES["validity_loss"]: pct(s.get("validity_loss")),
                     SCORE_NAMES["overall" if "overall" in s else "summary"]: pct(s.get("overall", s.get("summary"))),
                     "floors met": {True: "yes", False: "no", None: ""}[ok]})
    return pd.DataFrame(rows)


