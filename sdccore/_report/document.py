"""The HTML report of a release: methods, parameters, risk and utility, plots.

Internal reports include the seed (anyone with the seed, the recipe and the original file
can rebuild the release) and the size bands' limits (original values: the largest record's
exact value among them); external ones leave both out and hold no original value that the
release does not show (tests/dashboard/test_report_leak.py scans them).  No data values are written.
"""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from .._keys.recoding import Recoding
from .._methods import methods
from .._protect.options import option_schema
from .._risk.linkage import ID_REFERENCE_TEXT
from .._risk.registry import intruder_info
from .._risk.registry import intruders as registered_intruders
from . import charts, tables
from .glossary import glossary_html, method_words
from .labels import SCORE_NAMES, intruder_heading, prior_warning


PLOTLY_BASIC = Path(__file__).resolve().parent / "static" / "plotly-basic.min.js"


def _plotly_basic() -> str:
    """plotly.js's basic bundle (scatter and bar charts: every chart of the report; 1.2 MB, the
    same plotly.js version as the plotly package's, MIT licence beside it), embedded once so that
    the report opens offline and stays small enough to e-mail (the full bundle is 4.6 MB)."""
    return PLOTLY_BASIC.read_text(encoding="utf-8").replace("</script", "<\\/script")


def _table(df: pd.DataFrame) -> str:
    return df.to_html(classes="t", border=0, float_format=lambda v: f"{v:.4f}", escape=True)


def id_intruder(evaluation):
    """The threat model of the ID score, in words (from the evaluation's own options)."""
    ref = (evaluation.options or {}).get("id_reference") if evaluation is not None else None
    return ID_REFERENCE_TEXT.get(ref, "an unspecified record")


def intruder_words(intruders):
    """The intruders a profile tried, each as the intruders' registry words it (name: what it
    knows), in the registry's order."""
    tried = set(intruders.intruder) if len(intruders) else set()
    out = []
    for n in [n for n in registered_intruders() if n in tried] + sorted(tried - set(registered_intruders())):
        try:
            info = intruder_info(n)
            out.append(f"{info.label}" + (f", knowing {info.knows}" if info.knows else ""))
        except ValueError:  # measured by a plug-in no longer registered
            out.append(n)
    return out


def _risk_html(risk, internal, unsafe_reason):
    """The risk floors' section: the floors in words, each intruder's figures per variable and
    size band (the bands' limits, original values, internal only), the violations."""
    esc = html.escape
    fl = risk.floors
    return (f"<h2>Risk floors, per variable and size band</h2><p>Floors: at least {fl.min_perturbed_share:.0%} "
            f"of each checked variable's variance perturbed and |cor(original, protected)| at most "
            f"{fl.max_abs_cor:.2f} (in selective protection: of the part the public variables do not "
            f"explain); at most {fl.max_close_share:.0%} of records put within {fl.tolerance:.0%} of their "
            f"true value beyond what the intruder's knowledge alone predicts (the prior: OLS, log-OLS and "
            f"nearest-neighbour laws fitted leave-one-out, the variable's mean and "
            f"percentiles, and in selective protection gradient boosting; the hits no single one of them "
            f"explains count), by every intruder tried, overall, in each of "
            f"{fl.bands} size bands and among the largest 1 %. Intruders tried: "
            f"{esc('; '.join(intruder_words(risk.intruders)))}. "
            f"Result: <b>{'all floors met' if risk.ok else 'FLOORS BROKEN'}</b>.</p>"
            + "<ul>" + "".join(f"<li>{esc(t)}</li>" for t in risk.explain()) + "</ul>"
            + (f"<p><b>The {esc(fl.lowered_text())}</b>"
               + (f"; released because: {esc(unsafe_reason or '')}" if internal else "") + ".</p>"
               if fl.lowered() else "")
            + _table(tables.risk_table(risk.variables))
            + _table(tables.intruder_table(risk.intruders))
            # the bands' limits are original values (the largest record's exact value among them):
            # internal only
            + _table(_band_table(risk.bands, internal))
            + "".join(f"<p>{esc(v)}</p>" for v in risk.violations))


BAND_HEADINGS = {"variable": "Variable", "band": "Size band", "lo": "Smallest value", "hi": "Largest value",
                 "records": "Records", "close_own": "Own record (beyond prior)",
                 "close_reconstructed": "Reconstructed (beyond prior)", "prior": "Prior alone",
                 "intruder": "Strongest intruder", "with_release": "With the release",
                 "beyond_prior": "Added by the release", "median_rel_error": "Median change (relative)",
                 "ok": "Meets the floor", "reported_only": "Measured, not held to the floors"}


def _band_table(bands, internal):
    """The size bands' figures with plain headings (the bands' limits are original values, the
    largest record's exact value among them: internal reports only)."""
    b = bands if internal else bands.drop(columns=["lo", "hi"])
    b = b.assign(ok=b.ok.map({True: "yes", False: "NO"})) if "ok" in b else b
    if "intruder" in b:
        b = b.assign(intruder=b.intruder.map(intruder_heading))
    return b.rename(columns=BAND_HEADINGS).set_index(["Variable", "Size band"])


def option_rows(method, options):
    """The release's settings as (label, value in words) pairs: the option schema's labels, lists
    joined, the floors and recodings in words, never a Python repr."""
    schema = {o.name: o for o in option_schema(method)} if method in methods() else {}
    labels = {k: o.label for k, o in schema.items()}
    labels.update(method="Method", seed="Seed", sensitive="Sensitive variables")
    rows = []
    for k, v in sorted(options.items()):
        if k == "floors" and isinstance(v, dict):
            words = floors_words(v)
        elif k == "recode" and isinstance(v, dict):
            words = "; ".join(Recoding.from_dict(r).describe() for r in v.values())
        elif isinstance(v, (list, tuple)):
            words = ", ".join(map(str, v)) if v else "none"
        elif isinstance(v, dict):
            words = "; ".join(f"{a}: {b}" for a, b in v.items()) or "none"
        elif v is None:
            words = "none"
        elif k == "method" and v in methods():
            words = method_words(v)
        elif k in schema and schema[k].choice_text and v in schema[k].choice_text:
            words = schema[k].choice_text[v]
        else:
            words = str(v)
        rows.append((labels.get(k, k.replace("_", " ")), words))
    return rows


_FLOOR_WORDS = {
    "min_perturbed_share": lambda v: f"at least {v:.0%} of each variable's variance perturbed",
    "max_abs_cor": lambda v: f"|cor(original, protected)| at most {v:.2f}",
    "tolerance": lambda v: f"a value within {v:.0%} of the truth counts as found",
    "max_close_share": lambda v: f"at most {v:.0%} of records found beyond the prior, in every size band",
    "bands": lambda v: f"{v:g} size bands",
    "top_records": lambda v: f"at least {v:g} records among the largest",
    "hold_all_intruders": lambda v: "every intruder held to the floors" if v else
    "some intruders only reported (a lowering with its reason)",
}


def floors_words(floors: dict) -> str:
    """The risk floors in words (a floor this version does not know: its name and value)."""
    out = []
    for k, v in floors.items():
        try:
            out.append(_FLOOR_WORDS[k](v))
        except (KeyError, TypeError, ValueError):
            out.append(f"{k.replace('_', ' ')} {v}")
    return "; ".join(out)


def _verdict_html(risk, label, unsafe_reason, warnings):
    """The summary a custodian reads first: may it be released, what the public variables already
    revealed, what else to mind (in the warning colour)."""
    esc = html.escape
    if risk is None:
        head = f"{label}: no risk profile in this report."
    elif risk.ok and not risk.floors.lowered():
        head = f"{label} may be released: every checked variable meets the risk floors."
    elif risk.ok:
        head = f"{label} meets the risk floors as lowered ({risk.floors.lowered_text()})."
    else:
        head = f"{label} BREAKS the risk floors; released only because: {unsafe_reason or 'no reason given'}."
    notes = [w for w in ([prior_warning(risk)] if risk is not None else []) + list(warnings) if w]
    return ("<h2>Verdict</h2>" + f"<p><b>{esc(head)}</b></p>"
            + "".join(f'<p class="warn">{esc(w)}</p>' for w in notes))


def _dependencies_html(dependencies):
    esc = html.escape
    return "".join(f"<li>{esc(k)} = " + " + ".join(f"{v:.6g}&middot;{esc(p)}" for p, v in c.items()
                                                  if p != '(intercept)' and abs(v) > 1e-9) + "</li>"
                   for k, c in (dependencies or {}).items())


def _codebook_html(codebook):
    if codebook is None or not len(codebook):
        return ""
    return ("<h2>Codebook</h2><p>Per variable: role, method, rounding, what is kept exactly and what in "
            "expectation (before bounds and rounding, whose effect the plausibility table gives), and "
            "its residual risk.</p>" + _table(tables.codebook_table(codebook)))


def _history_html(history):
    if not history:
        return ""
    return ("<h2>History of this session</h2><p>Every comparison and release looked at before this one "
            "(internal: it lists seeds).</p>" + _table(tables.history_table(history).set_index("#")))


def _validity_html(evaluation):
    vt = evaluation.details.get("validity")
    if vt is None or not len(vt):
        return ""
    return ("<h2>Analysis validity, per variable (1 = kept)</h2><p>The OLS of each "
            + ("sensitive variable on the public ones" if evaluation.options.get("sensitive") else
               "variable on the others")
            + " fitted on the original and on the release (confidence-interval overlap of Karr et al. "
              "2006, R&sup2; kept), its correlations and its distribution (Wasserstein distance in sds); "
              "the release's analysis validity is its worst variable's.</p>"
            + _table(vt[["overlap", "r2_kept", "cor_kept", "marginal_kept", "validity", "r2_original",
                         "r2_protected"]].rename(columns=VALIDITY_HEADINGS)))


VALIDITY_HEADINGS = {"overlap": "Interval overlap", "r2_kept": "R² kept", "cor_kept": "Correlations kept",
                     "marginal_kept": "Distribution kept", "validity": "Validity (worst)",
                     "r2_original": "R² original", "r2_protected": "R² release"}


def _analyses_html(checks):
    """What analysts keep in this release (``AnalystChecks``): one row per analysis."""
    if checks is None:
        return ""
    verdict = ("Every analysis with a target keeps it in this release." if checks.ok else
               checks.summary().head.replace("What analysts keep: ", "Analysts would see a difference: ")
               .replace(" missed", " not kept within the target."))
    why = tables.analyses_not_applying(checks)
    return ("<h2>What analysts keep</h2><p>Each analysis researchers run, fitted on the original and on this "
            "release; the worst protected variable against its target.</p>"
            f"<p>{html.escape(verdict)}</p>" + _table(tables.analyses_table(checks).set_index("Analysis"))
            + (f"<p>Not applicable here: {html.escape(why)}</p>" if why else ""))


def _keys_html(keys):
    """What the release did to the key variables (``ui.release.release_keys``)."""
    if keys is None:
        return ""
    b, a = keys["before"], keys["after"]
    rows = pd.DataFrame({"original": [b.sample_uniques, b.below_k, round(b.expected_reidentifications, 1)],
                         "release": [a.sample_uniques, a.below_k, round(a.expected_reidentifications, 1)]},
                        index=["unique records", f"records with fewer than {a.k} alike",
                               "expected re-identifications"])
    return (f"<h2>Key variables</h2><p>{html.escape(', '.join(b.keys))}: {keys['cells']:,} value(s) blanked so that "
            f"every combination of key values is shared by at least {a.k} records (a blank matches every value; "
            f"identity risk as sdcMicro measures it).</p>" + _table(rows)
            + _table(keys["table"].set_index("Key variable"))
            + "".join(f"<p class='warn'>{html.escape(w)}.</p>" for w in keys.get("warnings", ())))


def _regressions_html(regressions, comparison):
    esc = html.escape
    reg_html = ""
    for chk in regressions or ():
        reg_html += (f"<h3>{esc(chk.model)}</h3><p>Records used: original {chk.n_original}, release "
                     f"{chk.n_protected}; mean interval overlap {chk.mean_overlap:.3f}.</p>"
                     + _table(tables.regression_table(chk.table).set_index("coefficient")))
    reg_sum = comparison.regression_summary() if comparison is not None else pd.DataFrame()
    if len(reg_sum):
        reg_html += (f"<h3>Over the comparison's runs (averaged)</h3>"
                     + _table(tables.regression_table(reg_sum.rename(columns={"model": "regression"}))
                              .assign(regression=reg_sum["model"].to_numpy()).set_index(["regression", "method"])))
    if reg_html:
        reg_html = ("<h2>Does the analysis still hold?</h2><p>Linear regressions fitted on the original and on the "
                    "release: coefficients with 95 % intervals side by side and their overlap (Karr et al. 2006: "
                    "1 = the same interval, below 0 = apart).</p>" + reg_html)
    return reg_html


def build_report(kind, data_name, shape, roles, label, options, evaluation, comparison=None, dependencies=None,
                 notes=(), risk=None, plausibility=None, unsafe_reason=None, regressions=(), codebook=None,
                 history=(), analyses=None, keys=None, warnings=()):
    """The HTML report (``kind`` 'internal' or 'external'): the verdict and what to mind first,
    then the data, the method in words, the risk floors per variable and size band, the scores,
    what analysts keep, the key variables, the comparison, the regressions, the codebook, the
    history (internal), the charts and a glossary of the terms it names.  ``warnings``: more
    sentences to show beside the verdict (e.g. the means the release moves)."""
    internal = kind == "internal"
    opts = dict(options)
    if not internal:
        opts.pop("seed", None)
    figs = []
    if comparison is not None:
        ru = comparison.risk_utility()
        refused = comparison.refused()
        figs.append(charts.risk_utility_figure(ru, "runs", "validity_loss" if "validity_loss" in ru else
                                                "utility_loss", refused))
        figs.append(charts.measures_figure(comparison.summary))
    figs.append(charts.own_correlation_figure(evaluation.details["ic"]))
    # numbered ids (plotly draws random ones): the same release gives the same report, but for its time stamp
    parts = [f.to_html(full_html=False, include_plotlyjs=False, div_id=f"figure-{i + 1}") for i, f in enumerate(figs)]
    esc = html.escape
    general = "sensitive" not in set(roles.values())  # every numeric variable protected
    role_words = {"public": "protected" if general else "public", "excluded": "set apart (released unchanged)",
                  "identifier": "identifier (dropped)"}
    role_rows = "".join(f"<tr><td>{esc(str(c))}</td><td>{esc(role_words.get(r, r))}</td></tr>"
                        for c, r in roles.items())
    scores = pd.DataFrame({"score": list(evaluation.scores.values())},
                          index=[SCORE_NAMES[k] for k in evaluation.scores])
    validity_html = _validity_html(evaluation)
    cmp_html = ""
    if comparison is not None:
        tab = (comparison.summary.pivot(index="config", columns="score", values="mean")
               .rename(columns=SCORE_NAMES).rename_axis(index="method", columns=None))
        cmp_html = f"<h2>Comparison ({int(comparison.summary.reps.max())} runs per method)</h2>{_table(tab)}"
    dep = _dependencies_html(dependencies)
    note_html = "".join(f"<li>{esc(n)}</li>" for n in notes)
    risk_html = ""
    if risk is not None:
        fl = risk.floors
        risk_html = _risk_html(risk, internal, unsafe_reason)
        figs.append(charts.band_risk_figure(risk.bands, fl.max_close_share, fl.tolerance))
        parts.append(figs[-1].to_html(full_html=False, include_plotlyjs=False, div_id=f"figure-{len(figs)}"))
    if unsafe_reason and internal:
        risk_html += f"<p><b>Released despite broken floors, because:</b> {esc(unsafe_reason)}</p>"
    if plausibility is not None:
        risk_html += ("<h2>Plausible values and what they change</h2>"
                      + _table(tables.plausibility_table(plausibility)))
    reg_html = _regressions_html(regressions, comparison)
    book_html, hist_html = _codebook_html(codebook), _history_html(history) if internal else ""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = f"""<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Disclosure control report: {esc(str(data_name))}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table.t{{border-collapse:collapse;display:block;overflow-x:auto;max-width:100%}}
table.t td,table.t th{{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right;max-width:32em;overflow-wrap:anywhere}}
.plotly-graph-div{{max-width:100%}}
.warn{{background:#fff4d6;border-left:4px solid #e8a400;padding:6px 10px}}
.tag{{display:inline-block;padding:2px 8px;border-radius:4px;background:{'#fde2e1' if internal else '#e1f0fd'}}}</style>
<script>{_plotly_basic()}</script>
</head><body>
<h1>Disclosure control report</h1>
<p><span class="tag">{'INTERNAL - contains the seed, do not publish' if internal else 'External'}</span> &middot; {stamp}</p>
{_verdict_html(risk, label, unsafe_reason, warnings)}
<h2>Data</h2><p>{esc(str(data_name))}: {shape[0]:,} records x {shape[1]} columns.</p>
<table class="t"><tr><th>column</th><th>role</th></tr>{role_rows}</table>
<h2>Method</h2><p><b>{esc(str(label))}</b></p>
<table class="t">{''.join(f'<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>' for k, v in option_rows(opts.get("method"), opts))}</table>
{'<h3>Exact linear combinations rebuilt from protected columns</h3><ul>' + dep + '</ul>' if dep else ''}
{'<h3>Notes</h3><ul>' + note_html + '</ul>' if note_html else ''}
{risk_html}
<h2>Risk and utility of this release</h2>
<p>All scores lie in [0, 1]; lower is better. Risk: record linkage (DBRL) and interval disclosure (ID).
Utility loss: probabilistic information loss (PIL) and propensity score (PS).
ID assumes an intruder who centres the intervals on {esc(id_intruder(evaluation))}.</p>
{_table(scores)}
{validity_html}
{_analyses_html(analyses)}
{_keys_html(keys)}
{cmp_html}
{reg_html}
{book_html}
{hist_html}
<h2>Plots</h2>{''.join(parts)}
<h2>Factor and component scores</h2><p>Scores are never released: when a variable is nearly uncorrelated with
the others, its factor score reproduces it (Drechsler, Ronning and Bleninger).</p>
</body></html>"""
    head, _, _ = doc.rpartition("</body></html>")
    # the glossary of the terms this report names, in plain words (the dashboard's tooltips say the same)
    return head + glossary_html(re.sub(r"<script.*?</script>", "", head, flags=re.S)) + "</body></html>"
