"""Between/within correlation indices, repeated-run comparisons with bootstrap intervals,
and the search for good factor/component masks (spec sections 6-7)."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._measures import evaluate
from ._protect import decompose, protect
from ._validation import check_names, check_number, make_rng, numeric_columns, numeric_matrix

__all__ = ["correlation_indices", "compare", "search", "CorrelationIndices", "Comparison", "SearchResult"]

SCORE_KEYS = ("dbrl", "id", "pil", "ps", "summary", "selectivity", "overall")


# ----------------------------------------------------------------------------- indices

@dataclass(frozen=True)
class CorrelationIndices:
    """per_variable: for each variable p taken alone as sensitive, Between(p) (FA paper eq. 6)
    and Within(-p) (eq. 7).  between/within: for the chosen sensitive set S, the mean |cor|
    between S and the public variables and the mean |cor| over pairs of public variables
    (None without a set)."""

    per_variable: pd.DataFrame
    between: float | None
    within: float | None
    sensitive: tuple


def _abs_corr(data):
    num, X = numeric_matrix(data, min_columns=3)  # a sensitive one and two public ones at least
    return num, np.abs(np.corrcoef(X, rowvar=False))


def _between_within(A, S):
    m = A.shape[0]
    P = [j for j in range(m) if j not in set(S)]
    between = float(A[np.ix_(S, P)].mean()) if P else float("nan")
    if len(P) >= 2:
        iu = np.triu_indices(len(P), 1)
        within = float(A[np.ix_(P, P)][iu].mean())
    else:
        within = float("nan")
    return between, within


def correlation_indices(data, sensitive=None):
    num, A = _abs_corr(data)
    rows = []
    for p in range(len(num)):
        b, w = _between_within(A, [p])
        rows.append({"variable": num[p], "between": b, "within": w})
    per = pd.DataFrame(rows).set_index("variable")
    if sensitive:
        sens = check_names(sensitive, num, "sensitive")
        b, w = _between_within(A, [num.index(s) for s in sens])
        return CorrelationIndices(per, b, w, tuple(sens))
    return CorrelationIndices(per, None, None, ())


# ----------------------------------------------------------------------------- compare

def bootstrap_interval(values, rng, level=0.95, B=2000):
    """Mean and the percentile bootstrap interval of the mean of ``values``."""
    v = np.asarray(values, dtype=float)
    if v.size == 0:
        return float("nan"), float("nan"), float("nan")
    if v.size == 1:
        return float(v[0]), float(v[0]), float(v[0])
    idx = rng.integers(0, v.size, (B, v.size))
    means = v[idx].mean(axis=1)
    a = (1 - level) / 2
    lo, hi = np.quantile(means, [a, 1 - a])
    return float(v.mean()), float(lo), float(hi)


def config_label(cfg):
    """A short readable label of a configuration, e.g. 'fa factors=[1, 2]'."""
    rest = {k: v for k, v in cfg.items() if k not in ("method", "label")}
    return cfg.get("label") or (cfg["method"] + (" " + " ".join(f"{k}={v}" for k, v in sorted(rest.items())) if rest else ""))


@dataclass(frozen=True)
class Comparison:
    """summary: one row per configuration and score with mean, lo, hi (95 % percentile
    bootstrap interval of the mean over runs) and reps; runs: the raw per-run scores;
    configs: the configurations by label; cancelled: True if stopped early."""

    summary: pd.DataFrame
    runs: pd.DataFrame
    configs: dict
    sensitive: tuple | None
    seed: int
    cancelled: bool = False
    seconds: dict = field(default_factory=dict)

    def risk_utility(self):
        """Per configuration: disclosure risk = mean of DBRL and ID, utility loss = mean of PIL
        and PS, each with the mean over runs and its 95 % bootstrap interval."""
        boot = np.random.default_rng(self.seed + 2)
        rows = []
        for label in self.configs:
            sub = self.runs[self.runs.config == label]
            if len(sub) == 0:
                continue
            risk = (sub.dbrl + sub.id).to_numpy() / 2
            loss = (sub.pil + sub.ps).to_numpy() / 2
            r = bootstrap_interval(risk, boot)
            u = bootstrap_interval(loss, boot)
            rows.append({"config": label, "risk": r[0], "risk_lo": r[1], "risk_hi": r[2],
                         "utility_loss": u[0], "utility_loss_lo": u[1], "utility_loss_hi": u[2], "reps": len(sub)})
        return pd.DataFrame(rows)

    def table(self, score=None):
        """Configurations x scores of means (or mean, lo, hi of one score)."""
        if score is None:
            return self.summary.pivot(index="config", columns="score", values="mean")
        return self.summary[self.summary.score == score].set_index("config")[["mean", "lo", "hi", "reps"]]


def _normalize_configs(configs):
    if isinstance(configs, dict) and "method" not in configs:
        items = [(label, dict(cfg)) for label, cfg in configs.items()]
    else:
        if isinstance(configs, dict):
            configs = [configs]
        items = []
        for cfg in configs:
            if not isinstance(cfg, dict) or "method" not in cfg:
                raise TypeError("each configuration must be a dict with a 'method', e.g. {'method': 'fa', 'n_factors': 3}.")
            items.append((config_label(cfg), dict(cfg)))
    labels = [lab for lab, _ in items]
    if len(set(labels)) != len(labels):
        raise ValueError("two configurations have the same label; give them distinct 'label' values.")
    if not items:
        raise ValueError("configs is empty; pass at least one configuration.")
    return [(lab, {k: v for k, v in cfg.items() if k != "label"}) for lab, cfg in items]


def compare(data, configs, sensitive=None, reps=30, rng=None, progress=None, evaluate_options=None):
    """Run every configuration ``reps`` times and summarise each score.

    ``configs``: a list of dicts ({'method': ..., options}) or a dict label -> config.
    ``progress(done, total)`` is called after every run; if it returns False the comparison
    stops and the result says ``cancelled=True`` (with the runs done so far).
    Seeds: one master seed (recorded) gives one seed per configuration and run, so the same
    rng reproduces every protected file.
    """
    import time

    items = _normalize_configs(configs)
    reps = check_number(reps, "reps", low=1, integer=True)
    gen = make_rng(rng)
    seed = int(gen.integers(0, 2**63 - 1))
    seeds = np.random.default_rng(seed).integers(0, 2**63 - 1, size=(len(items), reps))
    ev_opts = dict(evaluate_options or {})
    rows = []
    total = len(items) * reps
    done = 0
    cancelled = False
    secs = {"protect": 0.0, "evaluate": 0.0}
    numeric = numeric_columns(data)
    for c, (label, cfg) in enumerate(items):
        cfg = dict(cfg)
        method = cfg.pop("method")
        num = [col for col in numeric if col not in set(cfg.get("exclude") or [])]
        for r in range(reps):
            t0 = time.perf_counter()
            res = protect(data, method=method, sensitive=sensitive, rng=int(seeds[c, r]), **cfg)
            t1 = time.perf_counter()
            ev = evaluate(data[num], res.data[num], sensitive=sensitive, **ev_opts)
            t2 = time.perf_counter()
            secs["protect"] += t1 - t0
            secs["evaluate"] += t2 - t1
            rows.append({"config": label, "run": r, "seed": int(seeds[c, r]), **ev.scores})
            done += 1
            if progress is not None and progress(done, total) is False:
                cancelled = True
                break
        if cancelled:
            break
    runs = pd.DataFrame(rows)
    boot = np.random.default_rng(seed + 1)
    summ = []
    for label, _ in items:
        sub = runs[runs.config == label] if len(runs) else runs
        if sub is None or len(sub) == 0:
            continue
        for key in SCORE_KEYS:
            if key in sub:
                mean, lo, hi = bootstrap_interval(sub[key].to_numpy(), boot)
                summ.append({"config": label, "score": key, "mean": mean, "lo": lo, "hi": hi, "reps": len(sub)})
    return Comparison(pd.DataFrame(summ), runs, {lab: cfg for lab, cfg in items},
                      tuple(sensitive) if sensitive else None, seed, cancelled, secs)


# ----------------------------------------------------------------------------- search

@dataclass(frozen=True)
class SearchResult:
    """ranking: candidate configurations sorted by the upper bound of the 95 % interval of
    the target score (summary for general, overall for selective protection), with mean,
    lo, hi and reps; tried/space: how many masks (or k values) were evaluated out of how
    many exist; eliminated: candidates dropped early because their interval lay clearly
    above the best one's; note: what was and was not tried, in words."""

    ranking: pd.DataFrame
    target: str
    tried: int
    space: int
    eliminated: int
    note: str


def _mask_candidates(m, variances):
    """Variance-ordered masks: prefixes of the factors sorted by variance, single factors,
    and all masks of the top-variance factors when there are few of them."""
    order = [int(i) for i in np.argsort(-np.asarray(variances), kind="stable")]
    cands = []
    for j in range(1, m + 1):
        cands.append(tuple(sorted(order[:j])))
    for j in order:
        cands.append((j,))
    top = order[: min(m, 5)]
    for r in range(2, len(top)):
        for combo in itertools.combinations(top, r):
            cands.append(tuple(sorted(combo)))
    seen, out = set(), []
    for c in cands:
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


def search(data, method, sensitive=None, reps=10, budget=300, rng=None, progress=None, base=None):
    """Rank configurations of one method (fa/pca: which factors/components to perturb;
    magg: the group size k) by the upper bound of their score interval.

    Candidates are visited in order of perturbed variance; each first gets ``max(3, reps//3)``
    runs, candidates whose interval's lower bound exceeds the best upper bound are dropped,
    and the survivors get the full ``reps`` while the ``budget`` of protect+evaluate runs
    lasts.  ``base`` holds fixed options (e.g. {'rotation': 'varimax'}).
    """
    if method not in ("fa", "pca", "magg"):
        raise ValueError("search works for method 'fa', 'pca' or 'magg'.")
    budget = check_number(budget, "budget", low=1, integer=True)
    reps = check_number(reps, "reps", low=2, integer=True)
    base = dict(base or {})
    target = "overall" if sensitive else "summary"
    gen = make_rng(rng)
    if method == "magg":
        n = len(data)
        ks = [k for k in (2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100) if k <= n // 2]
        cands = [{"method": "magg", **base, "k": k} for k in ks]
        space = max(0, n // 2 - 1)
        what = f"k in {ks}"
    else:
        dec = decompose(data, method=method, sensitive=sensitive, **{k: v for k, v in base.items() if k not in ("factors", "components")})
        m = dec.loadings.shape[1]
        key = "factors" if method == "fa" else "components"
        masks = _mask_candidates(m, dec.variance.to_numpy())
        if sensitive and method == "fa" and "rotation" not in base:
            base["rotation"] = "isolate_sensitive"
        cands = [{"method": method, **base, key: [i + 1 for i in mk]} for mk in masks]
        space = 2 ** m - 1
        what = f"{len(masks)} masks: the {m} variance-ordered prefixes, each single {key[:-1]}, and combinations of the top-variance ones"
    first_reps = max(3, reps // 3)
    spent = 0
    results = {}
    first_lo = {}
    boot = np.random.default_rng(int(gen.integers(0, 2**63 - 1)))
    best_hi = np.inf

    def run(cfg, r):
        nonlocal spent
        cmp_ = compare(data, [cfg], sensitive=sensitive, reps=r, rng=int(gen.integers(0, 2**63 - 1)))
        spent += r
        vals = cmp_.runs[target].to_numpy()
        return vals

    total_planned = min(budget, len(cands) * first_reps)
    for cfg in cands:
        if spent + first_reps > budget:
            break
        vals = run(cfg, first_reps)
        _, lo, hi = bootstrap_interval(vals, boot)
        label = config_label(cfg)
        results[label] = (cfg, list(vals))
        first_lo[label] = lo
        best_hi = min(best_hi, hi)
        if progress is not None:
            progress(min(spent, total_planned), total_planned)
    # early elimination (on the same first-pass intervals that set best_hi), then refine survivors
    survivors = [label for label in results if first_lo[label] <= best_hi]
    eliminated = len(results) - len(survivors)
    for label in survivors:
        need = reps - len(results[label][1])
        if need <= 0 or spent + need > budget:
            continue
        results[label][1].extend(run(results[label][0], need))
    rows = []
    for label, (cfg, vals) in results.items():
        mean, lo, hi = bootstrap_interval(np.array(vals), boot)
        rows.append({"config": label, "mean": mean, "lo": lo, "hi": hi, "reps": len(vals),
                     "eliminated": label not in survivors, "options": json.dumps(cfg, sort_keys=True)})
    ranking = pd.DataFrame(rows).sort_values(["hi", "mean"]).reset_index(drop=True) if rows else pd.DataFrame()
    tried = len(results)
    note = (f"tried {tried} of {space} possible {'k values' if method == 'magg' else 'masks'} ({what}); "
            f"{eliminated} dropped after {first_reps} runs because their interval lay above the best; "
            f"{spent} protect+evaluate runs of a budget of {budget}")
    if tried < len(cands):
        note += f"; {len(cands) - tried} planned candidates not reached within the budget"
    return SearchResult(ranking, target, tried, space, eliminated, note)
