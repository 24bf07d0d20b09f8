"""The priors written independently of the code under test (per-record loops): OLS, log-OLS
and 5-NN, each leave-one-out.  Shared by tests/risk/test_intruders.py,
tests/risk/test_reconstruction.py and tests/package/test_safety.py."""
import numpy as np


def _ref_priors(P, x):
    """OLS, log-OLS, 5-NN and the mean, median and percentiles of the others, leave-one-out;
and the least-squares fits on every record (raw and log); cross-fitted gradient boosting
(selective protection's prior), least squares with its spread (ols-by-size) and each
model's ranked version (the others' values handed out in its order),
    by refitting without each record (loops: the
    normal equations less the record's own term, solved anew; the nearest records by a full
    sort of the distances)."""
    n = len(x)
    g = lambda v: np.sign(v) * np.log1p(np.abs(v))

    def loo(A, t):
        A = np.c_[np.ones(n), (A - A.mean(0)) / A.std(0)]  # scaled: OLS with an intercept is unchanged
        G, c = A.T @ A, A.T @ t
        return np.array([A[i] @ np.linalg.solve(G - np.outer(A[i], A[i]), c - A[i] * t[i]) for i in range(n)])
    Z = (P - P.mean(0)) / P.std(0)
    # the kNN prior uses the 8 known variables most correlated with x
    c = np.abs([np.corrcoef(P[:, k], x)[0, 1] for k in range(P.shape[1])])
    Zk = Z[:, np.sort(np.argsort(-c, kind="stable")[:8])]
    knn = np.empty(n)
    for i in range(n):
        d = ((Zk - Zk[i]) ** 2).sum(1)
        d[i] = np.inf
        knn[i] = x[np.argsort(d, kind="stable")[:5]].mean()
    lz = loo(g(P), g(x))
    others = [np.delete(x, i) for i in range(n)]
    sorted_others = [np.sort(o) for o in others]  # each record's others sorted once, for the 48 percentiles

    # gradient boosting, cross-fitted: 5 folds in scikit-learn's shuffled order (seed 0), 50 trees
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.model_selection import KFold
    boost = np.empty(n)
    for train, test in KFold(5, shuffle=True, random_state=0).split(P):
        m = HistGradientBoostingRegressor(max_iter=50, early_stopping=False, random_state=0)
        boost[test] = m.fit(P[train], x[train]).predict(P[test])
    # the fit with its spread, cross-fitted in the same folds: each fold's records in the order
    # of the other folds' least-squares fit, handed those folds' residuals at the same rank
    # fraction (the largest to the largest fit)
    by_size = np.empty(n)
    for train, test in KFold(5, shuffle=True, random_state=0).split(P):
        D = np.c_[np.ones(len(train)), P[train]]
        b = np.linalg.lstsq(D, x[train], rcond=None)[0]
        fit = b[0] + P[test] @ b[1:]
        res = np.sort(x[train] - D @ b)
        for a, i in enumerate(np.argsort(fit, kind="stable")):
            by_size[test[i]] = fit[i] + res[min(int((a + 0.5) * len(res) / len(test)), len(res) - 1)]
    fits = {"ols": loo(P, x), "log-ols": np.sign(lz) * np.expm1(np.abs(lz)), "knn": knn, "boosting": boost}

    def ranked(pred):  # the others' values at each record's rank fraction in the order of pred (loops)
        rank = np.argsort(np.argsort(pred, kind="stable"), kind="stable")
        return np.array([sorted_others[i][int((rank[i] + 0.5) * (n - 1) / n)] for i in range(n)])
    ranks = {f"{m}-ranked": ranked(e) for m, e in fits.items()}
    # halfway on the signed log scale between each fit and each ranked model
    mixed = {f"{a} + {b}": np.sign(h) * np.expm1(np.abs(h))
             for a in fits for b in ranks for h in [(g(fits[a]) + g(ranks[b])) / 2]}
    return {**fits, "mean": np.array([o.mean() for o in others]), "median": np.array([np.median(o) for o in others]),
            "ols-by-size": by_size, **ranks, **mixed,
            # the percentiles of the others: the order statistic of rank round(q (n - 2))
            **{f"P{p}": np.array([o[int(round(p / 100 * (n - 2)))] for o in sorted_others])
               for p in range(2, 100, 2) if p != 50}}
