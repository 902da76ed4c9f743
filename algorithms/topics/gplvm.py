"""RBF Gaussian process latent variable model (Lawrence 2003/2005) as a document embedding, for the
embedding comparison of dissertation §6.4 (Figure 6.3).

Y (D, V) are l2-normalised, centred word-count rows; the latent X (D, q) and the RBF kernel
k(x, x') = a exp(-‖x − x'‖² / 2ℓ²) + n δ maximise log p(Y | X) − ½‖X‖² (L-BFGS, PCA start):

    log p(Y | X) = −V/2 log|K| − ½ tr(K⁻¹ Y Yᵀ) + const.

Only Y Yᵀ enters, so the cost per evaluation is O(D³) whatever V. New documents are placed by
maximising their predictive density N(y_* | k_*ᵀK⁻¹Y, s²(x_*) I) over x_* (all at once).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse as sp

from malt.params import Interval, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction, TopicsSplit


def _rbf(X, Z, a, ell):
    r2 = np.maximum((X ** 2).sum(1)[:, None] + (Z ** 2).sum(1)[None, :] - 2 * X @ Z.T, 0.0)
    return a * np.exp(-r2 / (2 * ell ** 2)), r2


def _cho_inv(L):
    Li = scipy.linalg.solve_triangular(L, np.eye(L.shape[0]), lower=True)
    return Li.T @ Li


def _cholesky(K):
    """Cholesky factor of K; where a trial point of the line search makes K numerically singular
    (latent points on top of each other with a tiny noise), the smallest diagonal jitter, from
    1e-10·mean diag K up by tens, that factors it (points that factor as given are unchanged)."""
    try:
        return np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        scale = max(float(np.mean(np.diag(K))), 1e-300)
        for power in range(-10, 1):
            try:
                return np.linalg.cholesky(K + scale * 10.0 ** power * np.eye(K.shape[0]))
            except np.linalg.LinAlgError:
                continue
        raise


def gplvm_objective(theta, YYt, V, q):
    """Negative log p(Y|X) − log-prior ½‖X‖², and its gradient, for theta = [vec X, log a, log ℓ, log n]."""
    D = YYt.shape[0]
    X = theta[: D * q].reshape(D, q)
    a, ell, n = np.exp(theta[D * q:])
    Kf, r2 = _rbf(X, X, a, ell)
    K = Kf + n * np.eye(D)
    L = _cholesky(K)
    Kinv = _cho_inv(L)
    logdet = 2 * np.sum(np.log(np.diag(L)))
    f = 0.5 * V * logdet + 0.5 * np.sum(Kinv * YYt) + 0.5 * np.sum(X ** 2)
    G = 0.5 * (Kinv @ YYt @ Kinv - V * Kinv)  # dL/dK of the log-likelihood
    A = G * Kf
    dX = -2.0 / ell ** 2 * (A.sum(1)[:, None] * X - A @ X)
    g = np.concatenate([-dX.ravel() + X.ravel(),
                        [-A.sum(), -np.sum(A * r2) / ell ** 2, -n * np.trace(G)]])
    return f, g


def fit_gplvm(Y, q=2, iters=200):
    """Fit the RBF GPLVM; returns dict(X, a, ell, noise, Kinv, objective)."""
    Y = np.asarray(Y, dtype=float)
    D, V = Y.shape
    YYt = Y @ Y.T
    w, U = np.linalg.eigh(YYt)
    X0 = U[:, ::-1][:, :q] * np.sqrt(np.maximum(w[::-1][:q], 1e-12))
    X0 = X0 / max(X0.std(), 1e-12)
    theta0 = np.concatenate([X0.ravel(), [np.log(YYt.trace() / D), 0.0, np.log(0.1 * YYt.trace() / D)]])
    res = scipy.optimize.minimize(gplvm_objective, theta0, args=(YYt, V, q), jac=True, method="L-BFGS-B",
                                  options={"maxiter": iters})
    X = res.x[: D * q].reshape(D, q)
    a, ell, n = np.exp(res.x[D * q:])
    K = _rbf(X, X, a, ell)[0] + n * np.eye(D)
    return dict(X=X, a=a, ell=ell, noise=n, Kinv=np.linalg.inv(K), objective=float(res.fun))


def new_point_objective(x, fit, B, C, yy, V):
    """Σ_* −log N(y_* | k_*ᵀK⁻¹Y, s²(x_*) I) (constants dropped) and its gradient in the stacked x_*.

    B (M, D) = Y_* Yᵀ K⁻¹, C = K⁻¹ Y Yᵀ K⁻¹, yy (M,) = ‖y_*‖² carry all the data it needs.
    """
    X, a, ell, n, Kinv = fit["X"], fit["a"], fit["ell"], fit["noise"], fit["Kinv"]
    M, q = B.shape[0], X.shape[1]
    Xs = x.reshape(M, q)
    Ks, _ = _rbf(Xs, X, a, ell)
    KsKi = Ks @ Kinv
    s2 = np.maximum(a + n - np.sum(KsKi * Ks, 1), 1e-10)
    r = yy - 2 * np.sum(Ks * B, 1) + np.sum((Ks @ C) * Ks, 1)
    f = np.sum(0.5 * V * np.log(s2) + 0.5 * r / s2)
    dk = (V / (2 * s2) - r / (2 * s2 ** 2))[:, None] * (-2 * KsKi) + (1 / (2 * s2))[:, None] * (-2 * B + 2 * Ks @ C)
    W = dk * Ks
    dX = -(W.sum(1)[:, None] * Xs - W @ X) / ell ** 2
    return f, dX.ravel()


def embed_new(fit, Y, Ynew, iters=100):
    """Latent positions of new rows: argmax_x log N(y_* | k_*ᵀK⁻¹Y, s²(x) I), all rows jointly."""
    X, Kinv = fit["X"], fit["Kinv"]
    V = Y.shape[1]
    B = Ynew @ Y.T @ Kinv  # (M, D): rows bᵀ = y_*ᵀ Yᵀ K⁻¹
    C = Kinv @ (Y @ Y.T) @ Kinv
    yy = (Ynew ** 2).sum(1)
    # start each new row at the latent position of its most similar training row
    X0 = X[np.argmax(Ynew @ Y.T, axis=1)]
    res = scipy.optimize.minimize(new_point_objective, X0.ravel(), args=(fit, B, C, yy, V), jac=True,
                                  method="L-BFGS-B", options={"maxiter": iters})
    return res.x.reshape(X0.shape)


def document_vectors(counts):
    """l2-normalised count rows (cosine geometry, as the kNN kernel uses)."""
    X = sp.csr_matrix(counts, dtype=float)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return np.asarray((sp.diags(1.0 / norms) @ X).todense())


@dataclass(frozen=True, kw_only=True)
class GPLVMParams(Params):
    dims: int = param(3, "latent dimension q of the embedding", Interval(1, None))
    iters: int = param(200, "L-BFGS iterations of the training fit", Interval(1, None))


@register
class GPLVM(Algorithm):
    """RBF GPLVM document embedding (Lawrence 2003); embedding_error only, no perplexity."""

    name = "gplvm"
    tasks = frozenset({"topics"})
    Params = GPLVMParams
    version = "1"

    def run(self, split: TopicsSplit, params: GPLVMParams, ctx) -> Prediction:
        Y = document_vectors(split.docs_train)
        mean = Y.mean(0)
        Y = Y - mean
        Ynew = document_vectors(split.docs_test) - mean
        fit = fit_gplvm(Y, params.dims, params.iters)
        Xs = embed_new(fit, Y, Ynew)
        return Prediction(extras={"embedding_train": fit["X"], "embedding_test": Xs},
                          diagnostics={"final_bound": -fit["objective"], "length_scale": float(fit["ell"]),
                                       "noise": float(fit["noise"])})
