"""Registered semi-supervised algorithms: thin wrappers over `methods` on a cached kNN graph.

All share the graph parameters (k, metric, weight, width, symmetrize, scale: one `malt.numerics.graphs`
spec, one cached graph per dataset) and the selection vocabulary of `malt.numerics.selection` (select,
inner_folds, k_grid and each method's ``<name>_grid``); multi-class prediction is one-vs-rest
(argmax of the per-class scores).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt.numerics import graphs
from malt.params import Interval, Options, Params, When, param
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams, candidates, inner_fold_ids, select
from malt.splits import Prediction

from . import methods as m
from .methods import degrees, laplacian

VERSION = "2"
"""Version of every algorithm of the family: 2 = graphs from malt.numerics.graphs, multigrid-CG solves,
selection through malt.numerics.selection."""
SOLVE_VERSION = "3"
"""Version of the methods whose systems are graph Laplacians (M-matrices) solved by multigrid CG from
2000 rows: 3 = K-cycle multigrid in reverse Cuthill–McKee order, equal couplings tie-broken in the
aggregation (the same solutions to the CG tolerance 1e-8; rounding-level differences)."""


@dataclass(frozen=True, kw_only=True)
class GraphParams(InnerCVParams):
    k: int = param(10, "neighbours per point in the kNN graph (before symmetrisation)", Interval(1, None),
                   max_from="points-1")
    k_grid: tuple[int, ...] = param((10, 5, 20), "candidates for k (select=inner-cv; earlier wins ties)",
                                    Interval(1, None))
    metric: str = param("euclidean", "distance of the kNN search: euclidean, or cosine (text)",
                        Options("euclidean", "cosine"))
    weight: str = param("rbf", "edge weights: rbf exp(-d²/2σ²), similarity (cosine similarity, metric=cosine), "
                        "or binary", Options("rbf", "similarity", "binary"))
    width: float = param(0.0, "RBF width σ; 0 = the median distance to the k nearest neighbours",
                         Interval(0, None), active_when=When(weight="rbf"))
    symmetrize: str = param("max", "kNN graph symmetrisation: max (union), mean ((W+Wᵀ)/2) or min (mutual)",
                            Options("max", "mean", "min"))
    scale: str = param("none", "feature scaling before the graph ('none' as in the thesis)",
                       Options("none", "standardize", "minmax"))

    def graph_spec(self) -> graphs.GraphSpec:
        return graphs.GraphSpec(k=self.k, metric=self.metric, weight=self.weight,
                                width=self.width if self.width > 0 else "median",
                                symmetrize=self.symmetrize, scale=self.scale)


class _GraphAlgorithm(Algorithm):
    """A method on the shared kNN graph of `malt.numerics.graphs`; with select=inner-cv, k and the method's
    own ``*_grid`` parameters are chosen by stratified inner CV on the labelled points only
    (`malt.numerics.selection`), as the thesis (§3.6) chose "parameter values … by cross-validation"."""

    tasks = frozenset({"semisupervised"})
    Params = GraphParams
    version = VERSION
    needs_features = False
    own_grids: tuple[str, ...] = ()
    """Names of the method's own parameters that have a ``<name>_grid`` field."""

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):  # pragma: no cover - interface
        raise NotImplementedError

    def decide(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx, progress=None):
        """(scores (n, C), labels (n,)) of the final fit; ``progress`` (fraction, message) hears of
        a long solve. Here the argmax of `scores`; a method whose scores can underflow overrides it."""
        F = self.scores(W, nbrs, Xs, lab, y_l, C, params, diag, ctx)
        return F, np.argmax(F, axis=1)

    def grids(self, params) -> dict:
        return {"k": params.k_grid, **{name: getattr(params, f"{name}_grid") for name in self.own_grids}}

    def _inputs(self, split, params, ctx, lists_k: int | None = None):
        spec = params.graph_spec()
        W = graphs.cached_graph(ctx, split.X, spec, lists_k=lists_k)
        nbrs = Xs = None
        if self.needs_features:
            nbrs = graphs.cached_neighbours(ctx, split.X, max(params.k, lists_k or 0), spec)[0][:, :params.k]
            Xs = ctx.cached("features", {"metric": params.metric, "scale": params.scale},
                            lambda: graphs.prepared(split.X, params.metric, params.scale), producer=graphs.PRODUCER)
        return W, nbrs, Xs

    def held_out_scores(self, W, nbrs, Xs, lab, y_l, C, params, ctx):
        """For inner CV: a function (train, val) -> scores (|val|, C) of the labelled points
        ``lab[val]`` when the method is fitted on ``lab[train]`` alone. Here one `scores` fit per
        split; a method whose system is shared by the splits overrides it to factorise it once per
        candidate (the same scores up to rounding)."""
        return lambda train, val: self.scores(W, nbrs, Xs, lab[train], y_l[train], C, params, {}, ctx)[lab[val]]

    def inner_loss(self, F, y_val, params) -> float:
        """Inner CV's loss of held-out scores F (|V|, C) against their classes y_val (|V|,), under the
        selecting ``params`` (not a candidate's, whose select-only fields are reset): the 0/1 error of
        the argmax here."""
        return float(np.mean(np.argmax(F, axis=1) != y_val))

    def choose(self, split, params, ctx, lab, y_l, C, diag):
        """Inner CV over k × the method's grids on the labelled points; returns the chosen Params."""
        options = candidates(params, self.grids(params))
        lists_k = max(o.k for o in options)
        ids = inner_fold_ids(len(lab), params.inner_folds, ctx.rng, strata=y_l)
        current: dict = {}  # select() runs all inner folds of one candidate before the next

        def inner_error(option, train, val):
            if current.get("option") is not option:
                current.clear()
                W, nbrs, Xs = self._inputs(split, option, ctx, lists_k)
                current.update(option=option, fit=self.held_out_scores(W, nbrs, Xs, lab, y_l, C, option, ctx))
            return self.inner_loss(current["fit"](train, val), y_l[val], params)  # candidates drop inner_*

        choice = select(options, inner_error, ids,
                        progress=lambda f: ctx.progress(0.9 * f, "inner cross-validation"))
        diag.update(choice.diagnostics())
        for name, value in diag["selected"].items():  # flat numbers too: the store keeps scalar diagnostics
            diag[f"selected_{name}"] = value
        return choice.best, lists_k

    def run(self, split, params, ctx):
        y = np.asarray(split.y)
        lab = np.flatnonzero(y >= 0)
        C = int(split.n_classes)
        m.check_labels(lab, C, y[lab])
        diag: dict = {}
        lists_k = None
        if params.select == "inner-cv" and len(lab) >= 2:
            params, lists_k = self.choose(split, params, ctx, lab, y[lab], C, diag)
        W, nbrs, Xs = self._inputs(split, params, ctx, lists_k)
        diag["edges"] = int(W.nnz // 2)
        start = 0.9 if lists_k is not None else 0.0  # inner CV reported 0–0.9
        F, labels = self.decide(W, nbrs, Xs, lab, y[lab], C, params, diag, ctx,
                                progress=lambda f, message: ctx.progress(start + (1 - start) * f, message))
        return Prediction(scores=F, labels=labels, diagnostics=diag)


INNER_LOSSES = ("error-brier", "brier", "error")
TIE_WEIGHT = 1e-9
"""Weight of the Brier score beside the 0/1 error in inner_loss='error-brier': two errors differ by at
least 1/ℓ over ℓ labelled points and a mean Brier score is at most 2, so below ℓ = 5·10⁸ the Brier
score only orders candidates whose errors tie."""


def brier_loss(F: np.ndarray, y_val: np.ndarray) -> float:
    """Mean Brier score Σ_c (f_c − [c = y])² of held-out class-probability rows F (|V|, C), each
    entry clipped to [0, 1] first; 0 for certain right answers, 2 for certain wrong ones. O(|V| C)."""
    P = np.clip(np.asarray(F, dtype=float), 0.0, 1.0)
    P[np.arange(len(y_val)), y_val] -= 1.0
    return float(np.mean(np.sum(P ** 2, axis=1)))


@dataclass(frozen=True, kw_only=True)
class GFParams(GraphParams):
    inner_loss: str = param("error-brier", "what inner CV (select=inner-cv) minimises over the held-out labelled "
                            "points: error-brier, the 0/1 error with its ties broken by the Brier score "
                            "Σ_c (f_c − y_c)² of their harmonic scores (class probabilities), not by the grid "
                            "order (50 labelled points leave 0-1 errors per inner fold, so k often ties); "
                            "brier, the Brier score alone (prefers sparse graphs, whose scores are more "
                            "confident: worse on the cosine text graphs); error, the 0/1 error (version 4)",
                            Options(*INNER_LOSSES))


@register
class GaussianFields(_GraphAlgorithm):
    """Gaussian fields / harmonic functions (Zhu et al. 2003): f_u = (D_uu − W_uu)⁻¹ W_uℓ y_ℓ (eq. 3.8)."""

    name = "gf"
    Params = GFParams
    version = "5"
    """4: SOLVE_VERSION 3, and from 2000 points the graph put in reverse Cuthill–McKee order first.
    5: inner CV breaks ties of the held-out 0/1 error by the Brier score (``inner_loss='error-brier'``)
    instead of the grid order: on USPS 1–4 (l = 50) the 0/1 error ties k = 3 with k = 5 and 10 on 4 of
    5 folds, the Brier score picks k = 3 (figures.d/ch3-glp-cells.md, R5b)."""

    def inner_loss(self, F, y_val, params) -> float:
        if params.inner_loss == "error":
            return super().inner_loss(F, y_val, params)
        if params.inner_loss == "brier":
            return brier_loss(F, y_val)
        return super().inner_loss(F, y_val, params) + TIE_WEIGHT * brier_loss(F, y_val)

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        return m.gaussian_fields(W, lab, m.one_hot(y_l, C))

    def decide(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx, progress=None):
        F = m.gaussian_fields(W, lab, m.one_hot(y_l, C), progress=progress, diagnostics=diag)
        return F, np.argmax(F, axis=1)


@dataclass(frozen=True, kw_only=True)
class TikregParams(GraphParams):
    gamma: float = param(0.1, "smoothness weight γ of (ℓγ L_u + I_k) (eq. 3.11)", Interval(0, None, "neither"))
    gamma_grid: tuple[float, ...] = param((0.1, 0.01, 1.0), "candidates for gamma (select=inner-cv)",
                                          Interval(0, None, "neither"))


@register
class Tikreg(_GraphAlgorithm):
    """Tikhonov regularisation on the graph with f ⊥ 1 (Belkin et al. 2004; eqs. 3.11–3.12)."""

    name = "tikreg"
    version = SOLVE_VERSION
    Params = TikregParams
    own_grids = ("gamma",)

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        return m.tikhonov(W, lab, m.one_hot(y_l, C), params.gamma)


@dataclass(frozen=True, kw_only=True)
class AlphaParams(GraphParams):
    alpha: float = param(0.9, "propagation weight α = 1/(1+μ) (eqs. 3.15, 3.19); near 1 every point gets the "
                         "class with the most labelled degree mass", Interval(0, 1, "neither"))
    alpha_grid: tuple[float, ...] = param((0.9, 0.5, 0.99), "candidates for alpha (select=inner-cv)",
                                          Interval(0, 1, "neither"))


@register
class LGC(_GraphAlgorithm):
    """Local and global consistency (Zhou et al. 2004): F = (1−α)(I − αS)⁻¹Y (eq. 3.15), every row
    resolved however far its scores have decayed (`methods.lgc_solution`); the labels come from each
    row's own scale, so a row whose scores underflow float64 is still decided. With select=inner-cv each
    inner split is solved only until every held-out row's decision is certified — its two largest scores
    more than twice their error bound apart, the bound v_i·max_j(|r_j|/v_j)/(1 − α) from the residual r —
    which gives the decisions of the full solve (a split that cannot be certified gets the full solve)."""

    name = "lgc"
    Params = AlphaParams
    own_grids = ("alpha",)
    version = "7"
    """3: from 2,000 points the scores of rows far from the labels are resolved (magnitude stages,
    `resolved`) instead of left below one CG solve's error (relative residual 1e-8); fewer points:
    unchanged (sparse LU). 4: each stage solves a band of rows near the resolved ones instead of all
    the rest (scores differ within the same error bound; decisions the same wherever no row is
    uncertain). 5: the stages solve by Chebyshev semi-iteration on [1 − α, 1 + α] instead of CG (the
    same residual goal; scores differ within the same bound; ``cg_iterations`` counts its iterations).
    6: each stage resolves a row at δ = 1e-3 of its largest score instead of 1e-6 (`resolved.RESOLUTION`;
    after K stages every score within K·1e-3 of its row's sum), and a band holding every unresolved row
    stops iterating once all its rows are resolved; from 30,000 rows only is the graph put in reverse
    Cuthill–McKee order first (`methods.LGC_LOCALITY_MIN_ROWS`). Swiss roll, 50 labels, k = 10: the same
    decisions at 10⁴ and 10⁵ points; 10⁴ points 0.036 → 0.026 s, 10⁵ 0.51 → 0.44 s (one thread). Inner
    CV solves each split only until its held-out rows' decisions are certified (`methods.HeldOutLGC`; the
    same decisions): select=inner-cv at 10⁴ points 2.6 → 1.35 s. 7: each stage iterates to an absolute
    residual of 1e-10 of its right-hand side instead of 1e-13 (`resolved.STAGE_RTOL`: more, cheaper stages), and
    the Chebyshev step updates its direction by BLAS in place (`solvers.Chebyshev`); scores differ within the
    same bound. Swiss roll, 50 labels, k = 10, one thread: the same decisions at 10⁴–10⁶ points, 10⁵ points
    0.39 → 0.35 s, 10⁶ 5.4 → 4.9 s."""

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        return m.lgc_solution(W, lab, m.one_hot(y_l, C), params.alpha).scores

    def held_out_scores(self, W, nbrs, Xs, lab, y_l, C, params, ctx):
        """Inner CV reads the argmax of the held-out rows: here each row's scores up to a positive
        factor of that row, which never underflow, from a solve that stops once those rows' decisions are
        certified (`methods.HeldOutLGC`: the decisions of `lgc_solution`)."""
        Yl = m.one_hot(y_l, C)
        held = m.HeldOutLGC(W, lab, params.alpha)  # the decisions of the held-out rows only, certified
        return lambda train, val: held.held_out(train, val, Yl[train])

    def decide(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx, progress=None):
        solution = m.lgc_solution(W, lab, m.one_hot(y_l, C), params.alpha, progress)
        diag.update(stages=solution.stages, cg_iterations=solution.iterations,
                    uncertain_rows=solution.uncertain_rows)
        return solution.scores, solution.labels


@dataclass(frozen=True, kw_only=True)
class LNPParams(AlphaParams):
    solver: str = param("direct", "'direct': the fixed point (1−α)(I−αU)⁻¹y that eq. 3.19 converges to, by one "
                        "sparse LU; 'iterate': eq. 3.19 until max |Δf| < tol, as the thesis ran it (the same "
                        "answer to tol, ~log(tol)/log(α) sparse products: 2000 at α = 0.99)",
                        Options("iterate", "direct"))
    tol: float = param(1e-9, "stop iterating when max |Δf| < tol", Interval(0, None, "neither"),
                       active_when=When(solver="iterate"))


@register
class LNP(_GraphAlgorithm):
    """Linear neighbourhood propagation (Wang & Zhang 2006): f ← αUf + (1−α)y, U non-symmetric (eq. 3.19)."""

    name = "lnp"
    Params = LNPParams
    version = "3"  # 3: solver='direct' by default (the same fixed point, without 2000 sequential sweeps)
    needs_features = True
    own_grids = ("alpha",)

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        U = ctx.cached("lnp-weights", params.graph_spec().to_dict(), lambda: m.lnp_weights(Xs, nbrs))
        Y = np.zeros((W.shape[0], C))
        Y[lab] = m.one_hot(y_l, C)
        if params.solver == "direct":
            return (1 - params.alpha) * m.solvers.DirectSolver(sp.identity(W.shape[0]) - params.alpha * U).solve(Y)
        F, it = m.propagate(U, Y, params.alpha, tol=params.tol)
        diag["iterations"] = it
        return F

    def held_out_scores(self, W, nbrs, Xs, lab, y_l, C, params, ctx):
        """I − αU does not depend on which points are labelled: one LU per candidate serves every
        inner split (bit-for-bit the per-split `scores` of solver='direct')."""
        if params.solver != "direct":
            return super().held_out_scores(W, nbrs, Xs, lab, y_l, C, params, ctx)
        U = ctx.cached("lnp-weights", params.graph_spec().to_dict(), lambda: m.lnp_weights(Xs, nbrs))
        lu = m.solvers.DirectSolver(sp.identity(W.shape[0]) - params.alpha * U)
        Yl = m.one_hot(y_l, C)

        def fit(train, val):
            Y = np.zeros((W.shape[0], C))
            Y[lab[train]] = Yl[train]
            return (1 - params.alpha) * lu.solve(Y)[lab[val]]

        return fit


@dataclass(frozen=True, kw_only=True)
class CKParams(GraphParams):
    dim: int = param(0, "leading eigenvectors of D^{-1/2}WD^{-1/2} in the embedding; 0 = number of classes",
                     Interval(0, None))
    dim_grid: tuple[int, ...] = param((0, 10), "candidates for dim (select=inner-cv; 0 = number of classes)",
                                      Interval(0, None))
    C: float = param(1.0, "SVM penalty C of the RBF-kernel SVM on the embedding", Interval(0, None, "neither"))
    C_grid: tuple[float, ...] = param((1.0, 10.0, 100.0), "candidates for C (select=inner-cv)",
                                      Interval(0, None, "neither"))


@register
class ClusterKernel(_GraphAlgorithm):
    """Cluster kernels (Chapelle et al. 2003): spectral embedding + an RBF-kernel SVM, as the thesis
    ran it (§3.3.5, §3.6: "CK using SVMs with RBF kernel")."""

    name = "ck"
    Params = CKParams
    own_grids = ("dim", "C")

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        from sklearn.svm import SVC

        dim = params.dim or C
        V = ctx.cached("ck-embedding", {**params.graph_spec().to_dict(), "dim": dim},
                       lambda: m.cluster_kernel_embedding(W, dim))
        F = np.zeros((W.shape[0], C))
        present = np.unique(y_l)
        if present.size == 1:
            F[:, present[0]] = 1.0
            return F
        clf = SVC(C=params.C, kernel="rbf", gamma="scale", decision_function_shape="ovr").fit(V[lab], y_l)
        D = clf.decision_function(V)
        if present.size == 2:  # one column: positive for classes_[1]
            D = np.column_stack([-D, D])
        F[:] = D.min() - 1.0  # classes without a labelled point rank last
        F[:, clf.classes_] = D
        return F


@dataclass(frozen=True, kw_only=True)
class GWEMParams(GraphParams):
    steps: int = param(8, "random-walk length m (P^m)", Interval(1, None))
    steps_grid: tuple[int, ...] = param((8, 4, 16), "candidates for steps (select=inner-cv)", Interval(1, None))
    self_loop: float = param(1.0, "self-transition weight added to W before normalising", Interval(0, None))


@register
class GWEM(_GraphAlgorithm):
    """Markov random walks with EM (Szummer & Jaakkola 2002; 'mwem' in the thesis tables, §3.3.5)."""

    name = "gwem"
    Params = GWEMParams
    own_grids = ("steps",)

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        F, it = m.random_walk_em(W, lab, y_l, C, params.steps, params.self_loop)
        diag["em_iterations"] = it
        return F


@dataclass(frozen=True, kw_only=True)
class EmbeddingParams(GraphParams):
    """Laplacian eigenmaps: the alignment matrix is the graph's Laplacian (nothing more to set)."""


@dataclass(frozen=True, kw_only=True)
class LLEParams(EmbeddingParams):
    reg: float = param(1e-3, "LLE regulariser on the local Gram matrices (×trace)", Interval(0, None))


@dataclass(frozen=True, kw_only=True)
class LTSAParams(EmbeddingParams):
    tangent_dim: int = param(1, "LTSA local tangent dimension d of eq. 3.34's local fits (the label embedding f "
                             "itself is 1-D per class, §3.5)", Interval(1, None))
    tangent_dim_grid: tuple[int, ...] = param((1, 2, 4), "candidates for tangent_dim (select=inner-cv)",
                                              Interval(1, None))


@dataclass(frozen=True, kw_only=True)
class LabelConstraint(Params):
    """The constrained variants' multiplier (joined to an embedding's Params)."""

    alpha: float = param(1.0, "Lagrange multiplier α of the label constraint (eq. 3.39)", Interval(0, None, "neither"))
    alpha_grid: tuple[float, ...] = param((1.0, 0.1, 10.0), "candidates for alpha (select=inner-cv)",
                                          Interval(0, None, "neither"))


def _own_params(bases: type[Params] | tuple[type[Params], ...], name: str) -> type[Params]:
    """A per-algorithm subclass of ``bases`` (the registry names each Params class after its one owner)."""
    bases = bases if isinstance(bases, tuple) else (bases,)
    cls = dataclass(frozen=True, kw_only=True)(type(name, bases, {"__module__": __name__, "__qualname__": name}))
    globals()[name] = cls  # importable by name, so instances pickle
    return cls


def _alignment(kind, W, nbrs, Xs, params, ctx):
    if kind == "le":
        return laplacian(W)
    spec = {"kind": kind, "k": params.k, "metric": params.metric, "scale": params.scale}
    if kind == "lle":
        return ctx.cached("lle-matrix", {**spec, "reg": params.reg}, lambda: m.lle_matrix(Xs, nbrs, params.reg))
    return ctx.cached("ltsa-matrix", {**spec, "dim": params.tangent_dim},
                      lambda: m.ltsa_matrix(Xs, nbrs, params.tangent_dim))


class _Embedding(_GraphAlgorithm):
    Params = EmbeddingParams
    kind = "le"

    @property
    def needs_features(self):
        return self.kind != "le"

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        return m.embedding_lp(_alignment(self.kind, W, nbrs, Xs, params, ctx), lab, m.one_hot(y_l, C))

    def held_out_scores(self, W, nbrs, Xs, lab, y_l, C, params, ctx):
        """One factorisation of M_uu per candidate for all inner splits (`methods.HeldOutEmbeddingLP`,
        the Schur complement on the labelled points); a split it cannot take exactly is solved by
        `scores` as before."""
        M = _alignment(self.kind, W, nbrs, Xs, params, ctx)
        reduced = m.HeldOutEmbeddingLP(M, lab)
        Yl = m.one_hot(y_l, C)

        def fit(train, val):
            F = reduced.held_out(train, val, Yl[train]) if reduced.available else None
            return m.embedding_lp(M, lab[train], Yl[train])[lab[val]] if F is None else F

        return fit


class _ConstrainedEmbedding(_Embedding):
    Params = _own_params((EmbeddingParams, LabelConstraint), "ConstrainedEmbeddingParams")
    own_grids = ("alpha",)
    held_out_scores = _GraphAlgorithm.held_out_scores  # eq. 3.39's constraint couples all rows: one fit per split

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        Y = m.one_hot(y_l, C)
        if self.kind == "le":  # M = L_s, A = D^{1/2} (eq. 3.33); the sign of g = D^{1/2}f is that of f
            Ls = sp.identity(W.shape[0]) - graphs.normalized_adjacency(W)
            return m.constrained_embedding_lp(Ls, lab, Y, params.alpha, a=np.sqrt(degrees(W)))
        return m.constrained_embedding_lp(_alignment(self.kind, W, nbrs, Xs, params, ctx), lab, Y, params.alpha)


@register
class LELP(_Embedding):
    """Laplacian-eigenmaps label propagation, f_u = −M_uu⁻¹M_uℓ y_ℓ with M = L_u (eq. 3.37; equals GF)."""

    name, kind = "lelp", "le"
    version = SOLVE_VERSION
    Params = _own_params(EmbeddingParams, "LELPParams")


@register
class LLELP(_Embedding):
    """LLE label propagation, eq. 3.37 with M = (I − W)ᵀ(I − W)."""

    name, kind = "llelp", "lle"
    Params = _own_params(LLEParams, "LLELPParams")


@register
class LTSALP(_Embedding):
    """LTSA label propagation, eq. 3.37 with the LTSA alignment matrix."""

    name, kind = "ltsalp", "ltsa"
    Params = _own_params(LTSAParams, "LTSALPParams")
    own_grids = ("tangent_dim",)
    version = "4"  # 3: tangent_dim joins the inner-CV grid; 4: d < k, ridge on a singular factor


@register
class LELPC(_ConstrainedEmbedding):
    """Constrained LE label propagation, f ⊥ D^{1/2}1 with M = L_s (eqs. 3.39–3.40)."""

    name, kind = "lelpc", "le"
    version = SOLVE_VERSION
    Params = _own_params((EmbeddingParams, LabelConstraint), "LELPCParams")


@register
class LLELPC(_ConstrainedEmbedding):
    """Constrained LLE label propagation, f ⊥ 1 (eqs. 3.39–3.40)."""

    name, kind = "llelpc", "lle"
    Params = _own_params((LLEParams, LabelConstraint), "LLELPCParams")


@register
class LTSALPC(_ConstrainedEmbedding):
    """Constrained LTSA label propagation, f ⊥ 1 (eqs. 3.39–3.40)."""

    name, kind = "ltsalpc", "ltsa"
    Params = _own_params((LTSAParams, LabelConstraint), "LTSALPCParams")
    own_grids = ("alpha", "tangent_dim")
    version = "4"  # 3: tangent_dim joins the inner-CV grid; 4: d < k, ridge on a singular factor


@register
class MajorityClass(Algorithm):
    """The baseline every Figure 3.4–3.6 cell is read against: every point gets the class most frequent
    among the labelled points (ties: the smallest class id). No graph. On Pima (minority 268/768 =
    34.9 %) and Hepatitis (32/155 = 20.6 %) the thesis's CK cells (34.8 ± 0.3; 20.8–21.7) sit at this
    baseline's error, and on Letter-EF (768/1543 = 49.8 %) near it (48.5–48.8)."""

    name = "majority"
    tasks = frozenset({"semisupervised"})

    def run(self, split, params, ctx):
        y = np.asarray(split.y)
        C = int(split.n_classes)
        counts = np.bincount(y[y >= 0], minlength=C)
        F = np.zeros((len(y), C))
        F[:, int(np.argmax(counts))] = 1.0
        return Prediction(scores=F, labels=np.argmax(F, axis=1))
