"""Page 6: the configurations run in this browser session: go back to one, compare two."""

import streamlit as st

from ui import figures, history, release, session, shell, widgets
shell.enter()  # a page opened on its own is run inside app.py (ui/shell.py)
st.title("History of this session")
st.caption("Every comparison and every release you looked at in this browser session, with its settings, seed, "
           "scores and per-variable risk. Nothing is written to disk: the list ends with the session. Undo (in the "
           "sidebar) steps back through your changes of roles and settings.")


def body():
    steps = history.undo_steps()
    c0, c00 = st.columns([1, 2])
    c0.button("Undo the last change", key="history_undo", on_click=history.undo, disabled=not steps)
    c00.caption(("Changes that can be undone, latest first: " + "; ".join(f"{u['time']} {u['what']}"
                                                                         for u in reversed(steps[-8:])))
                if steps else "No change of roles or settings yet.")
    hist = history.history()
    if not hist:
        st.info("Nothing run yet: run a comparison on page 4 or open a release; each run is listed here.")
        return
    widgets.table(st, figures.history_table(hist), hide_index=True, key="history_table")
    ids = [h["id"] for h in hist]
    names = {h["id"]: f"#{h['id']} {h['time']} {h['kind']}: {h['label']} (seed {h['seed']}, {h['data_name']})"
             for h in hist}
    st.subheader("Go back to a configuration")
    c1, c2 = st.columns([3, 1])
    pick = c1.selectbox("Run", ids, index=len(ids) - 1, format_func=names.get, key="history_pick")
    if c2.button("Restore its settings", key="history_restore",
                 help="Roles, strata/weights, every method's settings, seed, floors and regressions as they were "
                      "for that run (undo brings you back)."):
        why = release.go_back(pick)
        if why:
            st.error(f"Cannot go back: {why}.")
        else:
            st.success(f"Settings of run #{pick} restored; the Configure and Run pages show them.")
    st.subheader("Compare two runs side by side")
    c3, c4 = st.columns(2)
    a = c3.selectbox("First", ids, index=max(0, len(ids) - 2), format_func=names.get, key="history_a")
    b = c4.selectbox("Second", ids, index=len(ids) - 1, format_func=names.get, key="history_b")
    ea, eb = (next(h for h in hist if h["id"] == i) for i in (a, b))
    opts, scores, risk = figures.history_pair(ea, eb)
    c5, c6 = st.columns(2)
    c5.caption("Settings (only those that differ are marked)")
    widgets.table(c5, opts, key="history_options")
    c6.caption("Scores (0 best)")
    widgets.table(c6, scores, key="history_scores")
    if risk is not None:
        st.caption("Per-variable risk (worst over a comparison's runs)")
        widgets.table(st, risk, key="history_risk")


session.safe(body)
