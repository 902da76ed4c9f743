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

Metrics: ``perplexity`` (6.23) = exp(-loglik_joint / N_test), ``perplexity_conditional`` (6.24)
= exp(-Σ loglik / N_test), N_test the number of held-out tokens; ``embedding_error``.
Top words per topic go in ``Prediction.diagnostics['top_words']``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt.errors import DataError
from malt.params import Interval, Params, param
from malt.splits import Prediction, TopicsSplit
from malt.tasks.base import Task, describe_metric, fold_assignment, register_task

describe_metric("perplexity", "Perplexity (joint, 6.23)", "lower")
describe_metric("perplexity_conditional", "Perplexity (conditional, 6.24)", "lower")
describe_metric("embedding_error", "SVM error on embedding", "lower", percent=True)


@dataclass(frozen=True, kw_only=True)
class TopicsParams(Params):
    folds: int = param(5, "number of cross-validation folds of held-out documents", Interval(2, None))
    seed: int = param(0, "seed of the fold assignment", Interval(0, None))
    svm_C: float = param(1.0, "regularisation C of the linear SVM scored on the embeddings", Interval(0, None, "neither"))


def embedding_error(Z_train, y_train, Z_test, y_test, C=1.0) -> float:
    """Test error of a linear SVM (standardised features) trained on train embeddings."""
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    if np.unique(y_train).size < 2:
        return float("nan")
    sc = StandardScaler().fit(Z_train)
    m = LinearSVC(C=C, max_iter=20000).fit(sc.transform(Z_train), y_train)
    return float(np.mean(m.predict(sc.transform(Z_test)) != y_test))


@register_task
class TopicsTask(Task):
    name = "topics"
    Params = TopicsParams
    settings = ()

    def check(self, dataset, params):
        if "docs" not in dataset:
            raise DataError(f"The topics task needs a 'docs' component (CSR word counts), which dataset "
                            f"'{dataset.name}' lacks (it has {', '.join(sorted(dataset.components))}).")

    def split(self, dataset, params, fold):
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

    def score(self, dataset, params, split: TopicsSplit, prediction: Prediction):
        ex = prediction.extras
        out = {}
        if "loglik" in ex:  # topic models; pure embeddings (gplvm) give only embedding_error
            out = self._perplexities(split, ex)
        if split.labels_train is not None and "embedding_train" in ex and "embedding_test" in ex:
            out["embedding_error"] = embedding_error(np.asarray(ex["embedding_train"]), split.labels_train,
                                                     np.asarray(ex["embedding_test"]), split.labels_test,
                                                     params.svm_C)
        if not out:
            raise ValueError("the algorithm returned neither extras['loglik'] nor embeddings to score")
        return out

    @staticmethod
    def _perplexities(split, ex):
        ll = np.asarray(ex["loglik"], dtype=float).ravel()
        if ll.shape != (split.docs_test.shape[0],):
            raise ValueError(f"extras['loglik'] must hold one bound per held-out document "
                             f"({split.docs_test.shape[0]}), got shape {ll.shape}")
        if not np.all(np.isfinite(ll)):
            raise ValueError("the algorithm returned NaN or inf held-out log-likelihoods")
        n_tokens = float(split.docs_test.sum())
        joint = float(ex.get("loglik_joint", ll.sum()))
        return {"perplexity": float(np.exp(-joint / n_tokens)),
                "perplexity_conditional": float(np.exp(-ll.sum() / n_tokens))}
