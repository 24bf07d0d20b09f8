"""Repeated-run comparisons with bootstrap intervals and the search for good
factor/component masks (spec section 7); the between/within indices are ``_explore``'s."""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .._core.validation import name_list as _names
from .._measures.evaluate import evaluate
from .._methods import BUILT_IN, hook, method_info, methods
from .._protect.options import bind_static
from .._protect.pipeline import _protect, decompose
from .._core.streams import child_seeds
from .._measures.regression import _against, _original_fit
from .rounds import AllFailed, domains_round, released_runs, scales_round, zeros_round, tail_round, without_failed
from .comparison import Comparison, bootstrap_interval, config_label, mean_interval, run_range, summary_rows  # noqa: F401
from .._core.validation import check_number, numeric_columns, resolve_seed

from .._data.explore import CorrelationIndices, correlation_indices  # noqa: F401  (re-exported)

__all__ = ["compare", "search", "Comparison", "SearchResult"]


def score_keys():
    """The scores a comparison summarises, in order: the analyses' registry's (built-in first,
    then the plug-ins registered in this process)."""
    from .._measures.analyses import analyses

    return analyses()


def _normalize_configs(configs, sensitive=None):
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
    items = [(lab, {k: v for k, v in cfg.items() if k != "label"}) for lab, cfg in items]
    for label, cfg in items:  # a misspelt option or a wrong type refused at once, naming the configuration
        try:
            bind_static(cfg.get("method"), {k: v for k, v in cfg.items() if k != "method"}, bool(sensitive), warn=False)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"configuration {label!r}: {exc}") from None
    return items


@dataclass(frozen=True)
class _RunOutput:
    """What one protect + evaluate run sends back (never the released data)."""

    scores: dict
    risk: object      # RiskProfile
    seconds: tuple    # (protect, evaluate)
    error: str = ""   # why the configuration cannot run on these data
    regression: tuple = ()  # one coefficient table per model (no data, only the fits)


def _one_run(data, method, cfg, sensitive, seed, num, ev_opts, fits=()):
    import time

    t0 = time.perf_counter()
    # unchecked: every run is evaluated, and its risk profile recorded against the floors
    try:
        res = _protect(data, method, sensitive, seed, cfg)
    except ValueError as exc:  # a configuration these data do not allow: the others still run
        return _RunOutput({}, None, (time.perf_counter() - t0, 0.0), str(exc))
    t1 = time.perf_counter()
    ev = evaluate(data[num], res.data[num], sensitive=sensitive, _with_risk=False, **ev_opts)
    reg = tuple(_against(fit, res.data).table for fit in fits)  # the original fitted once, in compare
    t2 = time.perf_counter()
    return _RunOutput(dict(ev.scores), res.risk, (t1 - t0, t2 - t1), regression=reg)


def _record(label, r, run_seed, out, rows, var_rows, band_rows, reg_rows=None, models=()):
    risk = out.risk
    for model, table in zip(models, out.regression):
        t = table.reset_index()
        t.insert(0, "model", model)
        t.insert(0, "run", r)
        t.insert(0, "config", label)
        reg_rows.append(t)
    rows.append({"config": label, "run": r, "seed": run_seed, **out.scores,
                 "floors_ok": risk.ok, "one_record_decides": risk.one_record_decides, "failing": ", ".join(risk.failing),
                 "violation": risk.violations[0] if risk.violations else ""})
    v = risk.variables.reset_index()
    v.insert(0, "run", r)
    v.insert(0, "config", label)
    var_rows.append(v)
    b = risk.bands.copy()
    b.insert(0, "run", r)
    b.insert(0, "config", label)
    band_rows.append(b)


def _one_run_single_threaded(*args):
    """``_one_run`` with one BLAS and one numba thread: in a worker process the processes
    themselves use the cores, and in this process the same thread count keeps the scores
    bit-identical whatever ``n_jobs`` is (BLAS sums in another order with more threads:
    the propensity score moves by 1e-14)."""
    import numba
    from threadpoolctl import threadpool_limits

    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(1):
            return _one_run(*args)
    finally:
        numba.set_num_threads(before)


MIN_PARALLEL_TASKS = 4  # fewer runs are not worth starting worker processes for


def _check_jobs(n_jobs):
    if n_jobs is None:
        env = os.environ.get("SDCCORE_JOBS", "").strip()
        if env:
            try:
                return max(1, int(env))
            except ValueError:
                raise ValueError(f"SDCCORE_JOBS={env!r} must be a whole number of processes, e.g. 2.") from None
        return max(1, os.cpu_count() or 1)
    return check_number(n_jobs, "n_jobs", low=1, integer=True)


def _worker_run(*args, _plugin=None, _extra=()):
    """One run in a worker process (``_pool``: lower priority, Ctrl-C left to the parent),
    single-threaded.  A plug-in method (``_plugin``, its registry entry) and the plug-in
    intruders and analyses of the calling process (``_extra``) are registered in the worker
    first (and those the caller no longer has removed)."""
    if _plugin is not None:
        from .._methods import register

        register(_plugin, replace=True)
    _sync_plugins(_extra)
    return _one_run_single_threaded(*args)


def _plugins():
    """The intruders and analyses registered in this process beyond the built-in ones."""
    from .._measures import analyses
    from .._risk import registry

    return tuple(registry.plugins()) + tuple(analyses.plugins())


def _sync_plugins(extra):
    """Make this (worker) process's plug-in intruders and analyses those of ``extra``."""
    from .._measures import analyses
    from .._risk import registry

    for mod, kind in ((registry, registry.IntruderInfo), (analyses, analyses.AnalysisInfo)):
        want = {i.name: i for i in extra if isinstance(i, kind)}
        for name in [n for n in mod.REGISTRY if n not in mod.BUILT_IN and n not in want]:
            del mod.REGISTRY[name]
        mod.REGISTRY.update(want)


_WARMING = []          # the warming thread
_WARMED = [0.0]        # when the workers last answered (idle workers stop after _pool.IDLE_SECONDS)


def warm_workers(*, n_jobs=None, wait=False):
    """Start the worker processes of ``compare`` in the background, so that the first
    comparison does not wait for their imports (about 3 s on a 2-core machine).

    Parameters
    ----------
    n_jobs : int, optional
        As ``compare`` takes it (None: one process per core); 1 starts nothing.
    wait : bool
        Return only when the workers are ready (the command line); by default at once,
        the workers starting in a background thread.

    Returns
    -------
    None

    Examples
    --------
    >>> import sdccore
    >>> sdccore.warm_workers(n_jobs=1) is None
    True
    """
    import threading
    import time

    from . import pool as _pool

    jobs = _check_jobs(n_jobs)
    if jobs <= 1 or any(t.is_alive() for t in _WARMING) or time.monotonic() - _WARMED[0] < 120:
        return
    if wait:
        _pool.warm(jobs, _warm, wait=True)
        _WARMED[0] = time.monotonic()
        return

    def start():
        _pool.warm(jobs, _warm, wait=True)
        _WARMED[0] = time.monotonic()

    t = threading.Thread(target=start, name="sdccore-warm-workers", daemon=True)
    _WARMING[:] = [t]
    t.start()


def _warm():
    """In a worker process: the imports a run needs (scipy, scikit-learn, numba's cached
    kernels), before the first run."""
    from .._measures import evaluate  # noqa: F401
    from .._protect import pipeline  # noqa: F401

    return os.getpid()


def _runs(data, tasks, jobs):
    """The outputs of ``tasks`` in order, as a generator: in this process, or in ``jobs``
    worker processes (``_pool``: shared by the callers of this process, kept warm between
    calls) when there are enough runs.  Closing the generator cancels this caller's runs
    not yet started, and never another caller's (a dashboard session's)."""
    if jobs <= 1 or len(tasks) < MIN_PARALLEL_TASKS:
        return (_one_run_single_threaded(data, *t) for t in tasks)
    from . import pool as _pool

    # a method registered in this process (a plug-in) travels with its task to the workers
    plugins = {t[0]: method_info(t[0]) for t in tasks if t[0] not in BUILT_IN}
    extra = _plugins()  # and the plug-in intruders and analyses
    calls = (((data, *t), {"_plugin": plugins.get(t[0]), "_extra": extra}) for t in tasks)
    return _pool.ordered_runs(_worker_run, calls, min(jobs, len(tasks)))


def compare(data, configs, *, sensitive=None, reps=30, rng=None, progress=None, evaluate_options=None,
            n_jobs=None, models=None, partial=None, released=True, tails=False, scales=False, domains=False):
    """Run every configuration ``reps`` times and summarise each score with its interval.

    Seeds: one master seed (recorded) gives one child seed per configuration and run
    (``numpy.random.SeedSequence``), so the same ``rng`` reproduces every protected file.  A
    deterministic method (pca_remove) is protected and evaluated once and that run stands
    for all ``reps`` (its interval has zero width).

    Parameters
    ----------
    data : DataFrame
    configs : list of dict or dict
        Configurations ({'method': ..., options}), or a dict label -> configuration.
    sensitive : list of str, optional
        Selective protection (as for ``protect``).
    reps : int
        Runs per configuration.
    rng : None, int or numpy.random.Generator
    progress : callable, optional
        ``progress(done, total)`` after every run; returning False stops the comparison
        (``cancelled=True``, with the runs done so far).
    partial : callable, optional
        ``partial(runs)`` after every run, with the per-run table so far (``Comparison.runs``'
        columns: config, run, seed, every score, floors_ok, failing, violation): to show
        results as they come.
    evaluate_options : dict, optional
        Passed to ``evaluate``.
    n_jobs : int, optional
        Processes that run the (independent) runs side by side; default the machine's
        cores (environment variable ``SDCCORE_JOBS`` overrides), 1 runs everything in this
        process.  Each process uses one BLAS and one numba thread, so cores are not
        oversubscribed.  The results do not depend on it: every run has its own seed.
    models : str or list of str, optional
        Linear regressions a researcher will fit ('SALES ~ LABOR.COSTS + FIXED.ASSETS'):
        each is fitted on the original and on every run's release (``regression_check``);
        the coefficients and their interval overlaps are in ``Comparison.regression`` and
        averaged over runs by ``Comparison.regression_summary()``.
    released : bool
        Also protect, with the master seed itself, each configuration that met the floors
        over the runs: the run a release with that seed publishes (``protect(data, ...,
        rng=seed)``, the dashboard's Download page), held to the floors as well
        (``Comparison.released``; ``suggest`` offers none whose run released breaks one).
        ``search`` switches it off (its seeds are never released).
    tails : bool
        True: where no configuration can be offered and some broke a floor among the largest
        1 % of records, compare those again with their largest values aggregated
        (``tail='aggregate'``; ``_choose.rounds``), labelled '... + largest aggregated' (the
        dashboard's Run page and the command line's suggestion do).
    scales : bool
        True: where a configuration that can be offered loses a log-scale regression of the
        battery (log-log, log-level) and its method keeps both scales on request (``keep``
        offers 'scales': IPSO, the quantile exchange), compare it again with its method's
        settings for both scales (``MethodInfo.both_scales``: IPSO keep='scales' with 5 size
        classes), labelled '... + both scales' (the dashboard's Run page does), left out where
        its release still loses the log scale; ``suggest`` weighs both by the analyses their
        releases keep.
    domains : bool
        True: the (at most 2) offered configurations whose release misses the regressions within
        domains, compared again within strata of the domain columns (``_choose.rounds``; the Run page does).

    Returns
    -------
    Comparison

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> c = sdccore.compare(df, {"PCA": {"method": "pca"}}, reps=3, rng=0)
    >>> c.table("summary").index.tolist()
    ['PCA']
    """
    items = _normalize_configs(configs, sensitive)
    reps = check_number(reps, "reps", low=1, integer=True)
    jobs = _check_jobs(n_jobs)
    if not isinstance(released, (bool, np.bool_)):
        raise TypeError(f"released must be True or False (check the run the master seed releases); got "
                        f"{type(released).__name__}.")
    seed = resolve_seed(rng)
    seeds = child_seeds(seed, "runs", (len(items), reps))
    ev_opts = dict(evaluate_options or {})
    fits = _check_models(data, models)
    models = tuple(f[0] for f in fits)
    rows, var_rows, band_rows, reg_rows = [], [], [], []
    total = len(items) * reps
    done = 0
    cancelled = False
    secs = {"protect": 0.0, "evaluate": 0.0}
    tasks, plan = _tasks(items, numeric_columns(data), sensitive, seeds, reps, ev_opts, fits)
    results = _runs(data, tasks, jobs)
    got, errors = {}, {}
    try:
        for label, r, run_seed, t in plan:
            if t not in got:
                got[t] = next(results)
                secs["protect"] += got[t].seconds[0]
                secs["evaluate"] += got[t].seconds[1]
            out = got[t]
            if out.error:
                errors.setdefault(label, out.error)
            else:
                _record(label, r, run_seed, out, rows, var_rows, band_rows, reg_rows, models)
            done += 1
            if partial is not None:
                partial(pd.DataFrame(rows))
            if progress is not None and progress(done, total) is False:
                cancelled = True
                break
    finally:
        results.close()  # a cancelled comparison stops its runs not yet started (never another caller's)
    if len(errors) == len(items):
        raise AllFailed(errors)
    if errors:  # a configuration that failed in some run is left out whole
        rows, var_rows, band_rows, reg_rows = without_failed(errors, rows, var_rows, band_rows, reg_rows)
    runs = pd.DataFrame(rows)
    summ = summary_rows(runs, [label for label, _ in items], score_keys())
    risk_vars = pd.concat(var_rows, ignore_index=True) if var_rows else pd.DataFrame()
    risk_bands = pd.concat(band_rows, ignore_index=True) if band_rows else pd.DataFrame()
    regression = pd.concat(reg_rows, ignore_index=True) if reg_rows else pd.DataFrame()
    out = Comparison(pd.DataFrame(summ), runs, {lab: cfg for lab, cfg in items},
                     tuple(sensitive) if sensitive else None, seed, cancelled, secs, risk_vars, risk_bands, errors,
                     regression)
    if released and not cancelled:
        rel, kept = released_runs(data, out, sensitive, seed, _protect)
        out = replace(out, released=rel, analyses=kept)
        def run(again):
            return compare(data, again, sensitive=sensitive, reps=reps, rng=seed, progress=progress, n_jobs=n_jobs,
                           models=models, evaluate_options=evaluate_options, partial=None, released=True)
        if tails:  # nothing offered, the largest records decided: those configurations again, aggregated
            out = tail_round(out, run)
        if scales and not out.cancelled:  # an offered release loses the log scale, or an amount its zeros: again
            out = zeros_round(scales_round(out, run), data, run)
        if domains and not out.cancelled:  # an offered release loses the regressions within domains
            out = domains_round(out, data, run)
    return out


def _tasks(items, numeric, sensitive, seeds, reps, ev_opts, fits):
    """One task per run (a deterministic method, pca_remove, is run once and stands for all
    reps) and the plan: (label, run, seed, task) for every run."""
    tasks, plan = [], []
    for c, (label, cfg) in enumerate(items):
        cfg = dict(cfg)
        method = cfg.pop("method")
        # the amounts: not the columns set apart, nor the keys' own (recoded, PRAM'd or blanked, never
        # perturbed as amounts: a key recoded into bands is text in the release)
        kept = set(_names(cfg.get("exclude"))) | set(_names(cfg.get("keys"))) | set(_names(cfg.get("pram")))
        kept |= {cfg["household"]} if cfg.get("household") else set()
        num = [col for col in numeric if col not in kept]
        for r in range(reps):
            if r == 0 or not method_info(method).deterministic:
                tasks.append((method, cfg, sensitive, int(seeds[c, r]), num, ev_opts, fits))
            plan.append((label, r, int(seeds[c, r]), len(tasks) - 1))
    return tasks, plan


def _check_models(data, models):
    """Each model fitted on the original, once and before any run (a formula that cannot be
    fitted is refused at once, not after the runs)."""
    if models is None:
        return ()
    if isinstance(models, str):
        models = [models]
    if not isinstance(models, (list, tuple)) or not all(isinstance(m, str) for m in models):
        raise TypeError(f"models={models!r} must be a formula or a list of formulas, e.g. "
                        f"['SALES ~ LABOR.COSTS + FIXED.ASSETS'].")
    models = tuple(dict.fromkeys(m.strip() for m in models if m.strip()))
    return tuple(_original_fit(data, m) for m in models)


# ----------------------------------------------------------------------------- search

@dataclass(frozen=True)
class SearchResult:
    """What ``search`` returns.

    Attributes
    ----------
    ranking : DataFrame
        Candidate configurations sorted by the upper bound of the 95 % interval of the
        target score, with mean, lo, hi and reps: only those that met every risk floor in
        every run.
    target : str
        'summary' (general protection) or 'overall' (selective).
    tried, space : int
        How many masks (or k values) were evaluated out of how many exist.
    eliminated : int
        Candidates dropped early because their interval lay clearly above the best one's.
    note : str
        What was and was not tried, in words.
    refused : int
        Candidates refused by the risk floors.
    refusals : DataFrame
        The first violation of each refused candidate.
    """

    ranking: pd.DataFrame
    target: str
    tried: int
    space: int
    eliminated: int
    note: str
    refused: int = 0
    refusals: pd.DataFrame = field(default_factory=pd.DataFrame)


def _below_floor_refused(data, method, sensitive, cands):
    """The candidates left after those whose decomposition leaves a sensitive variable below
    the perturbed-share floor (refused before anything runs), and how many were refused."""
    if not method_info(method).decomposes:
        return cands, 0
    kept = []
    for cfg in cands:
        opts = {k: v for k, v in cfg.items() if k != "method"}
        if not decompose(data, method=method, sensitive=sensitive, **opts).below_floor:
            kept.append(cfg)
    return kept, len(cands) - len(kept)


def _ranking(results, unsafe, survivors):
    """The candidates that met every floor in every run, by the upper bound of their interval."""
    rows = []
    for label, (cfg, vals) in results.items():
        if label in unsafe:
            continue
        mean, lo, hi = mean_interval(np.array(vals))
        rows.append({"config": label, "mean": mean, "lo": lo, "hi": hi, "reps": len(vals),
                     "eliminated": label not in survivors, "options": json.dumps(cfg, sort_keys=True)})
    cols = ["config", "mean", "lo", "hi", "reps", "eliminated", "options"]
    return pd.DataFrame(rows, columns=cols).sort_values(["hi", "mean"]).reset_index(drop=True)


def search(data, method, *, sensitive=None, reps=10, budget=300, rng=None, progress=None, base=None):
    """Rank configurations of one method by the upper bound of their score interval.

    fa/pca: which factors/components to perturb; magg: the group size k.  Candidates are
    visited in order of perturbed variance; each first gets ``max(5, reps // 2)`` runs,
    candidates whose interval's lower bound exceeds the best upper bound are dropped (both
    intervals at level 1 - 0.05 / K for K candidates), and the survivors get the full
    ``reps`` while the ``budget`` of protect + evaluate runs lasts.  Only configurations
    that meet every risk floor in every run are ranked.

    Parameters
    ----------
    data : DataFrame
    method : {'fa', 'pca', 'magg'}
    sensitive : list of str, optional
    reps : int
        Runs per surviving candidate.
    budget : int
        Most protect + evaluate runs in all.
    rng : None, int or numpy.random.Generator
    progress : callable, optional
        ``progress(done, total)``; returning False stops.
    base : dict, optional
        Fixed options, e.g. {'rotation': 'varimax'}.

    Returns
    -------
    SearchResult

    Examples
    --------
    >>> import sdccore
    >>> df = sdccore.load_dataset("tarragona")
    >>> s = sdccore.search(df, "magg", reps=2, budget=8, rng=0)
    >>> s.target
    'summary'
    """
    searchable = methods(searchable=True)
    if method not in searchable:
        raise ValueError(f"search works for method {', '.join(map(repr, searchable[:-1]))} or {searchable[-1]!r}.")
    budget = check_number(budget, "budget", low=1, integer=True)
    reps = check_number(reps, "reps", low=2, integer=True)
    base = dict(base or {})
    target = "overall" if sensitive else "summary"
    seed = resolve_seed(rng)
    calls = itertools.count()
    # the candidates are the method's own (its module in the registry): group sizes, masks
    cands, space, what, unit = hook(method, "search_candidates")(data, method, sensitive, base, decompose)
    # first pass: at least 5 runs (3 gave intervals far too narrow to eliminate on); the
    # elimination intervals are widened for the number of candidates compared (Bonferroni:
    # each at level 1 - 0.05 / K), so that the truly best one survives with probability of
    # at least 95 % however many candidates there are (tested with a planted best)
    first_reps = max(5, reps // 2)
    spent = 0
    results = {}
    first_lo = {}
    best_hi = np.inf

    unsafe = {}  # label -> the first floor violation seen

    def run(cfg, r):
        nonlocal spent
        cmp_ = compare(data, [cfg], sensitive=sensitive, reps=r, rng=int(child_seeds(seed, "search", next(calls) + 1)[-1]),
                       released=False)
        spent += r
        bad = cmp_.runs[~cmp_.runs.floors_ok.astype(bool)]
        if len(bad):
            unsafe.setdefault(config_label(cfg), bad.violation.iloc[0])
        return cmp_.runs[target].to_numpy()

    # masks that leave a sensitive variable below the perturbed-share floor are refused
    # before anything runs (the decomposition says so exactly)
    cands, refused = _below_floor_refused(data, method, sensitive, cands)
    total_planned = min(budget, len(cands) * first_reps)
    n_first = max(1, min(len(cands), budget // first_reps))
    level = 1.0 - 0.05 / n_first
    for cfg in cands:
        if spent + first_reps > budget:
            break
        vals = run(cfg, first_reps)
        label = config_label(cfg)
        results[label] = (cfg, list(vals))
        if label in unsafe:  # never a release, never the bound others are measured against
            first_lo[label] = np.inf
        else:
            _, lo, hi = mean_interval(vals, level)
            first_lo[label] = lo
            best_hi = min(best_hi, hi)
        if progress is not None:
            progress(min(spent, total_planned), total_planned)
    # early elimination (on the same first-pass intervals that set best_hi), then refine survivors
    survivors = [label for label in results if first_lo[label] <= best_hi]
    eliminated = len([lab for lab in results if lab not in survivors and lab not in unsafe])
    for label in survivors:
        need = reps - len(results[label][1])
        if need <= 0 or spent + need > budget:
            continue
        results[label][1].extend(run(results[label][0], need))
    ranking = _ranking(results, unsafe, survivors)
    tried = len(results)
    note = (f"tried {tried} of {space} possible {unit} ({what}); "
            f"{refused + len(unsafe)} refused by the risk floors ({refused} before running: a sensitive variable "
            f"would be too little perturbed; {len(unsafe)} broke a floor in a run) and never ranked; "
            f"{eliminated} dropped after {first_reps} runs because their interval (widened for the {n_first} "
            f"candidates compared) lay above the best; "
            f"{spent} protect+evaluate runs of a budget of {budget}")
    if tried < len(cands):
        note += f"; {len(cands) - tried} planned candidates not reached within the budget"
    if len(ranking) == 0:
        note += "; no candidate met the risk floors: protect more (other rotation, more factors, larger k)"
    refusals = pd.DataFrame([{"config": lab, "violation": v} for lab, v in unsafe.items()],
                            columns=["config", "violation"])
    return SearchResult(ranking, target, tried, space, eliminated, note, refused + len(unsafe), refusals)
