"""Plain words the pages share: sdccore's (``sdccore.report``: the reports and the command line
use the same).  No Streamlit here: the pages show the words."""

from __future__ import annotations

import sdccore

intruder_heading = sdccore.report.intruder_heading
prior_warning = sdccore.report.prior_warning
PRIOR_MOST = sdccore.report.PRIOR_MOST
mean_shift_warning = sdccore.report.mean_shift_warning
