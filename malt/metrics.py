"""Evaluation measures, vectorised over instances.

Multi-label measures follow the dissertation's definitions (4.13–4.17); where they overlap with
scikit-learn they agree with it (ties count against the ranking, an instance whose labels are all
relevant or all irrelevant has ranking loss 0 and average precision 1):

* ranking_loss      == sklearn.metrics.label_ranking_loss
* average_precision == sklearn.metrics.label_ranking_average_precision_score
* coverage          == sklearn.metrics.coverage_error - 1 (instances with a relevant label)
* hamming_loss      == sklearn.metrics.hamming_loss
"""
from __future__ import annotations

import numpy as np


def _ranks(S: np.ndarray) -> np.ndarray:
    """rank[d, l] = #{l' : S[d, l'] >= S[d, l]} — the pessimistic rank under ties (1 = top)."""
    return (S[:, None, :] >= S[:, :, None]).sum(axis=2)


def one_error(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.13) fraction of instances whose top-scored label is not relevant."""
    top = np.argmax(S, axis=1)
    return float(np.mean(Y[np.arange(len(Y)), top] != 1))


def average_precision(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.14) mean over relevant labels of (#relevant ranked at least as high) / rank."""
    Y = Y.astype(bool)
    above = S[:, None, :] >= S[:, :, None]  # above[d, l, l'] : l' ranks at least as high as l
    rank = above.sum(2)
    rel_above = (above & Y[:, None, :]).sum(2)
    n_rel = Y.sum(1)
    per = np.where(Y, rel_above / rank, 0.0).sum(1) / np.maximum(n_rel, 1)
    degenerate = (n_rel == 0) | (n_rel == Y.shape[1])
    return float(np.mean(np.where(degenerate, 1.0, per)))


def coverage(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.15) how far down the ranking one goes to cover every relevant label, minus one."""
    Y = Y.astype(bool)
    lowest = np.where(Y, S, np.inf).min(1)
    depth = (S >= lowest[:, None]).sum(1)
    return float(np.mean(np.where(Y.any(1), depth - 1, 0)))


def ranking_loss(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.17) fraction of (relevant, irrelevant) pairs with g(relevant) <= g(irrelevant)."""
    Y = Y.astype(bool)
    wrong = (S[:, :, None] <= S[:, None, :]) & Y[:, :, None] & ~Y[:, None, :]
    pairs = Y.sum(1) * (~Y).sum(1)
    return float(np.mean(np.where(pairs > 0, wrong.sum((1, 2)) / np.maximum(pairs, 1), 0.0)))


def hamming_loss(Y: np.ndarray, P: np.ndarray) -> float:
    """(4.16) fraction of instance-label pairs predicted wrongly."""
    return float(np.mean(Y.astype(bool) != P.astype(bool)))


def example_accuracy(Y: np.ndarray, P: np.ndarray) -> float:
    """Mean Jaccard index |Y ∩ P| / |Y ∪ P| per instance (1 when both are empty)."""
    Y, P = Y.astype(bool), P.astype(bool)
    union = (Y | P).sum(1)
    return float(np.mean(np.where(union > 0, (Y & P).sum(1) / np.maximum(union, 1), 1.0)))


def f1_micro(Y: np.ndarray, P: np.ndarray) -> float:
    Y, P = Y.astype(bool), P.astype(bool)
    tp, fp, fn = (Y & P).sum(), (~Y & P).sum(), (Y & ~P).sum()
    return float(2 * tp / max(2 * tp + fp + fn, 1))


def f1_macro(Y: np.ndarray, P: np.ndarray) -> float:
    """Mean F1 over labels; a label never present nor predicted scores 1 (perfect)."""
    Y, P = Y.astype(bool), P.astype(bool)
    tp, fp, fn = (Y & P).sum(0), (~Y & P).sum(0), (Y & ~P).sum(0)
    denom = 2 * tp + fp + fn
    return float(np.mean(np.where(denom > 0, 2 * tp / np.maximum(denom, 1), 1.0)))


def auc_macro(Y: np.ndarray, S: np.ndarray) -> float:
    """Mean ROC AUC over the labels that have both classes in Y (Mann–Whitney with tied ranks)."""
    from scipy.stats import rankdata

    Y = Y.astype(bool)
    pos, neg = Y.sum(0), (~Y).sum(0)
    keep = (pos > 0) & (neg > 0)
    if not keep.any():
        return float("nan")
    R = rankdata(S[:, keep], axis=0)
    u = (R * Y[:, keep]).sum(0) - pos[keep] * (pos[keep] + 1) / 2
    return float(np.mean(u / (pos[keep] * neg[keep])))


def multilabel_scores(Y: np.ndarray, scores: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Every multi-label measure of the `multilabel` task for one fold."""
    return {
        "one_error": one_error(Y, scores),
        "average_precision": average_precision(Y, scores),
        "coverage": coverage(Y, scores),
        "hamming_loss": hamming_loss(Y, labels),
        "ranking_loss": ranking_loss(Y, scores),
        "accuracy": example_accuracy(Y, labels),
        "f1_micro": f1_micro(Y, labels),
        "f1_macro": f1_macro(Y, labels),
        "auc": auc_macro(Y, scores),
    }


def sign_error(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Fraction of entries whose predicted sign differs (estimate > 0 means positive)."""
    return float(np.mean((truth > 0) != (estimate > 0)))


def rmse(truth: np.ndarray, estimate: np.ndarray) -> float:
    return float(np.sqrt(np.mean((truth - estimate) ** 2)))


def mae(truth: np.ndarray, estimate: np.ndarray) -> float:
    return float(np.mean(np.abs(truth - estimate)))
