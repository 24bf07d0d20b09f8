"""Sections that two pages draw the same way (the Run page for the configuration picked, the
Download page for the release to download): display only, the figures come from
``ui.release`` and ``ui.figures``."""

from __future__ import annotations

import streamlit as st

from ui import figures, release, widgets


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
                   .replace("; missed: ", "; not kept within the target: "))
    widgets.table(st, figures.analyses_table(checks), key=key, hide_index=True)
    why = figures.analyses_not_applying(checks)
    if why:
        st.caption("Not applicable here: " + why)


def keys_section(cfg, key, warnings=True):
    """What the release of ``cfg`` did to the key variables (local suppression to k), with what
    the blanks cost the analysts (``warnings``; the Download page says it above, before all)."""
    out = release.release_keys(cfg)
    if out is None:
        return
    b, a = out["before"], out["after"]
    st.markdown(f"**Key variables** ({', '.join(b.keys)}): {out['cells']:,} value(s) blanked so that every "
                f"combination is shared by at least {a.k} records (a blank matches every value)")
    m = st.columns(3)
    m[0].metric(f"Fewer than {a.k} alike", f"{a.below_k:,}", delta=f"{a.below_k - b.below_k:,} from the original",
                delta_color="inverse", help="Records whose key values fewer than k records share, as sdcMicro counts.")
    m[1].metric("Unique records", f"{a.sample_uniques:,}", delta=f"{a.sample_uniques - b.sample_uniques:,}",
                delta_color="inverse")
    m[2].metric("Expected re-identifications", f"{a.expected_reidentifications:.1f}",
                delta=f"{a.expected_reidentifications - b.expected_reidentifications:.1f}", delta_color="inverse")
    widgets.table(st, out["table"], key=key, hide_index=True)
    for w in out.get("warnings", ()) if warnings else ():
        st.warning(w + ".")
