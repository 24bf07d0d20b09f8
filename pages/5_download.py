"""Page 5: the protected CSV, the recipe that reproduces it, the report and the score audit."""

import streamlit as st

import sdccore

from ui import common, compute, figures, history, release, report, runs, sections, session, shell, widgets, words
shell.enter()  # a page opened on its own is run inside app.py (ui/shell.py)
st.title("Download")


def _choice():
    label, cfg = release.release_choice()
    if cfg is not None:
        return label, cfg
    c = runs.comparison()
    if c is not None:
        # the comparison decides: its suggestion with the method's current settings, or why none
        best, why = c["result"].suggest(session.max_risk(), require=session.required_models(c["result"]))
        if best is None:
            st.error(f"No release: {why}.")
            return None, None
        label, follow = best, common.method_of(best) is not None
        cfg = session.current_configs([common.method_of(best)])[best] if follow else c["configs"][best]
        what = f"the comparison's suggestion, {best}"
    else:
        rec = compute.recommendation()
        if rec.method is None:
            st.error("No method meets the risk floors with its default settings on these data: " + rec.reasons[-1])
            return None, None
        label, cfg, follow = rec.label, session.config(rec.method), True
        what = f"the recommended method, {rec.label}, as configured on page 3"
    # nothing is protected (nor added to the history) until the custodian asks for it
    st.info(f"No release was picked on page 4. Prepare {what}?")
    if st.button(f"Prepare the release: {label}", key="prepare_release", type="primary"):
        release.choose_release(label, cfg, follow=follow)
        st.rerun()
    return None, None


def body():
    if not compute.ready():
        return
    blockers = session.release_blockers()
    for b in blockers:
        st.error(f"Download blocked: {b}.")
    label, cfg = _choice()
    if cfg is None:
        return
    res, ev, refused = release.release(cfg)
    if refused is not None:
        _refused(refused, label)
        return
    if blockers:
        return
    _verdict(res, label)  # the page's answer first (issue 41): may this file be released, and what to mind
    keys = release.release_keys(cfg)
    for w in (keys or {}).get("warnings", ()):  # what the blanks cost the analysts, with the fix (before download)
        st.warning(w + ".")
    ident = session.columns_with("identifier")
    st.subheader(f"Release: {label}, seed {session.seed()}")
    c1, c2 = st.columns(2)
    shuffle = c1.checkbox("Shuffle the rows", value=True, key="shuffle_rows",
                          help="Record order can reveal who is who (e.g. files sorted by size); shuffling hides it.")
    kc = session.key_choice()
    keyed = set(kc["keys"]) | ({kc["household"]} if kc["keys"] and kc["household"] else set())
    unchanged = [c for c in session.excluded() if c not in keyed]
    hh = {"drop": "not released", "new": "renumbered", "kept": "kept"}.get(kc["household_ids"])
    c2.markdown(f"Identifiers dropped: {', '.join(ident) if ident else 'none'}  \n"
                f"Excluded columns passed through unchanged: {', '.join(unchanged) or 'none'}"
                + (f"  \nKey variables ({kc['k']}-anonymous, rare values blanked): {', '.join(kc['keys'])}"
                   if kc["keys"] else "")
                + (f"  \nHousehold id {kc['household']}: {hh}" if kc["keys"] and kc["household"] else ""))
    rel = release.release_file(cfg, shuffle)
    _release_risk(res)
    sections.analyses_section(cfg, "release_analyses_table")
    sections.keys_section(cfg, "release_keys_table", warnings=False)
    widgets.table(st, rel.data.head(50), key="release_preview")
    name = session.data_name().rsplit(".", 1)[0]
    fmt = _data_download(rel, name)
    book = _recipe_and_codebook(rel, name, fmt, cfg)
    _report(label, res, ev, rel.data.shape, book, name, cfg)
    _audit()


def _refused(refused, label):
    """Why the configuration cannot be downloaded, and what to change."""
    st.subheader(f"Release refused: {label}, seed {session.seed()}")
    if not refused.risk.violations:  # floors lowered without a reason
        st.error(str(refused).replace("pass allow_unsafe='reason' (on the command line --allow-unsafe \"reason\")",
                                      "give a reason under 'Risk floors' on the Configure page"))
        return
    st.error("This configuration breaks the risk floors, so it cannot be downloaded. Fix one of these on the "
             "Configure page (or change the roles), then come back:")
    for v in refused.risk.violations:
        st.error(words.violation(v))
    widgets.table(st, figures.risk_table(refused.risk.variables), key="refused_risk_table")
    st.markdown(figures.risk_sentences(refused.risk))


def _verdict(res, label):
    """The release's verdict in a sentence, with what the public variables already revealed and
    the means it moves beyond the tolerance beside it (warnings, not grey text)."""
    lowered = res.risk.floors.lowered_text()
    known = words.prior_warning(res.risk)
    if known:
        st.warning(known)
    st.success(f"{label} may be released: every " + ("sensitive " if session.sensitive() else "")
               + "variable meets the risk floors" + (" (as lowered)" if lowered else "")
               + (" (but see above: most of it was known already)." if known else "."))
    if lowered:
        st.warning(f"The {lowered}; released because: {res.unsafe_reason}. The report and the codebook say so.")
    moved = words.mean_shift_warning(session.data(), res.data, session.protect_columns())
    if moved:
        st.warning(moved)


def _release_risk(res):
    """The release's risk per variable and size band, and what plausible values changed."""
    widgets.table(st, figures.risk_table(res.risk.variables), key="release_risk_table")  # full width: every column
    c3, c4 = st.columns(2)
    c4.plotly_chart(figures.band_risk_figure(res.risk.bands, res.risk.floors.max_close_share, res.risk.floors.tolerance),
                    key="release_band_plot")
    c3.markdown(figures.risk_sentences(res.risk))
    plaus = res.plausibility
    st.caption("Plausible values: " + (f"log scale for {', '.join(plaus.index[plaus['transform'] == 'log'])}; "
                                       if (plaus["transform"] == "log").any() else "")
               + f"{int(plaus.clipped.sum())} value(s) clipped to the original's sign or range; rounded to the "
                 f"original's decimals. Means on the original scale change by at most "
                 f"{plaus.mean_change_sd.abs().max():.3f} sd; relative to the mean, by at most "
                 f"{100 * plaus.mean_change_pct.abs().max():.1f} % ({plaus.mean_change_pct.abs().idxmax()}). "
                 f"The table under 'Plausible values' on the Configure page gives every variable.")


def _data_download(rel, name):
    """The protected file in the chosen format; returns the format."""
    out = rel.data
    sep, dec = session.read_format()
    labels, value_labels = session.labels()
    formats = release.release_formats()
    fmt = st.selectbox("File format", list(formats), format_func=formats.get, key="release_format",
                       index=list(formats).index(release.default_release_format()),
                       help="The format the data came in is the default; SPSS, Stata and SAS files keep their "
                            "variable and value labels.")
    try:
        body_bytes = rel.to_bytes(fmt, labels=labels, value_labels=value_labels, sep=sep, decimal=dec)
    except ValueError as exc:
        st.error(f"The release cannot be written in this format: {exc}")
        body_bytes = None
    if body_bytes is not None:
        st.download_button("Download the protected data" if fmt != "csv" else "Download the protected CSV",
                           body_bytes, f"{name}_protected.{fmt}", release.MIME.get(fmt, "application/octet-stream"),
                           key="download_csv", type="primary")
    if fmt == "csv":
        st.caption(f"Written as the upload was: separator {'tab' if sep == chr(9) else repr(sep)}, decimal mark {dec!r}.")
    elif labels or value_labels:
        st.caption(f"With {len([c for c in labels if c in out.columns])} variable label(s) and value labels on "
                   f"{len([c for c in value_labels if c in out.columns])} column(s) from the original file.")
    return fmt


def _recipe_and_codebook(rel, name, fmt, cfg=None):
    """The recipe, the codebook and the commands that rebuild the release; returns the codebook."""
    st.download_button("Download the recipe (JSON)", rel.recipe.to_json(), f"{name}_recipe.json",
                       "application/json", key="download_recipe")
    book = release.codebook(rel, cfg)
    c5, c6 = st.columns(2)
    c5.download_button("Download the codebook (CSV)", release.codebook_bytes(book, "csv"), f"{name}_codebook.csv",
                       "text/csv", key="download_codebook_csv")
    c6.download_button("Download the codebook (JSON)", release.codebook_bytes(book, "json"), f"{name}_codebook.json",
                       "application/json", key="download_codebook_json")
    with st.expander("Codebook: what was done to each variable, what is kept exactly and what in expectation"):
        widgets.table(st, figures.codebook_table(book), key="codebook_table")
    src_ext = session.file_format() if session.file_format() != "csv" else "csv"
    st.code(f"python -m sdccore protect ORIGINAL.{src_ext} --recipe {name}_recipe.json --out {name}_protected.{fmt}",
            language="bash")
    st.caption("The command line rebuilds the same file from the original and the recipe. Keep the recipe internal, "
               "never publish it with the release: its seed is the one secret of the protection (the method and "
               "its settings may be published; the codebook says them), and with the seed and the released file "
               "anyone can redraw the random part of the release and undo it for noise-based methods.")
    at_scale = sdccore.scale_refusal(rel.recipe.options)
    if at_scale is None:
        st.caption("Designed on a sample of a file too large for this page? Apply the same recipe to the whole file "
                   "on a Dask cluster (a Parquet data set comes out; the risk floors are checked again on it):")
        st.code(f"python -m sdccore protect 'FULL_FILE/*.parquet' --recipe {name}_recipe.json --engine dask "
                f"--out {name}_protected/", language="bash")
    else:
        st.caption(f"This recipe does not run on the Dask engine for files beyond one machine: {at_scale}")
    return book


def _report(label, res, ev, shape, book, name, cfg=None):
    kind = st.radio("Report", ["internal", "external"], horizontal=True, key="report_kind",
                    format_func=lambda k: {"internal": "internal (with the seed)", "external": "external (no seed)"}[k])
    c = runs.comparison()
    html_doc = report.build_report(kind, session.data_name(), shape, session.roles(), label, res.options, ev,
                                   c["result"] if c else None, res.dependencies, res.notes, res.risk, res.plausibility,
                                   res.unsafe_reason, regressions=release.release_regressions(res)[1], codebook=book,
                                   history=history.history(),
                                   analyses=release.release_analyses(cfg) if cfg is not None else None,
                                   keys=release.release_keys(cfg) if cfg is not None else None,
                                   warnings=[w for w in [words.mean_shift_warning(session.data(), res.data,
                                                                                  session.protect_columns())] if w])
    st.download_button("Download the report (HTML)", html_doc, f"{name}_report_{kind}.html", "text/html",
                       key="download_report")


def _audit():
    st.subheader("Factor scores are never exported")
    st.write("If a variable is nearly uncorrelated with the others, its factor score reproduces it (Drechsler, Ronning "
             "and Bleninger). The audit shows how close an intruder with factor scores would get to each variable.")
    if st.button("Run the factor-score audit", key="run_audit"):
        compute.request_audit()
    if compute.audit_requested():
        with st.spinner("Trying every number of factors for every variable..."):
            a = compute.audit()
        t = a.table[["best_abs_cor", "method", "n_factors", "share_within_0.5pct", "flag"]]
        widgets.table(st, t.rename(columns={"best_abs_cor": "best |cor|", "n_factors": "factors",
                                       "share_within_0.5pct": "records within 0.5 %"}), key="audit_table")
        if a.flagged:
            st.warning(f"Factor scores would disclose: {', '.join(a.flagged)}.")
        else:
            st.success("No variable is recovered to |cor| >= 0.995 from factor scores.")


session.safe(body)
