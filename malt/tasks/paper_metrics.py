"""Multi-label measures as Rai & Daumé (2009, §5.2, Table 1) report them, beside malt's standard ones.

The paper names its measures — "overall accuracy, F1-Macro, F1-Micro, and AUC (Area Under ROC
Curve)" — without formulas, and its numbers match none of the usual per-label readings (an SVM's
macro AUC from real-valued scores is 0.63–0.71 on yeast, the paper's 0.50–0.54). The readings below
are the ones its Table 1 is consistent with: given "overall accuracy" as the fraction of correct
label entries, each row's accuracy and micro-F1 fix the pooled true- and false-positive rates (yeast,
Full: TPR 0.47, FPR 0.40), and the area under the ROC curve of those 0/1 decisions,
(TPR + 1 − FPR) / 2, lands in the range of the paper's AUC column (0.53–0.62 pooled against 0.50–0.54
macro on yeast; 0.55–0.62 against 0.61–0.67 on scene). So AUC is computed from the label decisions,
not from scores.

All functions take Y (n, L) with entries 0/1 (truth) and P (n, L) with entries 0/1 (decisions) and
cost O(nL). ``Y`` rows with NaN entries are the caller's to drop (as the multilabel task does).

Names proposed for the multilabel task's declaration (all "higher is better", shown in per cent):

=================  ==========================================  =========================
name               label                                       function
=================  ==========================================  =========================
rd_accuracy        Overall accuracy (Rai & Daumé)              `overall_accuracy`
rd_f1_macro        Macro-F1 (Rai & Daumé)                      `macro_f1`
rd_f1_micro        Micro-F1 (Rai & Daumé)                      `micro_f1`
rd_auc             AUC of label decisions (Rai & Daumé)        `decision_auc`
=================  ==========================================  =========================
"""
from __future__ import annotations

import numpy as np


def _bool(Y, P):
    Y, P = np.asarray(Y), np.asarray(P)
    if Y.shape != P.shape or Y.ndim != 2:
        raise ValueError(f"Y and P must be (n, L) arrays of the same shape, got {Y.shape} and {P.shape}")
    return Y.astype(bool), P.astype(bool)


def overall_accuracy(Y, P) -> float:
    """Fraction of the n·L (instance, label) entries decided correctly: 1 − Hamming loss.

    malt's standard ``accuracy`` is the example-based Jaccard index |Y ∩ P| / |Y ∪ P| instead.
    """
    Y, P = _bool(Y, P)
    return float(np.mean(Y == P))


def macro_f1(Y, P) -> float:
    """Mean over labels of 2TP / (2TP + FP + FN); a label with no positive and no positive decision
    in the test rows scores 0 (malt's standard ``f1_macro`` scores it 1)."""
    Y, P = _bool(Y, P)
    tp, fp, fn = (Y & P).sum(0), (~Y & P).sum(0), (Y & ~P).sum(0)
    denom = 2 * tp + fp + fn
    return float(np.mean(np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 0.0)))


def micro_f1(Y, P) -> float:
    """2TP / (2TP + FP + FN) with the counts pooled over every entry (the standard micro-F1)."""
    Y, P = _bool(Y, P)
    tp, fp, fn = (Y & P).sum(), (~Y & P).sum(), (Y & ~P).sum()
    return float(2 * tp / max(2 * tp + fp + fn, 1))


def decision_auc(Y, P) -> float:
    """Mean over labels of the area under the ROC curve of the 0/1 decisions, (TPR + TNR) / 2.

    With binary decisions the ROC curve has one interior point (FPR, TPR), and the area under the
    polyline (0, 0) – (FPR, TPR) – (1, 1) is (TPR + 1 − FPR) / 2 (it equals the Mann–Whitney AUC of
    the decisions with ties counted one half). Labels whose test rows are all positive or all
    negative have no ROC curve and are left out; NaN when no label has both classes.
    """
    Y, P = _bool(Y, P)
    pos, neg = Y.sum(0), (~Y).sum(0)
    keep = (pos > 0) & (neg > 0)
    if not keep.any():
        return float("nan")
    tpr = (Y & P).sum(0)[keep] / pos[keep]
    tnr = (~Y & ~P).sum(0)[keep] / neg[keep]
    return float(np.mean((tpr + tnr) / 2))


def implied_pooled_rates(accuracy: float, f1_micro: float, density: float) -> tuple[float, float]:
    """Pooled (TPR, FPR) that an overall accuracy (1 − Hamming loss) and a micro-F1 imply at a label
    density P (the fraction of entries that are 1): how Table 1's cells are read back into classifiers.

    Per entry, FP + FN = 1 − accuracy and micro-F1 = 2TP / (2TP + FP + FN), so
    TP = F1 (1 − accuracy) / (2 (1 − F1)), FN = P − TP, FP = (1 − accuracy) − FN, and
    TPR = TP / P, FPR = FP / (1 − P). Exact for any decisions; O(1).
    """
    errors = 1.0 - accuracy
    tp = f1_micro * errors / (2.0 * (1.0 - f1_micro))
    fp = errors - (density - tp)
    return tp / density, fp / (1.0 - density)


def rai_daume_scores(Y, P) -> dict[str, float]:
    """All four measures under the names proposed above."""
    return {"rd_accuracy": overall_accuracy(Y, P), "rd_f1_macro": macro_f1(Y, P),
            "rd_f1_micro": micro_f1(Y, P), "rd_auc": decision_auc(Y, P)}
