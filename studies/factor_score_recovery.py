"""The factor-score paper's result on synthetic data: a variable uncorrelated with the
others is recovered exactly by Bartlett and least-squares scores, and by Thomson's up to
the factor 1/(1 + psi).

    python studies/factor_score_recovery.py
"""

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import sdccore  # noqa: E402
from sdccore._data.audit import factor_scores  # noqa: E402


def planted(n=2000, seed=0):
    """y1 exactly uncorrelated with 6 correlated variables (orthogonalised in the sample)."""
    rng = np.random.default_rng(seed)
    others = rng.standard_normal((n, 6)) @ rng.standard_normal((6, 6))
    others -= others.mean(0)
    y = rng.standard_normal(n)
    y -= y.mean()
    Q, _ = np.linalg.qr(others)
    y -= Q @ (Q.T @ y)
    Z = np.column_stack([y, others])
    return (Z - Z.mean(0)) / Z.std(0)


def main():
    Z = planted()
    R = np.corrcoef(Z, rowvar=False)
    # the paper's loading matrix (eq. 8): one factor loading only on y1 with psi_1 -> 0
    w, V = np.linalg.eigh(R[1:, 1:])
    k = 3
    L = np.zeros((7, k + 1))
    psi1 = 0.2
    L[0, 0] = np.sqrt(1 - psi1)
    L[1:, 1:] = V[:, ::-1][:, :k] * np.sqrt(w[::-1][:k])
    for meth in ("bartlett", "least_squares", "thomson"):
        F = factor_scores(Z, L, meth)
        f1 = F[:, 0]
        c = abs(np.corrcoef(f1, Z[:, 0])[0, 1])
        ratio = np.linalg.lstsq(Z[:, [0]], f1, rcond=None)[0][0]
        print(f"{meth:14s} |cor(f1, y1)| = {c:.12f}; f1 = {ratio:.6f} * y1"
              + ("  (1/sqrt(1-psi)=%.6f)" % (1 / np.sqrt(1 - psi1)) if meth != "thomson" else
                 "  (Thomson: sqrt(1-psi) = %.6f, shrunk by 1-psi relative to the exact 1/sqrt(1-psi))" % np.sqrt(1 - psi1)))
    import pandas as pd
    df = pd.DataFrame(Z * 1000 + 5000, columns=["y1"] + [f"x{i}" for i in range(6)])
    audit = sdccore.audit_factor_scores(df)
    print("\nsdccore.audit_factor_scores on the planted data:")
    print(audit.table[["best_abs_cor", "method", "n_factors", "share_within_0.5pct", "flag"]].round(4).to_string())


if __name__ == "__main__":
    main()
