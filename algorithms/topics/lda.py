"""Latent Dirichlet allocation (Blei, Ng & Jordan, JMLR 2003) as a baseline of the `topics` task: the
model CTM and GPTM extend (a Dirichlet instead of a logistic-normal prior on the topic proportions).

The topics are fitted by scikit-learn's `LatentDirichletAllocation` (batch variational Bayes, Hoffman,
Blei & Bach 2010 with one pass over all documents per iteration). Held-out documents are scored by
the *same kind of bound* the task reads from CTM and GPTM (`malt.tasks.topics`): a variational lower
bound on log p(w_d | α, β) per document, with the topics β a point estimate (here the posterior mean
of scikit-learn's variational Dirichlet, ``components_`` normalised) and the multinomial coefficient left
out. scikit-learn's own ``perplexity`` is a different quantity — it adds the topics' Dirichlet prior
term of the whole corpus and uses exp E[log β] in place of β — so it is not used; neither is its
E-step (exp E[log β] again). Per document (Blei et al. 2003, eq. 15, φ at its optimum (their eq. 6)):

.. math::

    L_d = \\log Γ(Σ_k α_k) − Σ_k \\log Γ(α_k) + Σ_k (α_k − 1) E[\\log θ_{dk}]
          + Σ_w n_{dw} \\log Σ_k e^{E[\\log θ_{dk}]} β_{kw}
          − \\log Γ(Σ_k γ_{dk}) + Σ_k \\log Γ(γ_{dk}) − Σ_k (γ_{dk} − 1) E[\\log θ_{dk}]

with E[log θ_dk] = ψ(γ_dk) − ψ(Σ_k γ_dk), and γ from the fixed point γ_d = α + e^{E[log θ_d]} ⊙
(β (n_d / (e^{E[log θ_d]} β)))  (their eqs. 6–7), iterated for all documents at once with sparse
products: O(nnz · K) per sweep. The document embedding (for ``embedding_error``) is the posterior
mean of θ_d, γ_d / Σ_k γ_dk, for training and held-out documents alike.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, psi

from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction, TopicsSplit

from . import ctm


def _word_terms(counts: sp.csr_matrix, E: np.ndarray, beta: np.ndarray):
    """For every non-zero (d, w): den_dw = Σ_k E_dk β_kw; returns (coo, den)."""
    coo = counts.tocoo()
    den = np.einsum("nk,kn->n", E[coo.row], beta[:, coo.col])
    return coo, np.maximum(den, 1e-300)


def infer_gamma(counts, beta: np.ndarray, alpha: np.ndarray, *, max_iter: int = 200, tol: float = 1e-4):
    """Variational Dirichlet parameters γ (D, K) of each document under fixed topics β (K, V) and prior α
    (K,): the fixed point of Blei et al. (2003) eqs. 6–7, all documents at once, until the mean absolute
    change of γ is below ``tol``. Returns (γ, sweeps)."""
    counts = sp.csr_matrix(counts, dtype=float)
    D, K = counts.shape[0], beta.shape[0]
    N = np.asarray(counts.sum(axis=1)).ravel()
    gamma = alpha[None, :] + np.repeat((N / K)[:, None], K, axis=1)
    it = 0
    for it in range(1, max_iter + 1):
        E = np.exp(psi(gamma) - psi(gamma.sum(axis=1, keepdims=True)))
        coo, den = _word_terms(counts, E, beta)
        R = sp.csr_matrix((coo.data / den, (coo.row, coo.col)), shape=counts.shape)
        new = alpha[None, :] + E * np.asarray(R @ beta.T)
        change = float(np.mean(np.abs(new - gamma)))
        gamma = new
        if change < tol:
            break
    return gamma, it


def document_bounds(counts, gamma: np.ndarray, beta: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """The per-document lower bound L_d on log p(w_d | α, β) of the module docstring, (D,)."""
    counts = sp.csr_matrix(counts, dtype=float)
    Elog = psi(gamma) - psi(gamma.sum(axis=1, keepdims=True))
    shift = Elog.max(axis=1)
    coo, den = _word_terms(counts, np.exp(Elog - shift[:, None]), beta)
    words = np.bincount(coo.row, coo.data * (np.log(den) + shift[coo.row]), minlength=counts.shape[0])
    prior = gammaln(alpha.sum()) - gammaln(alpha).sum() + Elog @ (alpha - 1.0)
    entropy = -gammaln(gamma.sum(axis=1)) + gammaln(gamma).sum(axis=1) - np.sum((gamma - 1.0) * Elog, axis=1)
    return prior + words + entropy


@dataclass(frozen=True, kw_only=True)
class LDAParams(Params):
    topics: int = param(3, "number of topics K (3 as ctm and gptm in Tables 6.2 and 6.6)", Interval(1, None),
                        max_from="train_docs")
    doc_topic_prior: float = param(0.0, "symmetric Dirichlet α on the topic proportions; 0 = 1/K "
                                   "(scikit-learn's default)", Interval(0, None))
    topic_word_prior: float = param(0.0, "symmetric Dirichlet η on the topics; 0 = 1/K (scikit-learn's default)",
                                    Interval(0, None))
    iters: int = param(50, "batch variational EM iterations (scikit-learn's max_iter; stopped earlier when the "
                       "training perplexity, evaluated every 5 iterations, changes by less than 0.1)",
                       Interval(1, None))
    method: str = param("batch", "scikit-learn's learning_method: 'batch' (every document per update) or 'online'",
                        Options("batch", "online"))
    test_iters: int = param(200, "maximum fixed-point sweeps of γ for a document", Interval(1, None))
    top_n: int = param(10, "words listed per topic in the diagnostics", Interval(1, None))
    restarts: int = param(5, "variational EM runs from different random starts; the one with the highest training "
                          "bound (scikit-learn's score) is kept, as ctm's restarts (5 by default since v2, as "
                          "ctm and gptm)", Interval(1, None))


@register
class LDA(Algorithm):
    """LDA: latent Dirichlet allocation (Blei, Ng & Jordan 2003; scikit-learn's batch VB), held-out bound as ctm's."""

    name = "lda"
    tasks = frozenset({"topics"})
    Params = LDAParams
    version = "2"  # v2: restarts=5 by default (was 1), as ctm v2 and gptm v3
    preload = ("sklearn.decomposition",)

    def run(self, split: TopicsSplit, params: LDAParams, ctx) -> Prediction:
        from sklearn.decomposition import LatentDirichletAllocation

        K = params.topics
        alpha = params.doc_topic_prior or 1.0 / K
        eta = params.topic_word_prior or 1.0 / K
        fits, bounds = [], []
        for r in range(params.restarts):
            ctx.progress(r / params.restarts, f"EM start {r + 1}/{params.restarts}")
            model = LatentDirichletAllocation(K, doc_topic_prior=alpha, topic_word_prior=eta,
                                              learning_method=params.method, max_iter=params.iters,
                                              evaluate_every=5, perp_tol=0.1,
                                              random_state=int(ctx.rng.integers(2 ** 31)))
            model.fit(split.docs_train)
            fits.append(model)
            bounds.append(float(model.score(split.docs_train)))
        kept = int(np.argmax(bounds))
        model = fits[kept]
        beta = model.components_ / model.components_.sum(axis=1, keepdims=True)
        a = np.full(K, alpha)
        g_train, _ = infer_gamma(split.docs_train, beta, a, max_iter=params.test_iters)
        g_test, sweeps = infer_gamma(split.docs_test, beta, a, max_iter=params.test_iters)
        loglik = document_bounds(split.docs_test, g_test, beta, a)
        diagnostics = {"iterations": int(model.n_iter_), "test_sweeps": sweeps,
                       "top_words": ctm.top_words(beta, split.vocab, params.top_n)}
        if params.restarts > 1:
            diagnostics.update(restart_bounds=bounds, restart_kept=kept)
        return Prediction(extras={"loglik": loglik,
                                  "embedding_train": g_train / g_train.sum(axis=1, keepdims=True),
                                  "embedding_test": g_test / g_test.sum(axis=1, keepdims=True),
                                  "top_word_ids": ctm.top_word_ids(beta, params.top_n)},
                          diagnostics=diagnostics)
