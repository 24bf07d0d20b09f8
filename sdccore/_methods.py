"""The methods' registry: each protection method's name, its label in the dashboard and its
capabilities, in one table that every layer asks (the option binding, the pipeline, the
comparison, strata, the Dask engine, the command line's choices and the dashboard's labels)
instead of keeping its own tuple.  Ground floor: imports nothing, so the command line can
ask it before numpy loads.  The first step of issue 30's registry: the methods' options and
steps still live in ``_options`` and ``_protect``."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MethodInfo", "methods", "method_info"]


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
    """

    name: str
    label: str
    dashboard: bool = True
    decomposes: bool = False
    deterministic: bool = False
    conditional: bool = False
    strata: bool = False
    dask: bool = False


REGISTRY = (
    MethodInfo("fa", "FA", decomposes=True, strata=True, dask=True),
    MethodInfo("pca", "PCA", decomposes=True, strata=True, dask=True),
    MethodInfo("magg", "M-AGG", strata=True, dask=True),
    MethodInfo("rankswap", "Rank swap", dask=True),
    MethodInfo("noise", "Noise", dashboard=False, dask=True),
    MethodInfo("pca_remove", "PCA-R", decomposes=True, deterministic=True),
    MethodInfo("ipso", "IPSO", conditional=True),
    MethodInfo("shuffle", "Shuffle", conditional=True),
    MethodInfo("cfa", "FA-cond", conditional=True),
)


def methods(**capabilities) -> tuple:
    """The names of the methods with the given capabilities, in the registry's order.

    Parameters
    ----------
    **capabilities : bool
        Any of ``MethodInfo``'s capabilities (dashboard, decomposes, deterministic,
        conditional, strata, dask) and the value wanted.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> import sdccore
    >>> sdccore.methods(conditional=True)
    ('ipso', 'shuffle', 'cfa')
    >>> sdccore.methods(dask=True)
    ('fa', 'pca', 'magg', 'rankswap', 'noise')
    """
    fields = set(MethodInfo.__dataclass_fields__) - {"name", "label"}
    unknown = sorted(set(capabilities) - fields)
    if unknown:
        raise TypeError(f"methods() knows the capabilities {', '.join(sorted(fields))}; not {', '.join(unknown)}.")
    return tuple(m.name for m in REGISTRY if all(getattr(m, k) == bool(v) for k, v in capabilities.items()))


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
    for m in REGISTRY:
        if m.name == name:
            return m
    raise ValueError(f"method={name!r} is not a protection method; use one of {', '.join(methods())}.")
