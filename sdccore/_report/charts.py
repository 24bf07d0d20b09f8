"""The report's charts (plotly figure builders, results in, figures out; the dashboard draws the
same ones): risk against utility per configuration, every measure, |cor(original, protected)|
per variable, and the share within the tolerance per size band."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from .labels import SCORE_NAMES

# A template passed per figure is deep-copied and validated every time (25 ms a figure);
# the default template is applied once, at serialisation.
pio.templates.default = "plotly_white"

COLORS = {"FA": "#1f77b4", "PCA": "#ff7f0e", "M-AGG": "#2ca02c", "Rank swap": "#8c564b", "PCA-R": "#9467bd",
          "IPSO": "#d62728", "Shuffle": "#17becf", "FA-cond": "#bcbd22"}
LAYOUT = dict(margin=dict(l=10, r=10, t=50, b=10), font=dict(size=13))


def color(label, i=0):
    return COLORS.get(label, ["#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"][i % 6])


SPREADS = {"runs": ("_run_lo", "_run_hi", "whiskers: single runs, 2.5-97.5 %"),
           "mean": ("_lo", "_hi", "whiskers: 95 % interval of the mean")}


UTILITY_AXES = {
    "validity_loss": ("analysis validity lost", "analysis validity lost = 1 - validity of the worst-kept sensitive "
                                                "variable (its regression, correlations, distribution)"),
    "utility_loss": ("utility loss", "utility loss = mean of PIL and PS (all variables)"),
}


def risk_utility_figure(ru: pd.DataFrame, spread="runs", utility="utility_loss", refused=()):
    """Risk against a utility loss per configuration (``utility``: 'utility_loss', the mean
    of PIL and PS, or 'validity_loss', 1 - analysis validity); whiskers: the range of single
    runs (default: a user releases one run) or the interval of the mean (``spread='mean'``).
    Configurations in ``refused`` (some run broke a risk floor) are drawn as open crosses in
    their colour and named so in the legend: they cannot be released.  The legend names every
    point (labels on the chart collide when configurations lie close)."""
    lo, hi, what = SPREADS[spread]
    if utility not in ru:
        utility = "utility_loss"
    short, title = UTILITY_AXES[utility]
    fig = go.Figure()
    for i, r in enumerate(ru.itertuples()):
        rlo, rhi = getattr(r, "risk" + lo), getattr(r, "risk" + hi)
        u = getattr(r, utility)
        ulo, uhi = getattr(r, utility + lo), getattr(r, utility + hi)
        bad = r.config in set(refused)
        name = f"{r.config} (refused)" if bad else r.config
        fig.add_scatter(x=[r.risk], y=[u], mode="markers",
                        name=name, marker=dict(size=16 if bad else 14, color=color(r.config, i),
                                               line=dict(width=2, color=color(r.config, i)),
                                               symbol="x-thin-open" if bad else "circle"),
                        error_x=dict(type="data", symmetric=False, array=[rhi - r.risk], arrayminus=[r.risk - rlo]),
                        error_y=dict(type="data", symmetric=False, array=[uhi - u], arrayminus=[u - ulo]),
                        hovertemplate=(f"{name}<br>risk %{{x:.3f}} [{rlo:.3f}, {rhi:.3f}]<br>"
                                       f"{short} %{{y:.3f}} [{ulo:.3f}, {uhi:.3f}]<extra></extra>"))
    fig.update_layout(title=f"Risk and {short} ({what})",
                      xaxis=dict(title="disclosure risk = mean of DBRL and ID",
                                 range=[0, max(0.05, float(ru["risk" + hi].max()) * 1.15)]),
                      yaxis=dict(title=title if len(title) < 60 else short,
                                 range=[0, max(0.05, float(ru[utility + hi].max()) * 1.2)]), height=440, **LAYOUT)
    return fig


def measures_figure(summary: pd.DataFrame, spread="runs"):
    """One group of bars per score, one bar per configuration, with whiskers: the range of
    single runs (default) or the interval of the mean."""
    lo, hi, what = SPREADS[spread]
    lo, hi = lo.lstrip("_"), hi.lstrip("_")
    fig = go.Figure()
    keys = [k for k in SCORE_NAMES if k in set(summary.score)]
    for i, cfg in enumerate(dict.fromkeys(summary.config)):
        sub = summary[summary.config == cfg].set_index("score").reindex(keys)
        fig.add_bar(x=[SCORE_NAMES[k] for k in keys], y=sub["mean"], name=cfg, marker_color=color(cfg, i),
                    error_y=dict(type="data", symmetric=False, array=sub[hi] - sub["mean"],
                                 arrayminus=sub["mean"] - sub[lo]),
                    hovertemplate="%{x}: %{y:.4f}<extra>" + cfg + "</extra>")
    fig.update_layout(barmode="group", title=f"Every measure (0 is best; {what})",
                      yaxis=dict(title="score", range=[0, 1]), height=420, **LAYOUT)
    return fig


def own_correlation_figure(ic: pd.DataFrame):
    """|cor(x, x')| per variable: low for sensitive (scrambled), high for public (kept)."""
    colors = ["#d62728" if s else "#1f77b4" for s in ic.sensitive]
    fig = go.Figure(go.Bar(x=ic.abs_cor, y=list(map(str, ic.index)), orientation="h", marker_color=colors,
                           hovertemplate="%{y}: |cor(original, protected)| = %{x:.3f}<extra></extra>"))
    fig.update_layout(title="|cor(original, protected)| (red: sensitive)",
                      xaxis=dict(title="|cor(x, x')|", range=[0, 1]), yaxis=dict(autorange="reversed"),
                      height=max(320, 24 * len(ic) + 120), **LAYOUT)
    return fig


MAX_BAND_LINES = 8  # more configuration x variable lines than this: one line per configuration
MAX_SHOWN = 6  # lines drawn at once; the others in the legend


def band_risk_figure(bands: pd.DataFrame, limit=None, tolerance=0.05, value=None):
    """Share of records within the tolerance of their true value that the release adds beyond
    the prior (the floored figure), by size band of the original value (1 = smallest), one line
    per variable (or per configuration and variable), with the prior (what the intruder's
    knowledge alone gives) dotted beside it."""
    fig = go.Figure()
    if value is None:
        value = next(c for c in ("beyond_prior", "beyond_mean", "close_own", "close_mean") if c in bands.columns)
    key = ["config", "variable"] if "config" in bands.columns else ["variable"]
    worst = ""
    if "config" in bands.columns and bands.groupby(key, sort=False).ngroups > MAX_BAND_LINES:
        # many configurations x variables: one line per configuration, its worst variable in each band
        # (a legend of dozens of entries covers the chart)
        agg = {value: "max", **({"prior": "max"} if "prior" in bands else {})}
        bands = bands.groupby(["config", "band"], sort=False).agg(agg).reset_index()
        key, worst = ["config"], " (worst sensitive variable per band)"
    groups = list(bands.groupby(key, sort=False))
    # beyond a handful of lines the chart is unreadable: the MAX_SHOWN with the highest figure are
    # drawn, the others wait in the legend (a click shows one, with its prior)
    top = sorted(range(len(groups)), key=lambda j: -float(groups[j][1][value].max()))[:MAX_SHOWN]
    if len(groups) > MAX_SHOWN:
        worst += f" ({MAX_SHOWN} highest of {len(groups)} drawn; the legend shows the others)"
    for i, (name, sub) in enumerate(groups):
        label = " / ".join(map(str, name)) if isinstance(name, tuple) else str(name)
        shade = color(name[0] if isinstance(name, tuple) else label, i)
        shown = True if i in top else "legendonly"
        fig.add_scatter(x=sub.band, y=sub[value] * 100, mode="lines+markers", name=label, line=dict(color=shade),
                        legendgroup=label, visible=shown,
                        hovertemplate="band %{x}: the release finds %{y:.1f} % of records more<extra>"
                                      + label + "</extra>")
        if "prior" in sub:
            fig.add_scatter(x=sub.band, y=sub.prior * 100, mode="lines", name=f"{label}: prior", showlegend=False,
                            line=dict(color=shade, dash="dot", width=1), legendgroup=label, visible=shown,
                            hovertemplate="band %{x}: the public variables alone already get %{y:.1f} % of this "
                                          "band's records<extra>" + label + " prior</extra>")
    if limit is not None:
        fig.add_hline(y=limit * 100, line_dash="dash", line_color="#d62728", annotation_text=f"floor {limit * 100:.0f} %")
    # the dotted prior is per band: in a band where values crowd together (the middle ones) a guess at
    # the typical size is already close for many records, so it reads far above the overall figure
    # (27-72 % by band against 13 % overall on a persons file), which a custodian took for a fault
    fig.update_layout(title=f"Within {tolerance * 100:.0f} % of the truth: found more by the release{worst}"
                            f"<br><sup>dotted: what the public variables alone already get in that band,<br>"
                            f"highest where values crowd together (above the whole file's figure)</sup>",
                      xaxis=dict(title="size band of the original value (1 smallest; top 1 %: the largest records;<br>"
                                       "highest leverage: the records extreme public values single out)",
                                 type="category"),
                      yaxis=dict(title="% of the band's records", rangemode="tozero"), height=480,
                      legend=dict(orientation="h", yanchor="top", y=-0.55, x=0),
                      **{**LAYOUT, "margin": dict(LAYOUT["margin"], t=95)})
    return fig


