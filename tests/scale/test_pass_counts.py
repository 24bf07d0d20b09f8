"""The floors' counting pass at scale (``_scale.floors._pass_counts``): per checked column and
wanted bin edge, the values below the edge and the close records among them, computed by
placing the edges among the sorted values. Checked against the definition, counted directly."""

import numpy as np

from sdccore._scale import floors as fl


def _direct(X, Y, check, tol, edges):
    below = np.zeros(edges.shape, dtype=np.int64)
    cbelow = np.zeros(edges.shape, dtype=np.int64)
    close = np.zeros(len(check), dtype=np.int64)
    for a, j in enumerate(check):
        x, y = X[:, j], Y[:, j]
        with np.errstate(invalid="ignore"):
            ok = np.abs(y - x) <= tol * np.abs(x)
        close[a] = ok.sum()
        for w in range(edges.shape[0]):
            for b in range(edges.shape[2]):
                lt = x < edges[w, a, b]  # a missing value is below no edge
                below[w, a, b] = lt.sum()
                cbelow[w, a, b] = (lt & ok).sum()
    return below, cbelow, close


def test_counts_below_each_edge_equal_the_direct_count():
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = int(rng.integers(0, 400))
        X = np.round(rng.standard_normal((n, 3)) * 3, int(rng.integers(0, 2)))  # ties on rounded values
        Y = X * (1 + rng.normal(0, 0.05, X.shape))
        if trial % 3 == 0 and n:
            X[rng.integers(0, n, 5), 1] = np.nan
        lo = rng.normal(0, 2, (2, 2))
        hi = lo + (0 if trial % 5 == 0 else np.abs(rng.normal(0, 2, (2, 2))))  # a zero-width bracket too
        edges = fl._edges(lo, hi, int(rng.integers(1, 9)))
        if n and not np.isnan(X[0, 1]):
            edges[0, 1, 0] = X[0, 1]  # an edge equal to a value: that value is not below it
        got = fl._pass_counts(X, Y, [0, 1], 0.05, np.zeros(3), edges)
        below, cbelow, close = _direct(X, Y, [0, 1], 0.05, edges)
        assert np.array_equal(got["below"], below) and np.array_equal(got["cbelow"], cbelow)
        assert np.array_equal(got["close"], close)
