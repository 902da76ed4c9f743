"""Kernelised PMF (Zhou, Shan, Banerjee & Sapiro, SDM 2012): U_d ~ N(0, C_M), V_d ~ N(0, C_N), MAP.

With U = G_M A, V = G_N B the MAP objective is ½σ⁻² Σ_L (y − (G_M A Bᵀ G_Nᵀ))² + ½(‖A‖² + ‖B‖²),
i.e. the factored con-MV-GP objective (algorithms/mvgp/core.py) at λ = 1, no ½‖ABᵀ‖²_F term and a
fixed rank; solved by the same L-BFGS refinement. The ridge ½(‖A‖² + ‖B‖²) shrinks the singular
values of the fit by σ², so with ``scale='noise-edge'`` (default) σ² is a multiple of the data's
null edge; scores for ranking come from the zero-filled fit of the same model (see
``malt.algorithms.mvgp``).
"""
from __future__ import annotations

from dataclasses import dataclass

from malt.params import Interval, param
from malt.registry import Algorithm, register
from malt.algorithms.mvgp import LAM_EDGE_GRID, EdgeScaled, predict_split


@dataclass(frozen=True, kw_only=True)
class KPMFParams(EdgeScaled):
    rank: int = param(10, "number of latent factors", Interval(1, None), max_from="min_side")
    sigma2: float = param(0.5, "noise variance σ² (select=none); with λ = 1 and a fixed rank it is the shrinkage "
                          "of the singular values, so with scale='noise-edge' it is in units of null_edge",
                          Interval(0, None, "neither"))
    sigma2_grid: tuple[float, ...] = param(LAM_EDGE_GRID, "candidate σ² (select=inner-cv), in units of null_edge "
                                           "with scale='noise-edge' (the paper's absolute grid is PAPER_SIGMA2)")


@register
class KPMF(Algorithm):
    """KPMF: kernelised probabilistic matrix factorisation with graph diffusion kernels."""
    name = "kpmf"
    tasks = frozenset({"ratings"})
    Params = KPMFParams
    version = "10"  # v10: warm-started ranking fits (see mvgp's v13);
    # v9: bias penalties and the ranking fit's popularity offset chosen on the holdout;
    # v5: bias offsets, shared inner-CV vocabulary by default; v6: noise-edge units, ranking fit;
    # v7: symmetric covariance root, warm starts along the σ² grid, ftol 1e-6 (algorithms/mvgp);
    # v8: `converged` is the solver's own test (was: rank growth, never set at a fixed rank)

    def run(self, split, params, ctx):
        return predict_split(split, params, ctx, lam=1.0, frob=0.0, fixed_rank=params.rank)
