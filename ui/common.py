"""What the adapter's parts share: the method and score labels, the widget keys tied to the
data, and the JSON key that caches and histories compare settings by.  Imports nothing of ``ui``."""

from __future__ import annotations

import json
from collections.abc import Mapping

import sdccore


class _Labels(Mapping):
    """The dashboard's methods and their labels, read from the registry at each use (a method
    registered after the app started is offered too)."""

    def __getitem__(self, key):
        if key not in sdccore.methods(dashboard=True):
            raise KeyError(key)
        return sdccore.method_info(key).label

    def __iter__(self):
        return iter(sdccore.methods(dashboard=True))

    def __len__(self):
        return len(sdccore.methods(dashboard=True))


METHOD_LABELS = _Labels()


SCORE_NAMES = sdccore.report.SCORE_NAMES  # {score: label}, live from the analyses' registry


def method_of(label):
    """The method a dashboard label names (None for a label that names no offered method)."""
    return next((m for m, lab in METHOD_LABELS.items() if lab == label), None)

# widget keys whose options depend on the columns: reset when new data arrive
WIDGETS_TIED_TO_DATA = ("sensitive_select", "identifier_select", "excluded_select", "release_pick", "strata_select",
                        "weight_select", "keys_select", "household_select", "recode_select", "household_ids_choice",
                        "recode_chosen")


def _key(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
