"""Folds that keep every label's share: iterative stratification of multi-label data.

Sechidis, Tsoumakas & Vlahavas (2011), "On the stratification of multi-label data", ECML PKDD,
Algorithm 1. Random k-fold splits of multi-label data leave rare labels out of whole folds (a label
with 4 positives misses at least one of 5 folds with probability ≈ 0.62); iterative stratification
deals the rows of the rarest remaining label first, each to the fold that still wants most of that
label (ties: the fold that wants most rows, then at random), so each fold holds each label's count
within a row or two of its share.

Used by the multilabel task's ``stratify='iterative'`` folds and by the inner cross-validation of
label thresholds and hyper-parameters. Cost O(nL) updates plus a Python step per row.
"""
from __future__ import annotations

import numpy as np


def iterative_stratification(Y: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold id (0..folds−1) of each row of the label matrix Y (n, L; 1 relevant, 0 or NaN not).

    Equal fold sizes are desired (r_j = 1/folds). Rows with no relevant label are dealt last, each to
    the fold furthest below its desired size. ``folds`` is capped at n.
    """
    Y = np.nan_to_num(np.asarray(Y, dtype=float), nan=0.0) > 0.5
    n, L = Y.shape
    folds = max(1, min(int(folds), n))
    ids = np.full(n, -1, dtype=np.int64)
    want_rows = np.full(folds, n / folds)
    want_label = np.tile(Y.sum(0) / folds, (folds, 1))  # c_j^i: desired positives of label i in fold j
    remaining = Y.sum(0).astype(float)                    # positives of each label not yet dealt
    left = np.ones(n, dtype=bool)
    while True:
        live = np.flatnonzero(remaining > 0)
        if live.size == 0:
            break
        fewest = live[remaining[live] == remaining[live].min()]
        label = int(rng.choice(fewest))
        rows = np.flatnonzero(left & Y[:, label])
        for row in rng.permutation(rows):
            wanted = want_label[:, label]
            cand = np.flatnonzero(wanted == wanted.max())
            if cand.size > 1:
                sizes = want_rows[cand]
                cand = cand[sizes == sizes.max()]
            fold = int(cand[0] if cand.size == 1 else rng.choice(cand))
            ids[row] = fold
            left[row] = False
            want_rows[fold] -= 1
            want_label[fold, Y[row]] -= 1
            remaining[Y[row]] -= 1
    for row in rng.permutation(np.flatnonzero(left)):  # rows without a relevant label
        cand = np.flatnonzero(want_rows == want_rows.max())
        fold = int(cand[0] if cand.size == 1 else rng.choice(cand))
        ids[row] = fold
        want_rows[fold] -= 1
    return ids
