"""What the registries of intruders and analyses share: a plug-in's function named by a
"module:function" string, imported the first time it is called (as the methods' registry
takes a module's name), and the rules an entry is looked up, registered and removed by."""

from __future__ import annotations

import importlib
import re

__all__ = ["is_ref", "resolve", "lookup", "check_entry", "remove_entry"]


def is_ref(value):
    """Whether ``value`` is a "module:function" reference (no spaces), not words."""
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", value) is not None


def resolve(ref):
    """The function ``ref`` names (imported now), or ``ref`` itself when it is not a name."""
    if isinstance(ref, str):
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)
    return ref


# ----------------------------------------------------------------------------- the registries' shared rules
# The intruders' and the analyses' registries (``_risk.registry``, ``_measures.analyses``) are
# one kind of table: an entry is looked up, registered and removed by the same rules, in the
# same words but for its kind.

def lookup(kind, name, registry):
    """``registry[name]``, or one ValueError naming what is registered."""
    if name not in registry:
        raise ValueError(f"{kind} {name!r} is not registered; registered: {', '.join(registry)}.")
    return registry[name]


def check_entry(kind, info, cls, registry, built_in, replace, *, whose, make, example, label_hint):
    """The rules every plug-in entry keeps: of type ``cls`` (built as ``make``), a name that
    is an identifier (``example``; ``whose``: "the intruder's"), a label (what it is for:
    ``label_hint``), not a built-in name, not registered already unless ``replace``."""
    if not isinstance(info, cls):
        raise TypeError(f"info must be an {cls.__name__}, not {type(info).__name__}; build it with {make}.")
    if not isinstance(info.name, str) or not info.name.isidentifier():
        raise ValueError(f"{whose} name {info.name!r} must be a word of letters, digits and _ that does not start "
                         f"with a digit (e.g. {example!r}).")
    if not isinstance(info.label, str) or not info.label.strip():
        raise ValueError(f"{kind} {info.name!r} needs a label: {label_hint}.")
    if info.name in built_in:
        raise ValueError(f"{kind} {info.name!r} is built in and cannot be replaced; choose another name.")
    if info.name in registry and not replace:
        raise ValueError(f"{kind} {info.name!r} is already registered; pass replace=True to replace it.")


def remove_entry(kind, name, registry, built_in):
    """Remove a plug-in entry (never a built-in one); its entry."""
    if name in built_in:
        raise ValueError(f"{kind} {name!r} is built in and cannot be removed.")
    return registry.pop(lookup(kind, name, registry).name)
