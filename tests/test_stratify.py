"""Iterative stratification (Sechidis et al. 2011) against the reference package's folds."""
from __future__ import annotations

import numpy as np
import pytest

from malt.numerics.stratify import iterative_stratification
from tests.conftest import require_reference


def deviation(Y: np.ndarray, ids: np.ndarray, folds: int) -> float:
    """Sechidis et al.'s label distribution (LD) spread: mean over labels and folds of
    |positives of the label in the fold − its share|, in rows."""
    share = Y.sum(0) / folds
    return float(np.mean([np.abs(Y[ids == f].sum(0) - share) for f in range(folds)]))


def rare_label_matrix(seed=0, n=300, L=25):
    rng = np.random.default_rng(seed)
    p = np.geomspace(0.3, 0.01, L)  # from common to a handful of positives
    Y = (rng.random((n, L)) < p).astype(float)
    Y[rng.integers(n, size=L), np.arange(L)] = 1.0
    return Y


@pytest.mark.parametrize("seed", range(3))
def test_label_distribution_per_fold_matches_the_reference_package(seed):
    ml = require_reference("iterstrat.ml_stratifiers")
    Y = rare_label_matrix(seed)
    folds = 5
    ours = iterative_stratification(Y, folds, np.random.default_rng(seed))
    theirs = np.empty(len(Y), dtype=int)
    splitter = ml.MultilabelStratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for f, (_, test) in enumerate(splitter.split(np.zeros((len(Y), 1)), Y.astype(int))):
        theirs[test] = f
    random = np.random.default_rng(seed).permutation(np.arange(len(Y)) % folds)
    ours_dev, theirs_dev, random_dev = (deviation(Y, ids, folds) for ids in (ours, theirs, random))
    assert ours_dev <= theirs_dev * 1.25 + 0.05, (ours_dev, theirs_dev)
    assert ours_dev < 0.6 * random_dev, (ours_dev, random_dev)
    # every label with at least as many positives as folds reaches every fold, in both
    for ids in (ours, theirs):
        enough = Y.sum(0) >= folds
        present = np.array([[Y[ids == f, j].sum() > 0 for f in range(folds)] for j in range(Y.shape[1])])
        assert present[enough].all()
    sizes = np.bincount(ours, minlength=folds)
    assert sizes.max() - sizes.min() <= 2


def test_folds_are_reproducible_and_handle_unknown_and_empty_rows():
    Y = rare_label_matrix(4, n=60, L=6)
    Y[:5] = 0.0
    Y[7, 2] = np.nan
    a = iterative_stratification(Y, 3, np.random.default_rng(9))
    b = iterative_stratification(Y, 3, np.random.default_rng(9))
    np.testing.assert_array_equal(a, b)
    assert set(a) == {0, 1, 2}
    assert iterative_stratification(Y[:2], 5, np.random.default_rng(0)).max() <= 1
