"""FA and PCA (Calviño's general and selective protection): the factorization, the
rotation, the factors or components to perturb, and each one's scores perturbed (in memory,
and at scale as one exchange over all records)."""

from __future__ import annotations

import itertools

import numpy as np

from .._core import decomp as dc
from .perturbations import PARAMETERS, PERTURBATIONS, RESIDUALS, perturb_columns, perturb_residual_rows
from .._core.streams import DASK_STREAMS
from ._base import EXTRACTION_TEXT, Option, Perturbed, Plan, Scaled, loadings_frame, planned_share

PERTURBATION_TEXT = {
    "swap": "random permutation (the papers' choice; keeps each factor's distribution)",
    "rankswap": "rank swapping within a window of p % of the records",
    "noise": "normal noise with sd noise_sd % of the factor's sd, rescaled",
    "microagg": "univariate microaggregation in groups of k",
    "microagg_noise": "microaggregation in groups of k plus the lost variance as noise",
    "bootstrap": "resampling with replacement",
    "synthetic": "smoothed bootstrap (kernel draws)",
    "round": "rounding to a coarse grid",
}
ROTATION_TEXT = {
    "none": "none",
    "varimax": "varimax",
    "quartimax": "quartimax",
    "equamax": "equamax",
    "isolate_sensitive": "isolate the sensitive variables (factor 1 alone carries sensitive variable 1, ...)",
    "isolate_public": "isolate the public variables",
}
CRITERION_TEXT = {
    "sensitive_threshold": "|loading| >= t on a sensitive variable",
    "public_threshold": "all but those with |loading| >= t on a public variable",
    "sensitive_over_public": "loading larger on sensitive than on public variables",
}
WORD = {"fa": "factor", "pca": "component"}
APPROX = {"noise", "microagg", "microagg_noise", "bootstrap", "synthetic", "round"}  # perturbations that keep
# covariances only approximately


def _perturbation(method, word):
    def param(name):
        return lambda o, ctx: PARAMETERS[o["perturbation"]] is not None and PARAMETERS[o["perturbation"]][0] == name

    return [
        Option("perturbation", method, "choice", "swap", f"Perturbation of each {word}",
               f"How each perturbed {word}'s scores are changed.", choices=PERTURBATIONS,
               choice_text=PERTURBATION_TEXT),
        Option("p", method, "number", PARAMETERS["rankswap"][1], "Rank window p", "Rank-swap window in percent of "
               "the records (at least one rank).", low=0, high=100, low_open=True, unit="% of records",
               when="with perturbation='rankswap'", applies=param("p")),
        Option("noise_sd", method, "number", PARAMETERS["noise"][1], "Noise sd", f"Noise sd in percent of the "
               f"{word}'s sd.", low=0, low_open=True, unit=f"% of the {word}'s sd",
               when="with perturbation='noise'", applies=param("noise_sd")),
        Option("k", method, "integer", PARAMETERS["microagg"][1], "Group size k", "Microaggregation group size.",
               low=2, unit="records", when="with perturbation='microagg' or 'microagg_noise'", applies=param("k")),
    ]


RESIDUALS_TEXT = {"keep": "kept as they are (keep)", "swap_rows": "each record's residuals swapped with another's "
                                                                   "(swap_rows)",
                  "bootstrap_rows": "each record's residuals drawn from another's (bootstrap_rows)"}
SCORES_TEXT = {"whitened": "whitened: the covariance kept (whitened)",
               "regression": "regression scores, the papers' construction (regression)"}


def _fa():
    auto = lambda o, ctx: o["factors"] == "auto"  # noqa: E731
    return [
        Option("n_factors", "fa", "integer", lambda o, ctx: ctx.m, "Number of factors",
               "Default: as many as variables (zero factors are dropped).", low=1),
        Option("extraction", "fa", "choice", "minres", "Extraction", "How the factors are extracted.",
               choices=tuple(EXTRACTION_TEXT), choice_text=EXTRACTION_TEXT),
        Option("rotation", "fa", "choice", lambda o, ctx: "isolate_sensitive" if ctx.selective else "none",
               "Rotation", "isolate_sensitive: factor 1 alone carries sensitive variable 1, factors 1-2 variable "
               "2, ...", choices=tuple(ROTATION_TEXT), choice_text=ROTATION_TEXT,
               sensitive_only=("isolate_sensitive", "isolate_public")),
        Option("factors", "fa", "labels", lambda o, ctx: "auto" if ctx.selective else "all", "Factors to perturb",
               "'all', 'auto' (a criterion on the loadings of the sensitive variables) or 1-based factor numbers.",
               choices=("all", "auto"), sensitive_only=("auto",)),
        Option("criterion", "fa", "choice", "sensitive_threshold", "Criterion",
               "Which factors 'auto' perturbs.", choices=tuple(CRITERION_TEXT), choice_text=CRITERION_TEXT,
               when="with factors='auto'", applies=auto),
        Option("threshold", "fa", "number", 0.3, "Threshold t", "|loading| threshold of the criterion.", low=0,
               high=1, when="with factors='auto' and a threshold criterion",
               applies=lambda o, ctx: auto(o, ctx) and o["criterion"] != "sensitive_over_public"),
        *_perturbation("fa", "factor"),
        Option("residuals", "fa", "choice", lambda o, ctx: "keep" if ctx.selective else "swap_rows", "Residuals",
               "swap_rows (default in general protection): with fewer factors than variables, residuals kept "
               "unchanged let an intruder who knows the other variables invert the change exactly.",
               choices=RESIDUALS, choice_text=RESIDUALS_TEXT),
        Option("scores", "fa", "choice", "whitened", "Scores",
               "whitened keeps the covariance unbiased; regression is the papers' literal construction.",
               choices=tuple(SCORES_TEXT), choice_text=SCORES_TEXT),
    ]


def _pca():
    return [
        Option("components", "pca", "labels", lambda o, ctx: "auto" if ctx.selective else "all",
               "Components to perturb", "'all', 'auto' (those loading on a sensitive variable) or 1-based "
               "component numbers.", choices=("all", "auto"), sensitive_only=("auto",)),
        Option("threshold", "pca", "number", 0.3, "Threshold t", "|loading| on a sensitive variable.", low=0, high=1,
               when="with components='auto'", applies=lambda o, ctx: o["components"] == "auto"),
        *_perturbation("pca", "component"),
        Option("residuals", "pca", "choice", "keep", "Residuals", "What happens to the part no component carries.",
               choices=RESIDUALS),
    ]


def options(method):
    return _fa() if method == "fa" else _pca()


def check(method, o, ctx):
    """n_factors within the variables (its default: as many as variables); factor or
    component labels within the decomposition."""
    m = ctx.m
    if method == "fa":
        top = ctx.m_total or m
        if o["n_factors"] is None:
            o["n_factors"] = m
        elif o["n_factors"] > top:
            raise ValueError(f"n_factors={o['n_factors']} is more than the {top} variables; choose 1 to {top}.")
    key = "factors" if method == "fa" else "components"
    word = WORD[method]
    if isinstance(o.get(key), list):
        bad = [lab for lab in o[key] if lab > m]
        if bad:
            raise ValueError(f"{key} names {word}(s) {bad}, but there are {m} ({word}s are numbered 1 to {m}).")


def loadings_prefix(method):
    return "F" if method == "fa" else "PC"


def variance_share(plan, method, m):
    """Each factor's share of the total variance (PCA: its eigenvalue over m)."""
    return plan.dec.variances / m if method == "pca" else (plan.dec.loadings ** 2).sum(axis=0) / m


def _fa_plan(prep, o, Rk, sens, pub, notes):
    mk = len(prep.keep)
    k = min(o["n_factors"], mk)
    if k < o["n_factors"]:
        notes.append(f"{mk} variables remain after setting aside exact linear combinations, so {k} factors are used")
    p_sphere = dc.bartlett_p(Rk, prep.X.shape[0])
    if p_sphere > 0.05:
        notes.append(f"the correlation matrix is close to the identity (Bartlett's test p = {p_sphere:.2f}; see "
                     f"KMO on the Explore page): factor analysis has little or nothing to carry, and the factors "
                     f"shown are mostly sampling noise; PCA or M-AGG protect such data more plainly")
    dec = dc.fa_decomposition(Rk, k, o["extraction"], o["scores"])
    notes += list(dec.notes)
    kk = dec.L.shape[1]
    rot = o["rotation"]
    if rot in ("varimax", "quartimax", "equamax"):
        T = dc.standard_rotation(dec.L, rot)
    elif rot == "isolate_sensitive":
        T, chosen = dc.isolating_rotation(dec.L, sens)
        if len(chosen) < len(sens):
            notes.append(f"{len(sens) - len(chosen)} sensitive variable(s) could not get a factor of their own "
                         f"(more sensitive variables than factors, or in the span of earlier ones)")
    elif rot == "isolate_public":
        T, _ = dc.isolating_rotation(dec.L, pub)
    else:
        T = np.eye(kk)
    L = dec.L @ T
    shown = dec.loadings @ T
    active = np.ones(kk, dtype=bool)
    if o["factors"] == "all":
        sel = list(range(kk))
    elif o["factors"] == "auto":
        sel = dc.select_factors(shown, sens, pub, o["criterion"], o.get("threshold", 0.0))
    else:
        bad = [f for f in o["factors"] if f > kk]
        if bad:
            raise ValueError(f"factors names factor(s) {bad}, but the decomposition has {kk} factors.")
        sel = [f - 1 for f in o["factors"]]
    return dc.Factorization(dec.G @ T, L, shown, dec.variances, dec.notes), T, sel, active


def _pca_plan(o, Rk, sens, notes):
    dec, active = dc.pca_as_decomposition(Rk)
    notes += list(dec.notes)
    kk = dec.L.shape[1]
    if o["components"] == "all":
        sel = list(range(kk))
    elif o["components"] == "auto":
        sel = dc.select_components(dec.loadings, sens, o["threshold"])
    else:
        sel = [c - 1 for c in o["components"]]
    return dec, np.eye(kk), sel, active


def no_selection(word):
    return ValueError(f"the options select no {word} to perturb, so nothing would be protected; "
                      f"lower the threshold, choose another criterion, or list the {word}s to perturb.")


def plan(prep, method, o):
    Rk = prep.R[np.ix_(prep.keep, prep.keep)]
    sens = prep.sens
    pub = [i for i in range(len(prep.keep)) if i not in set(sens)]
    notes = []
    if method == "fa":
        dec, T, sel, active = _fa_plan(prep, o, Rk, sens, pub, notes)
    else:
        dec, T, sel, active = _pca_plan(o, Rk, sens, notes)
    sel = [s for s in sel if active[s]]
    if not sel:
        raise no_selection(WORD[method])
    return Plan(dec, T, sel, active, tuple(notes))


def perturb(prep, plan, method, o, gen, Xk, full):
    """Each selected factor's scores perturbed (a permutation by default) and the change
    carried back through its loadings; the residuals as the option says."""
    keep = prep.keep
    notes = list(plan.notes)
    loadings = loadings_frame(plan, prep, loadings_prefix(method))
    Zk = prep.Z if full else prep.Z[:, keep]
    G, L, sel = plan.dec.G, plan.dec.L, plan.sel
    # scores as rows (k x n): each factor is contiguous for the column perturbations
    Ft = G[:, sel].T @ Zk.T
    par = PARAMETERS[o["perturbation"]]
    Fpt = perturb_columns(Ft.T, o["perturbation"], o[par[0]] if par else None, gen).T
    Fpt -= Ft
    scale = L[:, sel].T * prep.sd[keep]
    Xpk = Xk  # our own copy: update it in place
    Xpk += Fpt.T @ scale
    if o["residuals"] != "keep":
        E = Zk - (Zk @ G) @ L.T
        Ep = perturb_residual_rows(E, o["residuals"], gen)
        Xpk += (Ep - E) * prep.sd[keep]
    # every record's change lies in the span of the perturbed factors' loadings (unless the
    # residuals are perturbed too): what the structural intruder of the risk floors uses
    basis = scale.T.copy() if o["residuals"] == "keep" else None
    return Perturbed(X=Xpk, loadings=loadings, perturbed=tuple(s + 1 for s in sel), planned=planned_share(plan, prep),
                     basis=basis, notes=tuple(notes))


_KEEPS = {
    "fa": ("means", "variances and covariances (unbiased)"),
    "pca": ("means", "variances and covariances (unbiased)"),
}


def keeps(method, opts):
    if opts.get("perturbation") in APPROX:
        return "means", "covariances approximately"
    return _KEEPS[method]


def scale_refusal(method, options):
    if options.get("perturbation", "swap") != "swap" or options.get("residuals", "keep") not in ("keep", "swap_rows"):
        return (f"--engine dask perturbs by swapping factor scores (perturbation='swap') with residuals kept or "
                f"swapped by rows; the recipe asks for perturbation={options.get('perturbation')!r}, "
                f"residuals={options.get('residuals')!r}.")
    return None


def perturb_scale(method, s):
    """At scale: each factor its own uniform permutation over all records (and the residual
    rows one more), all in one exchange through the scratch folder (``_dask_exchange``)."""
    import dask.array as da

    from .._core.exchange import exchange

    why = scale_refusal(method, s.o)  # the same rule on the bound options (defaults filled in)
    if why:
        raise ValueError(why)
    pl = plan(s.prep, method, s.o)
    G, L, sel = pl.dec.G, pl.dec.L, pl.sel
    scale = L[:, sel].T * s.sd_k
    Zk = (s.Xk - s.mean_k) / s.sd_k
    F = Zk @ G[:, sel]
    GL = G @ L.T
    zero_residuals = GL.shape[0] == GL.shape[1] and np.allclose(GL, np.eye(GL.shape[0]), atol=1e-10)
    k = len(sel)
    groups = [(j, [j]) for j in range(k)]
    A = F
    if s.o["residuals"] == "swap_rows" and not zero_residuals:  # one permutation for the whole residual row
        E = Zk - (Zk @ G) @ L.T
        A = da.concatenate([F, E], axis=1)
        groups.append((DASK_STREAMS["residual_rows"], list(range(k, k + E.shape[1]))))
    P = exchange(A, s.lengths, s.seed, groups, s.scratch, s.progress)
    Xpk = s.Xk + (P[:, :k] - F) @ scale
    if len(groups) > k:
        Xpk = Xpk + (P[:, k:] - E) * s.sd_k
    notes = [f"{len(sel)} of {L.shape[1]} {WORD[method]}s swapped over all {s.n:,} records"] + list(pl.notes)
    return Scaled(X=Xpk, notes=notes, plan=pl, planned=planned_share(pl, s.prep))


def mask_candidates(m, variances):
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


def search_candidates(data, method, sensitive, base, decompose):
    """The masks the search tries: (candidates, size of the space, what, unit)."""
    dec = decompose(data, method=method, sensitive=sensitive,
                    **{k: v for k, v in base.items() if k not in ("factors", "components")})
    m = dec.loadings.shape[1]
    key = "factors" if method == "fa" else "components"
    masks = mask_candidates(m, dec.variance.to_numpy())
    if sensitive and method == "fa" and "rotation" not in base:
        base["rotation"] = "isolate_sensitive"
    cands = [{"method": method, **base, key: [i + 1 for i in mk]} for mk in masks]
    return cands, 2 ** m - 1, (f"{len(masks)} masks: the {m} variance-ordered prefixes, each single {key[:-1]}, and "
                               f"combinations of the top-variance ones"), "masks"
