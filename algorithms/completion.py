"""What the missing task's self-tuning completion methods share: their training entries, which of
them are held out, and the loss they are judged by.

Every choice is made on the *training* entries of a split (the observed entries of M): a random
1/inner_folds of them is hidden, each candidate completes the rest, and the hidden ones are scored.

The loss: for a real matrix the squared error; for a label matrix (±c, scored by the task by sign)
the squared hinge loss max(0, 1 − y·m̂/c)² with y = sign of the truth — a smooth, classification-
calibrated surrogate of the sign error (Bartlett, Jordan & McAuliffe 2006) that, unlike the squared
error, does not penalise a confident estimate on the right side of zero. Measured on the MULAN sets
(PMA's inner choice, folds 0–2, 10 and 25 % hidden; hidden entries of the outer folds read only to
compare the criteria, never to choose): the sign error itself tied often (enron, 6 % positives) and
was noisy on small sets (emotions at 10 %: 14.6 against 14.0 % for the squared hinge); the squared
error chose too much noise on enron (4.45 against 4.35 %).
"""
from __future__ import annotations

import numpy as np

from malt.errors import DataError
from malt.numerics.selection import holdout_ids
from malt.splits import RatingsSplit

from .recommenders import training_triplets


def holdout_loss(estimate: np.ndarray, truth: np.ndarray, kind: str) -> float:
    """Mean validation loss of ``estimate`` against ``truth`` (same shape): squared hinge on the sign for
    kind 'labels' (truth ±c), squared error for 'real'. Lower is better."""
    estimate, truth = np.asarray(estimate, dtype=float), np.asarray(truth, dtype=float)
    if kind == "labels":
        scale = np.where(truth != 0, np.abs(truth), 1.0)
        return float(np.mean(np.maximum(0.0, 1.0 - np.sign(truth) * estimate / scale) ** 2))
    return float(np.mean((estimate - truth) ** 2))


def hold_out(M: np.ndarray, fraction: float, rng: np.random.Generator):
    """(M with a random ``fraction`` of its observed entries set to NaN, their rows, their columns)."""
    rows, cols = np.nonzero(~np.isnan(M))
    val = np.flatnonzero(holdout_ids(rows.size, fraction, rng) == 0)
    inner = np.array(M, dtype=float, copy=True)
    inner[rows[val], cols[val]] = np.nan
    return inner, rows[val], cols[val]


def observed_entries(split, who: str = "This method"):
    """(rows, cols, values, shape, kind) of the training entries of a missing split (the non-NaN entries
    of M; kind 'labels' or 'real') or a ratings split (kind 'real'); DataError naming ``who`` for a
    matrix it cannot complete."""
    if isinstance(split, RatingsSplit):
        return (*training_triplets(split.train), "real")
    M = np.asarray(split.M, dtype=float)
    if M.ndim != 2:
        raise DataError(f"{who} needs a 2-D matrix, got shape {M.shape}.")
    rows, cols = np.nonzero(~np.isnan(M))
    if rows.size == 0:
        raise DataError(f"The matrix has no observed entry; {who} has nothing to fit.")
    return rows, cols, M[rows, cols], M.shape, split.kind
