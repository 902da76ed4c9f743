"""Gaussian process topic model (Agovic 2011, ch. 6): the rows of F (K × D) ~ GP(0, 𝒦) over documents,
η_d ~ N(F e_d, Σ), words as in CTM. Variational EM with the CTM E-step (Table 6.1) and the MAP F from
the Sylvester equation Σ F + F 𝒦 = L 𝒦 (6.14), solved in the eigenbases of Σ and 𝒦
(`malt.numerics.eigenbasis.KroneckerEigenbasis`; 𝒦 decomposed once, Σ once per EM iteration).
"""
from __future__ import annotations

import numpy as np

from malt.numerics import linalg
from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis

from . import ctm

LOG2PI = ctm.LOG2PI


def solve_F(basis: KroneckerEigenbasis, L, prior_mean=None):
    """MAP F from Σ F + F 𝒦 = L 𝒦 (6.14), or Σ F + F 𝒦 = L 𝒦 + Σ F̄ with ``prior_mean`` F̄ (6.20).

    ``basis`` holds the eigenbases of Σ (left, K × K) and 𝒦 (right, D × D); ``L`` is (K, D) =
    [λ_1 … λ_D]. In the basis the solution is the precision-weighted average
    F̂ = L̂ ⊙ σ_𝒦 / (σ_Σ + σ_𝒦) + F̄̂ ⊙ σ_Σ / (σ_Σ + σ_𝒦): four rotations (eight with F̄), O(K²D + KD²).
    """
    F = basis.apply(L, lambda s, k: k / (s + k))
    if prior_mean is not None:
        F += basis.apply(prior_mean, lambda s, k: s / (s + k))
    return F


def log_prior_F(F, K_eig: Eigenbasis, mean=None):
    """log p(F | 𝒦) = Σ_i log N(f_i; mean_i, 𝒦) (Table 6.1, first row), 𝒦 given by its `Eigenbasis`."""
    d2, U2 = K_eig.values, K_eig.vectors
    R = F if mean is None else F - mean
    Kdim, D = R.shape
    Rt = R @ U2
    return float(-0.5 * Kdim * np.sum(np.log(d2)) - 0.5 * Kdim * D * LOG2PI - 0.5 * np.sum(Rt ** 2 / d2[None, :]))


def gptm_bound(counts, lam, nu2, zeta, beta, F, Sigma, K_eig):
    """Total lower bound (6.7): log p(F|𝒦) + Σ_d document bound with prior mean F e_d."""
    docs = ctm.document_bounds(counts, lam, nu2, zeta, beta, F.T, np.linalg.inv(Sigma), np.linalg.slogdet(Sigma)[1])
    return log_prior_F(F, K_eig) + float(docs.sum())


def fit_gptm(counts, Kmat, n_topics, rng, *, learn_sigma=True, iters=50, e_iters=5, tol=1e-5, trace=None,
              smoothing=1e-10):
    """Variational EM for GPTM. Returns dict(beta, F (K×D), Sigma, lam, nu2, zeta, bounds).

    Each iteration: E-step (λ, ν², ζ; φ implicit) with prior means F e_d; β (6.8); Σ (6.12, unless
    ``learn_sigma`` is False: Σ = I); F (6.14). Every step maximises the bound (6.7) in its block.
    """
    D, V = counts.shape
    K_eig = Eigenbasis.symmetric(Kmat, name="the document kernel 𝒦")
    beta = ctm.init_topics(counts, n_topics, rng)
    Sigma = np.eye(n_topics)
    F = np.zeros((n_topics, D))
    lam = np.zeros((D, n_topics))
    nu2 = np.ones((D, n_topics))
    bounds = []
    for it in range(iters):
        lam, nu2, zeta = ctm.e_step(counts, lam, nu2, beta, F.T, np.linalg.inv(Sigma), e_iters)
        beta = ctm.update_beta(counts, lam, beta, smoothing)
        if learn_sigma:
            Sigma = ctm.update_sigma(lam, nu2, F.T)
        F = solve_F(KroneckerEigenbasis(Sigma, K_eig, names=("Σ", "𝒦")), lam.T)
        b = gptm_bound(counts, lam, nu2, zeta, beta, F, Sigma, K_eig)
        bounds.append(b)
        if trace is not None:
            trace(it, b)
        if it > 0 and abs(bounds[-1] - bounds[-2]) < tol * abs(bounds[-2]):
            break
    return dict(beta=beta, F=F, Sigma=Sigma, lam=lam, nu2=nu2, zeta=zeta, bounds=bounds, K_eig=K_eig)


def gp_conditional(F, K_ff, K_sf, K_ss, jitter=1e-8):
    """F̄ = F 𝒦_ff⁻¹ 𝒦_f* (6.17) and 𝒦̄ = 𝒦_** − 𝒦_*f 𝒦_ff⁻¹ 𝒦_f* (6.16) for new documents."""
    A = np.linalg.solve(linalg.add_jitter(K_ff, jitter), K_sf.T)  # (D, M)
    Kbar = K_ss - K_sf @ A
    Kbar = 0.5 * (Kbar + Kbar.T)
    return F @ A, linalg.add_jitter(Kbar, 1e-8 * max(1.0, float(np.mean(np.diag(K_ss)))))


def infer_new(counts, beta, Sigma, Fbar, Kbar, iters=20, e_iters=5):
    """MAP F_* for held-out documents (6.19) by alternating their E-step with the Sylvester equation

        Σ F_* + F_* 𝒦̄ = L_* 𝒦̄ + Σ F̄,

    the first-order condition of (6.19) (the printed 6.20 writes the last term as F̄ 𝒦̄).
    Returns (F_*, L_* the λ (M, K) that F_* was last solved with, conditional bounds (M,) after a final
    E-step under F_*, joint bound = Σ bounds + log p(F_* | F̄, 𝒦̄) as in 6.23).
    """
    M = counts.shape[0]
    K = beta.shape[0]
    basis = KroneckerEigenbasis(Sigma, Kbar, names=("Σ", "the conditional kernel 𝒦̄"))
    prior_part = basis.apply(Fbar, lambda s, k: s / (s + k))  # `solve_F`'s F̄ term: the same every iteration
    Sinv = np.linalg.inv(Sigma)
    Fs = Fbar.copy()
    lam, nu2 = Fs.T.copy(), np.ones((M, K))
    for _ in range(iters):
        lam, nu2, zeta = ctm.e_step(counts, lam, nu2, beta, Fs.T, Sinv, e_iters)
        Fs = solve_F(basis, lam.T) + prior_part
    lam_F = lam
    lam, nu2, zeta = ctm.e_step(counts, lam, nu2, beta, Fs.T, Sinv, e_iters)
    cond = ctm.document_bounds(counts, lam, nu2, zeta, beta, Fs.T, Sinv, np.linalg.slogdet(Sigma)[1])
    joint = float(cond.sum()) + log_prior_F(Fs, basis.right, Fbar)
    return Fs, lam_F, cond, joint
