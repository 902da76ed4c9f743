"""Multi-label measures against scikit-learn (where they overlap) and brute force (one-error)."""
import numpy as np
import pytest
from sklearn import metrics as skm

from malt.tasks import metrics


@pytest.fixture(params=[0, 1, 2])
def case(request):
    rng = np.random.default_rng(request.param)
    Y = (rng.random((60, 7)) < 0.35).astype(float)
    Y[Y.sum(1) == 0, rng.integers(0, 7)] = 1  # every instance has a relevant label (coverage convention)
    S = np.round(rng.normal(size=Y.shape), 1)  # rounding creates ties
    return Y, S


def test_ranking_loss_matches_sklearn(case):
    Y, S = case
    assert metrics.ranking_loss(Y, S) == pytest.approx(skm.label_ranking_loss(Y, S))


def test_average_precision_matches_sklearn(case):
    Y, S = case
    assert metrics.average_precision(Y, S) == pytest.approx(skm.label_ranking_average_precision_score(Y, S))


def test_coverage_is_sklearn_coverage_minus_one(case):
    Y, S = case
    assert metrics.coverage(Y, S) == pytest.approx(skm.coverage_error(Y, S) - 1)


def test_hamming_f1_and_auc_match_sklearn(case):
    Y, S = case
    P = (S > 0).astype(float)
    assert metrics.hamming_loss(Y, P) == pytest.approx(skm.hamming_loss(Y, P))
    assert metrics.f1_micro(Y, P) == pytest.approx(skm.f1_score(Y, P, average="micro"))
    assert metrics.f1_macro(Y, P) == pytest.approx(skm.f1_score(Y, P, average="macro", zero_division=1.0))
    assert metrics.auc_macro(Y, S) == pytest.approx(skm.roc_auc_score(Y, S, average="macro"))
    assert metrics.example_accuracy(Y, P) == pytest.approx(skm.jaccard_score(Y, P, average="samples",
                                                                             zero_division=1.0))


def test_one_error_brute_force(case):
    """Ties count against the ranking, as in every ranking measure: an instance is an error unless
    every label tied at its top score is relevant (not whichever tied label comes first)."""
    Y, S = case
    expected = np.mean([any(Y[i, l] != 1 for l in range(Y.shape[1]) if S[i, l] == S[i].max())
                        for i in range(len(Y))])
    assert metrics.one_error(Y, S) == pytest.approx(expected)
    # column order never matters
    assert metrics.one_error(Y[:, ::-1], S[:, ::-1]) == pytest.approx(expected)


def test_undefined_cases_follow_the_declared_conventions():
    """Hand-computed: rows without a relevant label leave average precision (MULAN's
    AveragePrecision skips them) but count 0 in ranking loss and 1 in one-error; a label with no
    positive in truth or prediction leaves macro-F1; a fold with nothing defined is NaN."""
    Y = np.array([[1, 0, 0], [0, 0, 0]], dtype=float)
    S = np.array([[0.9, 0.1, 0.2], [0.5, 0.4, 0.3]])
    assert metrics.average_precision(Y, S) == 1.0  # only the first row counts
    assert metrics.ranking_loss(Y, S) == 0.0
    assert metrics.one_error(Y, S) == 0.5
    P = np.array([[1, 0, 0], [0, 0, 0]], dtype=float)
    assert metrics.f1_macro(Y, P) == 1.0  # labels 2 and 3: no positive anywhere, left out
    assert np.isnan(metrics.average_precision(Y[1:], S[1:]))
    assert np.isnan(metrics.f1_micro(np.zeros((2, 3)), np.zeros((2, 3))))


def test_npmi_coherence_by_hand():
    """Bouma's NPMI with document co-occurrence on four documents (presence, not counts):
    d1 = {a, b}, d2 = {a, b, c}, d3 = {a}, d4 = {c}; word d occurs nowhere.
    P(a) = 3/4, P(b) = P(c) = 1/2, P(a,b) = 1/2, P(a,c) = P(b,c) = 1/4, so
    NPMI(a,b) = log(4/3)/log 2, NPMI(a,c) = log(2/3)/log 4, NPMI(b,c) = 0; a pair with d scores -1."""
    docs = np.array([[2, 1, 0, 0], [1, 3, 1, 0], [5, 0, 0, 0], [0, 0, 1, 0]])
    abc = (np.log(4 / 3) / np.log(2) + np.log(2 / 3) / np.log(4) + 0.0) / 3
    assert metrics.npmi_coherence([[0, 1, 2]], docs) == pytest.approx(abc, abs=1e-12)
    with_d = (-1.0 - 1.0 + np.log(4 / 3) / np.log(2)) / 3  # topic (d, a, b)
    assert metrics.npmi_coherence([[0, 1, 2], [3, 0, 1]], docs) == pytest.approx((abc + with_d) / 2, abs=1e-12)
    everywhere = np.ones((3, 2))
    assert metrics.npmi_coherence([[0, 1]], everywhere) == 1.0
    import scipy.sparse as sp
    assert metrics.npmi_coherence([[2, 1, 0]], sp.csr_matrix(docs)) == pytest.approx(abc, abs=1e-12)
    with pytest.raises(ValueError):
        metrics.npmi_coherence([[0]], docs)
