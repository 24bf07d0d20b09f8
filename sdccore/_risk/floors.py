"""Risk floors: the per-variable and per-record checks every release must pass.

Averages hide a variable or a group of records left in the clear (a sensitive variable that
no perturbed factor carries; the largest companies kept within a few percent of the truth
while the average looks safe).  So every path that offers, suggests, searches or writes a
release checks each sensitive variable on its own, and within it each size band, against
floors that nothing bypasses silently:

* ``min_perturbed_share`` -- the share of the variable's variance that the protection
  changes.  FA/PCA: exactly the sum of its squared loadings on the perturbed factors
  (known before anything runs); other methods: 1 - cor(x, x')^2, the variance share not
  explained by the original value.
* ``max_abs_cor`` -- |cor(x, x')| at most this.
* ``tolerance`` and ``max_close_share`` -- at most this share of records may have a
  protected value within ``tolerance`` (relative: |x' - x| <= tolerance |x|) of their true
  value, both for the record's own protected version and for the protected record an
  intruder links to it: nearest on the public variables (what the intruder knows) in
  selective protection; in general protection, nearest on every other variable except the
  target's proxies (|r| >= 0.8: knowing one of those discloses the value without
  any release), the intruder who knows all but the value read.
* the same closeness floor for the value an intruder RECONSTRUCTS from the release and
  what it knows of the record (the same knowledge as for linking), beyond what that
  knowledge alone predicts (a linear regression on it, leave-one-out):
  - every method of changes confined to a few directions (FA, PCA, pca_remove with the
    residuals kept: each record's change lies in the span of the perturbed factors'
    loadings, which the intruder estimates from the release) is inverted exactly when the
    known variables determine the change: selective FA on Tarragona with SALES sensitive
    changes every public variable by a multiple of the one perturbed factor, and an intruder
    who knows them reads SALES back within 5 % for 93 % of firms;
  - in selective protection also any linear law of the changes (leave-one-out regression
    of the sensitive change on the public changes), which catches correlated noise.
  In general protection the regression intruder (who would know every other variable of
  the record) is not a floor: it reconstructs some of the largest records for every
  perturbative method tried (PCA, M-AGG, correlated noise at 200 %), which would refuse
  every release; the structural one (an exact inversion) is.
* the same closeness floors within every size band: ``bands`` quantile bands of the original
  value (the records in stable order of value, cut as ``numpy.array_split`` cuts), plus the largest 1 % of records (at least ``top_records``) on their own, so that the
  tail counts.

Defaults (chosen so that an isolated factor that is swapped passes and a near-copy fails;
measured on the bundled samples, see the closing notes of issue 9): perturbed share >= 0.3,
|cor| <= 0.9, at most 20 % of records within 5 % of the truth, overall and in each band.

In general protection (no sensitive variables) every protected variable is checked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._core.threads import by_work
from . import intruders as intr
from .profile import RiskProfile  # noqa: F401  (its home is below the pipeline)
from .settings import RiskFloors, UnsafeReleaseError  # noqa: F401  (their home is below the pipeline's schema)
from .intruders import link, link_leave_one_out
from .registry import columns as intruder_columns
from .variables import _Run, _reported, _shares, _variable_risk, rank_bands  # noqa: F401

__all__ = ["RiskFloors", "RiskProfile", "UnsafeReleaseError", "risk_profile"]

NEAR_DUPLICATE = 0.8  # |r| from which a variable counts as a proxy of another (leave-one-out linking)
LINK_SAMPLE = 5000  # original records linked (all of them up to this many; an even sample above)


def risk_profile(X, Y, names, check, *, floors=None, planned_share=None, link_on=None, structure=None, observed=None,
                 whole=None, window=None, method=None, keys=None, replays=None, prior_original=None,
                 settings=None):
    """See ``_risk_profile``.  The battery alternates small least-squares fits with the parallel
    linking kernel, and the threads of each pool spin for a while after their call: on
    Tarragona a link interleaved with an SVD took 9.4 ms instead of 0.5 ms, 3.4 ms with BLAS on
    one thread and 1.4 ms with BLAS and OpenMP (numba's threads) on one.  So the fits always run
    on one BLAS thread, and on small files (fewer than threads.SMALL_WORK distance cells a link) the
    links too; on large files each link is long enough for its threads to pay."""
    n = X.shape[0]
    cells = min(n, LINK_SAMPLE) * n
    with by_work(cells):
        return _risk_profile(X, Y, names, check, floors=floors, planned_share=planned_share, link_on=link_on,
                             structure=structure, observed=observed, whole=whole, window=window, method=method,
                             keys=keys, replays=replays, prior_original=prior_original, settings=settings)


def _risk_profile(X, Y, names, check, *, floors=None, planned_share=None, link_on=None, structure=None,
                  observed=None, whole=None, window=None, method=None, keys=None, replays=None, prior_original=None,
                  settings=None):
    """Disclosure risk of release ``Y`` of original ``X`` (numpy arrays, rows aligned) for the
    columns ``check`` (indices) as what the release ADDS to what an intruder already knows,
    against ``floors``.

    The intruder knows ``link_on`` (the public variables, selective protection) or, with
    ``link_on`` None, every other variable but the target's proxies (|r| >= 0.8: general
    protection).  For each checked variable and each record of the linked sample (all records
    up to 5,000) it is counted whether an intruder gets the value within ``tolerance``:

    * the prior (``_intruders.prior_estimates``: OLS, log-OLS and k-nearest-neighbour laws of
      the variable given that knowledge, fitted leave-one-out on the original (never the fit on
      every record, which holds the record itself); the variable's mean and percentiles; in selective
      protection cross-fitted gradient boosting), without any release; beyond it counts the
      hits that no single prior model explains;
    * with the release: the own record, the linked record (nearest on the knowledge), the
      reconstruction intruders (``_intruders.regression_estimate``, and ``structural_estimate`` with
      ``structure`` = (basis, forward, inverse) from protect), the assignment intruder (the
      released values handed out in the order of each prediction; clipped to rank swapping's
      published window of ``window`` ranks when given) and the identity intruder.

    An intruder's risk is the share of records it gets close that the best prior model does
    not (beyond the prior), overall, in every size band and among the largest 1 %; the floor
    ``max_close_share`` applies to it everywhere.  In selective protection the
    ``min_perturbed_share`` and ``max_abs_cor`` floors apply to the part of the variable that
    the public variables do not explain (``_intruders.residual_cor``): a release that keeps the
    regression on the public variables and replaces the rest changes 100 % of what the
    intruder does not know, however much the public variables explain.  In general
    protection they apply to the whole variable (``planned_share``, the exact perturbed
    variance share of FA/PCA where given, else 1 - cor(x, x')^2): there the intruder's
    knowledge is itself released perturbed.

    ``observed`` (optional n x m mask): the cells released; a cell missing from the release is
    never counted as disclosed.  ``whole`` (optional, the Dask engine's
    ``_dask_floors.whole_file_figures``): X and Y are a sample of a larger file, and for each
    checked column it gives |cor|, the own-record closeness and each size band's closeness,
    record count and value range over the whole file; the own-record intruder then counts with
    its whole-file share WITH the release (an upper bound of its share beyond the prior), the
    rest of the battery on the sample.  ``method`` (optional): the protection method, so that
    each violation's fix names that method's own setting (p for rank swapping, k for M-AGG,
    the factors for FA).  ``keys`` (optional): the key variables' integer codes (records x
    keys, -1 missing) as the intruder reads them in the original and as released (a blank
    matches every value): the key-matching intruder and the keys' own prior
    (``_risk.keymatch``).  ``replays`` (optional): the release made again from itself by the same
    method and settings (``IntruderContext.replays``; the replay intruder); ``settings``
    (optional): the method's published settings (``IntruderContext.settings``).  ``prior_original``
    (optional, n x m): the original the priors read where X holds a run's own draws for its
    missing cells (``protect``): those cells drawn from a fixed stream, the same for every
    seed, so the priors are fitted once per data set; their prior hits leave out the cells
    ``observed`` marks missing.  Internal: the public entry points are ``protect``
    (``result.risk``) and ``evaluate`` (``evaluation.risk``).
    """
    floors = RiskFloors.from_value(floors)
    n, m = X.shape
    rows = np.unique(np.linspace(0, n - 1, LINK_SAMPLE).round().astype(np.int64)) if n > LINK_SAMPLE else np.arange(n)
    pos = np.full(n, -1, dtype=np.int64)
    pos[rows] = np.arange(len(rows))
    shared = link(X, Y, rows, list(link_on)) if link_on else None
    loo, proxies = None, {}
    if shared is None:
        with np.errstate(invalid="ignore", divide="ignore"):
            R = np.nan_to_num(np.corrcoef(X, rowvar=False).reshape(m, m))
        # each target's proxies: knowing one of those already discloses it without any release
        proxies = {j: [i for i in range(m) if i != j and abs(R[i, j]) >= NEAR_DUPLICATE] for j in check}
        # every target's link (on all columns but it and its proxies) from one distance pass
        loo = link_leave_one_out(X, Y, rows, list(check), {j: [j] + proxies[j] for j in check})
    Xr, Yr = X[rows], Y[rows]  # the linked sample
    scaled = None
    if structure is not None:
        with np.errstate(all="ignore"):  # the linked records on the protection scale, once
            scaled = (structure[1](Xr), structure[1](Yr))
    ctx = _Run(X=X, Y=Y, Xr=Xr, Yr=Yr, rows=rows, pos=pos, names=names, floors=floors,
               link_on=list(link_on) if link_on else None, selective=bool(link_on), shared=shared, loo=loo,
               proxies=proxies, key=intr.data_key(Xr),  # the priors depend on the original alone: fitted once per data set
               scaled=scaled, structure=structure, observed=observed, whole=whole,
               win=None if window is None else int(np.ceil(window * n)), planned_share=planned_share, method=method,
               keys=keys if keys is not None and np.shape(keys[0])[1] else None, replays=replays, settings=settings,
               **_prior_sample(prior_original, rows, observed))
    var_rows, band_rows, violations, failing, intr_rows = [], [], [], [], []
    for a, j in enumerate(check):
        row, bands_j, intr_j, v = _variable_risk(ctx, a, j)
        var_rows.append(row)
        band_rows += bands_j
        intr_rows += intr_j
        if v:
            failing.append(names[j])
        violations += v
    variables = pd.DataFrame(var_rows, columns=VARIABLE_COLUMNS).set_index("variable")
    bands = pd.DataFrame(band_rows, columns=BAND_COLUMNS)
    return RiskProfile(variables, bands, tuple(violations), floors, int(len(rows)), tuple(failing),
                       pd.DataFrame(intr_rows, columns=["variable", "band", "intruder", "prior", "with_release",
                                                        "beyond_prior", "held"]))


def _prior_sample(prior_original, rows, observed):
    """The ``_Run`` fields of the priors' own original (none where the priors read Xr)."""
    if prior_original is None:
        return {}
    P = prior_original[rows]
    mask = b"" if observed is None else np.packbits(np.asarray(observed)[rows]).tobytes()
    return {"prior_original": P, "prior_key": (intr.data_key(P), hash(mask))}


VARIABLE_COLUMNS = ["variable", "perturbed_share", "abs_cor", "residual_cor", "prior", "prior_model",
                    *intruder_columns(), "intruder",
                    "with_release", "beyond_prior", "worst_band_close", "worst_band", "reported_only", "intruders", "ok"]
BAND_COLUMNS = ["variable", "band", "lo", "hi", "records", "close_own", "close_reconstructed", "prior", "intruder",
                "with_release", "beyond_prior", "median_rel_error", "ok", "reported_only"]
