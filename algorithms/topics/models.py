"""Registered topic models for the `topics` task: ``ctm`` (Blei & Lafferty 2006) and ``gptm``
(Agovic 2011, ch. 6, with the variants of Table 6.6). The maths is in `ctm`, `gptm` and `kernels`."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt.errors import InvalidParameterError
from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction, TopicsSplit

from . import ctm, gptm, kernels


@dataclass(frozen=True, kw_only=True)
class CTMParams(Params):
    topics: int = param(3, "number of topics K", Interval(1, None))
    iters: int = param(50, "maximum variational EM iterations", Interval(1, None))
    e_iters: int = param(5, "coordinate-ascent sweeps of the E-step per EM iteration", Interval(1, None))
    tol: float = param(1e-5, "stop when the bound's relative change falls below this", Interval(0, None))
    test_iters: int = param(30, "E-step sweeps (alternations for GPTM) on held-out documents", Interval(1, None))
    smoothing: float = param(0.01, "pseudo-count added to every topic-word count in the β update (unseen words)",
                             Interval(0, None, "neither"))
    top_n: int = param(10, "words listed per topic in the diagnostics", Interval(1, None))


@dataclass(frozen=True, kw_only=True)
class GPTMParams(CTMParams):
    sigma: str = param("learned", "topic covariance Σ: learned (6.12) or fixed identity (GPTM-SI)",
                       Options("learned", "identity"))
    kernel: str = param("knn", "document kernel 𝒦: identity (GPTM-KI), knn (6.21) or mustlink (6.22)",
                        Options("identity", "knn", "mustlink"))
    k: int = param(10, "neighbours of the cosine kNN graph (knn kernel)", Interval(1, None))
    gamma: float = param(1.0, "off-diagonal scale γ of the knn / mustlink kernel", Interval(0, None))
    sigma2: float = param(1.0, "bandwidth σ² of the knn kernel (6.21)", Interval(0, None, "neither"))
    c: float = param(1.0, "diagonal c of the kernel (raised further if needed for positive definiteness)",
                     Interval(0, None, "neither"))
    labelled: float = param(1.0, "fraction of training labels turned into must-link pairs (mustlink kernel)",
                            Interval(0, 1))


def _ctm_diag(fit, vocab, top_n):
    return {"iterations": len(fit["bounds"]), "final_bound": fit["bounds"][-1],
            "top_words": ctm.top_words(fit["beta"], vocab, top_n)}


@register
class CTM(Algorithm):
    """Correlated topic model, batched variational EM (Blei & Lafferty 2006)."""

    name = "ctm"
    tasks = frozenset({"topics"})
    Params = CTMParams
    version = "1"

    def run(self, split: TopicsSplit, params: CTMParams, ctx) -> Prediction:
        fit = ctm.fit_ctm(split.docs_train, params.topics, ctx.rng, params.iters, params.e_iters, params.tol,
                          smoothing=params.smoothing)
        M = np.broadcast_to(fit["mu"], (split.docs_test.shape[0], params.topics))
        lam, _, _, ll = ctm.infer_documents(split.docs_test, fit["beta"], M, fit["Sigma"], params.test_iters)
        return Prediction(extras={"loglik": ll, "embedding_train": fit["lam"], "embedding_test": lam},
                          diagnostics=_ctm_diag(fit, split.vocab, params.top_n))


def document_kernel(split: TopicsSplit, params: GPTMParams, ctx) -> np.ndarray:
    """The (n_train + n_test) kernel over [training docs; held-out docs] for the chosen ``kernel``."""
    ntr, nte = split.docs_train.shape[0], split.docs_test.shape[0]
    if params.kernel == "identity":
        return np.eye(ntr + nte)
    if params.kernel == "knn":
        rows = np.concatenate([split.train_index, split.test_index])
        perm = np.argsort(rows)  # dataset-row order, the same for every fold

        def build():
            docs = sp.vstack([split.docs_train, split.docs_test]).tocsr()[perm]
            return kernels.knn_kernel(docs, params.k, params.gamma, params.sigma2, params.c)

        Kall = ctx.cached("gptm-knn-kernel", {"k": params.k, "gamma": params.gamma, "sigma2": params.sigma2,
                                               "c": params.c, "rows": [int(rows.size), int(rows.sum())]}, build)
        inv = np.argsort(perm)
        return Kall[np.ix_(inv, inv)]
    if split.labels_train is None:
        raise InvalidParameterError("kernel=mustlink needs class labels 'y' in the dataset; use kernel=knn or identity")
    y = np.full(ntr + nte, -1)
    known = ctx.rng.random(ntr) < params.labelled
    y[:ntr] = np.where(known, split.labels_train, -1)
    return kernels.mustlink_kernel(y, params.gamma, params.c)


@register
class GPTM(Algorithm):
    """Gaussian process topic model: GP prior over documents on the topic means (Sylvester MAP F)."""

    name = "gptm"
    tasks = frozenset({"topics"})
    Params = GPTMParams
    version = "1"

    def run(self, split: TopicsSplit, params: GPTMParams, ctx) -> Prediction:
        ntr = split.docs_train.shape[0]
        Kall = document_kernel(split, params, ctx)
        K_ff, K_sf, K_ss = Kall[:ntr, :ntr], Kall[ntr:, :ntr], Kall[ntr:, ntr:]
        fit = gptm.fit_gptm(split.docs_train, K_ff, params.topics, ctx.rng, learn_sigma=params.sigma == "learned",
                            iters=params.iters, e_iters=params.e_iters, tol=params.tol,
                            smoothing=params.smoothing)
        Fbar, Kbar = gptm.gp_conditional(fit["F"], K_ff, K_sf, K_ss)
        Fs, lam, cond, joint = gptm.infer_new(split.docs_test, fit["beta"], fit["Sigma"], Fbar, Kbar,
                                              iters=params.test_iters)
        return Prediction(extras={"loglik": cond, "loglik_joint": joint, "embedding_train": fit["F"].T,
                                  "embedding_test": Fs.T},
                          diagnostics=_ctm_diag(fit, split.vocab, params.top_n))
