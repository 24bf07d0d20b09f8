"""The session store (the adapter's first concern): what this browser session holds (data,
roles, floors, each method's configuration, seed, design, plausible-value choices,
regressions) and what is read from it, plus ``safe``, the page guard.  Everything lives in
``st.session_state``: one user's data never reach another session."""

from __future__ import annotations

import logging
import math
import os
import sys
import traceback
import uuid

import pandas as pd
import streamlit as st

import sdccore
from ui import history as hist
from ui import imports
from ui.common import METHOD_LABELS


ROLES = ("sensitive", "public", "excluded", "identifier")


SEED_ENV = "SDCCORE_SEED"  # a fixed first seed for every session (demonstrations, the tests); unset: random
SEED_MAX = 2**53 - 1       # the largest whole number a browser's number field holds exactly
SHORT_SEED = 2**32         # below this a seed can be found by trying them all


def fresh_seed() -> int:
    """A new session's seed: drawn from the operating system's randomness (0 to 2^53 - 1), so
    that nobody can guess it.  The seed is the release's key: an intruder who has the release,
    this tool and the seed makes the same draws and undoes the swaps and the noise.  The
    environment variable SDCCORE_SEED fixes it instead (a demonstration, the tests)."""
    fixed = os.environ.get(SEED_ENV, "").strip()
    if fixed.isdigit() and int(fixed) <= SEED_MAX:
        return int(fixed)
    import secrets

    return secrets.randbelow(SEED_MAX + 1)


MIN_ROWS = 3  # as sdccore protects (records)


DEFAULT_PLAUSIBLE = {"transform": "none", "bounds": "plausible", "rounding": "original", "tail": "none"}


DEFAULT_MAX_RISK = 0.5   # ceiling of the disclosure risk (mean of DBRL and ID) for the suggested release


# keep the public variables and redraw the sensitive ones given them: selective protection only
SELECTIVE_ONLY = tuple(sdccore.CONDITIONAL_METHODS)  # the built-in ones; offered_methods asks the registry


# every option left to the library's schema (sdccore.option_schema): the pages show its defaults


def passthrough_text(roles_=None) -> list:
    """Text columns that would be released unchanged (role 'excluded')."""
    r = roles_ if roles_ is not None else roles()
    df = data()
    return [c for c, role in r.items() if role == "excluded" and c in df.columns
            and not pd.api.types.is_numeric_dtype(df[c])]


def undecided_text() -> list:
    """The text columns released unchanged that need the custodian's word: not the key variables
    (released k-anonymous, a decision of their own on the Data page)."""
    ss = st.session_state  # the keys widget's value when it has one (the Data page draws it after the roles)
    keys = set(ss["keys_select"] if "keys_select" in ss else key_choice(recode=False)["keys"])
    return [c for c in passthrough_text() if c not in keys]


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
    text = undecided_text()
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


def has_missing_cells() -> bool:
    """Whether a numeric column of the session's data has a missing cell (IPSO then offers
    which regression it keeps)."""
    return bool(data().select_dtypes("number").isna().to_numpy().any())


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
    """Columns that are protected (sensitive and public), in the file's order: a numeric key
    variable (age), the sampling weight, a stratum or the household id is not among them (the
    library releases those by their own steps), so a method's settings count the same variables
    the library protects."""
    design = set(design_columns())
    return [c for c in columns_with("sensitive", "public") if c not in design]


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


def upload_error() -> str | None:
    return st.session_state["upload_error"]


def can_restore_drop() -> bool:
    return st.session_state.get("before_drop") is not None


def max_risk() -> float:
    return float(st.session_state["max_risk"])


def set_max_risk(value: float):
    st.session_state["max_risk"] = float(value)


def with_floors(config: dict) -> dict:
    """A configuration with the session's risk floors, plausible-value choices, survey
    design (strata for the methods that take them, sampling weights) and key variables (made
    k-anonymous by local suppression, with the household id).  A configuration's own 'tail'
    (the Run page's second round, '... + largest aggregated') wins over the page's choice."""
    cfg = {**config, **{k: v for k, v in plausible().items() if not (k == "tail" and k in config)},
           "floors": floors()}
    d = design()
    if d.get("strata") and config.get("method") in sdccore.methods(strata=True):  # the registry, asked now
        cfg["strata"] = list(d["strata"])
    if d.get("weights"):
        cfg["weights"] = d["weights"]
    kc = key_choice()
    if kc["keys"]:  # the Data page's key variables: every release made k-anonymous on them
        cfg.update(keys=list(kc["keys"]), k_anonymity=kc["k"],
                   **({"household": kc["household"], "household_ids": kc["household_ids"]} if kc["household"] else {}),
                   **({"recode": kc["recode"]} if kc["recode"] else {}))
    return cfg


KEY_OPTIONS = ("keys", "k_anonymity", "household", "household_ids", "recode")  # what a release does to the keys (not a decomposition's)


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
    """The columns the releases use beside those protected: strata, sampling weight, key
    variables and household id (released unchanged, the keys blanked to k-anonymity)."""
    d = design()
    kc = key_choice(recode=False)
    keys = list(kc["keys"]) + ([kc["household"]] if kc["keys"] and kc["household"] else [])
    return list(dict.fromkeys(list(d.get("strata", [])) + ([d["weights"]] if d.get("weights") else []) + keys))


def plausible() -> dict:
    return dict(st.session_state.get("plausible") or DEFAULT_PLAUSIBLE)


def set_plausible(new: dict):
    st.session_state["plausible"] = dict(new)


def floors_reason() -> str | None:
    """The custodian's reason for floors below the defaults (Configure page), or None when
    the floors are the defaults or stricter (then no reason is asked for)."""
    if not sdccore.RiskFloors.from_value(floors()).lowered():
        return None
    reason = str(st.session_state.get("floors_reason") or "").strip()
    return reason or None


def set_floors_reason(text: str):
    st.session_state["floors_reason"] = str(text or "").strip()


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


def models() -> list:
    """The regressions the user asked to check (one formula a line on the Run page)."""
    return list(st.session_state.get("models", []))


def key_choice(recode=True) -> dict:
    """The key variables, household id and k of the Data page (the file's suggestion until
    changed): {'keys': [...], 'household': name or None, 'k': int, 'recode': {...},
    'household_ids': ...}.  ``recode=False``: for the names alone (the suggestion's default
    recodings not waited for: 'recode' is then empty until the Data page stores a choice)."""
    cols = set(data().columns)
    got = st.session_state.get("key_choice") or {**st.session_state.get("key_suggestion", {}), "k": 3,
                                                 "recode": default_recode()[0] if recode else {}}
    keys = [c for c in got.get("keys", []) if c in cols]
    return {"keys": keys, "household": got.get("household") if got.get("household") in cols else None,
            "k": int(got.get("k", 3)), "recode": {c: r for c, r in (got.get("recode") or {}).items() if c in keys},
            "household_ids": got.get("household_ids", "drop")}


def default_recode() -> tuple:
    """({key: Recoding dict}, reasons): the suggested keys' recodings until the custodian
    chooses (``sdccore.default_recodings`` at k = 3, the household's keys blanked together):
    those of a key local suppression would otherwise blank for a tenth of the records or
    more.  Computed once a file (kept with its key suggestion, which a new file replaces)."""
    sug = st.session_state.get("key_suggestion")
    if not sug or not sug.get("keys"):
        return {}, ()
    if "recode" not in sug:
        fut = sug.pop("recode_future", None)  # started with the file (compute.prefetch_keys)
        keys, hh = suggested_keys()
        sug["recode"], sug["recode_reasons"] = (fut.result() if fut is not None else
                                                default_recode_call(data(), keys, hh, 3, False))
    return dict(sug["recode"]), tuple(sug["recode_reasons"])


def default_recode_call(df, keys, household, k, size) -> tuple:
    """({key: Recoding dict}, reasons) of ``sdccore.default_recodings`` (none for no keys or
    keys the checks refuse: the Data page's key view says why)."""
    if not keys:
        return {}, ()
    try:
        r = sdccore.default_recodings(df, keys, k, household=household, household_size=size)
    except (ValueError, TypeError):
        return {}, ()
    return r.to_dict(), r.reasons


def suggested_keys() -> tuple:
    """(the suggested keys still in the data, the suggested household id or None): what
    ``default_recode`` is computed for."""
    sug = st.session_state.get("key_suggestion") or {}
    cols = set(data().columns)
    return [c for c in sug.get("keys", []) if c in cols], (sug.get("household") if sug.get("household") in cols
                                                            else None)


def set_key_choice(keys, household, k, recode=None, household_ids="drop"):
    """Keep the Data page's keys, household id, k, recodings ({key: Recoding dict}) and what the
    release does with the household ids (drop, new, kept)."""
    st.session_state["key_choice"] = {"keys": list(keys), "household": household, "k": int(k),
                                      "recode": dict(recode or {}), "household_ids": household_ids}


def required() -> tuple:
    """(the regressions must hold, their smallest slope overlap): the Run page's choice."""
    return bool(st.session_state.get("models_required", False)), float(st.session_state.get("models_overlap", 0.9))


def set_required(on: bool, overlap: float):
    """Keep the choice; a changed requirement changes the suggestion, so the release picked
    for the old one (and its radio button) no longer holds, as after a new comparison."""
    if (bool(on), float(overlap)) != required():
        for k in ("release_pick", "release_label", "release_config"):
            st.session_state.pop(k, None)
    st.session_state["models_required"] = bool(on)
    st.session_state["models_overlap"] = float(overlap)


def required_models(result) -> dict | None:
    """The Run page's regressions that must hold, as ``Comparison.suggest(require=...)`` takes
    them: those the comparison ran (a formula added after it waits for the next run)."""
    on, overlap = required()
    if not on or result.regression.empty:
        return None
    ran = set(result.regression.model)
    return {m: overlap for m in models() if m in ran} or None


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


def safe(fn):
    """Run a page body; on an error show a plain message (never a traceback or data) and
    keep the rest of the app usable."""
    hist.track_settings()  # every page records the changes of roles and settings (for undo)
    try:
        imports.ensure()  # the heavy modules, one thread at a time (ui/imports.py)
        fn()
    except Exception:
        if os.environ.get("SDC_DEBUG"):
            raise
        _show_error(sys.exc_info()[1])


LOG = logging.getLogger("sdccore.app")
if not LOG.handlers:  # the server's log (its standard error): whoever runs the server can act on it
    _handler = logging.StreamHandler()
    _handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    LOG.addHandler(_handler)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False


def _places(exc, k=4) -> str:
    """Where an exception was raised: the last ``k`` frames as file:line in function, the
    project's files by their path in it (never a value: messages can hold data)."""
    frames = traceback.extract_tb(exc.__traceback__)[-k:]
    out = []
    for f in frames:
        path = f.filename.replace(os.sep, "/")
        for root in ("/sdccore/", "/ui/", "/pages/", "/site-packages/"):
            if root in path:
                path = path[path.rindex(root) + 1:]
                break
        else:
            path = os.path.basename(path)
        out.append(f"{path}:{f.lineno} in {f.name}")
    return " <- ".join(reversed(out)) or "unknown place"


def _show_error(exc):
    ref = uuid.uuid4().hex[:8]
    where = _places(exc)
    if isinstance(exc, (ValueError, TypeError)):  # the library's refusals are written for the user
        LOG.info("refused [%s] %s at %s", ref, type(exc).__name__, where)
        st.error(f"This step could not be completed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
        return
    LOG.error("failed [%s] %s at %s", ref, type(exc).__name__, where)
    st.error(f"Something went wrong in this step ({type(exc).__name__}, reference {ref}). Your data and settings are "
             f"kept: run the step again; if it fails again, give the reference {ref} to whoever runs this server "
             f"(its log says where it failed).")


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
