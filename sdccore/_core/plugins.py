"""Plug-in modules named by the environment: ``SDCCORE_PLUGINS=mypkg.intruders,mypkg.analyses``
makes the command line (``python -m sdccore``) and the dashboard (``python -m ui``) import
each module at start; a module registers what it defines (``register_method``,
``register_intruder``, ``register_analysis``) when it is imported.  A comparison's worker
processes get the plug-ins with their runs."""

from __future__ import annotations

import importlib
import os

__all__ = ["load_plugins", "PLUGINS_ENV"]

PLUGINS_ENV = "SDCCORE_PLUGINS"


def load_plugins(modules=None, /):
    """Import plug-in modules: each registers its methods, intruders and analyses.

    Parameters
    ----------
    modules : str or list of str, optional
        Module names (a comma-separated string or a list); None reads the environment
        variable ``SDCCORE_PLUGINS`` (unset or empty: nothing to import).

    Returns
    -------
    tuple of str
        The modules imported, in order.

    Examples
    --------
    >>> import sdccore
    >>> sdccore.load_plugins("")
    ()
    """
    from_env = modules is None
    if from_env:
        modules = os.environ.get(PLUGINS_ENV, "")
    names = [n.strip() for n in modules.split(",")] if isinstance(modules, str) else [str(n).strip() for n in modules]
    names = [n for n in names if n]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - one line naming the module and the way to fix it
            where = f" (named in {PLUGINS_ENV})" if from_env else ""
            raise ValueError(f"plug-in module {name!r}{where} could not be imported: {type(exc).__name__}: {exc}; "
                             f"check its name and that its folder is on PYTHONPATH.") from None
    return tuple(names)
