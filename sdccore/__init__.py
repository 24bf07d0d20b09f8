"""sdccore: statistical disclosure control of continuous microdata.

Protection by factor analysis (FA), principal components (PCA) and microaggregation plus
noise (M-AGG), general or selective, with the classic rank swapping and correlated noise
baselines, and D'Acquisto and Naldi's removal of the largest principal components with a
utility stop (pca_remove, general).  The papers the code follows are listed in the
documentation's "Sample data and references" page (docs/data.md); every option of every
method is listed by ``option_schema(method)``.

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
  ``mdav_groups``; plug-in methods: ``register_method``, ``unregister_method``, ``Perturbed``; plug-in modules named
  by ``SDCCORE_PLUGINS``: ``load_plugins``; at scale (Dask): ``protect_dask``, ``DaskRelease``, ``scale_refusal``;
* releasing: ``Recipe``, ``Release``, ``make_release``, ``RECIPE_VERSION``, ``codebook``, ``codebook_bytes``;
* risk floors: ``RiskFloors``, ``RiskProfile``, ``UnsafeReleaseError``; plug-in intruders:
  ``register_intruder``, ``unregister_intruder``, ``intruders``, ``intruder_info``, ``IntruderInfo``,
  ``IntruderContext``;
* key variables (survey files): ``key_risk``, ``KeyRisk`` (sample frequencies, individual and
  household risk, k-anonymity, as sdcMicro measures them; ``key_risk_dask``, ``DaskKeyRisk``: the
  same on Dask), ``local_suppression``, ``household_size_columns`` (the columns that show
  the household size though its ids are not released),
  ``Suppression`` (blanks to k-anonymity; ``local_suppression_dask``, ``DaskSuppression``: the same
  blanks on Dask), ``pram``, ``Pram`` (post-randomisation with an
  invariant transition matrix, as sdcMicro's ``pram``), ``recode``, ``Recoding`` (global
  recoding: bands, merged categories, top and bottom codes) and ``suggest_recodings``
  (``RecodingSuggestions``, ``RecodingOption``: what each recoding saves and loses),
  ``default_recodings`` (``DefaultRecodings``: those of a key local suppression would blank
  for a tenth of the records, a release's default);
* measuring: ``evaluate``, ``Evaluation``, ``Scores``, ``dbrl``, ``interval_disclosure``,
  ``ID_REFERENCES``, ``ID_REFERENCE_TEXT``, ``default_id_reference``, ``pil``,
  ``propensity_score``, ``propensity_score_shape``, ``selectivity``, ``UTILITY_METRICS``,
  ``regression_check``, ``RegressionCheck``, ``analysis_validity``, ``AnalysisValidity``,
  ``analyst_checks``, ``AnalystChecks``; plug-in
  analyses: ``register_analysis``, ``unregister_analysis``, ``analyses``, ``analysis_info``, ``AnalysisInfo``;
* reporting: ``report`` (the namespace of the release's HTML report, ``report.release_report`` and
  ``report.build_report``, and the tables, charts and plain words it shares with the dashboard);
* comparing and choosing: ``compare``, ``Comparison``, ``search``, ``SearchResult``,
  ``recommend``, ``Recommendation``, ``load_bw_map``, ``simulate_bw_map``,
  ``stronger_settings``, ``warm_workers``, ``compile_kernels``.
"""

# Names are imported from their private modules on first use (PEP 562), so that
# ``python -m sdccore datasets`` and ``import sdccore`` do not load scipy, scikit-learn and
# numba before they are needed.  Static tools read the imports below.
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from ._data.audit import Audit, audit_factor_scores
    from ._release.codebook import codebook, codebook_bytes
    from ._choose.compare import SearchResult, compare, search, warm_workers
    from ._choose.warm import compile_kernels
    from ._data.explore import CorrelationIndices, correlation_indices
    from ._choose.comparison import Comparison
    from ._scale.engine import DaskRelease, protect_dask, scale_refusal
    from ._io.datasets import dataset_roles, list_datasets, load_dataset
    from ._measures.evaluate import Evaluation, Scores, evaluate
    from ._data.explore import Adequacy, correlation_matrix, sampling_adequacy, scree
    from ._io.formats import release_format, write_table
    from ._data.inspect import Problem, drop_incomplete_columns, drop_incomplete_rows, inspect_data
    from ._io.read import ReadResult, read_table
    from ._io.write import neutralize_formulas
    from ._risk.linkage import ID_REFERENCE_TEXT, ID_REFERENCES, default_id_reference
    from ._methods.mdav import mdav_groups
    from ._methods import MethodInfo, method_info, methods, register_method, unregister_method
    from ._methods._base import Perturbed
    from ._protect.options import CONDITIONAL_METHODS, Option, option_schema
    from ._measures.validity import AnalysisValidity, analysis_validity
    from ._measures.battery import AnalystChecks, analyst_checks
    from ._protect.pipeline import METHODS, Decomposition, ProtectionResult, decompose, min_swap_percent, protect
    from ._protect.recipe import RECIPE_VERSION, Recipe
    from ._release.release import Release, make_release
    from ._choose.recommend import Recommendation, load_bw_map, recommend, simulate_bw_map, stronger_settings
    from ._measures.regression import RegressionCheck, regression_check
    from ._methods.removal_kernel import UTILITY_METRICS, RemovalCurve
    from ._data.removal import removal_curve
    from ._core.plugins import load_plugins
    from ._risk.scores import dbrl, interval_disclosure
    from ._data.roles import RoleSuggestion, suggest_roles
    from ._risk.profile import RiskProfile
    from ._risk.registry import (IntruderContext, IntruderInfo, intruder_info, intruders, register_intruder,
                                 unregister_intruder)
    from ._measures.analyses import AnalysisInfo, analyses, analysis_info, register_analysis, unregister_analysis
    from ._risk.settings import RiskFloors, UnsafeReleaseError
    from ._keys.risk import KeyRisk, key_risk
    from ._scale.keys import DaskKeyRisk, key_risk_dask
    from ._scale.suppression import DaskSuppression, local_suppression_dask
    from ._keys.pram import Pram, pram
    from ._keys.recoding import Recoding, recode
    from ._keys.suggest import DefaultRecodings, RecodingOption, RecodingSuggestions, blank_warnings, \
        default_recodings, suggest_recodings
    from ._keys.suppression import Suppression, household_size_columns, local_suppression
    from ._measures.utility import pil, propensity_score, propensity_score_shape, selectivity
    from ._report import api as report

_EXPORTS = {
    "Adequacy": "_data.explore",
    "load_plugins": "_core.plugins",
    "AnalysisInfo": "_measures.analyses",
    "IntruderContext": "_risk.registry",
    "IntruderInfo": "_risk.registry",
    "KeyRisk": "_keys.risk",
    "DaskKeyRisk": "_scale.keys",
    "key_risk_dask": "_scale.keys",
    "DaskSuppression": "_scale.suppression",
    "local_suppression_dask": "_scale.suppression",
    "key_risk": "_keys.risk",
    "Suppression": "_keys.suppression",
    "Pram": "_keys.pram",
    "pram": "_keys.pram",
    "Recoding": "_keys.recoding",
    "recode": "_keys.recoding",
    "RecodingOption": "_keys.suggest",
    "RecodingSuggestions": "_keys.suggest",
    "suggest_recodings": "_keys.suggest",
    "blank_warnings": "_keys.suggest",
    "default_recodings": "_keys.suggest",
    "DefaultRecodings": "_keys.suggest",
    "local_suppression": "_keys.suppression",
    "household_size_columns": "_keys.suppression",
    "analyses": "_measures.analyses",
    "analysis_info": "_measures.analyses",
    "intruder_info": "_risk.registry",
    "intruders": "_risk.registry",
    "register_analysis": "_measures.analyses",
    "register_intruder": "_risk.registry",
    "unregister_analysis": "_measures.analyses",
    "unregister_intruder": "_risk.registry",
    "AnalysisValidity": "_measures.validity",
    "CONDITIONAL_METHODS": "_protect.options",
    "Audit": "_data.audit",
    "Comparison": "_choose.comparison",
    "compile_kernels": "_choose.warm",
    "CorrelationIndices": "_data.explore",
    "DaskRelease": "_scale.engine",
    "Decomposition": "_protect.pipeline",
    "Evaluation": "_measures.evaluate",
    "ID_REFERENCES": "_risk.linkage",
    "ID_REFERENCE_TEXT": "_risk.linkage",
    "METHODS": "_protect.pipeline",
    "MethodInfo": "_methods",
    "Option": "_protect.options",
    "Perturbed": "_methods._base",
    "Problem": "_data.inspect",
    "ProtectionResult": "_protect.pipeline",
    "RECIPE_VERSION": "_protect.recipe",
    "ReadResult": "_io.read",
    "Recipe": "_protect.recipe",
    "Recommendation": "_choose.recommend",
    "RegressionCheck": "_measures.regression",
    "Release": "_release.release",
    "RemovalCurve": "_methods.removal_kernel",
    "RiskFloors": "_risk.settings",
    "RiskProfile": "_risk.profile",
    "RoleSuggestion": "_data.roles",
    "Scores": "_measures.evaluate",
    "SearchResult": "_choose.compare",
    "UTILITY_METRICS": "_methods.removal_kernel",
    "UnsafeReleaseError": "_risk.settings",
    "analysis_validity": "_measures.validity",
    "analyst_checks": "_measures.battery",
    "AnalystChecks": "_measures.battery",
    "audit_factor_scores": "_data.audit",
    "codebook": "_release.codebook",
    "codebook_bytes": "_release.codebook",
    "compare": "_choose.compare",
    "correlation_indices": "_data.explore",
    "correlation_matrix": "_data.explore",
    "dataset_roles": "_io.datasets",
    "dbrl": "_risk.scores",
    "decompose": "_protect.pipeline",
    "default_id_reference": "_risk.linkage",
    "drop_incomplete_columns": "_data.inspect",
    "drop_incomplete_rows": "_data.inspect",
    "evaluate": "_measures.evaluate",
    "inspect_data": "_data.inspect",
    "interval_disclosure": "_risk.scores",
    "list_datasets": "_io.datasets",
    "load_bw_map": "_choose.recommend",
    "load_dataset": "_io.datasets",
    "make_release": "_release.release",
    "mdav_groups": "_methods.mdav",
    "method_info": "_methods",
    "methods": "_methods",
    "min_swap_percent": "_protect.pipeline",
    "neutralize_formulas": "_io.write",
    "option_schema": "_protect.options",
    "pil": "_measures.utility",
    "propensity_score": "_measures.utility",
    "propensity_score_shape": "_measures.utility",
    "protect": "_protect.pipeline",
    "protect_dask": "_scale.engine",
    "read_table": "_io.read",
    "register_method": "_methods",
    "recommend": "_choose.recommend",
    "release_format": "_io.formats",
    "regression_check": "_measures.regression",
    "removal_curve": "_data.removal",
    "sampling_adequacy": "_data.explore",
    "scale_refusal": "_scale.engine",
    "scree": "_data.explore",
    "search": "_choose.compare",
    "selectivity": "_measures.utility",
    "simulate_bw_map": "_choose.recommend",
    "stronger_settings": "_choose.recommend",
    "suggest_roles": "_data.roles",
    "unregister_method": "_methods",
    "warm_workers": "_choose.compare",
    "write_table": "_io.formats",
}



_MODULES = {"report": "_report.api"}  # public namespaces: a room of the package as a whole


def __getattr__(name):
    if name in _MODULES:
        import importlib

        value = importlib.import_module("sdccore." + _MODULES[name])
        globals()[name] = value
        return value
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sdccore' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module("sdccore." + module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


from ._core.version import __version__  # noqa: E402  (its home is the ground floor: the recipe reads it)

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
    "ProtectionResult", "decompose", "load_plugins", "mdav_groups", "method_info", "methods", "min_swap_percent", "option_schema", "protect",
    "protect_dask", "register_method", "scale_refusal", "unregister_method",
    # releasing
    "RECIPE_VERSION", "Recipe", "Release",
    "codebook", "codebook_bytes", "make_release",
    # risk floors
    "IntruderContext", "IntruderInfo", "RiskFloors", "RiskProfile", "UnsafeReleaseError",
    "intruder_info", "intruders", "register_intruder", "unregister_intruder",
    # key variables
    "DaskKeyRisk", "DaskSuppression", "DefaultRecodings", "KeyRisk", "Pram", "Recoding", "RecodingOption", "RecodingSuggestions",
    "Suppression", "blank_warnings", "default_recodings", "household_size_columns", "key_risk", "key_risk_dask", "local_suppression", "local_suppression_dask",
    "pram", "recode", "suggest_recodings",
    # measuring
    "AnalysisInfo", "AnalysisValidity", "AnalystChecks", "Evaluation", "ID_REFERENCES", "ID_REFERENCE_TEXT", "RegressionCheck",
    "Scores", "UTILITY_METRICS",
    "analyses", "analysis_info", "analysis_validity", "analyst_checks", "dbrl", "default_id_reference", "evaluate",
    "interval_disclosure", "pil", "propensity_score", "propensity_score_shape", "register_analysis",
    "regression_check", "selectivity", "unregister_analysis",
    # comparing and choosing
    "Comparison", "Recommendation", "SearchResult",
    "compare", "compile_kernels", "load_bw_map", "recommend", "search", "simulate_bw_map", "stronger_settings", "warm_workers",
    # reporting
    "report",
]
