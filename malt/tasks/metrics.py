"""Evaluation measures, vectorised over instances.

Multi-label measures follow the dissertation's definitions (4.13–4.17) with one set of conventions
for every ranking measure, which MULAN (whose numbers the papers and the benchmark comparisons
quote; mulan.evaluation.measure) shares where it is defined:

* **Ties count against the ranking** (the pessimistic rank: a label tied with another ranks below
  it): ranking loss counts a tied (relevant, irrelevant) pair as wrong, average precision and
  coverage count tied labels as ranked above, and one-error is 1 unless every label tied at the top
  score is relevant. (MULAN breaks ties by label index, which rewards an arbitrary column order.)
* **Rows without a relevant label**: average precision is undefined there and the row is left out
  (MULAN's AveragePrecision does the same); ranking loss and coverage count such a row as 0 and
  one-error as 1 (as MULAN and scikit-learn do). A measure with no defined row on a fold is NaN.
* **Labels absent from a fold**: macro-F1 leaves out a label with no positive in the truth and
  none predicted (undefined; MULAN counts it as 1, scikit-learn as 0), macro AUC a label without
  both classes; micro-F1 with no positive at all is NaN.

Where they overlap with scikit-learn on rows where both are defined they agree:

* ranking_loss      == sklearn.metrics.label_ranking_loss
* average_precision == sklearn.metrics.label_ranking_average_precision_score (rows with a relevant label)
* coverage          == sklearn.metrics.coverage_error - 1 (instances with a relevant label)
* hamming_loss      == sklearn.metrics.hamming_loss
"""
from __future__ import annotations

import numpy as np


def _ranks(S: np.ndarray) -> np.ndarray:
    """rank[d, l] = #{l' : S[d, l'] >= S[d, l]} — the pessimistic rank under ties (1 = top)."""
    return (S[:, None, :] >= S[:, :, None]).sum(axis=2)


def _mean(values: np.ndarray) -> float:
    return float(np.mean(values)) if values.size else float("nan")


def one_error(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.13) fraction of instances whose top-ranked label is not relevant; with ties at the top
    score, an instance counts as an error unless every tied label is relevant."""
    Y = Y.astype(bool)
    top = S >= S.max(axis=1, keepdims=True)
    return _mean((top & ~Y).any(axis=1).astype(float))


def average_precision(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.14) mean over relevant labels of (#relevant ranked at least as high) / rank, over the
    instances that have a relevant label."""
    Y = Y.astype(bool)
    defined = Y.any(1)
    Y, S = Y[defined], S[defined]
    above = S[:, None, :] >= S[:, :, None]  # above[d, l, l'] : l' ranks at least as high as l
    rank = above.sum(2)
    rel_above = (above & Y[:, None, :]).sum(2)
    per = np.where(Y, rel_above / rank, 0.0).sum(1) / Y.sum(1).clip(min=1)
    return _mean(per)


def coverage(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.15) how far down the ranking one goes to cover every relevant label, minus one."""
    Y = Y.astype(bool)
    lowest = np.where(Y, S, np.inf).min(1)
    depth = (S >= lowest[:, None]).sum(1)
    return _mean(np.where(Y.any(1), depth - 1, 0).astype(float))


def ranking_loss(Y: np.ndarray, S: np.ndarray) -> float:
    """(4.17) fraction of (relevant, irrelevant) pairs with g(relevant) <= g(irrelevant); an
    instance without such pairs counts as 0."""
    Y = Y.astype(bool)
    wrong = (S[:, :, None] <= S[:, None, :]) & Y[:, :, None] & ~Y[:, None, :]
    pairs = Y.sum(1) * (~Y).sum(1)
    return _mean(np.where(pairs > 0, wrong.sum((1, 2)) / np.maximum(pairs, 1), 0.0))


def hamming_loss(Y: np.ndarray, P: np.ndarray) -> float:
    """(4.16) fraction of instance-label pairs predicted wrongly."""
    return _mean((Y.astype(bool) != P.astype(bool)).ravel().astype(float))


def example_accuracy(Y: np.ndarray, P: np.ndarray) -> float:
    """Mean Jaccard index |Y ∩ P| / |Y ∪ P| per instance (1 when both are empty, as MULAN)."""
    Y, P = Y.astype(bool), P.astype(bool)
    union = (Y | P).sum(1)
    return _mean(np.where(union > 0, (Y & P).sum(1) / np.maximum(union, 1), 1.0))


def f1_micro(Y: np.ndarray, P: np.ndarray) -> float:
    """F1 of all instance-label pairs pooled; NaN when there is no positive in truth or prediction."""
    Y, P = Y.astype(bool), P.astype(bool)
    tp, fp, fn = (Y & P).sum(), (~Y & P).sum(), (Y & ~P).sum()
    denom = 2 * tp + fp + fn
    return float(2 * tp / denom) if denom else float("nan")


def f1_macro(Y: np.ndarray, P: np.ndarray) -> float:
    """Mean F1 over the labels where it is defined (a label with no positive in the truth and none
    predicted is left out)."""
    Y, P = Y.astype(bool), P.astype(bool)
    tp, fp, fn = (Y & P).sum(0), (~Y & P).sum(0), (Y & ~P).sum(0)
    denom = 2 * tp + fp + fn
    return _mean(2 * tp[denom > 0] / denom[denom > 0])


def auc_macro(Y: np.ndarray, S: np.ndarray) -> float:
    """Mean ROC AUC over the labels that have both classes in Y (Mann–Whitney with tied ranks)."""
    from scipy.stats import rankdata

    Y = Y.astype(bool)
    pos, neg = Y.sum(0), (~Y).sum(0)
    keep = (pos > 0) & (neg > 0)
    if not keep.any() or Y.shape[0] == 0:
        return float("nan")
    R = rankdata(S[:, keep], axis=0)
    u = (R * Y[:, keep]).sum(0) - pos[keep] * (pos[keep] + 1) / 2
    return float(np.mean(u / (pos[keep] * neg[keep])))


def multilabel_scores(Y: np.ndarray, scores: np.ndarray, labels: np.ndarray,
                      labels_f1: np.ndarray | None = None, labels_f1_macro: np.ndarray | None = None
                      ) -> dict[str, float]:
    """Every multi-label measure of the `multilabel` task for one fold; micro-F1 and Jaccard accuracy from
    ``labels_f1`` when given (decisions learned for them), else from ``labels``; macro-F1 from
    ``labels_f1_macro`` when given, else from ``labels_f1``'s set."""
    labels_f1 = labels if labels_f1 is None else labels_f1
    labels_f1_macro = labels_f1 if labels_f1_macro is None else labels_f1_macro
    return {
        "one_error": one_error(Y, scores),
        "average_precision": average_precision(Y, scores),
        "coverage": coverage(Y, scores),
        "hamming_loss": hamming_loss(Y, labels),
        "ranking_loss": ranking_loss(Y, scores),
        "accuracy": example_accuracy(Y, labels_f1),
        "f1_micro": f1_micro(Y, labels_f1),
        "f1_macro": f1_macro(Y, labels_f1_macro),
        "auc": auc_macro(Y, scores),
    }


def sign_error(truth: np.ndarray, estimate: np.ndarray) -> float:
    """Fraction of entries whose predicted sign differs (estimate > 0 means positive)."""
    return float(np.mean((truth > 0) != (estimate > 0)))


def rmse(truth: np.ndarray, estimate: np.ndarray) -> float:
    return float(np.sqrt(np.mean((truth - estimate) ** 2)))


def mae(truth: np.ndarray, estimate: np.ndarray) -> float:
    return float(np.mean(np.abs(truth - estimate)))


def npmi_coherence(top_word_ids: np.ndarray, docs) -> float:
    """Topic coherence: the mean over topics of the mean NPMI of each topic's top-word pairs.

    NPMI(w_i, w_j) = log(P(w_i, w_j) / (P(w_i) P(w_j))) / −log P(w_i, w_j) (Bouma 2009; as a topic
    coherence, Aletras & Stevenson 2013, Lau, Newman & Baldwin 2014), with P the share of the reference
    documents ``docs`` (D × V counts, dense or sparse) that contain the word(s): whole documents as
    the co-occurrence window, as Mimno et al. (2011) count (Lau et al. slide a word window instead).
    Conventions (Bouma's limits): a pair that never co-occurs (including a word absent from every
    reference document) scores −1; a pair present in every document scores 1. Range [−1, 1].

    ``top_word_ids``: (K, N) vocabulary indices, N ≥ 2 words per topic. Cost O(D N² K).
    """
    import scipy.sparse as sp

    ids = np.asarray(top_word_ids, dtype=int)
    if ids.ndim != 2 or ids.shape[1] < 2:
        raise ValueError(f"top_word_ids must be (topics, words ≥ 2), got shape {ids.shape}")
    present = (sp.csc_matrix(docs) > 0).astype(float)
    n_docs = present.shape[0]
    iu = np.triu_indices(ids.shape[1], k=1)
    per_topic = []
    for row in ids:
        sub = present[:, row]
        joint = np.asarray((sub.T @ sub).todense())[iu] / n_docs
        marginal = np.asarray(sub.sum(axis=0)).ravel() / n_docs
        pi, pj = marginal[iu[0]], marginal[iu[1]]
        npmi = np.full(joint.shape, -1.0)
        together = joint > 0
        everywhere = joint >= 1.0
        inner = together & ~everywhere
        npmi[inner] = np.log(joint[inner] / (pi[inner] * pj[inner])) / -np.log(joint[inner])
        npmi[everywhere] = 1.0
        per_topic.append(npmi.mean())
    return float(np.mean(per_topic))
