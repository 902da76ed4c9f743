"""Correlated topic model (Blei & Lafferty 2006) with a batched variational E-step.

The same variational family serves the Gaussian process topic model (Agovic 2011, ch. 6): a
document's logistic-normal prior mean ``mu_d`` is the common mean ``mu`` in CTM and the column
``F e_d`` in GPTM, so every routine here takes a (D, K) matrix ``M`` of per-document prior means.

Per document d the variational parameters are λ_d, ν²_d (K), ζ_d and φ (one topic distribution
per distinct word). φ is always kept at its optimum (6.9), φ_{dw,i} ∝ exp(λ_di) β_iw, which turns
the word terms of Table 6.1 into Σ_w n_dw log Σ_i exp(λ_di) β_iw; so the bound is a function of
(λ, ν², ζ, β, Σ, M) and the E-step needs only sparse products with the (D, V) count matrix.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

LOG2PI = np.log(2 * np.pi)


def _word_denominators(counts: sp.csr_matrix, lam: np.ndarray, beta: np.ndarray):
    """For every non-zero (d, w): Σ_i exp(λ_di - max_i λ_di) β_iw and the row shift max_i λ_di."""
    coo = counts.tocoo()
    shift = lam.max(axis=1)
    E = np.exp(lam - shift[:, None])
    den = np.einsum("nk,kn->n", E[coo.row], beta[:, coo.col])
    return coo, E, shift, np.maximum(den, 1e-300)


def expected_counts(counts: sp.csr_matrix, lam: np.ndarray, beta: np.ndarray):
    """Topic statistics under the optimal φ (6.9).

    Returns ``S`` (D, K) with S_di = Σ_w n_dw φ_dw,i, ``B`` (K, V) with B_iw = Σ_d n_dw φ_dw,i (the
    numerator of the β update 6.8), and ``word_ll`` (D,) = Σ_w n_dw log Σ_i exp(λ_di) β_iw.
    """
    coo, E, shift, den = _word_denominators(counts, lam, beta)
    R = sp.csr_matrix((coo.data / den, (coo.row, coo.col)), shape=counts.shape)
    S = E * (R @ beta.T)
    B = beta * np.asarray((R.T @ E).T)
    word_ll = np.bincount(coo.row, coo.data * (np.log(den) + shift[coo.row]), minlength=counts.shape[0])
    return S, B, word_ll


def optimal_zeta(lam, nu2):
    """ζ_d = Σ_i exp(λ_di + ν²_di / 2) (6.10)."""
    return np.exp(lam + nu2 / 2).sum(axis=1)


def document_bounds(counts, lam, nu2, zeta, beta, M, Sigma_inv, logdet_Sigma, word_ll=None):
    """Per-document variational lower bound on log p(w_d | M_d, Σ, β) (Table 6.1, φ at its optimum).

    ``logdet_Sigma`` is log|Σ|. Returns a (D,) array.
    """
    K = lam.shape[1]
    N = np.asarray(counts.sum(axis=1)).ravel()
    if word_ll is None:
        word_ll = expected_counts(counts, lam, beta)[2]
    R = lam - M
    prior = (-0.5 * logdet_Sigma - 0.5 * K * LOG2PI
             - 0.5 * (nu2 @ np.diag(Sigma_inv)) - 0.5 * np.einsum("dk,kl,dl->d", R, Sigma_inv, R))
    z = -N * (optimal_zeta(lam, nu2) / zeta - 1 + np.log(zeta))
    ent = 0.5 * np.sum(np.log(nu2) + LOG2PI + 1, axis=1)
    return prior + z + word_ll + ent


def update_lambda(counts, lam, nu2, zeta, beta, M, Sigma_inv, steps: int = 3):
    """Damped Newton ascent on λ for all documents at once (φ fixed at its current optimum).

    The λ part of the bound, -½(λ-m)ᵀΣ⁻¹(λ-m) + λᵀs - (N/ζ) Σ_i exp(λ_i + ν²_i/2), is concave; each
    document takes the Newton step halved until its objective rises, so the bound never decreases.
    """
    N = np.asarray(counts.sum(axis=1)).ravel()
    c = N / zeta
    S = expected_counts(counts, lam, beta)[0]

    def obj(L):
        R = L - M
        with np.errstate(over="ignore"):  # an overshooting step scores -inf and is halved below
            return (-0.5 * np.einsum("dk,kl,dl->d", R, Sigma_inv, R) + np.sum(L * S, axis=1)
                    - c * np.exp(L + nu2 / 2).sum(axis=1))

    K = lam.shape[1]
    for _ in range(steps):
        ex = c[:, None] * np.exp(lam + nu2 / 2)
        g = -(lam - M) @ Sigma_inv + S - ex
        H = Sigma_inv[None] + ex[:, :, None] * np.eye(K)[None]  # negative Hessian, positive definite
        step = np.linalg.solve(H, g[:, :, None])[:, :, 0]
        f0 = obj(lam)
        t = np.ones(lam.shape[0])
        new = lam + step
        for _ in range(30):
            bad = obj(new) < f0
            if not bad.any():
                break
            t[bad] *= 0.5
            new = np.where(bad[:, None], lam + t[:, None] * step, new)
        keep = obj(new) < f0
        lam = np.where(keep[:, None], lam, new)
    return lam


def update_nu2(counts, lam, nu2, zeta, Sigma_inv, iters: int = 50):
    """Exact maximiser of the bound in each ν²_di (a 1-d concave problem; vectorised bisection).

    The derivative -½Σ⁻¹_ii - ½(N/ζ) exp(λ_i + ν²_i/2) + 1/(2ν²_i) is strictly decreasing in ν²_i.
    """
    N = np.asarray(counts.sum(axis=1)).ravel()
    c = (N / zeta)[:, None]
    a = np.diag(Sigma_inv)[None, :]

    def grad(v):
        return -a - c * np.exp(lam + v / 2) + 1.0 / v

    lo = np.full_like(lam, 1e-10)
    hi = 1.0 / a + np.zeros_like(lam)  # grad(1/a) <= 0
    for _ in range(iters):
        mid = np.sqrt(lo * hi)  # bisection in log space
        pos = grad(mid) > 0
        lo = np.where(pos, mid, lo)
        hi = np.where(pos, hi, mid)
    return np.sqrt(lo * hi)


def e_step(counts, lam, nu2, beta, M, Sigma_inv, iters: int = 10):
    """Coordinate ascent on (ζ, λ, ν²) for all documents; returns (lam, nu2, zeta)."""
    zeta = optimal_zeta(lam, nu2)
    for _ in range(iters):
        lam = update_lambda(counts, lam, nu2, zeta, beta, M, Sigma_inv)
        zeta = optimal_zeta(lam, nu2)
        nu2 = update_nu2(counts, lam, nu2, zeta, Sigma_inv)
        zeta = optimal_zeta(lam, nu2)
    return lam, nu2, zeta


def update_beta(counts, lam, beta, smoothing: float = 1e-10):
    """β_iw ∝ Σ_d n_dw φ_dw,i + smoothing (6.8; with smoothing > 0 the MAP update under a symmetric
    Dirichlet(1 + smoothing) prior, which gives held-out words unseen in training a finite probability)."""
    B = expected_counts(counts, lam, beta)[1] + smoothing
    return B / B.sum(axis=1, keepdims=True)


def update_sigma(lam, nu2, M, reg: float = 1e-6):
    """Σ = (1/D)(Σ_d diag(ν²_d) + Σ_d (λ_d - m_d)(λ_d - m_d)ᵀ) (6.12); ``reg`` is a ridge for stability."""
    D, K = lam.shape
    R = lam - M
    S = (np.diag(nu2.sum(axis=0)) + R.T @ R) / D
    return S + reg * np.eye(K)


def init_topics(counts, K, rng, seeds_per_topic=2):
    """β seeded from a few random documents per topic (as in Blei's ctm-c), smoothed by the corpus
    word distribution and a little noise, so topics start distinct."""
    D, V = counts.shape
    pick = rng.choice(D, size=min(D, K * seeds_per_topic), replace=D < K * seeds_per_topic)
    groups = np.arange(pick.size) % K
    G = sp.csr_matrix((np.ones(pick.size), (groups, pick)), shape=(K, D))
    B = np.asarray((G @ counts).todense())
    B = B / np.maximum(B.sum(axis=1, keepdims=True), 1)
    corpus = np.asarray(counts.sum(axis=0)).ravel() + 1.0
    B = B + 0.5 * corpus / corpus.sum() + 0.1 * rng.random((K, V)) / V
    return B / B.sum(axis=1, keepdims=True)


def fit_ctm(counts, K, rng, iters=50, e_iters=5, tol=1e-5, trace=None, smoothing=1e-10):
    """Variational EM for CTM: returns dict(beta, mu, Sigma, lam, nu2, zeta, bounds)."""
    D, V = counts.shape
    beta = init_topics(counts, K, rng)
    mu = np.zeros(K)
    Sigma = np.eye(K)
    lam = np.zeros((D, K))
    nu2 = np.ones((D, K))
    bounds = []
    for it in range(iters):
        Sinv = np.linalg.inv(Sigma)
        M = np.broadcast_to(mu, lam.shape)
        lam, nu2, zeta = e_step(counts, lam, nu2, beta, M, Sinv, e_iters)
        beta = update_beta(counts, lam, beta, smoothing)
        mu = lam.mean(axis=0)
        Sigma = update_sigma(lam, nu2, np.broadcast_to(mu, lam.shape))
        Sinv = np.linalg.inv(Sigma)
        b = document_bounds(counts, lam, nu2, zeta, beta, np.broadcast_to(mu, lam.shape), Sinv,
                            np.linalg.slogdet(Sigma)[1]).sum()
        bounds.append(float(b))
        if trace is not None:
            trace(it, b)
        if it > 0 and abs(bounds[-1] - bounds[-2]) < tol * abs(bounds[-2]):
            break
    return dict(beta=beta, mu=mu, Sigma=Sigma, lam=lam, nu2=nu2, zeta=zeta, bounds=bounds)


def infer_documents(counts, beta, M, Sigma, iters=30):
    """Variational posterior of new documents under fixed (β, prior means M, Σ); returns lam, nu2, zeta, bounds."""
    D, K = M.shape[0], beta.shape[0]
    Sinv = np.linalg.inv(Sigma)
    lam, nu2 = np.array(M, dtype=float, copy=True), np.ones((D, K))
    lam, nu2, zeta = e_step(counts, lam, nu2, beta, M, Sinv, iters)
    b = document_bounds(counts, lam, nu2, zeta, beta, M, Sinv, np.linalg.slogdet(Sigma)[1])
    return lam, nu2, zeta, b


def top_word_ids(beta, n=10):
    """(K, n) vocabulary indices of each topic's n most probable words, most probable first."""
    return np.argsort(-beta, axis=1)[:, :n]


def top_words(beta, vocab, n=10):
    """The n most probable words of each topic, one space-separated string per topic."""
    return [" ".join(str(vocab[j]) for j in row) for row in top_word_ids(beta, n)]
