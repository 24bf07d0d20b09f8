"""Loading data and setting roles (the adapter's third concern): the sample or an uploaded
file into the session, the roles and design from the Data page's widgets, dropping
incomplete rows or columns with a way back."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import streamlit as st

import sdccore
from ui.common import METHOD_LABELS, WIDGETS_TIED_TO_DATA
from ui.session import (
    DEFAULT_MAX_RISK, data, data_name, design, fresh_seed, numeric_columns, passthrough_text, read_format, read_notes,
    roles,
)
from ui.compute import prefetch_explore, prefetch_keys


def data_token(df: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([str(c) for c in df.columns]).encode())
    h.update(json.dumps([str(t) for t in df.dtypes]).encode())
    h.update(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes())
    return h.hexdigest()


def role_suggestion(df: pd.DataFrame, name: str | None = None, value_labels=None):
    """Roles safe by default (identifiers found, codes set apart, value-labelled columns
    treated as codes) with their reasons; the samples' documented roles first."""
    preset = sdccore.dataset_roles(name) if name in sdccore.list_datasets().name.tolist() else None
    return sdccore.suggest_roles(df, preset=preset, value_labels=value_labels)


def default_roles(df: pd.DataFrame, name: str | None = None) -> dict:
    return dict(role_suggestion(df, name).roles)


def init():
    ss = st.session_state
    if "seed" not in ss:
        ss["seed"] = fresh_seed()
    ss.setdefault("floors", sdccore.RiskFloors().to_dict())
    ss.setdefault("max_risk", DEFAULT_MAX_RISK)
    for m in METHOD_LABELS:  # every offered method starts from its schema's defaults
        ss.setdefault(f"cfg_{m}", {"method": m})
    ss.setdefault("comparison", None)
    ss.setdefault("search", None)
    ss.setdefault("release_label", None)
    ss.setdefault("release_config", None)
    ss.setdefault("source_choice", "Sample data set")
    ss.setdefault("upload_sig", None)
    ss.setdefault("upload_error", None)
    ss.setdefault("audit_token", None)
    if "data" not in ss:
        set_data(sdccore.load_dataset("tarragona"), "tarragona", (), sample=True, file_format="csv")


def set_data(df: pd.DataFrame, name: str, notes=(), sample=False, sep=None, decimal=None, file_format=None,
             labels=None, value_labels=None):
    """Make ``df`` the session's data.  Roles the user set survive a new file with the same
    columns (a corrected upload); otherwise the safe suggestions are applied.  ``file_format``,
    ``labels``, ``value_labels``: what ``read_table`` found (kept when a record or column is
    dropped from the same file: pass None)."""
    ss = st.session_state
    if "before_drop" in ss and ss["before_drop"] is not None and (name != ss["before_drop"]["name"]):
        ss["before_drop"] = None  # another file: the kept one is forgotten
    same_columns = "data" in ss and list(ss["data"].columns) == list(df.columns)
    ss["data"] = df
    ss["data_name"] = name
    ss["data_token"] = data_token(df)
    ss["read_notes"] = list(notes)
    ss["read_format"] = (sep or ",", decimal or ".")
    if file_format is not None or "file_format" not in ss:
        ss["file_format"] = file_format or "csv"
        ss["labels"] = dict(labels or {})
        ss["value_labels"] = dict(value_labels or {})
    sug = role_suggestion(df, name if sample else None, ss["value_labels"])
    ss["role_reasons"] = dict(sug.reasons)
    ss["role_flags"] = dict(sug.flags)
    ss["role_table"] = sug.table
    ss["key_suggestion"] = {"keys": list(sug.keys), "household": sug.household}
    if same_columns and "roles" in ss:
        for k in WIDGETS_TIED_TO_DATA:
            ss.pop(k, None)
        ss["comparison"] = None
        ss["search"] = None
        prefetch_keys()
        prefetch_explore()
        return
    ss["roles"] = dict(sug.roles)
    ss["design"] = {"weights": sug.weight} if sug.weight else {}
    ss.pop("key_choice", None)  # the new file's suggested keys
    ss["passthrough_confirmed"] = False
    for m in METHOD_LABELS:
        ss[f"cfg_{m}"] = {"method": m}
    ss["comparison"] = None
    ss["search"] = None
    ss["release_label"] = None
    ss["release_config"] = None
    for k in WIDGETS_TIED_TO_DATA:
        ss.pop(k, None)
    prefetch_keys()
    prefetch_explore()


def handle_upload(raw: bytes, name: str, sep=None, decimal=None):
    """Read an uploaded file and make it the session's data.  Returns None on success or
    the plain-language error; on error the data already loaded stay as they were."""
    try:
        res = sdccore.read_table(raw, name, sep=sep, decimal=decimal)
    except ValueError as exc:
        return f"{name}: {exc}"
    st.session_state["before_drop"] = None  # a new file: a drop of the old one is no longer undone
    set_data(res.data, name, res.notes, sep=res.sep, decimal=res.decimal, file_format=res.format,
             labels=res.labels, value_labels=res.value_labels)
    return None


CONFIG_WIDGETS = ("fa_", "pca_", "magg_", "rankswap_", "pcar_", "ipso_", "cfa_")


def set_roles(new: dict):
    """Roles changed by the user; a changed set of text columns released unchanged must be
    confirmed again.  A switch between general protection (no sensitive variable) and
    selective protection resets every method's settings to the library's defaults for the new
    mode: the defaults differ (FA's rotation, factors and residuals, PCA's components), and a
    setting carried over (residuals kept in general FA) gives another, often refused, release
    than a fresh session would."""
    ss = st.session_state
    if passthrough_text(new) != passthrough_text(ss["roles"]):
        ss["passthrough_confirmed"] = False
    was = any(r == "sensitive" for r in ss["roles"].values())
    now = any(r == "sensitive" for r in new.values())
    ss["roles"] = dict(new)
    if was != now:
        reset_method_settings()
    prefetch_explore()


def reset_method_settings():
    """Every method's settings back to the library's defaults (and the Configure page's
    widgets with them)."""
    ss = st.session_state
    for m in METHOD_LABELS:
        ss[f"cfg_{m}"] = {"method": m}
    for k in list(ss.keys()):
        if isinstance(k, str) and k.startswith(CONFIG_WIDGETS):
            del ss[k]


def load_sample():
    """Callback of the Data page's sample selectbox."""
    name = st.session_state["sample_choice"]
    set_data(sdccore.load_dataset(name), name, (), sample=True, file_format="csv")


def upload(up, sep, decimal) -> bool:
    """Read an uploaded file once per file and read options; True when new data were loaded
    (the page reruns). A failure is kept for ``upload_error``; the loaded data stay."""
    sig = (up.file_id, sep, decimal)
    if st.session_state["upload_sig"] == sig:
        return False
    st.session_state["upload_sig"] = sig
    err = handle_upload(up.getvalue(), up.name, sep=sep, decimal=decimal)
    st.session_state["upload_error"] = err
    return err is None


ROLE_WIDGETS = {"sensitive_select": "sensitive", "identifier_select": "identifier", "excluded_select": "excluded"}


def seed_role_widgets():
    """The role widgets start from our roles (they survive page changes, reruns and uploads of
    a file with the same columns); widget state alone is dropped when the page is left."""
    df = data()
    num = numeric_columns(df)
    for key, role in ROLE_WIDGETS.items():
        st.session_state[key] = [c for c in (num if key == "sensitive_select" else list(df.columns))
                                 if roles().get(c) == role]


def roles_from_widgets():
    """Callback of the role widgets: one role per column, the last widget wins in the
    order identifier > excluded > sensitive; numeric columns default to public."""
    df = data()
    num = set(numeric_columns(df))
    ss = st.session_state
    new = {}
    for c in df.columns:
        if c in ss["identifier_select"]:
            new[c] = "identifier"
        elif c in ss["excluded_select"]:
            new[c] = "excluded"
        elif c in ss["sensitive_select"]:
            new[c] = "sensitive"
        else:
            new[c] = "public" if c in num else "excluded"
    set_roles(new)


def _keep_before_drop():
    """The file as it was before a drop, kept in the session so the drop can be undone."""
    ss = st.session_state
    if ss.get("before_drop") is None:
        ss["before_drop"] = {"data": data(), "name": data_name(), "format": read_format(), "roles": dict(roles()),
                             "notes": read_notes()}


def restore_before_drop():
    """Undo the drops of records or columns: the file as uploaded, with its roles."""
    b = st.session_state.pop("before_drop", None)
    if b is None:
        return
    sep, dec = b["format"]
    set_data(b["data"], b["name"], b["notes"], sep=sep, decimal=dec)
    set_roles({c: r for c, r in b["roles"].items() if c in b["data"].columns})


def drop_incomplete(columns):
    """Drop the records with missing or infinite values in ``columns`` (same columns: the
    roles are kept)."""
    _keep_before_drop()
    clean, n = sdccore.drop_incomplete_rows(data(), list(columns))
    sep, dec = read_format()
    set_data(clean, data_name(), [f"{n} record(s) with missing or infinite values dropped"], sep=sep, decimal=dec)


def drop_columns(columns):
    """Leave ``columns`` out of the session's data (and so of the release); the other roles
    are kept."""
    _keep_before_drop()
    clean, gone = sdccore.drop_incomplete_columns(data(), list(columns))
    old = dict(roles())
    sep, dec = read_format()
    set_data(clean, data_name(), [f"column(s) with missing cells left out of the file: {', '.join(map(str, gone))}"],
             sep=sep, decimal=dec)
    set_roles({c: r for c, r in old.items() if c in clean.columns})


def design_from_widgets():
    """Callback of the strata and weight widgets: the columns become 'excluded' (released
    unchanged), the design is remembered."""
    ss = st.session_state
    strata = [c for c in ss.get("strata_select") or [] if c in data().columns]
    w = ss.get("weight_select")
    w = w if w in data().columns else None
    ss["design"] = {"strata": strata, "weights": w}
    new = dict(roles())
    for c in strata + ([w] if w else []):
        new[c] = "excluded"
    set_roles(new)


def seed_design_widgets():
    d = design()
    st.session_state["strata_select"] = list(d.get("strata", []))
    st.session_state["weight_select"] = d.get("weights")
