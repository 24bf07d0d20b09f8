"""A toy protection method, as a plug-in author writes one (issue 30: adding a method is one
module plus its tests): each protected column's values permuted among a random share of
the records.  Registered by ``tests/methods/test_plugin_method.py``."""

import numpy as np

from sdccore import Option, Perturbed


def options(method):
    return [Option("share", method, "number", 100.0, "Records permuted",
                   "The share of the records whose values are permuted among themselves, per column.",
                   low=0, high=100, low_open=True, unit="% of records")]


def check(method, o, ctx):
    if round(o["share"] / 100 * ctx.n) < 2:
        raise ValueError(f"share={o['share']:g} % of {ctx.n} records permutes fewer than 2 records; use a share of "
                         f"at least {200 / ctx.n:.3g} %.")


def perturb(prep, plan, method, o, gen, Xk, full):
    cols = prep.sens if prep.sensitive_names else list(range(len(prep.keep)))
    n = Xk.shape[0]
    size = int(round(o["share"] / 100 * n))
    for j in cols:
        rows = np.sort(gen.choice(n, size=size, replace=False))
        Xk[rows, j] = Xk[gen.permutation(rows), j]
    return Perturbed(Xk, None, (), None, None, (f"{size} records' values permuted in {len(cols)} column(s)",))


def keeps(method, opts):
    return "the variable's values: mean, variance, quantiles", "(relations with other variables attenuated)"
