"""Protection of files that do not fit in memory, on Dask (``dask`` and
``dask.distributed``: a laptop's LocalCluster, Slurm/PBS through dask-jobqueue, Kubernetes).

The engine shares the in-memory pipeline's plan and guarantees:

1. **Moments by map-reduce**: one pass over the partitions gives each partition's count,
   mean, centred cross-product matrix, minimum, maximum and decimals; the partial moments
   are merged pairwise with Chan, Golub and LeVeque's update (numerically stable: no sums
   of squares of raw values).  Non-finite cells are refused, naming the column.
2. **The plan on the driver**: the options are bound and the factorization, rotation and
   factor selection planned by the same code as in memory (``_bind``, ``_plan``), run on a
   stand-in frame with exactly the file's mean and covariance (a centred orthonormal basis
   scaled by the covariance's square root), so the correlation matrix, exact linear
   dependencies and every choice are the file's own.
3. **Perturbation**: each perturbed factor's scores are put in its own uniformly random order
   over *all* n records (and, with residuals='swap_rows', the residual rows in one more),
   every permutation in one exchange through a scratch folder (``_dask_exchange``:
   multivariate hypergeometric counts per pair of partitions, a random cut at the source, a
   random order at the destination; exactly uniform, one pass instead of one Dask sort per
   factor).  A swap within partitions would keep partition means and
   is a weaker method, so it is never used.  Each record's change is (F' - F) L' sd, as in
   memory: means exact, covariance unbiased, reconstruction exact without perturbation,
   exact linear dependencies rebuilt from the protected columns.
4. **Release steps as in memory**: bounds from the file's own minimum and maximum, rounding
   to the file's decimals (integers stay integers), identifiers dropped, formula-like text
   neutralised, rows shuffled globally when the recipe says so.
5. **Risk floors**: |cor(x, x')| and the share of records whose own protected value stays
   within the tolerance, overall, in every size band and among the largest 1 % of records,
   are counted over *all* n records (``_dask_floors``: two passes, exactly the in-memory
   figures, ties included); the own-record intruder is held to the floors with that
   whole-file share WITH the release, an upper bound of its share beyond the prior (issue 26).
   The rest of the intruder battery (the priors, linking, reconstruction, assignment,
   identities) goes through the in-memory ``risk_profile`` on ``sample`` records (default
   20,000, drawn uniformly) and their protected versions (as in memory, which uses 5,000).
   Linking against the sample's protected records rather than all n is conservative: an
   intruder with fewer decoys links more often.  In general protection the perturbed shares
   are the plan's exact ones; in selective protection the floor applies to the part of each
   sensitive variable the public variables do not explain, measured on the sample.

Correlated noise (``method='noise'``) fits the same frame: each partition adds its own
draws of N(0, noise_cov % of the file's covariance) to the protected columns, from a
generator keyed by (seed, partition); the covariance comes from step 1.

M-AGG (``method='magg'``, general, noise_model 'published' or 'none'): MDAV is quadratic,
so it runs within blocks: a k-d split built on a sample of up to 200,000 records (median of
the widest standardised variable, until a block stands for at most 0.8 * BLOCK_MAX of the
file's records), every record assigned to its block, the blocks gathered by Dask's shuffle,
MDAV within each block with the whole file's variances as weights (groups never cross
blocks), then noise N(0, D) from the pooled within-group scatter as in memory:
n D = Z'Z - Zbar'Zbar, Z'Z from the file's correlation matrix.  Blocking costs
information: whole-file MDAV at 100k x 13 (k=3) loses SSE/SST 0.0335, blocks of at most
50k 0.0396 (1.18x), of at most 10k 0.0464 (1.39x) (benchmarks/bench_magg_blocks.py).

Rank swapping (``method='rankswap'``, ``_dask_rankswap``): the pass is sequential over each
column's ranks, so the swapped columns alone are gathered on the driver and go through the
in-memory kernel with the in-memory random stream: the release is ``protect``'s on the
whole file, byte for byte.

IPSO, data shuffling and conditional FA (``method='ipso' | 'shuffle' | 'cfa'``, selective) run
in random blocks of at most 100,000 records, each block protected by the in-memory pipeline
(``blocks``): what a block keeps exactly (IPSO: its OLS, means and domain
means) the whole file keeps too; a file of one block gets ``protect``'s release byte for byte.

Modules: this one reads, computes moments, plans and perturbs (fa, pca, noise) and writes;
``_dask_magg`` holds M-AGG in blocks, ``_dask_rankswap`` rank swapping, ``_dask_floors`` the
risk floors' per-record figures over every record, ``_dask_measures`` the measures at scale
(``evaluate_dask``, ``exact_quantiles``).

Reproducibility: the keys come from ``_streams.dask_sequence(seed, stream, partition)``,
so the same seed and the same partitioning give the same bytes (the swap's streams:
``_dask_exchange``).  What the engine does not do (refused with a message,
``scale_refusal``): selective M-AGG and its 'exact' noise, pca_remove, the conditional methods
without sensitive variables, the log transform, strata and weights, missing cells.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._methods import hook, methods
from . import blocks
from .._core.streams import dask_sequence
from .steps import _assemble_part, _bounds_at_scale, _release_frame, _scale_columns, _scale_notes, _scale_risk, _with_dependencies
from .._io.partitions import DASK_STREAM, HEAD_BYTES, _add, _name, _read_parquet_file, _tree, _typed_partition, _alive, _check_out, _host, _partial, _read_folder, _remove, _remove_stale, _workers_ready, _write, files_of, moments, read_dask, read_head, stand_in

DASK_METHODS = methods(dask=True)


# ----------------------------------------------------------------------------- protection

@dataclass(frozen=True)
class DaskRelease:
    """What ``protect_dask`` returns: the release (lazy), its risk profile on the sample and
    the effective options.

    Attributes
    ----------
    data : dask.dataframe.DataFrame
        The written release, read lazily from the output folder.
    risk : RiskProfile
        The floors' figures: own-record closeness over all records, the prior and the other
        intruders on the sample.
    options : dict
        The effective options (method, seed and every option), as a recipe records them.
    notes : tuple of str
        What was done and what the custodian should know.
    n : int
        Records released.
    sample : int
        Records on which the sampled figures were measured.
    clipped : dict or None
        Values clipped by the bounds, per protected column (exact counts).
    mean_change_sd : dict or None
        What bounds and rounding moved each mean, in original standard deviations (exact).
    """

    data: object
    risk: object
    options: dict
    notes: tuple
    n: int
    sample: int
    clipped: dict = None
    mean_change_sd: dict = None


def _keys(seed, stream, part, n):
    ss = dask_sequence(seed, stream, part)
    return (np.random.default_rng(ss).integers(0, 2 ** 63 - 1, size=n, dtype=np.int64))


def _with_keys(p, seed, stream, partition_info=None):
    return p.assign(_sdc_key=_keys(seed, stream, partition_info["number"], len(p)))


def _finish_block(B, lo, hi, decs, scratch, block_info=None):
    """Bounds, then rounding to each column's decimals, for one partition's protected values;
    saves [values clipped, sum of the changes] per column as ``finish-{partition}.npy``."""
    part = block_info[0]["chunk-location"][0]
    B = np.asarray(B, dtype=np.float64)
    out = np.clip(B, lo, hi)
    clipped = (out != B).sum(axis=0)
    for j, d in enumerate(decs):
        if d is not None:
            out[:, j] = np.round(out[:, j], d)
    from .._core.exchange import _save

    _save(os.path.join(scratch, f"finish-{part:06d}.npy"), np.stack([clipped.astype(np.float64),
                                                                      (out - B).sum(axis=0)]))
    return out


@dataclass(frozen=True)
class _ScaleInput:
    """What a method's partitioned form (``perturb_scale`` in its module) gets: the bound
    options and prepared stand-in, the file's columns as a Dask array and its moments."""

    prep: object
    o: dict
    Xk: object          # dask array of the decomposed columns
    mean_k: np.ndarray
    sd_k: np.ndarray
    cov_k: np.ndarray
    lengths: list       # records per partition
    n: int
    seed: int
    scratch: str        # a scratch folder next to the output (removed at the end)
    progress: object
    frame: object = None  # the file (Dask DataFrame: the columns protected and those released unchanged)
    num: list = None      # the numeric columns protected (prep.numeric's names)
    options: dict = None  # the recipe's options as given (without method, seed and sensitive)
    in_blocks: object = None  # ``blocks.perturb_blocks``: the file in random blocks, each protected in memory
    block_max: int = 0        # records per random block (at most)


def scale_refusal(options):
    """Why the Dask engine cannot apply a recipe with these options, or None if it can (the
    one rule ``protect_dask`` enforces and the dashboard's Download page shows).

    Parameters
    ----------
    options : dict
        A recipe's options (``Recipe.options``, or ``protect``'s keyword arguments with
        ``method``).

    Returns
    -------
    str or None
        The reason, with what to do instead; None when ``--engine dask`` can apply them.

    Examples
    --------
    >>> import sdccore
    >>> sdccore.scale_refusal({"method": "pca"}) is None
    True
    >>> sdccore.scale_refusal({"method": "pca_remove"})[:34]
    "method 'pca_remove' is not availab"
    """
    method = options.get("method", "fa")
    at_scale = methods(dask=True)
    if method not in at_scale:
        return (f"method {method!r} is not available with --engine dask: {', '.join(at_scale[:-1])} and "
                f"{at_scale[-1]} run at scale. Protect a sample in memory, or use one of those.")
    for key in ("strata", "weights"):
        if options.get(key):
            return (f"{key} is not available with --engine dask yet; protect each group's files separately, or "
                    f"protect in memory.")
    if options.get("keys"):  # local suppression needs every record's key combination at once
        return ("keys (k-anonymity by local suppression) are not available inside --engine dask's protection yet; "
                "blank them first with sdccore.local_suppression_dask (the in-memory blanks, on Dask), then protect "
                "the numeric columns with --engine dask, or protect in memory.")
    if options.get("transform", "none") not in ("none", None, [], ()):
        return "transform (log scale) is not available with --engine dask; use transform='none'."
    if options.get("tail") == "aggregate":
        return ("tail='aggregate' (the largest values replaced by their mean) is not available with --engine dask yet; "
                "use tail='none', or protect in memory.")
    if options.get("bounds") == "tail":
        return ("bounds='tail' (the lower tail taken from the original's smallest values) needs the whole file "
                "sorted at once; use bounds='plausible' or 'sign' with --engine dask, or protect in memory.")
    own = hook(method, "scale_refusal")  # the method's own limits at scale (its module in the registry)
    return own(method, options) if own is not None else None


SCALE_CLIP_FIX = ("rank swapping (each column's own values), bounds='none' (values below 0 released), or protect in "
                  "memory on the log scale (transform=['{v}'])")


def protect_dask(ddf, options, out, *, drop=(), keep=(), sample=20000, allow_unsafe=None, shuffle=False,
                 progress=None, before_publish=None):
    """Protect a data set larger than memory on a Dask cluster: the scale engine.

    The release is written as a Parquet data set into the folder ``out`` (one file a
    partition) and is the in-memory engine's for the same recipe where the method allows
    (rank swapping of the sensitive variables: byte for byte; FA and PCA: the same plan,
    the exchange over all records).  The floors are checked as ``protect`` checks them
    (own-record closeness over all records, the prior and the other intruders on a sample);
    a release that breaks them is deleted and ``UnsafeReleaseError`` raised.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame or str
        The original, or a file pattern (``'big/*.parquet'``, CSV too) read with the
        in-memory reading rules.
    options : Recipe or dict
        A ``Recipe`` (its ``drop``, ``keep`` and ``shuffle`` are added to the arguments') or
        the options as ``protect`` takes them, with ``method`` (one of
        ``sdccore.methods(dask=True)``) and ``seed``.
    out : str
        A new or empty folder.
    drop, keep : sequence of str
        Columns left out of the release; text or code columns passed through unchanged.
    sample : int
        Records on which the prior and the other intruders are measured (>= 100).
    allow_unsafe : str, optional
        The stated reason for releasing under floors below the defaults or broken floors.
    shuffle : bool
        Shuffle the released records' order.
    progress : callable, optional
        Called with each Dask job (the CLI shows a progress bar through it).
    before_publish : callable, optional
        Called with the release's ``Recipe`` after the floors are checked and before the
        release is renamed into place (the CLI writes ``--save-recipe`` there, so a recipe
        never names a release that was not written, nor the reverse).

    Returns
    -------
    DaskRelease
        ``data`` reads the written release lazily; ``risk``, ``options``, ``notes``.

    A run whose workers all stay paused at their memory limit is stopped with a ValueError.

    Examples
    --------
    >>> from dask.distributed import Client                          # doctest: +SKIP
    >>> client = Client(n_workers=2, threads_per_worker=1)           # doctest: +SKIP
    >>> rel = sdccore.protect_dask("big/*.parquet", {"method": "fa", "seed": 1},
    ...                            "released/", drop=["ID"])         # doctest: +SKIP
    >>> rel.risk.ok                                                  # doctest: +SKIP
    True
    """
    from .._protect.recipe import Recipe

    if isinstance(options, Recipe):
        drop = list(options.drop) + [c for c in drop if c not in options.drop]
        keep = list(options.keep) + [c for c in keep if c not in options.keep]
        shuffle = bool(shuffle or options.shuffle)
        if options.unsafe_reason and allow_unsafe is None:
            allow_unsafe = options.unsafe_reason
        opts = dict(options.options)
        if "rng" in opts:
            opts["seed"] = opts.pop("rng")
        options = opts
    elif not isinstance(options, dict):
        raise TypeError(f"options must be a Recipe or a dict of protect's options with 'method' and 'seed'; got "
                        f"{type(options).__name__}.")
    if isinstance(ddf, str):
        ddf = read_dask(ddf)
    from dataclasses import replace

    from .._risk.settings import RiskFloors, UnsafeReleaseError

    lowered = RiskFloors.from_value((options or {}).get("floors")).lowered_text() if isinstance(options, dict) else ""
    if lowered and allow_unsafe is None:
        raise UnsafeReleaseError(f"release refused: the {lowered}. A release under floors below the defaults needs a "
                                 f"stated reason: --allow-unsafe \"reason\" (allow_unsafe='reason' in the library), "
                                 f"or keep the default floors. Nothing was written.")
    with _paused_watch():
        rel = _protect_dask(ddf, options, out, drop=drop, keep=keep, sample=sample, allow_unsafe=allow_unsafe,
                            shuffle=shuffle, progress=progress, before_publish=before_publish)
    if lowered:
        rel = replace(rel, notes=rel.notes + (f"{lowered}; released because: {allow_unsafe.strip()}",))
    return rel


PAUSE_LIMIT = 120  # seconds every worker may stay paused (at its memory limit) before the run is stopped


@contextmanager
def _paused_watch(limit=None):
    """Stop a run whose every worker stays paused for ``limit`` seconds (PAUSE_LIMIT).

    Dask pauses a worker at 80 % of its memory limit and resumes it when memory falls, but
    memory a task left behind (unmanaged: the process itself, allocator arenas) is not
    freed while nothing runs, so a worker too small for the process and one partition's
    work stays paused and the run waits for ever (a 400 MiB worker: the process alone takes
    about 240 MB).  A watcher thread cancels the run's tasks instead, and the run ends with
    a ValueError that names the worker's memory and the fix."""
    try:
        from distributed import Future, get_client

        client = get_client()
    except (ImportError, ValueError):
        yield  # no distributed client: Dask's local scheduler has no memory limit to pause at
        return
    limit = PAUSE_LIMIT if limit is None else limit
    why, stop = [], threading.Event()

    def watch():
        since = None
        while not stop.wait(1.0):
            try:
                ws = list(client.scheduler_info()["workers"].values())
            except Exception:  # the client closed: nothing left to watch
                return
            if not ws or any(w.get("status") != "paused" for w in ws):
                since = None
                continue
            since = since or time.monotonic()
            if time.monotonic() - since >= limit:
                w = max(ws, key=lambda w: w["metrics"]["memory"])
                held = f"{w['metrics']['memory'] / 2 ** 20:,.0f} MB" + (
                    f" of its {w['memory_limit'] / 2 ** 20:,.0f} MB" if w.get("memory_limit") else "")
                why.append(f"every Dask worker has been paused at its memory limit for {limit:g} s and the run "
                           f"cannot go on (a worker holds {held}; the worker process alone takes about 250 MB). "
                           f"Give each worker at least 1 GB (dask worker --memory-limit 1GB), or split the input "
                           f"into smaller files. Nothing was written.")
                client.cancel([Future(k, client) for k in list(client.futures)], force=True, reason="paused")
                return

    watcher = threading.Thread(target=watch, name="sdccore-paused-watch", daemon=True)
    watcher.start()
    try:
        yield
    except BaseException as exc:
        if why:
            raise ValueError(why[0]) from None
        if type(exc).__name__ == "KilledWorker":  # distributed.scheduler.KilledWorker
            raise ValueError("a Dask worker was killed again and again while running one task (most often: it went "
                             "over its memory limit). Give each worker at least 1 GB (dask worker --memory-limit "
                             "1GB), or split the input into smaller files. Nothing was written.") from None
        raise
    finally:
        stop.set()


def _protect_dask(ddf, options, out, *, drop, keep, sample, allow_unsafe, shuffle, progress, before_publish=None):
    from .._protect.pipeline import _bind
    from .._risk.settings import UnsafeReleaseError

    _check_out(out)
    stale = _remove_stale(out)
    if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 100:
        raise ValueError(f"sample={sample!r} must be a whole number of records of at least 100 (default 20000).")
    _workers_ready()
    method, opts, seed, sensitive, exclude = _scale_options(options)
    drop, keep = list(drop), list(keep)
    work, num = _scale_columns(ddf, drop, keep, exclude, sensitive)
    n, mean, cov, lo, hi, dec = moments(work, num)
    # centred: the planner sees the correlations and sds without an offset that costs digits;
    # the engine uses the file's own mean and sd below
    syn = stand_in(np.zeros(len(num)), cov, num, rows=int(min(n, max(5 * len(num), 2000))))
    method, prep, o = _bind(syn, method, sensitive, {k: v for k, v in opts.items() if k != "exclude"}, seed=seed)
    keepi = prep.keep
    sd = np.sqrt(np.diag(cov))
    mean_k, sd_k = mean[keepi], sd[keepi]
    lengths = work.map_partitions(len).compute().tolist()
    X = work[num].to_dask_array(lengths=lengths).astype(np.float64)
    Xk = X[:, keepi]
    scratch = _partial(out, "s")
    # the method's partitioned form (its module in the registry)
    inp = _ScaleInput(prep=prep, o=o, Xk=Xk, mean_k=mean_k, sd_k=sd_k, cov_k=cov[np.ix_(keepi, keepi)],
                      lengths=lengths, n=n, seed=seed, scratch=scratch, progress=progress, frame=work, num=num,
                      options=dict(opts), in_blocks=blocks.perturb_blocks, block_max=blocks.BLOCK_MAX)
    try:
        step = hook(method, "perturb_scale")(method, inp)  # a Scaled (the method contract)
        Xpk, notes0, plan, planned = step.X, step.notes, step.plan, step.planned
    except BaseException:
        _remove(scratch)
        raise
    Xp = _with_dependencies(Xpk, len(num), prep, mean, sd)
    lo_b, hi_b = _bounds_at_scale(o["bounds"], lo, hi)
    decs = [d if o["rounding"] == "original" else None for d in dec]
    # bounds and rounding per partition; each partition also leaves its count of clipped values
    # and its sum of changes in the scratch folder, so the notes can say exactly how far they
    # moved each mean (the means are exact before them)
    os.makedirs(scratch, exist_ok=True)
    Xp = Xp.rechunk({0: tuple(lengths), 1: -1}).map_blocks(_finish_block, lo_b, hi_b, decs, scratch,
                                                           dtype=np.float64)
    as_int = [c for c, d in zip(num, decs) if d == 0 and pd.api.types.is_integer_dtype(work.dtypes[c])]
    rel = _release_frame(work, Xp, num, as_int)
    # written once into a hidden folder next to ``out`` (the swap's gather runs once), then the
    # risk floors are checked on it (per-record figures over every record, linking and
    # reconstruction on a uniform sample); a refused or failed release is deleted, an accepted
    # one renamed into place
    tmp = _partial(out, "a")
    try:
        _write(rel, tmp, progress)
        clipped, shift = _finish_counts(scratch, len(lengths), num, n, sd)
        written = _read_folder(tmp, work._meta)
        s = int(min(n, sample))
        risk = _scale_risk(X, written[num].to_dask_array(lengths=lengths), method=method, prep=prep, o=o, plan=plan,
                           planned=planned, seed=seed, s=s, num=num, mean=mean, lo=lo, hi=hi, n=n, sd_k=sd_k)
        own = hook(method, "release_check")  # the method's own check of the finished release, as in memory
        if own is not None:  # (it reads the exact counts of values clipped and the number of records)
            from dataclasses import replace

            risk = own(method, dict(o, engine="dask"), replace(prep, X0=np.empty((n, 0))),
                       pd.DataFrame({"clipped": pd.Series(clipped)}), risk)
        else:  # a heap at a bound breaks a floor, as in memory
            from .._core import plausible as pl

            risk = pl.with_violations(risk, pl.clipping_violations(pd.DataFrame({"clipped": pd.Series(clipped)}),
                                                                   list(risk.variables.index), o["bounds"], n,
                                                                   SCALE_CLIP_FIX))
        if not risk.ok and allow_unsafe is None:
            raise UnsafeReleaseError(f"release refused, it breaks the risk floors (own-record closeness over all {n:,} "
                                     f"records, the prior and the other intruders on a sample of {s:,}): " + risk.message() + ". Nothing was written. Change the recipe, "
                                     "or pass --allow-unsafe REASON for a file that is not published.", risk=risk)
        if shuffle:
            tmp2 = _partial(out, "b")
            _write(shuffle_rows(written, seed), tmp2, progress)
            _remove(tmp)
            tmp = tmp2
        eff = _effective(method, prep, o, seed, exclude)
        if before_publish is not None:
            before_publish(_scale_recipe(eff, drop, keep, shuffle, allow_unsafe))
        if os.path.isdir(out):
            os.rmdir(out)  # empty (checked before any work)
        os.rename(tmp, out)
    except BaseException:
        _remove(tmp)
        raise
    finally:
        _remove(scratch)
    notes = ([stale] if stale else []) + notes0 + _scale_notes(n, s, num, clipped, shift, o["bounds"], o["rounding"])
    out = _read_folder(out, work._meta)
    return DaskRelease(out, risk, eff, tuple(notes), n, s, clipped, shift)


def _finish_counts(scratch, parts, num, n, sd):
    """What bounds and rounding did, from the counts each partition left in the scratch
    folder: values clipped per column, and each mean's move in original sds (exact)."""
    files = glob.glob(os.path.join(scratch, "finish-*.npy"))
    if len(files) != parts:
        raise RuntimeError("a partition's bounds and rounding left no count in the scratch folder")
    done = sum(np.load(f) for f in files)
    clipped = {c: int(v) for c, v in zip(num, done[0])}
    shift = {c: float(v / n / sd[j]) if sd[j] > 0 else 0.0 for j, (c, v) in enumerate(zip(num, done[1]))}
    return clipped, shift


def _scale_recipe(eff, drop, keep, shuffle, allow_unsafe):
    """The release's recipe, as the in-memory engine records one."""
    from .._protect.recipe import RECIPE_VERSION, Recipe, _versions

    return Recipe({k: v for k, v in eff.items() if k != "engine"}, tuple(drop), tuple(keep), bool(shuffle),
                  RECIPE_VERSION, _versions(), allow_unsafe.strip() if allow_unsafe else None)


def _scale_options(options):
    """(method, the other options, seed, sensitive, exclude) of a recipe the engine applies."""
    from .._core.validation import resolve_seed

    opts = dict(options)
    why = scale_refusal(opts)
    if why:
        raise ValueError(why)
    method = opts.pop("method", "fa")
    opts["transform"] = "none"
    seed = resolve_seed(opts.pop("seed", opts.pop("rng", None)))
    sensitive = opts.pop("sensitive", None)
    return method, opts, seed, sensitive, list(opts.get("exclude") or [])


def _effective(method, prep, o, seed, exclude):
    """The effective options as protect's result carries them: the in-memory pipeline's
    record of them (one writer of a recipe's options), with the columns the engine left out
    before planning and the engine's name."""
    from .._protect.pipeline import _effective as effective

    eff = effective(method, prep, o, seed)
    eff["exclude"] = list(exclude) or None
    eff["engine"] = "dask"
    return eff


def shuffle_rows(ddf, seed):
    """The rows in a uniformly random order over all partitions (Dask's global sort on iid
    random keys), the key column dropped."""
    meta = ddf._meta.assign(_sdc_key=pd.Series([], dtype=np.int64))
    keyed = ddf.map_partitions(_with_keys, seed, "shuffle_keys", meta=meta)
    return keyed.sort_values("_sdc_key").drop(columns="_sdc_key")
