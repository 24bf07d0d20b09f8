"""A deliberately naive MDAV written line by line from sdcMicro's src/Mdav.h (5.8.1).

It walks the active rows in row order as the C++ linked list does, sums distances in
float32 term by term, takes the first row of largest distance as the farthest, and orders
rows by (distance, then later rows first) as the C++ hash sort does.  Slow (pure Python
loops over rows) but obviously faithful; the tests compare sdccore's fast kernel with it.
"""

import numpy as np


def _dist(a, b, w):
    d = np.float32(0.0)
    for j in range(len(a)):
        d = np.float32(d + np.float32((a[j] - b[j]) * (a[j] - b[j]) * w[j]))
    return d


def mdav_reference(X, k):
    X = np.asarray(X, dtype=float)
    n, m = X.shape
    w = np.ones(m)
    for j in range(m):
        avr = 0.0
        sq = 0.0
        for i in range(n):
            avr += X[i, j]
            sq += X[i, j] * X[i, j]
        avr /= n
        sq /= n
        var = sq - avr * avr
        if var != 0:
            w[j] = 1.0 / var
    active = list(range(n))
    labels = np.full(n, -1)
    g = 0
    while len(active) - k >= k:
        ngroups = 1 if len(active) - 2 * k < k else 2
        center = np.zeros(m)
        for i in active:
            center += X[i]
        center /= len(active)
        far = active[0]
        dists = {}
        for i in active:
            dists[i] = _dist(X[i], center, w)
            if dists[i] > dists[far]:
                far = i
        current = far
        for _ in range(ngroups):
            dists = {}
            farthest = active[0]
            for i in active:
                dists[i] = _dist(X[i], X[current], w)
                if dists[i] > dists[farthest]:
                    farthest = i
            current = farthest
            order = sorted(active, key=lambda i: (dists[i], -i))
            group = order[:k]
            for i in group:
                labels[i] = g
            g += 1
            gs = set(group)
            active = [i for i in active if i not in gs]
    for i in active:
        labels[i] = g
    return labels
