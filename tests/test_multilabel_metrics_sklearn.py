"""malt.tasks.metrics' multi-label measures against scikit-learn's independent implementations."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn import metrics as skm

from malt.tasks import metrics


def _case(seed, ties):
    rng = np.random.default_rng(seed)
    Y = (rng.random((200, 7)) < 0.35).astype(float)
    Y[:5] = 0.0  # instances with no relevant label
    Y[5:8] = 1.0  # and with every label relevant
    S = rng.normal(size=Y.shape) + Y
    if ties:
        S = np.round(S)  # many tied scores
    return Y, S


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ties", [False, True])
def test_ranking_measures_match_sklearn(seed, ties):
    Y, S = _case(seed, ties)
    assert metrics.ranking_loss(Y, S) == pytest.approx(skm.label_ranking_loss(Y, S), abs=1e-12)
    has = Y.any(1)  # average precision and coverage are defined for instances with a relevant label
    assert metrics.average_precision(Y, S) == pytest.approx(
        skm.label_ranking_average_precision_score(Y[has], S[has]), abs=1e-12)
    assert metrics.coverage(Y[has], S[has]) == pytest.approx(skm.coverage_error(Y[has], S[has]) - 1, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_hamming_and_one_error(seed):
    Y, S = _case(seed, False)
    P = (S > 0.5).astype(float)
    assert metrics.hamming_loss(Y, P) == pytest.approx(skm.hamming_loss(Y, P), abs=1e-12)
    # one-error: top-1 precision miss, i.e. 1 − top_k_accuracy with k = 1 over instances' own labels
    # (continuous scores: no ties at the top)
    top = np.argmax(S, axis=1)
    assert metrics.one_error(Y, S) == pytest.approx(1 - np.mean([Y[i, t] for i, t in enumerate(top)]))
