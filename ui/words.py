"""Plain words the pages share: sdccore's (``sdccore.report``: the reports and the command line
use the same).  No Streamlit here: the pages show the words."""

from __future__ import annotations

import sdccore

intruder_heading = sdccore.report.intruder_heading
prior_warning = sdccore.report.prior_warning
PRIOR_MOST = sdccore.report.PRIOR_MOST
mean_shift_warning = sdccore.report.mean_shift_warning


def violation(text: str) -> str:
    """A broken floor as Markdown: what was found, then the fix on a line of its own (a long
    sentence with its fix inside was read as one block of 60 to 100 words)."""
    finding, sep, fix = str(text).partition("; fix: ")
    return f"{finding}.  \n**Fix:** {fix[:1].upper() + fix[1:]}." if sep else str(text)
