"""Univariate perturbations of one column (a factor, a component or a variable), spec section 2.

Each function takes a 1-d float array and a ``numpy.random.Generator`` and returns a new
array; none changes its input.  Columns are treated one after the other in column order,
so the same generator state gives the same output.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = []

PERTURBATIONS = ("swap", "rankswap", "noise", "microagg", "microagg_noise", "bootstrap", "synthetic", "round")
RESIDUALS = ("keep", "swap_rows", "bootstrap_rows")

# parameter name and default of each perturbation
PARAMETERS = {
    "swap": None,
    "rankswap": ("p", 15.0),
    "noise": ("noise_sd", 50.0),
    "microagg": ("k", 3),
    "microagg_noise": ("k", 3),
    "bootstrap": None,
    "synthetic": None,
    "round": None,
}


@njit(cache=True)
def _rankswap_order_scan(n, window, u):
    """Moore rank swapping on ranks 0..n-1 by scanning the window: O(n x window).  The
    reference ``_rankswap_order`` is checked against (tests); same draws, same result."""
    src = np.arange(n)
    done = np.zeros(n, dtype=np.bool_)
    cand = np.empty(max(window, 1), dtype=np.int64)
    for r in range(n):
        if done[r]:
            continue
        hi = min(n - 1, r + window)
        c = 0
        for q in range(r + 1, hi + 1):
            if not done[q]:
                cand[c] = q
                c += 1
        done[r] = True
        if c == 0:
            continue
        q = cand[min(c - 1, int(u[r] * c))]
        done[q] = True
        src[r] = q
        src[q] = r
    return src


@njit(cache=True)
def _rankswap_order(n, window, u):
    """Moore rank swapping on ranks 0..n-1: returns the rank each rank takes its value from.

    Rank r (not yet swapped) takes the int(u[r] c)-th of the c ranks in (r, r + window] not
    yet swapped, counted upwards.  A Fenwick tree over the ranks not yet swapped gives c and
    finds that rank in O(log n), so the whole pass is O(n log n) instead of the O(n x window)
    scan (``_rankswap_order_scan``), with the same draws and the same result."""
    src = np.arange(n)
    tree = np.zeros(n + 1, dtype=np.int64)  # 1-based; position i holds rank i - 1
    for i in range(1, n + 1):
        tree[i] += 1
        j = i + (i & -i)
        if j <= n:
            tree[j] += tree[i]
    top = 1
    while top * 2 <= n:
        top *= 2
    done = np.zeros(n, dtype=np.bool_)
    for r in range(n):
        if done[r]:
            continue
        done[r] = True
        i = r + 1                       # remove r
        while i <= n:
            tree[i] -= 1
            i += i & -i
        below = 0                       # ranks 0..r not yet swapped
        i = r + 1
        while i > 0:
            below += tree[i]
            i -= i & -i
        hi = min(n - 1, r + window)
        upto = 0                        # ranks 0..hi not yet swapped
        i = hi + 1
        while i > 0:
            upto += tree[i]
            i -= i & -i
        c = upto - below
        if c == 0:
            continue
        target = below + min(c - 1, int(u[r] * c)) + 1
        pos = 0                         # the smallest position whose prefix count reaches target
        step = top
        while step > 0:
            nxt = pos + step
            if nxt <= n and tree[nxt] < target:
                pos = nxt
                target -= tree[nxt]
            step //= 2
        q = pos                         # position pos + 1 holds rank pos
        done[q] = True
        i = q + 1
        while i <= n:
            tree[i] -= 1
            i += i & -i
        src[r] = q
        src[q] = r
    return src


def rankswap(f, p, rng):
    """Rank swapping: each value not yet swapped, at rank r, is swapped with a uniformly chosen
    value not yet swapped of rank in (r, r + p*n/100] (p in percent)."""
    n = f.shape[0]
    order = np.argsort(f, kind="stable")
    window = int(np.floor(p * n / 100.0))
    u = rng.random(n)
    src = _rankswap_order(n, window, u)
    out = np.empty_like(f)
    out[order] = f[order][src]
    return out


SHIFT = 2.0  # rank swapping's shifted ranks: a rank plus a uniform draw of up to SHIFT x the window


def rankswap_shifted(f, p, rng):
    """Rank swapping by shifted ranks: every record's rank r is shifted to r + 2w u (u uniform
    on [0, 1), w = p % of the records) and the sorted values are handed out in the order of the
    shifted ranks.  A value then moves up to about w ranks, up or down, evenly spread (w/2 on
    average, about as in pairs; the largest records down, the smallest up), and no record is
    paired with another: in pairs (``rankswap``) a record's row shows its partner's value and
    the partner's row its own, which an intruder who knows the records' other variables finds;
    here the record whose value a row shows holds the value of an unrelated record, and there
    are no blocks whose bounds the release would show.  A record whose shifted rank keeps its
    place (about n/(2w) records) exchanges its value with the next record in the shifted
    order, so none keeps its own value."""
    n = f.shape[0]
    out = f.copy()
    if n < 2:
        return out
    order = np.argsort(f, kind="stable")
    w = max(1.0, p * n / 100.0)
    shifted = np.argsort(np.arange(n) + SHIFT * w * rng.random(n), kind="stable")
    pos = np.empty(n, dtype=np.int64)
    pos[shifted] = np.arange(n)                 # rank r takes the value of rank pos[r]
    for r in np.flatnonzero(pos == np.arange(n)):
        if pos[r] != r:                         # already moved by an exchange before
            continue
        m = pos[r] + 1 if pos[r] + 1 < n else pos[r] - 1
        r2 = shifted[m]
        pos[r], pos[r2] = pos[r2], pos[r]
        shifted[pos[r]], shifted[pos[r2]] = r, r2
    out[order] = f[order][pos]
    return out


def noise(f, s, rng):
    """f + N(0, (s/100 * sd)^2), then affinely rescaled to f's own mean and variance."""
    mu, sd = f.mean(), f.std()
    g = f + rng.standard_normal(f.shape[0]) * (s / 100.0) * sd
    gs = g.std()
    return (g - g.mean()) * (sd / gs if gs > 0 else 0.0) + mu


def _univariate_groups(f, k):
    n = f.shape[0]
    order = np.argsort(f, kind="stable")
    ngroups = max(1, n // k)
    lab_sorted = np.minimum(np.arange(n) // k, ngroups - 1)  # the last group takes the remainder
    labels = np.empty(n, dtype=np.int64)
    labels[order] = lab_sorted
    return labels, ngroups


def microagg(f, k, rng=None):
    """Univariate microaggregation: groups of k consecutive ranks replaced by their mean
    (the last group takes the remainder, so it has k to 2k-1 values)."""
    labels, G = _univariate_groups(f, k)
    means = np.bincount(labels, weights=f, minlength=G) / np.bincount(labels, minlength=G)
    return means[labels]


def microagg_noise(f, k, rng):
    """Univariate microaggregation plus N(0, lost variance) noise (lost = within-group variance)."""
    g = microagg(f, k)
    lost = max(0.0, f.var() - g.var())
    return g + rng.standard_normal(f.shape[0]) * np.sqrt(lost)


def swap(f, rng):
    """A random permutation of the values; drawn again (up to 100 times) while it leaves every
    value in place, which on a handful of records happens often (1 in 6 on three records)
    and would release the column unchanged.  Otherwise the draws are as before, so saved
    recipes rebuild the same files."""
    out = rng.permutation(f)
    for _ in range(100):
        if f.shape[0] < 2 or not np.array_equal(out, f):
            break
        out = rng.permutation(f)
    return out


def bootstrap(f, rng):
    return f[rng.integers(0, f.shape[0], f.shape[0])]


def bw_nrd0(f):
    """R's bw.nrd0: 0.9 * min(sd, IQR/1.34) * n^(-1/5) (sd with n-1, IQR of quantile type 7)."""
    n = f.shape[0]
    sd = f.std(ddof=1)
    q75, q25 = np.percentile(f, [75, 25])
    lo = min(sd, (q75 - q25) / 1.34)
    if not lo > 0:
        lo = sd if sd > 0 else (abs(f[0]) if f[0] != 0 else 1.0)
    return 0.9 * lo * n ** (-0.2)


def synthetic(f, rng):
    """A draw from the smoothed ECDF: f[random index] + h * N(0, 1), h = bw.nrd0(f)."""
    n = f.shape[0]
    h = bw_nrd0(f)
    return f[rng.integers(0, n, n)] + h * rng.standard_normal(n)


def round_grid(f, rng=None):
    """Rounding to a grid of step range/100, anchored at the minimum."""
    lo = f.min()
    step = (f.max() - lo) / 100.0
    if step == 0:
        return f.copy()
    return lo + np.round((f - lo) / step) * step


# each perturbation of one factor's (or component's) scores: (scores, parameter, rng) -> scores
COLUMN_PERTURBATIONS = {
    "swap": lambda f, param, rng: swap(f, rng),
    "rankswap": lambda f, param, rng: rankswap(f, param, rng),
    "noise": lambda f, param, rng: noise(f, param, rng),
    "microagg": lambda f, param, rng: microagg(f, int(param)),
    "microagg_noise": lambda f, param, rng: microagg_noise(f, int(param), rng),
    "bootstrap": lambda f, param, rng: bootstrap(f, rng),
    "synthetic": lambda f, param, rng: synthetic(f, rng),
    "round": lambda f, param, rng: round_grid(f),
}


def perturb_column(f, kind, param, rng):
    """One column of scores perturbed by the perturbation ``kind`` (COLUMN_PERTURBATIONS)."""
    if kind not in COLUMN_PERTURBATIONS:
        raise ValueError(f"unknown perturbation {kind!r}")
    return COLUMN_PERTURBATIONS[kind](f, param, rng)


def perturb_columns(F, method, param, rng):
    """Perturb every column of F independently, in column order."""
    out = np.empty_like(F, order="F")
    for j in range(F.shape[1]):
        out[:, j] = perturb_column(np.ascontiguousarray(F[:, j]), method, param, rng)
    return out


def perturb_residual_rows(E, how, rng):
    """Residuals are correlated across variables, so only whole rows are moved."""
    n = E.shape[0]
    if how == "swap_rows":
        return E[rng.permutation(n)]
    if how == "bootstrap_rows":
        return E[rng.integers(0, n, n)]
    return E
