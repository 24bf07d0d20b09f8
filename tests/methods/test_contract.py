"""The method contract (issue 37, point 3): every step a method's module may provide is
declared once, typed, in ``sdccore._methods._base.MethodSteps``; every built-in module keeps
it, a plug-in that does not is refused when it is registered, and a layer asking for a step
that is not in it is an error, not a silent default."""

import importlib
import inspect
import types

import numpy as np
import pytest

import sdccore
from sdccore import _methods
from sdccore._methods import _base


def test_the_contract_lists_every_step_with_its_arguments():
    assert set(_base.CONTRACT) == {"options", "perturb", "plan", "check", "risk_window", "loadings_prefix",
                                   "variance_share", "keeps", "min_stratum_size", "scale_refusal", "perturb_scale",
                                   "search_candidates", "release_check"}
    assert _base.CONTRACT["perturb"] == 7 and _base.CONTRACT["options"] == 1


@pytest.mark.parametrize("name", _methods.BUILT_IN)
def test_every_built_in_method_keeps_the_contract(name):
    module = importlib.import_module(_methods.method_info(name).steps)
    assert _base.contract_problems(module) == []
    # nothing in a method module looks like a step without being one (a misspelt step would
    # be silently ignored): its public functions are steps or helpers named otherwise
    steps = {n for n, f in vars(module).items() if inspect.isfunction(f) and f.__module__ == module.__name__
             and n in _base.CONTRACT}
    assert {"options", "perturb"} <= steps


def test_a_plug_in_whose_steps_do_not_fit_is_refused_when_registered():
    bad = types.SimpleNamespace(options=lambda method: [], perturb=lambda prep, plan, Xk: None,
                                keeps=lambda: ("a", "b"))
    with pytest.raises(ValueError) as e:
        sdccore.register_method(sdccore.MethodInfo("badfit", "Bad", steps=bad))
    msg = str(e.value)
    assert "plug-in method 'badfit' does not keep the method contract" in msg
    assert "perturb(prep, plan, Xk) cannot be called as perturb(prep, plan, method, o, gen, Xk, full)" in msg
    assert "keeps() cannot be called as keeps(method, options)" in msg
    assert "badfit" not in _methods.REGISTRY
    # *args fits every call
    ok = types.SimpleNamespace(options=lambda *a: [], perturb=lambda *a: None)
    sdccore.register_method(sdccore.MethodInfo("argsfit", "Args", steps=ok))
    sdccore.unregister_method("argsfit")


def test_a_layer_asking_for_a_step_outside_the_contract_is_an_error():
    with pytest.raises(AttributeError, match="'risk_windw' is not a step of the method contract"):
        _methods.hook("rankswap", "risk_windw")
    assert _methods.hook("rankswap", "risk_window")("rankswap", {"p": 40, "exchange": "pairs"}) == 0.4
    assert _methods.hook("rankswap", "risk_window")("rankswap", {"p": 40, "exchange": "shifted"}) == 0.4
    assert _methods.hook("magg", "risk_window") is None


def test_perturbed_and_scaled_are_built_by_keyword():
    X = np.zeros((3, 2))
    p = _base.Perturbed(X=X, notes=("n",))
    assert p.loadings is None and p.perturbed == () and p.planned is None and p.basis is None
    assert _base.Perturbed(X, None, (), None, None, ("n",)) == p  # positional, as plug-ins wrote it, still works
    with pytest.raises(TypeError):
        _base.Scaled(X, ["n"])  # keyword-only
    s = _base.Scaled(X=X, notes=["n"])
    assert s.plan is None and s.planned is None
