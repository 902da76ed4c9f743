"""PCSA-k for order-k tensors (Shi 2012, §3.3, eq. 9).

X = E + Σ_i T(M(A(i) F(Y(i)))): mode i contributes A(i) (D_i × d_i) times a latent d_i × ∏_{u≠i} D_u
matrix in the cyclically mode-shifted unfolding. The (Y(i), A(i)) pairs cannot be decoupled into one
Sylvester equation for k > 2, so they are updated sequentially per mode with the others fixed (§3.3),
each update being the exact coordinate maximiser of the bound, so the bound is monotone.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma

from .core import PRIOR, gamma_kl_terms


def shift_unfold(X, i):
    """F(M(X, i)): modes cycled so that mode i comes first, flattened to D_i × ∏ others."""
    k = X.ndim
    return np.transpose(X, [(i + u) % k for u in range(k)]).reshape(X.shape[i], -1)


def shift_fold(F, i, shape):
    """Inverse of :func:`shift_unfold` (the tensorisation T(·) of the shifted shape)."""
    k = len(shape)
    order = [(i + u) % k for u in range(k)]
    return np.transpose(F.reshape([shape[o] for o in order]), np.argsort(order))


def pcsa_tensor_fit(X, mask=None, *, rank=10, max_iter=200, tol=1e-6, rng=None, a0=PRIOR, b0=PRIOR):
    """Variational Bayes for PCSA-k with ARD Normal–Gamma priors on every A(i) (§3.3).

    Returns dict with ``values`` (posterior mean tensor), ``bound`` per iteration, ``d_eff`` per mode,
    ``tau`` and ``iterations``. Missing entries (mask False) are refilled each iteration (§3.1).
    """
    rng = np.random.default_rng(0) if rng is None else rng
    X = np.asarray(X, dtype=float)
    shape, k, N = X.shape, X.ndim, X.size
    mask = np.ones(shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    miss = ~mask
    Xt = np.where(mask, X, X[mask].mean() if mask.any() else 0.0)
    ds = [int(min(rank, D, N // D)) for D in shape]
    var = max(Xt.var(), 1e-12)
    A = [rng.standard_normal((D, d)) * np.sqrt(np.sqrt(var) / d) for D, d in zip(shape, ds)]
    Y = [np.zeros((d, N // D)) for D, d in zip(shape, ds)]
    psi = [0.0] * k
    SigY = [np.eye(d) for d in ds]
    contrib = [np.zeros(shape) for _ in range(k)]
    s_u = [np.full(d, a0 + D / 2.0) for D, d in zip(shape, ds)]
    s_v = [u.copy() for u in s_u]
    u_tau = a0 + N / 2.0
    tau = 1.0 / var
    bounds = []
    for it in range(max_iter):
        for i in range(k):
            D, d, Ni = shape[i], ds[i], N // shape[i]
            R = shift_unfold(Xt - (sum(contrib) - contrib[i]), i)
            AtA = A[i].T @ A[i]
            S = np.linalg.inv((1.0 + tau * D * psi[i]) * np.eye(d) + tau * AtA)
            Y[i] = tau * S @ (A[i].T @ R)
            SigY[i] = S
            KY = Y[i] @ Y[i].T + Ni * S
            Lam = tau * KY + np.diag(s_u[i] / s_v[i])
            psi[i] = d / np.trace(Lam)
            A[i] = tau * (R @ Y[i].T) @ np.linalg.inv(Lam)
            s_v[i] = b0 + (np.diag(A[i].T @ A[i]) + D * psi[i]) / 2.0
            contrib[i] = shift_fold(A[i] @ Y[i], i, shape)
        fit = sum(contrib)
        Res = Xt - fit
        extra, Lb = 0.0, 0.0
        for i in range(k):
            D, d, Ni = shape[i], ds[i], N // shape[i]
            AtA = A[i].T @ A[i]
            KY = Y[i] @ Y[i].T + Ni * SigY[i]
            col = np.diag(AtA) + D * psi[i]
            extra += Ni * np.sum(SigY[i] * AtA) + D * psi[i] * np.trace(KY)
            elog_s = digamma(s_u[i]) - np.log(s_v[i])
            Lb += (-0.5 * np.trace(KY) + 0.5 * Ni * np.linalg.slogdet(SigY[i])[1] + 0.5 * d * Ni
                   + 0.5 * d * D * (np.log(psi[i]) + 1.0)
                   + np.sum(0.5 * D * elog_s - 0.5 * (s_u[i] / s_v[i]) * col)
                   + gamma_kl_terms(a0, b0, s_u[i], s_v[i]))
        v_tau = b0 + 0.5 * (np.sum(Res * Res) + extra)
        tau = u_tau / v_tau
        if miss.any():
            Xt[miss] = fit[miss]
            Res[miss] = 0.0
        elog_tau = digamma(u_tau) - np.log(v_tau)
        Lb += (0.5 * N * (elog_tau - np.log(2 * np.pi)) - 0.5 * tau * (np.sum(Res * Res) + extra)
               + gamma_kl_terms(a0, b0, u_tau, v_tau))
        bounds.append(float(Lb))
        if it > 0 and abs(bounds[-1] - bounds[-2]) <= tol * abs(bounds[-2]):
            break
    d_eff = []
    for a in A:
        c = np.diag(a.T @ a)
        d_eff.append(int(np.sum(c > 1e-2 * max(c.max(), 1e-300))))
    return {"values": sum(contrib), "bound": bounds, "d_eff": d_eff, "tau": tau, "iterations": it + 1,
            "A": A, "Y": Y}
