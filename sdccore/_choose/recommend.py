"""Method recommendation: the FA paper's cookbook with documented thresholds, the user's
(between, within) point on a map simulated from the paper's correlation model (eq. 5), and
an optional quick tournament on the user's own data."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd

from .compare import compare
from .._data.explore import correlation_indices
from .._protect.options import CONDITIONAL_METHODS
from .._core.streams import child_seeds
from .._core.validation import check_dataframe, make_rng, numeric_columns, numeric_matrix, resolve_seed

MIN_RECOMMEND_ROWS = 20

__all__ = ["recommend", "Recommendation", "load_bw_map", "simulate_bw_map", "eq5_correlation", "eq5_data", "MAP_CONFIGS",
           "stronger_settings"]

# Cookbook thresholds on mean absolute correlations (our choice; the paper gives none).
BETWEEN_LOW = 0.3      # between below this is "low"; at or above it "significant"
WITHIN_HIGH = 0.5      # within at or above this is "high"
WITHIN_LOW = 0.3       # within below this is "low"

# The configurations the map and the tournament compare (selective protection of S): every
# method of the tool with its defaults; only those that meet every risk floor in every run can
# win a point, and among them the best analysis validity wins (issue 27)
MAP_CONFIGS = {
    "FA": {"method": "fa"},          # isolate_sensitive rotation, factors chosen by threshold 0.3
    "PCA": {"method": "pca"},        # components loading >= 0.3 on a sensitive variable
    "M-AGG": {"method": "magg", "k": 3},
    "Rank swap": {"method": "rankswap", "p": 40.0},
    "IPSO": {"method": "ipso"},
    "Shuffle": {"method": "shuffle"},
    "FA-cond": {"method": "cfa"},
}
# the FA paper's three methods, as the map compared them before the risk floors (overall score)
OVERALL_CONFIGS = {k: MAP_CONFIGS[k] for k in ("FA", "PCA", "M-AGG")}
METHOD_OF = {"FA": "fa", "PCA": "pca", "M-AGG": "magg", "Rank swap": "rankswap", "IPSO": "ipso",
             "Shuffle": "shuffle", "FA-cond": "cfa"}
CRITERIA = ("validity", "overall")


def eq5_correlation(b, w, N):
    """The FA paper's eq. 5: one sensitive variable correlated b with N-1 public ones that
    are correlated w among themselves."""
    R = np.full((N, N), w, dtype=float)
    R[0, :] = R[:, 0] = b
    np.fill_diagonal(R, 1.0)
    return R


def eq5_valid(b, w, N):
    if N == 2:  # one public variable: no within-correlation; any |between| <= 1
        return abs(b) <= 1
    return w >= -1.0 / (N - 2) and (N - 1) * b * b <= 1 + (N - 2) * w + 1e-12 and w <= 1


def eq5_data(b, w, N, n, rng):
    """n records from N(0, eq5_correlation(b, w, N)), rescaled to exactly that correlation."""
    if not eq5_valid(b, w, N):
        raise ValueError(f"between={b}, within={w} give no valid correlation matrix for N={N} "
                         f"(need within >= -1/(N-2) and (N-1) between^2 <= 1 + (N-2) within).")
    g = make_rng(rng)
    R = eq5_correlation(b, w, N)
    e, U = np.linalg.eigh(R)
    Rh = (U * np.sqrt(np.clip(e, 0, None))) @ U.T
    Z = g.standard_normal((n, N))
    Z -= Z.mean(0)
    C = Z.T @ Z / n
    ec, Uc = np.linalg.eigh(C)
    Z = Z @ ((Uc / np.sqrt(ec)) @ Uc.T) @ Rh
    cols = ["S"] + [f"P{i}" for i in range(1, N)]
    return pd.DataFrame(Z, columns=cols)


# the paper's construction of FA (regression scores, residuals kept) beside sdccore's defaults
PAPER_CONFIGS = {"FA": {"method": "fa", "scores": "regression", "residuals": "keep"}, "PCA": {"method": "pca"},
                 "M-AGG": {"method": "magg"}}


def _tie_label(means, ses, names):
    """The best method, or the methods within noise of it ('FA or M-AGG'): a method ties the
    best when its mean exceeds the best mean by less than twice the standard error of the
    difference."""
    ok = [m for m in names if np.isfinite(means[m])]
    if not ok:
        return None
    order = sorted(ok, key=lambda m: means[m])
    best = order[0]
    tied = [m for m in order if m == best or means[m] - means[best] < 2 * np.hypot(ses[m], ses[best])]
    return " or ".join(tied)


def simulate_bw_map(*, grid=np.round(np.arange(0.0, 0.95, 0.1), 2), N=6, n=300, reps=5, rng=0, progress=None,
                    datasets=3, configs=None, criterion="validity"):
    """Which method serves selective protection of variable S best, on data from the FA
    paper's eq. 5, at every valid (between, within) point of the grid.

    Parameters
    ----------
    grid : array_like
        Values of between and within to try.
    N : int
        Variables per simulated data set.
    n : int
        Records per simulated data set.
    reps : int
        Runs of each method on each data set.
    rng : None, int or numpy.random.Generator
    progress : callable, optional
        ``progress(done, total)``.
    datasets : int
        Independent data sets per point.
    configs : dict, optional
        The methods (default ``MAP_CONFIGS``, every method of the tool with its defaults;
        ``PAPER_CONFIGS`` in ``sdccore._choose.recommend`` is the FA paper's construction).
    criterion : {'validity', 'overall'}
        'validity' (default): only a method that met every risk floor in every run on every
        data set can win a point, and among those the lowest analysis-validity loss
        (``validity_loss``) wins.  'overall': the papers' overall score, floors ignored (the
        map as the FA paper drew it).

    Returns
    -------
    DataFrame
        Per point each method's mean over all runs of the criterion's score, its standard
        error (``<method>_se``, from the data-set means), with 'validity' the share of runs
        meeting every floor (``<method>_floors``), ``best`` (the lowest mean among the
        methods that can win, or the methods within noise of it joined by ' or '; 'none'
        when no method met the floors) and ``winner`` (the lowest mean, or empty).  NaN: the
        method cannot protect S there.

    Examples
    --------
    >>> import sdccore
    >>> m = sdccore.simulate_bw_map(grid=[0.3], N=4, n=60, reps=1, datasets=1, rng=0)
    >>> m[["between", "within"]].values.tolist()
    [[0.3, 0.3]]
    """
    if criterion not in CRITERIA:
        raise ValueError(f"criterion={criterion!r} is not supported; use 'validity' or 'overall'.")
    configs = dict(configs or (MAP_CONFIGS if criterion == "validity" else OVERALL_CONFIGS))
    score = "validity_loss" if criterion == "validity" else "overall"
    rows = []
    pts = [(b, w) for b in grid for w in grid if eq5_valid(b, w, N)]
    seeds = iter(child_seeds(resolve_seed(rng), "bw_map", len(pts) * datasets * (1 + len(configs))))
    for t, (b, w) in enumerate(pts):
        per, floors = _map_point_runs(b, w, configs, datasets, N, n, reps, score, seeds)
        rows.append(_map_row(b, w, per, floors, configs, criterion))
        if progress:
            progress(t + 1, len(pts))
    return pd.DataFrame(rows)


def _map_point_runs(b, w, configs, datasets, N, n, reps, score, seeds):
    """Each configuration's mean score and share of runs meeting the floors, per simulated
    data set at the point (b, w)."""
    per = {name: [] for name in configs}
    floors = {name: [] for name in configs}
    for _ in range(datasets):
        data = eq5_data(b, w, N, n, int(next(seeds)))
        for name, cfg in configs.items():
            seed = int(next(seeds))
            try:
                c = compare(data, {name: cfg}, sensitive=["S"], reps=reps, rng=seed, n_jobs=1)
                per[name].append(float(c.table(score).loc[name, "mean"]))
                floors[name].append(float(c.safety().set_index("config").loc[name, "floors_met"]))
            except ValueError:
                per[name].append(float("nan"))
                floors[name].append(0.0)
    return per, floors


def _map_row(b, w, per, floors, configs, criterion):
    """One point of the map: each method's mean and standard error (and share meeting the
    floors), the best (ties within noise named together) and the winner."""
    row = {"between": float(b), "within": float(w)}
    means, ses = {}, {}
    for name, vals in per.items():
        v = np.asarray(vals)
        means[name] = float(v.mean()) if np.isfinite(v).all() else float("nan")
        ses[name] = float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 and np.isfinite(v).all() else 0.0
        row[name] = means[name]
        row[name + "_se"] = ses[name]
        if criterion == "validity":
            row[name + "_floors"] = float(np.mean(floors[name]))
    can_win = [m for m in configs if criterion == "overall" or row[m + "_floors"] == 1.0]
    fin = {m: means[m] for m in can_win if np.isfinite(means[m])}
    row["best"] = _tie_label({m: means[m] if m in fin else np.nan for m in configs}, ses, list(configs)) \
        if fin else "none"
    row["winner"] = min(fin, key=fin.get) if fin else ""
    return row


def load_bw_map():
    """The stored between/within map that ``recommend`` uses (regenerate it with
    studies/fa_paper_figures.py).

    Returns
    -------
    DataFrame
        One row per (between, within) point: each method's mean overall score and standard
        error, ``best`` and ``winner``.

    Examples
    --------
    >>> import sdccore
    >>> {"between", "within", "best"} <= set(sdccore.load_bw_map().columns)
    True
    """
    with resources.files("sdccore").joinpath("data", "bw_map.csv").open("rb") as fh:
        return pd.read_csv(fh)


@dataclass(frozen=True)
class Recommendation:
    """What ``recommend`` returns.

    Attributes
    ----------
    method : str or None
        'fa', 'pca', 'magg' or 'rankswap'; None when nothing can be recommended.
    label : str or None
        The method as the dashboard names it (or 'FA or M-AGG' for a tie within noise).
    reasons : tuple of str
        Why, in words.
    between, within : float or None
        The correlation indices of the sensitive set.
    map_best : str or None
        The best method at the nearest point of the map.
    map_point : dict or None
        That point (between, within and the scores).
    tournament : DataFrame or None
        The tournament's scores, with ``tournament=True``.
    """
    method: str | None          # 'fa', 'pca' or 'magg'; None when no method meets the risk floors
    label: str | None           # 'FA', 'PCA' or 'M-AGG'
    reasons: tuple
    between: float | None
    within: float | None
    map_best: str | None        # the map's best method at the nearest grid point
    map_point: dict | None      # that grid point with the three simulated scores
    tournament: pd.DataFrame | None


def _cookbook(b, w):
    if b < BETWEEN_LOW and w >= WITHIN_HIGH:
        return "PCA", (f"between-correlation {b:.2f} is low (< {BETWEEN_LOW}) and within-correlation {w:.2f} is high "
                       f"(>= {WITHIN_HIGH}): principal components separate the sensitive variables from the public ones")
    if b < BETWEEN_LOW:
        return "M-AGG", (f"between-correlation {b:.2f} is low (< {BETWEEN_LOW}): aggregating only the sensitive "
                         f"variables barely disturbs their (weak) relation with the public ones")
    if w < WITHIN_LOW:
        return "FA", (f"between-correlation {b:.2f} is significant (>= {BETWEEN_LOW}) and within-correlation {w:.2f} "
                      f"is low (< {WITHIN_LOW}): factors carry the sensitive variables while the public ones stay "
                      f"mostly in the unperturbed residuals")
    return None, (f"between {b:.2f} >= {BETWEEN_LOW} with within {w:.2f} >= {WITHIN_LOW}: the paper gives no "
                  f"clear choice there")


def recommend(data, *, sensitive=None, tournament=False, reps=5, rng=None):
    """Recommend FA, PCA or M-AGG, with the reasons.

    General protection (no sensitive variables, or all of them): PCA, the FA paper's and the
    PCA paper's best general method.  Selective protection: the simulated between/within map
    of sdccore's own default methods (``load_bw_map``); the FA paper's cookbook thresholds
    are reported beside it as the paper's rule for the paper's FA (they differ because
    sdccore's FA whitens its scores with as many factors as variables).

    Parameters
    ----------
    data : DataFrame
    sensitive : list of str, optional
    tournament : bool
        Also run FA, PCA, M-AGG and rank swapping ``reps`` times on the data itself and let
        the lowest mean score among those that meet every floor win.
    reps : int
        Runs per method in the tournament.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    Recommendation

    Examples
    --------
    >>> import sdccore
    >>> rec = sdccore.recommend(sdccore.load_dataset("tarragona"))
    >>> rec.method is None  # general protection: no method's defaults meet the floors there (issue 38)
    True
    """
    data = check_dataframe(data)
    num = numeric_columns(data)
    numeric_matrix(data, num)  # records, missing/infinite values, scale, constant columns, as protect checks
    if data.shape[0] < MIN_RECOMMEND_ROWS:
        raise ValueError(f"data has {data.shape[0]} records; a recommendation needs at least {MIN_RECOMMEND_ROWS} (the "
                         f"rules and the simulated map behind it describe survey-sized files, and the risk floors need "
                         f"records in every size band). Choose the method by hand, or use a file with more records.")
    reasons = []
    b = w = None
    map_best = map_point = None
    tour = None
    if sensitive and len(sensitive) < len(num) and len(num) - len(sensitive) < 2:
        label = "PCA"
        reasons.append("with a single public variable there is no within-correlation, so the between/within rules "
                       "and map do not apply; PCA is the papers' best general method (run the comparison on your data, "
                       "the Run page, to decide)")
        target = "overall"
    elif not sensitive or len(sensitive) >= len(num):
        label = "PCA"
        reasons.append("all variables need protection: PCA swapping gave the best risk-utility balance for general "
                       "protection in both papers (FA paper Fig. 4, PCA paper Table 4)")
        target = "summary"
    else:
        ci = correlation_indices(data, sensitive=sensitive)
        b, w = ci.between, ci.within
        label, map_best, map_point = _from_map(b, w, reasons)
        target = "overall"
    sens_eff = sensitive if sensitive and len(sensitive) < len(num) else None
    if tournament:
        best, tour = _tournament(data, sens_eff, reps, rng, target, reasons)
        if best is not None:
            if best != label:
                reasons.append(f"the tournament overrides the map: {best}")
                label = best
            return Recommendation(METHOD_OF[label], label, tuple(reasons), b, w, map_best, map_point, tour)
    label, checked = _first_safe(data, sens_eff, label, map_point, rng)
    reasons += checked
    return Recommendation(METHOD_OF[label] if label else None, label, tuple(reasons), b, w, map_best, map_point, tour)


def _from_map(b, w, reasons):
    """The method the simulated between/within map recommends at (b, w), with the FA paper's
    cookbook beside it (both said in ``reasons``): (label or None, the map's best, its point)."""
    mp = load_bw_map()
    d = (mp.between - b) ** 2 + (mp.within - w) ** 2
    near = mp.loc[d.idxmin()]
    map_best = str(near.best)
    map_point = {k: (near[k] if isinstance(near[k], str) else float(near[k])) for k in near.index}
    winner = str(near.winner) if isinstance(near.get("winner"), str) else ""
    validity = "validity_loss" if any(f"{m}_floors" in near.index for m in MAP_CONFIGS) else "overall"
    if validity == "validity_loss":
        scores = ", ".join(
            (f"{m} {1 - near[m]:.3f}" + ("" if near.get(f"{m}_floors", 0) == 1.0 else
                                        f" (met the floors in {near.get(f'{m}_floors', 0):.0%} of runs)"))
            if m in near.index and np.isfinite(near[m]) else f"{m} cannot protect S"
            for m in MAP_CONFIGS)
        what = "analysis validity, higher is better; only methods that met every risk floor in every run can win"
    else:
        scores = ", ".join(f"{m} {near[m]:.3f}" if m in near.index and np.isfinite(near[m]) else
                           f"{m} cannot protect S" for m in MAP_CONFIGS)
        what = "overall score, lower is better"
    where = (f"the evidence: on the map simulated with sdccore's own default methods (FA paper eq. 5 data) the "
             f"nearest point (between {near['between']:.1f}, within {near['within']:.1f})")
    if not winner:
        label = None
        reasons.append(f"{where} has no method that met every risk floor in every run ({what}: {scores}); run "
                       f"the comparison on your data (Run page) to see what breaks")
    elif " or " in map_best:
        label = winner
        reasons.append(f"{where} is a tie within noise, {map_best} ({what}: {scores}); {label} is ahead. Run the "
                       f"comparison on your data (Run page) to decide between them")
    else:
        label = winner
        reasons.append(f"{where} is best served by {label} ({what}: {scores})")
    paper, why = _cookbook(b, w)
    if paper is not None:
        agree = "agrees" if paper in map_best.split(" or ") else "differs"
        reasons.append(f"the FA paper's cookbook, a rule for the paper's FA (regression scores, residuals kept), "
                       f"says {paper}: {why}. It {agree} here"
                       + ("" if agree == "agrees" else
                          "; the map counts only releases that meet the risk floors, and weighs what an analyst "
                          "keeps of the sensitive variable's regression, which the paper's score did not"))
    else:
        reasons.append(f"the FA paper's cookbook has no clear case here ({why})")
    return label, map_best, map_point


def _tournament(data, sens_eff, reps, rng, target, reasons):
    """The candidates compared on the data themselves: (the suggested label or None, the
    table); what broke a floor and why it was chosen said in ``reasons``."""
    tried = {k: v for k, v in MAP_CONFIGS.items() if sens_eff or v["method"] not in CONDITIONAL_METHODS}
    cmp_ = compare(data, tried, sensitive=sens_eff, reps=reps, rng=rng)
    tour = cmp_.table(target)
    safe = cmp_.safety().set_index("config")
    tour["floors_met"] = safe.floors_met.reindex(tour.index)
    if "validity_loss" in set(cmp_.summary.score):
        tour["validity"] = 1 - cmp_.table("validity_loss")["mean"].reindex(tour.index)
    tour = tour.sort_values("mean")
    for lab in tour.index:
        if tour.loc[lab, "floors_met"] < 1.0:
            expected = bool(safe.loc[lab, "expected_ok"])
            reasons.append(f"{lab} broke a risk floor in {1 - tour.loc[lab, 'floors_met']:.0%} of the runs on your "
                           f"data ({safe.loc[lab, 'violation']}), "
                           + ("only in bands so small that one record decides, and meets the floor there over the "
                              "runs, so it is ranked (the run released is held to the floors too)" if expected else
                              "so it is not ranked"))
    best, why = cmp_.suggest()
    if best is not None:
        reasons.append(f"on your data ({reps} runs each): {why}")
    else:
        reasons.append("no method met the risk floors in every run of the tournament")
    return best, tour


def _first_safe(data, sensitive, label, map_point, rng):
    """The recommended method if one run of its default configuration meets the risk
    floors on the data, else the next one (by the map's scores) that does, else None."""
    from .._protect.pipeline import _protect

    def rank(k):  # the map's safe methods first, by their score there
        if not map_point or k not in map_point or not np.isfinite(map_point[k]):
            return (1, np.inf)
        return (0 if map_point.get(f"{k}_floors", 1.0) == 1.0 else 1, map_point[k])

    usable = [k for k, cfg in MAP_CONFIGS.items() if sensitive or cfg["method"] not in CONDITIONAL_METHODS]
    order = ([label] if label else []) + [lab for lab in sorted(usable, key=rank) if lab != label]
    seed = 0 if rng is None or not isinstance(rng, (int, np.integer)) else int(rng)
    reasons = []
    for lab in order:
        cfg = dict(MAP_CONFIGS[lab])
        method = cfg.pop("method")
        try:
            res = _protect(data, method, sensitive, seed, cfg)
        except ValueError as exc:
            reasons.append(f"{lab} cannot protect these data ({str(exc).splitlines()[0]})")
            continue
        if res.risk.ok:
            if lab != label:
                reasons.append(f"so {lab} is recommended instead")
            return lab, reasons
        reasons.append(f"{lab} as configured by default breaks a risk floor on your data: {res.risk.violations[0]}")
    reasons.append("no method meets the risk floors with its default settings: change the settings on the Configure "
                   "page (more factors, larger k) or the sensitive variables")
    return None, reasons


# the main setting of each method the dashboard offers, and the stronger values tried when no
# configuration meets the floors (``stronger_settings``)
LADDER = {"rankswap": ("p", (60.0, 80.0)), "magg": ("k", (5, 10)), "ipso": ("classes", (2, 3))}


def stronger_settings(data, configs, *, sensitive=None, reps=5, rng=None, progress=None, n_jobs=None, models=None):
    """When no configuration meets the risk floors in every run: each configuration whose
    method has a main setting (``LADDER``: the rank-swap window p, M-AGG's group size k,
    IPSO's size classes) tried at stronger values, ``reps`` runs each.

    Parameters
    ----------
    data : DataFrame
    configs : dict
        {label: configuration} as for ``compare`` (the ones that failed).
    sensitive : list of str, optional
    reps : int
    rng : None, int or numpy.random.Generator
    progress : callable, optional
        ``progress(done, total)``.
    n_jobs : int, optional
    models : str or list of str, optional
        Regressions to check on every run, as for ``compare`` (so that ``suggest(require=...)``
        can hold the stronger variants to them too).

    Returns
    -------
    (Comparison or None, list of (label, method, option, value, configuration))
        The comparison of the stronger variants (None when no method has a main setting to
        strengthen) and, per variant, what was changed; ``Comparison.suggest`` then says
        which, if any, meets every floor in every run.

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> c, tried = sdccore.stronger_settings(df, {"Rank swap": {"method": "rankswap", "p": 5.0}},
    ...                                      sensitive=["SALES"], reps=2, rng=1, n_jobs=1)
    >>> [t[0] for t in tried]
    ['Rank swap p=60', 'Rank swap p=80']
    >>> c.suggest()[0] in ("Rank swap p=60", "Rank swap p=80")
    True
    """
    variants, tried = {}, []
    for label, cfg in configs.items():
        ladder = LADDER.get(cfg.get("method"))
        if ladder is None:
            continue
        name, values = ladder
        for v in values:
            current = cfg.get(name)
            if current is not None and ((name != "classes" and v <= current) or (name == "classes" and v == current)):
                continue
            new = {**cfg, name: v}
            lab = f"{label} {name}={v:g}"
            variants[lab] = new
            tried.append((lab, cfg["method"], name, v, new))
    if not variants:
        return None, []
    return compare(data, variants, sensitive=sensitive, reps=reps, rng=rng, progress=progress, n_jobs=n_jobs,
                   models=models), tried
