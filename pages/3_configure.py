"""Page 3: configure FA, PCA, M-AGG, rank swapping and PCA-R, with live loading plots."""

import streamlit as st

import sdccore
from ui import figures, state

st.title("Configure")
st.caption("Each method's settings are remembered. The plots show what will be perturbed before anything runs.")

PERTURBATIONS = ["swap", "rankswap", "noise", "microagg", "microagg_noise", "bootstrap", "synthetic", "round"]
PARAM = {"rankswap": ("p", "Rank window p (% of records)", 15.0, 0.1, 100.0),
         "noise": ("noise", "Noise sd (% of the factor's sd)", 50.0, 0.1, 1000.0),
         "microagg": ("k", "Group size k", 3, 2, 100), "microagg_noise": ("k", "Group size k", 3, 2, 100)}


def _perturbation_widgets(prefix, cfg, out):
    pert = st.selectbox("Perturbation of each factor", PERTURBATIONS,
                        index=PERTURBATIONS.index(cfg.get("perturbation", "swap")), key=f"{prefix}_perturbation",
                        help="swap: random permutation (the papers' choice; keeps every factor's distribution).")
    out["perturbation"] = pert
    if pert in PARAM:
        name, label, default, lo, hi = PARAM[pert]
        n = len(state.data())
        if name == "k":
            hi = max(lo, min(hi, n // 2))  # groups of k need at least two groups
        if name == "p":
            # the window is floor(p n / 100) ranks: below one rank nothing is swapped
            lo = max(lo, state.min_swap_percent())
        cur = min(max(cfg.get(name, default), lo), hi)
        if isinstance(default, int):
            val = st.number_input(label, min_value=lo, max_value=hi, value=int(cur), step=1, key=f"{prefix}_param_{name}")
            out[name] = int(val)
        else:
            val = st.number_input(label, min_value=lo, max_value=hi, value=float(cur), key=f"{prefix}_param_{name}",
                                  help=f"At least {lo:g} % on {n} records: a smaller window swaps nothing." if name == "p" else None)
            out[name] = float(val)


def _selection_widgets(prefix, cfg, out, key, word, sens, n_items):
    modes = ["all", "criterion", "manual"] if sens else ["all", "manual"]
    cur = cfg.get(key, "auto" if sens else "all")
    mode_now = "criterion" if cur == "auto" else ("all" if cur == "all" else "manual")
    labels = {"all": f"all {word}s", "criterion": "by a criterion on the loadings", "manual": "choose by hand"}
    mode = st.radio(f"{word.capitalize()}s to perturb", modes, index=modes.index(mode_now) if mode_now in modes else 0,
                    format_func=labels.get, horizontal=True, key=f"{prefix}_selection")
    if mode == "all":
        out[key] = "all"
    elif mode == "criterion":
        out[key] = "auto"
        if prefix == "fa":
            crits = ["sensitive_threshold", "public_threshold", "sensitive_over_public"]
            names = {"sensitive_threshold": "|loading| >= t on a sensitive variable",
                     "public_threshold": "all but those with |loading| >= t on a public variable",
                     "sensitive_over_public": "loading larger on sensitive than on public variables"}
            crit = st.selectbox("Criterion", crits, index=crits.index(cfg.get("criterion", "sensitive_threshold")),
                                format_func=names.get, key="fa_criterion")
            out["criterion"] = crit
            if crit != "sensitive_over_public":
                out["threshold"] = st.slider("Threshold t", 0.0, 1.0, float(cfg.get("threshold", 0.3)), 0.05, key="fa_threshold")
        else:
            out["threshold"] = st.slider("Threshold t (|loading| on a sensitive variable)", 0.0, 1.0,
                                         float(cfg.get("threshold", 0.3)), 0.05, key="pca_threshold")
    else:
        chosen = cur if isinstance(cur, list) else [1]
        cols = st.columns(min(n_items, 7) or 1)
        picked = []
        for i in range(n_items):
            if cols[i % len(cols)].checkbox(f"{'F' if prefix == 'fa' else 'PC'}{i + 1}", value=(i + 1) in chosen,
                                            key=f"{prefix}_mask_{i + 1}"):
                picked.append(i + 1)
        out[key] = picked or [1]
        if not picked:
            st.warning(f"Choose at least one {word}; {word} 1 is used until you do.")


def floors_section():
    fl = state.floors()
    with st.expander("Risk floors: every sensitive variable, and its largest records, must meet them"):
        st.caption("No release that breaks a floor can be downloaded. Defaults: at least 30 % of each sensitive "
                   "variable's variance perturbed, |cor(original, protected)| at most 0.90, at most 20 % of records "
                   "within 5 % of their true value (own record and the record an intruder links), in every size band "
                   "and among the largest 1 % of records.")
        c1, c2, c3, c4, c5 = st.columns(5)
        new = {
            "min_perturbed_share": c1.number_input("Perturbed share at least (%)", 0.0, 100.0,
                                                   fl["min_perturbed_share"] * 100, 5.0, key="floor_share") / 100,
            "max_abs_cor": c2.number_input("|cor(x, x')| at most", 0.0, 1.0, fl["max_abs_cor"], 0.05, key="floor_cor"),
            "tolerance": c3.number_input("Tolerance (% of the value)", 0.1, 100.0, fl["tolerance"] * 100, 1.0,
                                         key="floor_tolerance") / 100,
            "max_close_share": c4.number_input("Records within it at most (%)", 0.0, 100.0,
                                               fl["max_close_share"] * 100, 5.0, key="floor_close") / 100,
            "bands": int(c5.number_input("Size bands", 1, 20, int(fl["bands"]), 1, key="floor_bands")),
        }
        state.set_floors(new)
    pv = state.plausible()
    with st.expander("Plausible values: scale, bounds, rounding (all methods)"):
        c1, c2, c3 = st.columns(3)
        tr = ["none", "auto"]
        bd = ["sign", "observed", "none"]
        rd = ["original", "none"]
        state.set_plausible({
            "transform": c1.selectbox("Log scale for skewed non-negative variables", tr, index=tr.index(pv["transform"]),
                                      key="pv_transform", help="auto: means and covariances kept on the log scale, not "
                                      "exactly on the original one; the change of each mean is shown below the preview."),
            "bounds": c2.selectbox("Bounds", bd, index=bd.index(pv["bounds"]), key="pv_bounds",
                                   help="sign: no negative values where the original has none (clipped at 0, counted; "
                                        "means shift a little). observed: clipped to the original range (a clipped "
                                        "value equals an observed extreme). none: exact means, implausible values."),
            "rounding": c3.selectbox("Rounding", rd, index=rd.index(pv["rounding"]), key="pv_rounding",
                                     help="original: the original's decimals (integers stay integers); moves means "
                                          "by at most half a unit of the last digit."),
        })


def risk_preview(method, cfg):
    """One run with the session's seed, checked against the floors (figures only)."""
    sens = state.sensitive()
    risk, plaus = state.preview(cfg)
    st.subheader("Residual risk of this configuration (one run, seed " + str(state.seed()) + ")")
    if risk.ok:
        st.success("Every " + ("sensitive " if sens else "") + "variable meets the risk floors in this run.")
    else:
        for v in risk.violations[:4]:
            st.error(v)
        if len(risk.violations) > 4:
            st.error(f"... and {len(risk.violations) - 4} more violation(s): the table below shows every variable.")
    c1, c2 = st.columns(2)
    c1.dataframe(figures.risk_table(risk.variables), key=f"{method}_risk_table")
    c2.plotly_chart(figures.band_risk_figure(risk.bands, risk.floors.max_close_share, risk.floors.tolerance),
                    key=f"{method}_band_plot")
    with st.expander("Plausible values: log scale, bounds, rounding, and what they change"):
        st.caption("Log scale keeps means and covariances on the log scale, not exactly on the original one: the "
                   "change of the mean is shown in original standard deviations. Values below 0 of a variable that "
                   "has none are set to 0 (clipped). Values are rounded to the original's decimals.")
        st.dataframe(figures.plausibility_table(plaus), key=f"{method}_plausibility_table")


def _plots(method, cfg, sens, prefix):
    dec = state.decompose(method, cfg)
    for var, share in dec.below_floor:
        st.error(f"{var}: only {share:.1%} of its variance is perturbed by this choice (floor "
                 f"{state.floors()['min_perturbed_share']:.0%}): no release can be made with it. Perturb the factors "
                 f"that carry {var} (framed in the loadings plot when chosen).")
    c1, c2 = st.columns(2)
    c1.plotly_chart(figures.loadings_heatmap(dec.loadings, sens or (), dec.perturbed), key=f"{prefix}_loadings_plot")
    c2.plotly_chart(figures.perturbed_share_figure(dec.perturbed_share, sens or (), state.floors()["min_perturbed_share"]),
                    key=f"{prefix}_share_plot")
    st.caption(f"Perturbed: {', '.join(str(c) for c in dec.loadings.columns[[p - 1 for p in dec.perturbed]])} · "
               f"they carry {dec.variance.iloc[[p - 1 for p in dec.perturbed]].sum() * 100:.1f} % of the total variance.")
    for note in dec.notes:
        st.info(note)


def fa_tab(sens, m):
    cfg = st.session_state["cfg_fa"]
    out = {"method": "fa"}
    c1, c2, c3 = st.columns(3)
    out["n_factors"] = int(c1.number_input("Number of factors", 1, m, int(min(cfg.get("n_factors", m), m)), key="fa_n_factors",
                                           help="Default: as many as variables (zero factors are dropped)."))
    ext = ["minres", "ml", "principal"]
    out["extraction"] = c2.selectbox("Extraction", ext, index=ext.index(cfg.get("extraction", "minres")), key="fa_extraction")
    rots = ["none", "varimax", "quartimax", "equamax"] + (["isolate_sensitive", "isolate_public"] if sens else [])
    rot = cfg.get("rotation", "isolate_sensitive" if sens else "none")
    out["rotation"] = c3.selectbox("Rotation", rots, index=rots.index(rot) if rot in rots else 0, key="fa_rotation",
                                   help="isolate_sensitive: factor 1 alone carries sensitive variable 1, factors 1-2 variable 2, ...")
    probe = state.decompose("fa", {**out, "factors": "all"})
    _selection_widgets("fa", cfg, out, "factors", "factor", sens, probe.loadings.shape[1])
    c4, c5 = st.columns(2)
    with c4:
        _perturbation_widgets("fa", cfg, out)
    with c5:
        res = ["keep", "swap_rows", "bootstrap_rows"]
        out["residuals"] = st.selectbox("Residuals", res, index=res.index(cfg.get("residuals", "keep" if sens else "swap_rows")),
                                        key="fa_residuals",
                                        help="swap_rows (default in general protection): with fewer factors than "
                                             "variables, residuals kept unchanged let an intruder who knows the other "
                                             "variables invert the change exactly.")
        sc = ["whitened", "regression"]
        out["scores"] = st.selectbox("Scores", sc, index=sc.index(cfg.get("scores", "whitened")), key="fa_scores",
                                     help="whitened keeps the covariance unbiased; regression is the papers' literal construction.")
    st.session_state["cfg_fa"] = out
    _plots("fa", out, sens, "fa")
    risk_preview("fa", out)


def pca_tab(sens, m):
    cfg = st.session_state["cfg_pca"]
    out = {"method": "pca"}
    _selection_widgets("pca", cfg, out, "components", "component", sens, m)
    _perturbation_widgets("pca", cfg, out)
    st.session_state["cfg_pca"] = out
    _plots("pca", out, sens, "pca")
    risk_preview("pca", out)


def magg_tab(n):
    cfg = st.session_state["cfg_magg"]
    if n < 4:
        st.error(f"M-AGG needs at least 4 records (two groups of at least 2); the data have {n}. Use FA or PCA, or a "
                 f"file with more records.")
        return
    c1, c2 = st.columns(2)
    k_max = max(2, n // 2)
    k = c1.number_input("Group size k", 2, k_max, min(int(cfg.get("k", 3)), k_max), key="magg_k",
                        help="MDAV groups of at least k records (sdcMicro's partition). Small k keeps more utility.")
    noises = ["published", "exact", "none"]
    noise = c2.selectbox("Noise", noises, index=noises.index(cfg.get("noise", "published")), key="magg_noise",
                         help="published: N(0, lost covariance); exact: mean and covariance kept exactly; none: plain MDAV.")
    st.session_state["cfg_magg"] = {"method": "magg", "k": int(k), "noise": noise}
    sens = state.sensitive()
    st.caption("M-AGG aggregates " + (f"only the sensitive variables ({', '.join(sens)})" if sens else "all variables")
               + " into groups of at least k similar records, then adds noise restoring the variance the groups removed.")
    risk_preview("magg", st.session_state["cfg_magg"])


def rankswap_tab():
    cfg = st.session_state["cfg_rankswap"]
    lo = state.min_swap_percent()
    p = st.number_input("Rank window p (% of records)", min_value=float(max(0.1, lo)), max_value=100.0,
                        value=float(min(max(cfg.get("p", 40.0), lo), 100.0)), key="rankswap_p",
                        help="Each value is swapped with another whose rank differs by at most p % of the records. "
                             "Default 40 %: smaller windows kept too many values within 5 % of the truth in some size "
                             "band on the samples.")
    st.session_state["cfg_rankswap"] = {"method": "rankswap", "p": float(p)}
    sens = state.sensitive()
    st.caption("Rank swapping exchanges the values of " + (f"the sensitive variables only ({', '.join(sens)}), "
               "leaving the public variables unchanged, so nothing in them shows what changed" if sens else
               "every variable, each on its own") + ". Every marginal distribution is kept exactly; correlations "
               "weaken as p grows.")
    risk_preview("rankswap", st.session_state["cfg_rankswap"])


METRIC_TEXT = {"correlation": "correlation of the flattened standardised data (higher is better)",
               "mean_abs": "mean absolute change, in sds (lower is better)",
               "max_row": "mean absolute change of the most changed record, in sds (lower is better)",
               "frobenius": "root mean square change, in sds (lower is better)",
               "kl": "Kullback-Leibler divergence of the fitted normals (lower is better)",
               "psnr": "PSNR of the data read as an image, dB (higher is better)",
               "ssim": "SSIM of the data read as an image (higher is better)"}


def pca_remove_tab(m):
    cfg = st.session_state["cfg_pca_remove"]
    st.caption("D'Acquisto and Naldi's method: remove the largest principal components one at a time and project "
               "back onto the variables, while a utility metric stays acceptable. It keeps every mean exactly but "
               "NOT the variances and covariances (each variable loses the share the removed components carry, "
               "shown below), and it changes every variable, also the public ones. Deterministic: every seed gives "
               "the same file.")
    curve = state.removal_curve()
    table = curve.table
    c1, c2, c3 = st.columns(3)
    modes = ["stop", "fixed"]
    mode = c1.radio("How many to remove", modes, index=0 if cfg.get("removed", "auto") == "auto" else 1,
                    format_func={"stop": "by a utility stop", "fixed": "a fixed number"}.get, key="pcar_mode")
    metrics = list(METRIC_TEXT)
    metric = c2.selectbox("Utility metric", metrics, index=metrics.index(cfg.get("metric", "correlation")),
                          format_func=lambda k: METRIC_TEXT[k].split(" (")[0], key="pcar_metric",
                          help="The framework paper's four families: matrix norms, correlation, divergence, image quality.")
    out = {"method": "pca_remove", "metric": metric}
    higher = sdccore.UTILITY_METRICS[metric][1]
    if mode == "stop":
        default = cfg.get("threshold") if cfg.get("metric") == metric and "threshold" in cfg else (
            0.5 if metric == "correlation" else float(f"{table[metric].iloc[min(2, len(table) - 1)]:.3g}"))
        thr = c3.number_input(("Keep it at least" if higher else "Keep it at most"), value=float(default),
                              key="pcar_threshold", format="%.4g",
                              help="Components are removed while the metric still meets this.")
        out.update(removed="auto", threshold=float(thr))
    else:
        top = max(1, min(m - 1, int(table.removed.max())))
        r = c3.number_input("Components removed", 1, top, int(min(max(cfg.get("removed", 2) if cfg.get("removed") != "auto"
                                                                      else 2, 1), top)), key="pcar_removed")
        out.update(removed=int(r))
    st.session_state["cfg_pca_remove"] = out
    dec = state.decompose("pca_remove", out)
    chosen = len(dec.perturbed)
    st.plotly_chart(figures.removal_curve_figure(table, metric, METRIC_TEXT[metric].split(" (")[0],
                                                 out.get("threshold"), chosen, state.floors()["min_perturbed_share"]),
                    key="pcar_curve_plot")
    row = table[table.removed == chosen]
    if len(row):
        row = row.iloc[0]
        st.info(f"{chosen} of {m} components removed: {row.variance_removed:.1%} of the total variance. Means are kept "
                f"exactly (before bounds and rounding); each variable keeps {1 - dec.perturbed_share.max():.1%} to "
                f"{1 - dec.perturbed_share.min():.1%} of its variance; correlations change by up to "
                f"{row.max_cor_change:.2f}.")
    _plots("pca_remove", out, state.sensitive(), "pcar")
    risk_preview("pca_remove", out)


def body():
    if not state.ready():
        return
    sens = state.sensitive()
    m = len(state.protect_columns())
    # one method at a time: only the chosen method's widgets and live plots are computed
    floors_section()
    method = st.radio("Method", ["FA", "PCA", "M-AGG", "Rank swap", "PCA-R"], horizontal=True, key="config_method",
                      help="PCA-R: removal of the largest principal components (D'Acquisto and Naldi).")
    if method == "FA":
        state.safe(lambda: fa_tab(sens, m))
    elif method == "PCA":
        state.safe(lambda: pca_tab(sens, m))
    elif method == "M-AGG":
        state.safe(lambda: magg_tab(len(state.data())))
    elif method == "Rank swap":
        state.safe(rankswap_tab)
    else:
        state.safe(lambda: pca_remove_tab(m))


state.safe(body)
