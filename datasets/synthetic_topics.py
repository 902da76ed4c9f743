"""Corpora drawn from the correlated topic model / GPTM (Blei & Lafferty 2006; Agovic 2011 ch. 6):
documents in C classes, η_d ~ N(m_{class(d)}, Σ) with class-specific topic means (so a GP over
documents that links same-class documents is the right prior), θ_d = softmax(η_d), words from
the topics β. Always available (generated, no files)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset


def synthetic_ctm(n_docs: int = 300, vocab_size: int = 200, n_topics: int = 3, n_classes: int = 3,
                  doc_length: int = 80, topic_sparsity: float = 0.05, class_spread: float = 1.5,
                  seed: int = 0) -> Dataset:
    """One corpus from the model. Components: ``docs`` (CSR counts), ``vocab``, ``y`` (class ids),
    ``X`` (l2-normalised counts), and the truth ``beta`` (K, V), ``eta`` (D, K), ``Sigma`` (K, K)."""
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(vocab_size, topic_sparsity), size=n_topics)
    A = rng.standard_normal((n_topics, n_topics))
    Sigma = 0.5 * (A @ A.T) / n_topics + 0.5 * np.eye(n_topics)
    means = class_spread * rng.standard_normal((n_classes, n_topics))
    y = np.arange(n_docs) % n_classes
    rng.shuffle(y)
    eta = means[y] + rng.standard_normal((n_docs, n_topics)) @ np.linalg.cholesky(Sigma).T
    theta = np.exp(eta - eta.max(axis=1, keepdims=True))
    theta /= theta.sum(axis=1, keepdims=True)
    P = theta @ beta
    counts = np.vstack([rng.multinomial(doc_length, p / p.sum()) for p in P]).astype(float)
    docs = sp.csr_matrix(counts)
    X = counts / np.maximum(np.linalg.norm(counts, axis=1, keepdims=True), 1e-12)
    vocab = [f"w{j}" for j in range(vocab_size)]
    return Dataset(f"synthetic-ctm-{n_docs}", {"docs": docs, "vocab": vocab, "y": y, "X": X, "beta": beta,
                                               "eta": eta, "Sigma": Sigma},
                   {"generator": "malt.datasets.synthetic_topics.synthetic_ctm",
                    "hash_meta": {"n_docs": n_docs, "vocab_size": vocab_size, "n_topics": n_topics,
                                  "n_classes": n_classes, "doc_length": doc_length, "seed": seed}})


for _n in (300, 1000):
    register_dataset(DatasetEntry(
        f"synthetic-ctm-{_n}" if _n != 300 else "synthetic-ctm", (lambda roots, n=_n: synthetic_ctm(n)),
        "a corpus from the correlated topic model with class-specific topic means (3 topics, 3 classes)",
        f"{_n} docs × 200 words", "malt synthetic generator (seed 0)", files=(), tasks=("topics",),
        group="synthetic"))
