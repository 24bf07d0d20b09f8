"""Comparisons, the search and the stronger settings (the Run page's concern): runs of
``sdccore.compare`` and ``sdccore.search`` on the session's data, remembered per data token
and roles."""

from __future__ import annotations

import streamlit as st

import sdccore
from ui import history as hist
from ui.common import METHOD_LABELS, _key, method_of
from ui.session import (
    config, current_configs, data, design_columns, floors, models, protect_columns, roles, seed, sensitive, set_config, token,
)
from ui.release import choose_release


def run_comparison(methods, reps, progress, partial=None):
    df = data()[protect_columns() + [c for c in design_columns() if c not in protect_columns()]]
    cfgs = current_configs(methods)
    res = sdccore.compare(df, cfgs, sensitive=sensitive(), reps=reps, rng=seed(), progress=progress,
                          models=models() or None, partial=partial, tails=True, scales=True, domains=True)
    if not res.cancelled:
        vr = res.variable_risk()
        for label, cfg in res.configs.items():
            sub = res.summary[res.summary.config == label]
            if not len(sub):
                continue
            scores = dict(zip(sub.score, sub["mean"]))
            risk = vr[vr.config == label].set_index("variable") if len(vr) else None
            hist.record_history("comparison", label, cfg, scores, risk, {"reps": reps})
    # the configurations the comparison ran: the page's, then any of its second round ('... + largest
    # aggregated', issue 38), which the Run and Download pages offer as they are
    cfgs = {**cfgs, **{lab: cfg for lab, cfg in res.configs.items() if lab not in cfgs}}
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
                                           progress=progress, models=models() or None)
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


def comparison_changes(c=None) -> list:
    """What changed since the comparison ran (a method's settings, the floors and plausible
    values, which are in every configuration, the seed): its figures and suggestion are for
    the settings it ran with."""
    c = c if c is not None else comparison()
    if c is None:
        return []
    now = current_configs([method_of(lab) for lab in c["configs"] if method_of(lab)])
    out = [f"{lab} settings" for lab, cfg in c["configs"].items() if lab in now and _key(now[lab]) != _key(cfg)]
    if c.get("seed") is not None and c["seed"] != seed():
        out.append("seed")
    return out
