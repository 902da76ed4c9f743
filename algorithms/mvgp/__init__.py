"""Matrix-variate GPs for transposable data (Koyejo, Lee & Ghosh 2014): mvgp, trace-gp, con-mvgp."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt.algorithms.recommenders import Biases, fit_biases
from malt.params import Interval, Options, param
from malt.registry import Algorithm, register
from malt.selection import InnerCVParams, candidates, inner_fold_ids, select
from malt.splits import Prediction

from .core import HeatRoot, diffusion_sqrt, fit_mvgp, objective, smooth_gradient_top  # noqa: F401

# The paper's grid (§5): λ at 5 and σ² at 20 values log-spaced in [1e-3, 1e3] (100 fits per run;
# KPMF, with λ fixed, searches the same 20 σ²). The defaults keep a few of the paper's grid points:
# with the ½‖B‖²_F prior over all M·N entries and only a few percent of them observed, σ² acts as
# the ridge/data balance and the optimum on rating residuals lies at small σ² (σ² ≥ 0.3 shrinks the
# fit to the bias model, σ² ≤ 0.08 needs rank > 50); KPMF's best σ² is of order 10–30. λ = 31.6 won
# every inner CV on MovieLens-100K against 1000 (which leaves rank 0-2: the bias model).
PAPER_LAMBDA = tuple(float(v) for v in np.logspace(-3, 3, 5))
PAPER_SIGMA2 = tuple(float(v) for v in np.logspace(-3, 3, 20))


def covariance_sqrt(ctx, graph, which: str, kind: str, n: int, beta: float = 1.0, shift: float = 1.0):
    """G with G Gᵀ = C for the row/column covariance: None (identity) or the diffusion kernel
    exp(−β𝓛) + shift·I as the sparse exact root :class:`HeatRoot` (never a dense n × n matrix)."""
    if kind == "identity" or graph is None:
        return None
    return HeatRoot(graph, beta, shift)


def predict_split(split, params, ctx, *, lam, frob, fixed_rank=None):
    """Fit eq. 11 on split.train minus its offset (regularised row + column biases, or the global
    mean); values at the test entries and full-row scores for the distinct test rows (the ratings
    task's ranking convention). With select='inner-cv', σ² (and λ when the model has it) are chosen
    on ``inner_rounds`` of ``inner_folds`` inner folds of the training ratings."""
    train = sp.coo_matrix(split.train)
    train.sum_duplicates()
    GM = covariance_sqrt(ctx, split.row_graph, "rows", params.row_cov, train.shape[0], params.beta, params.shift)
    GN = covariance_sqrt(ctx, split.col_graph, "cols", params.col_cov, train.shape[1], params.beta, params.shift)

    def fit(idx, option):
        """(factors, offset) fitted on the training entries idx (the offset too: no leak into validation)."""
        part = sp.coo_matrix((train.data[idx], (train.row[idx], train.col[idx])), shape=train.shape)
        if params.center == "biases":
            off = fit_biases(part)
        else:
            off = Biases(float(part.data.mean()), np.zeros(train.shape[0]), np.zeros(train.shape[1]))
        c = sp.coo_matrix((part.data - off.at(part.row, part.col), (part.row, part.col)), shape=train.shape)
        f = fit_mvgp(c, GM, GN, sigma2=option.sigma2, lam=getattr(option, "lam", lam), frob=frob,
                     max_rank=option.max_rank, fixed_rank=fixed_rank, grow_block=option.grow_block, ftol=1e-8,
                     rng=np.random.default_rng(0))
        return f, off

    diagnostics = {}
    if params.select == "inner-cv":
        ids = inner_fold_ids(train.nnz, params.inner_folds, ctx.rng)
        ids[ids >= params.inner_rounds] = -1

        def evaluate(option, tr, val):
            f, off = fit(tr, option)
            r, c = train.row[val], train.col[val]
            e = np.einsum("ij,ij->i", f["Z"][r], f["W"][c]) + off.at(r, c) - train.data[val]
            return float(e @ e / max(val.size, 1))

        grids = {"sigma2": params.sigma2_grid}
        if lam > 0 and hasattr(params, "lam_grid"):
            grids["lam"] = params.lam_grid
        choice = select(candidates(params, grids), evaluate, ids,
                        progress=lambda f: ctx.progress(0.8 * f, "inner CV"))
        params = choice.best
        diagnostics.update(choice.diagnostics())
    f, off = fit(np.arange(train.nnz), params)
    values = np.einsum("ij,ij->i", f["Z"][split.test_rows], f["W"][split.test_cols]) + off.at(split.test_rows,
                                                                                            split.test_cols)
    urows = np.unique(split.test_rows)
    scores = f["Z"][urows] @ f["W"].T + off.mu + off.user[urows][:, None] + off.item[None, :]
    diagnostics.update({"rank": f["rank"], "objective": f["objective"][-1], "lambda": getattr(params, "lam", lam),
                        "sigma2": params.sigma2, "converged": bool(f["converged"])})
    return Prediction(values=values, scores=scores, diagnostics=diagnostics)


@dataclass(frozen=True, kw_only=True)
class _Common(InnerCVParams):
    select: str = param("inner-cv", "'inner-cv': choose σ² (and λ) from sigma2_grid (× lam_grid) by inner "
                        "cross-validation on the training ratings; 'none': use sigma2 (and lam) as given",
                        Options("none", "inner-cv"))
    inner_rounds: int = param(1, "inner folds actually validated (1 = one holdout of 1/inner_folds of the "
                              "training ratings; inner_folds = full inner cross-validation)", Interval(1, None))
    sigma2: float = param(0.1, "noise variance σ² (eq. 11; select=none)", Interval(0, None, "neither"))
    sigma2_grid: tuple[float, ...] = param(PAPER_SIGMA2[8:10],
                                           "candidate σ² (select=inner-cv); the paper's grid is 20 values "
                                           "log-spaced in [1e-3, 1e3] (PAPER_SIGMA2)")
    center: str = param("biases", "offset removed before the GP fit: regularised row + column 'biases' "
                        "(Koren 2010; `recommenders.fit_biases`) or the 'global' mean (the paper)",
                        Options("biases", "global"))
    row_cov: str = param("diffusion", "row covariance C_M: 'diffusion' exp(−𝓛)+I of row_graph, or 'identity'",
                         Options("diffusion", "identity"))
    col_cov: str = param("diffusion", "column covariance C_N: 'diffusion' of col_graph, or 'identity'",
                         Options("diffusion", "identity"))
    beta: float = param(1.0, "diffusion time β of the graph kernels exp(−β𝓛) + shift·I", Interval(0, None, "neither"))
    shift: float = param(1.0, "diagonal shift of the graph kernels (larger = weaker graph coupling)",
                         Interval(0, None, "neither"))
    max_rank: int = param(50, "largest rank of B the solver grows to", Interval(1, None))
    grow_block: int = param(5, "factors added per rank-growth step (top singular pairs of −∇ above λ)",
                            Interval(1, None))


@dataclass(frozen=True, kw_only=True)
class MVGPParams(_Common):
    sigma2: float = param(2.98, "noise variance σ² (eq. 11; select=none)", Interval(0, None, "neither"))
    sigma2_grid: tuple[float, ...] = param(PAPER_SIGMA2[10:13],
                                           "candidate σ² (select=inner-cv); without the nuclear norm the "
                                           "fit is full rank and needs the larger σ² of the paper's grid "
                                           "(σ² ≤ 0.7 overfits: RMSE above the bias model on MovieLens)")


@dataclass(frozen=True, kw_only=True)
class TraceGPParams(_Common):
    lam: float = param(1.0, "nuclear-norm weight λ (eq. 10; select=none)", Interval(0, None, "neither"))
    lam_grid: tuple[float, ...] = param(PAPER_LAMBDA[3:4], "candidate λ (select=inner-cv; the paper's 5 "
                                        "values log-spaced in [1e-3, 1e3] are PAPER_LAMBDA)")


@dataclass(frozen=True, kw_only=True)
class ConMVGPParams(_Common):
    lam: float = param(1.0, "nuclear-norm weight λ (eq. 10; select=none)", Interval(0, None, "neither"))
    lam_grid: tuple[float, ...] = param(PAPER_LAMBDA[3:4], "candidate λ (select=inner-cv; the paper's 5 "
                                        "values log-spaced in [1e-3, 1e3] are PAPER_LAMBDA)")


@register
class MVGP(Algorithm):
    """MV-GP: matrix-variate GP posterior mean (eq. 11 with λ = 0)."""
    name = "mvgp"
    tasks = frozenset({"ratings"})
    Params = MVGPParams
    version = "6"  # v5: bias offsets, shared inner-CV vocabulary by default; v6: its own σ² grid

    def run(self, split, params, ctx):
        return predict_split(split, params, ctx, lam=0.0, frob=1.0)


@register
class TraceGP(Algorithm):
    """Trace-GP: nuclear-norm-regularised GP mean, no ½‖B‖²_F prior term."""
    name = "trace-gp"
    tasks = frozenset({"ratings"})
    Params = TraceGPParams
    version = "5"  # v5: bias offsets, shared inner-CV vocabulary by default

    def run(self, split, params, ctx):
        return predict_split(split, params, ctx, lam=params.lam, frob=0.0)


@register
class ConMVGP(Algorithm):
    """Con-MV-GP: MV-GP with the nuclear-norm constraint on the posterior mean (eq. 11)."""
    name = "con-mvgp"
    tasks = frozenset({"ratings"})
    Params = ConMVGPParams
    version = "5"  # v5: bias offsets, shared inner-CV vocabulary by default

    def run(self, split, params, ctx):
        return predict_split(split, params, ctx, lam=params.lam, frob=1.0)
