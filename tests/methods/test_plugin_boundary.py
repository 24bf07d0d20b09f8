"""What a plug-in method's steps return is checked where the pipeline calls them (issue
"hostile inputs"): a step that raises, returns None, a list or a wrongly shaped array is one
ValueError naming the plug-in (its registered name), the step and what it returned; the
built-in methods are called directly, untouched.

This module is also the steps module of the plug-in 'boom' (``options`` and ``perturb``
below), so that compare's worker processes can import it."""

import types

import numpy as np
import pytest

import sdccore
import toy_method
from sdccore import Perturbed
from sdccore._methods import steps


# ---- the steps of the plug-in 'boom' (a module compare's workers import by name)
options = toy_method.options


def perturb(prep, plan, method, o, gen, Xk, full):
    raise RuntimeError("boom: the plug-in broke\nand said more on a second line")


@pytest.fixture(scope="module")
def tarr():
    return sdccore.load_dataset("tarragona")


@pytest.fixture()
def plug():
    """Register a plug-in 'bad' whose perturb is the given function."""
    names = []

    def make(perturb_fn, name="bad", **steps_):
        ns = types.SimpleNamespace(**{"options": toy_method.options, "check": toy_method.check, "perturb": perturb_fn,
                                      **steps_})
        sdccore.register_method(sdccore.MethodInfo(name, name.title(), steps=ns), replace=True)
        names.append(name)

    yield make
    for n in names:
        sdccore.unregister_method(n)


@pytest.fixture()
def boom():
    sdccore.register_method(sdccore.MethodInfo("boom", "Boom", steps="test_plugin_boundary"), replace=True)
    yield "boom"
    sdccore.unregister_method("boom")


def _raise(*a):
    raise RuntimeError("boom: the plug-in broke\nand said more on a second line")


@pytest.mark.parametrize("fn, text", [
    (lambda *a: None, "plug-in method 'bad' returned None from perturb; it must return sdccore.Perturbed(X=array of "
                      "shape (834, 13)"),
    (lambda p, pl, m, o, g, Xk, f: [Xk], "plug-in method 'bad' returned list of length 1 from perturb; it must "
                                         "return sdccore.Perturbed(X=array of shape (834, 13)"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(Xk[:10, 0].copy(), None, (), None, None, ()),
     "plug-in method 'bad' returned a Perturbed with X of dtype float64 and shape (10,) from perturb; X must be a "
     "numeric array of shape (834, 13)"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(Xk.T.copy(), None, (), None, None, ()), "shape (13, 834) from perturb"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(Xk.astype(str), None, (), None, None, ()), "X of dtype <U32"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(Xk, None, (), None, None, "a note"),
     "returned a Perturbed with notes=str 'a note' from perturb; notes must be a tuple of str"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(Xk, None, (), [0.5], None, ()),
     "planned=list of length 1 from perturb; planned must be None or 13 shares"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(Xk, None, (), None, np.ones(5), ()), "basis=ndarray of shape (5,)"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(np.where(np.arange(Xk.shape[0])[:, None] < 3, np.nan, Xk), None, (),
                                             None, None, ()),
     "plug-in method 'bad' returned a Perturbed whose X holds 39 value(s) that are not finite (NaN or inf) from "
     "perturb; X must be finite"),
    (lambda p, pl, m, o, g, Xk, f: Perturbed(Xk, None, (), [5.0] * 13, None, ()),
     "planned=list of length 13 from perturb; planned must be None or 13 shares between 0 and 1"),
])
def test_a_wrong_result_is_one_line_naming_the_plugin_step_and_shape(plug, tarr, fn, text):
    plug(fn)
    with pytest.raises(ValueError) as info:
        sdccore.protect(tarr, "bad", rng=1, allow_unsafe="boundary test")
    assert text in str(info.value) and "\n" not in str(info.value)


def test_a_plugin_that_raises_is_wrapped_with_its_cause(plug, tarr):
    plug(_raise)
    with pytest.raises(ValueError) as info:
        sdccore.protect(tarr, "bad", rng=1)
    assert str(info.value) == "plug-in method 'bad' failed in perturb: RuntimeError: boom: the plug-in broke"
    assert isinstance(info.value.__cause__, RuntimeError)


def test_a_plugin_check_speaks_for_itself_and_other_steps_are_checked(plug, tarr):
    plug(lambda p, pl, m, o, g, Xk, f: Perturbed(Xk, None, (), None, None, ()))
    with pytest.raises(ValueError, match=r"^share=0.1 % of 834 records permutes fewer than 2 records"):
        sdccore.protect(tarr, "bad", share=0.1)  # the plug-in's own check: its ValueError unchanged
    plug(lambda *a: None, name="opts", options=lambda method: None)
    with pytest.raises(ValueError, match="plug-in method 'opts' returned None from options; it must return a list of "
                                         "sdccore.Option"):
        sdccore.option_schema("opts")
    plug(lambda *a: None, name="keeps", keeps=lambda method, opts: "everything")
    with pytest.raises(ValueError, match="plug-in method 'keeps' returned str 'everything' from keeps"):
        steps("keeps").keeps("keeps", {})
    plug(None, name="noperturb")
    with pytest.raises(ValueError, match="plug-in method 'noperturb' has perturb=None; it must be a function"):
        sdccore.protect(tarr, "noperturb", rng=1)


def test_an_int_result_is_taken_as_float_and_the_release_is_the_same(plug, tarr):
    def swap_rows(p, pl, m, o, g, Xk, f):
        return Perturbed(np.round(Xk[g.permutation(len(Xk))]).astype(np.int64), None, (), None, None, ("rows",))

    plug(swap_rows)
    res = sdccore.protect(tarr, "bad", rng=2, allow_unsafe="boundary test", rounding="none", bounds="none")
    gen = np.random.default_rng(2)
    X = tarr.to_numpy(dtype=float)
    want = np.round(X[gen.permutation(len(X))])
    want += X.mean(axis=0) - want.mean(axis=0)  # the pipeline keeps the means (a shift per column)
    np.testing.assert_allclose(res.data.to_numpy(dtype=float), want, rtol=1e-12, atol=1e-6)


def test_built_in_methods_are_called_directly():
    import sdccore._methods.factor as factor
    import sdccore._methods.magg as magg

    assert steps("fa") is factor and steps("pca") is factor and steps("magg") is magg
    assert type(steps("rankswap")).__name__ == "module"


def test_an_unimportable_steps_module_is_one_line(tarr):
    sdccore.register_method(sdccore.MethodInfo("ghost", "Ghost", steps="no_such_plugin_module"))
    try:
        with pytest.raises(ValueError, match="plug-in method 'ghost': its steps module 'no_such_plugin_module' could "
                                             "not be imported"):
            sdccore.protect(tarr, "ghost", rng=1)
    finally:
        sdccore.unregister_method("ghost")


def test_compare_in_worker_processes_and_the_command_line_say_one_line(boom, tarr, tmp_path, capsys):
    from sdccore.__main__ import main

    msg = "plug-in method 'boom' failed in perturb: RuntimeError: boom: the plug-in broke"
    with pytest.raises(ValueError) as info:  # 4 runs on 2 worker processes
        sdccore.compare(tarr, {"B": {"method": "boom"}}, reps=4, rng=1, n_jobs=2)
    assert str(info.value) == msg
    src = tmp_path / "t.csv"
    tarr.to_csv(src, index=False)
    code = main(["protect", str(src), "--method", "boom", "--seed", "1", "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == f"error: {msg}" and not (tmp_path / "o.csv").exists()
