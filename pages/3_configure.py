"""Page 3: configure FA, PCA, M-AGG, rank swapping, PCA-R, IPSO, shuffling and conditional FA, with live
loading plots."""

import streamlit as st

import sdccore
from ui import common, compute, figures, runs, session, shell, widgets, words
shell.enter()  # a page opened on its own is run inside app.py (ui/shell.py)
st.title("Configure")
st.caption("Each method's settings are remembered. The plots show what will be perturbed before anything runs.")

def _perturbation_widgets(prefix, cfg, out):
    pert = widgets.choice(st, prefix, "perturbation", cfg, f"{prefix}_perturbation")
    out["perturbation"] = pert
    for o in sdccore.option_schema(prefix):
        if o.applies is None or o.name not in ("p", "noise_sd", "k") or not o.applies(out, None):
            continue
        n = len(session.data())
        if o.name == "k":  # groups of k need at least two groups
            out["k"] = widgets.number(st, prefix, "k", cfg, f"{prefix}_param_k", high=max(2, n // 2))
        elif o.name == "p":  # the window is floor(p n / 100) ranks: below one rank nothing is swapped
            out["p"] = widgets.number(st, prefix, "p", cfg, f"{prefix}_param_p", low=max(0.1, session.min_swap_percent()))
        else:
            out[o.name] = widgets.number(st, prefix, o.name, cfg, f"{prefix}_param_{o.name}", high=1000.0)


def _selection_widgets(prefix, cfg, out, key, word, sens, names):
    """The factors (components) to perturb: 'all', 'auto' (a criterion) or a mask of
    ``names`` (the decomposition's F1.. or PC1..), as the schema's option ``key`` takes them."""
    spec = widgets.spec(prefix, key)
    modes = ["all", "criterion", "manual"] if sens else ["all", "manual"]
    cur = cfg.get(key, widgets.default(prefix, key, bool(sens)))
    mode_now = "criterion" if cur == "auto" else ("all" if cur == "all" else "manual")
    labels = {"all": f"all {word}s", "criterion": "by a criterion on the loadings", "manual": "choose by hand"}
    mode = st.radio(spec.label, modes, index=modes.index(mode_now) if mode_now in modes else 0, help=spec.help,
                    format_func=labels.get, horizontal=True, key=f"{prefix}_selection")
    if mode == "all":
        out[key] = "all"
    elif mode == "criterion":
        out[key] = "auto"
        if prefix == "fa":
            out["criterion"] = widgets.choice(st, "fa", "criterion", cfg, "fa_criterion")
        thr = widgets.spec(prefix, "threshold")
        if thr.applies(out, None):
            out["threshold"] = st.slider(thr.label, float(thr.low), float(thr.high), float(cfg.get("threshold", thr.default)), 0.05,
                                         key=f"{prefix}_threshold", help=thr.help)
    else:
        chosen = cur if isinstance(cur, list) else [1]
        cols = st.columns(min(len(names), 7) or 1)
        picked = []
        for i, name in enumerate(names):
            if cols[i % len(cols)].checkbox(name, value=(i + 1) in chosen, key=f"{prefix}_mask_{i + 1}"):
                picked.append(i + 1)
        out[key] = picked or [1]
        if not picked:
            st.warning(f"Choose at least one {word}; {word} 1 is used until you do.")


def floors_section():
    fl = session.floors()
    small = runs.small_file_warning()
    if small:
        st.warning(small)
    with st.expander("Risk floors: every sensitive variable, and its largest records, must meet them"):
        st.caption("No release that breaks a floor can be downloaded. Defaults: at most 20 % of records put "
                   "within 5 % of their true value beyond what the intruder's knowledge alone predicts (the prior), "
                   "by every intruder (own record, linked record, reconstruction, assignment of the released values, "
                   "identities between columns), overall, in every size band and among the largest 1 % of records; "
                   "at least 30 % of each sensitive variable's variance perturbed and |cor(original, protected)| at "
                   "most 0.90 (in selective protection: of the part the public variables do not explain).")
        c1, c2, c3, c4, c5, c6 = st.columns(6)
        new = {  # every floor drawn from sdccore.option_schema("floors"): labels, units, limits, defaults
            "min_perturbed_share": widgets.number(c1, "floors", "min_perturbed_share", fl, "floor_share", step=5.0),
            "max_abs_cor": widgets.number(c2, "floors", "max_abs_cor", fl, "floor_cor", step=0.05),
            "tolerance": widgets.number(c3, "floors", "tolerance", fl, "floor_tolerance", step=1.0),
            "max_close_share": widgets.number(c4, "floors", "max_close_share", fl, "floor_close", step=5.0),
            "bands": widgets.number(c5, "floors", "bands", fl, "floor_bands", high=20),
            "top_records": widgets.number(c6, "floors", "top_records", fl, "floor_top"),
            "hold_all_intruders": widgets.flag(st, "floors", "hold_all_intruders", fl, "floor_all_intruders"),
        }
        session.set_floors(new)
        lowered = sdccore.RiskFloors.from_value(session.floors()).lowered_text()
        if lowered:
            st.warning(f"The {lowered}. A release under these floors says so on every output (report, codebook, "
                       f"Download page) and needs your reason:")
            session.set_floors_reason(st.text_input("Reason for floors below the defaults (e.g. internal file, not "
                                                  "published)", value=session.floors_reason() or "",
                                                  key="floor_reason"))
    pv = session.plausible()
    with st.expander("Plausible values: scale, bounds, rounding, largest records (all methods)"):
        c1, c2, c3, c4 = st.columns(4)
        # the same options for every method: FA's schema entries stand for all
        session.set_plausible({
            "transform": widgets.choice(c1, "fa", "transform", pv, "pv_transform"),
            "bounds": widgets.choice(c2, "fa", "bounds", pv, "pv_bounds"),
            "rounding": widgets.choice(c3, "fa", "rounding", pv, "pv_rounding"),
            "tail": widgets.choice(c4, "fa", "tail", pv, "pv_tail"),
        })


def risk_preview(method, cfg):
    """One run with the session's seed, checked against the floors (figures only)."""
    sens = session.sensitive()
    risk, plaus, notes = compute.preview(cfg)
    if sdccore.method_info(method).conditional:
        for note in notes:
            if not note.startswith(("protected on the log scale", "sampling weights")):
                st.info(note)
    # the verdict first, above the method's settings, in one line whose height hardly changes with
    # the settings (a block of findings there moved the widgets under the pointer); the findings,
    # each with its fix, below (issue 41)
    with _TOP[-1] if _TOP else st.container():
        known = words.prior_warning(risk)
        if known:
            st.warning(known)
        if risk.ok:
            st.success("This configuration: every " + ("sensitive " if sens else "") + "variable meets the risk "
                       "floors in one run with seed " + str(session.seed())
                       + (" (but see above: most of it was known already)." if known else "."))
        else:
            broken = list(dict.fromkeys(v.split(":", 1)[0] for v in risk.violations))
            st.error(f"This configuration breaks the risk floors for {', '.join(broken[:4])}"
                     f"{f' and {len(broken) - 4} more' if len(broken) > 4 else ''} in one run with seed "
                     f"{session.seed()}: {len(risk.violations)} finding(s), each with its fix, under "
                     f"**Residual risk** below.")
    st.subheader("Residual risk of this configuration (one run, seed " + str(session.seed()) + ")")
    if not risk.ok:
        for v in risk.violations[:4]:
            st.error(words.violation(v))
        if len(risk.violations) > 4:
            st.error(f"... and {len(risk.violations) - 4} more violation(s): the table below shows every variable.")
    widgets.table(st, figures.risk_table(risk.variables), key=f"{method}_risk_table")  # full width: every column
    c1, c2 = st.columns(2)
    c2.plotly_chart(figures.band_risk_figure(risk.bands, risk.floors.max_close_share, risk.floors.tolerance),
                    key=f"{method}_band_plot")
    c1.markdown(figures.risk_sentences(risk))
    with st.expander("Plausible values: log scale, bounds, rounding, and what they change"):
        st.caption("Log scale keeps means and covariances on the log scale, not exactly on the original one: the "
                   "change of the mean is shown in original standard deviations. Values below 0 of a variable that "
                   "has none are set to 0 (clipped). Values are rounded to the original's decimals.")
        widgets.table(st, figures.plausibility_table(plaus), key=f"{method}_plausibility_table")


def _plots(method, cfg, sens, prefix):
    dec = compute.decompose(method, cfg)
    for var, share in dec.below_floor:
        st.error(f"{var}: only {share:.1%} of its variance is perturbed by this choice (floor "
                 f"{session.floors()['min_perturbed_share']:.0%}): no release can be made with it. Perturb the factors "
                 f"that carry {var} (framed in the loadings plot when chosen).")
    c1, c2 = st.columns(2)
    c1.plotly_chart(figures.loadings_heatmap(dec.loadings, sens or (), dec.perturbed), key=f"{prefix}_loadings_plot")
    c2.plotly_chart(figures.perturbed_share_figure(dec.perturbed_share, sens or (), session.floors()["min_perturbed_share"]),
                    key=f"{prefix}_share_plot")
    st.caption(f"Perturbed: {', '.join(str(c) for c in dec.loadings.columns[[p - 1 for p in dec.perturbed]])} · "
               f"they carry {dec.variance.iloc[[p - 1 for p in dec.perturbed]].sum() * 100:.1f} % of the total variance.")
    for note in dec.notes:
        st.info(note)


def fa_tab(sens, m):
    cfg = session.config("fa")
    out = {"method": "fa"}
    c1, c2, c3 = st.columns(3)
    out["n_factors"] = widgets.number(c1, "fa", "n_factors", {"n_factors": min(cfg.get("n_factors", m), m)},
                                      "fa_n_factors", high=m)
    out["extraction"] = widgets.choice(c2, "fa", "extraction", cfg, "fa_extraction")
    out["rotation"] = widgets.choice(c3, "fa", "rotation", cfg, "fa_rotation",
                                     choices=widgets.spec("fa", "rotation").allowed(bool(sens)),
                                     default=widgets.default("fa", "rotation", bool(sens)))
    probe = compute.decompose("fa", {**out, "factors": "all"})
    _selection_widgets("fa", cfg, out, "factors", "factor", sens, list(probe.loadings.columns))
    c4, c5 = st.columns(2)
    with c4:
        _perturbation_widgets("fa", cfg, out)
    with c5:
        out["residuals"] = widgets.choice(st, "fa", "residuals", cfg, "fa_residuals",
                                          default=widgets.default("fa", "residuals", bool(sens)))
        out["scores"] = widgets.choice(st, "fa", "scores", cfg, "fa_scores")
    session.set_config("fa", out)
    _plots("fa", out, sens, "fa")
    risk_preview("fa", out)


def pca_tab(sens, m):
    cfg = session.config("pca")
    out = {"method": "pca"}
    names = list(compute.decompose("pca", {"method": "pca", "components": "all"}).loadings.columns)
    _selection_widgets("pca", cfg, out, "components", "component", sens, names)
    _perturbation_widgets("pca", cfg, out)
    session.set_config("pca", out)
    _plots("pca", out, sens, "pca")
    risk_preview("pca", out)


def magg_tab(n):
    cfg = session.config("magg")
    if n < 4:
        st.error(f"M-AGG needs at least 4 records (two groups of at least 2); the data have {n}. Use FA or PCA, or a "
                 f"file with more records.")
        return
    c1, c2 = st.columns(2)
    k = widgets.number(c1, "magg", "k", cfg, "magg_k", high=max(2, n // 2))
    noise = widgets.choice(c2, "magg", "noise_model", cfg, "magg_noise")
    session.set_config("magg", {"method": "magg", "k": int(k), "noise_model": noise})
    sens = session.sensitive()
    st.caption("M-AGG aggregates " + (f"only the sensitive variables ({', '.join(sens)})" if sens else "all variables")
               + " into groups of at least k similar records, then adds noise restoring the variance the groups removed.")
    risk_preview("magg", session.config("magg"))


def rankswap_tab():
    cfg = session.config("rankswap")
    p = widgets.number(st, "rankswap", "p", cfg, "rankswap_p", low=max(0.1, session.min_swap_percent()))
    session.set_config("rankswap", {"method": "rankswap", "p": float(p)})
    sens = session.sensitive()
    st.caption("Rank swapping exchanges the values of " + (f"the sensitive variables only ({', '.join(sens)}), "
               "leaving the public variables unchanged, so nothing in them shows what changed" if sens else
               "every variable, each on its own") + ". Every marginal distribution is kept exactly; correlations "
               "weaken as p grows.")
    risk_preview("rankswap", session.config("rankswap"))


def ipso_tab():
    """IPSO: the public variables stay as they are, the sensitive ones are the OLS fit plus
    residuals passed between records."""
    out = {"method": "ipso", "classes": widgets.number(st, "ipso", "classes", session.config("ipso"), "ipso_classes",
                                                       high=max(1, len(session.data()) // 2))}
    if session.has_missing_cells():
        out["missing_rows"] = widgets.choice(st, "ipso", "missing_rows", session.config("ipso"), "ipso_missing_rows")
    st.caption(f"Regression-preserving (IPSO, Burridge 2003): {', '.join(session.sensitive())} = the fit of the OLS on "
               f"the public variables + residuals passed from record to record (none keeps its own), made orthogonal "
               f"to the public variables and rescaled. The OLS of each sensitive variable on the public ones, every "
               f"mean and the covariance matrix are kept exactly (before bounds and rounding); residuals are "
               f"exchanged where a value would fall below 0.")
    session.set_config("ipso", out)
    risk_preview("ipso", session.config("ipso"))


def shuffle_tab():
    st.caption(f"Data shuffling (Muralidhar and Sarathy 2006; sdcMicro's shuffle, method 'ds'): a draw of "
               f"{', '.join(session.sensitive())} given the public variables on normal scores, then the ORIGINAL values "
               f"handed out in the order of that draw. Each sensitive variable keeps its values exactly (every "
               f"released value is a real one); rank correlations are kept in expectation, linear regressions less "
               f"so.")
    session.set_config("shuffle", {"method": "shuffle"})
    risk_preview("shuffle", session.config("shuffle"))


def cfa_tab(m):
    """Conditional FA: the factor model's law of the sensitive variables given the public ones."""
    cfg = session.config("cfa")
    out = {"method": "cfa"}
    c1, c2 = st.columns(2)
    nf = widgets.number(c1, "cfa", "n_factors", {"n_factors": int(cfg.get("n_factors") or 0)}, "cfa_n_factors",
                        low=0, high=m, label=widgets.spec("cfa", "n_factors").label + " (0 = Kaiser's rule)")
    if nf:
        out["n_factors"] = int(nf)
    out["extraction"] = widgets.choice(c2, "cfa", "extraction", cfg, "cfa_extraction")
    st.caption(f"Factor analysis in a safe form: the factor model's law of {', '.join(session.sensitive())} given the "
               f"public variables (conditional mean and covariance of the fitted model) is drawn from; the public "
               f"variables stay as they are. Each factor's part that the public variables do not determine is "
               f"redrawn (the notes below say per factor how much that is). Means exact; covariances the model's.")
    session.set_config("cfa", out)
    risk_preview("cfa", session.config("cfa"))


METRIC_TEXT = widgets.spec("pca_remove", "metric").choice_text


def pca_remove_tab(m):
    cfg = session.config("pca_remove")
    st.caption("D'Acquisto and Naldi's method: remove the largest principal components one at a time and project "
               "back onto the variables, while a utility metric stays acceptable. It keeps every mean exactly but "
               "NOT the variances and covariances (each variable loses the share the removed components carry, "
               "shown below), and it changes every variable, also the public ones. Deterministic: every seed gives "
               "the same file.")
    curve = compute.removal_curve()
    table = curve.table
    c1, c2, c3 = st.columns(3)
    modes = ["stop", "fixed"]
    mode = c1.radio("How many to remove", modes, index=0 if cfg.get("removed", "auto") == "auto" else 1,
                    format_func={"stop": "by a utility stop", "fixed": "a fixed number"}.get, key="pcar_mode")
    metric = widgets.choice(c2, "pca_remove", "metric", cfg, "pcar_metric")
    out = {"method": "pca_remove", "metric": metric}
    higher = sdccore.UTILITY_METRICS[metric][1]
    if mode == "stop":
        default = cfg.get("threshold") if cfg.get("metric") == metric and "threshold" in cfg else (
            0.5 if metric == "correlation" else float(f"{table[metric].iloc[min(2, len(table) - 1)]:.3g}"))
        thr = c3.number_input(("Keep it at least" if higher else "Keep it at most"), value=float(default),
                              key="pcar_threshold", format="%.4g", help=widgets.spec("pca_remove", "threshold").help)
        out.update(removed="auto", threshold=float(thr))
    else:
        top = max(1, min(m - 1, int(table.removed.max())))
        now = cfg.get("removed") if cfg.get("removed") not in (None, "auto") else 2
        r = widgets.number(c3, "pca_remove", "removed", {"removed": min(max(int(now), 1), top)}, "pcar_removed",
                           high=top)
        out.update(removed=int(r))
    session.set_config("pca_remove", out)
    dec = compute.decompose("pca_remove", out)
    chosen = len(dec.perturbed)
    st.plotly_chart(figures.removal_curve_figure(table, metric, METRIC_TEXT[metric].split(" (")[0],
                                                 out.get("threshold"), chosen, session.floors()["min_perturbed_share"]),
                    key="pcar_curve_plot")
    row = table[table.removed == chosen]
    if len(row):
        row = row.iloc[0]
        st.info(f"{chosen} of {m} components removed: {row.variance_removed:.1%} of the total variance. Means are kept "
                f"exactly (before bounds and rounding); each variable keeps {1 - dec.perturbed_share.max():.1%} to "
                f"{1 - dec.perturbed_share.min():.1%} of its variance; correlations change by up to "
                f"{row.max_cor_change:.2f}.")
    _plots("pca_remove", out, session.sensitive(), "pcar")
    risk_preview("pca_remove", out)


def body():
    if not compute.ready():
        return
    compute.warm_up()  # the Run page's worker processes start while the user configures
    sens = session.sensitive()
    m = len(session.protect_columns())
    # one method at a time: only the chosen method's widgets and live plots are computed
    floors_section()
    method = st.radio("Method", session.offered_methods(), horizontal=True, key="config_method",
                      help="PCA-R: removal of the largest principal components (D'Acquisto and Naldi). IPSO, Shuffle, "
                           "FA-cond and Q-exchange (offered with sensitive and public variables) keep the public "
                           "variables and redraw the sensitive ones given them; Q-exchange keeps each record between "
                           "the same regression quantiles (the median and tail regressions).")
    method_section(method, sens, m)


_TOP = []  # the method section's first place, per run (a fragment's rerun adds its own)


@st.fragment
def method_section(method, sens, m):
    """The chosen method's widgets and live plots.  A fragment: changing one of its widgets
    reruns only this part of the page (not the floors, the method choice or the sidebar),
    which is what keeps each Configure interaction quick in the browser."""
    code = common.method_of(method)
    _TOP.append(st.container())  # where risk_preview puts its verdict: above the settings
    tab = TABS.get(code)
    if tab is not None:
        session.safe(lambda: tab(code, sens, m))
    else:  # a registered method without a tab of its own: its schema's widgets
        session.safe(lambda: schema_tab(code))


def schema_tab(method):
    cfg = session.config(method)
    st.caption(f"{sdccore.method_info(method).label}: the options of its schema (sdccore.option_schema).")
    out = widgets.schema_widgets(st, method, cfg, f"cfg_{method}")
    session.set_config(method, out)
    risk_preview(method, session.config(method))


# each built-in method's own tab (its plots and explanations); any other registered method
# gets the widgets of its schema
TABS = {
    "fa": lambda code, sens, m: fa_tab(sens, m),
    "pca": lambda code, sens, m: pca_tab(sens, m),
    "magg": lambda code, sens, m: magg_tab(len(session.data())),
    "rankswap": lambda code, sens, m: rankswap_tab(),
    "ipso": lambda code, sens, m: ipso_tab(),
    "shuffle": lambda code, sens, m: shuffle_tab(),
    "cfa": lambda code, sens, m: cfa_tab(m),
    "pca_remove": lambda code, sens, m: pca_remove_tab(m),
}


session.safe(body)
