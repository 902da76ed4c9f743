"""Figure 3.8's 1-D class-separation statistic (figures.d/scripts/fig_3_8.py: interval_error)."""
from itertools import permutations

import numpy as np
import pytest

from tests.helpers import figure_script


@pytest.fixture(scope="module")
def fg():
    return figure_script("fig_3_8")


def brute_force(e, y):
    """Every class order and every pair of cut points (3 classes): the fewest misplaced points / n."""
    ys = np.asarray(y)[np.argsort(e, kind="stable")]
    n, best = len(ys), 0
    for perm in permutations(np.unique(ys)):
        for i in range(n + 1):
            for j in range(i, n + 1):
                correct = np.sum(ys[:i] == perm[0]) + np.sum(ys[i:j] == perm[1]) + np.sum(ys[j:] == perm[2])
                best = max(best, correct)
    return 1 - best / n


def test_hand_example_two_classes(fg):
    # sorted classes 0 0 1 0 1 1: any single cut misplaces one point (cut after 2 or after 4)
    assert fg.interval_error(np.arange(6.0), [0, 0, 1, 0, 1, 1]) == pytest.approx(1 / 6)
    assert fg.interval_error(np.array([5.0, 9, 1, 2]), [1, 1, 0, 0]) == 0.0


def test_matches_brute_force_and_is_invariant_to_sign_and_scale(fg):
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.integers(0, 3, 12)
        y[:3] = [0, 1, 2]
        e = rng.normal(size=12) + 0.8 * y
        expected = brute_force(e, y)
        assert fg.interval_error(e, y) == pytest.approx(expected)
        assert fg.interval_error(-3.0 * e + 7, y) == pytest.approx(expected)
