"""The methods' registry (issue 30, point 1, first step): one table of every protection
method's label and capabilities, and every layer's list of methods read from it."""

import pytest

import sdccore
from sdccore._methods import conditional_kernel as _conditional
from sdccore._scale import engine as _dask
from sdccore._protect import options as _options
from sdccore._protect import pipeline as _protect
from sdccore._protect import strata as _strata
from sdccore.__main__ import METHODS as CLI_METHODS
from sdccore.__main__ import build_parser


def test_the_registry_says_what_each_method_can_do():
    assert sdccore.methods() == ("fa", "pca", "magg", "rankswap", "noise", "pca_remove", "ipso", "shuffle", "cfa",
                                 "qexchange")
    assert sdccore.methods(decomposes=True) == ("fa", "pca", "pca_remove")
    assert sdccore.methods(deterministic=True) == ("pca_remove",)
    assert sdccore.methods(conditional=True) == ("ipso", "shuffle", "cfa", "qexchange")
    assert sdccore.methods(strata=True) == ("fa", "pca", "magg", "ipso", "shuffle", "cfa", "qexchange")
    assert sdccore.methods(dask=True) == ("fa", "pca", "magg", "rankswap", "noise", "ipso", "shuffle", "cfa")
    assert sdccore.methods(dashboard=False) == ("noise",)
    assert sdccore.methods(dask=True, decomposes=True) == ("fa", "pca")
    assert sdccore.method_info("cfa").label == "FA-cond" and sdccore.method_info("cfa").conditional
    with pytest.raises(ValueError, match="is not a protection method; use one of fa, pca"):
        sdccore.method_info("magic")
    with pytest.raises(TypeError, match="not fast"):
        sdccore.methods(fast=True)


def test_every_layer_reads_its_methods_from_the_registry():
    assert _options.METHODS == sdccore.METHODS == CLI_METHODS == sdccore.methods()
    assert _options.CONDITIONAL == _conditional.CONDITIONAL == sdccore.CONDITIONAL_METHODS == sdccore.methods(conditional=True)
    assert _protect.DETERMINISTIC == sdccore.methods(deterministic=True)
    assert _protect.DECOMPOSING == sdccore.methods(decomposes=True)
    assert _dask.DASK_METHODS == sdccore.methods(dask=True)
    assert _strata.STRATA_METHODS == sdccore.methods(strata=True)
    # the command line offers exactly the registry's methods
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    protect = sub.choices["protect"]
    method = next(a for a in protect._actions if a.dest == "method")
    assert tuple(method.choices) == sdccore.methods()
    # the dashboard labels the registry's dashboard methods
    from ui.common import METHOD_LABELS

    assert tuple(METHOD_LABELS) == sdccore.methods(dashboard=True)
    assert METHOD_LABELS["rankswap"] == "Rank swap"
