"""Page 2: correlations, sampling adequacy, scree, between/within indices and the recommendation."""

import streamlit as st

import sdccore
from ui import compute, figures, session, shell, widgets
shell.enter()  # a page opened on its own is run inside app.py (ui/shell.py)
st.title("Explore")


def body():
    if not compute.ready():
        return
    wait = "" if compute.kernels_warm() else (" (the first time after an install this can take a minute: the risk "
                                              "calculations are compiled once, then kept)")
    with st.spinner("Correlations and adequacy ..." + wait):
        ex = compute.explore()
        compute.indices()
    sens = session.sensitive()
    # the page's answer first (issue 41): the recommended method and why, drawn at the top once
    # computed (it runs the candidate methods with every floor: 1.6 CPU-s on Tarragona), the
    # evidence below shown meanwhile
    answer = st.container()
    c1, c2 = st.columns([3, 2])
    c1.plotly_chart(figures.correlation_heatmap(ex["corr"]), key="corr_heatmap")
    ad = ex["adequacy"]
    with c2:
        st.subheader("Is there structure for factors to carry?")
        m1, m2 = st.columns(2)
        m1.metric("KMO", f"{ad.kmo:.2f}", help="Kaiser-Meyer-Olkin sampling adequacy: above 0.8 is good, below 0.5 poor.")
        m2.metric("Bartlett p-value", f"{ad.bartlett_p:.2g}" if ad.bartlett_p > 0 else "< 1e-300",
                  help="Test that all correlations are zero; a small p means shared structure.")
        st.write(ad.verdict)
        st.plotly_chart(figures.scree_figure(ex["scree"]), key="scree")
    st.subheader("Between and within correlations")
    ind = compute.indices()
    point = (ind.between, ind.within) if sens else None
    c3, c4 = st.columns([3, 2])
    c3.plotly_chart(figures.indices_figure(ind.per_variable, sens or (), point), key="indices_plot")
    with c4:
        st.caption("For each variable taken alone as the sensitive one: between = mean |r| with the others "
                   "(FA paper eq. 6), within = mean |r| among the others (eq. 7).")
        widgets.table(st, ind.per_variable.round(3), key="indices_table")
        if sens:
            st.markdown(f"**Your sensitive set:** between {ind.between:.3f}, within {ind.within:.3f}")
    st.subheader("Which method? Where your data sit")
    with answer, st.spinner("The recommendation: the candidate methods, each with every risk floor ..."):
        rec = compute.recommendation()
    with answer:
        if rec.label:
            st.success(f"Recommended: **{rec.label}**"
                       + (f" ({sdccore.report.method_words(rec.method).rsplit(' (', 1)[0]})" if rec.method else ""))
        else:
            st.warning("No method can be recommended for these data with its default settings; the reasons below "
                       "say what breaks. Run the comparison on the Run page to see each method's risk and what fixes "
                       "it.")
        with st.expander("Why", expanded=not rec.label):
            for r in rec.reasons:
                st.markdown(f"- {r}")
    if sens:
        st.plotly_chart(figures.bw_map_figure(sdccore.load_bw_map(), (rec.between, rec.within)), key="bw_map")
    else:
        st.caption("Choose sensitive variables on the Data page to see where your data sit on the between/within map.")


session.safe(body)
