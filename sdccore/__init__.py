"""sdccore: statistical disclosure control of continuous microdata.

Protection by factor analysis (FA), principal components (PCA) and microaggregation plus
noise (M-AGG), general or selective, with the classic rank swapping and correlated noise
baselines, and D'Acquisto and Naldi's removal of the largest principal components with a
utility stop (pca_remove, general).  The papers the code follows are listed in the README's
"Method references" section; every option of every method is listed by ``option_schema(method)``.

The public names, by the step of the work they belong to:

* reading and checking data: ``read_table``, ``ReadResult``, ``inspect_data``, ``Problem``,
  ``drop_incomplete_rows``, ``drop_incomplete_columns``, ``neutralize_formulas``, ``write_table``,
  ``release_format``,
  ``suggest_roles``, ``RoleSuggestion``,
  ``list_datasets``, ``load_dataset``, ``dataset_roles``;
* exploring: ``correlation_matrix``, ``sampling_adequacy``, ``Adequacy``, ``scree``,
  ``correlation_indices``, ``CorrelationIndices``, ``audit_factor_scores``, ``Audit``,
  ``removal_curve``, ``RemovalCurve``;
* protecting: ``protect``, ``ProtectionResult``, ``decompose``, ``Decomposition``,
  ``option_schema``, ``Option``, ``METHODS``, ``CONDITIONAL_METHODS``, ``methods``, ``method_info``, ``MethodInfo``, ``min_swap_percent``,
  ``mdav_groups``; plug-in methods: ``register_method``, ``unregister_method``, ``Perturbed``; at scale (Dask): ``protect_dask``, ``DaskRelease``, ``scale_refusal``;
* releasing: ``Recipe``, ``Release``, ``make_release``, ``RECIPE_VERSION``, ``codebook``, ``codebook_bytes``;
* risk floors: ``RiskFloors``, ``RiskProfile``, ``UnsafeReleaseError``;
* measuring: ``evaluate``, ``Evaluation``, ``Scores``, ``dbrl``, ``interval_disclosure``,
  ``ID_REFERENCES``, ``ID_REFERENCE_TEXT``, ``default_id_reference``, ``pil``,
  ``propensity_score``, ``propensity_score_shape``, ``selectivity``, ``UTILITY_METRICS``,
  ``regression_check``, ``RegressionCheck``, ``analysis_validity``, ``AnalysisValidity``;
* comparing and choosing: ``compare``, ``Comparison``, ``search``, ``SearchResult``,
  ``recommend``, ``Recommendation``, ``load_bw_map``, ``simulate_bw_map``,
  ``stronger_settings``, ``warm_workers``.
"""

# Names are imported from their private modules on first use (PEP 562), so that
# ``python -m sdccore datasets`` and ``import sdccore`` do not load scipy, scikit-learn and
# numba before they are needed.  Static tools read the imports below.
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ._audit import Audit, audit_factor_scores
    from ._codebook import codebook, codebook_bytes
    from ._compare import SearchResult, compare, search, warm_workers
    from ._explore import CorrelationIndices, correlation_indices
    from ._comparison import Comparison
    from ._dask import DaskRelease, protect_dask
    from ._datasets import dataset_roles, list_datasets, load_dataset
    from ._evaluate import Evaluation, Scores, evaluate
    from ._explore import Adequacy, correlation_matrix, sampling_adequacy, scree
    from ._formats import release_format, write_table
    from ._inspect import Problem, drop_incomplete_columns, drop_incomplete_rows, inspect_data
    from ._io import ReadResult, read_table
    from ._writing import neutralize_formulas
    from ._linkage import ID_REFERENCE_TEXT, ID_REFERENCES, default_id_reference
    from ._mdav import mdav_groups
    from ._methods import MethodInfo, method_info, methods, register_method, unregister_method
    from ._methods._base import Perturbed
    from ._options import CONDITIONAL_METHODS, Option, option_schema
    from ._validity import AnalysisValidity, analysis_validity
    from ._protect import METHODS, Decomposition, ProtectionResult, decompose, min_swap_percent, protect
    from ._recipe import RECIPE_VERSION, Recipe
    from ._release import Release, make_release
    from ._recommend import Recommendation, load_bw_map, recommend, simulate_bw_map, stronger_settings
    from ._regression import RegressionCheck, regression_check
    from ._removal import UTILITY_METRICS, RemovalCurve, removal_curve
    from ._risk import dbrl, interval_disclosure
    from ._roles import RoleSuggestion, suggest_roles
    from ._safety import RiskFloors, RiskProfile, UnsafeReleaseError
    from ._utility import pil, propensity_score, propensity_score_shape, selectivity

_EXPORTS = {
    "Adequacy": "_explore",
    "AnalysisValidity": "_validity",
    "CONDITIONAL_METHODS": "_options",
    "Audit": "_audit",
    "Comparison": "_comparison",
    "CorrelationIndices": "_explore",
    "DaskRelease": "_dask",
    "Decomposition": "_protect",
    "Evaluation": "_evaluate",
    "ID_REFERENCES": "_linkage",
    "ID_REFERENCE_TEXT": "_linkage",
    "METHODS": "_protect",
    "MethodInfo": "_methods",
    "Option": "_options",
    "Perturbed": "_methods._base",
    "Problem": "_inspect",
    "ProtectionResult": "_protect",
    "RECIPE_VERSION": "_recipe",
    "ReadResult": "_io",
    "Recipe": "_recipe",
    "Recommendation": "_recommend",
    "RegressionCheck": "_regression",
    "Release": "_release",
    "RemovalCurve": "_removal",
    "RiskFloors": "_safety",
    "RiskProfile": "_safety",
    "RoleSuggestion": "_roles",
    "Scores": "_evaluate",
    "SearchResult": "_compare",
    "UTILITY_METRICS": "_removal",
    "UnsafeReleaseError": "_safety",
    "analysis_validity": "_validity",
    "audit_factor_scores": "_audit",
    "codebook": "_codebook",
    "codebook_bytes": "_codebook",
    "compare": "_compare",
    "correlation_indices": "_explore",
    "correlation_matrix": "_explore",
    "dataset_roles": "_datasets",
    "dbrl": "_risk",
    "decompose": "_protect",
    "default_id_reference": "_linkage",
    "drop_incomplete_columns": "_inspect",
    "drop_incomplete_rows": "_inspect",
    "evaluate": "_evaluate",
    "inspect_data": "_inspect",
    "interval_disclosure": "_risk",
    "list_datasets": "_datasets",
    "load_bw_map": "_recommend",
    "load_dataset": "_datasets",
    "make_release": "_release",
    "mdav_groups": "_mdav",
    "method_info": "_methods",
    "methods": "_methods",
    "min_swap_percent": "_protect",
    "neutralize_formulas": "_writing",
    "option_schema": "_options",
    "pil": "_utility",
    "propensity_score": "_utility",
    "propensity_score_shape": "_utility",
    "protect": "_protect",
    "protect_dask": "_dask",
    "read_table": "_io",
    "register_method": "_methods",
    "recommend": "_recommend",
    "release_format": "_formats",
    "regression_check": "_regression",
    "removal_curve": "_removal",
    "sampling_adequacy": "_explore",
    "scale_refusal": "_dask",
    "scree": "_explore",
    "search": "_compare",
    "selectivity": "_utility",
    "simulate_bw_map": "_recommend",
    "stronger_settings": "_recommend",
    "suggest_roles": "_roles",
    "unregister_method": "_methods",
    "warm_workers": "_compare",
    "write_table": "_formats",
}



def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sdccore' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module("sdccore." + module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__version__ = "0.1.0"

# grouped as in the module docstring; sorted within each group
__all__ = [
    # reading and checking data
    "Problem", "ReadResult", "RoleSuggestion",
    "dataset_roles", "drop_incomplete_columns", "drop_incomplete_rows", "inspect_data", "list_datasets", "load_dataset", "neutralize_formulas",
    "read_table", "release_format", "suggest_roles", "write_table",
    # exploring
    "Adequacy", "Audit", "CorrelationIndices", "RemovalCurve",
    "audit_factor_scores", "correlation_indices", "correlation_matrix", "removal_curve", "sampling_adequacy", "scree",
    # protecting
    "CONDITIONAL_METHODS", "DaskRelease", "Decomposition", "METHODS", "MethodInfo", "Option", "Perturbed",
    "ProtectionResult", "decompose", "mdav_groups", "method_info", "methods", "min_swap_percent", "option_schema", "protect",
    "protect_dask", "register_method", "scale_refusal", "unregister_method",
    # releasing
    "RECIPE_VERSION", "Recipe", "Release",
    "codebook", "codebook_bytes", "make_release",
    # risk floors
    "RiskFloors", "RiskProfile", "UnsafeReleaseError",
    # measuring
    "AnalysisValidity", "Evaluation", "ID_REFERENCES", "ID_REFERENCE_TEXT", "RegressionCheck", "Scores",
    "UTILITY_METRICS", "analysis_validity", "dbrl", "default_id_reference", "evaluate", "interval_disclosure", "pil", "propensity_score",
    "propensity_score_shape", "regression_check", "selectivity",
    # comparing and choosing
    "Comparison", "Recommendation", "SearchResult",
    "compare", "load_bw_map", "recommend", "search", "simulate_bw_map", "stronger_settings", "warm_workers",
]
