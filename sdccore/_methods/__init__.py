"""The methods' registry: each protection method's name, label, capabilities and the module
that holds its options and steps, in one table that every layer asks (the option schema
and its binding, the pipeline, the Dask engine, the comparison and the search, strata, the
codebook, the command line's choices and the dashboard) instead of keeping its own tuple or
``if method == ...`` chain.

Ground floor: this module imports nothing, so the command line can ask it before numpy
loads; a method's steps module is imported the first time a layer asks for it
(``steps(name)``), as Dask's ``CreationDispatch`` loads a backend.

A method's steps module (or any object with these attributes) provides the steps of the
method contract (``_base.MethodSteps``, a typed Protocol; ``register`` checks a plug-in's
against it and ``hook`` refuses a name that is not one of them):

* ``options(method)``: its own ``Option`` entries (the common ones, exclude, transform,
  bounds, rounding and floors, are added by the schema);
* ``perturb(prep, plan, method, o, gen, Xk, full)``: the perturbation, a ``Perturbed``;
* ``plan(prep, method, o)``: the factorization and what to perturb (decomposing methods);
* optional: ``check(method, o, ctx)`` (the limits that depend on the data),
  ``risk_window(method, o)`` (rank windows the intruders may exploit),
  ``loadings_prefix(method)`` and ``variance_share(plan, method, m)`` (decomposing
  methods), ``keeps(method, options)`` (what the codebook says it keeps),
  ``min_stratum_size(method, m, o)`` (strata), ``scale_refusal(method, options)`` and
  ``perturb_scale(method, s)`` (the Dask engine's partitioned form, a ``Scaled``),
  ``search_candidates(data, method, sensitive, base)`` (the search).

``register`` adds a method (a plug-in, or a test's toy method); ``unregister`` removes it.
A plug-in's steps are called through ``_base.PluginSteps``: what each returns is checked
(a ``Perturbed`` whose X has the shape of the columns handed to it, a ``Plan``, a list of
``Option`` ...) and a failure is one ValueError naming the plug-in and the step.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

__all__ = ["MethodInfo", "methods", "method_info", "register", "unregister", "register_method", "unregister_method", "steps"]


@dataclass(frozen=True)
class MethodInfo:
    """One protection method and what it can do.

    Attributes
    ----------
    name : str
        As ``protect(method=...)`` takes it.
    label : str
        Its name in the dashboard and the reports.
    dashboard : bool
        Offered on the dashboard's Configure and Run pages.
    decomposes : bool
        Works through a factorization (loadings, a plan; ``decompose`` applies).
    deterministic : bool
        The same release for every seed (a comparison runs it once).
    conditional : bool
        Keeps the public variables and redraws the sensitive ones given them (selective only).
    strata : bool
        Takes ``strata=`` (each group protected on its own).
    dask : bool
        Runs on the Dask engine.
    keeps_values : bool
        Releases a permutation of each protected column's observed values (rank swapping,
        shuffling): nothing to shift back to the original's means.
    searchable : bool
        ``search`` can tune it.
    stronger : str
        What strengthens it, in its own settings (the fix a violation of the floors names).
    public_hint : bool
        A closeness violation also suggests marking the public variables that predict the
        variable sensitive (methods that change the public variables or leave them as
        released predictors).
    steps : str or object
        The module (dotted name, imported on first use) or object holding its options and
        steps (see the module docstring).
    both_scales : tuple of (str, object)
        The settings with which it also keeps a skewed variable's log-scale regressions (the
        comparison's second round, ``compare(scales=True)``); () where it cannot.
    for_zeros : tuple of (str, object)
        The settings with which it keeps the zeros of a sensitive amount with a mass at 0 (the
        comparison's round for such amounts, ``rounds.zeros_round``); () where it cannot.
    """

    name: str
    label: str
    dashboard: bool = True
    decomposes: bool = False
    deterministic: bool = False
    conditional: bool = False
    strata: bool = False
    dask: bool = False
    keeps_values: bool = False
    searchable: bool = False
    stronger: str = field(default="", repr=False)
    public_hint: bool = False
    steps: object = field(default=None, repr=False, compare=False)
    both_scales: tuple = field(default=(), repr=False)
    for_zeros: tuple = field(default=(), repr=False)


_HERE = __name__
REGISTRY = {m.name: m for m in (
    MethodInfo("fa", "FA", decomposes=True, strata=True, dask=True, searchable=True, public_hint=True,
               stronger="perturb the factors that carry it (factors='auto', or add them to the mask on the Configure "
                        "page)", steps=_HERE + ".factor"),
    MethodInfo("pca", "PCA", decomposes=True, strata=True, dask=True, searchable=True, public_hint=True,
               stronger="perturb the components that load on it (components='auto', or add them to the mask)",
               steps=_HERE + ".factor"),
    MethodInfo("magg", "M-AGG", strata=True, dask=True, searchable=True, public_hint=True,
               stronger="a larger group size k (e.g. k=10); M-AGG of the sensitive variables alone changes little of "
                        "them, so IPSO or rank swapping may serve better", steps=_HERE + ".magg"),
    MethodInfo("rankswap", "Rank swap", dask=True, keeps_values=True, public_hint=True,
               stronger="a larger rank-swap window p (e.g. p=60 or p=80)", steps=_HERE + ".rankswap"),
    MethodInfo("noise", "Noise", dashboard=False, dask=True, stronger="more noise (a larger noise_cov)",
               steps=_HERE + ".noise"),
    MethodInfo("pca_remove", "PCA-R", decomposes=True, deterministic=True,
               stronger="remove more components (a larger removed, or a lower threshold)", steps=_HERE + ".removal"),
    MethodInfo("ipso", "IPSO", conditional=True, strata=True, dask=True,
               stronger="fewer size classes (classes=1), or mark the public variables that predict it sensitive too",
               steps=_HERE + ".conditional", both_scales=(("keep", "scales"), ("classes", 5)),
               for_zeros=(("zeros", "pattern"),)),
    MethodInfo("shuffle", "Shuffle", conditional=True, strata=True, dask=True, keeps_values=True,
               stronger="another method (IPSO keeps the regression and changes the values), or mark the public "
                        "variables that predict it sensitive too", steps=_HERE + ".conditional"),
    MethodInfo("cfa", "FA-cond", conditional=True, strata=True, dask=True,
               stronger="another method (IPSO), or mark the public variables that predict it sensitive too",
               steps=_HERE + ".conditional"),
    MethodInfo("qexchange", "Q-exchange", conditional=True, strata=True,
               stronger="larger blocks (block=20) or fewer quantiles (quantiles='0.5'), or mark the public variables "
                        "that predict it sensitive too", steps=_HERE + ".conditional",
               both_scales=(("keep", "scales"),)),
)}
BUILT_IN = tuple(REGISTRY)  # the methods this package defines (every process knows them without a register call)
# the most levels a column released unchanged may have to join the conditional methods' basis as
# a code (``_base.indicators``); here, so that the Dask engine's blocks read the same rule
# without loading the methods' kernels on a worker (numba's compiled kernels: 94 MiB more)
CODE_MAX_LEVELS = 50
_CAPABILITIES = tuple(f for f in MethodInfo.__dataclass_fields__
                      if f not in ("name", "label", "steps", "stronger", "both_scales", "for_zeros"))


def methods(**capabilities) -> tuple:
    """The names of the methods with the given capabilities, in the registry's order.

    Parameters
    ----------
    **capabilities : bool
        Any of ``MethodInfo``'s capabilities (dashboard, decomposes, deterministic,
        conditional, strata, dask, keeps_values, searchable) and the value wanted.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> import sdccore
    >>> sdccore.methods(conditional=True)
    ('ipso', 'shuffle', 'cfa', 'qexchange')
    >>> sdccore.methods(dask=True)
    ('fa', 'pca', 'magg', 'rankswap', 'noise', 'ipso', 'shuffle', 'cfa')
    """
    unknown = sorted(set(capabilities) - set(_CAPABILITIES))
    if unknown:
        raise TypeError(f"methods() knows the capabilities {', '.join(sorted(_CAPABILITIES))}; not "
                        f"{', '.join(unknown)}.")
    return tuple(m.name for m in REGISTRY.values() if all(getattr(m, k) == bool(v) for k, v in capabilities.items()))


def method_info(name) -> MethodInfo:
    """The registry's entry of a method.

    Parameters
    ----------
    name : str
        As ``protect(method=...)`` takes it; ValueError naming the methods for one the
        registry does not hold.

    Returns
    -------
    MethodInfo

    Examples
    --------
    >>> import sdccore
    >>> sdccore.method_info("magg").label
    'M-AGG'
    """
    info = REGISTRY.get(name) if isinstance(name, str) else None
    if info is None:
        raise ValueError(f"method={name!r} is not a protection method; use one of {', '.join(methods())}.")
    return info


def steps(name):
    """The object holding a method's options and steps (its module, imported on first use);
    a plug-in's wrapped so that what each step returns is checked at this boundary
    (``_base.PluginSteps``: one ValueError naming the plug-in and the step)."""
    info = method_info(name)
    if isinstance(info.steps, str) and info.steps.startswith(_HERE + "."):
        return importlib.import_module(info.steps)  # a built-in method: called directly
    try:
        obj = importlib.import_module(info.steps) if isinstance(info.steps, str) else info.steps
    except ImportError as exc:
        raise ValueError(f"plug-in method {info.name!r}: its steps module {info.steps!r} could not be imported "
                         f"({type(exc).__name__}: {exc}); check steps= in its MethodInfo.") from exc
    if isinstance(info.steps, str):
        _check_contract(info.name, obj)
    return importlib.import_module(_HERE + "._base").PluginSteps(info.name, obj)  # numpy: loaded by now


def hook(name, attr, default=None):
    """A method's optional step ``attr`` (a step of the method contract, ``_base.MethodSteps``),
    or ``default`` if its module has none."""
    if attr not in importlib.import_module(_HERE + "._base").CONTRACT:
        raise AttributeError(f"{attr!r} is not a step of the method contract (sdccore._methods._base.MethodSteps).")
    return getattr(steps(name), attr, default)


def _check_contract(name, obj):
    """A plug-in's steps whose arguments do not fit the method contract: one ValueError
    naming the plug-in and each step, at registration instead of mid-run."""
    problems = importlib.import_module(_HERE + "._base").contract_problems(obj, required=())
    if problems:
        raise ValueError(f"plug-in method {name!r} does not keep the method contract "
                         f"(sdccore._methods._base.MethodSteps): {'; '.join(problems)}.")


_LISTENERS = []


def on_change(fn):
    """Call ``fn()`` whenever a method is registered or removed (the schema's cache)."""
    _LISTENERS.append(fn)
    return fn


def register(info, *, replace=False):
    """Add a protection method to the registry.

    Parameters
    ----------
    info : MethodInfo
        Its name, label, capabilities and ``steps`` (a module name or an object with
        ``options``, ``perturb`` and, if it decomposes, ``plan``).
    replace : bool
        Replace a method of the same name (otherwise ValueError).

    Returns
    -------
    MethodInfo

    Examples
    --------
    >>> import types, sdccore
    >>> toy = types.SimpleNamespace(options=lambda method: [], perturb=None)
    >>> sdccore.register_method(sdccore.MethodInfo("toy", "Toy", steps=toy)).label
    'Toy'
    >>> sdccore.unregister_method("toy").name
    'toy'
    """
    if not isinstance(info, MethodInfo):
        raise TypeError(f"info must be a MethodInfo, not {type(info).__name__}.")
    if not info.name or not info.name.isidentifier():
        raise ValueError(f"a method's name must be a short identifier such as 'toy'; got {info.name!r}.")
    if info.name in REGISTRY and not replace:
        raise ValueError(f"method {info.name!r} is already registered; pass replace=True to replace it.")
    if info.steps is None:
        raise ValueError(f"method {info.name!r} needs steps=: a module name or an object with options and perturb.")
    if not isinstance(info.steps, str):  # a module named by a string is checked when first imported (steps)
        _check_contract(info.name, info.steps)
    REGISTRY[info.name] = info
    for fn in _LISTENERS:
        fn()
    return info


def unregister(name):
    """Remove a method from the registry.

    Parameters
    ----------
    name : str
        A registered method's name.

    Returns
    -------
    MethodInfo
        Its entry.

    Examples
    --------
    >>> import types, sdccore
    >>> toy = types.SimpleNamespace(options=lambda method: [], perturb=None)
    >>> _ = sdccore.register_method(sdccore.MethodInfo("toy2", "Toy", steps=toy))
    >>> sdccore.unregister_method("toy2").label
    'Toy'
    """
    info = method_info(name)
    del REGISTRY[name]
    for fn in _LISTENERS:
        fn()
    return info


register_method = register  # the public names (sdccore.register_method, sdccore.unregister_method)
unregister_method = unregister
