"""The priors written independently of the code under test (per-record loops): OLS, log-OLS
and 5-NN, each leave-one-out.  Shared by tests/risk/test_intruders.py,
tests/risk/test_reconstruction.py and tests/package/test_safety.py."""
import numpy as np


def _ref_priors(P, x):
    """OLS, log-OLS and 5-NN, leave-one-out by refitting without each record (loops: the
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
    return {"ols": loo(P, x), "log-ols": np.sign(lz) * np.expm1(np.abs(lz)), "knn": knn}
