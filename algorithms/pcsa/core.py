"""Bayesian (sparse) Probabilistic Co-Subspace Addition, Shi (NIPS 2012).

Model (eq. 1): X = A Y + (B Z)ᵀ + E with X (D1×D2), A (D1×d1), Y (d1×D2), B (D2×d2), Z (d2×D1),
unit Gaussian latent columns, E ~ N(0, 1/τ). Priors (eq. 2): ARD Normal–Gamma columns of A and B,
Gamma(τ); or (§3.2) Normal–Jeffreys columns (variances α point-estimated). Mean-field posteriors
(eqs. 3–4) are updated by coordinate ascent (eqs. 5–7). The coupled (Ȳ, Z̄) and (Ā, B̄) updates are
the Stein/Sylvester equation of eq. (6), F − L F R = C, solved exactly in the eigenbases of L and R
(a diagonal division: ``malt.numerics.eigenbasis.KroneckerEigenbasis.solve_stein`` with the low-rank projection
as an ``Eigenbasis.gram`` factor and the small d × d one as an ``Eigenbasis.pencil``); missing entries are refilled with
the posterior mean A Ȳ + Z̄ᵀB̄ᵀ each iteration (§3.1), which also maximises the bound.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

from malt.numerics.eigenbasis import Eigenbasis, KroneckerEigenbasis

PRIOR = 1e-3  # vague Gamma(1e-3, 1e-3) for τ, ς, φ (paper §2.2)


def gamma_kl_terms(u0, v0, u, v):
    """E_Q[log p(θ)] − E_Q[log Q(θ)] for a Gamma(u0, v0) prior and Gamma(u, v) posterior."""
    elog = digamma(u) - np.log(v)
    mean = u / v
    return np.sum(u0 * np.log(v0) - gammaln(u0) + (u0 - 1) * elog - v0 * mean
                  - (u * np.log(v) - gammaln(u) + (u - 1) * elog - v * mean))


def pcsa_fit(X, mask=None, *, d1=20, d2=20, prior="ard", max_iter=200, tol=1e-6, rng=None,
             a0=PRIOR, b0=PRIOR, fill="latent", callback=None):
    """Variational Bayes for (sparse) PCSA (eqs. 5–7, §3.1–3.2).

    Parameters
    ----------
    X : (D1, D2) array; entries where ``mask`` is False are ignored (filled by the model).
    mask : (D1, D2) bool of observed entries, or None (all observed).
    d1, d2 : latent dimension caps; ARD / Jeffreys prunes redundant columns of A and B.
    prior : 'ard' (Normal–Gamma, eq. 2) or 'jeffreys' (Normal–Jeffreys, eq. 8).
    max_iter, tol : stop when the bound's relative increase is below ``tol``.
    rng : numpy Generator for the initialisation.
    callback : optional f(iteration, posterior mean of X) called after every iteration.
    fill : 'point' fills missing entries with the posterior mean as if observed (§3.1 literally:
        x̃ = argmax_X L(Q)); 'latent' gives them a factor Q(x̃_ij) = N(x̄_ij, 1/⟨τ⟩) with the same
        mean, so their expected squared residual 1/⟨τ⟩ enters v̄_τ (eq. 7) and τ is not inflated by
        the filled entries fitting themselves (matters when most entries are missing, e.g. ratings).

    Returns
    -------
    dict with ``values`` (posterior mean of X), ``A``, ``Y``, ``B``, ``Z``, ``tau``, ``bound``
    (per-iteration variational lower bound), ``d1_eff``, ``d2_eff``, ``iterations``.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    X = np.asarray(X, dtype=float)
    D1, D2 = X.shape
    mask = np.ones_like(X, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    miss = ~mask
    Xt = np.where(mask, X, 0.0)
    if miss.any():
        Xt[miss] = X[mask].mean() if mask.any() else 0.0
    d1 = int(min(d1, D1, D2)); d2 = int(min(d2, D1, D2))
    scale = np.sqrt(max(Xt.var(), 1e-12))
    A = rng.standard_normal((D1, d1)) * np.sqrt(scale / d1)
    B = rng.standard_normal((D2, d2)) * np.sqrt(scale / d2)
    Y = np.zeros((d1, D2)); Z = np.zeros((d2, D1))
    psiA = psiB = 0.0
    tau = 1.0 / max(Xt.var(), 1e-12)
    u_tau = a0 + D1 * D2 / 2.0; v_tau = u_tau / tau
    s_mean = np.ones(d1); f_mean = np.ones(d2)              # <ς>, <φ>   (or 1/α)
    s_u = np.full(d1, a0 + D1 / 2.0); s_v = s_u.copy()
    f_u = np.full(d2, a0 + D2 / 2.0); f_v = f_u.copy()
    sA = np.full(d1, 1.0); sB = np.full(d2, 1.0)             # α (Jeffreys)
    n_miss = int(miss.sum()) if fill == "latent" else 0
    s2 = 1.0 / tau if n_miss else 0.0                        # variance of Q(x̃) ('latent' fill)
    bounds = []
    for it in range(max_iter):
        # ---- Q(Y), Q(Z): covariances S_A, S_B and the coupled means (eqs. 5-6) ----
        AtA = A.T @ A; BtB = B.T @ B
        cY = 1.0 + tau * D1 * psiA; cZ = 1.0 + tau * D2 * psiB
        SA = np.linalg.inv(cY * np.eye(d1) + tau * AtA)
        SB = np.linalg.inv(cZ * np.eye(d2) + tau * BtB)
        # Z − (τ S_B BᵀB) Z P = τ S_B Bᵀ Xᵀ (I − P),  P = τ A S_A Aᵀ
        P = Eigenbasis.gram(A.T, tau * SA)                  # P = τ A S_A Aᵀ (D1 × D1, rank ≤ d1)
        Lam = cZ * np.eye(d2) + tau * BtB                   # S_B⁻¹
        G = Eigenbasis.pencil(tau * BtB, Lam, "B^-1 A")     # G = Λ⁻¹ τBᵀB = W diag(γ) WᵀΛ
        KA, gA = P.vectors, P.values
        C = tau * SB @ (B.T @ (Xt.T - (Xt.T @ KA) @ (gA[:, None] * KA.T)))
        Z = KroneckerEigenbasis(G, P).solve_stein(C)
        Y = tau * SA @ (A.T @ (Xt - Z.T @ B.T))
        SigY, SigZ = SA, SB
        KY = Y @ Y.T + D2 * SigY; KZ = Z @ Z.T + D1 * SigZ
        # ---- Q(A), Q(B): isotropic covariances ψ and coupled means (eq. 7) ----
        LamA = tau * KY + np.diag(s_mean); LamB = tau * KZ + np.diag(f_mean)
        psiA = d1 / np.trace(LamA); psiB = d2 / np.trace(LamB)
        SY = np.linalg.inv(LamA)
        PY = Eigenbasis.gram(Y, tau * SY)                   # P_Y = τ Yᵀ S_Y Y (D2 × D2, rank ≤ d1)
        GB = Eigenbasis.pencil(tau * (Z @ Z.T), LamB, "A B^-1")  # G = τ Z Zᵀ Λ_B⁻¹ = (Λ_B W) γ Wᵀ
        # B − P_Y B G = τ (I − P_Y) Xᵀ Zᵀ Λ_B⁻¹
        KYv, gY = PY.vectors, PY.values
        XZ = Xt.T @ Z.T
        C = tau * np.linalg.solve(LamB, (XZ - KYv @ (gY[:, None] * (KYv.T @ XZ))).T).T
        B = KroneckerEigenbasis(PY, GB).solve_stein(C)
        A = tau * (Xt - Z.T @ B.T) @ Y.T @ SY
        AtA = A.T @ A; BtB = B.T @ B
        # ---- hyper-parameters ----
        colA = np.diag(AtA) + D1 * psiA; colB = np.diag(BtB) + D2 * psiB
        if prior == "ard":
            s_v = a0 + colA / 2.0; f_v = b0 + colB / 2.0
            s_mean = s_u / s_v; f_mean = f_u / f_v
        else:
            sA = colA / (D1 + 2.0); sB = colB / (D2 + 2.0)
            sA = np.maximum(sA, 1e-300); sB = np.maximum(sB, 1e-300)
            s_mean = 1.0 / sA; f_mean = 1.0 / sB
        # ---- τ ----
        R = Xt - A @ Y - Z.T @ B.T
        extra = (D2 * np.sum(SigY * AtA) + D1 * psiA * np.trace(KY)
                 + D1 * np.sum(SigZ * BtB) + D2 * psiB * np.trace(KZ))
        # (exact E‖X − AY − ZᵀBᵀ‖²: ‖R‖² + AY variance + ZᵀBᵀ variance, cross terms vanish)
        v_tau = a0 + 0.5 * (np.sum(R * R) + extra + n_miss * s2)
        tau = u_tau / v_tau
        # ---- missing entries (§3.1): fill with the posterior mean, then the bound ----
        if miss.any():
            fit = Xt - R
            Xt[miss] = fit[miss]
            R[miss] = 0.0
            s2 = 1.0 / tau if n_miss else 0.0
        bounds.append(_bound(R, extra, u_tau, v_tau, D1, D2, d1, d2, KY, KZ, SigY, SigZ, psiA, psiB,
                             colA, colB, prior, s_u, s_v, f_u, f_v, sA, sB, a0, b0, n_miss, s2))
        if callback is not None:
            callback(it, A @ Y + Z.T @ B.T)
        if it > 0 and abs(bounds[-1] - bounds[-2]) <= tol * abs(bounds[-2]):
            break
    normA = np.diag(A.T @ A); normB = np.diag(B.T @ B)
    d1_eff = int(np.sum(normA > 1e-2 * max(normA.max(), 1e-300)))
    d2_eff = int(np.sum(normB > 1e-2 * max(normB.max(), 1e-300)))
    return {"values": A @ Y + Z.T @ B.T, "A": A, "Y": Y, "B": B, "Z": Z, "tau": tau, "bound": bounds,
            "d1_eff": d1_eff, "d2_eff": d2_eff, "iterations": it + 1}


def _bound(R, extra, u_tau, v_tau, D1, D2, d1, d2, KY, KZ, SigY, SigZ, psiA, psiB, colA, colB,
           prior, s_u, s_v, f_u, f_v, sA, sB, a0, b0, n_miss=0, s2=0.0):
    """Variational lower bound L(Q) of §2.2 (Jeffreys variant: L(Q; α) of §3.2, up to constants);
    with n_miss latent filled entries of variance s2, their E log p and entropy."""
    elog_tau = digamma(u_tau) - np.log(v_tau); tau = u_tau / v_tau
    L = 0.5 * D1 * D2 * (elog_tau - np.log(2 * np.pi)) - 0.5 * tau * (np.sum(R * R) + extra + n_miss * s2)
    if n_miss:
        L += 0.5 * n_miss * (np.log(2 * np.pi * s2) + 1.0)
    # latent Y, Z: E log p + entropy
    L += -0.5 * np.trace(KY) + 0.5 * D2 * np.linalg.slogdet(SigY)[1] + 0.5 * d1 * D2
    L += -0.5 * np.trace(KZ) + 0.5 * D1 * np.linalg.slogdet(SigZ)[1] + 0.5 * d2 * D1
    # A, B: E log p(A|ς) + entropy (isotropic ψ)
    L += 0.5 * d1 * D1 * (np.log(psiA) + 1.0) + 0.5 * d2 * D2 * (np.log(psiB) + 1.0)
    if prior == "ard":
        elog_s = digamma(s_u) - np.log(s_v); elog_f = digamma(f_u) - np.log(f_v)
        L += np.sum(0.5 * D1 * elog_s - 0.5 * (s_u / s_v) * colA)
        L += np.sum(0.5 * D2 * elog_f - 0.5 * (f_u / f_v) * colB)
        L += gamma_kl_terms(a0, b0, s_u, s_v) + gamma_kl_terms(a0, b0, f_u, f_v)
    else:
        L += np.sum(-0.5 * D1 * np.log(sA) - 0.5 * colA / sA - np.log(sA))
        L += np.sum(-0.5 * D2 * np.log(sB) - 0.5 * colB / sB - np.log(sB))
    L += gamma_kl_terms(a0, b0, u_tau, v_tau)
    return float(L)
