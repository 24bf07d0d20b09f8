"""What the adapter's parts share: the method labels, the widget keys tied to the data, and
the JSON key that caches and histories compare settings by.  Imports nothing of ``ui``."""

from __future__ import annotations

import json

import sdccore

METHOD_LABELS = {m: sdccore.method_info(m).label for m in sdccore.methods(dashboard=True)}  # the registry's

# widget keys whose options depend on the columns: reset when new data arrive
WIDGETS_TIED_TO_DATA = ("sensitive_select", "identifier_select", "excluded_select", "release_pick", "strata_select",
                        "weight_select")


def _key(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
