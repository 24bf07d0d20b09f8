"""Cached computations (the adapter's second concern): each sdccore call the pages show, by
name, through one session-scoped cache keyed by the data's token (a SHA-256 of its contents)
and the arguments as JSON; Explore's numbers prefetched in a background thread."""

from __future__ import annotations

import copy
import sys
import threading

import pandas as pd
import streamlit as st

import sdccore
from ui import imports
from ui.common import _key
from ui.session import KEY_OPTIONS, data, excluded, plausible, protect_columns, seed, sensitive, suggested_keys, token, \
    with_floors, work_frame
from ui.session import default_recode as default_recode_of_suggestion, default_recode_call


_WARM = threading.Event()


def _preload():
    """Import the library's heavy modules (scipy.stats, scikit-learn, numba's cached kernels:
    2-3 s) in the background once per server process, so that the first Explore or
    Configure page does not wait for them: ``sdccore`` loads them only when first used.

    Then run each compiled kernel once on a small synthetic frame (no user data): on a fresh
    install numba compiles them on first use (measured: the first Explore page waited 31 s
    for it), afterwards it loads them from its cache in well under a second."""

    def load():
        import time

        time.sleep(2.0)  # after the first page has been drawn
        imports.ensure()  # the heavy modules, one thread at a time (ui/imports.py)
        try:
            # every method and measure once on a synthetic file (no user data): the selective and
            # general protection, weights and missing cells (the first Explore page of a fresh
            # install waited 42 s with only the selective kernels warmed, 6 s afterwards)
            sdccore.compile_kernels()
        except Exception:  # noqa: BLE001 - a warm-up only: the pages compile what they need anyway
            pass

    def run():
        try:
            load()
        finally:
            _WARM.set()

    if any(t.name == "sdccore-preload" for t in threading.enumerate()):
        return
    if "sdccore._choose.recommend" in sys.modules:  # loaded already: nothing to warm
        _WARM.set()
    else:
        threading.Thread(target=run, name="sdccore-preload", daemon=True).start()


def kernels_warm() -> bool:
    """Whether the background warm-up has finished (``_preload``): until then a page that
    protects may wait for numba to compile (about a minute, once after an install)."""
    return _WARM.is_set()


_preload()


def request_audit():
    st.session_state["audit_token"] = token()


def audit_requested() -> bool:
    return st.session_state["audit_token"] == token()


def _preview_body(df, method, sens, options, seed_, exclude):
    res = sdccore.protect(df, method=method, sensitive=list(sens) if sens else None, rng=seed_,
                          exclude=list(exclude) or None, allow_unsafe="Configure page preview: figures only", **options)
    return res.risk, res.plausibility, res.notes  # figures and words only; the preview's data are dropped here


def _inspect_call(df, cols):
    return sdccore.inspect_data(df, protect_columns=cols)


def _explore_call(df):
    return {"corr": sdccore.correlation_matrix(df), "adequacy": sdccore.sampling_adequacy(df),
            "scree": sdccore.scree(df), "indices": sdccore.correlation_indices(df)}


def _indices_call(df, sens):
    return sdccore.correlation_indices(df, sensitive=sens)


def _recommend_call(df, sens):
    return sdccore.recommend(df, sensitive=sens)


def _decompose_call(df, method, sens, options):
    return sdccore.decompose(df, method=method, sensitive=sens, **options)


def _audit_call(df):
    return sdccore.audit_factor_scores(df)


def _removal_curve_call(df, sens, transform):
    return sdccore.removal_curve(df, sensitive=sens, transform=transform)


def _key_risk_call(df, keys, weights, household, k):
    return sdccore.key_risk(df, keys, weights=weights, household=household, k=k)


def key_risk(keys, weights, household, k):
    """The identity risk of the key variables chosen on the Data page (cached)."""
    cols = list(dict.fromkeys(list(keys) + [c for c in (weights, household) if c]))
    return cached(_key_risk_call, data()[cols], list(keys), weights, household, int(k))


def _key_view_call(df, keys, weights, household, k, recode, size):
    rules = {c: sdccore.Recoding.from_dict(r) for c, r in recode.items()}
    d = sdccore.recode(df, rules) if rules else df
    sup = sdccore.local_suppression(d, keys, k, household=household, household_size=size)
    costs = sdccore.blank_warnings(d[list(keys)], sup)  # the heavily blanked keys' sentences, then one if uneven
    return (sdccore.key_risk(d, keys, weights=weights, household=household, k=k), sup.per_key, costs,
            costs[:len(costs) - bool(sup.uneven())])


def key_view(keys, weights, household, k, recode, household_ids="drop"):
    """(identity risk after the chosen recodings, values the release blanks per key, what those
    blanks cost the analysts in sentences (``blank_warnings``), those of them on keys blank for
    many records): the Data
    page's keys as the release will treat them (with released household ids the household size
    is a key too; cached)."""
    cols = list(dict.fromkeys(list(keys) + [c for c in (weights, household) if c]))
    return cached(_key_view_call, data()[cols], list(keys), weights, household, int(k), dict(recode or {}),
                  bool(household) and household_ids != "drop")


def default_recode(keys, household, k, size):
    """({key: Recoding dict}, reasons): ``sdccore.default_recodings`` for the Data page's keys
    (cached)."""
    if not keys:
        return {}, ()
    if (list(keys), household) == suggested_keys() and int(k) == 3 and not size:  # the suggestion's: computed once
        return default_recode_of_suggestion()
    cols = list(dict.fromkeys(list(keys) + ([household] if household else [])))
    return cached(default_recode_call, data()[cols], list(keys), household, int(k), bool(size))


def _suggest_call(df, keys, k, weights):
    return sdccore.suggest_recodings(df, keys, k, weights=weights)


def recoding_suggestions(keys, weights, k):
    """``sdccore.suggest_recodings`` for the Data page's keys (cached)."""
    cols = list(dict.fromkeys(list(keys) + ([weights] if weights else [])))
    return cached(_suggest_call, data()[cols], list(keys), int(k), weights)


@st.cache_data(scope="session", max_entries=64, show_spinner=False)
def _cached(name, tok, key, _fn, _args):
    return _fn(*_args)


def _plugins():
    """The registered methods, intruders and analyses (and which entry each name is): a
    result computed before a plug-in was registered, removed or replaced is not reused."""
    return [[n, id(get(n))] for names, get in ((sdccore.methods(), sdccore.method_info),
                                               (sdccore.intruders(), sdccore.intruder_info),
                                               (sdccore.analyses(), sdccore.analysis_info)) for n in names]


def cached(fn, df: pd.DataFrame, *args):
    """The one cache of sdccore calls: keyed by the call's name, the session data's token
    and the other arguments as JSON (never by hashing the frame).  A call started in the
    background (``prefetch_explore``) is waited for instead of run again."""
    key = _key([_plugins(), list(df.columns), args])
    fut = st.session_state.get(PREFETCH, {}).get((fn.__name__, token(), key))
    if fut is not None:
        return copy.deepcopy(fut.result())  # as the cache does, every caller its own copy
    return _cached(fn.__name__, token(), key, fn, (df, *args))


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


def _prefetcher():
    """The background threads of the early calls (one pool for the process, made at its first
    use), or None where numba's kernels may not run in two threads at once."""
    from concurrent.futures import ThreadPoolExecutor

    if not _PREFETCHER:
        _PREFETCHER.append(ThreadPoolExecutor(max_workers=2, thread_name_prefix="sdccore-prefetch")
                           if _threadsafe_kernels() else None)
    return _PREFETCHER[0]


def prefetch_explore():
    """Start Explore's numbers (correlations, adequacy, scree, the between/within indices and
    the recommendation, which runs the candidate methods) in a background thread as soon as
    data or roles change, so that Explore opens with them ready (Tarragona: 0.4 s of work,
    EIA about 1 s).  The futures live in this session's state only, keyed as ``cached`` keys
    its calls; the thread calls sdccore alone (no Streamlit)."""
    ss = st.session_state
    pool = _prefetcher()
    if pool is None:
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
    for fn, args in ((_explore_call, ()), (_indices_call, (sens,)), (_recommend_call, (sens,))):
        key = (fn.__name__, tok, _key([_plugins(), list(df.columns), args]))
        if key not in store:
            store[key] = pool.submit(_after_imports, fn, df, *args)
    ss[PREFETCH] = store


def prefetch_keys():
    """Start the Data page's work on the suggested keys of a new file in the background (the
    keys' default recodings, in the key suggestion where ``session.default_recode`` waits for
    them, and the suggested recodings, keyed as ``cached`` keys them), beside the page's own:
    on testdata each takes about 4 CPU-s, which the page did one after the other."""
    pool = _prefetcher()
    if pool is None:
        return
    ss = st.session_state
    keys, hh = suggested_keys()
    sug = ss.get("key_suggestion")
    if not keys or sug is None:
        return
    cols = list(dict.fromkeys(keys + ([hh] if hh else [])))
    sug["recode_future"] = pool.submit(_after_imports, default_recode_call, data()[cols], keys, hh, 3, False)
    weights = (ss.get("design") or {}).get("weights")
    df = data()[list(dict.fromkeys(keys + ([weights] if weights else [])))]
    key = (_suggest_call.__name__, token(), _key([_plugins(), list(df.columns), (keys, 3, weights)]))
    ss[PREFETCH] = {**{k: f for k, f in ss.get(PREFETCH, {}).items() if k[1] == token()},
                    key: pool.submit(_after_imports, _suggest_call, df, keys, 3, weights)}


def _after_imports(fn, *args):
    imports.ensure()
    return fn(*args)


def problems():
    cols = protect_columns()
    return cached(_inspect_call, data(), cols)


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
    return cached(_explore_call, data()[protect_columns()])


def indices():
    return cached(_indices_call, data()[protect_columns()], sensitive())


def recommendation():
    return cached(_recommend_call, data()[protect_columns()], sensitive())


def decompose(method: str, options: dict):
    opts = {k: v for k, v in with_floors(options).items() if k != "method" and k not in KEY_OPTIONS}
    return cached(_decompose_call, data()[protect_columns()], method, sensitive(), opts)


def _with_session(fn, config: dict):
    """A cached protect call on the working frame with the session's roles, floors,
    plausible-value choices and seed."""
    cfg = with_floors(config)
    method = cfg.pop("method")
    # a configuration from the comparison names the design columns in exclude: they are excluded anyway
    extra = [c for c in cfg.pop("exclude", None) or [] if c not in excluded()]
    return cached(fn, work_frame(), method, sensitive(), cfg, seed(), excluded() + extra)


def preview(config: dict):
    """Risk and plausibility figures and the release's notes of one run with the session's seed
    (Configure page)."""
    return _with_session(_preview_body, config)


def removal_curve():
    """pca_remove's utility and perturbed share against components removed (Configure page)."""
    return cached(_removal_curve_call, data()[protect_columns()], sensitive(), plausible()["transform"])


def audit():
    return cached(_audit_call, data()[protect_columns()])


def warm_up():
    """Start the comparison's worker processes in the background (once every few minutes)."""
    sdccore.warm_workers()
