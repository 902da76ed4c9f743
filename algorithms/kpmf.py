"""Kernelised PMF (Zhou, Shan, Banerjee & Sapiro, SDM 2012): U_d ~ N(0, C_M), V_d ~ N(0, C_N), MAP.

With U = G_M A, V = G_N B the MAP objective is ½σ⁻² Σ_L (y − (G_M A Bᵀ G_Nᵀ))² + ½(‖A‖² + ‖B‖²),
i.e. the factored con-MV-GP objective (algorithms/mvgp/core.py) at λ = 1, no ½‖ABᵀ‖²_F term and a
fixed rank; solved by the same L-BFGS refinement.
"""
from __future__ import annotations

from dataclasses import dataclass

from malt.params import Interval, param
from malt.registry import Algorithm, register
from malt.algorithms.mvgp import PAPER_SIGMA2, _Common, predict_split


@dataclass(frozen=True, kw_only=True)
class KPMFParams(_Common):
    rank: int = param(10, "number of latent factors", Interval(1, None))
    sigma2: float = param(12.7, "noise variance σ² (select=none)", Interval(0, None, "neither"))
    sigma2_grid: tuple[float, ...] = param(PAPER_SIGMA2[12:15],
                                           "candidate σ² (select=inner-cv; the paper's grid is PAPER_SIGMA2)")


@register
class KPMF(Algorithm):
    """KPMF: kernelised probabilistic matrix factorisation with graph diffusion kernels."""
    name = "kpmf"
    tasks = frozenset({"ratings"})
    Params = KPMFParams
    version = "5"  # v5: bias offsets, shared inner-CV vocabulary by default

    def run(self, split, params, ctx):
        return predict_split(split, params, ctx, lam=1.0, frob=0.0, fixed_rank=params.rank)
