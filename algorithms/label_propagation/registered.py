"""Registered semi-supervised algorithms: thin wrappers over `methods` on a cached kNN graph.

All share the graph parameters (k, weight, width, scale); multi-class prediction is one-vs-rest
(argmax of the per-class scores).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.splits import Prediction

from . import methods as m
from .graph import GraphSpec, cached_graph, degrees, laplacian, scaled


@dataclass(frozen=True, kw_only=True)
class GraphParams(Params):
    k: int = param(10, "neighbours per point in the kNN graph (before symmetrisation)", Interval(1, None))
    weight: str = param("rbf", "edge weights: rbf exp(-d²/2σ²), cosine similarity, or binary",
                        Options("rbf", "cosine", "binary"))
    width: float = param(0.0, "RBF width σ; 0 = the median distance to the k nearest neighbours",
                         Interval(0, None))
    scale: str = param("none", "feature scaling before the graph ('none' as in the thesis)",
                       Options("none", "standardize", "minmax"))

    def graph_spec(self) -> GraphSpec:
        return GraphSpec(k=self.k, weight=self.weight, width=self.width if self.width > 0 else "median",
                         scale=self.scale)


class _GraphAlgorithm(Algorithm):
    tasks = frozenset({"semisupervised"})
    Params = GraphParams

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):  # pragma: no cover - interface
        raise NotImplementedError

    def run(self, split, params, ctx):
        y = np.asarray(split.y)
        lab = np.flatnonzero(y >= 0)
        C = int(split.n_classes)
        m.check_labels(lab, C, y[lab])
        W, nbrs = cached_graph(ctx, split.X, params.graph_spec())
        diag: dict = {"edges": int(W.nnz // 2)}
        Xs = None
        if self.needs_features:
            Xs = ctx.cached("lp-features", {"scale": params.scale}, lambda: scaled(split.X, params.scale))
        F = self.scores(W, nbrs, Xs, lab, y[lab], C, params, diag)
        labels = np.argmax(F, axis=1)
        return Prediction(scores=F, labels=labels, diagnostics=diag)

    needs_features = False


@register
class GaussianFields(_GraphAlgorithm):
    """Gaussian fields / harmonic functions (Zhu et al. 2003): f_u = (D_uu − W_uu)⁻¹ W_uℓ y_ℓ (eq. 3.8)."""

    name = "gf"

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        return m.gaussian_fields(W, lab, m.one_hot(y_l, C))


@dataclass(frozen=True, kw_only=True)
class TikregParams(GraphParams):
    gamma: float = param(0.1, "smoothness weight γ of (ℓγ L_u + I_k) (eq. 3.11)", Interval(0, None, "neither"))


@register
class Tikreg(_GraphAlgorithm):
    """Tikhonov regularisation on the graph with f ⊥ 1 (Belkin et al. 2004; eqs. 3.11–3.12)."""

    name = "tikreg"
    Params = TikregParams

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        return m.tikhonov(W, lab, m.one_hot(y_l, C), params.gamma)


@dataclass(frozen=True, kw_only=True)
class AlphaParams(GraphParams):
    alpha: float = param(0.99, "propagation weight α = 1/(1+μ) (eqs. 3.15, 3.19)", Interval(0, 1, "neither"))


@register
class LGC(_GraphAlgorithm):
    """Local and global consistency (Zhou et al. 2004): F = (1−α)(I − αS)⁻¹Y (eq. 3.15)."""

    name = "lgc"
    Params = AlphaParams

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        return m.local_global_consistency(W, lab, m.one_hot(y_l, C), params.alpha)


@dataclass(frozen=True, kw_only=True)
class LNPParams(AlphaParams):
    solver: str = param("iterate", "'iterate' eq. 3.19 as the thesis did, or 'direct' (its fixed point)",
                        Options("iterate", "direct"))
    tol: float = param(1e-9, "stop iterating when max |Δf| < tol", Interval(0, None, "neither"))


@register
class LNP(_GraphAlgorithm):
    """Linear neighbourhood propagation (Wang & Zhang 2006): f ← αUf + (1−α)y, U non-symmetric (eq. 3.19)."""

    name = "lnp"
    Params = LNPParams
    needs_features = True

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        U = m.lnp_weights(Xs, nbrs)
        Y = np.zeros((W.shape[0], C))
        Y[lab] = m.one_hot(y_l, C)
        if params.solver == "direct":
            import scipy.sparse as sp
            return (1 - params.alpha) * m._factor(sp.identity(W.shape[0]) - params.alpha * U).solve(Y)
        F, it = m.propagate(U, Y, params.alpha, tol=params.tol)
        diag["iterations"] = it
        return F


@dataclass(frozen=True, kw_only=True)
class CKParams(GraphParams):
    dim: int = param(0, "leading eigenvectors of D^{-1/2}WD^{-1/2} in the embedding; 0 = number of classes",
                     Interval(0, None))
    C: float = param(1.0, "inverse L2 strength of the linear (logistic) classifier", Interval(0, None, "neither"))


@register
class ClusterKernel(_GraphAlgorithm):
    """Cluster kernels (Chapelle et al. 2003): spectral embedding + a linear classifier (§3.3.5)."""

    name = "ck"
    Params = CKParams

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        from sklearn.linear_model import LogisticRegression

        V = m.cluster_kernel_embedding(W, params.dim or C)
        F = np.zeros((W.shape[0], C))
        present = np.unique(y_l)
        if present.size == 1:
            F[:, present[0]] = 1.0
            return F
        clf = LogisticRegression(C=params.C, max_iter=1000).fit(V[lab], y_l)
        P = clf.predict_proba(V)
        F[:, clf.classes_] = P
        return F


@dataclass(frozen=True, kw_only=True)
class GWEMParams(GraphParams):
    steps: int = param(8, "random-walk length m (P^m)", Interval(1, None))
    self_loop: float = param(1.0, "self-transition weight added to W before normalising", Interval(0, None))


@register
class GWEM(_GraphAlgorithm):
    """Markov random walks with EM (Szummer & Jaakkola 2002; 'mwem' in the thesis tables, §3.3.5)."""

    name = "gwem"
    Params = GWEMParams

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        F, it = m.random_walk_em(W, lab, y_l, C, params.steps, params.self_loop)
        diag["em_iterations"] = it
        return F


@dataclass(frozen=True, kw_only=True)
class EmbeddingParams(GraphParams):
    reg: float = param(1e-3, "LLE regulariser on the local Gram matrices (×trace)", Interval(0, None))
    tangent_dim: int = param(1, "LTSA local tangent dimension (the embedding is 1-D, §3.5)", Interval(1, None))


@dataclass(frozen=True, kw_only=True)
class ConstrainedEmbeddingParams(EmbeddingParams):
    alpha: float = param(1.0, "Lagrange multiplier α of the label constraint (eq. 3.39)", Interval(0, None, "neither"))


def _alignment(kind, W, nbrs, Xs, params):
    if kind == "le":
        return laplacian(W)
    if kind == "lle":
        return m.lle_matrix(Xs, nbrs, params.reg)
    return m.ltsa_matrix(Xs, nbrs, params.tangent_dim)


class _Embedding(_GraphAlgorithm):
    Params = EmbeddingParams
    kind = "le"

    @property
    def needs_features(self):
        return self.kind != "le"

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        return m.embedding_lp(_alignment(self.kind, W, nbrs, Xs, params), lab, m.one_hot(y_l, C))


class _ConstrainedEmbedding(_Embedding):
    Params = ConstrainedEmbeddingParams

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag):
        Y = m.one_hot(y_l, C)
        if self.kind == "le":  # M = L_s, A = D^{1/2} (eq. 3.33); the sign of g = D^{1/2}f is that of f
            from .graph import normalized_adjacency
            import scipy.sparse as sp
            Ls = sp.identity(W.shape[0]) - normalized_adjacency(W)
            return m.constrained_embedding_lp(Ls, lab, Y, params.alpha, a=np.sqrt(degrees(W)))
        return m.constrained_embedding_lp(_alignment(self.kind, W, nbrs, Xs, params), lab, Y, params.alpha)


@register
class LELP(_Embedding):
    """Laplacian-eigenmaps label propagation, f_u = −M_uu⁻¹M_uℓ y_ℓ with M = L_u (eq. 3.37; equals GF)."""

    name, kind = "lelp", "le"


@register
class LLELP(_Embedding):
    """LLE label propagation, eq. 3.37 with M = (I − W)ᵀ(I − W)."""

    name, kind = "llelp", "lle"


@register
class LTSALP(_Embedding):
    """LTSA label propagation, eq. 3.37 with the LTSA alignment matrix."""

    name, kind = "ltsalp", "ltsa"


@register
class LELPC(_ConstrainedEmbedding):
    """Constrained LE label propagation, f ⊥ D^{1/2}1 with M = L_s (eqs. 3.39–3.40)."""

    name, kind = "lelpc", "le"


@register
class LLELPC(_ConstrainedEmbedding):
    """Constrained LLE label propagation, f ⊥ 1 (eqs. 3.39–3.40)."""

    name, kind = "llelpc", "lle"


@register
class LTSALPC(_ConstrainedEmbedding):
    """Constrained LTSA label propagation, f ⊥ 1 (eqs. 3.39–3.40)."""

    name, kind = "ltsalpc", "ltsa"
