"""sdccore: statistical disclosure control of continuous microdata.

Protection by factor analysis (FA), principal components (PCA) and microaggregation plus
noise (M-AGG), general or selective, with the classic rank swapping and correlated noise
baselines, and D'Acquisto and Naldi's removal of the largest principal components with a
utility stop (pca_remove, general).  Definitions: docs/methods.md (from the project's methods specification).
"""

from ._audit import Audit, audit_factor_scores, factor_scores
from ._compare import Comparison, CorrelationIndices, SearchResult, compare, correlation_indices, search
from ._explore import Adequacy, correlation_matrix, sampling_adequacy, scree
from ._io import Problem, ReadResult, drop_incomplete_rows, inspect_data, neutralize_formulas, prepare_release, read_table, release_csv
from ._datasets import dataset_roles, list_datasets, load_dataset
from ._mdav import mdav_groups
from ._measures import ID_REFERENCE_TEXT, ID_REFERENCES, Evaluation, dbrl, default_id_reference, evaluate, interval_disclosure, pil, polynomial_features, propensity_score, propensity_score_shape, selectivity
from ._recommend import Recommendation, load_bw_map, recommend, simulate_bw_map
from ._removal import UTILITY_METRICS, RemovalCurve, removal_curve
from ._options import Option, option_schema
from ._protect import METHODS, Decomposition, ProtectionResult, decompose, min_swap_percent, protect
from ._recipe import RECIPE_VERSION, Recipe, Release, child_rng, child_seeds, make_release
from ._roles import RoleSuggestion, suggest_roles
from ._safety import RiskFloors, RiskProfile, UnsafeReleaseError

__version__ = "0.1.0"

__all__ = [
    "Adequacy",
    "Problem",
    "ReadResult",
    "correlation_matrix",
    "drop_incomplete_rows",
    "inspect_data",
    "neutralize_formulas",
    "prepare_release",
    "read_table",
    "sampling_adequacy",
    "scree",
    "Audit",
    "Comparison",
    "CorrelationIndices",
    "Recommendation",
    "SearchResult",
    "audit_factor_scores",
    "compare",
    "correlation_indices",
    "factor_scores",
    "load_bw_map",
    "recommend",
    "search",
    "simulate_bw_map",
    "METHODS",
    "Decomposition",
    "ProtectionResult",
    "Evaluation",
    "dataset_roles",
    "dbrl",
    "evaluate",
    "ID_REFERENCES",
    "ID_REFERENCE_TEXT",
    "default_id_reference",
    "interval_disclosure",
    "pil",
    "polynomial_features",
    "propensity_score",
    "propensity_score_shape",
    "selectivity",
    "decompose",
    "list_datasets",
    "load_dataset",
    "mdav_groups",
    "protect",
    "removal_curve",
    "RemovalCurve",
    "UTILITY_METRICS",
    "min_swap_percent",
    "RECIPE_VERSION",
    "RiskFloors",
    "release_csv",
    "RiskProfile",
    "RoleSuggestion",
    "UnsafeReleaseError",
    "suggest_roles",
]
