"""Convergence diagnostics of a Markov chain: effective sample size and split R-hat.

Both follow Gelman et al., Bayesian Data Analysis (3rd ed.), §11.4–11.5 (split R̂ eq. 11.4; ESS with
Geyer's initial monotone sequence estimator of the autocorrelation sum), vectorised over the
monitored quantities. They depend only on numpy; any sampler can use them (icca too).
"""
from __future__ import annotations

import numpy as np


def autocorrelation(draws: np.ndarray) -> np.ndarray:
    """Autocorrelations ρ_0..ρ_{T−1} of each column of ``draws`` (T, p), by FFT. Constant columns get ρ = 0
    beyond lag 0."""
    x = draws - draws.mean(axis=0)
    T = x.shape[0]
    f = np.fft.rfft(x, 2 * T, axis=0)
    acov = np.fft.irfft(f * np.conj(f), axis=0)[:T] / T
    var = acov[0]
    safe = np.where(var > 0, var, 1.0)
    rho = acov / safe
    rho[:, var <= 0] = 0.0
    rho[0] = 1.0
    return rho


def effective_sample_size(draws: np.ndarray) -> np.ndarray:
    """ESS = T / τ of each column of ``draws`` (T, p), τ = −1 + 2 Σ_k Γ_k with Γ_k = ρ_2k + ρ_2k+1 summed
    while positive and made monotone (Geyer's initial monotone sequence). Returns (p,)."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim == 1:
        draws = draws[:, None]
    T, p = draws.shape
    if T < 4:
        return np.full(p, float(T))
    rho = autocorrelation(draws)
    pairs = rho[: 2 * (T // 2)].reshape(T // 2, 2, p).sum(axis=1)  # Γ_k, (T/2, p)
    positive = np.cumprod(pairs > 0, axis=0).astype(bool)  # up to the first non-positive Γ
    monotone = np.minimum.accumulate(np.where(positive, pairs, np.inf), axis=0)
    tau = -1.0 + 2.0 * np.where(positive, monotone, 0.0).sum(axis=0)
    return T / np.maximum(tau, 1.0 / np.log10(max(T, 10)))  # antithetic chains: ESS capped at T log10 T


def split_rhat(draws: np.ndarray, chains: int = 1) -> np.ndarray:
    """Split R̂ of each column of ``draws`` (T, p): the draws of ``chains`` consecutive chains of equal
    length, each split in half (BDA3 eq. 11.4). ≈ 1 at convergence; large when the halves disagree
    (a trend, or chains in different places). Returns (p,)."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim == 1:
        draws = draws[:, None]
    T, p = draws.shape
    half = T // (2 * chains)
    if half < 2:
        return np.full(p, np.inf)
    parts = draws[: 2 * chains * half].reshape(2 * chains, half, p)
    means = parts.mean(axis=1)
    W = parts.var(axis=1, ddof=1).mean(axis=0)
    B = half * means.var(axis=0, ddof=1)
    var_plus = (half - 1) / half * W + B / half
    with np.errstate(divide="ignore", invalid="ignore"):
        rhat = np.sqrt(var_plus / W)
    return np.where(W > 0, rhat, 1.0)
