"""Sections that two pages draw the same way (the Run page for the configuration picked, the
Download page for the release to download): display only, the figures come from
``ui.release`` and ``ui.figures``."""

from __future__ import annotations

import streamlit as st

from ui import figures, release


def analyses_section(cfg, key):
    """What analysts keep in the release of ``cfg``: each analysis researchers run, fitted on
    the original and on the release, against its target (``sdccore.analyst_checks``)."""
    checks = release.release_analyses(cfg)
    if checks is None:
        return
    st.markdown("**What analysts keep** (each analysis fitted on the original and on this release; the worst "
                "protected variable against its target)")
    if checks.ok:
        st.success("Every analysis with a target keeps it in this release.")
    else:
        st.warning(checks.summary().head.replace("What analysts keep: ", "Analysts would see a difference: ")
                   .replace(" missed", " not kept within the target."))
    st.dataframe(figures.analyses_table(checks), key=key, hide_index=True)
    why = figures.analyses_not_applying(checks)
    if why:
        st.caption("Not applicable here: " + why)
