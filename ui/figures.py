"""The dashboard's figures and tables: results in, figures out.  No Streamlit, no statistics.
The report's own charts and tables are sdccore's (``sdccore.report``, one source for the pages,
the reports and the command line); the figures only the pages draw are here."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

import sdccore

_report = sdccore.report
SCORE_NAMES = _report.SCORE_NAMES  # {score: label}, live from sdccore's analyses' registry
COLORS, _LAYOUT, _color = _report.COLORS, _report.LAYOUT, _report.color
SPREADS, UTILITY_AXES, MAX_BAND_LINES = _report.SPREADS, _report.UTILITY_AXES, _report.MAX_BAND_LINES
risk_utility_figure, measures_figure = _report.risk_utility_figure, _report.measures_figure
own_correlation_figure, band_risk_figure = _report.own_correlation_figure, _report.band_risk_figure
risk_table, intruder_table, risk_columns = _report.risk_table, _report.intruder_table, _report.risk_columns
analyses_table, analyses_not_applying = _report.analyses_table, _report.analyses_not_applying
plausibility_table, regression_table = _report.plausibility_table, _report.regression_table
codebook_table, history_table = _report.codebook_table, _report.history_table


def correlation_heatmap(R: pd.DataFrame, title="Correlation matrix (clustered order)"):
    fig = go.Figure(go.Heatmap(z=R.to_numpy(), x=list(map(str, R.columns)), y=list(map(str, R.index)),
                               zmin=-1, zmax=1, colorscale="RdBu", reversescale=True,
                               colorbar=dict(title="r"),
                               hovertemplate="%{y} / %{x}: r = %{z:.3f}<extra></extra>"))
    fig.update_layout(title=title, height=max(380, 28 * len(R) + 120), yaxis=dict(autorange="reversed"), **_LAYOUT)
    return fig


def scree_figure(scree: pd.DataFrame):
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_bar(x=scree.component, y=scree.eigenvalue, name="eigenvalue",
                hovertemplate="%{x}: eigenvalue %{y:.3f}<extra></extra>")
    fig.add_scatter(x=scree.component, y=scree.cumulative * 100, name="cumulative variance (%)",
                    mode="lines+markers", secondary_y=True,
                    hovertemplate="%{x}: %{y:.1f} % of the variance<extra></extra>")
    fig.add_hline(y=1, line_dash="dot", annotation_text="eigenvalue 1 (Kaiser)")
    fig.update_yaxes(title_text="eigenvalue", secondary_y=False)
    fig.update_yaxes(title_text="cumulative variance (%)", range=[0, 105], secondary_y=True)
    fig.update_layout(title="Scree plot: variance of the principal components", height=400,
                      legend=dict(orientation="h", yanchor="top", y=-0.25, x=0), **_LAYOUT)
    return fig


def indices_figure(per_variable: pd.DataFrame, sensitive=(), point=None):
    """Between (x) and within (y) for each variable taken alone as sensitive."""
    sens = set(sensitive or ())
    fig = go.Figure()
    names = [str(v) for v in per_variable.index]
    # labels on the sensitive variables only (the others' names are in the hover and the table
    # beside the chart): a label for every variable piles up where the points cluster
    is_sens = np.array([v in sens for v in per_variable.index], dtype=bool)
    # one trace per kind, so that the legend's marker is the points' own colour; the sensitive
    # variables named on the chart (a label for every variable piles up where points cluster)
    for mask, label, colour, text in ((~is_sens, "other variables (hover for the name)", "#7f7f7f", False),
                                      (is_sens, "sensitive variables", "#d62728", True)):
        if not mask.any():
            continue
        sub = per_variable[mask]
        fig.add_scatter(x=sub.between, y=sub.within, mode="markers+text" if text else "markers",
                        text=[str(v) for v in sub.index] if text else None, textposition="top center",
                        customdata=[str(v) for v in sub.index], marker=dict(size=10, color=colour), name=label,
                        hovertemplate="%{customdata}: between %{x:.2f}, within %{y:.2f}<extra></extra>")
    if point is not None:
        # a ring round the point, not a cross over it: a single sensitive variable's own point shows inside
        fig.add_scatter(x=[point[0]], y=[point[1]], mode="markers", name="your sensitive set (ring)",
                        marker=dict(size=24, symbol="circle-open", color="black", line=dict(width=2)),
                        hovertemplate="your sensitive set: between %{x:.2f}, within %{y:.2f}<extra></extra>")
    fig.update_layout(title="Between/within correlation of each variable (red, named: sensitive; hover for the others)",
                      xaxis=dict(title="between (mean |r| with the others)", range=[0, 1]),
                      yaxis=dict(title="within (mean |r| among the others)", range=[0, 1]), height=420, **_LAYOUT)
    return fig


def bw_map_figure(mp: pd.DataFrame, point=None):
    """The simulated map: the method that wins at each (between, within) grid point (only
    methods that met every risk floor in every run can win; the best analysis validity among
    them), the user's point."""
    fig = go.Figure()
    methods = [c for c in mp.columns if c not in ("between", "within", "best", "winner")
               and not c.endswith("_se") and not c.endswith("_floors")]
    validity = any(c.endswith("_floors") for c in mp.columns)
    best = mp.best.astype(str).where(mp.best.notna(), None)
    # one legend entry per winning method, one for every tie (hover names the methods) and one for
    # no winner: a tie per pair of methods made a legend of a dozen near-identical squares
    groups = best.map(lambda b: None if b is None else "tie" if " or " in b else b)
    labels = sorted(n for n in groups.dropna().unique() if n not in ("tie", "none")) + \
        [n for n in ("tie", "none") if (groups == n).any()]
    for i, name in enumerate(labels):
        sub = mp[(groups == name).to_numpy()]
        tie = name == "tie"
        none = name == "none"
        text = "no method met every floor" if none else ("two or more tie within noise" if tie else f"{name} best")
        vals = sub[methods].to_numpy(dtype=float)
        hover = "<br>".join(
            f"{m}: " + ("%{customdata[" + str(k) + "]:.3f}") for k, m in enumerate(methods))
        fig.add_scatter(x=sub.between, y=sub.within, mode="markers", name=text,
                        marker=dict(size=22, symbol="x-thin-open" if none else ("square-open" if tie else "square"),
                                    color="#999999" if none or tie else _color(name, i), opacity=0.6,
                                    line=dict(width=3)),
                        customdata=1 - vals if validity else vals, text=list(sub.best.astype(str)),
                        hovertemplate=("between %{x:.1f}, within %{y:.1f}: %{text}<br>"
                                       + ("analysis validity:<br>" if validity else "overall score:<br>")
                                       + hover + "<extra></extra>"))
    if point is not None and None not in point:
        # a ring named in the legend (a text label collided with the grid's squares)
        fig.add_scatter(x=[point[0]], y=[point[1]], mode="markers", name="your data (black ring)",
                        marker=dict(size=30, symbol="circle-open", color="black", line=dict(width=3)),
                        hovertemplate="your data: between %{x:.2f}, within %{y:.2f}<extra></extra>")
    fig.update_layout(title=("Which method wins where (FA paper's eq. 5 data; safe in every run, then the best "
                             "analysis validity)" if validity else
                             "Which method wins where (simulated from the FA paper's eq. 5; overall score)"),
                      xaxis=dict(title="between-correlation", range=[-0.05, 0.95]),
                      yaxis=dict(title="within-correlation", range=[-0.05, 0.95]), height=460, **_LAYOUT)
    return fig


def loadings_heatmap(loadings: pd.DataFrame, sensitive=(), perturbed=()):
    """Variables x factors; sensitive variables marked with *, perturbed factors with a frame."""
    sens = set(sensitive or ())
    ylab = [f"{v} *" if v in sens else str(v) for v in loadings.index]
    fig = go.Figure(go.Heatmap(z=loadings.to_numpy(), x=list(loadings.columns), y=ylab, zmin=-1, zmax=1,
                               colorscale="RdBu", reversescale=True, colorbar=dict(title="loading"),
                               hovertemplate="%{y} on %{x}: %{z:.3f}<extra></extra>"))
    # the sensitive variables' names in red and bold, as the title says; room for long names
    fig.update_yaxes(tickmode="array", tickvals=ylab, automargin=True,
                     ticktext=[f"<b><span style='color:#d62728'>{y}</span></b>" if v in sens else y
                               for y, v in zip(ylab, loadings.index)])
    fig.update_xaxes(automargin=True)
    cols = list(loadings.columns)
    for f in perturbed or ():
        j = f - 1
        if 0 <= j < len(cols):
            fig.add_shape(type="rect", x0=j - 0.5, x1=j + 0.5, y0=-0.5, y1=len(ylab) - 0.5,
                          line=dict(color="black", width=3))
    fig.update_layout(title="Loadings (* and red: sensitive variable; framed: perturbed factor)",
                      height=max(360, 26 * len(ylab) + 120), yaxis=dict(autorange="reversed"), **_LAYOUT)
    return fig


def perturbed_share_figure(share: pd.Series, sensitive=(), floor=None):
    """How much of each variable's variance the perturbed factors carry (the floor as a line)."""
    sens = set(sensitive or ())
    pct = share.to_numpy() * 100
    fig = go.Figure(go.Bar(x=pct, y=list(map(str, share.index)), orientation="h",
                           marker_color=["#d62728" if v in sens else "#1f77b4" for v in share.index],
                           text=[f"{p:.0f} %" for p in pct], textposition="auto",
                           hovertemplate="%{y}: %{x:.1f} % of its variance is perturbed<extra></extra>"))
    if floor is not None:
        fig.add_vline(x=floor * 100, line_dash="dash", line_color="#d62728",
                      annotation_text=f"floor {floor * 100:.0f} %", annotation_position="top")
    fig.update_layout(title="Variance share that will be perturbed (red: sensitive)",
                      xaxis=dict(title="% of variance (what changes; the rest stays)", range=[0, 100]),
                      yaxis=dict(autorange="reversed"), height=max(320, 24 * len(share) + 120), **_LAYOUT)
    return fig


def correlation_pair_figure(R0: pd.DataFrame, R1: pd.DataFrame):
    fig = make_subplots(rows=1, cols=2, subplot_titles=("original", "protected"), horizontal_spacing=0.08)
    for c, R in ((1, R0), (2, R1)):
        fig.add_trace(go.Heatmap(z=R.to_numpy(), x=list(map(str, R.columns)), y=list(map(str, R.index)), zmin=-1,
                                 zmax=1, colorscale="RdBu", reversescale=True, showscale=c == 2,
                                 hovertemplate="%{y} / %{x}: r = %{z:.3f}<extra></extra>"), row=1, col=c)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(showticklabels=False, row=1, col=2)
    fig.update_layout(title="Correlations before and after protection", height=max(420, 24 * len(R0) + 160), **_LAYOUT)
    return fig


def risk_sentences(risk, limit=6) -> str:
    """Markdown: per checked variable, what the intruder's knowledge predicts without the release
    and what the release adds (``RiskProfile.explain``), the variables that add most first."""
    lines = risk.explain()  # the variables the release adds most to first
    if not lines:
        return ""
    more = f"\n- ... and {len(lines) - limit} more variable(s): see the table." if len(lines) > limit else ""
    return "**Prior and what the release adds**\n" + "".join(f"\n- {t}" for t in lines[:limit]) + more


def removal_curve_figure(table: pd.DataFrame, metric: str, label: str, threshold=None, chosen=None, floor=None):
    """pca_remove: the utility metric after removing the r largest components (left axis)
    and the smallest share of a checked variable's variance removed (right axis, the risk
    floor's quantity), r = 0, 1, ..."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=table.removed, y=table[metric].replace([np.inf, -np.inf], np.nan), mode="lines+markers",
                    name=label,
                    hovertemplate="%{x} removed: " + label + " %{y:.4g}<extra></extra>")
    fig.add_scatter(x=table.removed, y=table.min_share * 100, mode="lines+markers", name="smallest variance share removed (%)",
                    line=dict(dash="dot", color="#7f7f7f"), secondary_y=True,
                    hovertemplate="%{x} removed: at least %{y:.1f} % of every checked variable's variance<extra></extra>")
    if threshold is not None:
        fig.add_hline(y=threshold, line_dash="dash", line_color="#1f77b4", annotation_text=f"stop: {threshold:g}")
    if floor is not None:
        # a trace on the right axis (add_hline would draw it on the left one)
        fig.add_scatter(x=[table.removed.min(), table.removed.max()], y=[floor * 100] * 2, mode="lines",
                        name=f"risk floor: at least {floor * 100:.0f} % perturbed", secondary_y=True,
                        line=dict(dash="dash", color="#d62728"), hoverinfo="skip")
    if chosen is not None:
        fig.add_vline(x=chosen, line_color="#2ca02c", annotation_text=f"{chosen} removed")
    fig.update_layout(title="Utility and perturbed share against components removed", height=420,
                      xaxis=dict(title="largest principal components removed", dtick=1),
                      legend=dict(orientation="h", yanchor="top", y=-0.25, x=0), **_LAYOUT)
    fig.update_yaxes(title_text=label, secondary_y=False)
    fig.update_yaxes(title_text="% of variance removed", range=[0, 105], secondary_y=True)
    return fig


def regression_figure(table: pd.DataFrame, model: str):
    """Forest plot of one regression: per coefficient, the original's 95 % interval (grey)
    and each release's (a colour per configuration; for a comparison, the intervals
    averaged over runs).  Every coefficient is drawn on the same scale: its distance from
    the original's estimate in half-widths of the original's interval, so the grey bar is
    always -1..1 and a protected bar outside it is a changed conclusion.

    ``table``: one row per term (and per configuration if it has a 'config' column) with
    coef/lo/hi_original, coef/lo/hi_protected and overlap."""
    t = table.reset_index() if "term" not in table.columns else table
    if "config" not in t.columns:
        t = t.assign(config="release")
    terms = list(dict.fromkeys(t["term"]))
    configs = list(dict.fromkeys(t["config"]))
    first = t.drop_duplicates("term").set_index("term").loc[terms]
    half = (first["hi_original"] - first["coef_original"]).replace(0, float("nan"))

    def scaled(v, term):
        return (v - first.loc[term, "coef_original"]) / half[term]

    fig = go.Figure()
    fig.add_scatter(x=[0.0] * len(terms), y=terms, mode="markers", name="original", marker=dict(color="#555", size=10),
                    error_x=dict(type="data", array=[1.0] * len(terms), color="#999", thickness=6, width=0),
                    customdata=[[first.loc[s, "coef_original"], first.loc[s, "lo_original"],
                                 first.loc[s, "hi_original"]] for s in terms],
                    hovertemplate="%{y}, original: %{customdata[0]:.4g} [%{customdata[1]:.4g}, "
                                  "%{customdata[2]:.4g}]<extra></extra>")
    for i, cfg in enumerate(configs):
        sub = t[t["config"] == cfg].set_index("term").reindex(terms)
        x = [scaled(sub.loc[s, "coef_protected"], s) for s in terms]
        lo = [x[j] - scaled(sub.loc[s, "lo_protected"], s) for j, s in enumerate(terms)]
        hi = [scaled(sub.loc[s, "hi_protected"], s) - x[j] for j, s in enumerate(terms)]
        fig.add_scatter(x=x, y=terms, mode="markers", name=str(cfg), marker=dict(color=_color(str(cfg), i + 1), size=9),
                        error_x=dict(type="data", symmetric=False, array=hi, arrayminus=lo),
                        customdata=[[sub.loc[s, "coef_protected"], sub.loc[s, "lo_protected"],
                                     sub.loc[s, "hi_protected"], sub.loc[s, "overlap"]] for s in terms],
                        hovertemplate=f"%{{y}}, {cfg}: %{{customdata[0]:.4g}} [%{{customdata[1]:.4g}}, "
                                      f"%{{customdata[2]:.4g}}], overlap %{{customdata[3]:.2f}}<extra></extra>")
    fig.add_vline(x=-1, line=dict(color="#bbb", dash="dot"))
    fig.add_vline(x=1, line=dict(color="#bbb", dash="dot"))
    fig.update_layout(title=f"{model}: coefficients and 95 % intervals",
                      xaxis=dict(title="distance from the original's estimate, in half-widths of its 95 % interval"),
                      yaxis=dict(autorange="reversed"), height=max(260, 60 * len(terms) + 140),
                      legend=dict(orientation="h", y=-0.35), **_LAYOUT)
    return fig


def history_pair(a: dict, b: dict):
    """Two runs side by side: their settings (options, seed, roles, design), scores and
    per-variable risk; a '*' marks the settings that differ."""
    def flat(h):
        out = {f"option: {k}": json_text(v) for k, v in sorted(h["options"].items())}
        out["seed"] = str(h["seed"])
        st_ = h["settings"]
        roles = st_.get("roles") or {}
        out["sensitive"] = ", ".join(c for c, r in roles.items() if r == "sensitive") or "none (general)"
        out["identifiers"] = ", ".join(c for c, r in roles.items() if r == "identifier") or "none"
        out["floors"] = json_text(st_.get("floors"))
        out["plausible values"] = json_text(st_.get("plausible"))
        out["data"] = h["data_name"]
        return out

    fa, fb = flat(a), flat(b)
    keys = list(dict.fromkeys(list(fa) + list(fb)))
    la, lb = f"#{a['id']} {a['label']}", f"#{b['id']} {b['label']}"
    if la == lb:
        lb += " "
    opts = pd.DataFrame({la: [fa.get(k, "") for k in keys], lb: [fb.get(k, "") for k in keys]},
                        index=[("* " if fa.get(k) != fb.get(k) else "") + k for k in keys])
    skeys = [k for k in SCORE_NAMES if k in a["scores"] or k in b["scores"]]
    va = [a["scores"].get(k) for k in skeys]
    vb = [b["scores"].get(k) for k in skeys]
    pct = lambda v: "" if v is None or v != v else f"{100 * v:.2f} %"  # noqa: E731
    scores = pd.DataFrame({la: [pct(v) for v in va], lb: [pct(v) for v in vb],
                           "difference": [pct(y - x) if x is not None and y is not None else "" for x, y in zip(va, vb)]},
                          index=[SCORE_NAMES[k] for k in skeys])
    risk = None
    if a.get("risk") is not None and b.get("risk") is not None:
        cols = [c for c in ("prior", "beyond_prior", "perturbed_share", "close_own", "close_linked")
                if c in a["risk"] and c in b["risk"]]
        both = a["risk"][cols].add_suffix(f" {la}").join(b["risk"][cols].add_suffix(f" {lb}"), how="outer")
        risk = both.apply(lambda col: col.astype(float).map(pct))
        words = risk_columns()
        risk.columns = [words.get(c.rsplit(" #", 1)[0], c.rsplit(" #", 1)[0]) + " #" + c.rsplit(" #", 1)[1]
                        for c in both.columns]
    return opts, scores, risk


def json_text(v) -> str:
    import json

    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def live_runs_table(runs: pd.DataFrame, sensitive: bool) -> pd.DataFrame:
    """The comparison while it runs: per method, the runs done, the share meeting every risk
    floor and the mean of its main scores so far (a pure table builder for the Run page)."""
    if runs is None or len(runs) == 0:
        return pd.DataFrame(columns=["method", "runs done", "runs meeting every floor"])
    scores = [k for k in (("validity_loss", "dbrl", "id") if sensitive else ("dbrl", "id", "pil", "ps"))
              if k in runs.columns]
    g = runs.groupby("config", sort=False)
    out = pd.DataFrame({"runs done": g.size(), "runs meeting every floor": g.floors_ok.mean().map(lambda v: f"{v:.0%}")})
    for k in scores:
        out[f"{SCORE_NAMES[k]} (mean so far)"] = g[k].mean().round(4)
    return out.rename_axis("method").reset_index()
