"""A plug-in's function named by a "module:function" string, imported the first time it is
called (the registries of intruders and analyses take a function or such a name, as the
methods' registry takes a module's name)."""

from __future__ import annotations

import importlib
import re

__all__ = ["is_ref", "resolve"]


def is_ref(value):
    """Whether ``value`` is a "module:function" reference (no spaces), not words."""
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", value) is not None


def resolve(ref):
    """The function ``ref`` names (imported now), or ``ref`` itself when it is not a name."""
    if isinstance(ref, str):
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)
    return ref
