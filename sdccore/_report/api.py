"""The public namespace ``sdccore.report``: the reports of a release, and the tables, charts and
words they share with the dashboard and the command line (one source: the dashboard's Download
page and ``python -m sdccore protect ... --report PATH`` write the same report)."""

from .assemble import release_analyses, release_codebook, release_keys, release_report, release_roles
from .charts import (COLORS, LAYOUT, MAX_BAND_LINES, SPREADS, UTILITY_AXES, band_risk_figure, color,
                     measures_figure, own_correlation_figure, risk_utility_figure)
from .document import BAND_HEADINGS, VALIDITY_HEADINGS, build_report, id_intruder, intruder_words, option_rows
from .labels import (MEAN_TOLERANCE, PRIOR_MOST, SCORE_NAMES, intruder_heading, mean_shift_warning,
                     mean_shifts, prior_warning)
from .tables import (analyses_not_applying, analyses_table, codebook_table, history_table, intruder_table,
                     not_applicable, plausibility_table, regression_table, risk_columns, risk_table)

__all__ = ["BAND_HEADINGS", "COLORS", "LAYOUT", "MAX_BAND_LINES", "PRIOR_MOST", "SCORE_NAMES", "SPREADS",
           "UTILITY_AXES", "VALIDITY_HEADINGS", "analyses_not_applying", "analyses_table", "band_risk_figure",
           "build_report", "codebook_table", "color", "history_table", "id_intruder", "intruder_heading",
           "intruder_table", "intruder_words", "measures_figure", "not_applicable", "option_rows",
           "own_correlation_figure", "plausibility_table", "prior_warning", "regression_table", "release_analyses", "release_codebook",
           "release_keys", "release_report", "release_roles", "risk_columns", "risk_table", "risk_utility_figure"]

from .glossary import Term, glossary, glossary_html, glossary_markdown, method_words, tip  # noqa: E402

__all__ += ["MEAN_TOLERANCE", "mean_shift_warning", "mean_shifts", "Term", "glossary", "glossary_html", "glossary_markdown", "method_words", "tip"]
