"""Page 4: run the configured methods repeatedly, compare risk and utility, pick the release."""

import json
import time

import streamlit as st

import sdccore
from ui import common, compute, figures, release, runs, sections, session, shell, widgets, words
shell.enter()  # a page opened on its own is run inside app.py (ui/shell.py)
st.title("Run and compare")


def run_section():
    small = runs.small_file_warning()
    if small:
        st.warning(small)
    c1, c2 = st.columns([2, 1])
    offered = session.offered_methods()
    methods = c1.multiselect("Methods (as configured on page 3)", offered, default=offered, key="run_methods",
                             help="IPSO (regression-preserving), Shuffle (data shuffling) and FA-cond (conditional "
                                  "FA) keep the public variables and redraw the sensitive ones given them: offered "
                                  "when some variables are sensitive and some public.")
    reps = c2.slider("Repetitions per method", 2, 100, 10, key="run_reps",
                     help="Each repetition protects with a different seed derived from the session seed; "
                          "intervals narrow as repetitions grow (the papers used 100).")
    models_section()
    if st.button("Run comparison", type="primary", key="run_button", disabled=not methods):
        bar = st.progress(0.0, text="Starting...")
        # any click (this button included) stops the run at its next step; the results
        # shown before are kept
        cancel = st.empty()
        cancel.button("Cancel", key="cancel_run", help="Stops the comparison; earlier results stay as they were.")
        live = st.empty()
        start = time.perf_counter()
        shown = [0.0]

        def progress(done, total):
            spent = time.perf_counter() - start
            left = spent / done * (total - done) if done else 0.0
            bar.progress(done / total, text=f"{done} of {total} runs, about {left:.0f} s left")

        def partial(runs):  # the results so far, at most twice a second
            if time.perf_counter() - shown[0] >= 0.5:
                shown[0] = time.perf_counter()
                widgets.table(live, figures.live_runs_table(runs, bool(session.sensitive())), hide_index=True)

        runs.run_comparison([common.method_of(m) for m in methods], int(reps), progress, partial)
        bar.empty()
        cancel.empty()
        live.empty()
        st.rerun()  # the page again, its decision first


def models_section():
    text = st.text_area("Does your analysis still hold? Linear regressions to check, one per line (optional)",
                        value=session.models_text(), key="run_models", height=80,
                        placeholder=session.example_model() + "\nnp.log(...) ~ ... (log, sqrt, I(x ** 2), C(group): read, never run as code)",
                        help="Each regression is fitted on the original and on every run's release; the coefficients "
                             "with their 95 % intervals are shown side by side with the interval overlap of Karr et al. "
                             "(1 = the same interval, 0 = touching, below 0 = apart), averaged over the runs. Names "
                             "with dots (FIXED.ASSETS) work as they are.")
    for model, problem in session.set_models(text):
        if problem:
            st.error(f"`{model}` is left out: {problem}")
    on, overlap = session.required()
    c1, c2 = st.columns([2, 1])
    on = c1.checkbox("These regressions must hold in the suggested release", value=on, key="run_models_required",
                     help="The suggestion then keeps only configurations whose release keeps every slope of each "
                          "regression above with a CI overlap of at least the value beside (the mean over the runs), "
                          "or says that none does.")
    if on:
        overlap = c2.number_input("Smallest CI overlap of each slope", -1.0, 1.0, overlap, 0.05,
                                  key="run_models_overlap")
    session.set_required(on, overlap)


def regression_section(table, note, where):
    """The coefficients side by side and a forest plot, one model at a time."""
    st.subheader("Does the analysis still hold?")
    st.caption(note)
    for i, (model, sub) in enumerate(table.groupby("model", sort=False)):
        widgets.table(st, figures.regression_table(sub.drop(columns="model")), hide_index=True, key=f"{where}_regression_table_{i}")
        st.plotly_chart(figures.regression_figure(sub.drop(columns="model"), model), key=f"{where}_regression_plot_{i}")


def _heavy_blanks():
    """The Data page's warnings of a key blank for many records (the keys' suppression is the
    same in every configuration): a walk downloaded a release with 88.5 % of its ages blank,
    said on the Download page but not beside the suggestion."""
    kc = session.key_choice()
    if not kc["keys"]:
        return []
    return compute.key_view(kc["keys"], session.design().get("weights"), kc["household"], kc["k"], kc["recode"],
                            kc["household_ids"])[3]


def decision_section(c):
    """The page's answer first (issue 41): the release to make and why, or what blocks one and
    what to try; the evidence follows below.  Returns the suggested configuration or None."""
    res = c["result"]
    best, why = res.suggest(session.max_risk(), require=session.required_models(res))
    if best:
        words_ = sdccore.report.method_words(common.method_of(best)) if common.method_of(best) else best
        st.success(f"Suggested release: **{best}**" + (f" ({words_.rsplit(' (', 1)[0]})" if words_ != best else "")
                   + f". {why}.")
        for w in _heavy_blanks():  # what every release of this file costs the analysts, beside the suggestion
            st.warning(f"Whichever release: {w}.")
    else:
        st.error(f"No configuration can be suggested: {why}.")
        stronger_section()
    changed = runs.comparison_changes(c)
    if changed:
        st.warning(f"Changed since this comparison ran: {', '.join(changed)}. Its figures and its suggestion are for "
                   f"the settings it ran with; run it again to compare the current ones. A release picked below "
                   f"uses the current settings.")
    return best


def results_section(c, best):
    res = c["result"]
    sens = session.sensitive()
    for label, why_not in res.errors.items():
        st.warning(f"{label} was not run on these data and is left out of the comparison: {why_not}")
    st.caption(f"{len(res.runs)} runs, seeds derived from {session.seed()} (master {res.seed}); "
               f"time: protect {res.seconds['protect']:.1f} s, evaluate {res.seconds['evaluate']:.1f} s. "
               f"{figures.SCORE_NAMES['id']} centres its intervals on {session.id_intruder()}.")
    spread = st.radio("Whiskers show", ["runs", "mean"], horizontal=True, key="spread_choice",
                      format_func={"runs": "the range of single runs (2.5-97.5 %): what one release may score",
                                   "mean": "the 95 % interval of the mean over runs"}.get)
    ru = res.risk_utility()
    axes = [a for a in ("validity_loss", "utility_loss") if a in ru]
    axis = st.radio("Utility axis", axes, horizontal=True, key="utility_axis",
                    index=0 if sens or len(axes) == 1 else 1,
                    format_func={"validity_loss": "analysis validity (the sensitive variables' regressions, "
                                                  "correlations and distribution)",
                                 "utility_loss": "PIL and PS (averaged over all variables)"}.get)
    safe = res.safety(fixes_here=True)  # a fix names no method that broke a floor here
    refused = res.refused()
    c1, c2 = st.columns(2)
    c1.plotly_chart(figures.risk_utility_figure(ru, spread, axis, refused), key="risk_utility_plot")
    c2.plotly_chart(figures.measures_figure(res.summary, spread), key="measures_plot")
    tab = res.summary.copy()
    # every built-in score lies in [0, 1]: its intervals too, written as [lo, hi] (a plug-in
    # analysis' scale is its own: its intervals as they are)
    unit = {k for k in sdccore.analyses() if sdccore.analysis_info(k).measure is None}

    def clip(v, k):
        return min(max(float(v), 0.0), 1.0) if k in unit else float(v)
    tab["value"] = tab.apply(lambda r: f"{r['mean']:.4f} (runs [{clip(r.run_lo, r.score):.4f}, "
                                       f"{clip(r.run_hi, r.score):.4f}]; mean [{clip(r.lo, r.score):.4f}, "
                                       f"{clip(r.hi, r.score):.4f}])", axis=1)
    wide = tab.pivot(index="config", columns="score", values="value")
    order = [k for k in figures.SCORE_NAMES if k in wide.columns]  # the analyses' registry's order
    widgets.table(st, wide[order].rename(columns=figures.SCORE_NAMES).rename_axis("method").reset_index(),
                 hide_index=True, key="scores_table",
                 column_config={"method": st.column_config.TextColumn("method", width="medium", pinned=True)})
    st.subheader("Risk floors, per sensitive variable and size band")
    kept = {c: f"{m} of {n}" + (f" (misses: {', '.join(x)})" if x else "") for c, (m, n, x) in res.analyses.items()}
    widgets.table(st, safe.assign(floors_met=(safe.floors_met * 100).map(lambda v: f"{v:.0f} % of runs"),
                                  analyses=safe.config.map(kept).fillna(""))
                 .rename(columns={"analyses": "analyses kept in the run released",
                                  "floors_met": "runs meeting every floor", "expected_ok": "meets them over the runs",
                                  "released_ok": f"run released (seed {res.seed}) meets them",
                                  "failing": "variables that broke a floor",
                                  "violation": "first violation (with its fix)"}), hide_index=True, key="safety_table")
    vr = res.variable_risk()
    st.caption("Worst value over the runs, per configuration and " + ("sensitive " if sens else "") + "variable.")
    widgets.table(st, figures.risk_table(vr.set_index(["config", "variable"]).rename(columns={"runs_ok": "ok"})
                                    .assign(ok=lambda t: t.ok == 1.0, worst_band="")).drop(columns="worst band"),
                 key="variable_risk_table")
    fl = session.floors()
    st.plotly_chart(figures.band_risk_figure(res.band_risk(), fl["max_close_share"], fl["tolerance"]),
                    key="band_risk_plot")
    reg = res.regression_summary()
    if len(reg):
        regression_section(reg, f"Protected coefficients and intervals are averaged over the runs of each method; "
                                f"'CI overlap' is the mean over runs (Karr et al. 2006: 1 = the same interval, "
                                f"below 0 = apart).", "comparison")
    st.slider("Risk ceiling for the suggested release (disclosure risk = mean of DBRL and ID, upper end of its "
              "interval)", 0.0, 1.0, session.max_risk(), 0.05, key="max_risk_input",
              on_change=lambda: session.set_max_risk(st.session_state["max_risk_input"]))
    if best:
        try:
            rec = compute.recommendation()
        except ValueError:  # e.g. too few records for a recommendation: the Explore page says why
            rec = None
        if rec is not None and rec.label and rec.label != best and rec.label in res.configs:
            st.caption(f"The Explore page recommends {rec.label} from the simulated map (evidence about data like "
                       f"yours); this suggestion comes from the runs on your own data (risk floors, the risk ceiling, "
                       f"then the most analyses kept and the best analysis validity), which decide the release.")
    return best


def stronger_section():
    """No configuration met the floors: try each offered method's main setting stronger (the
    rank-swap window p, M-AGG's group size k, IPSO's size classes) and offer what passes."""
    s = runs.stronger()
    if s is None:
        if st.button("Try stronger settings (rank-swap window p, M-AGG group size k, IPSO size classes), 5 runs each",
                     key="stronger_button"):
            bar = st.progress(0.0, text="Trying stronger settings...")
            s = runs.run_stronger(lambda d, t: bar.progress(d / t, text=f"{d} of {t} runs"))
            bar.empty()
        else:
            return
    res, tried = s["result"], s["tried"]
    if res is None:
        st.info("None of the compared methods has a main setting to strengthen (FA and PCA: change the factors or "
                "components on the Configure page; or add IPSO, rank swapping or M-AGG to the comparison).")
        return
    best, why = res.suggest(session.max_risk(), require=session.required_models(res))
    if best is None:
        st.warning(f"Stronger settings did not help either: {why}.")
        return
    _, method, option, value, _ = next(t for t in tried if t[0] == best)
    unit = {"p": " %", "k": " records", "classes": " classes"}.get(option, "")
    st.success(f"Found: {why}.")
    st.button(f"Use {option} = {value:g}{unit} for {common.METHOD_LABELS[method]}", key="use_stronger",
              on_click=runs.use_setting, args=(method, option, value), type="primary")


def pick_section(c, best):
    # each configured method with its CURRENT settings (a fix made on the Configure page is what
    # gets released); the search's best as it was found
    options = session.current_configs([common.method_of(lab) for lab in c["configs"] if common.method_of(lab)])
    options.update({lab: cfg for lab, cfg in c["configs"].items() if lab not in options})
    follows = set(options)
    sr = runs.search_result()
    if sr is not None and len(sr["result"].ranking):
        top = sr["result"].ranking.iloc[0]
        options[f"search best: {top.config}"] = json.loads(top.options)
    labels = list(options)
    current, _ = release.release_choice()
    idx = labels.index(current) if current in labels else (labels.index(best) if best in labels else None)
    pick = st.radio("Configuration to release", labels, index=idx, key="release_pick", horizontal=True)
    if pick is None:
        st.info("No configuration is pre-selected because none met the risk floors within the ceiling; pick one to "
                "see its figures, or change the configuration.")
        return
    release.choose_release(pick, options[pick], follow=pick in follows and common.method_of(pick) is not None)
    with st.spinner(f"Protecting and checking the release with {pick} ..."):
        res, ev, refused = release.release(options[pick])
    st.subheader(f"The release with {pick} (seed {session.seed()})")
    if refused is not None:
        st.error("This release is refused: it breaks the risk floors.\n\n"
                 + "\n".join(f"- {words.violation(v)}" for v in refused.risk.violations[:6])
                 + (f"\n- ... and {len(refused.risk.violations) - 6} more (see the table)"
                    if len(refused.risk.violations) > 6 else ""))
        widgets.table(st, figures.risk_table(refused.risk.variables), key="refused_risk_table")
        st.markdown(figures.risk_sentences(refused.risk))
        return
    known = words.prior_warning(res.risk)
    if known:
        st.warning(known)
    items = list(ev.scores.items())
    for at in range(0, len(items), 5):  # at most 5 a row: 9 or 10 in one row cut labels and values to "0.0..."
        for col, (k, v) in zip(st.columns(5), items[at:at + 5]):
            col.metric(figures.SCORE_NAMES[k], f"{v:.3f}")
    widgets.table(st, figures.risk_table(res.risk.variables), key="release_risk_table")
    st.caption("Each intruder of the battery: the share of records it puts within the tolerance of their true value "
               "beyond what its knowledge alone predicts.")
    widgets.table(st, figures.intruder_table(res.risk.intruders), key="release_intruder_table")
    st.markdown(figures.risk_sentences(res.risk))
    c1, c2 = st.columns([1, 2])
    c1.plotly_chart(figures.own_correlation_figure(ev.details["ic"]), key="own_cor_plot")
    cols = session.protect_columns()
    R0 = compute.explore()["corr"]  # cached, clustered order
    R1 = sdccore.correlation_matrix(res.data[cols], order=None).loc[R0.index, R0.columns]
    c2.plotly_chart(figures.correlation_pair_figure(R0, R1), key="cor_pair_plot")
    table, checks = release.release_regressions(res)
    if checks:
        used = "; ".join(f"{c.model}: {c.n_original} original and {c.n_protected} released records used"
                         for c in checks)
        regression_section(table, f"This release (seed {session.seed()}). {used} (records with a missing or "
                                  f"non-finite value in the model are left out of that fit).", "release")
        for c in checks:
            if c.n_protected < 0.95 * c.n_original:
                st.warning(f"`{c.model}` uses {c.n_protected} released records against {c.n_original} original ones: "
                           f"transformations such as np.log drop the released values they cannot take (negative or "
                           f"zero amounts). Choose a method that keeps values positive (M-AGG, rank swapping) or "
                           f"another transformation.")
    sections.analyses_section(options[pick], "run_analyses_table")
    sections.keys_section(options[pick], "run_keys_table")
    st.caption("Go to **5 Download** for the protected file, the recipe and the report.")


def search_section():
    with st.expander("Search for the best configuration (factor/component masks, group size k)"):
        c1, c2, c3 = st.columns(3)
        method = c1.selectbox("Method", ["fa", "pca", "magg"], format_func=str.upper, key="search_method")
        budget = c2.number_input("Budget (protect + evaluate runs)", 20, 2000, 120, step=20, key="search_budget")
        reps = c3.number_input("Runs per surviving candidate", 3, 50, 6, key="search_reps")
        if st.button("Search", key="search_button"):
            bar = st.progress(0.0, text="Searching...")
            cancel = st.empty()
            cancel.button("Cancel", key="cancel_search", help="Stops the search; earlier results stay as they were.")
            runs.run_search(method, int(reps), int(budget), lambda d, t: bar.progress(min(1.0, d / max(t, 1))))
            bar.empty()
            cancel.empty()
        sr = runs.search_result()
        if sr is not None:
            st.write(sr["result"].note)
            if len(sr["result"].ranking):
                widgets.table(st, sr["result"].ranking.drop(columns=["options"]).head(20), key="search_table")
            else:
                st.error("No candidate met the risk floors, so none is offered as a release.")


def body():
    if not compute.ready():
        return
    compute.warm_up()
    c = runs.comparison()
    if c is None:
        st.info("No comparison yet. Pick the methods and press **Run comparison**: this page then says first which "
                "release to make and why (or what blocks one), with the evidence below.")
        run_section()
        search_section()
        return
    top = st.container()  # the decision is drawn first, after the settings below are read
    with st.expander("Run the comparison again: methods, repetitions, regressions to check"):
        run_section()
    with top:
        best = decision_section(c)
    search_section()
    results_section(c, best)
    pick_section(c, best)


session.safe(body)
