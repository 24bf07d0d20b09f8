"""MDAV: the fast kernel gives exactly the partition of a line-by-line port of sdcMicro's C++."""

import numpy as np
import pytest

import sdccore
from mdav_reference import mdav_reference


def _same_partition(a, b):
    return np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(8))
def test_matches_reference_on_random_data(seed):
    rng = np.random.default_rng(seed)
    n, m, k = int(rng.integers(30, 400)), int(rng.integers(1, 6)), int(rng.integers(2, 7))
    X = rng.standard_normal((n, m)) * rng.uniform(0.1, 1000, m)
    if seed % 2:
        X = np.round(X / 50)  # many exact ties in distances
    assert _same_partition(sdccore.mdav_groups(X, k), mdav_reference(X, k))


@pytest.mark.parametrize("k", [2, 3, 5, 10])
def test_matches_reference_on_tarragona(tarragona, k):
    X = tarragona.to_numpy(float)
    fast = sdccore.mdav_groups(X, k)
    ref = mdav_reference(X, k)
    assert _same_partition(fast, ref)
    # rows 159/160 and 760/761 (1-based) are exact duplicates: their distances tie exactly,
    # so only the C++ tie rule (later rows first among equal distances) decides where they go
    assert np.array_equal(X[158], X[159]) and np.array_equal(X[759], X[760])


def test_group_sizes_and_small_inputs():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((101, 3))
    lab = sdccore.mdav_groups(X, 3)
    sizes = np.bincount(lab)
    assert sizes.sum() == 101 and sizes.min() == 3 and sizes.max() <= 5
    # fewer than 2k rows form one group
    assert np.unique(sdccore.mdav_groups(X[:5], 3)).tolist() == [0]
    # 2k..3k-1 rows: one group around the farthest, the rest together
    assert sorted(np.bincount(sdccore.mdav_groups(X[:8], 3)).tolist()) == [3, 5]


def test_hand_example():
    # 1-d: 0,1,2 | 10,11,12 ; centroid 6, farthest = 0 (row 0 ties with row 5? |0-6|=6=|12-6|: lowest row wins)
    X = np.array([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
    lab = sdccore.mdav_groups(X, 3)
    assert lab.tolist() == [0, 0, 0, 1, 1, 1]
