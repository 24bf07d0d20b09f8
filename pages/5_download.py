"""Page 5: the protected CSV, the recipe that reproduces it, the report and the score audit."""

import json

import streamlit as st

import sdccore
from ui import report, state

st.title("Download")


def _choice():
    label, cfg = state.release_choice()
    if cfg is None:
        rec = state.recommendation()
        label = f"{rec.label} (recommended, as configured)"
        cfg = dict(st.session_state[f"cfg_{rec.method}"])
        st.info("No configuration was picked on page 4, so the recommended method is used as configured on page 3.")
    return label, cfg


def body():
    if not state.ready():
        return
    label, cfg = _choice()
    res, ev = state.release(cfg)
    ident = state.columns_with("identifier")
    st.subheader(f"Release: {label}, seed {state.seed()}")
    c1, c2 = st.columns(2)
    shuffle = c1.checkbox("Shuffle the rows", value=True, key="shuffle_rows",
                          help="Record order can reveal who is who (e.g. files sorted by size); shuffling hides it.")
    c2.markdown(f"Identifiers dropped: {', '.join(ident) if ident else 'none'}  \n"
                f"Excluded columns passed through unchanged: {', '.join(state.excluded()) or 'none'}")
    out = sdccore.prepare_release(res.data, drop=ident, shuffle=shuffle, rng=[state.seed(), 1])
    st.dataframe(out.head(50), key="release_preview")
    name = str(st.session_state["data_name"]).rsplit(".", 1)[0]
    st.download_button("Download the protected CSV", out.to_csv(index=False).encode("utf-8"), f"{name}_protected.csv",
                       "text/csv", key="download_csv", type="primary")
    recipe = dict(res.options)
    recipe["release"] = {"drop": ident, "shuffle": bool(shuffle)}
    st.download_button("Download the recipe (JSON)", json.dumps(recipe, indent=2, sort_keys=True), f"{name}_recipe.json",
                       "application/json", key="download_recipe")
    st.code(f"python -m sdccore protect ORIGINAL.csv --recipe {name}_recipe.json --out {name}_protected.csv", language="bash")
    st.caption("The command line rebuilds the same file from the original and the recipe. Keep the recipe internal: "
               "with the seed and the original, anyone can rebuild the release.")
    kind = st.radio("Report", ["internal", "external"], horizontal=True, key="report_kind",
                    format_func=lambda k: {"internal": "internal (with the seed)", "external": "external (no seed)"}[k])
    c = state.comparison()
    html_doc = report.build_report(kind, st.session_state["data_name"], out.shape, state.roles(), label, res.options, ev,
                                   c["result"] if c else None, res.dependencies, res.notes)
    st.download_button("Download the report (HTML)", html_doc, f"{name}_report_{kind}.html", "text/html",
                       key="download_report")
    st.subheader("Factor scores are never exported")
    st.write("If a variable is nearly uncorrelated with the others, its factor score reproduces it (Drechsler, Ronning "
             "and Bleninger). The audit shows how close an intruder with factor scores would get to each variable.")
    if st.button("Run the factor-score audit", key="run_audit"):
        st.session_state["audit_token"] = state.token()
    if st.session_state["audit_token"] == state.token():
        with st.spinner("Trying every number of factors for every variable..."):
            a = state.audit()
        t = a.table[["best_abs_cor", "method", "n_factors", "share_within_0.5pct", "flag"]]
        st.dataframe(t.rename(columns={"best_abs_cor": "best |cor|", "n_factors": "factors",
                                       "share_within_0.5pct": "records within 0.5 %"}), key="audit_table")
        if a.flagged:
            st.warning(f"Factor scores would disclose: {', '.join(a.flagged)}.")
        else:
            st.success("No variable is recovered to |cor| >= 0.995 from factor scores.")


state.safe(body)
