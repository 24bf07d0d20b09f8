"""sdccore: statistical disclosure control of continuous microdata.

Protection by factor analysis (FA), principal components (PCA) and microaggregation plus
noise (M-AGG), general or selective, with the classic rank swapping and correlated noise
baselines, and D'Acquisto and Naldi's removal of the largest principal components with a
utility stop (pca_remove, general).  The papers the code follows are listed in the README's
"Method references" section; every option of every method is listed by ``option_schema(method)``.

The public names, by the step of the work they belong to:

* reading and checking data: ``read_table``, ``ReadResult``, ``inspect_data``, ``Problem``,
  ``drop_incomplete_rows``, ``neutralize_formulas``, ``suggest_roles``, ``RoleSuggestion``,
  ``list_datasets``, ``load_dataset``, ``dataset_roles``;
* exploring: ``correlation_matrix``, ``sampling_adequacy``, ``Adequacy``, ``scree``,
  ``correlation_indices``, ``CorrelationIndices``, ``audit_factor_scores``, ``Audit``,
  ``removal_curve``, ``RemovalCurve``;
* protecting: ``protect``, ``ProtectionResult``, ``decompose``, ``Decomposition``,
  ``option_schema``, ``Option``, ``METHODS``, ``min_swap_percent``, ``mdav_groups``;
* releasing: ``Recipe``, ``Release``, ``make_release``, ``RECIPE_VERSION``;
* risk floors: ``RiskFloors``, ``RiskProfile``, ``UnsafeReleaseError``;
* measuring: ``evaluate``, ``Evaluation``, ``Scores``, ``dbrl``, ``interval_disclosure``,
  ``ID_REFERENCES``, ``ID_REFERENCE_TEXT``, ``default_id_reference``, ``pil``,
  ``propensity_score``, ``propensity_score_shape``, ``selectivity``, ``UTILITY_METRICS``;
* comparing and choosing: ``compare``, ``Comparison``, ``search``, ``SearchResult``,
  ``recommend``, ``Recommendation``, ``load_bw_map``, ``simulate_bw_map``.
"""

from ._audit import Audit, audit_factor_scores
from ._compare import Comparison, CorrelationIndices, SearchResult, compare, correlation_indices, search
from ._datasets import dataset_roles, list_datasets, load_dataset
from ._evaluate import Evaluation, Scores, evaluate
from ._explore import Adequacy, correlation_matrix, sampling_adequacy, scree
from ._io import Problem, ReadResult, drop_incomplete_rows, inspect_data, neutralize_formulas, read_table
from ._linkage import ID_REFERENCE_TEXT, ID_REFERENCES, default_id_reference
from ._mdav import mdav_groups
from ._options import Option, option_schema
from ._protect import METHODS, Decomposition, ProtectionResult, decompose, min_swap_percent, protect
from ._recipe import RECIPE_VERSION, Recipe, Release, make_release
from ._recommend import Recommendation, load_bw_map, recommend, simulate_bw_map
from ._removal import UTILITY_METRICS, RemovalCurve, removal_curve
from ._risk import dbrl, interval_disclosure
from ._roles import RoleSuggestion, suggest_roles
from ._safety import RiskFloors, RiskProfile, UnsafeReleaseError
from ._utility import pil, propensity_score, propensity_score_shape, selectivity

__version__ = "0.1.0"

# grouped as in the module docstring; sorted within each group
__all__ = [
    # reading and checking data
    "Problem", "ReadResult", "RoleSuggestion",
    "dataset_roles", "drop_incomplete_rows", "inspect_data", "list_datasets", "load_dataset", "neutralize_formulas",
    "read_table", "suggest_roles",
    # exploring
    "Adequacy", "Audit", "CorrelationIndices", "RemovalCurve",
    "audit_factor_scores", "correlation_indices", "correlation_matrix", "removal_curve", "sampling_adequacy", "scree",
    # protecting
    "Decomposition", "METHODS", "Option", "ProtectionResult",
    "decompose", "mdav_groups", "min_swap_percent", "option_schema", "protect",
    # releasing
    "RECIPE_VERSION", "Recipe", "Release",
    "make_release",
    # risk floors
    "RiskFloors", "RiskProfile", "UnsafeReleaseError",
    # measuring
    "Evaluation", "ID_REFERENCES", "ID_REFERENCE_TEXT", "Scores", "UTILITY_METRICS",
    "dbrl", "default_id_reference", "evaluate", "interval_disclosure", "pil", "propensity_score",
    "propensity_score_shape", "selectivity",
    # comparing and choosing
    "Comparison", "Recommendation", "SearchResult",
    "compare", "load_bw_map", "recommend", "search", "simulate_bw_map",
]
