"""The reconstruction floor: an intruder who knows some values of a record and the method
undoes the change the release made (found while adding pca_remove, issue 10 item 8).

Selective FA and PCA change the public variables by multiples of the same factor scores that
change the sensitive ones; an intruder who knows a firm's public values (the selective threat
model) reads the change off them and subtracts it.  Before this floor, sdccore's default
selective FA on Tarragona with SALES sensitive met every floor while SALES could be read back
within 5 % for more than 90 % of the firms."""

import numpy as np
import pandas as pd
import pytest

import sdccore
from conftest import raw_protect


def _hand_made(n=400, seed=0):
    """x0 sensitive, x1 and x2 public; positive, distinct values."""
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(n)
    X = np.column_stack([100 + 5 * f + 20 * rng.standard_normal(n),
                         50 + 5 * f + 4 * rng.standard_normal(n),
                         80 + 2 * f + 6 * rng.standard_normal(n)])
    return pd.DataFrame(X, columns=["s", "p1", "p2"]), rng


def test_a_change_the_public_variables_show_is_undone():
    """Y = X + delta * b: the public changes give delta, so s is read back exactly."""
    df, rng = _hand_made()
    delta = 30 * rng.standard_normal(len(df))
    b = np.array([1.0, 0.5, -0.7])
    out = df + np.outer(delta, b)
    ev = sdccore.evaluate(df, out, sensitive=["s"])
    v = ev.risk.variables.loc["s"]
    assert v.close_own < 0.2                     # the released s itself is far from the truth
    # but the intruder gets it back exactly, for every record it could not already predict
    # from p1 and p2 alone (the best of the leave-one-out priors: OLS computed here with
    # scikit-learn, log-OLS and 5-NN by test_intruders' loops)
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import LeaveOneOut, cross_val_predict
    from prior_reference import _ref_priors
    prior = cross_val_predict(LinearRegression(), df[["p1", "p2"]], df.s, cv=LeaveOneOut())
    ols = np.mean(np.abs(prior - df.s) <= 0.05 * np.abs(df.s))
    s = df.s.to_numpy(float)
    already = max([ols] + [np.mean(np.abs(e - s) <= 0.05 * np.abs(s))
                           for e in _ref_priors(df[["p1", "p2"]].to_numpy(float), s).values()])
    assert 0.05 < already < 0.5 and v.prior == pytest.approx(already, abs=1e-12)
    assert v.close_reconstructed == pytest.approx(1 - already, abs=1e-12)
    assert not ev.risk.ok and any("reconstruction intruder" in m and "reconstructs s" in m for m in ev.risk.violations)


def test_public_variables_left_unchanged_show_nothing():
    df, rng = _hand_made()
    out = df.copy()
    out["s"] = df["s"] + 30 * rng.standard_normal(len(df))
    v = sdccore.evaluate(df, out, sensitive=["s"]).risk.variables.loc["s"]
    # with nothing to learn from, the estimate is the released value itself (shifted by the mean change)
    own = np.mean(np.abs(out.s - df.s) <= 0.05 * np.abs(df.s))
    assert v.close_reconstructed <= own + 0.02


def test_what_the_known_values_already_give_away_is_not_counted():
    """s is an exact combination of the public variables: an intruder who knows them has s
    without any release, so the release is not blamed for it."""
    df, rng = _hand_made()
    df["s"] = 2 * df.p1 - 0.5 * df.p2 + 40
    delta = 8 * rng.standard_normal(len(df))
    out = df + np.outer(delta, [1.0, 0.5, -0.7])
    v = sdccore.evaluate(df, out, sensitive=["s"]).risk.variables.loc["s"]
    assert v.close_reconstructed == 0.0


def test_default_selective_fa_is_refused_and_an_independent_attack_agrees(tarragona):
    with pytest.raises(sdccore.UnsafeReleaseError, match="reconstructs SALES") as ei:
        sdccore.protect(tarragona, method="fa", sensitive=["SALES"], rng=7)
    share = ei.value.risk.variables.loc["SALES", "close_reconstructed"]
    assert share > 0.8
    # the attack by hand, with parameters estimated from the RELEASE only (as an intruder
    # would): refit the same decomposition on the release, solve each firm's change from its
    # known public values, subtract it from the released SALES
    res = raw_protect(tarragona, method="fa", sensitive=["SALES"], rng=7, bounds="sign", rounding="original")
    X, Y = tarragona.to_numpy(float), res.data.to_numpy(float)
    dec = sdccore.decompose(res.data, method="fa", sensitive=["SALES"])
    B = dec.loadings.to_numpy()[:, [p - 1 for p in dec.perturbed]] * Y.std(0, ddof=1)[:, None]
    s = list(tarragona.columns).index("SALES")
    pub = [j for j in range(X.shape[1]) if j != s]
    delta = np.linalg.lstsq(B[pub], (Y - X)[:, pub].T, rcond=None)[0]
    est = Y[:, s] - (B[s] @ delta)
    by_hand = np.mean(np.abs(est - X[:, s]) <= 0.05 * np.abs(X[:, s]))
    assert by_hand > 0.8 and abs(by_hand - share) < 0.1


def test_selective_rank_swap_leaves_nothing_to_undo(tarragona):
    res = sdccore.protect(tarragona, method="rankswap", sensitive=["SALES"], rng=7)
    assert res.risk.ok and res.risk.variables.loc["SALES", "close_reconstructed"] < 0.1


def test_general_fa_default_swaps_residual_rows_so_the_change_cannot_be_solved(tarragona):
    """With a factor dropped as null, 12 factors span the change of 13 variables; residuals
    kept unchanged let an intruder who knows the 12 others solve it exactly."""
    kept = raw_protect(tarragona, method="fa", rng=3, residuals="keep", bounds="sign", rounding="original")
    assert not kept.risk.ok and kept.risk.variables.close_reconstructed.max() > 0.3
    # (since issue 38 the linked record is held band by band and takes 2 of the 9 largest
    # firms at this seed: released here with a reason, the reconstruction is what is tested)
    res = sdccore.protect(tarragona, method="fa", rng=3, allow_unsafe="testing the reconstruction intruder")
    assert res.options["residuals"] == "swap_rows"
    assert not any("reconstruction intruder" in v for v in res.risk.violations)
    # the change now has a part in every direction: no span to solve in (not assessed in
    # general protection, where the regression intruder is not a floor)
    assert res.risk.variables.close_reconstructed.isna().all()


def test_bands_count_reconstructed_records(tarragona):
    res = raw_protect(tarragona, method="fa", sensitive=["SALES"], rng=7, bounds="sign", rounding="original")
    b = res.risk.bands.set_index("band")
    # (beyond every single prior model since issue 38)
    assert (b.close_reconstructed > 0.4).all() and b.close_reconstructed.mean() > 0.6
    assert not res.risk.ok
    top = b.loc["top 1 %"]
    assert top.records >= 5
