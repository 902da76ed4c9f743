"""The `topics` task: fit a topic model on training documents, score held-out ones (Agovic 2011, §6.4).

Documents are cut into ``folds`` random balanced folds; each fold in turn is the held-out set.

What the algorithm returns in ``Prediction.extras``:

``loglik`` : (n_test,) lower bound on log p(w_d | model) of each held-out document (for GPTM the
    conditional log p(w_d | F_*) with the MAP F_*, eq. 6.24).
``loglik_joint`` : optional float, the summed bound on log p(w_test, F_*) (eq. 6.23); defaults to
    ``loglik.sum()`` (models without F, e.g. CTM, where both perplexities coincide).

(An embedding-only algorithm such as ``gplvm`` may omit ``loglik``: then only embedding_error.)

``embedding_train``, ``embedding_test`` : optional (n_train, k) and (n_test, k) document embeddings
    (λ for CTM, F for GPTM); a linear SVM trained on the first and tested on the second gives
    ``embedding_error`` when the dataset has class labels ``y``.
``top_word_ids`` : optional (K, N) vocabulary indices of each topic's N most probable words; their
    NPMI over the training documents gives ``coherence`` (the unigram baseline lists its N most
    frequent words as one "topic": the coherence a topic model must beat). The reference is the
    training fold, as in Mimno et al. (2011): a held-out fold of a few hundred documents leaves most
    pairs of specific words never seen together (NPMI −1), and on News100 (10 topics, 5 folds) its
    fold std was 0.05–0.11 against 0.014–0.036 on the training fold, where CTM and GPTM (0.18–0.19)
    separate from the unigram list (0.13) and on the held-out fold they did not (0.01–0.03 each).

Metrics: ``perplexity`` (6.23) = exp(-loglik_joint / N_test), ``perplexity_conditional`` (6.24)
= exp(-Σ loglik / N_test), N_test the number of held-out tokens; ``embedding_error``; ``coherence``.
Top words per topic go in ``Prediction.diagnostics['top_words']``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.errors import DataError
from malt.tasks.metrics import npmi_coherence
from malt.params import Interval, Params, Size, param
from malt.splits import Prediction, TopicsSplit
from malt.tasks.base import Metric, Task, as_array, fold_assignment, register_task


@dataclass(frozen=True, kw_only=True)
class TopicsParams(Params):
    folds: int = param(5, "number of cross-validation folds of held-out documents", Interval(2, None))
    seed: int = param(0, "seed of the fold assignment", Interval(0, None), repetition=True)
    svm_C: float = param(1.0, "regularisation C of the linear SVM scored on the embeddings",
                         Interval(0, None, "neither"), scoring=True)


def embedding_error(Z_train, y_train, Z_test, y_test, C=1.0) -> float:
    """Test error of a linear SVM trained on train embeddings, standardised with the training rows'
    statistics (malt.numerics.linalg's one scaler, as every inductive protocol)."""
    from sklearn.svm import LinearSVC

    from malt.numerics.linalg import standardize_train_test

    if np.unique(y_train).size < 2:
        return float("nan")
    Z_train, Z_test = standardize_train_test(Z_train, Z_test)
    m = LinearSVC(C=C, max_iter=20000).fit(Z_train, y_train)
    return float(np.mean(m.predict(Z_test) != y_test))


@register_task
class TopicsTask(Task):
    """Fit a topic model on training documents and score held-out ones (perplexity, embeddings)."""

    name = "topics"
    Params = TopicsParams
    requires = ("docs",)
    metrics = (
        Metric("perplexity", "Perplexity (joint, 6.23)", "lower",
               conventions="exp(-log p(w_test, F*) / N_test tokens) from the model's bound"),
        Metric("perplexity_conditional", "Perplexity (conditional, 6.24)", "lower",
               conventions="exp(-Σ_d log p(w_d | F*_d) / N_test tokens)"),
        Metric("embedding_error", "SVM error on embedding", "lower", True,
               conventions="linear SVM (standardised embeddings, C = svm_C) trained on the training documents' "
                           "embeddings, tested on the held-out ones; NaN with fewer than two classes"),
        Metric("coherence", "Topic coherence (NPMI)", "higher",
               conventions="mean over topics of the mean NPMI of its top-word pairs, document co-occurrence in "
                           "the training documents (malt.tasks.metrics.npmi_coherence); a pair never seen together "
                           "scores -1"),
    )

    def check(self, dataset, params):
        if "docs" not in dataset:
            raise DataError(f"The topics task needs a 'docs' component (CSR word counts), which dataset "
                            f"'{dataset.name}' lacks (it has {', '.join(sorted(dataset.components))}).")
        if dataset["docs"].shape[0] < params.folds:
            raise DataError(f"Dataset '{dataset.name}' has {dataset['docs'].shape[0]} documents, fewer than "
                            f"--folds {params.folds}.")

    def sizes(self, dataset, params):
        n = dataset["docs"].shape[0]
        ids = fold_assignment(n, params.folds, params.seed)
        train = int(n - np.bincount(ids, minlength=params.folds).max())
        smallest = Size(train, f"the number of training documents in the smallest fold of '{dataset.name}'")
        y = dataset.get("y")
        rarest = None  # an inner CV stratified by class (gptm): fewer members than folds is a notice
        if y is not None:
            y = np.asarray(y).ravel()
            classes = np.unique(y)
            least = min(int(np.count_nonzero(y[ids != fold] == c)) for c in classes for fold in range(params.folds))
            rarest = Size(least, f"the training documents of the least populated class in a fold of '{dataset.name}'")
        return {"docs": Size(n, f"the number of documents of '{dataset.name}'"), "train_docs": smallest,
                "inner_items": Size(train, smallest.what, rarest)}

    def split(self, dataset, params, fold):
        import scipy.sparse as sp

        docs = sp.csr_matrix(dataset["docs"], dtype=float)
        ids = fold_assignment(docs.shape[0], params.folds, params.seed)
        test = np.flatnonzero(ids == fold)
        train = np.flatnonzero(ids != fold)
        y = dataset.get("y")
        y = None if y is None else np.asarray(y).ravel()
        vocab = dataset.get("vocab")
        vocab = list(vocab) if vocab is not None else [f"w{j}" for j in range(docs.shape[1])]
        return TopicsSplit(docs[train], docs[test], vocab, None if y is None else y[train],
                           None if y is None else y[test], train, test, fold)

    def pack(self, split, prediction: Prediction, params):
        ex = prediction.extras
        out = {}
        n_test = split.docs_test.shape[0]
        if "loglik" in ex:  # topic models; pure embeddings (gplvm) give only embedding_error
            out["loglik"] = as_array(np.ravel(ex["loglik"]), "extras['loglik'] (one bound per held-out document)",
                                     (n_test,))
            joint = float(ex.get("loglik_joint", out["loglik"].sum()))
            if not np.isfinite(joint):
                raise ValueError("the algorithm returned a NaN or inf loglik_joint")
            out["loglik_joint"] = np.array(joint)
        if "embedding_train" in ex and "embedding_test" in ex:
            train = np.asarray(ex["embedding_train"], dtype=float)
            out["embedding_train"] = as_array(train, "extras['embedding_train']",
                                              (split.docs_train.shape[0], train.shape[1])).astype(np.float32)
            out["embedding_test"] = as_array(ex["embedding_test"], "extras['embedding_test']",
                                             (n_test, train.shape[1])).astype(np.float32)
        if "top_word_ids" in ex:
            ids = np.asarray(ex["top_word_ids"])
            if ids.ndim != 2 or not ((ids >= 0) & (ids < split.docs_test.shape[1])).all():
                raise ValueError(f"extras['top_word_ids'] must be (topics, words) vocabulary indices, got shape "
                                 f"{ids.shape}")
            if ids.shape[1] >= 2:  # one word per topic has no pair to score
                out["top_word_ids"] = ids.astype(np.int32)
        if not out:
            raise ValueError("the algorithm returned neither extras['loglik'] nor embeddings to score")
        return out

    def score_packed(self, dataset, params, split: TopicsSplit, packed):
        out = {}
        if "loglik" in packed:
            n_tokens = float(split.docs_test.sum())
            joint = float(np.ravel(packed["loglik_joint"])[0])  # stored before 2026-11-24 with shape (1,)
            out["perplexity"] = float(np.exp(-joint / n_tokens))
            out["perplexity_conditional"] = float(np.exp(-float(np.sum(packed["loglik"])) / n_tokens))
        if "top_word_ids" in packed:
            out["coherence"] = npmi_coherence(packed["top_word_ids"], split.docs_train)
        if split.labels_train is not None and "embedding_train" in packed:
            out["embedding_error"] = embedding_error(packed["embedding_train"].astype(float), split.labels_train,
                                                     packed["embedding_test"].astype(float), split.labels_test,
                                                     params.svm_C)
        return out
