"""PMA-MAP on the missing task: a column mean, observation noise, and the row kernel's family and scale
chosen on the training entries (issue 37).

The dissertation's PMA is a zero-mean, noise-free GP, X ~ N(0, K1 ⊕ K2) (eq. 5.12). On sparse tags
that model interpolates label noise: on CAL500 (502 × 174, 15 % positive, 25 % hidden) it was barely
better than column means (12.7 against 13.3 % sign error) while SoftImpute reached 9.7 %. Here

.. math::

    M_{ij} = μ_j + F_{ij} + G_{ij} + ε_{ij}, \\quad F_{:j} \\sim N(0, s K_1),\\;
    G_{i:} \\sim N(0, K_2),\\; ε_{ij} \\sim N(0, ν v)

with μ the observed column means (``center='column'``) and v the mean square of the centred observed
entries, so ν is the noise's share of the data's variance whatever the scale (c of the ±c labels, or
a real matrix's units). Cov(vec(M − μ)) = (s K1 + ν v I) ⊕ K2 = s K1 ⊕ K2 + ν v I: the noise is a
nugget on K1's eigenvalues, so PMA-MAP's solver and its K2 re-estimation run unchanged (K2 = ĜᵀĜ/n
reads G's share b / (a + b) of the fit, the noise being in a), and the hidden entries get
E[μ + F + G | M_O] (the noise at a hidden entry is independent of everything observed).

With ``select='inner-cv'`` the row kernel's family (RBF or linear, the linear one scaled to unit
mean diagonal like the RBF), its amplitude s and the noise ν are chosen from their grids on a holdout
of 1/inner_folds of the training entries (`malt.algorithms.completion`: squared hinge loss on the
labels' sign, squared error on real values). Each family costs one eigendecomposition of K1 (cached
across folds and candidates). A candidate differs from its neighbours only in K1's eigenvalues, so the
grid is walked by structure, not refitting (issue 46), by successive halving (`choose`) over three
screens. Each screen (`screen`) walks, per family, one path through its candidates whose settings rescale
the eigenvalues of one shared K1/K2 eigenbasis and warm-start from their neighbour's fixed point, with
the data rotated once and no K1 eigendecomposition per candidate: the first holds K2 at its initial
estimate, every candidate to `SCREEN_TOL`; its best quarter (`SCREEN_KEEP`) is screened with K2
re-estimated as in the full fit, to `SCREEN_TOL`; that screen's best 2 (`FINAL_KEEP`) are fitted on
every entry as the full fit is, to its own tolerances, and the better is the choice (its fixed point
warm-starts the outer fit). On a matrix with more than `SCREEN_COLUMNS` columns the first two screens
run on a random block of that many columns and half the rows (`screen_columns`, `screen_rows`; the GP's
marginal on a block is the same prior, K1 restricted to the rows). Matrices too small for this to pay
fit the whole grid on every entry (`SCREEN_MIN_COST`). On CAL500 (25 % hidden, one BLAS thread) a fold
went from 5.6 to 1.4 CPU seconds (version 12) and to about 0.4 (version 14) with the same choices (the
floor, one fit at the chosen setting: 0.11 s).
What the six MULAN sets chose (folds 0–2):
CAL500 the smallest s and the largest ν (its audio features barely inform its tags; its tags are
noisy), genbase the linear kernel (its 1185 binary motif features), scene, yeast and emotions the RBF
kernel at s = 0.1–0.3 with little noise.
"""
from __future__ import annotations

import numpy as np

from malt.numerics.eigenbasis import Eigenbasis
from malt.numerics.selection import Selection, candidates, holdout_ids, select

from ..completion import holdout_loss
from .common import column_means, matrix_inputs, prediction, row_kernel_eig


def centre(M: np.ndarray, center: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(M − μ, μ (m,), v): μ the observed column means ('column') or zeros ('none'); v the mean square of
    the centred observed entries (1 when they are all zero)."""
    observed = ~np.isnan(M)
    mu = column_means(M, observed) if center == "column" else np.zeros(M.shape[1])
    R = M - mu[None, :]
    v = float(np.mean(R[observed] ** 2)) if observed.any() else 1.0
    return R, mu, (v if v > 0 else 1.0)


def base_kernels(params, ctx, data, families, single: bool) -> dict:
    """family → (K1, Eigenbasis) at k1_scale 1 from the run context's features (the linear kernel divided by
    its mean diagonal); empty when K1 is to be estimated (k1='estimate' or no features)."""
    out = {}
    for family in families:
        K1, eig = row_kernel_eig(params.derived(k1=family, k1_scale=1.0), ctx, data.rows,
                                 data.fit_rows, single=single)
        if K1 is None:
            return {}
        if family == "linear":
            z = max(float(np.mean(np.diag(K1))), 1e-300)
            K1, eig = K1 / z, Eigenbasis(eig.values / z, eig.vectors)
        out[family] = (K1, eig)
    return out


def solve(R: np.ndarray, v: float, kernel, option, rng, pma_map, start=None) -> np.ndarray:
    """PMA-MAP's completion of the centred R with K1 = s·K (s = option.k1_scale) plus the nugget ν·v; K2
    estimated and re-estimated ``option.kernel_updates`` times. ``kernel``: (K, its Eigenbasis) or None
    (K1 estimated from R, no nugget). ``pma_map``: the solver (`malt.algorithms.pma.map.pma_map`, passed in
    by the algorithm that dispatches here, so the two modules do not import each other)."""
    K1, eig1 = (None, None) if kernel is None else kernel
    if eig1 is not None:
        eig1 = Eigenbasis(eig1.values * option.k1_scale + option.noise * v, eig1.vectors)
    fit = pma_map(R, K1, None, kernel_updates=option.kernel_updates, iterations=option.iterations, tol=option.tol,
                  jitter=option.jitter, eig1=eig1, solver=option.solver, init=option.init, relax=option.relax,
                  anderson=option.anderson, alternate_tol=option.alternate_tol, rng=rng, parts=False, start=start)
    return fit["values"], fit


SCREEN_KEEP = 0.25
"""Share of the inner grid (rounded up, at least 2) that goes on from the first screen (K2 fixed at its initial
estimate) to the second (K2 re-estimated as in the full fit). The first ignores the K2 re-estimation, which
reorders candidates on sets with few labels: on emotions and genbase (fold 0) the full fit's best was its 7th and
18th of 40 (the latter within 1e-4 of its 10 best's best); choosing its best outright cost genbase 0.2 and
emotions 0.7 points of error. The second ranks nearly as the full fit does (fold 0 of CAL500, emotions and
genbase: the full fit's best is among its first two, `FINAL_KEEP`). An eighth (5 of 40) was too few: scene's fold-0
full-grid choice was 9th in the first screen (test error of the 5 folds 4.63 → 5.26 % with an eighth)."""


FINAL_KEEP = 2
"""Candidates that go on from the second screen (its solves at `SCREEN_TOL`) to the third, fitted on every entry as
the full fit is (to ``tol``, its settings before the last to 10 × ``tol``), which chooses: choosing the second
screen's best outright cost 0.5 points of error on emotions (25 % hidden) and 0.05–0.08 on genbase. The deciding
fits keep the full fit's tolerances, so the estimator that is ranked is the one the outer fit computes (a fit
stopped early is a different, more strongly regularised one). Measured again 2026-12-08 (25 % hidden, folds 0–4,
one thread), the second screen's best against this screen's choice, each refitted at select='none': mean test
error CAL500 9.94 against 9.90 (the second screen ranks the RBF and linear kernels at equal s and ν the other
way on 3 folds), scene 4.90 against 4.44, yeast 8.16 against 8.15. This screen and the outer fit are most of the
default's cost over its floor (CAL500 fold 0: 0.15 and 0.06 of 0.35 CPU s; the floor, one fit at the chosen
setting, 0.09–0.10); taking the outer fit's K2 from the chosen finalist instead of re-estimating it (one solve
instead of four) cut CAL500 to 0.31 s but raised its error to 10.07 %, so it was not kept."""


SCREEN_MIN_COST = 2e7
"""The grid is screened only when one rotation of the inner matrix, n²m + nm² multiply-adds, costs at least this
(about a millisecond at one thread); below it (emotions 2e6, genbase 1.2e7; CAL500 5.9e7, scene 3.5e7, yeast
8.2e7, enron 1.6e8) the whole grid's full fits cost under a second a fold, and the screens' pruning, which on
emotions and genbase lost up to 0.3 and 0.03 points of error, does not pay."""


def screen_keep(count: int) -> int:
    """How many of ``count`` candidates go on from the first screen to the second (`SCREEN_KEEP`)."""
    return min(count, max(2, int(np.ceil(SCREEN_KEEP * count))))


SCREEN_TOL = 0.1
"""Relative residual of the screen's solves (the ranking of the candidates, not their values, is what it reads)."""


def serpentine(settings: list[tuple[float, float]]) -> list[int]:
    """An order of (k1_scale, noise) settings in which each is near the last: scales ascending, the noises
    of every other scale descending, so the warm start of a setting is its grid neighbour's fixed point."""
    scales = sorted(dict.fromkeys(s for s, _ in settings))
    order = []
    for k, scale in enumerate(scales):
        at = sorted((i for i, (s, _) in enumerate(settings) if s == scale), key=lambda i: settings[i][1])
        order += at[::-1] if k % 2 else at
    return order


def screen(params, options, kernels: dict, R: np.ndarray, v: float, loss, path, keep: int, kernel_updates: int = 0,
           copies: bool = True, tol: float = SCREEN_TOL):
    """The holdout loss of every candidate with K2 starting at its initial estimate and re-estimated
    ``kernel_updates`` times (0: held there), each setting's last solve to ``tol`` (or params.tol if looser), those
    before it to 10 × ``tol`` or `SCREEN_TOL`, whichever is tighter (the full fit's rule when ``tol`` = params.tol):
    per row-kernel family one `fixed_kernel_path` (``path``) through all its (k1_scale, noise) settings in `serpentine`
    order — one shared eigenbasis, each setting a rescaling of its eigenvalues and a solve warm-started from
    its neighbour's fixed point. Returns (the losses in ``options``' order, {index: a copy of X̃, or None
    unless ``copies``} for the ``keep`` best)."""
    losses = np.full(len(options), np.inf)
    kept = {}
    for family in dict.fromkeys(o.k1 for o in options):
        chosen = [i for i, o in enumerate(options) if o.k1 == family]
        settings = [(options[i].k1_scale, options[i].noise * v) for i in chosen]
        order = serpentine(settings)
        fits = path(R, kernels[family][1], [settings[k] for k in order], tol=max(tol, params.tol),
                    iterations=params.iterations, jitter=params.jitter,
                    single=params.solver == "cg" and params.tol >= 1e-4, kernel_updates=kernel_updates,
                    update_tol=max(min(SCREEN_TOL, 10.0 * tol), params.tol))
        for k, Xt in zip(order, fits):
            i = chosen[k]
            losses[i] = loss(Xt)
            worst = max(kept, key=lambda j: (losses[j], j)) if len(kept) >= keep else None
            if worst is None or (losses[i], i) < (losses[worst], worst):
                kept.pop(worst, None)
                kept[i] = Xt.copy() if copies else None
    return losses, kept


SCREEN_COLUMNS = 64
"""The first two screens of a matrix with more columns run on this many of them, drawn at random (`screen_columns`):
the GP's marginal on a subset of columns is the same model (K2 restricted to them, K1 and its eigenbasis unchanged,
so every row keeps its neighbours in the row kernel). A rotation, n²m + nm² multiply-adds, then costs n²·64 + n·64²:
on CAL500 (174 tags) 31 % of the whole matrix's. Checked by the inner choice on the training entries (the full-grid
one is the reference): CAL500, 25 % hidden, 5 folds, the same in 5/5. The deciding screen fits every column: deciding
on 64 columns (and, before that, pruning on 32) moved fold 2's inner choice from noise 1.0 to 0.3."""


SCREEN_ROW_SHARE = 0.5
"""On a matrix with more than `SCREEN_COLUMNS` columns the first two screens also run on this share of the rows,
drawn at random (`screen_rows`), with K1 restricted to them (one n' × n' eigendecomposition per family); the third,
which chooses, fits every row. Wide matrices only: with many columns to borrow from, halving the rows left the
inner choice as it was (CAL500, 25 % hidden: 5/5 folds), while on scene (6 columns, the row kernel carrying the fit)
it changed the inner choice in 2 of 5 folds (test error 4.63 → 4.99 %)."""

SCREEN_MIN_ROWS = 200
"""The first two screens' rows: at least this many (or all of them)."""


def screen_rows(n: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted positions of the rows of the first two screens on a wide matrix: `SCREEN_ROW_SHARE` of n, at least `SCREEN_MIN_ROWS`,
    drawn without replacement from ``rng``. O(n)."""
    size = min(n, max(SCREEN_MIN_ROWS, int(np.ceil(SCREEN_ROW_SHARE * n))))
    return np.arange(n) if size == n else np.sort(rng.choice(n, size, replace=False))


def restrict_kernels(kernels: dict, rows: np.ndarray, single: bool) -> dict:
    """family → (None, the Eigenbasis of K[rows, rows]): each family's base kernel (already jittered) restricted to
    ``rows`` — the same prior on fewer rows — decomposed once. O(n'³) per family."""
    from .common import pd_eigh

    if rows.size == next(iter(kernels.values()))[0].shape[0]:
        return kernels
    return {family: (None, pd_eigh(K[np.ix_(rows, rows)], "K1", single=single)) for family, (K, _) in kernels.items()}


def screen_columns(m: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted positions of the columns the screens fit: all m when m ≤ `SCREEN_COLUMNS`, otherwise that many drawn
    without replacement from ``rng``. O(m)."""
    return np.arange(m) if m <= SCREEN_COLUMNS else np.sort(rng.choice(m, SCREEN_COLUMNS, replace=False))


def choose(params, M: np.ndarray, kernels: dict, kind: str, rng, pma_map, progress=None, path=None):
    """The Selection of (k1, k1_scale, noise) from their grids on a holdout of 1/inner_folds of M's observed
    entries: each candidate completes the other entries (their own column means and variance) and is
    judged by `holdout_loss` on the held-out ones.

    With ``path`` (`map.fixed_kernel_path`) the grid is walked by structure, successive halving over three
    screens on one shared factorisation per family (`screen`): every candidate with K2 held at its initial
    estimate, the best `screen_keep` with K2 re-estimated ``kernel_updates`` times (both to `SCREEN_TOL`; on a
    matrix wider than `SCREEN_COLUMNS`, on a random block of that many columns and half the rows, the held-out
    entries inside it judged), and the `FINAL_KEEP` best of that fitted on every entry as the full fit is (to
    tol), whose better is the choice. Without ``path``, with too few candidates to halve, or on a matrix too
    small for the screens to pay (`SCREEN_MIN_COST`) every candidate gets the full fit. Returns (the Selection,
    the number of candidates screened or None, the chosen candidate's inner completion plus its column means:
    a warm start for the outer fit). Cost with the screens on an n' × m' block: per family one n' × n'
    eigendecomposition (none when the block has every row), one warm-started solve per candidate and
    ``kernel_updates`` + 1 (and as many m' × m' eigendecompositions) per candidate of the second screen,
    O(n'm'(n' + m')) per iteration, then `FINAL_KEEP` warm-started full fits; no K1 eigendecomposition and no
    fresh rotation of the data per candidate."""
    rows, cols = np.nonzero(~np.isnan(M))
    ids = holdout_ids(rows.size, 1.0 / params.inner_folds, rng)
    grids = {"k1": tuple(k for k in params.k1_grid if k in kernels), "k1_scale": params.k1_scale_grid,
             "noise": params.noise_grid}
    val = np.flatnonzero(ids == 0)
    hidden = M.copy()
    hidden[rows[val], cols[val]] = np.nan
    R, mu, v = centre(hidden, params.center)
    truth = M[rows[val], cols[val]]
    options = candidates(params, grids)
    n, m = M.shape
    if path is not None and screen_keep(len(options)) < len(options) and n * m * (n + m) >= SCREEN_MIN_COST:
        sub_cols = screen_columns(m, rng)
        whole = sub_cols.size == m
        sub_rows = np.arange(n) if whole else screen_rows(n, rng)  # rows halved on wide matrices only

        def subset_loss(keep_rows, keep_cols):
            """The holdout loss on the held-out entries inside rows × columns, for a completion of that block."""
            row_at, col_at = np.full(n, -1), np.full(m, -1)
            row_at[keep_rows], col_at[keep_cols] = np.arange(keep_rows.size), np.arange(keep_cols.size)
            at = (row_at[rows[val]] >= 0) & (col_at[cols[val]] >= 0)
            r, c, offset, want = row_at[rows[val][at]], col_at[cols[val][at]], mu[cols[val][at]], truth[at]
            return lambda values: holdout_loss(values[r, c] + offset, want, kind)

        block, block_loss = R[np.ix_(sub_rows, sub_cols)], subset_loss(sub_rows, sub_cols)
        block_kernels = restrict_kernels(kernels, sub_rows, params.solver == "cg" and params.tol >= 1e-4)
        screened = len(options)
        _, kept = screen(params, options, block_kernels, block, v, block_loss, path, screen_keep(len(options)),
                         copies=False)
        options = [options[i] for i in sorted(kept)]  # grid order kept: ties go to the first
        if progress is not None:
            progress(0.4)
        _, kept = screen(params, options, block_kernels, block, v, block_loss, path, FINAL_KEEP,
                         kernel_updates=params.kernel_updates, copies=False)
        options = [options[i] for i in sorted(kept)]
        if progress is not None:
            progress(0.8)
        losses, kept = screen(params, options, kernels, R, v, subset_loss(np.arange(n), np.arange(m)), path, 1,
                              kernel_updates=params.kernel_updates, tol=params.tol)
        if progress is not None:
            progress(1.0)
        best = int(np.argmin(losses))  # the first of equals
        varied = tuple(name for name, grid in grids.items() if len(grid) > 1)
        inner = kept.get(best)
        return (Selection(options[best], losses, options, varied), screened,
                None if inner is None else inner + mu[None, :])
    completions = {}

    def evaluate(option, train, val_ids):
        values, _ = solve(R, v, kernels[option.k1], option, np.random.default_rng(0), pma_map)
        completions[id(option)] = values
        return holdout_loss(values[rows[val], cols[val]] + mu[cols[val]], truth, kind)

    choice = select(options, evaluate, ids, progress=progress)
    chosen = completions.get(id(choice.best))
    return choice, None, (None if chosen is None else chosen + mu[None, :])


def run_missing(split, params, ctx, single: bool, pma_map, path=None):
    """pma-map's answer on the missing task (see the module docstring)."""
    data = matrix_inputs(split, params)
    R, mu, v = centre(data.M, params.center)
    if params.k1 == "estimate":
        families = ()
    else:
        families = params.k1_grid if params.select == "inner-cv" else (params.k1,)
    kernels = base_kernels(params, ctx, data, tuple(dict.fromkeys(families)), single)
    diagnostics = {"center": params.center, "variance": round(v, 6)}
    start = None
    if params.select == "inner-cv" and kernels:
        kind = getattr(split, "kind", "real")
        choice, screened, inner = choose(params, data.M, kernels, kind, ctx.rng, pma_map, path=path,
                                         progress=lambda f: ctx.progress(0.9 * f,
                                                                         "inner holdout over the kernel and the noise"))
        if inner is not None:  # the chosen setting's inner fixed point, recentred: the outer fit's warm start
            start = inner - mu[None, :]
        params = choice.best
        diagnostics.update(choice.diagnostics())
        if screened is not None:
            diagnostics["inner_cv_screened"] = screened
    values, fit = solve(R, v, kernels.get(params.k1), params, ctx.rng, pma_map, start=start)
    diagnostics.update(iterations=fit["iterations"], residuals=[float(f"{r:.3g}") for r in fit["residuals"]],
                       noise_variance=round(params.noise * v, 6) if kernels else 0.0)
    return prediction(values + mu[None, :], data.n_new, diagnostics=diagnostics)
