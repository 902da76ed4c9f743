"""Registered semi-supervised algorithms: thin wrappers over `methods` on a cached kNN graph.

All share the graph parameters (k, weight, width, scale); multi-class prediction is one-vs-rest
(argmax of the per-class scores).
"""
from __future__ import annotations

import dataclasses
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
    select: str = param("none", "'inner-cv': choose k and the method's own parameter by 5-fold CV on the "
                        "labelled points (as the thesis); 'none': use the values given", Options("none", "inner-cv"))

    def graph_spec(self) -> GraphSpec:
        return GraphSpec(k=self.k, weight=self.weight, width=self.width if self.width > 0 else "median",
                         scale=self.scale)


INNER_K = (5, 10, 20)
"""Neighbourhood sizes tried by inner CV (with the given k first, so ties keep it)."""


def inner_folds(y_l: np.ndarray, rng: np.random.Generator, folds: int = 5) -> np.ndarray:
    """Stratified inner-fold ids for the labelled points (each class dealt round-robin)."""
    ids = np.empty(len(y_l), dtype=np.int64)
    start = 0
    for c in np.unique(y_l):
        rows = rng.permutation(np.flatnonzero(y_l == c))
        ids[rows] = (start + np.arange(rows.size)) % folds
        start += rows.size
    return ids


class _GraphAlgorithm(Algorithm):
    tasks = frozenset({"semisupervised"})
    Params = GraphParams
    needs_features = False

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):  # pragma: no cover - interface
        raise NotImplementedError

    def grid(self, params, C) -> list[dict]:
        """Values of the method's own parameters tried by inner CV (the given ones first)."""
        return [{}]

    def _inputs(self, split, params, ctx):
        W, nbrs = cached_graph(ctx, split.X, params.graph_spec())
        Xs = None
        if self.needs_features:
            Xs = ctx.cached("lp-features", {"scale": params.scale}, lambda: scaled(split.X, params.scale))
        return W, nbrs, Xs

    def select(self, split, params, ctx, lab, y_l, C, diag):
        """Inner 5-fold CV over k × the method grid on the labelled points; returns the best Params."""
        folds = inner_folds(y_l, ctx.rng, min(5, len(lab)))
        ks = [params.k] + [k for k in INNER_K if k != params.k]
        best, best_err = params, np.inf
        for k in ks:
            if k >= len(split.y):
                continue
            for extra in self.grid(params, C):
                cand = dataclasses.replace(params, select="none", k=k, **extra)
                W, nbrs, Xs = self._inputs(split, cand, ctx)
                wrong = 0
                for j in np.unique(folds):  # hide one inner fold of the labelled points at a time
                    tr, te = lab[folds != j], lab[folds == j]
                    F = self.scores(W, nbrs, Xs, tr, y_l[folds != j], C, cand, {}, ctx)
                    wrong += int(np.sum(np.argmax(F[te], axis=1) != y_l[folds == j]))
                if wrong < best_err:
                    best, best_err = cand, wrong
        diag["selected"] = {f.name: getattr(best, f.name) for f in dataclasses.fields(best)
                            if f.name in ("k",) or any(f.name in e for e in self.grid(params, C))}
        diag["inner_cv_error"] = best_err / len(lab)
        return best

    def run(self, split, params, ctx):
        y = np.asarray(split.y)
        lab = np.flatnonzero(y >= 0)
        C = int(split.n_classes)
        m.check_labels(lab, C, y[lab])
        diag: dict = {}
        if params.select == "inner-cv" and len(lab) >= 2:
            params = self.select(split, params, ctx, lab, y[lab], C, diag)
        W, nbrs, Xs = self._inputs(split, params, ctx)
        diag["edges"] = int(W.nnz // 2)
        F = self.scores(W, nbrs, Xs, lab, y[lab], C, params, diag, ctx)
        labels = np.argmax(F, axis=1)
        return Prediction(scores=F, labels=labels, diagnostics=diag)


@register
class GaussianFields(_GraphAlgorithm):
    """Gaussian fields / harmonic functions (Zhu et al. 2003): f_u = (D_uu − W_uu)⁻¹ W_uℓ y_ℓ (eq. 3.8)."""

    name = "gf"

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        return m.gaussian_fields(W, lab, m.one_hot(y_l, C))


@dataclass(frozen=True, kw_only=True)
class TikregParams(GraphParams):
    gamma: float = param(0.1, "smoothness weight γ of (ℓγ L_u + I_k) (eq. 3.11)", Interval(0, None, "neither"))


@register
class Tikreg(_GraphAlgorithm):
    """Tikhonov regularisation on the graph with f ⊥ 1 (Belkin et al. 2004; eqs. 3.11–3.12)."""

    name = "tikreg"
    Params = TikregParams

    def grid(self, params, C):
        return [{"gamma": g} for g in dict.fromkeys((params.gamma, 0.01, 0.1, 1.0))]

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        return m.tikhonov(W, lab, m.one_hot(y_l, C), params.gamma)


@dataclass(frozen=True, kw_only=True)
class AlphaParams(GraphParams):
    alpha: float = param(0.9, "propagation weight α = 1/(1+μ) (eqs. 3.15, 3.19); near 1 every point gets the "
                         "class with the most labelled degree mass", Interval(0, 1, "neither"))


@register
class LGC(_GraphAlgorithm):
    """Local and global consistency (Zhou et al. 2004): F = (1−α)(I − αS)⁻¹Y (eq. 3.15)."""

    name = "lgc"
    Params = AlphaParams

    def grid(self, params, C):
        return [{"alpha": a} for a in dict.fromkeys((params.alpha, 0.5, 0.9, 0.99))]

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
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

    def grid(self, params, C):
        return [{"alpha": a} for a in dict.fromkeys((params.alpha, 0.5, 0.9, 0.99))]

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        U = ctx.cached("lnp-weights", {**params.graph_spec().to_dict()}, lambda: m.lnp_weights(Xs, nbrs))
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

    def grid(self, params, C):
        return [{"dim": d} for d in dict.fromkeys((params.dim, C, 2 * C, 10))]

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        from sklearn.linear_model import LogisticRegression

        V = ctx.cached("ck-embedding", {**params.graph_spec().to_dict(), "dim": params.dim or C},
                       lambda: m.cluster_kernel_embedding(W, params.dim or C))
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

    def grid(self, params, C):
        return [{"steps": t} for t in dict.fromkeys((params.steps, 2, 4, 8, 16))]

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
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


def _own_params(base: type[Params], name: str) -> type[Params]:
    """A per-algorithm subclass (the registry names each Params class after its one owner)."""
    cls = dataclass(frozen=True, kw_only=True)(type(name, (base,), {"__module__": __name__, "__qualname__": name}))
    globals()[name] = cls  # importable by name, so instances pickle
    return cls


def _alignment(kind, W, nbrs, Xs, params, ctx):
    if kind == "le":
        return laplacian(W)
    spec = {"kind": kind, "k": params.k, "scale": params.scale, "weight": params.weight}
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


class _ConstrainedEmbedding(_Embedding):
    Params = ConstrainedEmbeddingParams

    def grid(self, params, C):
        return [{"alpha": a} for a in dict.fromkeys((params.alpha, 0.1, 1.0, 10.0))]

    def scores(self, W, nbrs, Xs, lab, y_l, C, params, diag, ctx):
        Y = m.one_hot(y_l, C)
        if self.kind == "le":  # M = L_s, A = D^{1/2} (eq. 3.33); the sign of g = D^{1/2}f is that of f
            from .graph import normalized_adjacency
            import scipy.sparse as sp
            Ls = sp.identity(W.shape[0]) - normalized_adjacency(W)
            return m.constrained_embedding_lp(Ls, lab, Y, params.alpha, a=np.sqrt(degrees(W)))
        return m.constrained_embedding_lp(_alignment(self.kind, W, nbrs, Xs, params, ctx), lab, Y, params.alpha)


@register
class LELP(_Embedding):
    """Laplacian-eigenmaps label propagation, f_u = −M_uu⁻¹M_uℓ y_ℓ with M = L_u (eq. 3.37; equals GF)."""

    name, kind = "lelp", "le"
    Params = _own_params(EmbeddingParams, "LELPParams")


@register
class LLELP(_Embedding):
    """LLE label propagation, eq. 3.37 with M = (I − W)ᵀ(I − W)."""

    name, kind = "llelp", "lle"
    Params = _own_params(EmbeddingParams, "LLELPParams")


@register
class LTSALP(_Embedding):
    """LTSA label propagation, eq. 3.37 with the LTSA alignment matrix."""

    name, kind = "ltsalp", "ltsa"
    Params = _own_params(EmbeddingParams, "LTSALPParams")


@register
class LELPC(_ConstrainedEmbedding):
    """Constrained LE label propagation, f ⊥ D^{1/2}1 with M = L_s (eqs. 3.39–3.40)."""

    name, kind = "lelpc", "le"
    Params = _own_params(ConstrainedEmbeddingParams, "LELPCParams")


@register
class LLELPC(_ConstrainedEmbedding):
    """Constrained LLE label propagation, f ⊥ 1 (eqs. 3.39–3.40)."""

    name, kind = "llelpc", "lle"
    Params = _own_params(ConstrainedEmbeddingParams, "LLELPCParams")


@register
class LTSALPC(_ConstrainedEmbedding):
    """Constrained LTSA label propagation, f ⊥ 1 (eqs. 3.39–3.40)."""

    name, kind = "ltsalpc", "ltsa"
    Params = _own_params(ConstrainedEmbeddingParams, "LTSALPCParams")
