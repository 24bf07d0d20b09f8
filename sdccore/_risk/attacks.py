"""The battery (``battery``: every registered intruder's hits on one checked variable) and the
built-in intruders' guesses (``registry.REGISTRY`` names them): each a function of one
``IntruderContext`` returning its estimate of the checked variable for every sampled record
(or a list of alternatives, or None where it does not apply).  The estimators themselves --
the priors, linking, reconstruction, the assignment and the identities -- are in
``intruders``; this module only says what each intruder knows and feeds them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .._core.plausible import close
from .intruders import (_assignments, cached, find_identity, identity_estimate, prior_estimates,
                        regression_estimate, structural_estimate)
from .registry import BUILT_IN, REGISTRY

__all__ = []


def own(ctx):
    """The own-record intruder: the target's own released value."""
    return [ctx.released[ctx.rows, ctx.target]]


def linked(ctx):
    """The linking intruder: the released value of the record it links to (none where that
    record's cell is not released)."""
    y = ctx.released[ctx.linked, ctx.target]
    if ctx.observed is not None:
        y = np.where(ctx.observed[ctx.linked], y, np.nan)
    return [y]


def _can_reconstruct(ctx):
    return bool(ctx.known) and len(ctx.rows) > 2


def reconstruction(ctx):
    """The reconstruction intruders: in selective protection the law of the changes (the
    sensitive change predicted from the known variables' changes of the record itself), and
    for FA and PCA the span of the perturbed factors."""
    if not _can_reconstruct(ctx):
        return None
    out = []
    known = list(ctx.known)
    if ctx.selective:
        out.append(regression_estimate(ctx.whole_original, ctx.released, ctx.rows, ctx.target, known))
    if ctx.structure is not None:
        s = structural_estimate(*ctx.scaled, ctx.target, known, ctx.structure)
        if s is not None:
            out.append(s)
    return out


def regression(ctx):
    """The regression intruder of general protection: the law of the changes applied to the
    record it links to."""
    if not _can_reconstruct(ctx):
        return None
    return [regression_estimate(ctx.whole_original, ctx.released, ctx.rows, ctx.target, list(ctx.known), ctx.linked)]


def _prior_data(ctx):
    """(the sampled original the priors read, its cache key): the run's own original, or, for
    a file with missing cells, the one with those cells drawn from a fixed stream (the same
    in every run, so the priors are fitted once per data set, not once per seed's draws;
    ``missing.prior_completion``)."""
    if ctx.prior_original is None:
        return ctx.original, ctx.key
    return ctx.prior_original, ctx.prior_key


def priors(ctx):
    """{model: leave-one-out estimate} of the target from what the intruder knows (the
    original alone: kept per data set)."""
    X, key = _prior_data(ctx)
    x = X[:, ctx.target]
    out = {} if not ctx.known else cached(("prior", key, ctx.target, tuple(ctx.known), ctx.selective),
                                          lambda: prior_estimates(X, x, list(ctx.known), boosting=ctx.selective))
    if ctx.keys is not None:  # what the keys alone give (the intruder knows them)
        from .keymatch import key_prior

        kp = cached(("key prior", ctx.key, ctx.target, _keys_key(ctx)), lambda: key_prior(ctx))
        if kp is not None:
            out = {**out, "key cell mean": kp}
    return out


def _keys_key(ctx):
    """The cache key of the original's key codes (None without keys)."""
    if ctx.keys is None:
        return None
    K = np.ascontiguousarray(ctx.keys[0])
    return (K.shape, hash(K.tobytes()))


def found_identity(ctx):
    """The identity the identity intruder uses (``find_identity``'s tuple), or None: one that
    holds on the original and needs a column the intruder does not know."""
    X = ctx.original
    if X.shape[1] <= 1:
        return None
    j = ctx.target
    identity = cached(("identity", ctx.key, j), lambda: find_identity(X, j, [k for k in range(X.shape[1]) if k != j]))
    if identity is not None and any(k not in set(ctx.known) for k in identity[1]):
        return identity
    return None


def identity(ctx):
    """The identity intruder: the target solved from an exact identity between columns."""
    ident = found_identity(ctx)
    if ident is None:
        return None
    return [identity_estimate(ident, ctx.original, ctx.released[ctx.linked], list(ctx.known))]


def prior_hits(ctx):
    """(model names, models x records boolean): which records each prior model gets within the
    tolerance (the original alone: kept per data set)."""
    p = priors(ctx)
    models = list(p)
    X, key = _prior_data(ctx)
    x = X[:, ctx.target]
    # a cell missing from the original is never a hit (its "truth" is a guess itself)
    obr = None if ctx.prior_original is None or ctx.observed is None else ctx.observed[ctx.rows]
    # the keys' own prior reads the run's original (cached under ctx.key): its hits with it
    PH = cached(("prior hits", key, ctx.key if ctx.keys is not None else None, ctx.target, tuple(ctx.known),
                 ctx.selective, ctx.tolerance, _keys_key(ctx)),
                lambda: np.array([close(x, p[m], ctx.tolerance) & (True if obr is None else obr)
                                  for m in models]).reshape(len(models), len(x)))
    return models, PH


def best_prior(ctx):
    """The prediction of the prior model that predicts best overall (the intruder can validate
    that on data like the original; not band by band without the truth; the last of ties in
    model order), or None without one."""
    models, PH = prior_hits(ctx)
    if not models:
        return None
    means = PH.mean(axis=1)
    return priors(ctx)[models[len(models) - 1 - int(np.argmax(means[::-1]))]]


def assignment(ctx):
    """The assignment intruder: the released values handed out in the order of the prediction
    of the prior model that predicts best overall (the intruder can validate that on data like
    the original; not band by band without the truth; the last of ties in model order) and of
    the identity's, each also clipped to a published swap window."""
    y = ctx.released[:, ctx.target]
    released = y if ctx.observed is None else y[ctx.observed]
    preds = []
    pred = best_prior(ctx)
    if pred is not None:
        preds.append(pred)
    ident = identity(ctx)
    if ident is not None:
        preds.append(ident[0])
    return _assignments(preds, released, y[ctx.linked], ctx.window)


# ----------------------------------------------------------------- the battery

def _guesses(info, ctx):
    """One registered intruder's guesses for ``ctx``: a list of arrays of one value per sampled
    record (a plug-in's answer checked: one ValueError naming it)."""
    if info.name not in BUILT_IN and ctx.cells is not None:  # a plug-in knows no value nobody knows
        ctx = replace(ctx, original=np.where(ctx.cells[ctx.rows], ctx.original, np.nan),
                      released=np.where(ctx.cells, ctx.released, np.nan))
    try:
        g = info.run(ctx)
    except Exception as e:  # noqa: BLE001 - a plug-in's failure, named
        if info.name in BUILT_IN:
            raise
        raise ValueError(f"intruder {info.name!r} failed on {ctx.variable!r}: {type(e).__name__}: {e}") from e
    if g is None:
        return []
    g = list(g) if isinstance(g, (list, tuple)) else [g]
    if g and all(np.ndim(e) == 0 for e in g):
        raise ValueError(f"intruder {info.name!r} returned a list of {len(g)} single numbers for {ctx.variable!r}; return "
                         f"one array of one value per sampled record (len(ctx.rows) = {len(ctx.rows)}): a list means "
                         f"alternative guesses, each such an array.")
    out = []
    for e in g:
        try:
            e = np.asarray(e, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"intruder {info.name!r} returned a guess that is not numbers for {ctx.variable!r}; "
                             f"it must return one number per sampled record (len(ctx.rows)).") from None
        if e.shape != (len(ctx.rows),):
            raise ValueError(f"intruder {info.name!r} returned {e.shape} values for {ctx.variable!r}; it must return "
                             f"one per sampled record ({len(ctx.rows)}, len(ctx.rows)).")
        out.append(e)
    return out


def battery(ctx):
    """Every registered intruder's hits (records within the tolerance of x_j) on the sampled
    records of ``ctx`` (an ``IntruderContext``), with the release, and every prior model's
    hits without it.

    Returns (prior_hits, hits, identity): prior_hits = (model names, models x records, boolean),
    cached per data set; hits = {intruder: variants x records, boolean}, in the registry's order
    (the built-in ones: own, linked, reconstruction, assignment, identity, regression; those
    that apply; a variant is one of the intruder's alternative guesses); identity = the identity
    the identity intruder used (``find_identity``'s tuple) or None.  A cell missing from the
    release (``ctx.observed`` False) is never a hit."""
    x = ctx.original[:, ctx.target]
    priors_hit = prior_hits(ctx)
    obr = np.ones(len(ctx.rows), dtype=bool) if ctx.observed is None else ctx.observed[ctx.rows]
    hits = {}
    for name, info in list(REGISTRY.items()):
        if not info.applies(ctx.selective, ctx.method):
            continue
        g = _guesses(info, ctx)
        if g:
            hits[name] = np.array([close(x, e, ctx.tolerance) & obr for e in g])
    return priors_hit, hits, found_identity(ctx) if "identity" in hits else None
