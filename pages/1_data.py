"""Page 1: load data, assign roles, see problems with their fixes."""

import streamlit as st

from ui import compute, loading, session, shell, widgets
shell.enter()  # a page opened on its own is run inside app.py (ui/shell.py)
st.title("Data")
st.caption("Upload a file or pick a bundled sample, then say which columns are sensitive, public, "
           "excluded (released unchanged) or identifiers (dropped from the release).")

SAMPLES = {"tarragona": "Tarragona: 834 companies, 13 accounting figures",
           "casc": "CASC: 1080 persons, 13 income/tax variables (one exact sum)",
           "eia": "EIA: 4092 monthly utility records, 10 continuous + identifiers",
           "testdata": "Survey (sdcMicro's tutorial): 4580 persons in 1000 households, keys, 3 amounts, weights"}


def load_section():
    # our own key remembers the source across pages (widget state is dropped when the page is left)
    sources = ["Sample data set", "Upload a file"]
    src = st.radio("Source", sources, horizontal=True, key="source",
                   index=sources.index(session.source_choice()))
    session.set_source_choice(src)
    if src == "Sample data set":
        current = session.data_name()
        st.selectbox("Sample", list(SAMPLES), index=list(SAMPLES).index(current) if current in SAMPLES else None,
                     format_func=lambda k: SAMPLES[k], key="sample_choice", on_change=loading.load_sample,
                     placeholder="Choose a sample to replace the loaded data")
    else:
        c1, c2 = st.columns(2)
        sep = c1.selectbox("Separator", ["detect", ",", ";", "tab", "|"], key="sep_choice")
        dec = c2.selectbox("Decimal mark", ["detect", ".", ","], key="decimal_choice")
        up = st.file_uploader("CSV, Excel (.xlsx), Parquet, SPSS (.sav), Stata (.dta) or SAS (.sas7bdat, .xpt)",
                              type=["csv", "txt", "tsv", "xlsx", "parquet", "sav", "dta", "sas7bdat", "xpt"],
                              key="upload")
        if up is not None:
            if loading.upload(up, None if sep == "detect" else ("\t" if sep == "tab" else sep),
                            None if dec == "detect" else dec):
                st.rerun()
        if session.upload_error():
            st.error(session.upload_error() + " Your previous data are still loaded.")


def roles_section():
    df = session.data()
    num = session.numeric_columns(df)
    cols = list(df.columns)
    loading.seed_role_widgets()
    st.subheader("Roles")
    c1, c2, c3 = st.columns(3)
    c1.multiselect("Sensitive (protected most)", num, key="sensitive_select", on_change=loading.roles_from_widgets,
                   help="Leave empty to protect every numeric column (general protection).")
    c2.multiselect("Identifiers (dropped)", cols, key="identifier_select", on_change=loading.roles_from_widgets)
    c3.multiselect("Excluded (released unchanged)", cols, key="excluded_select", on_change=loading.roles_from_widgets)
    design_section(df, num)
    reasons = session.role_reasons()
    if reasons:
        st.caption("Suggested roles and why (change them above if they are wrong):")
        widgets.table(st, session.role_table(), hide_index=True, key="role_reasons_table")
    text = session.undecided_text()
    ids = session.unresolved_identifiers()
    if text or ids:
        what = []
        if ids:
            what.append(f"identifier-like column(s) {', '.join(ids)} not dropped")
        if text:
            what.append(f"text column(s) {', '.join(text)} released unchanged")
        if not session.passthrough_confirmed():
            st.error(f"Decide before release: {'; '.join(what)}. Mark them as identifiers (dropped), or confirm.")
        st.checkbox("Release these columns unchanged: they identify no one", key="confirm_passthrough",
                    value=session.passthrough_confirmed(), on_change=session.confirm_passthrough)
    widgets.table(st, session.numeric_summary(df), hide_index=True, key="column_table")


def design_section(df, num):
    """Strata and sampling weights (survey files): released unchanged, used by the methods."""
    loading.seed_design_widgets()
    c1, c2 = st.columns(2)
    sens = set(session.columns_with("sensitive"))
    c1.multiselect("Strata: protect within groups (FA, PCA, M-AGG)", [c for c in df.columns if c not in sens],
                   key="strata_select", on_change=loading.design_from_widgets,
                   help="Each group (e.g. region or industry) is protected on its own: no record is mixed with "
                        "another group's, every group's means are kept, and the risk floors are checked within each "
                        "group. Small groups are refused with their size and the fix. Released unchanged.")
    c2.selectbox("Sampling weight", [None] + [c for c in num if c not in sens], key="weight_select",
                 on_change=loading.design_from_widgets, format_func=lambda c: "none" if c is None else str(c),
                 help="Released unchanged; FA, PCA and M-AGG keep the weighted means (population estimates) "
                      "exactly instead of the unweighted ones.")


def keys_section(df):
    """Who could be recognised by the key variables (identity risk, as sdcMicro measures it)."""
    st.subheader("Key variables: could someone be recognised?")
    choice = session.key_choice()
    cols = [c for c in df.columns if session.roles().get(c) != "identifier"]
    ss = st.session_state
    ss["keys_select"] = [c for c in ss.get("keys_select", choice["keys"]) if c in cols]  # roles may have changed
    ss["household_select"] = h if (h := ss.get("household_select", choice["household"])) in cols else None
    c1, c2, c3 = st.columns([3, 2, 1])
    keys = c1.multiselect("Key variables (what an intruder may know of a person: region, sex, age ...)", cols,
                          key="keys_select",
                          help="Categories an intruder can learn from other sources. A record whose combination of "
                               "key values few others share can be recognised; a missing value matches every value.")
    hh = c2.selectbox("Household id", [None] + cols, key="household_select",
                      format_func=lambda c: "none" if c is None else str(c),
                      help="Persons of one household share it: a household is recognised if any member is.")
    k = c3.number_input("k", 2, 50, choice["k"], key="keys_k",
                        help="k-anonymity: every combination of key values shared by at least k records.")
    ids = choice["household_ids"]
    if hh:
        labels = {"drop": "not released (safe)", "new": "new random numbers", "kept": "kept as they are"}
        ids = st.radio("Household ids in the release", list(labels), index=list(labels).index(ids), horizontal=True,
                       key="household_ids_choice", format_func=labels.get,
                       help="Released ids show each household's make-up (its size and its members' keys), which "
                            "few households share: anyone who knows who lives there finds them. With new or kept "
                            "ids the household size counts as a key, and a release in which some household's "
                            "make-up is unique breaks a floor.")
    default, reasons = compute.default_recode(keys, hh, k, bool(hh) and ids != "drop")
    recode = recodings(keys, session.design().get("weights"), k, choice["recode"], default)
    if recode and recode == default and reasons:  # the default still in use: say what it is and why
        st.info("By default " + "; ".join(reasons) + ". Take it out of the recodings above to keep the detail (and "
                "the blanks).")
    session.set_key_choice(keys, hh, k, recode, ids)
    if not keys:
        st.caption("No key variables chosen: choose the categories an intruder could know to see who stands out.")
        return
    w = session.design().get("weights")
    r, blanks, costs, _ = compute.key_view(keys, w, hh, k, recode, ids)
    m = st.columns(4)
    m[0].metric("Unique records", f"{r.sample_uniques:,}", help="No other record shares their key values.")
    m[1].metric(f"Fewer than {r.k} alike", f"{r.below_k:,}", help=f"Records that break {r.k}-anonymity.")
    m[2].metric("Expected re-identifications", f"{r.expected_reidentifications:.1f}",
                help="The sum of the individual risks (Benedetti-Franconi, as sdcMicro)"
                     + ("" if w else "; without a sampling weight a record's risk is 1 / (records alike)") + ".")
    if r.household is not None:
        m[3].metric("Household risk (persons)", f"{r.household_expected:.1f}",
                    help="Expected re-identified persons when a household falls with any member.")
        if r.household_uniques:
            st.caption(f"{r.household_uniques:,} persons live in a household whose make-up (size and every member's "
                       f"key values) no other household shares: releasing the household ids would single them out.")
    st.markdown(r.summary().replace("\n", "  \n"))
    if r.below_k:
        cells = sum(blanks.values())
        per = ", ".join(f"{c} {v:,}" for c, v in blanks.items() if v)
        st.warning(f"{r.below_k:,} record(s) share their key values with fewer than {r.k - 1} other(s)"
                   f"{' after the recodings' if recode else ''}. Every release blanks {cells:,} key value(s) "
                   f"({per}) so that each combination is shared by at least {r.k} records; a recoding below "
                   f"blanks fewer. Leave a column out of the keys only if no intruder can know it.")
        for c in costs:  # a key mostly blank, or blanked unevenly: the analyses it costs, and the recoding that saves it
            st.warning(c + ".")
        st.caption("The rarest combinations (your own data, in this session only):")
        widgets.table(st, r.combinations().head(20), hide_index=True, key="key_combinations_table")


def recodings(keys, weights, k, chosen, default):
    """The recodings of the keys the custodian picks among the suggested ones (what each saves
    in blanks and loses in detail), as {key: Recoding dict}.  Until the custodian picks, the
    default (``sdccore.default_recodings``: those of a key that would otherwise be blank for a
    tenth of the records), which follows the keys, k and household."""
    if not keys:
        return {}
    sug = compute.recoding_suggestions(keys, weights, k)
    opts = {o.description: o for o in sug.options}
    by_rule = {(o.variable, str(o.recoding.to_dict())): o.description for o in sug.options}
    ss = st.session_state
    if not ss.get("recode_chosen"):
        chosen = default
        ss.pop("recode_select", None)
    if "recode_select" not in ss:  # the choice kept from an earlier visit
        ss["recode_select"] = [by_rule[(c, str(r))] for c, r in chosen.items() if (c, str(r)) in by_rule]
    ss["recode_select"] = [d for d in ss["recode_select"] if d in opts]
    with st.expander(f"Recode the keys ({len(sug.options)} suggestion(s): fewer blanks, less detail)",
                     expanded=bool(ss["recode_select"])):
        widgets.table(st, sug.table()[["variable", "recoding", "records below k after", "suppressions needed after",
                                  "entropy lost (bits)"]], hide_index=True, key="recoding_table")
        picked = st.multiselect("Apply to every release (one recoding a key)", list(opts), key="recode_select",
                                on_change=lambda: ss.__setitem__("recode_chosen", True),
                                help="A published recoding: the intruder is assumed to know it and to recode what "
                                     "it knows the same way.")
    out = {}
    for d in picked:
        o = opts[d]
        if o.variable in out:
            st.error(f"Two recodings of {o.variable} picked; keep one.")
            continue
        out[o.variable] = o.recoding.to_dict()
    return out


def problems_section():
    probs = compute.problems()
    st.subheader("Checks")
    open_decision = (session.undecided_text() or session.unresolved_identifiers()) \
        and not session.passthrough_confirmed()
    if not probs and open_decision:  # never a green all-clear under an open decision (issue 41)
        st.info("The columns to protect have no problems; the decision about the columns above is still open.")
    elif not probs:
        st.success("No problems found in the columns to protect.")
    for i, p in enumerate(probs):
        (st.error if p.blocking else st.info)(f"{p.message}. **Fix:** {p.fix}.")
        if p.kind == "empty_column":
            if st.button(f"Exclude {', '.join(p.columns)} (released as they are)", key="exclude_empty"):
                loading.set_roles({**session.roles(), **{c: "excluded" for c in p.columns}})
                st.rerun()
        if p.kind == "missing" and not p.blocking:
            missing_choice(p)
        elif p.kind in ("missing", "infinite") and session.data().shape[0] - p.rows >= session.MIN_ROWS:
            if st.button(f"Drop the {p.rows} record(s)", key=f"drop_rows_{p.kind}"):
                loading.drop_incomplete(p.columns)
                st.rerun()


MISSING_CHOICES = {
    "keep": "Keep them missing (default): the observed cells are protected, the missing ones stay empty in place",
    "drop_records": "Drop the records that have them",
    "drop_columns": "Leave the columns that have them out of the file",
}


def missing_choice(p):
    """One click for what to do with missing cells; dropping is undone by uploading again."""
    n_left = session.data().shape[0] - p.rows
    options = ["keep", "drop_columns"] + (["drop_records"] if n_left >= session.MIN_ROWS else [])
    choice = st.radio("Missing cells", options, format_func=MISSING_CHOICES.get, key="missing_choice",
                      help="Dropping records or columns changes the file for this session only; your file is not "
                           "touched, and 'Undo the drop' brings the full file back.")
    if choice != "keep":
        label = (f"Drop the {p.rows} record(s)" if choice == "drop_records"
                 else f"Leave out {', '.join(p.columns)}")
        if st.button(label, key="apply_missing_choice", type="primary"):
            if choice == "drop_records":
                loading.drop_incomplete(p.columns)
            else:
                loading.drop_columns(p.columns)
            st.rerun()


def restore_section():
    if session.can_restore_drop():
        st.button("Undo the drop: back to the file as loaded, with its roles", key="restore_drop",
                  on_click=loading.restore_before_drop)


def status_section(top):
    """The page's answer first (issue 41): may protection start, or what is still to decide."""
    probs = compute.problems()
    blockers = session.release_blockers() + [p.message for p in probs if p.blocking]
    with top:
        if blockers:
            more = f" (and {len(blockers) - 1} more below)" if len(blockers) > 1 else ""
            st.warning(f"Decide before release: {blockers[0]}{more}.")
            return
        sens, cols = session.sensitive(), session.protect_columns()
        what = (f"{', '.join(sens)} sensitive, {len(cols) - len(sens)} public variable(s)" if sens else
                f"general protection of {len(cols)} numeric column(s) (no sensitive variable picked)")
        st.success(f"Ready to protect {session.data_name()}: {what}. Next: **2 Explore** or **4 Run and compare**.")


def body():
    top = st.container()  # the status, drawn first, after the roles below are read
    load_section()
    restore_section()
    df = session.data()
    for note in session.read_notes():
        st.info(note)
    st.subheader(f"Preview: {session.data_name()} ({df.shape[0]:,} records x {df.shape[1]} columns)")
    widgets.table(st, df.head(200), key="preview")
    roles_section()
    keys_section(df)
    problems_section()
    status_section(top)


session.safe(body)
