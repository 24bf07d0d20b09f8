"""The one adapter between Streamlit and sdccore: session state and cached sdccore calls.

Session state keys (ours, initialised in ``init``):
  data, data_name, data_token, read_notes, roles, seed, cfg_fa, cfg_pca, cfg_magg,
  comparison, search, release_label, release_config, source_choice, upload_sig,
  upload_error, audit_token.
Caching: every sdccore call goes through ``st.cache_data(scope="session")`` keyed by the
explicit data token (a SHA-256 of the frame's contents and column names; Streamlit's own
hash of a large frame samples rows, so two different frames could collide) plus the options
as JSON.  Session-scoped caches are dropped when the browser session ends, so one user's
data and results never reach another session and do not outlive the session.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import sys

from collections.abc import Mapping

import pandas as pd
import streamlit as st

import sdccore
from ui import history as hist
from ui.common import METHOD_LABELS, WIDGETS_TIED_TO_DATA, _key  # noqa: F401  (re-exported)

ROLES = ("sensitive", "public", "excluded", "identifier")
DEFAULT_SEED = 12345
MIN_ROWS = 3  # as sdccore protects (records)
DEFAULT_PLAUSIBLE = {"transform": "none", "bounds": "plausible", "rounding": "original"}
DEFAULT_MAX_RISK = 0.5   # ceiling of the disclosure risk (mean of DBRL and ID) for the suggested release
# keep the public variables and redraw the sensitive ones given them: selective protection only
SELECTIVE_ONLY = tuple(sdccore.CONDITIONAL_METHODS)  # the built-in ones; offered_methods asks the registry
# every option left to the library's schema (sdccore.option_schema): the pages show its defaults
class _DefaultConfigs(Mapping):
    """Each offered method's starting configuration ({"method": m}), from the registry."""

    def __getitem__(self, key):
        return {"method": key} if key in METHOD_LABELS else {}[key]

    def __iter__(self):
        return iter(METHOD_LABELS)

    def __len__(self):
        return len(METHOD_LABELS)


DEFAULT_CFG = _DefaultConfigs()


def _preload():
    """Import the library's heavy modules (scipy.stats, scikit-learn, numba's cached kernels:
    2-3 s) in the background once per server process, so that the first Explore or
    Configure page does not wait for them: ``sdccore`` loads them only when first used.

    Then run each compiled kernel once on a small synthetic frame (no user data): on a fresh
    install numba compiles them on first use (measured: the first Explore page waited 31 s
    for it), afterwards it loads them from its cache in well under a second."""
    import importlib
    import threading

    def load():
        import time

        import numpy as np

        time.sleep(2.0)  # after the first page has been drawn
        for name in ("_explore", "_compare", "_recommend", "_protect", "_evaluate", "_safety"):
            importlib.import_module("sdccore." + name)
        try:
            rng = np.random.default_rng(0)
            toy = pd.DataFrame(np.exp(rng.standard_normal((60, 4)) @ np.triu(np.ones((4, 4)))),
                               columns=["a", "b", "c", "d"])
            for method in ("fa", "magg", "rankswap"):
                res = sdccore.protect(toy, method, sensitive=["a"], rng=0, allow_unsafe="kernel warm-up, synthetic")
                sdccore.evaluate(toy, res.data, sensitive=["a"])
        except Exception:  # noqa: BLE001 - a warm-up only: the pages compile what they need anyway
            pass

    if not any(t.name == "sdccore-preload" for t in threading.enumerate()) and "sdccore._recommend" not in sys.modules:
        threading.Thread(target=load, name="sdccore-preload", daemon=True).start()


_preload()


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
    ss.setdefault("seed", DEFAULT_SEED)
    ss.setdefault("floors", sdccore.RiskFloors().to_dict())
    ss.setdefault("max_risk", DEFAULT_MAX_RISK)
    for m, cfg in DEFAULT_CFG.items():
        ss.setdefault(f"cfg_{m}", dict(cfg))
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
    if same_columns and "roles" in ss:
        for k in WIDGETS_TIED_TO_DATA:
            ss.pop(k, None)
        ss["comparison"] = None
        ss["search"] = None
        prefetch_explore()
        return
    ss["roles"] = dict(sug.roles)
    ss["design"] = {}
    ss["passthrough_confirmed"] = False
    for m, cfg in DEFAULT_CFG.items():
        ss[f"cfg_{m}"] = dict(cfg)
    ss["comparison"] = None
    ss["search"] = None
    ss["release_label"] = None
    ss["release_config"] = None
    for k in WIDGETS_TIED_TO_DATA:
        ss.pop(k, None)
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
    for m, cfg in DEFAULT_CFG.items():
        ss[f"cfg_{m}"] = dict(cfg)
    for k in list(ss.keys()):
        if isinstance(k, str) and k.startswith(CONFIG_WIDGETS):
            del ss[k]


def passthrough_text(roles_=None) -> list:
    """Text columns that would be released unchanged (role 'excluded')."""
    r = roles_ if roles_ is not None else roles()
    df = data()
    return [c for c, role in r.items() if role == "excluded" and c in df.columns
            and not pd.api.types.is_numeric_dtype(df[c])]


def unresolved_identifiers() -> list:
    """Columns that look like identifiers but are not dropped (role 'identifier')."""
    flags = st.session_state.get("role_flags", {})
    return [c for c, f in flags.items() if f == "identifier" and roles().get(c) != "identifier"]


def release_blockers() -> list:
    """Role decisions that stop a download, in words (each with its fix)."""
    out = []
    ids = unresolved_identifiers()
    if ids and not st.session_state.get("passthrough_confirmed"):
        out.append(f"{', '.join(ids)} look like identifiers but are not dropped: give them the role 'identifier' "
                   f"on the Data page, or confirm there that they may be released")
    text = passthrough_text()
    if text and not st.session_state.get("passthrough_confirmed"):
        out.append(f"text column(s) {', '.join(text)} would be released unchanged: confirm it on the Data page "
                   f"or mark them as identifiers (dropped)")
    return out


def confirm_passthrough():
    """Callback of the Data page's confirmation checkbox."""
    st.session_state["passthrough_confirmed"] = bool(st.session_state["confirm_passthrough"])


def numeric_columns(df) -> list:
    return [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]


def role_table() -> pd.DataFrame:
    """The suggestion table with the current role beside it (Data page)."""
    t = st.session_state["role_table"].copy()
    t["role now"] = [roles().get(c, "excluded") for c in t.column]
    return t[t.reason != ""][["column", "type", "distinct", "suggested role", "role now", "reason"]]


def floors() -> dict:
    return dict(st.session_state["floors"])


def set_floors(new: dict):
    """The floors set on the Configure page (validated by the library)."""
    st.session_state["floors"] = sdccore.RiskFloors.from_value(new).to_dict()


def data() -> pd.DataFrame:
    return st.session_state["data"]


def token() -> str:
    return st.session_state["data_token"]


def roles() -> dict:
    return st.session_state["roles"]


def columns_with(*wanted) -> list:
    return [c for c, r in roles().items() if r in wanted]


def min_swap_percent() -> float:
    """The smallest rank-swap window (percent, rounded up to 0.01) that swaps anything on the
    session's records."""
    return float(math.ceil(sdccore.min_swap_percent(len(data())) * 100) / 100)


def protect_columns() -> list:
    """Columns that are protected (sensitive and public), in the file's order."""
    return columns_with("sensitive", "public")


def id_intruder() -> str:
    """What the ID score on the Run page assumes, in words (the default for the session's
    protection: selective or general)."""
    return sdccore.ID_REFERENCE_TEXT[sdccore.default_id_reference(bool(sensitive()))]


def sensitive() -> list | None:
    s = columns_with("sensitive")
    return s or None


def work_frame() -> pd.DataFrame:
    """The data without identifiers: protected columns plus excluded ones (passed through)."""
    keep = columns_with("sensitive", "public", "excluded")
    return data()[keep]


def excluded() -> list:
    return columns_with("excluded")


def seed() -> int:
    return int(st.session_state["seed"])


def seed_changed():
    """Callback of the sidebar seed widget: runs before the script, so the page already sees it."""
    st.session_state["seed"] = int(st.session_state["seed_input"])


# ----------------------------------------------------------------------------- session values

def config(method: str) -> dict:
    """The configuration of a method as set on the Configure page."""
    return dict(st.session_state.get(f"cfg_{method}", {"method": method}))


def set_config(method: str, cfg: dict):
    st.session_state[f"cfg_{method}"] = dict(cfg)


def data_name() -> str:
    return str(st.session_state["data_name"])


def file_format() -> str:
    """The uploaded file's format ('csv', 'xlsx', 'parquet', 'sav', 'dta', 'sas7bdat', 'xpt')."""
    return st.session_state.get("file_format", "csv")


def labels() -> tuple[dict, dict]:
    """(variable labels, value labels) read from an SPSS, Stata or SAS file."""
    return dict(st.session_state.get("labels", {})), dict(st.session_state.get("value_labels", {}))


MIME = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "sav": "application/x-spss-sav", "dta": "application/x-stata-dta", "xpt": "application/x-sas-xport"}


def release_formats() -> dict:
    """The formats the release can be written in, with their labels."""
    return {"csv": "CSV", "parquet": "Parquet", "xlsx": "Excel (.xlsx)", "sav": "SPSS (.sav)", "dta": "Stata (.dta)",
            "xpt": "SAS transport (.xpt)"}


def default_release_format() -> str:
    """The uploaded file's format (SAS .sas7bdat is written as .xpt)."""
    from sdccore._formats import release_format

    return release_format(file_format())


def read_format() -> tuple:
    """(separator, decimal mark) of the loaded file: the release is written the same way."""
    return tuple(st.session_state.get("read_format", (",", ".")))


def read_notes() -> list:
    return list(st.session_state.get("read_notes", []))


def role_reasons() -> dict:
    return dict(st.session_state.get("role_reasons", {}))


def passthrough_confirmed() -> bool:
    return bool(st.session_state.get("passthrough_confirmed"))


def source_choice() -> str:
    return st.session_state["source_choice"]


def set_source_choice(src: str):
    st.session_state["source_choice"] = src


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


def upload_error() -> str | None:
    return st.session_state["upload_error"]


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


def can_restore_drop() -> bool:
    return st.session_state.get("before_drop") is not None


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


def max_risk() -> float:
    return float(st.session_state["max_risk"])


def set_max_risk(value: float):
    st.session_state["max_risk"] = float(value)


def request_audit():
    st.session_state["audit_token"] = token()


def audit_requested() -> bool:
    return st.session_state["audit_token"] == token()


def release_file(config: dict, shuffle: bool):
    """The file to publish for a configuration that meets the floors (``sdccore.make_release``,
    as the command line builds it): identifiers dropped, text columns kept as decided,
    shuffled with the seed's child stream.  Returns the ``sdccore.Release``."""
    cfg = with_floors(config)
    recipe = sdccore.Recipe({**cfg, "sensitive": sensitive(), "exclude": excluded() or None, "seed": seed()},
                            drop=tuple(columns_with("identifier")), keep=tuple(passthrough_text()),
                            shuffle=bool(shuffle))
    res = _release_result(config)[0]
    if res is not None:  # the protection the page evaluated: assembled, not protected again
        try:
            return sdccore.make_release(data(), recipe, allow_unsafe=floors_reason(), result=res)
        except ValueError:
            pass  # options that disagree (never expected): protect afresh from the recipe
    return cached("make_release", data(), recipe.to_dict(), floors_reason())


# ----------------------------------------------------------------------------- cached calls



def _release_body(df, method, sens, options, seed_, exclude, reason=None):
    """(result, evaluation, None) for a release that meets every floor, (None, None, error)
    for one the library refuses: the refused data never reach the page.  ``reason`` is the
    custodian's reason for floors below the defaults; it never lets a broken floor pass."""
    try:
        res = sdccore.protect(df, method=method, sensitive=list(sens) if sens else None, rng=seed_,
                              exclude=list(exclude) or None, allow_unsafe=reason, **options)
    except sdccore.UnsafeReleaseError as exc:
        return None, None, exc
    if not res.risk.ok:
        return None, None, sdccore.UnsafeReleaseError("release refused, it breaks the risk floors: "
                                                      + res.risk.message(), risk=res.risk)
    num = [c for c in df.columns if c not in set(exclude)]
    ev = sdccore.evaluate(df[num], res.data[num], sensitive=list(sens) if sens else None,
                          floors=options.get("floors"))
    return res, ev, None


def _preview_body(df, method, sens, options, seed_, exclude):
    res = sdccore.protect(df, method=method, sensitive=list(sens) if sens else None, rng=seed_,
                          exclude=list(exclude) or None, allow_unsafe="Configure page preview: figures only", **options)
    return res.risk, res.plausibility, res.notes  # figures and words only; the preview's data are dropped here


_CALLS = {
    "problems": lambda df, cols: sdccore.inspect_data(df, protect_columns=cols),
    "explore": lambda df: {"corr": sdccore.correlation_matrix(df), "adequacy": sdccore.sampling_adequacy(df),
                           "scree": sdccore.scree(df), "indices": sdccore.correlation_indices(df)},
    "indices": lambda df, sens: sdccore.correlation_indices(df, sensitive=sens),
    "recommend": lambda df, sens: sdccore.recommend(df, sensitive=sens),
    "decompose": lambda df, method, sens, options: sdccore.decompose(df, method=method, sensitive=sens, **options),
    "release": _release_body,
    "preview": _preview_body,
    "audit": lambda df: sdccore.audit_factor_scores(df),
    "make_release": lambda df, recipe, reason=None: sdccore.make_release(df, recipe, allow_unsafe=reason),
    "removal_curve": lambda df, sens, transform: sdccore.removal_curve(df, sensitive=sens, transform=transform),
}


@st.cache_data(scope="session", max_entries=64, show_spinner=False)
def _cached(name, tok, key, _args):
    return _CALLS[name](*_args)


def cached(name: str, df: pd.DataFrame, *args):
    """The one cache of sdccore calls: keyed by the call's name, the session data's token
    and the other arguments as JSON (never by hashing the frame).  A call started in the
    background (``prefetch_explore``) is waited for instead of run again."""
    key = _key([list(df.columns), args])
    fut = st.session_state.get(PREFETCH, {}).get((name, token(), key))
    if fut is not None:
        return copy.deepcopy(fut.result())  # as the cache does, every caller its own copy
    return _cached(name, token(), key, (df, *args))


def _threadsafe_kernels() -> bool:
    """Whether numba's parallel kernels may run in two threads at once: its OpenMP and TBB
    layers allow it, its fallback 'workqueue' layer aborts the process."""
    try:
        import numba
        from numba.np.ufunc import parallel

        parallel._launch_threads()
        return numba.threading_layer() != "workqueue"
    except Exception:
        return False


PREFETCH = "prefetch"  # session key: {(call, data token, arguments): Future} of calls started early
_PREFETCHER = []


def prefetch_explore():
    """Start Explore's numbers (correlations, adequacy, scree, the between/within indices and
    the recommendation, which runs the candidate methods) in a background thread as soon as
    data or roles change, so that Explore opens with them ready (Tarragona: 0.4 s of work,
    EIA about 1 s).  The futures live in this session's state only, keyed as ``cached`` keys
    its calls; the thread calls sdccore alone (no Streamlit)."""
    from concurrent.futures import ThreadPoolExecutor

    ss = st.session_state
    if not _PREFETCHER:
        _PREFETCHER.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="sdccore-prefetch")
                           if _threadsafe_kernels() else None)
    if _PREFETCHER[0] is None:
        return
    try:
        if not analysis_ready()[0]:
            return
    except Exception:  # nothing to prefetch for data the pages will explain
        return
    tok = token()
    store = {k: f for k, f in ss.get(PREFETCH, {}).items() if k[1] == tok}  # another file's are dropped
    df = data()[protect_columns()]
    sens = sensitive()
    for name, args in (("explore", ()), ("indices", (sens,)), ("recommend", (sens,))):
        key = (name, tok, _key([list(df.columns), args]))
        if key not in store:
            store[key] = _PREFETCHER[0].submit(_CALLS[name], df, *args)
    ss[PREFETCH] = store


def problems():
    cols = protect_columns()
    return cached("problems", data(), cols)


def analysis_ready() -> tuple[bool, str]:
    """Whether the protected columns can be analysed, and if not why (plain words)."""
    cols = protect_columns()
    if len(cols) < 2:
        return False, "Give at least two numeric columns the role 'sensitive' or 'public' on the Data page."
    blocking = [p for p in problems() if p.blocking]
    if blocking:
        return False, "Fix the problems listed on the Data page first: " + "; ".join(p.message for p in blocking[:3]) + "."
    return True, ""


def ready() -> bool:
    """True when the protected columns can be analysed; otherwise says why on the page."""
    ok, why = analysis_ready()
    if not ok:
        st.info(why)
    return ok


def explore():
    return cached("explore", data()[protect_columns()])


def indices():
    return cached("indices", data()[protect_columns()], sensitive())


def recommendation():
    return cached("recommend", data()[protect_columns()], sensitive())


def decompose(method: str, options: dict):
    opts = {k: v for k, v in with_floors(options).items() if k != "method"}
    return cached("decompose", data()[protect_columns()], method, sensitive(), opts)


def with_floors(config: dict) -> dict:
    """A configuration with the session's risk floors, plausible-value choices and survey
    design (strata for the methods that take them, sampling weights)."""
    cfg = {**config, **plausible(), "floors": floors()}
    d = design()
    if d.get("strata") and config.get("method") in STRATA_METHODS:
        cfg["strata"] = list(d["strata"])
    if d.get("weights"):
        cfg["weights"] = d["weights"]
    return cfg


STRATA_METHODS = sdccore.methods(strata=True)


def design() -> dict:
    """The survey design set on the Data page: {'strata': [...], 'weights': name}, only the
    parts that are set and still name columns of the data."""
    d = dict(st.session_state.get("design") or {})
    cols = set(data().columns)
    out = {}
    if d.get("strata") and all(c in cols for c in d["strata"]):
        out["strata"] = list(d["strata"])
    if d.get("weights") in cols:
        out["weights"] = d["weights"]
    return out


def design_columns() -> list:
    d = design()
    return list(dict.fromkeys(list(d.get("strata", [])) + ([d["weights"]] if d.get("weights") else [])))


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


def plausible() -> dict:
    return dict(st.session_state.get("plausible") or DEFAULT_PLAUSIBLE)


def set_plausible(new: dict):
    st.session_state["plausible"] = dict(new)


def _with_session(name, config: dict):
    """A cached protect call on the working frame with the session's roles, floors,
    plausible-value choices and seed."""
    cfg = with_floors(config)
    method = cfg.pop("method")
    # a configuration from the comparison names the design columns in exclude: they are excluded anyway
    extra = [c for c in cfg.pop("exclude", None) or [] if c not in excluded()]
    return cached(name, work_frame(), method, sensitive(), cfg, seed(), excluded() + extra)


def floors_reason() -> str | None:
    """The custodian's reason for floors below the defaults (Configure page), or None when
    the floors are the defaults or stricter (then no reason is asked for)."""
    if not sdccore.RiskFloors.from_value(floors()).lowered():
        return None
    reason = str(st.session_state.get("floors_reason") or "").strip()
    return reason or None


def set_floors_reason(text: str):
    st.session_state["floors_reason"] = str(text or "").strip()


def release(config: dict):
    """Protect the working frame with a configuration, the session's floors and seed; returns
    (result, evaluation, refusal): refusal is the UnsafeReleaseError when a floor breaks, or
    when the floors are lowered without a reason.  A release that meets the floors is
    recorded in the session's history."""
    res, ev, refused = _release_result(config)
    if res is not None:
        label, _ = release_choice()
        hist.record_history("release", label or METHOD_LABELS.get(config.get("method"), str(config.get("method"))),
                       dict(config), dict(ev.scores), res.risk.variables)
    return res, ev, refused


def _release_result(config: dict):
    """``release``'s (result, evaluation, refusal), from the session's cache."""
    cfg = with_floors(config)
    method = cfg.pop("method")
    extra = [c for c in cfg.pop("exclude", None) or [] if c not in excluded()]
    return cached("release", work_frame(), method, sensitive(), cfg, seed(), excluded() + extra, floors_reason())


def preview(config: dict):
    """Risk and plausibility figures and the release's notes of one run with the session's seed
    (Configure page)."""
    return _with_session("preview", config)


def removal_curve():
    """pca_remove's utility and perturbed share against components removed (Configure page)."""
    return cached("removal_curve", data()[protect_columns()], sensitive(), plausible()["transform"])


def audit():
    return cached("audit", data()[protect_columns()])


def offered_methods() -> list:
    """The method labels offered with the current roles: the conditional methods (IPSO,
    shuffling, conditional FA) need sensitive variables and at least one public one."""
    sens = sensitive()
    public = sens and len(sens) < len(protect_columns())
    return [label for m, label in METHOD_LABELS.items() if public or not sdccore.method_info(m).conditional]


def current_configs(methods) -> dict:
    """The configured methods as compare() configurations, labelled as METHOD_LABELS."""
    num = set(numeric_columns(data()))
    # the design columns travel with the data; numeric ones are not measured as variables
    extra = [c for c in design_columns() if c in num]
    return {METHOD_LABELS[m]: {**with_floors(config(m)), **({"exclude": extra} if extra else {})}
            for m in methods}


def warm_up():
    """Start the comparison's worker processes in the background (once every few minutes)."""
    from sdccore._compare import warm_workers

    warm_workers()


def models() -> list:
    """The regressions the user asked to check (one formula a line on the Run page)."""
    return list(st.session_state.get("models", []))


def models_text() -> str:
    return "\n".join(models())


def set_models(text: str) -> list:
    """Keep the formulas of the Run page's box; returns [(formula, problem or None)], each
    formula tried on the original (so a typo is said at once, not after the runs)."""
    lines = [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]
    checked = []
    df = data()[protect_columns()]
    for m in dict.fromkeys(lines):
        try:
            sdccore.regression_check(df, df, m)
            checked.append((m, None))
        except ValueError as exc:
            checked.append((m, str(exc)))
    st.session_state["models"] = [m for m, err in checked if err is None]
    return checked


def example_model() -> str:
    """A formula from the data's own columns, shown as a placeholder."""
    cols = [str(c) for c in protect_columns()][:3]
    return f"{cols[0]} ~ {' + '.join(cols[1:])}" if len(cols) >= 2 else "y ~ x1 + x2"


def codebook(rel) -> pd.DataFrame:
    """The codebook of the release on the Download page (per variable of the original)."""
    return rel.codebook(data(), labels()[0])


def codebook_bytes(table, fmt) -> bytes:
    from sdccore._codebook import codebook_bytes as _bytes

    return _bytes(table, fmt)


def release_regressions(res):
    """The regression checks of the chosen release, one per formula, and their coefficient
    tables stacked with a 'model' column (None without formulas)."""
    checks = [sdccore.regression_check(data()[protect_columns()], res.data, m) for m in models()]
    if not checks:
        return None, []
    return pd.concat([c.table.reset_index().assign(model=c.model) for c in checks], ignore_index=True), checks


def run_comparison(methods, reps, progress, partial=None):
    df = data()[protect_columns() + [c for c in design_columns() if c not in protect_columns()]]
    cfgs = current_configs(methods)
    res = sdccore.compare(df, cfgs, sensitive=sensitive(), reps=reps, rng=seed(), progress=progress,
                          models=models() or None, partial=partial)
    if not res.cancelled:
        vr = res.variable_risk()
        for label, cfg in res.configs.items():
            sub = res.summary[res.summary.config == label]
            if not len(sub):
                continue
            scores = dict(zip(sub.score, sub["mean"]))
            risk = vr[vr.config == label].set_index("variable") if len(vr) else None
            hist.record_history("comparison", label, cfg, scores, risk, {"reps": reps})
    st.session_state["comparison"] = {"result": res, "configs": cfgs, "token": token(),
                                      "roles": _key(roles()), "seed": seed()}
    # a new comparison: the release picked for the last one (and its radio button) no longer holds
    for k in ("release_pick", "release_label", "release_config"):
        st.session_state.pop(k, None)
    return res


MIN_BAND_RECORDS = 20  # fewer records per size band: one record moves a band's share by more than 5 points


def small_file_warning() -> str | None:
    """A file too small for the risk floors' size bands, in words, with what can be done."""
    n, bands = len(data()), int(floors()["bands"])
    per = n // max(bands, 1)
    if per >= MIN_BAND_RECORDS:
        return None
    return (f"{n} records make {bands} size bands of about {per} records each: one record moves a band's share by "
            f"{1 / max(per, 1):.0%}, so one record decides whether a floor of {floors()['max_close_share']:.0%} is "
            f"met, and the floors refuse or pass releases by chance. With a file this small, use fewer size bands "
            f"(Risk floors on the Configure page: about {max(1, n // MIN_BAND_RECORDS)} for {MIN_BAND_RECORDS} "
            f"records a band; fewer bands than the default need a stated reason), or protect a larger file (for "
            f"example several years or regions together).")


def run_stronger(progress=None):
    """The comparison's configurations at stronger main settings (sdccore.stronger_settings),
    kept in the session beside the comparison they follow."""
    c = comparison()
    if c is None:
        return None
    df = data()[protect_columns() + [c_ for c_ in design_columns() if c_ not in protect_columns()]]
    res, tried = sdccore.stronger_settings(df, c["configs"], sensitive=sensitive(), reps=5, rng=seed(),
                                           progress=progress)
    st.session_state["stronger"] = {"result": res, "tried": tried, "token": token(), "roles": _key(roles()),
                                    "for": id(c["result"])}
    return st.session_state["stronger"]


def stronger():
    s = st.session_state.get("stronger")
    c = comparison()
    if s and c and s["token"] == token() and s["roles"] == _key(roles()) and s["for"] == id(c["result"]):
        return s
    return None


def use_setting(method: str, option: str, value):
    """Adopt a stronger setting found by ``run_stronger`` for a configured method: its
    Configure-page settings change (the page's widget follows) and the release picked is that
    method with them."""
    cfg = {**config(method), option: value}
    set_config(method, cfg)
    for k in list(st.session_state.keys()):
        if isinstance(k, str) and k.startswith(f"{method}_"):
            del st.session_state[k]
    st.session_state.pop("release_pick", None)
    choose_release(METHOD_LABELS[method], current_configs([method])[METHOD_LABELS[method]])


def comparison():
    """The last comparison, if it was made on the current data and roles."""
    c = st.session_state.get("comparison")
    if c and c["token"] == token() and c["roles"] == _key(roles()):
        return c
    return None


def run_search(method, reps, budget, progress=None):
    df = data()[protect_columns()]
    res = sdccore.search(df, method, sensitive=sensitive(), reps=reps, budget=budget, rng=seed(), progress=progress,
                         base={"floors": floors()})
    st.session_state["search"] = {"result": res, "method": method, "token": token(), "roles": _key(roles())}
    return res


def search_result():
    c = st.session_state.get("search")
    if c and c["token"] == token() and c["roles"] == _key(roles()):
        return c
    return None


def choose_release(label: str, config: dict, follow: bool = True):
    """The release picked (Run page, History).  ``follow``: the label names one of the
    configured methods and the release follows its CURRENT settings (a fix made on the
    Configure page afterwards is what gets released); False keeps ``config`` as it is (a
    search's best configuration, a history entry)."""
    st.session_state["release_label"] = label
    st.session_state["release_config"] = dict(config)
    st.session_state["release_follows"] = bool(follow)


def release_choice():
    """(label, configuration) of the release picked, with the method's current settings when
    it follows them; (None, None) when nothing was picked."""
    ss = st.session_state
    label, cfg = ss.get("release_label"), ss.get("release_config")
    if cfg is not None and ss.get("release_follows", True):
        m = cfg.get("method")
        if METHOD_LABELS.get(m) == label and f"cfg_{m}" in ss:
            cfg = current_configs([m])[label]
    return label, cfg


def comparison_changes(c=None) -> list:
    """What changed since the comparison ran (a method's settings, the floors and plausible
    values, which are in every configuration, the seed): its figures and suggestion are for
    the settings it ran with."""
    c = c if c is not None else comparison()
    if c is None:
        return []
    labels = {label: m for m, label in METHOD_LABELS.items()}
    now = current_configs([labels[lab] for lab in c["configs"] if lab in labels])
    out = [f"{lab} settings" for lab, cfg in c["configs"].items() if lab in now and _key(now[lab]) != _key(cfg)]
    if c.get("seed") is not None and c["seed"] != seed():
        out.append("seed")
    return out


def safe(fn):
    """Run a page body; on an error show a plain message (never a traceback or data) and
    keep the rest of the app usable."""
    hist.track_settings()  # every page records the changes of roles and settings (for undo)
    try:
        fn()
    except Exception:
        if os.environ.get("SDC_DEBUG"):
            raise
        _show_error(sys.exc_info()[1])


def _show_error(exc):
    try:
        raise exc
    except (ValueError, TypeError) as exc:
        st.error(f"This step could not be completed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
    except Exception as exc:  # noqa: BLE001 - the user gets a plain message, not internals
        st.error(f"Something went wrong in this step ({type(exc).__name__}). Your data and settings are kept; "
                 f"change the settings or reload the page.")


def numeric_summary(df: pd.DataFrame) -> pd.DataFrame:
    """The column table of the Data page (type and counts only, no statistics)."""
    num = set(numeric_columns(df))
    rows = []
    for c in df.columns:
        s = df[c]
        rows.append({"column": str(c), "type": "numeric" if c in num else "text",
                     "missing": int(s.isna().sum()), "distinct": int(s.nunique(dropna=True)),
                     "role": roles().get(c, "excluded")})
    return pd.DataFrame(rows)


def go_back(entry_id: int) -> str | None:
    """Restore the settings a history entry was run with (``ui.history.go_back``) and, for a
    release, pick it again; None, or why it cannot be."""
    why, entry = hist.go_back(entry_id)
    if why is None and entry["kind"] == "release":
        choose_release(entry["label"], entry["options"], follow=False)
    return why
