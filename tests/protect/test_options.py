"""Invalid values for every option of every method, generated from the option schema.

As scikit-learn's ``test_public_functions.py`` does from its constraint tables: for each
option the schema lists, values of the wrong type, outside the choices, not finite, outside
the interval, non-integer, and beyond the limits that depend on the data are passed to
``protect`` and to the command line.  Each must give a ``ValueError``/``TypeError`` that
names the option (library) and exit status 2 with a one-line message naming it (CLI).
An option added to the schema is covered without touching this file; an option whose kind
this file does not know fails ``test_every_option_has_invalid_cases``.
"""

import json
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import sdccore
from sdccore.__main__ import main
from sdccore._protect.options import METHODS

N, COLUMNS = 40, ["a", "b", "c", "d", "e"]
SENSITIVE = ["a"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    z = rng.standard_normal((N, len(COLUMNS)))
    x = np.exp(z @ np.triu(np.full((5, 5), 0.4)) + 3)
    return pd.DataFrame(np.round(x, 2), columns=COLUMNS)


# options that apply only after another option is set: what to set so that they apply
ENABLE = {
    ("fa", "p"): {"perturbation": "rankswap"},
    ("fa", "noise_sd"): {"perturbation": "noise"},
    ("fa", "k"): {"perturbation": "microagg"},
    ("fa", "criterion"): {"factors": "auto"},
    ("fa", "threshold"): {"factors": "auto"},
    ("pca", "p"): {"perturbation": "rankswap"},
    ("pca", "noise_sd"): {"perturbation": "noise"},
    ("pca", "k"): {"perturbation": "microagg"},
    ("pca", "threshold"): {"components": "auto"},
    # k-anonymity applies with key variables (issue 40), for every method
    **{(m, "k_anonymity"): {"keys": [COLUMNS[-1]]} for m in METHODS},
    **{(m, "household"): {"keys": [COLUMNS[-1]]} for m in METHODS},
    **{(m, "recode"): {"keys": [COLUMNS[-1]]} for m in METHODS},
    **{(m, "household_ids"): {"keys": [COLUMNS[-1]], "household": COLUMNS[-2]} for m in METHODS},
    **{(m, o): {"pram": [COLUMNS[-1]]} for m in METHODS for o in ("pram_pd", "pram_alpha")},
}
# the enabling options that need sensitive variables
NEEDS_SENSITIVE = {"factors": "auto", "components": "auto"}


def _invalid(opt):
    """(value, exception type, data-bound?) triples that must be refused for ``opt``."""
    out = []
    if opt.kind == "choice":
        out += [(5, TypeError), (None, TypeError), ("bogus", ValueError), (opt.choices[0].upper() + "x", ValueError)]
    elif opt.kind in ("number", "integer"):
        out += [("x", TypeError), (True, TypeError), ([1], TypeError), (math.nan, ValueError),
                (math.inf, ValueError), (-math.inf, ValueError), (10**400, ValueError)]
        if opt.low is not None:
            out.append((opt.low if opt.low_open else opt.low - 1, ValueError))
        if opt.high is not None:
            out.append((opt.high + 1, ValueError))
        if opt.kind == "integer":
            out.append(((opt.low or 0) + 2.5, ValueError))
    elif opt.kind == "labels":
        out += [("bogus", ValueError), ([], TypeError), ([1.5], TypeError), ([True], TypeError), ([0], ValueError),
                ([1, 1], ValueError), ([math.nan], TypeError), ({"x": 1}, TypeError)]
    elif opt.kind == "removed":
        out += [("bogus", ValueError), (0, ValueError), (2.5, ValueError), (math.nan, ValueError), (True, TypeError),
                ([1], TypeError)]
    elif opt.kind == "names":
        out += [(5, TypeError), ([1], TypeError), (["no_such_column"], ValueError)]
    elif opt.kind == "column":
        out += [(5, TypeError), (["a"], TypeError), ("no_such_column", ValueError)]
    elif opt.kind == "transform":
        out += [("bogus", ValueError), (5, TypeError), ([None], TypeError), (["no_such_column"], ValueError)]
    elif opt.kind == "recodings":
        out += [("x", TypeError), ({5: {}}, TypeError), ({"e": 5}, ValueError), ({"e": {"kind": "bogus"}}, ValueError),
                ({"e": {"kind": "bands", "breaks": [3, 1]}}, ValueError)]
    elif opt.kind == "floors":
        out += [("x", TypeError), ({"no_such_floor": 1}, ValueError), ({"max_abs_cor": 2}, ValueError),
                ({"max_abs_cor": math.nan}, ValueError), ({"top_records": 2.5}, ValueError),
                ({"max_close_share": "x"}, TypeError)]
    # choices that need sensitive variables, given without them
    for c in opt.sensitive_only:
        out.append((("without sensitive", c), ValueError))
    return out


def _data_bound(method, opt):
    """Values that pass the static checks but not the limits of the 40 x 5 test data."""
    if opt.name == "k":
        return [N // 2 + 1]
    if opt.name == "p":
        return [1.0]          # 0.4 of a rank on 40 records
    if opt.name == "n_factors":
        return [len(COLUMNS) + 1]
    if opt.name in ("factors", "components"):
        return [[len(COLUMNS) + 1], [1, len(COLUMNS) + 1]]
    if opt.name == "removed":
        return [len(COLUMNS), len(COLUMNS) + 7]
    return []


def _cases():
    for method in METHODS:
        for opt in sdccore.option_schema(method):
            for value, exc in _invalid(opt):
                yield pytest.param(method, opt.name, value, exc, id=f"{method}-{opt.name}-{value!r}")
            for value in _data_bound(method, opt):
                yield pytest.param(method, opt.name, value, ValueError, id=f"{method}-{opt.name}-data-{value!r}")


CASES = list(_cases())


def _call(method, name, value):
    """The keyword arguments of the call that passes ``value`` for option ``name``."""
    options = dict(ENABLE.get((method, name), {}))
    sensitive = SENSITIVE if (any(options.get(k) == v for k, v in NEEDS_SENSITIVE.items())
                              or method in sdccore.CONDITIONAL_METHODS) else None
    if isinstance(value, tuple) and value[0] == "without sensitive":
        value, sensitive = value[1], None
    options[name] = value
    return options, sensitive


def _names_option(message, name):
    """The message names the option as code: ``k=21``, ``k (group size k, ...)``,
    ``option 'k'``, ``floors['field']``, ``exclude names ...`` (a bare letter in prose such
    as "a larger k" does not count)."""
    return re.search(r"(^|[^\w])" + re.escape(name) + r"(=|'|\"| \(|\[| must| names| has| is| lists)", message) is not None


@pytest.mark.parametrize("method, name, value, exc", CASES)
def test_library_refuses_invalid_option(data, method, name, value, exc):
    options, sensitive = _call(method, name, value)
    with pytest.raises(exc) as info:
        sdccore.protect(data, method, sensitive=sensitive, rng=0, **options)
    assert not isinstance(info.value, sdccore.UnsafeReleaseError), str(info.value)
    assert _names_option(str(info.value), name), str(info.value)
    assert "\n" not in str(info.value)
    # the message does not quote the data
    assert not any(f"{v:g}" in str(info.value) for v in data.to_numpy().ravel()[:50] if v > 100)


@pytest.mark.parametrize("method, name, value, exc", CASES)
def test_decompose_and_recipe_refuse_the_same(data, method, name, value, exc):
    options, sensitive = _call(method, name, value)
    if method in ("fa", "pca"):
        with pytest.raises(exc) as info:
            sdccore.decompose(data, method, sensitive=sensitive, **options)
        assert _names_option(str(info.value), name), str(info.value)
    recipe = sdccore.Recipe({"method": method, "sensitive": sensitive, "seed": 0, **options})
    with pytest.raises((ValueError, TypeError)) as info:
        sdccore.make_release(data, recipe)
    assert not isinstance(info.value, sdccore.UnsafeReleaseError), str(info.value)
    assert _names_option(str(info.value), name), str(info.value)


def _cli_text(value):
    # what a user types after --set name=: JSON (NaN and Infinity included), strings bare
    return value if isinstance(value, str) else json.dumps(value)


@pytest.mark.parametrize("method, name, value, exc", CASES)
def test_cli_exit_2_one_line(tmp_path, data, capsys, method, name, value, exc):
    options, sensitive = _call(method, name, value)
    src = tmp_path / "in.csv"
    data.to_csv(src, index=False)
    argv = ["protect", str(src), "--method", method, "--seed", "0", "--out", str(tmp_path / "out.csv")]
    for key, val in options.items():
        argv += ["--set", f"{key}={_cli_text(val)}"]
    if sensitive:
        argv += ["--sensitive", ",".join(sensitive)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert _names_option(err, name), err
    assert not (tmp_path / "out.csv").exists()


def test_every_option_has_invalid_cases():
    for method in METHODS:
        for opt in sdccore.option_schema(method):
            assert _invalid(opt), f"no invalid values generated for {method}.{opt.name} (kind {opt.kind!r})"
            if opt.applies is not None:
                assert (method, opt.name) in ENABLE, f"ENABLE does not say how to make {method}.{opt.name} apply"


@pytest.mark.parametrize("method, name", sorted(ENABLE))
def test_option_that_does_not_apply_is_refused(data, method, name):
    opt = next(o for o in sdccore.option_schema(method) if o.name == name)
    value = opt.default if not callable(opt.default) else 0.3
    with pytest.raises(ValueError, match=f"option '{name}' does not apply here: it applies only with"):
        sdccore.protect(data, method, rng=0, **{name: value})


@pytest.mark.parametrize("method", METHODS)
def test_unknown_option_names_the_method_options(data, method):
    with pytest.raises(ValueError, match=f"option\\(s\\) 'bogus' do not apply to method='{method}'"):
        sdccore.protect(data, method, rng=0, bogus=1)


@pytest.mark.parametrize("method", METHODS)
def test_schema_defaults_are_valid(data, method):
    """The defaults the schema states bind without error on data they suit (the other
    direction of the generated tests: a refusal of every value would pass them)."""
    from sdccore._protect.options import Context, bind_data, bind_static

    for selective in (False, True):
        if selective and method not in ("fa", "pca") + sdccore.CONDITIONAL_METHODS:
            continue
        if not selective and method in sdccore.CONDITIONAL_METHODS:
            with pytest.raises(ValueError, match="pass sensitive="):
                bind_data(method, bind_static(method, {}, False), Context(False, N, len(COLUMNS), len(COLUMNS)))
            continue
        bound = bind_static(method, {}, selective)
        done = bind_data(method, bound, Context(selective, N, len(COLUMNS), len(COLUMNS)))
        for opt in sdccore.option_schema(method):
            if opt.name in done and opt.kind in ("number", "integer") and done[opt.name] is not None:
                v = done[opt.name]
                assert opt.low is None or v > opt.low or (v == opt.low and not opt.low_open)
                assert opt.high is None or v <= opt.high


def test_legacy_noise_translated_with_warning(data):
    with pytest.warns(DeprecationWarning, match="'noise' of method='fa' is now called 'noise_sd'"):
        a = sdccore.protect(data, "fa", rng=4, perturbation="noise", noise=30, allow_unsafe="test")
    b = sdccore.protect(data, "fa", rng=4, perturbation="noise", noise_sd=30, allow_unsafe="test")
    pd.testing.assert_frame_equal(a.data, b.data)
    with pytest.raises(ValueError, match="'noise' and 'noise_sd' are the same option"):
        sdccore.protect(data, "fa", rng=4, perturbation="noise", noise=30, noise_sd=30, allow_unsafe="test")
