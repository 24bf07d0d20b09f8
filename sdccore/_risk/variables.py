"""The risk floors' figures of one checked variable (``_safety._risk_profile`` runs them for
each): the intruder's knowledge and link, the perturbed share, the battery's hits beyond the
prior overall and in every size band (bands by rank, ``rank_bands``), and the violations in
words with the fix in the method's own setting."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .fixes import _fix
from .attacks import battery
from .intruders import link, residual_cor, slog
from .registry import REGISTRY, IntruderContext, columns, label
from .settings import ONE_RECORD, SMALL_BAND


def _cuts_passed(x, cuts):
    """For each record, how many of the ranks ``cuts`` (increasing, in 1..n-1) its rank in the
    stable order of x (ties by record order) reaches, from the values at those ranks (one
    numpy.partition: linear time, no sort)."""
    vs = np.partition(x, cuts)[cuts]
    passed = np.zeros(len(x), dtype=np.int64)
    for c, v in zip(cuts, vs):
        passed += x > v
        eq = np.flatnonzero(x == v)
        below = c if len(eq) == 1 else int((x < v).sum())
        passed[eq[c - below:]] += 1  # of the records tied at v (record order), those from the cut on
    return passed


def rank_bands(x, bands, top=None):
    """The records of each size band, as ``numpy.array_split(numpy.argsort(x, kind="stable"),
    bands)`` cuts them (the first n mod bands bands one record more; ties by record order),
    and with ``top`` the last ``top`` records of that order; each set in record order.  In
    linear time (one partition per cut): at a million records 30 stable argsorts took 2.9 s."""
    x = np.ascontiguousarray(x)
    n = len(x)
    q, r = divmod(n, bands)
    cuts = [b * q + min(b, r) for b in range(1, bands)]
    cuts = [c for c in cuts if 0 < c < n]
    band = _cuts_passed(x, cuts) if cuts else np.zeros(n, dtype=np.int64)
    members = [np.flatnonzero(band == b) for b in range(bands)]
    if top is not None:
        members.append(np.flatnonzero(_cuts_passed(x, [n - top]) if 0 < n - top < n else np.full(n, n - top <= 0)))
    return members


LEVERAGE = "highest leverage"


def leverage_band(K, top):
    """The ``top`` records (in record order) of highest leverage in a least-squares fit on the
    columns K with an intercept, on the raw or the signed-log scale (the larger of the two): a
    release that keeps a regression on the public variables pulls its fitted value toward the
    own value of a record with extreme public values, and anybody who holds the public values
    can tell which records those are (a persons file protected within region x sex: 5 of the
    10 records of leverage above 0.2 came back within 5 %, 1 of 10 without the release).
    Missing cells count as the column's mean."""
    h = np.zeros(len(K))
    for f in (lambda v: v, slog):
        with np.errstate(all="ignore"):
            Z = f(K.astype(float))
            mu, sd = np.nanmean(Z, axis=0), np.nanstd(Z, axis=0)
            Z = np.nan_to_num((Z - mu) / np.where(sd > 0, sd, 1.0))[:, sd > 0]
        Q = np.linalg.qr(np.c_[np.ones(len(K)), Z])[0]
        h = np.maximum(h, (Q * Q).sum(axis=1))
    return np.sort(np.argsort(-h, kind="stable")[:top])


def _shares(prior_hits, hits, sets):
    """For each set of sampled records in ``sets`` (positions in the sample): the best prior
    model's share (the first of ties, in model order) and, per intruder, (with the release,
    beyond the prior: the fewest of its hits outside any one prior model's) of its best
    variant there (an intruder makes one guess per record: its
    variants are alternatives, never pooled).  ``prior_hits``: (model names, models x records);
    ``hits``: {intruder: variants x records}.  Per set, one small matrix product per intruder over
    its members only.  Returns a list of (prior, model, {intruder: (with,
    beyond)}), (nan, None, {}) for an empty set."""
    models, PM = prior_hits
    sets = [np.unique(idx) for idx in sets]
    size = np.array([max(len(idx), 1) for idx in sets], dtype=float)
    empty = np.array([len(idx) == 0 for idx in sets])
    # per set, the counts over its members only (sets are bands: the work is the records' count
    # times the sets a record is in, not times every set); counts of 0/1 products are exact
    if models:
        PMf = PM.astype(float)
        pc = np.array([PMf[:, idx].sum(axis=1) for idx in sets]).T / size  # models x sets
        k = np.argmax(pc, axis=0)
        prior = pc[k, np.arange(len(sets))]
        miss = [1.0 - PMf[:, idx] for idx in sets]  # per set, models x members: the members a model does not get
    else:
        k, prior, miss = None, np.zeros(len(sets)), [np.ones((1, len(idx))) for idx in sets]
    figs = {}
    for name, H in hits.items():
        Hf = H.astype(float)
        W = np.empty((H.shape[0], len(sets)))
        B = np.empty((H.shape[0], len(sets)))
        for i, idx in enumerate(sets):
            Hs = Hf[:, idx]
            W[:, i] = Hs.sum(axis=1) / size[i]
            # beyond the prior: the hits no single prior model explains, i.e. the fewest beyond any
            # one model (adding a prior model never raises it; a model is never chosen per record)
            B[:, i] = (Hs @ miss[i].T).min(axis=1) / size[i] if len(idx) else 0.0
        figs[name] = (W, B)  # variants x sets
    out = []
    for i in range(len(sets)):
        if empty[i]:
            out.append((np.nan, None, {}))
            continue
        d = {}
        for name, (W, B) in figs.items():
            v = int(np.lexsort((W[:, i], B[:, i]))[-1])  # the largest beyond, then the largest with
            d[name] = (float(W[v, i]), float(B[v, i]))
        out.append((float(prior[i]), models[int(k[i])] if models else None, d))
    return out


@dataclass(frozen=True, kw_only=True)
class _Run:
    """What every checked variable's figures share in one ``_risk_profile`` call."""

    X: np.ndarray
    Y: np.ndarray
    Xr: np.ndarray          # the linked sample of the original
    Yr: np.ndarray          # and of the release
    rows: np.ndarray        # the sample's record numbers
    pos: np.ndarray         # each record's position in the sample (-1 outside it)
    names: list
    floors: object          # RiskFloors
    link_on: list | None    # what the intruder knows (selective protection)
    selective: bool
    shared: np.ndarray | None  # the link on link_on, shared by every target
    loo: dict | None        # each target's leave-one-out link (general protection)
    proxies: dict
    key: object             # the priors' cache key
    scaled: tuple | None
    structure: tuple | None
    observed: np.ndarray | None
    whole: dict | None
    win: int | None         # rank swapping's published window, in ranks
    planned_share: list | None
    method: str | None
    keys: tuple | None = None  # (original, released) key codes (survey files)
    replays: object = None     # the method made again on the release (``IntruderContext.replays``)
    prior_original: np.ndarray | None = None  # the sample of the original the priors read (None: Xr)
    prior_key: object = None   # their cache key (None: key)
    settings: dict | None = None  # the method's published settings (``IntruderContext.settings``)


def _abs_cor(xo, yo, wj):
    if wj is not None:
        return wj["cor"]
    if xo.std() > 0 and yo.std() > 0:
        return abs(float(np.corrcoef(xo, yo)[0, 1]))
    return 1.0 if np.array_equal(xo, yo) else 0.0


def _variable_risk(c, a, j):
    """One checked variable's figures: (its row, its band rows, its intruder rows, its
    violations)."""
    X, Y, floors, n = c.X, c.Y, c.floors, c.X.shape[0]
    name = c.names[j]
    x, y = np.ascontiguousarray(X[:, j]), np.ascontiguousarray(Y[:, j])  # strided columns: 3x slower scans
    ob = c.observed[:, j] if c.observed is not None else None
    xo, yo = (x, y) if ob is None else (x[ob], y[ob])
    wj = c.whole.get(j) if c.whole else None  # the whole file's figures, when X is a sample of it
    cor = _abs_cor(xo, yo, wj)
    known, linked = _knowledge(c, j)
    share, cor_checked, res_cor = _perturbed_share(c, a, j, known, ob, cor)
    ictx = IntruderContext(variable=name, target=j, names=tuple(c.names), original=c.Xr, released=Y, rows=c.rows,
                           linked=linked, known=tuple(known), selective=c.selective, method=c.method, window=c.win,
                           settings=c.settings,
                           observed=ob, tolerance=floors.tolerance, cells=c.observed, whole_original=X, scaled=c.scaled,
                           structure=c.structure, key=c.key, keys=c.keys, replays=c.replays,
                           prior_original=c.prior_original, prior_key=c.prior_key)
    prior_hits, hits, identity = battery(ictx)
    strict = c.selective or floors.hold_all_intruders
    enforced = [k for k in hits if REGISTRY[k].held(strict)]
    # in general protection the linked record is held to the floor overall, not band by band
    band_enforced = [k for k in enforced if strict or REGISTRY[k].bands_in_general]
    # bands by rank so that ties at an edge do not empty a band: the records in order of
    # value (stable), cut as numpy.array_split does (the first n mod bands get one more)
    top = max(floors.top_records, int(np.ceil(0.01 * n)))
    members = rank_bands(x, floors.bands, top if top < n else None)
    labels = [str(b + 1) for b in range(floors.bands)] + (["top 1 %"] if top < n else [])
    if c.selective and known and top < n:  # the records an intruder picks out by their public values
        members.append(leverage_band(X[:, known], top))
        labels.append(LEVERAGE)
    sampled = [c.pos[idx][c.pos[idx] >= 0] for idx in members]
    (prior_all, prior_model, sh), *per_band = _shares(prior_hits, hits, [np.arange(len(c.rows))] + sampled)
    if wj is not None:
        sh["own"] = (float(wj["all"]), float(wj["all"]))
    intr_rows = [{"variable": name, "band": "all", "intruder": k, "prior": prior_all, "with_release": w,
                  "beyond_prior": b, "held": k in enforced} for k, (w, b) in sh.items()]
    band_rows, bad_bands, worst, worst_band, sb_top = _band_figures(name, x, y, labels, members, per_band, wj,
                                                                    band_enforced, floors, intr_rows)
    who = "public variables" if c.selective else "other variables (all but its proxies)"
    v = _violations(c, name, share, cor_checked, sh, enforced, prior_all, bad_bands, who, identity)
    best = max(enforced, key=lambda k: sh[k][1])
    row = {"variable": name, "perturbed_share": share, "abs_cor": cor, "residual_cor": res_cor,
           "prior": prior_all, "prior_model": prior_model,
           **{col: sh.get(k, (np.nan, np.nan))[1] for col, k in columns().items()},
           "intruder": best, "with_release": sh[best][0], "beyond_prior": sh[best][1],
           "worst_band_close": worst, "worst_band": worst_band,
           "reported_only": _reported(sh, enforced, sb_top),
           "intruders": ", ".join(sh), "ok": not v}
    return row, band_rows, intr_rows, v


def _knowledge(c, j):
    """What the intruder of variable j knows (column numbers) and the record it links each
    sampled record to."""
    m = c.X.shape[1]
    known = c.link_on if c.link_on else [i for i in range(m) if i != j and i not in c.proxies[j]]
    if c.shared is not None:
        return known, c.shared
    if c.loo is not None:
        return known, c.loo[j]
    return known, (link(c.X, c.Y, c.rows, known) if known else c.rows)


def _perturbed_share(c, a, j, known, ob, cor):
    """(perturbed share, the |cor| held to the floor, the residual |cor|): of the part the
    public variables do not explain in selective protection, of the whole variable (the
    planned share where given) in general protection."""
    if c.selective:
        res_cor = residual_cor(c.Xr, c.Yr, j, known, None if ob is None else ob[c.rows], c.key)
        return 1.0 - res_cor ** 2, res_cor, res_cor
    planned = c.planned_share[a] if c.planned_share is not None else None
    share = float(planned) if planned is not None else float(1.0 - cor ** 2)
    return share, cor, np.nan


def _band_figures(name, x, y, labels, members, per_band, wj, band_enforced, floors, intr_rows):
    """Each size band's row (and its intruder rows, appended to ``intr_rows``): (band rows,
    failing bands, the worst beyond-prior share and its band, the top band's shares)."""
    band_rows, bad_bands, sb_top = [], [], {}
    worst, worst_band = 0.0, None
    for lab, idx, (p_b, _, sb) in zip(labels, members, per_band):
        if len(idx) == 0:
            continue
        count, vlo, vhi = len(idx), float(x[idx].min()), float(x[idx].max())
        if wj is not None and lab in wj["bands"]:
            c_own, count, vlo, vhi = wj["bands"][lab]
            sb["own"] = (float(c_own), float(c_own))
        if not sb:
            continue
        intr_rows += [{"variable": name, "band": lab, "intruder": k, "prior": p_b, "with_release": w,
                       "beyond_prior": b, "held": k in band_enforced} for k, (w, b) in sb.items()]
        b_int = max((k for k in sb if k in band_enforced), key=lambda k: sb[k][1])
        c = sb[b_int][1]
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.abs(y[idx] - x[idx]) / np.abs(x[idx])
        med = float(np.median(rel)) if len(rel) else float("nan")
        ok_b = c <= floors.max_close_share
        band_rows.append({"variable": name, "band": lab, "lo": vlo, "hi": vhi, "records": int(count),
                          "close_own": sb["own"][1],
                          "close_reconstructed": sb["reconstruction"][1] if "reconstruction" in sb else np.nan,
                          "prior": p_b, "intruder": b_int, "with_release": sb[b_int][0], "beyond_prior": c,
                          "median_rel_error": med, "ok": ok_b,
                          "reported_only": _reported(sb, band_enforced)})
        if lab == "top 1 %":
            sb_top = sb
        if c > worst:
            worst, worst_band = c, lab
        if not ok_b:
            bad_bands.append((lab, c, b_int, sb[b_int][0], p_b, int(count)))
    return band_rows, bad_bands, worst, worst_band, sb_top


def _who(what) -> str:
    """'the assignment intruder': an intruder's label without what it does in brackets (that is
    the glossary's entry for it, the pages' tooltip)."""
    return label(what).split(" (", 1)[0]


def _violations(c, name, share, cor_checked, sh, enforced, prior_all, bad_bands, who, identity):
    """The floors one variable breaks, each with the fix in the method's own setting."""
    floors, selective, method, tol = c.floors, c.selective, c.method, c.floors.tolerance
    v = []
    scope = " beyond the public variables' prediction" if selective else ""
    if share < floors.min_perturbed_share:
        v.append(f"{name}: only {share:.1%} of its variance{' not explained by the public variables' if selective else ''}"
                 f" is perturbed (floor: at least {floors.min_perturbed_share:.0%}); fix: {_fix('perturbed share', method)}")
    if cor_checked > floors.max_abs_cor:
        v.append(f"{name}: |cor(original, protected)|{scope} = {cor_checked:.3f} (floor: at most "
                 f"{floors.max_abs_cor:.2f}); fix: {_fix('|cor|', method)}")
    for what, (w_all, b_all) in sh.items():
        if what in enforced and b_all > floors.max_close_share:
            verb = REGISTRY[what].verb
            # short (issue 41): who, how many records more than were known, the floor; the intruder's
            # description is its glossary entry (the pages' tooltips and the reports' glossary)
            v.append(f"{name}: {_who(what)} {verb} {name} within {tol:.0%} for {b_all:.1%} of records more than "
                     f"the {prior_all:.1%} its {who} give (floor: {floors.max_close_share:.0%}); fix: "
                     f"{REGISTRY[what].fix_text(selective=selective, method=method, names=c.names, identity=identity)}")
    if bad_bands:
        lab, cc, what, w_b, p_b, count = max(bad_bands, key=lambda t: t[1])
        where = ("the largest records" if lab == "top 1 %" else "the records of highest leverage (extreme public "
                 "values, which pull a published regression to their own)" if lab == LEVERAGE
                 else f"size band {lab} of {floors.bands}")
        if count < SMALL_BAND:  # the floor's words in records: one record is a large share of a small band
            where += f" ({count} records: each is {1 / count:.0%}, so {ONE_RECORD})"
        v.append(f"{name}: in {where}, {_who(what)} {REGISTRY[what].verb} {cc:.1%} of records within {tol:.0%} "
                 f"more than the {p_b:.1%} the {who} give (floor: {floors.max_close_share:.0%} in every band; "
                 f"{len(bad_bands)} band(s) fail); "
                 f"fix: {REGISTRY[what].fix_text(selective=selective, method=method, names=c.names, identity=identity)}"
                 + ("; or aggregate the largest values (tail='aggregate')" if lab == "top 1 %" else ""))
    return v


def _reported(sh, enforced, top=None):
    """The intruders measured but not held to the floors, as 'name beyond-prior share' (and
    the share in the largest 1 % where given): '' in selective protection."""
    out = []
    for k, (_, b) in sh.items():
        if k not in enforced:
            t = f", top 1 % {top[k][1]:.1%}" if top and k in top else ""
            out.append(f"{k} {b:.1%}{t}")
    return "; ".join(out)
