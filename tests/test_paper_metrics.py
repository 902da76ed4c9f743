"""Rai & Daumé's Table 1 measures (malt/tasks/paper_metrics.py) on a case computed by hand, and against
scikit-learn where a definition coincides with one of its functions."""
from __future__ import annotations

import numpy as np
import pytest

from malt.tasks import metrics
from malt.tasks.paper_metrics import (decision_auc, implied_pooled_rates, macro_f1, micro_f1, overall_accuracy,
                                rai_daume_scores)

# 4 instances × 3 labels. Per label (TP, FP, FN, TN):
#   label 0: Y 1010, P 1000 -> (1, 0, 1, 2): F1 2/3, TPR 1/2, TNR 1   -> area 3/4
#   label 1: Y 0100, P 1100 -> (1, 1, 0, 2): F1 2/3, TPR 1,   TNR 2/3 -> area 5/6
#   label 2: Y 1101, P 0101 -> (2, 0, 1, 1): F1 4/5, TPR 2/3, TNR 1   -> area 5/6
Y = np.array([[1, 0, 1], [0, 1, 1], [1, 0, 0], [0, 0, 1]])
P = np.array([[1, 1, 0], [0, 1, 1], [0, 0, 0], [0, 0, 1]])


def test_hand_computed_case():
    assert overall_accuracy(Y, P) == pytest.approx(9 / 12)         # 1 + 3 + 2 + 3 entries right
    assert macro_f1(Y, P) == pytest.approx((2 / 3 + 2 / 3 + 4 / 5) / 3)
    assert micro_f1(Y, P) == pytest.approx(8 / 11)                  # TP 4, FP 1, FN 2
    assert decision_auc(Y, P) == pytest.approx((3 / 4 + 5 / 6 + 5 / 6) / 3)
    assert rai_daume_scores(Y, P) == {"rd_accuracy": overall_accuracy(Y, P), "rd_f1_macro": macro_f1(Y, P),
                                      "rd_f1_micro": micro_f1(Y, P), "rd_auc": decision_auc(Y, P)}


def test_conventions_for_a_label_without_positives():
    """An all-negative label, never predicted: F1 0 (malt's standard f1_macro leaves it out), no ROC curve."""
    Y4, P4 = np.hstack([Y, np.zeros((4, 1), int)]), np.hstack([P, np.zeros((4, 1), int)])
    assert macro_f1(Y4, P4) == pytest.approx(3 / 4 * macro_f1(Y, P))
    assert metrics.f1_macro(Y4, P4) == pytest.approx(macro_f1(Y, P))
    assert decision_auc(Y4, P4) == pytest.approx(decision_auc(Y, P))
    assert np.isnan(decision_auc(np.ones((3, 2)), np.ones((3, 2))))


def test_against_scikit_learn_on_random_decisions():
    from sklearn.metrics import f1_score, hamming_loss, roc_auc_score

    rng = np.random.default_rng(0)
    Yr, Pr = (rng.random((200, 7)) < 0.3).astype(int), (rng.random((200, 7)) < 0.4).astype(int)
    assert overall_accuracy(Yr, Pr) == pytest.approx(1 - hamming_loss(Yr, Pr))
    assert micro_f1(Yr, Pr) == pytest.approx(f1_score(Yr, Pr, average="micro"))
    assert macro_f1(Yr, Pr) == pytest.approx(f1_score(Yr, Pr, average="macro", zero_division=0))
    # the ROC area of 0/1 decisions (ties count one half) is (TPR + TNR) / 2
    assert decision_auc(Yr, Pr) == pytest.approx(np.mean([roc_auc_score(Yr[:, j], Pr[:, j]) for j in range(7)]))
    # the standard accuracy is a different measure (Jaccard), so the two tables can disagree
    assert abs(metrics.example_accuracy(Yr, Pr) - overall_accuracy(Yr, Pr)) > 0.1


def test_shapes_are_checked():
    with pytest.raises(ValueError, match="same shape"):
        overall_accuracy(Y, P[:, :2])


def test_implied_pooled_rates_read_the_counts_back():
    """The hand-computed case: accuracy 9/12 and micro-F1 8/11 at density 6/12 give back the pooled
    TPR 4/6 (TP 4 of 6 positives) and FPR 1/6 (FP 1 of 6 negatives)."""
    tpr, fpr = implied_pooled_rates(overall_accuracy(Y, P), micro_f1(Y, P), Y.mean())
    assert (tpr, fpr) == (pytest.approx(4 / 6), pytest.approx(1 / 6))
