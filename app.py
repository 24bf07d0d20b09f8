"""sdccore dashboard: statistical disclosure control of continuous microdata.

    streamlit run app.py

Pages hold no statistics: they lay out widgets and call the adapter around sdccore (``ui.session``,
``ui.compute``, ``ui.loading``, ``ui.release``, ``ui.runs``) and ``ui.figures`` (pure plotly builders).
The page list is ``ui.shell.PAGES``; every page starts with ``shell.enter()``, so that a page
opened first on a fresh server (a bookmark) still runs inside this script (ui/shell.py says why).
"""

import ui.privacy  # noqa: F401  first: Streamlit's outbound IP look-ups switched off (ui/privacy.py)
from pathlib import Path

import streamlit as st

import sdccore
from ui import history, loading, session, shell
# a local icon file: nothing is fetched from outside (an emoji or material icon here would be)
ICON = Path(__file__).resolve().parent / "ui" / "icon.png"
st.set_page_config(page_title="sdccore - disclosure control", page_icon=str(ICON), layout="wide")
try:  # the modules named in SDCCORE_PLUGINS register their methods, intruders and analyses
    sdccore.load_plugins()
except ValueError as exc:
    st.error(str(exc))
    st.stop()
loading.init()

with shell.app_run():
    shell.navigation().run()

# drawn after the page so that it shows what the page has just changed (roles, data)
with st.sidebar:
    df = session.data()
    st.markdown(f"**Data:** {session.data_name()}  \n{df.shape[0]:,} records x {df.shape[1]} columns")
    sens = session.columns_with("sensitive")
    pub = session.columns_with("public")
    st.markdown(
        f"**Sensitive ({len(sens)}):** {', '.join(sens) if sens else 'none (general protection)'}  \n"
        f"**Public:** {len(pub)} · **excluded:** {len(session.columns_with('excluded'))} · "
        f"**identifiers (dropped):** {len(session.columns_with('identifier'))}"
    )
    st.number_input("Seed (the release's key)", min_value=0, max_value=session.SEED_MAX, step=1,
                    value=session.seed(), key="seed_input", on_change=session.seed_changed,
                    help="The same seed, data and settings give the same protected file, byte for byte. Each "
                         "session starts with a random seed. Keep it, and the recipe that records it, private: "
                         "with the seed, anyone who has the release and this tool can make the same random draws "
                         "and undo the swaps and the noise.")
    if session.seed() < session.SHORT_SEED:
        st.warning(f"Seed {session.seed():,} is short enough to be found by trying every seed; anyone who finds "
                   f"it can undo the protection. Use a long random seed (a new session starts with one) for a "
                   f"file you publish.")
    steps = history.undo_steps()
    st.button(f"Undo: {steps[-1]['what']}" if steps else "Undo (nothing to undo yet)", key="undo_button",
              on_click=history.undo, disabled=not steps, use_container_width=True,
              help="Back to the settings before the last change of roles, strata/weights, method settings, seed, "
                   "floors or regressions; click again to go further back. The History page lists your runs.")
    st.caption("None of your data is written to disk; it stays in this browser session and is dropped when it ends.")

history.track_settings()
