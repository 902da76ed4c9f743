"""The standard recommender baselines of the `ratings` task, and the sparse building blocks they share
with the rest of the ratings family (pmf, pcsa, the matrix-variate GPs).

* ``baseline`` — regularised user + item biases r̂_ui = μ + b_u + b_i (Koren 2010, eq. 2; Surprise's
  BaselineOnly), minimising Σ_obs (r_ui − μ − b_u − b_i)² + λ_u Σ b_u² + λ_i Σ b_i² exactly by
  alternating closed-form updates (a convex quadratic: block coordinate descent converges to its
  unique minimiser).
* ``biased-mf`` — biased matrix factorisation r̂_ui = μ + b_u + b_i + p_uᵀ q_i (Koren, Bell & Volinsky
  2009, eq. 5; Surprise's SVD), minimising
  Σ_obs (r_ui − r̂_ui)² + λ (‖p_u‖² + ‖q_i‖²) + λ_b (b_u² + b_i²) by alternating least squares:
  each half step is an exact ridge solve of every user (item) at once. λ is chosen by inner
  cross-validation on the training ratings (one holdout of a fifth; `malt.numerics.selection`), strongest
  penalty first, so on sparse data it falls back towards the bias model instead of losing to it
  (a fixed λ = 10 did on CiaoDVD: RMSE 0.947 against baseline's 0.946).
* ``popularity`` — the ranking baseline: items ordered by their number of training ratings.

Building blocks (sparse; no loop over entries, nothing dense in users × items × rank):
`fit_biases`, `row_grams` (Σ_{j∈O_i} v_j v_jᵀ for every row by one sparse product), `ridge_rows`,
and `als_biased_mf`.
Cost of one ALS sweep: O(L k² + (n + m) k³) for L training ratings and rank k.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt.errors import DataError
from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams, candidates, inner_fold_ids, select
from malt.splits import Prediction, RowScores

# --------------------------------------------------------------------------------------------- #
# building blocks


def training_triplets(train) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """(rows, cols, ratings, shape) of a sparse training matrix, duplicates summed, zeros dropped."""
    T = sp.coo_matrix(train)
    T.sum_duplicates()
    keep = T.data != 0
    if not keep.any():
        raise DataError("The training matrix has no rating; there is nothing to fit.")
    return T.row[keep], T.col[keep], T.data[keep].astype(float), T.shape


@dataclass(frozen=True)
class Biases:
    """r̂_ui = mu + user[u] + item[i]; rows/columns without training ratings have bias 0."""

    mu: float
    user: np.ndarray
    item: np.ndarray

    def at(self, rows, cols) -> np.ndarray:
        return self.mu + self.user[rows] + self.item[cols]


def fit_biases(train, reg_user: float = 15.0, reg_item: float = 10.0, *, iterations: int = 100,
               tol: float = 1e-10) -> Biases:
    """Regularised user + item biases (Koren 2010, eq. 2), the exact minimiser of

        Σ_{(u,i) observed} (r_ui − μ − b_u − b_i)² + reg_user Σ_u b_u² + reg_item Σ_i b_i²

    with μ the mean training rating. Alternates b_i = Σ_u (r − μ − b_u) / (reg_item + n_i) and
    b_u = Σ_i (r − μ − b_i) / (reg_user + n_u) (Surprise's ALS updates) until the largest change is
    below ``tol``. O(L) per sweep.
    """
    rows, cols, y, (n, m) = training_triplets(train)
    mu = float(y.mean())
    r = y - mu
    nu = np.bincount(rows, minlength=n)
    ni = np.bincount(cols, minlength=m)
    bu, bi = np.zeros(n), np.zeros(m)
    for _ in range(iterations):
        bi_new = np.bincount(cols, r - bu[rows], minlength=m) / (reg_item + ni)
        bu_new = np.bincount(rows, r - bi_new[cols], minlength=n) / (reg_user + nu)
        change = max(np.abs(bi_new - bi).max(initial=0), np.abs(bu_new - bu).max(initial=0))
        bu, bi = bu_new, bi_new
        if change < tol:
            break
    return Biases(mu, bu, bi)


def row_grams(csr: sp.csr_matrix, V: np.ndarray, weights=None) -> np.ndarray:
    """G_i = Σ_{j : csr_ij ≠ 0} w_ij v_j v_jᵀ for every row i, shape (n, k, k).

    One sparse × dense product with the (m, k²) outer products of V's rows: O(L k²) time and
    O((n + m) k²) memory (never one k × k block per rating). ``weights``: values of ``csr`` (default
    all ones on its pattern).
    """
    n, k = csr.shape[0], V.shape[1]
    pattern = csr.copy()
    pattern.data = np.ones_like(pattern.data, dtype=float) if weights is None else np.asarray(weights, float)
    outer = (V[:, :, None] * V[:, None, :]).reshape(V.shape[0], k * k)
    return np.asarray(pattern @ outer).reshape(n, k, k)


def ridge_rows(csr: sp.csr_matrix, V: np.ndarray, reg) -> np.ndarray:
    """For every row i: argmin_u Σ_{j∈O_i} (csr_ij − uᵀ v_j)² + uᵀ diag(reg) u, in one batch.

    ``csr`` holds the targets at the observed pattern (explicit zeros count as observations, so pass
    a matrix whose pattern is the observed set). reg : scalar or (k,) diagonal penalty.
    """
    k = V.shape[1]
    A = row_grams(csr, V)
    A += np.diag(np.broadcast_to(np.asarray(reg, float), (k,)))
    b = np.asarray(csr @ V)
    return np.linalg.solve(A, b[..., None])[..., 0]


class Observed:
    """The observed pattern of a training matrix as CSR by rows and by columns, to put per-rating
    values (in triplet order) into either without re-sorting: ``by_rows(v)`` (n, m), ``by_cols(v)`` (m, n)."""

    def __init__(self, rows, cols, shape):
        n, m = shape
        ids = np.arange(1, rows.size + 1, dtype=float)
        self._r = sp.csr_matrix((ids, (rows, cols)), shape=(n, m))
        self._c = sp.csr_matrix((ids, (cols, rows)), shape=(m, n))
        self._ro = self._r.data.astype(np.int64) - 1
        self._co = self._c.data.astype(np.int64) - 1

    def by_rows(self, values) -> sp.csr_matrix:
        M = self._r.copy(); M.data = np.asarray(values, float)[self._ro]
        return M

    def by_cols(self, values) -> sp.csr_matrix:
        M = self._c.copy(); M.data = np.asarray(values, float)[self._co]
        return M


def als_biased_mf(train, rank: int = 20, reg: float = 10.0, reg_bias: float = 10.0, *, iterations: int = 50,
                  tol: float = 1e-5, rng: np.random.Generator | None = None, init_scale: float = 0.1) -> dict:
    """Biased MF r̂_ui = μ + b_u + b_i + p_uᵀ q_i by alternating exact ridge solves.

    User step: for every u, (b_u, p_u) = argmin Σ_{i∈O_u} (r_ui − μ − b_i − b_u − p_uᵀ q_i)²
    + reg_bias b_u² + reg ‖p_u‖² — a ridge regression on the features (1, q_i); the item step is the
    same with roles swapped. Stops when the objective's relative decrease is below ``tol``.

    Returns dict with 'mu', 'bu' (n,), 'bi' (m,), 'P' (n, rank), 'Q' (m, rank), 'objective' (list).
    """
    rows, cols, y, (n, m) = training_triplets(train)
    rng = np.random.default_rng(0) if rng is None else rng
    b0 = fit_biases(sp.coo_matrix((y, (rows, cols)), shape=(n, m)), reg_bias, reg_bias)
    mu, bu, bi = b0.mu, b0.user.copy(), b0.item.copy()
    P = init_scale * rng.standard_normal((n, rank))
    Q = init_scale * rng.standard_normal((m, rank))
    obs = Observed(rows, cols, (n, m))
    pen = np.r_[reg_bias, np.full(rank, reg)]
    objective = []
    for _ in range(iterations):
        X = ridge_rows(obs.by_rows(y - mu - bi[cols]), np.column_stack([np.ones(m), Q]), pen)
        bu, P = X[:, 0], X[:, 1:]
        X = ridge_rows(obs.by_cols(y - mu - bu[rows]), np.column_stack([np.ones(n), P]), pen)
        bi, Q = X[:, 0], X[:, 1:]
        e = y - mu - bu[rows] - bi[cols] - np.einsum("ij,ij->i", P[rows], Q[cols])
        objective.append(float(e @ e + reg * (np.sum(P * P) + np.sum(Q * Q)) + reg_bias * (bu @ bu + bi @ bi)))
        if len(objective) > 1 and objective[-2] - objective[-1] <= tol * objective[-2]:
            break
    return {"mu": mu, "bu": bu, "bi": bi, "P": P, "Q": Q, "objective": objective}


# --------------------------------------------------------------------------------------------- #
# registered algorithms


@dataclass(frozen=True, kw_only=True)
class BaselineParams(Params):
    reg_user: float = param(15.0, "ridge penalty λ_u on the user biases (Surprise's reg_u)", Interval(0, None))
    reg_item: float = param(10.0, "ridge penalty λ_i on the item biases (Surprise's reg_i)", Interval(0, None))


@register
class Baseline(Algorithm):
    """BASELINE: regularised user + item biases μ + b_u + b_i (Koren 2010; Surprise's BaselineOnly), exact."""

    name = "baseline"
    tasks = frozenset({"ratings"})
    Params = BaselineParams
    version = "1"

    def run(self, split, params, ctx):
        b = fit_biases(split.train, params.reg_user, params.reg_item)
        urows = np.unique(split.test_rows)
        scores = RowScores(urows, b.item.size, lambda r: b.mu + b.user[r][:, None] + b.item[None, :])
        return Prediction(values=b.at(split.test_rows, split.test_cols), scores=scores)


@dataclass(frozen=True, kw_only=True)
class BiasedMFParams(InnerCVParams):
    select: str = param("inner-cv", "'inner-cv': choose reg from reg_grid by inner cross-validation on the "
                        "training ratings; 'none': use reg", Options("none", "inner-cv"))
    inner_rounds: int = param(1, "inner folds actually validated (1 = one holdout of 1/inner_folds of the "
                              "training ratings; inner_folds = full inner cross-validation)", Interval(1, None))
    rank: int = param(10, "number of latent factors k", Interval(1, None), max_from="min_side")
    reg: float = param(10.0, "ridge penalty λ on the factors p_u, q_i (sum over ratings, not per rating; "
                       "select=none)", Interval(0, None, "neither"))
    reg_grid: tuple[float, ...] = param((30.0, 10.0, 3.0), "candidate λ (select=inner-cv); the first of equally "
                                        "good candidates wins, so the list starts at the strongest penalty")
    reg_bias: float = param(10.0, "ridge penalty on the biases b_u, b_i", Interval(0, None))
    iterations: int = param(50, "maximum ALS sweeps", Interval(1, None))
    tol: float = param(1e-5, "stop when the objective's relative decrease falls below this", Interval(0, None))


@register
class BiasedMF(Algorithm):
    """BIASED-MF: biased matrix factorisation μ + b_u + b_i + p_uᵀq_i (Koren et al. 2009; Surprise's SVD), ALS."""

    name = "biased-mf"
    tasks = frozenset({"ratings"})
    Params = BiasedMFParams
    version = "2"  # v2: λ by inner CV over reg_grid

    def run(self, split, params, ctx):
        diagnostics = {}
        if params.select == "inner-cv":
            choice = choose_reg(params, split.train, ctx.rng, lambda f: ctx.progress(0.8 * f, "inner CV"))
            params = choice.best
            diagnostics.update(choice.diagnostics())
        f = als_biased_mf(split.train, params.rank, params.reg, params.reg_bias, iterations=params.iterations,
                          tol=params.tol, rng=ctx.rng)
        r, c = split.test_rows, split.test_cols
        values = f["mu"] + f["bu"][r] + f["bi"][c] + np.einsum("ij,ij->i", f["P"][r], f["Q"][c])
        urows = np.unique(r)
        scores = RowScores(urows, f["Q"].shape[0],
                           lambda u: f["mu"] + f["bu"][u][:, None] + f["bi"][None, :] + f["P"][u] @ f["Q"].T)
        diagnostics.update({"iterations": len(f["objective"]), "objective": f["objective"][-1]})
        return Prediction(values=values, scores=scores, diagnostics=diagnostics)


def choose_reg(params: BiasedMFParams, train, rng: np.random.Generator, progress=None):
    """The Selection of λ from ``params.reg_grid`` by held-out squared error on the training ratings
    (``inner_rounds`` of ``inner_folds`` folds). Cost: one ALS fit per candidate and round."""
    rows, cols, y, shape = training_triplets(train)
    ids = inner_fold_ids(y.size, params.inner_folds, rng)
    ids[ids >= params.inner_rounds] = -1

    def evaluate(option, tr, val):
        f = als_biased_mf(sp.coo_matrix((y[tr], (rows[tr], cols[tr])), shape=shape), option.rank, option.reg,
                          option.reg_bias, iterations=option.iterations, tol=option.tol,
                          rng=np.random.default_rng(0))
        est = f["mu"] + f["bu"][rows[val]] + f["bi"][cols[val]] + np.einsum("ij,ij->i", f["P"][rows[val]],
                                                                             f["Q"][cols[val]])
        return float(np.mean((est - y[val]) ** 2))

    return select(candidates(params, {"reg": params.reg_grid}), evaluate, ids, progress=progress)


VALIDATION_BLOCK = 1024
"""Validation rows scored at once by `validation_recall` (a callable's scores are never whole)."""


def validation_recall(fit_rows, fit_cols, shape, val_rows, val_cols, val_y, scores, relevant: float,
                      k: int = 20) -> float:
    """recall@k of a ranking at a validation part (val_rows, val_cols, val_y) of the training ratings, by the
    ratings task's conventions: a row's candidates are the columns it did not rate in the fitting part
    (fit_rows, fit_cols), a rating is relevant when > ``relevant`` (the task's default: the top of the scale
    minus 1); tied scores are not broken at random (continuous scores rarely tie). ``scores``: (len(unique(val_rows)), n_cols) in sorted row order, or a function of an array of
    row ids returning their (len, n_cols) scores, called on blocks of ``VALIDATION_BLOCK`` rows (memory: one
    block). What the self-tuning models choose their ranking fits by (the paper selects separately for RMSE
    and for R@20, Koyejo et al. 2014 §5.2)."""
    seen = sp.csr_matrix((np.ones(len(fit_rows)), (fit_rows, fit_cols)), shape=shape)
    u = np.unique(val_rows)
    k = min(k, shape[1])
    top = np.empty((u.size, k), dtype=np.int64)
    for start in range(0, u.size, VALIDATION_BLOCK):
        block = u[start:start + VALIDATION_BLOCK]
        got = scores(block) if callable(scores) else scores[start:start + VALIDATION_BLOCK]
        S = np.array(got, dtype=float, copy=True)
        S[np.isnan(S)] = -np.inf
        S[seen[block].nonzero()] = -np.inf
        # the k best by a partial sort, O(columns) per row (the task's top_candidates sorts every column)
        best = np.argpartition(-S, k - 1, axis=1)[:, :k] if k < shape[1] else np.tile(np.arange(k), (block.size, 1))
        order = np.argsort(-np.take_along_axis(S, best, axis=1), axis=1, kind="stable")
        top[start:start + block.size] = np.take_along_axis(best, order, axis=1)
    relevant_entry = np.asarray(val_y) > relevant
    if not relevant_entry.any():
        return 0.0
    pos = np.searchsorted(u, np.asarray(val_rows)[relevant_entry])
    wanted = sp.csr_matrix((np.ones(pos.size), (pos, np.asarray(val_cols)[relevant_entry])), shape=(u.size, shape[1]))
    n_relevant = np.asarray(wanted.sum(axis=1)).ravel()
    hits = np.asarray(wanted[np.arange(u.size)[:, None], top].sum(axis=1)).ravel()
    ok = n_relevant > 0
    return float(np.mean(hits[ok] / n_relevant[ok]))


def relevance_threshold(y) -> float:
    """The ratings task's default relevance threshold for these training ratings: the top of the scale — the
    99.9th percentile rating, as `malt.tasks.ratings.scale_top` — minus 1."""
    return float(np.quantile(np.asarray(y, dtype=float), 0.999, method="lower")) - 1.0


@register
class Popularity(Algorithm):
    """POPULARITY: ranks items by their number of training ratings; its rating estimate is the item's mean.

    The ranking baseline of the ratings task (the score of an item is the same for every user; items
    the user rated in training are excluded by the task). ``values`` (for RMSE/MAE) are the item's mean
    training rating, the global mean for items without one."""

    name = "popularity"
    tasks = frozenset({"ratings"})
    version = "1"

    def run(self, split, params, ctx):
        rows, cols, y, (n, m) = training_triplets(split.train)
        count = np.bincount(cols, minlength=m).astype(float)
        mean = np.where(count > 0, np.bincount(cols, y, minlength=m) / np.maximum(count, 1), y.mean())
        urows = np.unique(split.test_rows)
        return Prediction(values=mean[split.test_cols],
                          scores=RowScores(urows, m, lambda r: np.broadcast_to(count, (len(r), m)).copy()))
