"""The fix a broken floor names (issue 39: "never names the method that just failed as the fix").

A violation's fix sends the custodian to value-changing methods other than the one that broke
the floor; when a whole comparison found nothing, the message about the closest configuration
leaves out every method the comparison ran (they failed too), and says so where none is left.
The assignment intruder's words for a method that draws new values (FA-cond) do not speak of
permutations and swap windows."""

import pandas as pd

from sdccore._choose.comparison import Comparison
from sdccore._risk.fixes import intruder_fix, without_failed


def test_the_failing_method_is_never_its_own_fix():
    for method, label in (("cfa", "FA-cond"), ("ipso", "IPSO"), ("magg", "M-AGG with noise")):
        words = intruder_fix("assignment", selective=True, method=method)
        assert label not in words, (method, words)
    assert "(M-AGG with noise, or IPSO)" in intruder_fix("assignment", selective=True, method="cfa")


def test_assignment_words_fit_the_method():
    drawn = intruder_fix("assignment", selective=True, method="cfa")
    assert "swap window" not in drawn and "in another order" not in drawn
    assert "taken as a set, are close to the original ones" in drawn
    permuted = intruder_fix("assignment", selective=True, method="shuffle")
    assert "no swap window helps" in permuted and "(M-AGG with noise, or FA-cond, or IPSO)" in permuted


def test_methods_a_comparison_ran_are_left_out_of_its_fix():
    words = intruder_fix("assignment", selective=True, method="cfa")
    assert "(M-AGG with noise)" in without_failed(words, {"cfa", "ipso"})
    none_left = without_failed(words, {"cfa", "ipso", "magg", "fa"})
    assert "IPSO" not in none_left and "M-AGG" not in none_left
    assert "(each such method this comparison ran broke a floor too); or mark more" in none_left
    residual = intruder_fix("residual", selective=True, method="shuffle")
    assert without_failed(residual, set()) == residual
    assert "(FA-cond)" in without_failed(residual, {"magg", "shuffle"})


def test_the_no_release_message_names_no_method_that_ran():
    """The Run page's message when nothing met the floors (``Comparison._none_safe``): the
    closest configuration's fix without the methods of the comparison."""
    violation = "income: in the largest records, the assignment intruder gets 25.0% ...; fix: " + intruder_fix(
        "assignment", selective=True, method="cfa")
    runs = pd.DataFrame({"config": ["FA-cond", "IPSO"], "run": [0, 0], "seed": [1, 2], "dbrl": [0.1, 0.1],
                         "id": [0.1, 0.1], "pil": [0.1, 0.1], "ps": [0.1, 0.1], "validity_loss": [0.06, 0.02],
                         "floors_ok": [False, False], "failing": ["", ""], "violation": [violation, "x"]})
    cmp_ = Comparison.__new__(Comparison)
    object.__setattr__(cmp_, "configs", {"FA-cond": {"method": "cfa"}, "IPSO": {"method": "ipso"}})
    object.__setattr__(cmp_, "runs", runs)
    object.__setattr__(cmp_, "released", {})
    safe = pd.DataFrame({"config": ["FA-cond", "IPSO"], "runs": [10, 10], "floors_met": [0.9, 0.5],
                         "violation": [violation, "x"]})
    why = cmp_._none_safe(safe)
    assert "Closest: FA-cond, which met them in 9 of 10 runs" in why
    assert "IPSO" not in why.split("fix:")[1] and "(M-AGG with noise)" in why
