"""The session's history and undo (the adapter's history concern): every change of roles and
settings goes on an undo stack, every evaluated release and comparison into the history.
Everything lives in this browser session only (st.session_state); nothing is written to disk.
A "snapshot" is the user's settings: roles, design, every method's configuration, seed,
floors, plausible-value choices, regressions and the risk ceiling."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui.common import METHOD_LABELS, WIDGETS_TIED_TO_DATA, _key

BASE_SETTINGS = ("roles", "design", "seed", "floors", "plausible", "models", "max_risk", "passthrough_confirmed")
BASE_NAMES = {"roles": "roles", "design": "strata/weights", "seed": "seed", "floors": "risk floors",
              "plausible": "plausible values", "models": "regressions", "max_risk": "risk ceiling",
              "passthrough_confirmed": "pass-through confirmation"}


def settings_keys() -> tuple:
    """The session keys a snapshot holds: the base settings and each offered method's
    configuration (from the registry, so a registered method's settings are undone too)."""
    return BASE_SETTINGS + tuple(f"cfg_{m}" for m in METHOD_LABELS)


def setting_name(key: str) -> str:
    return BASE_NAMES.get(key) or f"{METHOD_LABELS.get(key[4:], key[4:])} settings"
# widget state that must be dropped when settings are restored (the widgets are drawn again
# from the restored values)
WIDGET_PREFIXES = ("fa_", "pca_", "magg_", "rankswap_", "pcar_", "floor_", "pv_", "seed_input", "run_models",
                   "max_risk_input") + WIDGETS_TIED_TO_DATA
UNDO_DEPTH = 50
HISTORY_DEPTH = 100


def _snapshot() -> dict:
    import copy

    ss = st.session_state
    return {"token": ss.get("data_token"), "data_name": ss.get("data_name"),
            **{k: copy.deepcopy(ss.get(k)) for k in settings_keys()}}


def _changed(a: dict, b: dict) -> list:
    """The settings that really changed: a page filling in defaults (None -> a value, or a
    configuration gaining keys with every old key kept) is not a change the user made."""
    def filled(old, new):
        return old is None or (isinstance(old, dict) and isinstance(new, dict)
                               and all(k in new and _key(new[k]) == _key(v) for k, v in old.items()))
    return [setting_name(k) for k in settings_keys()
            if _key(a.get(k)) != _key(b.get(k)) and not filled(a.get(k), b.get(k))]


def track_settings():
    """Called once at the end of every script run: if the settings differ from the last run's
    (on the same data), the previous ones go on the undo stack with what changed."""
    ss = st.session_state
    now = _snapshot()
    last = ss.get("last_settings")
    ss["last_settings"] = now
    if last is None or last["token"] != now["token"]:
        return
    what = _changed(last, now)
    if what:
        stack = ss.setdefault("undo_stack", [])
        stack.append({"settings": last, "what": ", ".join(what), "time": _clock()})
        del stack[:-UNDO_DEPTH]


def undo_steps() -> list:
    """The changes that can be undone, most recent last (on the data loaded now)."""
    token = st.session_state.get("data_token")
    return [u for u in st.session_state.get("undo_stack", []) if u["settings"]["token"] == token]


def _restore(settings: dict):
    ss = st.session_state
    for k in settings_keys():
        if k in settings and settings[k] is not None:
            ss[k] = settings[k]
    for k in list(ss.keys()):
        if isinstance(k, str) and k.startswith(WIDGET_PREFIXES):
            del ss[k]
    ss["last_settings"] = _snapshot()


def undo():
    """Callback of the Undo button: back to the settings before the last change (several
    clicks go back several steps)."""
    steps = undo_steps()
    if not steps:
        return
    step = steps[-1]
    st.session_state["undo_stack"].remove(step)
    _restore(step["settings"])


def _clock() -> str:
    from datetime import datetime

    return datetime.now().strftime("%H:%M:%S")


def record_history(kind: str, label: str, config: dict, scores: dict, risk_variables: pd.DataFrame | None,
                   extra: dict | None = None):
    """Add a run to the session's history (one entry per configuration and settings)."""
    ss = st.session_state
    hist = ss.setdefault("history", [])
    settings = _snapshot()
    sig = _key([kind, label, config, {k: v for k, v in settings.items() if k != "max_risk"}])
    if any(h["sig"] == sig for h in hist):
        return
    risk = None
    if risk_variables is not None and len(risk_variables):
        cols = [c for c in ("prior", "beyond_prior", "intruder", "perturbed_share", "abs_cor", "close_own",
                            "close_linked", "ok", "runs_ok")
                if c in risk_variables]
        risk = risk_variables[cols].copy()
    hist.append({"id": (hist[-1]["id"] + 1) if hist else 1, "time": _clock(), "kind": kind, "label": label,
                 "method": config.get("method"), "options": {k: v for k, v in config.items() if k != "floors"},
                 "seed": int(ss["seed"]), "data_name": str(ss["data_name"]), "token": ss["data_token"],
                 "scores": dict(scores), "risk": risk,
                 "settings": settings, "sig": sig, **(extra or {})})
    del hist[:-HISTORY_DEPTH]


def history() -> list:
    return list(st.session_state.get("history", []))


def go_back(entry_id: int):
    """Restore the settings a history entry was run with: (None, entry), or (why it cannot
    be, None).  The caller picks a release entry again (``ui.release.go_back``)."""
    entry = next((h for h in history() if h["id"] == entry_id), None)
    if entry is None:
        return "that run is no longer in the history", None
    if entry["token"] != st.session_state.get("data_token"):
        return (f"run {entry_id} was made on other data ({entry['data_name']}); load that file again to go back "
                f"to it"), None
    ss = st.session_state
    stack = ss.setdefault("undo_stack", [])
    stack.append({"settings": _snapshot(), "what": f"went back to run {entry_id}", "time": _clock()})
    _restore(entry["settings"])
    return None, entry
