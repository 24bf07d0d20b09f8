"""The Dask engine's swap (sdccore._core.exchange): every group's permutation is uniform
over all records and independent of the others, checked by counting permutations over
thousands of seeds on tiny files with uneven partitions (the numpy steps the Dask tasks
run, called directly), and the Dask wiring checked on a synchronous scheduler."""

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from sdccore._core.exchange import _gather, _scatter, _write_counts, exchange, exchange_counts


def permute(lengths, seed, groups, scratch, A):
    """What ``exchange`` runs, step by step, without Dask: counts, scatter per source, gather
    per destination."""
    _write_counts(lengths, seed, groups, str(scratch))
    at = np.concatenate([[0], np.cumsum(lengths)])
    for s in range(len(lengths)):
        _scatter(A[at[s]:at[s + 1]], str(scratch), seed, groups, block_info=[{"chunk-location": (s, 0)}])
    return np.concatenate([_gather(str(scratch), d, ld, len(lengths), seed, groups) for d, ld in enumerate(lengths)])


def test_every_permutation_equally_likely_with_uneven_partitions(tmp_path):
    """4 records in partitions of 1, 2 and 1 (and an empty one): all 24 orders, 50 times each
    in expectation over 1,200 seeds.  A swap within partitions reaches only 2 of them; counts
    drawn from the wrong distribution tilt the frequencies.

    1,200 seeds, not 2,400 (a seed's files are most of the time): the chi-square p-value is
    a p-value at any count (50 expected in each cell, far above the 5 the test needs), so a
    uniform swap fails 1 time in 1,000 as before; the tilt it finds 99 times in 100 is
    w = 0.23 (Cohen's w; 0.16 with 2,400 seeds).  Counts that sent partition 0's record to
    the three partitions alike, not 1:2:1 by their lengths, tilt by w = 0.33."""
    lengths = [1, 0, 2, 1]
    A = np.arange(4, dtype=float)[:, None]
    seen = Counter(tuple(permute(lengths, seed, [(0, [0])], tmp_path, A)[:, 0].astype(int)) for seed in range(1200))
    assert len(seen) == 24 and sum(seen.values()) == 1200
    p = stats.chisquare(list(seen.values())).pvalue
    assert p > 1e-3, (p, seen)


def test_groups_are_independent_and_rows_of_a_group_move_together(tmp_path):
    """Two groups on 3 records in partitions of 2 and 1: the 36 pairs of orders are equally
    likely (independent streams), and a group's two columns keep their rows together.

    900 seeds, not 1,800: 25 expected in each of the 36 cells (chi-square needs 5); the tilt
    found 99 times in 100 is w = 0.28 (0.20 with 1,800 seeds).  Two groups sharing one
    stream reach 6 of the 36 pairs, which the count of pairs catches at any number."""
    lengths = [2, 1]
    A = np.column_stack([np.arange(3), np.arange(3), 10 * np.arange(3)]).astype(float)
    pairs = Counter()
    for seed in range(900):
        P = permute(lengths, seed, [(0, [0]), (1, [1, 2])], tmp_path, A)
        assert np.array_equal(P[:, 2], 10 * P[:, 1])
        pairs[(tuple(P[:, 0].astype(int)), tuple(P[:, 1].astype(int)))] += 1
    assert len(pairs) == 36
    assert stats.chisquare(list(pairs.values())).pvalue > 1e-3


def test_counts_have_the_uniform_permutations_margins_and_means():
    """Row and column sums are the partition lengths; over 2,000 draws each cell's mean is
    ls * ld / n (hypergeometric) within 5 standard errors, and its variance is the
    multivariate hypergeometric one."""
    lengths = np.array([5, 0, 3, 8, 4])
    n = lengths.sum()
    rng = np.random.default_rng(0)
    draws = np.array([exchange_counts(lengths, rng) for _ in range(2000)])
    assert np.all(draws.sum(axis=2) == lengths) and np.all(draws.sum(axis=1) == lengths)
    # the first row is MVHG(lengths, l0); cell (0, d): hypergeometric(ld, n - ld, l0)
    l0 = lengths[0]
    mean = l0 * lengths / n
    var = l0 * (lengths / n) * (1 - lengths / n) * (n - l0) / (n - 1)
    se = np.sqrt(var / len(draws)) + 1e-12
    assert np.all(np.abs(draws[:, 0].mean(0) - mean) < 5 * se)
    # any cell, by symmetry of the uniform permutation: mean ls * ld / n
    expect = np.outer(lengths, lengths) / n
    assert np.abs(draws.mean(0) - expect).max() < 0.15
    np.testing.assert_allclose(draws[:, 0].var(0), var, rtol=0.15, atol=1e-12)


def test_through_dask_the_same_as_step_by_step(tmp_path):
    """The Dask wiring (map_blocks scatter, delayed gather) gives the same bytes as the steps
    called directly, every record exactly once per column, and chunks of the partitions."""
    import dask

    dask_array = pytest.importorskip("dask.array")
    lengths = [300, 0, 517, 1000, 183]
    rng = np.random.default_rng(1)
    A = rng.standard_normal((sum(lengths), 5))
    groups = [(0, [0]), (1, [1]), (10 ** 5, [2, 3, 4])]
    with dask.config.set(scheduler="synchronous"):
        P = exchange(dask_array.from_array(A, chunks=(tuple(lengths), 5)), lengths, 9, groups, str(tmp_path / "a"))
        assert P.chunks[0] == tuple(lengths)
        got = P.compute()
    want = permute(lengths, 9, groups, tmp_path / "b", A)
    assert np.array_equal(got, want)
    for j in range(5):
        assert np.array_equal(np.sort(got[:, j]), np.sort(A[:, j]))
    # the residual group's rows are whole rows of A
    rows = {tuple(r) for r in A[:, 2:]}
    assert all(tuple(r) in rows for r in got[:, 2:])
    # a swap over all records: the partitions' means move (a within-partition swap keeps them)
    assert abs(got[300:817, 0].mean() - A[300:817, 0].mean()) > 1e-3
    assert not math.isclose(got[:300, 1].sum(), A[:300, 1].sum())


def test_more_than_a_billion_records_refused(tmp_path):
    import dask.array as da

    A = da.zeros((10 ** 9, 1), chunks=(10 ** 8, 1))
    with pytest.raises(ValueError, match="at most 999,999,999"):
        exchange(A, [10 ** 8] * 10, 0, [(0, [0])], str(tmp_path))
