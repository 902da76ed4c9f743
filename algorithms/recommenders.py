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

Building blocks (sparse; no loop over entries, nothing dense in users × items × rank; the row solves live in
`malt.algorithms.als_blocks`):
`fit_biases`, `row_grams` (Σ_{j∈O_i} v_j v_jᵀ for every row by one sparse product), `ridge_rows`,
and `als_biased_mf`.
Cost of one ALS sweep: O(L k² + (n + m) k³) for L training ratings and rank k.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from malt.algorithms.als_blocks import (ENTRY_CHUNK, DaskBlocks, LocalBlocks, dot_at, ridge_rows,  # noqa: F401
                                       row_grams)  # re-exported for the family
from malt.errors import DataError
from malt.params import Interval, Options, Params, param
from malt.registry import Algorithm, register
from malt.numerics.selection import InnerCVParams, candidates, inner_fold_ids, select
from malt.splits import Prediction, RowScores

# --------------------------------------------------------------------------------------------- #
# building blocks


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


def training_triplets(train) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """(rows, cols, ratings, shape) of a sparse training matrix, duplicates summed, zeros dropped; views
    of its own arrays (read-only) when it is a sorted COO without zeros, so a fit holds no copy of them."""
    T = sp.coo_matrix(train)
    T.has_canonical_format = bool(getattr(train, "has_canonical_format", False))  # no copy of a sorted COO
    T.sum_duplicates()
    keep = T.data != 0
    if not keep.any():
        raise DataError("The training matrix has no rating; there is nothing to fit.")
    if keep.all():  # the usual case: read-only views of the training matrix's own arrays, no copy
        return (*(_read_only(a) for a in (T.row, T.col, T.data.astype(float, copy=False))), T.shape)
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
    return biases_at(*training_triplets(train), reg_user, reg_item, iterations=iterations, tol=tol)


BIAS_CHUNK = 1 << 20
"""Ratings per step of `biases_at`'s sums (three float64 temporaries of 8 MiB each, not of the whole training set;
a training set of at most this many keeps its centred ratings, one such array, for the whole fit)."""


def biases_at(rows, cols, y, shape, reg_user: float = 15.0, reg_item: float = 10.0, *, iterations: int = 100,
              tol: float = 1e-10) -> Biases:
    """`fit_biases` of the ratings ``y`` at (rows, cols) of a matrix of ``shape``, without building one."""
    n, m = shape
    mu = float(y.mean())
    nu = np.bincount(rows, minlength=n)
    ni = np.bincount(cols, minlength=m)
    bu, bi = np.zeros(n), np.zeros(m)
    centred = y - mu if y.size <= BIAS_CHUNK else None  # within one chunk: r − μ formed once, not every sweep

    def residual_sums(by, other, other_bias, size):  # Σ (r − μ − b_other) per index, BIAS_CHUNK ratings at a time
        if centred is not None:
            return np.bincount(by, centred - np.take(other_bias, other), minlength=size)  # np.take: other_bias[other]
        total = np.zeros(size)
        for start in range(0, y.size, BIAS_CHUNK):
            part = slice(start, start + BIAS_CHUNK)
            total += np.bincount(by[part], (y[part] - mu) - np.take(other_bias, other[part]), minlength=size)
        return total

    for _ in range(iterations):
        bi_new = residual_sums(cols, rows, bu, m) / (reg_item + ni)
        bu_new = residual_sums(rows, cols, bi_new, n) / (reg_user + nu)
        change = max(np.abs(bi_new - bi).max(initial=0), np.abs(bu_new - bu).max(initial=0))
        bu, bi = bu_new, bi_new
        if change < tol:
            break
    return Biases(mu, bu, bi)


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


INIT_SCALE = 0.1
"""Standard deviation of `als_biased_mf`'s random starting factors; biased-mf's fits scale it by √σ̂
(`rating_scale`)."""


def als_biased_mf(train, rank: int = 20, reg: float = 10.0, reg_bias: float = 10.0, *, iterations: int = 50,
                  tol: float = 1e-5, rng: np.random.Generator | None = None, init_scale: float = INIT_SCALE,
                  start: dict | None = None, client=None, blocks: int | None = None, biases: Biases | None = None,
                  monitor=None) -> dict:
    """Biased MF r̂_ui = μ + b_u + b_i + p_uᵀ q_i by alternating exact ridge solves.

    User step: for every u, (b_u, p_u) = argmin Σ_{i∈O_u} (r_ui − μ − b_i − b_u − p_uᵀ q_i)²
    + reg_bias b_u² + reg ‖p_u‖² — a ridge regression on the features (1, q_i); the item step is the
    same with roles swapped. Stops when the objective's relative decrease is below ``tol``.

    start : a previous result of this function on a matrix of the same shape and rank (another
        penalty, or a part of these ratings) to begin from instead of random factors — a warm start
        along a regularisation path. Zero factors are a fixed point of ALS (a penalty above the data's
        top singular value has the minimiser P = Q = 0): a start whose factors vanished fits the
        biases only.
    client, blocks : a Dask ``distributed.Client`` to solve the half steps on its workers, the ratings cut
        into ``blocks`` row blocks per side (default one per worker), each held by one worker for the
        whole fit (`malt.algorithms.als_blocks`); without a client, ``blocks`` > 1 cuts them the same
        way in this process. The same numbers either way.
    biases : without a ``start``, the bias model of these ratings at ``reg_bias`` (`biases_at`) if the caller
        has it already (default: fitted here).
    monitor : called after every sweep with the current fit (a dict as returned, its P and Q views valid during
        the call only); a True return ends the fit there — how a path candidate is abandoned once its held-out
        error has turned (`choose_penalties`).

    Returns dict with 'mu', 'bu' (n,), 'bi' (m,), 'P' (n, rank), 'Q' (m, rank), 'objective' (list).
    Cost O(L rank² + (n + m) rank³) per sweep for L ratings.
    """
    if iterations < 1:
        raise ValueError(f"als_biased_mf needs at least one sweep, got iterations={iterations}")
    rows, cols, y, (n, m) = training_triplets(train)
    rng = np.random.default_rng(0) if rng is None else rng
    if start is not None and start["Q"].shape == (m, rank):
        mu, bu, bi, Q = start["mu"], start["bu"].copy(), start["bi"].copy(), start["Q"]
    else:
        b0 = biases_at(rows, cols, y, (n, m), reg_bias, reg_bias) if biases is None else biases
        mu, bu, bi = b0.mu, b0.user.copy(), b0.item.copy()
        rng.standard_normal((n, rank))  # P's draw: the user step never reads P, but Q's draw follows it in the stream
        Q = init_scale * rng.standard_normal((m, rank))
    item_design = np.column_stack([np.ones(m), Q])  # [1, Q]: the user step's design
    del Q
    sides = (DaskBlocks(rows, cols, y, (n, m), client, blocks) if client is not None
             else LocalBlocks(rows, cols, y, (n, m), blocks or 1))
    del rows, cols, y  # the blocks hold the ratings now
    pen = np.r_[reg_bias, np.full(rank, reg)]
    objective = []
    # Each half step's solution [b, factors] becomes the other step's design [1, factors] in place (its bias
    # column copied out first), and the design a step replaces is dropped before that step: one (rows, 1 + rank)
    # array per side at any time.
    user_design = None
    try:
        for _ in range(iterations):
            user_design = None
            user_design = sides.half_step(0, item_design, bi, mu, pen)
            bu = user_design[:, 0].copy()
            user_design[:, 0] = 1.0
            item_design = None
            item_design = sides.half_step(1, user_design, bu, mu, pen)
            bi = item_design[:, 0].copy()
            item_design[:, 0] = 1.0
            P, Q = user_design[:, 1:], item_design[:, 1:]
            sse = sides.squared_error(mu, bu, bi, P, Q)
            objective.append(float(sse + reg * (_squared_norm(P) + _squared_norm(Q)) + reg_bias * (bu @ bu + bi @ bi)))
            stop = monitor is not None and monitor({"mu": mu, "bu": bu, "bi": bi, "P": P, "Q": Q,
                                                     "objective": objective})
            del P, Q  # views: they would keep the designs the next sweep replaces alive
            if stop or len(objective) > 1 and objective[-2] - objective[-1] <= tol * objective[-2]:
                break
    finally:
        if client is not None:
            sides.close()
    del sides
    P, Q = np.ascontiguousarray(user_design[:, 1:]), np.ascontiguousarray(item_design[:, 1:])
    return {"mu": mu, "bu": bu, "bi": bi, "P": P, "Q": Q, "objective": objective}


def _squared_norm(X: np.ndarray) -> float:
    """‖X‖_F² without an X-sized temporary (X * X of 500,000 × 10 factors is 38 MiB)."""
    return float(np.einsum("ij,ij->", X, X))


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
    select: str = param("inner-cv", "'inner-cv': choose reg_bias from reg_bias_grid and then reg from reg_grid by "
                        "one holdout of the training ratings; 'none': use reg and reg_bias", Options("none", "inner-cv"))
    inner_rounds: int = param(1, "inner folds actually validated (1 = one holdout of 1/inner_folds of the "
                              "training ratings; inner_folds = full inner cross-validation)", Interval(1, None))
    rank: int = param(10, "number of latent factors k", Interval(1, None), max_from="min_side")
    reg: float = param(10.0, "ridge penalty λ on the factors p_u, q_i (sum over ratings, not per rating; "
                       "select=none), in units of the training ratings' standard deviation σ̂: λσ̂ is applied, so "
                       "the fit does not depend on the rating scale (`rating_scale`)", Interval(0, None, "neither"))
    reg_grid: tuple[float, ...] = param((80.0, 56.0, 40.0, 28.0, 20.0, 14.0, 10.0, 7.0, 5.0, 3.5),
                                        "candidate λ in units of σ̂ (select=inner-cv), fitted strongest "
                                        "first, each warm-started from the one before, the path stopped once the "
                                        "held-out error rises (PATH_TURN); the first of equally good candidates wins. "
                                        "Steps of √2: the inner CV on the training ratings chose 10 (MovieLens-100K), "
                                        "14 (FilmTrust, CiaoDVD) and 56 (Jester, where 80-160 were also offered)")
    reg_bias: float = param(10.0, "ridge penalty on the biases b_u, b_i (select=none)", Interval(0, None))
    reg_bias_grid: tuple[float, ...] = param((30.0, 10.0, 3.0, 1.0), "candidate bias penalties (select=inner-cv), "
                                             "chosen first on the bias model alone (O(ratings) per fit) and then "
                                             "held fixed while λ is chosen")
    iterations: int = param(50, "maximum ALS sweeps", Interval(1, None))
    split_fit: bool = param(False, "solve each ALS half step over the workers of the Dask cluster the unit runs on "
                            "(malt cv --scheduler), the ratings cut into one row block per worker and side, each "
                            "held by its worker; the same numbers as one process, so the same results (not part of the setting's key)",
                            Options(False, True), execution=True)
    tol: float = param(1e-3, "stop when the objective's relative decrease falls below this (1e-3: as good as 1e-5 "
                       "on held-out training ratings of MovieLens-100K, CiaoDVD and FilmTrust, at a third of the "
                       "sweeps)", Interval(0, None))


@register
class BiasedMF(Algorithm):
    """BIASED-MF: biased matrix factorisation μ + b_u + b_i + p_uᵀq_i (Koren et al. 2009; Surprise's SVD), ALS.

    With select='inner-cv' (the default) the penalties are chosen on one holdout of the training ratings
    by structure rather than by a grid of refits: the bias penalty on the bias model alone, then λ along
    a warm-started path that stops, mid-fit, where the held-out error turns (`choose_penalties`); the final
    fit starts from the chosen holdout fit."""

    name = "biased-mf"
    tasks = frozenset({"ratings"})
    Params = BiasedMFParams
    version = "5"  # v5: λ in units of the training ratings' standard deviation, grid 80 … 3.5 in steps of √2 (was
    # 30, 15, 7, 3 in rating units), the random start's scale √σ̂ × 0.1. Fold 0, one thread, before -> after: RMSE
    # MovieLens-100K 0.91623 -> 0.91620, FilmTrust 0.79454 -> 0.79299, CiaoDVD 0.93746 -> 0.93748, Jester (ratings
    # ±10, σ̂ 5.2) 4.29743 -> 4.07257 (Surprise's SVD 4.1621 in 8.0 s; ours 5.4 s).
    # v2: λ by inner CV over reg_grid; v3: reg_bias chosen too, warm-started λ path, tol 1e-3;
    # v4: path candidates abandoned mid-fit once their held-out error has turned (ABANDON_RISES): the losing
    # candidates' inner-CV scores (diagnostics) change; the chosen fit and the predictions are v3's bit for bit

    def run(self, split, params, ctx):
        if params.split_fit:
            from malt.algorithms.als_blocks import cluster_client

            with cluster_client() as client:
                return self._run(split, params, ctx, client)
        return self._run(split, params, ctx, None)

    def _run(self, split, params, ctx, client):
        f, diagnostics = fit_biased_mf(split.train, params, ctx.rng, lambda f: ctx.progress(0.8 * f, "inner CV"),
                                       client)
        r, c = split.test_rows, split.test_cols
        return Prediction(values=biased_mf_at(f, r, c), scores=biased_mf_scores(f, r), diagnostics=diagnostics)


def fit_biased_mf(train, params: BiasedMFParams, rng: np.random.Generator, progress=None, client=None):
    """(the `als_biased_mf` fit, its diagnostics) of biased-mf at ``params``: the penalties chosen on the
    training ratings first (`choose_penalties`) when select='inner-cv'. What `BiasedMF` runs, and the
    low-rank term other ratings models put beside theirs."""
    diagnostics, start = {}, None
    scale = rating_scale(train)
    if params.select == "inner-cv":
        params, chosen, start = choose_penalties(params, train, rng, progress, client)
        diagnostics.update(chosen)
    f = als_biased_mf(train, params.rank, params.reg * scale, params.reg_bias, iterations=params.iterations,
                      tol=params.tol, rng=rng, start=start, client=client, init_scale=INIT_SCALE * np.sqrt(scale))
    diagnostics["reg_scale"] = round(scale, 6)
    diagnostics.update({"iterations": len(f["objective"]), "objective": f["objective"][-1],
                        "factor_norm": float(np.sqrt(_squared_norm(f["P"]) + _squared_norm(f["Q"])))})
    return f, diagnostics


def biased_mf_scores(f: dict, test_rows: np.ndarray) -> RowScores:
    """Every column's estimate for each row of ``test_rows``, computed block by block when ranked."""
    return RowScores(np.unique(test_rows), f["Q"].shape[0],
                     lambda u: f["mu"] + f["bu"][u][:, None] + f["bi"][None, :] + f["P"][u] @ f["Q"].T)


def biased_mf_at(f: dict, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """μ + b_u + b_i + p_uᵀq_i of an `als_biased_mf` fit at (rows, cols) pairs. O(len(rows) k)."""
    return f["mu"] + f["bu"][rows] + f["bi"][cols] + dot_at(f["P"], f["Q"], rows, cols)


def collapse_threshold(rows, cols, y, shape, reg_bias: float, rank: int | None = None,
                       biases: Biases | None = None) -> tuple[float, dict]:
    """(σ, the bias model as an `als_biased_mf` result with zero factors): for λ ≥ σ, the largest singular
    value of the bias model's residual at the observed entries (zero elsewhere), zero factors are a local
    minimum of biased MF's objective — its Hessian in (P, Q) there is [[λI, −R], [−Rᵀ, λI]], positive
    semi-definite exactly when λ ≥ σ_max(R) — and the point where ALS from small factors ends. Such a
    candidate λ is the bias model, scored without a fit. Cost: `fit_biases` (none when ``biases``, that model
    at ``reg_bias``, is given) plus one sparse top singular value (Lanczos, a few dozen products with R)."""
    from scipy.sparse.linalg import svds

    b = biases_at(rows, cols, y, shape, reg_bias, reg_bias) if biases is None else biases
    R = sp.csr_matrix((y - b.at(rows, cols), (rows, cols)), shape=shape)
    sigma = float(svds(R, k=1, return_singular_vectors=False, random_state=0)[0]) if min(shape) > 1 else float("inf")
    k = 1 if rank is None else rank
    zero = {"mu": b.mu, "bu": b.user, "bi": b.item, "P": np.zeros((shape[0], k)), "Q": np.zeros((shape[1], k)),
            "objective": []}
    return sigma, zero


def rating_scale(train) -> float:
    """The standard deviation σ̂ of the training ratings: the unit of biased-mf's factor penalty λ. Scaling the
    ratings by c scales the noise variance by c² and each factor's prior variance by c (the product p_uᵀq_i carries
    c), so the MAP penalty σ²/σ_p² scales by c, and the factors (the random start too) by √c; the biases' penalty
    σ²/σ_b² does not change. 1 for constant ratings."""
    y = np.asarray(train.data if sp.issparse(train) else sp.coo_matrix(train).data, dtype=float)
    if y.size == 0:
        return 1.0
    mean = float(y.mean())
    sd = float(np.sqrt(max(float(y @ y) / y.size - mean * mean, 0.0)))  # no rating-length temporary
    return sd if sd > 1e-12 * max(abs(mean), 1.0) else 1.0


PATH_TURN = 1e-3
"""Relative rise of the held-out squared error over the best so far at which biased-mf's λ path stops."""


def choose_penalties(params: BiasedMFParams, train, rng: np.random.Generator, progress=None, client=None):
    """(the chosen Params, their selection diagnostics, the chosen candidate's holdout fit) on
    ``inner_rounds`` of ``inner_folds`` folds of the training ratings; each λ applied as λσ̂ (`rating_scale` of
    all of them, as the final fit's).

    1. reg_bias from ``reg_bias_grid`` by the held-out squared error of the bias model μ + b_u + b_i
       (`biases_at`, O(L) per sweep) — the factors' penalty does not move the biases' optimum much, and the
       bias model costs a fraction of one ALS sweep. The chosen candidate's bias model is reused below (the
       collapse check and the first ALS start: the fit they would make themselves, not made again).
    2. λ from ``reg_grid`` at that reg_bias, strongest first, each ALS fit warm-started from the previous
       candidate's fit on the same part (`als_biased_mf`'s ``start``; not from a fit whose factors
       vanished): cost about one ALS fit plus a few sweeps per further candidate, instead of one cold
       fit each. The path stops after the first candidate whose held-out squared error exceeds the best
       so far by more than ``PATH_TURN`` (relative; the error along a ridge path turns once, and the
       strongest penalties all give the bias model, a flat start that must not stop the path); later
       candidates score inf. A candidate is itself abandoned once its held-out error, checked after
       every sweep, is past that turn and has risen for ``ABANDON_RISES`` sweeps in a row (it would lose;
       its score is the error there, still past the turn).
       A candidate λ at or above the bias residual's top singular value (`collapse_threshold`) is the
       bias model and is scored without an ALS fit.

    The final fit starts from the chosen candidate's holdout fit — vanished factors included: then the
    minimiser is the bias model, and ALS from zero factors fits exactly that.
    """
    rows, cols, y, shape = training_triplets(train)
    scale = rating_scale(train)
    ids = inner_fold_ids(y.size, params.inner_folds, rng)
    ids[ids >= params.inner_rounds] = -1
    if params.inner_folds < 128:
        ids = ids.astype(np.int8)  # one byte per rating, not eight, held for the whole selection

    parts: dict = {}  # part_key -> the last inner part's ratings, built once while its candidates are fitted

    def part(tr, key):
        if key not in parts:
            parts.clear()
            P = parts[key] = sp.coo_matrix((y[tr], (rows[tr], cols[tr])), shape=shape)
            P.has_canonical_format = True  # a sorted subset of sorted triplets: als_biased_mf reads it without a copy
        return parts[key]

    def part_key(tr, val):
        return tr.size, int(val[:3].sum())

    bias_fits: dict = {}  # (part, reg_bias) -> that part's bias model
    if params.reg_bias_grid:
        def bias_loss(option, tr, val):
            b = bias_fits[part_key(tr, val), option.reg_bias] = biases_at(rows[tr], cols[tr], y[tr], shape,
                                                                         option.reg_bias, option.reg_bias)
            return float(np.mean((b.at(rows[val], cols[val]) - y[val]) ** 2))

        bias_choice = select(candidates(params, {"reg_bias": params.reg_bias_grid}), bias_loss, ids)
        reg_bias = (bias_choice.best.reg_bias,)
    else:
        bias_choice, reg_bias = None, (params.reg_bias,)
    chains: dict = {}  # per inner part: the last fit and the best loss so far along the path
    fits: dict = {}    # λ -> (holdout fit, its loss): the final fit's warm start, kept while it can still be chosen
    one_part = params.inner_rounds == 1
    thresholds: dict = {}  # per inner part: (σ_max of the bias model's residual, that model as a fit)

    def evaluate(option, tr, val):
        key = part_key(tr, val)
        last = chains.get(key)
        if last is not None and last["worse"]:
            return float("inf")  # pruned: the path has turned upwards
        biases = bias_fits.get((key, option.reg_bias))
        if key not in thresholds:
            thresholds[key] = collapse_threshold(rows[tr], cols[tr], y[tr], shape, option.reg_bias, option.rank,
                                                 biases=biases)
        held_out = rows[val], cols[val], y[val]
        if option.reg * scale >= thresholds[key][0]:
            f = thresholds[key][1]  # the bias model: zero factors are where ALS ends at this penalty
        else:
            start = last["fit"] if last is not None and np.any(last["fit"]["Q"]) else None
            monitor = None if last is None else _abandon_after_turn(held_out, last["best"])
            f = als_biased_mf(part(tr, key), option.rank, option.reg * scale, option.reg_bias,
                              iterations=option.iterations, tol=option.tol, rng=np.random.default_rng(0),
                              start=start, client=client, init_scale=INIT_SCALE * np.sqrt(scale),
                              biases=biases, monitor=monitor)
        loss = _held_out_mse(f, *held_out)
        best = min(loss, last["best"]) if last is not None else loss
        chains[key] = {"fit": f, "best": best, "worse": loss > best * (1 + PATH_TURN)}
        fits[option.reg] = f, loss
        if one_part:  # a fit clearly worse than the best so far is never chosen: its factors need not stay
            for reg in [reg for reg, (_, other) in fits.items() if other > best * (1 + 1e-9)]:
                del fits[reg]
        return loss

    choice = select(candidates(params, {"reg": params.reg_grid, "reg_bias": reg_bias}), evaluate, ids,
                    progress=progress)
    diagnostics = choice.diagnostics()
    if bias_choice is not None:
        diagnostics.update({"selected": {**diagnostics["selected"], "reg_bias": choice.best.reg_bias},
                            "selected_reg_bias": choice.best.reg_bias,
                            "inner_cv_bias_score": float(np.nanmin(bias_choice.scores))})
    return choice.best, diagnostics, fits.get(choice.best.reg, (None,))[0]


ABANDON_RISES = 2
"""Sweeps in a row whose held-out error rose, past the path's turn, after which `choose_penalties` abandons a
candidate's fit."""


def _held_out_mse(f: dict, rows, cols, y) -> float:
    return float(np.mean((biased_mf_at(f, rows, cols) - y) ** 2))


def _abandon_after_turn(held_out, best: float):
    """An `als_biased_mf` monitor: True once the fit's held-out squared error at ``held_out`` (rows, cols, y)
    exceeds ``best`` by more than PATH_TURN (relative) and has risen for ABANDON_RISES sweeps in a row.
    Cost O(len(y) k) per sweep."""
    errors = []

    def turned(f) -> bool:
        errors.append(_held_out_mse(f, *held_out))
        recent = errors[-ABANDON_RISES - 1:]
        rising = len(recent) == ABANDON_RISES + 1 and all(a < b for a, b in zip(recent[:-1], recent[1:]))
        return rising and errors[-1] > best * (1 + PATH_TURN)
    return turned


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
    and for R@20, Koyejo et al. 2014 §5.2). Only rows with a relevant validation rating are scored: the others
    have no recall to average (on a sparse matrix, most of the validation rows)."""
    val_rows, val_cols = np.asarray(val_rows), np.asarray(val_cols)
    relevant_entry = np.asarray(val_y) > relevant
    if not relevant_entry.any():
        return 0.0
    seen = sp.csr_matrix((np.ones(len(fit_rows)), (fit_rows, fit_cols)), shape=shape)
    u = np.unique(val_rows[relevant_entry])
    at = np.searchsorted(np.unique(val_rows), u)  # their positions in an array of ``scores``
    k = min(k, shape[1])
    top = np.empty((u.size, k), dtype=np.int64)
    for start in range(0, u.size, VALIDATION_BLOCK):
        block = u[start:start + VALIDATION_BLOCK]
        got = scores(block) if callable(scores) else scores[at[start:start + VALIDATION_BLOCK]]
        S = np.array(got, dtype=float, copy=True)
        S[np.isnan(S)] = -np.inf
        S[seen[block].nonzero()] = -np.inf
        # the k best by a partial sort, O(columns) per row (the task's top_candidates sorts every column)
        best = np.argpartition(-S, k - 1, axis=1)[:, :k] if k < shape[1] else np.tile(np.arange(k), (block.size, 1))
        order = np.argsort(-np.take_along_axis(S, best, axis=1), axis=1, kind="stable")
        top[start:start + block.size] = np.take_along_axis(best, order, axis=1)
    pos = np.searchsorted(u, val_rows[relevant_entry])
    wanted = sp.csr_matrix((np.ones(pos.size), (pos, val_cols[relevant_entry])), shape=(u.size, shape[1]))
    n_relevant = np.asarray(wanted.sum(axis=1)).ravel()
    hits = np.asarray(wanted[np.arange(u.size)[:, None], top].sum(axis=1)).ravel()
    return float(np.mean(hits / n_relevant))


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
