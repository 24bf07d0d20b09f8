"""The release and its downloads (the adapter's release concern): the chosen configuration
protected once, assembled as ``make_release`` does, with its codebook and regressions."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import sdccore
from ui import history as hist
from ui.common import METHOD_LABELS
from ui.session import (
    columns_with, current_configs, data, excluded, file_format, floors_reason, labels, models, passthrough_text, protect_columns, seed, sensitive, with_floors, work_frame,
)
from ui.compute import cached


MIME = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet",
        "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "sav": "application/x-spss-sav", "dta": "application/x-stata-dta", "xpt": "application/x-sas-xport"}


def release_formats() -> dict:
    """The formats the release can be written in, with their labels."""
    return {"csv": "CSV", "parquet": "Parquet", "xlsx": "Excel (.xlsx)", "sav": "SPSS (.sav)", "dta": "Stata (.dta)",
            "xpt": "SAS transport (.xpt)"}


def default_release_format() -> str:
    """The uploaded file's format (SAS .sas7bdat is written as .xpt)."""

    return sdccore.release_format(file_format())


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
    return cached(_make_release_call, data(), recipe.to_dict(), floors_reason())


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


def _make_release_call(df, recipe, reason=None):
    return sdccore.make_release(df, recipe, allow_unsafe=reason)


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
    return cached(_release_body, work_frame(), *_release_args(config))


def _release_args(config: dict) -> tuple:
    """The arguments after the frame of ``_release_body`` (and ``_analyses_body``) for a
    configuration: method, sensitive, options with the session's floors, seed, the columns
    set apart, the floors' reason."""
    cfg = with_floors(config)
    method = cfg.pop("method")
    extra = [c for c in cfg.pop("exclude", None) or [] if c not in excluded()]
    return method, sensitive(), cfg, seed(), excluded() + extra, floors_reason()


def _analyses_body(df, method, sens, options, seed_, exclude, reason=None):
    """What analysts keep in the release of this configuration (``sdccore.report.release_analyses``:
    the set-apart columns are the domains), or None for a refused one."""
    res, _, _ = cached(_release_body, df, method, sens, options, seed_, exclude, reason)
    if res is None:
        return None
    return sdccore.report.release_analyses(df, res.data, sens, exclude, options)


def release_analyses(config: dict):
    """``_analyses_body`` for the configuration, from the session's cache (the release is
    protected once: its cached result is reused)."""
    return cached(_analyses_body, work_frame(), *_release_args(config))


def _keys_body(df, method, sens, options, seed_, exclude, reason=None):
    """What the release of this configuration did to its key variables
    (``sdccore.report.release_keys``), or None (no keys, or a refused release)."""
    if not options.get("keys"):
        return None
    res, _, _ = cached(_release_body, df, method, sens, options, seed_, exclude, reason)
    if res is None:
        return None
    return sdccore.report.release_keys(df, res.data, options)


def release_keys(config: dict):
    """``_keys_body`` for the configuration, from the session's cache."""
    return cached(_keys_body, work_frame(), *_release_args(config))


def codebook(rel, config=None) -> pd.DataFrame:
    """The codebook of the release on the Download page (per variable of the original), with
    what analysts keep (the session's cached battery of the configuration, when given)."""
    return sdccore.report.release_codebook(rel, data(), labels()[0],
                                           release_analyses(config) if config is not None else None)


def codebook_bytes(table, fmt) -> bytes:
    return sdccore.codebook_bytes(table, fmt)


def release_regressions(res):
    """The regression checks of the chosen release, one per formula, and their coefficient
    tables stacked with a 'model' column (None without formulas)."""
    checks = [sdccore.regression_check(data()[protect_columns()], res.data, m) for m in models()]
    if not checks:
        return None, []
    return pd.concat([c.table.reset_index().assign(model=c.model) for c in checks], ignore_index=True), checks


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


def go_back(entry_id: int) -> str | None:
    """Restore the settings a history entry was run with (``ui.history.go_back``) and, for a
    release, pick it again; None, or why it cannot be."""
    why, entry = hist.go_back(entry_id)
    if why is None and entry["kind"] == "release":
        choose_release(entry["label"], entry["options"], follow=False)
    return why
