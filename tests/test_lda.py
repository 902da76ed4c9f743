"""The LDA baseline of the topics task: its held-out bound against exact enumeration of the marginal
likelihood, and its fixed point against the bound's own optimum."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import gammaln

from malt.algorithms.topics.lda import document_bounds, infer_gamma


def exact_log_marginal(tokens, beta, alpha):
    """log p(w_1..w_N | α, β) of one token sequence, summing over all K^N topic assignments with the
    Dirichlet-multinomial p(z | α) = Γ(Σα)/Γ(Σα + N) Π_k Γ(α_k + c_k)/Γ(α_k)."""
    K = beta.shape[0]
    terms = []
    for z in itertools.product(range(K), repeat=len(tokens)):
        c = np.bincount(z, minlength=K)
        log_pz = gammaln(alpha.sum()) - gammaln(alpha.sum() + len(tokens)) + np.sum(gammaln(alpha + c) - gammaln(alpha))
        terms.append(log_pz + np.sum(np.log(beta[list(z), tokens])))
    return float(np.logaddexp.reduce(terms))


def small_model(seed=0, K=3, V=6):
    rng = np.random.default_rng(seed)
    beta = rng.dirichlet(np.full(V, 0.5), size=K)
    return beta, np.full(K, 0.4)


@pytest.mark.parametrize("alpha", [0.4, 1e4])
def test_bound_is_below_the_exact_marginal_likelihood_and_tight_when_theta_is_pinned(alpha):
    """A lower bound for any α; with α → ∞ the prior pins θ to α/Σα, the mean-field family holds the
    exact posterior and the bound meets log p(w | α, β)."""
    beta, _ = small_model()
    alpha = np.full(3, alpha)
    docs = [[0, 0, 1, 4], [2, 3, 3, 5, 5], [1], [0, 2, 4, 4, 1, 3]]
    counts = sp.csr_matrix(np.array([np.bincount(d, minlength=6) for d in docs], dtype=float))
    gamma, _ = infer_gamma(counts, beta, alpha, max_iter=5000, tol=1e-12)
    bounds = document_bounds(counts, gamma, beta, alpha)
    exact = np.array([exact_log_marginal(np.array(d), beta, alpha) for d in docs])
    assert np.all(bounds <= exact + 1e-9), (bounds, exact)
    if alpha[0] > 1e3:
        np.testing.assert_allclose(bounds, exact, atol=1e-3)


def test_fixed_point_maximises_the_bound_over_gamma():
    beta, alpha = small_model(1)
    counts = sp.csr_matrix(np.array([[3, 0, 1, 0, 2, 0], [0, 4, 0, 1, 0, 3]], dtype=float))
    gamma, _ = infer_gamma(counts, beta, alpha, max_iter=5000, tol=1e-12)
    best = document_bounds(counts, gamma, beta, alpha)
    rng = np.random.default_rng(0)
    for _ in range(100):
        moved = gamma * np.exp(0.05 * rng.normal(size=gamma.shape))
        assert np.all(document_bounds(counts, moved, beta, alpha) <= best + 1e-10)


@pytest.mark.timeout(120)
def test_lda_beats_the_unigram_model_on_topical_documents():
    from malt.engine.context import Context
    from malt.registry import get
    from malt.tasks import get_task
    from malt.datasets.dataset import Dataset

    rng = np.random.default_rng(0)
    K, V, D = 3, 60, 150
    beta = np.zeros((K, V))
    for k in range(K):  # three topics on disjoint word blocks
        beta[k, 20 * k:20 * (k + 1)] = rng.dirichlet(np.ones(20))
    y = np.repeat(np.arange(K), D // K)
    theta = np.where(np.arange(K)[None, :] == y[:, None], 0.9, 0.05)
    docs = sp.csr_matrix(np.array([rng.multinomial(40, t @ beta) for t in theta], dtype=float))
    data = Dataset("topical", {"docs": docs, "vocab": [f"w{i}" for i in range(V)], "y": y})
    task = get_task("topics")
    tparams = task.Params()
    split = task.split(data, tparams, 0)
    scores = {}
    for name in ("lda", "unigram"):
        algo = get(name)
        scores[name] = task.score(data, tparams, split, algo().run(split, algo.Params(), Context.for_arrays(seed=0)))
    assert scores["lda"]["perplexity"] < 0.7 * scores["unigram"]["perplexity"], scores
    assert scores["lda"]["embedding_error"] < 0.1, scores
