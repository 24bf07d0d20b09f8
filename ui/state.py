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

import hashlib
import json
import math
import os
import sys

import pandas as pd
import streamlit as st

import sdccore

ROLES = ("sensitive", "public", "excluded", "identifier")
DEFAULT_SEED = 12345
MIN_ROWS = 3  # as sdccore protects (records)
DEFAULT_PLAUSIBLE = {"transform": "none", "bounds": "sign", "rounding": "original"}
DEFAULT_MAX_RISK = 0.5   # ceiling of the disclosure risk (mean of DBRL and ID) for the suggested release
# widget keys whose options depend on the columns: reset when new data arrive
WIDGETS_TIED_TO_DATA = ("sensitive_select", "identifier_select", "excluded_select", "release_pick")
DEFAULT_CFG = {
    "fa": {"method": "fa"},
    "pca": {"method": "pca"},
    "magg": {"method": "magg", "k": 3, "noise": "published"},
    # 40 %: the smallest of 15/20/30/40 that met every floor in 10 of 10 runs on all three samples
    # (selective, the samples' sensitive variables); 15 (the library's default) failed a size band
    "rankswap": {"method": "rankswap", "p": 40.0},
    "pca_remove": {"method": "pca_remove"},
}
METHOD_LABELS = {"fa": "FA", "pca": "PCA", "magg": "M-AGG", "rankswap": "Rank swap", "pca_remove": "PCA-R"}


def data_token(df: pd.DataFrame) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([str(c) for c in df.columns]).encode())
    h.update(json.dumps([str(t) for t in df.dtypes]).encode())
    h.update(pd.util.hash_pandas_object(df, index=True).to_numpy().tobytes())
    return h.hexdigest()


def role_suggestion(df: pd.DataFrame, name: str | None = None):
    """Roles safe by default (identifiers found, codes set apart) with their reasons; the
    samples' documented roles first."""
    preset = sdccore.dataset_roles(name) if name in sdccore.list_datasets().name.tolist() else None
    return sdccore.suggest_roles(df, preset)


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
        set_data(sdccore.load_dataset("tarragona"), "tarragona", (), sample=True)


def set_data(df: pd.DataFrame, name: str, notes=(), sample=False, sep=None, decimal=None):
    """Make ``df`` the session's data.  Roles the user set survive a new file with the same
    columns (a corrected upload); otherwise the safe suggestions are applied."""
    ss = st.session_state
    same_columns = "data" in ss and list(ss["data"].columns) == list(df.columns)
    ss["data"] = df
    ss["data_name"] = name
    ss["data_token"] = data_token(df)
    ss["read_notes"] = list(notes)
    ss["read_format"] = (sep or ",", decimal or ".")
    sug = role_suggestion(df, name if sample else None)
    ss["role_reasons"] = dict(sug.reasons)
    ss["role_flags"] = dict(sug.flags)
    ss["role_table"] = sug.table
    if same_columns and "roles" in ss:
        for k in WIDGETS_TIED_TO_DATA:
            ss.pop(k, None)
        ss["comparison"] = None
        ss["search"] = None
        return
    ss["roles"] = dict(sug.roles)
    ss["passthrough_confirmed"] = False
    for m, cfg in DEFAULT_CFG.items():
        ss[f"cfg_{m}"] = dict(cfg)
    ss["comparison"] = None
    ss["search"] = None
    ss["release_label"] = None
    ss["release_config"] = None
    for k in WIDGETS_TIED_TO_DATA:
        ss.pop(k, None)


def handle_upload(raw: bytes, name: str, sep=None, decimal=None):
    """Read an uploaded file and make it the session's data.  Returns None on success or
    the plain-language error; on error the data already loaded stay as they were."""
    try:
        res = sdccore.read_table(raw, name, sep=sep, decimal=decimal)
    except ValueError as exc:
        return f"{name}: {exc}"
    set_data(res.data, name, res.notes, sep=res.sep, decimal=res.decimal)
    return None


def set_roles(new: dict):
    """Roles changed by the user; a changed set of text columns released unchanged must be
    confirmed again."""
    ss = st.session_state
    if passthrough_text(new) != passthrough_text(ss["roles"]):
        ss["passthrough_confirmed"] = False
    ss["roles"] = dict(new)


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


# ----------------------------------------------------------------------------- cached calls

def _key(obj) -> str:
    return json.dumps(obj, sort_keys=True, default=str)


@st.cache_data(scope="session", max_entries=16, show_spinner=False)
def _problems(tok, cols_key, _df, cols):
    return sdccore.inspect_data(_df, cols)


def problems():
    cols = protect_columns()
    return _problems(token(), _key(cols), data(), cols)


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


@st.cache_data(scope="session", max_entries=16, show_spinner=False)
def _explore(tok, cols_key, _df):
    return {
        "corr": sdccore.correlation_matrix(_df),
        "adequacy": sdccore.sampling_adequacy(_df),
        "scree": sdccore.scree(_df),
        "indices": sdccore.correlation_indices(_df),
    }


def explore():
    cols = protect_columns()
    return _explore(token(), _key(cols), data()[cols])


@st.cache_data(scope="session", max_entries=16, show_spinner=False)
def _indices(tok, key, _df, sens):
    return sdccore.correlation_indices(_df, list(sens) if sens else None)


def indices():
    cols = protect_columns()
    s = sensitive()
    return _indices(token(), _key([cols, s]), data()[cols], tuple(s) if s else None)


@st.cache_data(scope="session", max_entries=16, show_spinner=False)
def _recommend(tok, key, _df, sens):
    return sdccore.recommend(_df, list(sens) if sens else None)


def recommendation():
    cols = protect_columns()
    s = sensitive()
    return _recommend(token(), _key([cols, s]), data()[cols], tuple(s) if s else None)


@st.cache_data(scope="session", max_entries=64, show_spinner=False)
def _decompose(tok, key, _df, method, sens, options):
    return sdccore.decompose(_df, method=method, sensitive=list(sens) if sens else None, **options)


def decompose(method: str, options: dict):
    cols = protect_columns()
    s = sensitive()
    opts = {k: v for k, v in with_floors(options).items() if k != "method"}
    return _decompose(token(), _key([cols, s, method, opts]), data()[cols], method, tuple(s) if s else None, opts)


@st.cache_data(scope="session", max_entries=8, show_spinner=False)
def _release(tok, key, _df, method, sens, options, seed_, exclude):
    """(result, evaluation, None) for a release that meets every floor, (None, None, error)
    for one the library refuses: the refused data never reach the page."""
    try:
        res = sdccore.protect(_df, method=method, sensitive=list(sens) if sens else None, rng=seed_,
                              exclude=list(exclude) or None, **options)
    except sdccore.UnsafeReleaseError as exc:
        return None, None, exc
    num = [c for c in _df.columns if c not in set(exclude)]
    ev = sdccore.evaluate(_df[num], res.data[num], sensitive=list(sens) if sens else None,
                          floors=options.get("floors"))
    return res, ev, None


def with_floors(config: dict) -> dict:
    """A configuration with the session's risk floors and plausible-value choices."""
    return {**config, **plausible(), "floors": floors()}


def plausible() -> dict:
    return dict(st.session_state.get("plausible") or DEFAULT_PLAUSIBLE)


def set_plausible(new: dict):
    st.session_state["plausible"] = dict(new)


def _with_session(cached, config: dict):
    """Call a cached protect wrapper with the working frame, the session's roles, floors,
    plausible-value choices and seed."""
    cfg = with_floors(config)
    method = cfg.pop("method")
    s = sensitive()
    df = work_frame()
    ex = tuple(excluded())
    return cached(token(), _key([list(df.columns), s, method, cfg, seed(), ex]), df, method,
                  tuple(s) if s else None, cfg, seed(), ex)


def release(config: dict):
    """Protect the working frame with a configuration, the session's floors and seed; returns
    (result, evaluation, refusal): refusal is the UnsafeReleaseError when a floor breaks."""
    return _with_session(_release, config)


@st.cache_data(scope="session", max_entries=32, show_spinner=False)
def _preview(tok, key, _df, method, sens, options, seed_, exclude):
    res = sdccore.protect(_df, method=method, sensitive=list(sens) if sens else None, rng=seed_,
                          exclude=list(exclude) or None, allow_unsafe="Configure page preview: figures only", **options)
    return res.risk, res.plausibility  # figures only; the preview's data are dropped here


def preview(config: dict):
    """Risk and plausibility figures of one run with the session's seed (Configure page)."""
    return _with_session(_preview, config)


@st.cache_data(scope="session", max_entries=8, show_spinner=False)
def _audit(tok, key, _df):
    return sdccore.audit_factor_scores(_df)


@st.cache_data(scope="session", max_entries=16, show_spinner=False)
def _removal_curve(tok, key, _df, sens, transform):
    return sdccore.removal_curve(_df, sensitive=list(sens) if sens else None, transform=transform)


def removal_curve():
    """pca_remove's utility and perturbed share against components removed (Configure page)."""
    cols = protect_columns()
    s = sensitive()
    tr = plausible()["transform"]
    return _removal_curve(token(), _key([cols, s, tr]), data()[cols], tuple(s) if s else None, tr)


def audit():
    cols = protect_columns()
    return _audit(token(), _key(cols), data()[cols])


def current_configs(methods) -> dict:
    """The configured methods as compare() configurations, labelled as METHOD_LABELS."""
    return {METHOD_LABELS[m]: with_floors(st.session_state[f"cfg_{m}"]) for m in methods}


def run_comparison(methods, reps, progress):
    df = data()[protect_columns()]
    cfgs = current_configs(methods)
    res = sdccore.compare(df, cfgs, sensitive=sensitive(), reps=reps, rng=seed(), progress=progress)
    st.session_state["comparison"] = {"result": res, "configs": cfgs, "token": token(),
                                      "roles": _key(roles())}
    return res


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


def choose_release(label: str, config: dict):
    st.session_state["release_label"] = label
    st.session_state["release_config"] = dict(config)


def release_choice():
    return st.session_state.get("release_label"), st.session_state.get("release_config")


def safe(fn):
    """Run a page body; on an error show a plain message (never a traceback or data) and
    keep the rest of the app usable."""
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


