"""Page 1: load data, assign roles, see problems with their fixes."""

import streamlit as st

import sdccore
from ui import state

st.title("Data")
st.caption("Upload a file or pick a bundled sample, then say which columns are sensitive, public, "
           "excluded (released unchanged) or identifiers (dropped from the release).")

SAMPLES = {"tarragona": "Tarragona: 834 companies, 13 accounting figures",
           "casc": "CASC: 1080 persons, 13 income/tax variables (one exact sum)",
           "eia": "EIA: 4092 monthly utility records, 10 continuous + identifiers"}


def _load_sample():
    name = st.session_state["sample_choice"]
    state.set_data(sdccore.load_dataset(name), name, (), sample=True)


def load_section():
    # our own key remembers the source across pages (widget state is dropped when the page is left)
    sources = ["Sample data set", "Upload a file"]
    src = st.radio("Source", sources, horizontal=True, key="source",
                   index=sources.index(st.session_state["source_choice"]))
    st.session_state["source_choice"] = src
    if src == "Sample data set":
        current = st.session_state["data_name"]
        st.selectbox("Sample", list(SAMPLES), index=list(SAMPLES).index(current) if current in SAMPLES else None,
                     format_func=lambda k: SAMPLES[k], key="sample_choice", on_change=_load_sample,
                     placeholder="Choose a sample to replace the loaded data")
    else:
        c1, c2 = st.columns(2)
        sep = c1.selectbox("Separator", ["detect", ",", ";", "tab", "|"], key="sep_choice")
        dec = c2.selectbox("Decimal mark", ["detect", ".", ","], key="decimal_choice")
        up = st.file_uploader("CSV, Excel (.xlsx) or Parquet", type=["csv", "txt", "tsv", "xlsx", "parquet"], key="upload")
        if up is not None:
            sig = (up.file_id, sep, dec)
            if st.session_state["upload_sig"] != sig:
                st.session_state["upload_sig"] = sig
                err = state.handle_upload(up.getvalue(), up.name,
                                          sep=None if sep == "detect" else ("\t" if sep == "tab" else sep),
                                          decimal=None if dec == "detect" else dec)
                st.session_state["upload_error"] = err
                if err is None:
                    st.rerun()
        if st.session_state["upload_error"]:
            st.error(st.session_state["upload_error"] + " Your previous data are still loaded.")


def roles_section():
    df = state.data()
    num = sdccore._validation.numeric_columns(df)
    cols = list(df.columns)
    roles = state.roles()
    st.subheader("Roles")
    c1, c2, c3 = st.columns(3)
    sens = c1.multiselect("Sensitive (protected most)", num, default=[c for c in num if roles.get(c) == "sensitive"],
                          key="sensitive_select", help="Leave empty to protect every numeric column (general protection).")
    ident = c2.multiselect("Identifiers (dropped)", cols, default=[c for c in cols if roles.get(c) == "identifier"],
                           key="identifier_select")
    excl = c3.multiselect("Excluded (released unchanged)", cols, default=[c for c in cols if roles.get(c) == "excluded"],
                          key="excluded_select")
    new = {}
    for c in cols:
        if c in ident:
            new[c] = "identifier"
        elif c in excl:
            new[c] = "excluded"
        elif c in sens:
            new[c] = "sensitive"
        elif c in num:
            new[c] = "public"
        else:
            new[c] = "excluded"
    if new != roles:
        st.session_state["roles"] = new
    st.dataframe(state.numeric_summary(df), hide_index=True, key="column_table")


def problems_section():
    probs = state.problems()
    st.subheader("Checks")
    if not probs:
        st.success("No problems found in the columns to protect.")
    for i, p in enumerate(probs):
        (st.error if p.blocking else st.info)(f"{p.message}. **Fix:** {p.fix}.")
        if p.kind in ("missing", "infinite"):
            if st.button(f"Drop the {p.rows} record(s)", key=f"drop_rows_{p.kind}"):
                clean, n = sdccore.drop_incomplete_rows(state.data(), state.protect_columns())
                roles = dict(state.roles())
                state.set_data(clean, st.session_state["data_name"], [f"{n} record(s) with missing or infinite values dropped"])
                st.session_state["roles"] = roles
                st.rerun()


def body():
    load_section()
    df = state.data()
    for note in st.session_state.get("read_notes", []):
        st.info(note)
    st.subheader(f"Preview: {st.session_state['data_name']} ({df.shape[0]:,} records x {df.shape[1]} columns)")
    st.dataframe(df.head(200), key="preview")
    roles_section()
    problems_section()


state.safe(body)
