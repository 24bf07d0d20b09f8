"""The HTML report of a release: sdccore's (``sdccore.report``), the one source the command
line's ``--report`` and ``--external-report`` write too."""

from __future__ import annotations

import sdccore

build_report = sdccore.report.build_report
option_rows = sdccore.report.option_rows
intruder_words = sdccore.report.intruder_words
id_intruder = sdccore.report.id_intruder
