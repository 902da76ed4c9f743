"""Model selection by inner cross-validation: the one mechanism every self-tuning algorithm uses.

The papers tune on the training part only: Agovic 2011 §3.6 chooses "parameter values … by
cross-validation" on the labelled points, Koyejo et al. 2014 §5 on a validation split of the training
ratings. Every algorithm that tunes itself speaks one vocabulary in its Params:

``select``       'inner-cv' (choose by inner cross-validation) or 'none' (use the values given)
``inner_folds``  number of inner folds
``<name>_grid``  the candidate values of parameter ``<name>`` (a list-valued parameter)

and calls `select` with its candidates and a function that fits on one part and scores the other::

    ids = inner_fold_ids(n_train, params.inner_folds, ctx.rng, strata=y_train)
    choice = select(candidates(params, {"k": params.k_grid}), evaluate, ids)
    params = choice.best          # a Params with select='none' and the chosen values
    diagnostics.update(choice.diagnostics())

Cost: len(candidates) × folds fits of the caller's model.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from malt.params import Interval, Options, Params, When, param


SMALL_TRAINING = 1000
"""Validation rows (summed over repeats) `repeated_fold_ids` aims at."""
MAX_REPEATS = 5


@dataclass(frozen=True, kw_only=True)
class InnerCVParams(Params):
    """The shared selection fields; an algorithm's Params subclass this and add its ``*_grid`` fields."""

    select: str = param("none", "'inner-cv': choose the parameters that have a *_grid by inner cross-validation "
                        "on the training part; 'none': use the values given", Options("none", "inner-cv"))
    inner_folds: int = param(5, "folds of the inner cross-validation (select=inner-cv)", Interval(2, None),
                             max_from="inner_items")

    @classmethod
    def implied_condition(cls, name: str) -> When | None:
        """The vocabulary's activity, declared once for every self-tuning algorithm: ``inner_*`` and
        ``<name>_grid`` are used with select='inner-cv'; ``<name>`` itself with select='none' (or when
        its grid is empty: `candidates` leaves it as given)."""
        if name.startswith("inner_") or name.endswith("_grid"):
            return When(select="inner-cv")
        if f"{name}_grid" in cls.names():
            return When(select="none") | When(**{f"{name}_grid": ()})
        return None


def inner_fold_ids(n: int, folds: int, rng: np.random.Generator, strata: np.ndarray | None = None) -> np.ndarray:
    """Inner-fold id (0..folds-1) of each of n training items, balanced and reproducible from ``rng``.

    With ``strata`` (class ids), each stratum is dealt round-robin in a random order, so every fold
    sees every class once there are at least ``folds`` members; with a 2-D ``strata`` (an n × L label
    matrix) the folds are iteratively stratified (`malt.numerics.stratify`). ``folds`` is capped at n.
    """
    folds = max(1, min(int(folds), n))
    ids = np.empty(n, dtype=np.int64)
    if strata is None:
        ids[rng.permutation(n)] = np.arange(n) % folds
        return ids
    strata = np.asarray(strata)
    if strata.ndim == 2:
        from malt.numerics.stratify import iterative_stratification

        return iterative_stratification(strata, folds, rng)
    start = 0
    for value in np.unique(strata):
        rows = rng.permutation(np.flatnonzero(strata == value))
        ids[rows] = (start + np.arange(rows.size)) % folds
        start += rows.size
    return ids


def repeated_fold_ids(n: int, folds: int, rng: np.random.Generator, strata: np.ndarray | None = None,
                      rows: int = SMALL_TRAINING) -> np.ndarray:
    """(repeats, n) inner-fold ids: `inner_fold_ids` drawn ⌈rows / n⌉ times (at most `MAX_REPEATS`), so a
    small training part is validated on about ``rows`` rows in all rather than once on n (the choice
    made on one partition of 391 rows moves with the partition; issue 33)."""
    repeats = int(np.clip(np.ceil(rows / max(n, 1)), 1, MAX_REPEATS))
    return np.stack([inner_fold_ids(n, folds, rng, strata) for _ in range(repeats)])


def holdout_ids(n: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """One validation split: id 0 for a random ``fraction`` of the n items, -1 (always trained on)
    for the rest."""
    ids = np.full(n, -1, dtype=np.int64)
    ids[rng.choice(n, max(1, int(round(fraction * n))), replace=False)] = 0
    return ids


def candidates(params: Params, grids: Mapping[str, Sequence[Any]]) -> list[Params]:
    """Every combination of the grid values, as Params with ``select='none'`` (grid order kept, so
    the first candidate wins ties)."""
    names = [name for name, values in grids.items() if len(values)]
    fixed = {"select": "none"} if "select" in params.names() else {}
    return [params.active_values(**fixed, **dict(zip(names, combo)))
            for combo in itertools.product(*(tuple(grids[n]) for n in names))]


@dataclass
class Selection:
    best: Params
    scores: np.ndarray  # mean validation score of each candidate (weighted by validation size)
    candidates: list[Params] = field(repr=False)
    varied: tuple[str, ...] = ()
    better: str = "lower"
    se: np.ndarray | None = None  # standard error of each candidate's mean over the validation folds
    rule: str = "best"
    out_of_fold: np.ndarray | None = field(default=None, repr=False)  # the chosen candidate's validation scores

    def diagnostics(self) -> dict[str, Any]:
        """What was chosen and how well it did, for ``Prediction.diagnostics``: ``selected`` (name ->
        value) and, for `malt show --diagnostics`, each numeric choice as ``selected_<name>``; with
        standard errors, ``inner_cv_margin`` (how far the chosen candidate's mean is from the best
        mean, in the score's units, ≥ 0) and ``inner_cv_gap_se`` (the best mean's lead over the
        runner-up candidate, in standard errors: below 1 the choice is a near-tie)."""
        chosen = {name: getattr(self.best, name) for name in self.varied}
        sign = 1.0 if self.better == "lower" else -1.0
        ranked = np.where(np.isnan(self.scores), np.inf, sign * self.scores)
        best = float(self.scores[int(np.argmin(ranked))])
        flat = {f"selected_{k}": v for k, v in chosen.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        flat.update({f"selected_{k}={v}": 1 for k, v in chosen.items() if isinstance(v, str)})
        out = {"selected": chosen, **flat, "inner_cv_score": best, "inner_cv_candidates": len(self.candidates)}
        if self.se is not None:
            pick = next(i for i, o in enumerate(self.candidates) if o is self.best)
            order = np.argsort(ranked, kind="stable")
            out["inner_cv_rule"] = self.rule
            out["inner_cv_margin"] = float(abs(self.scores[pick] - best))
            if len(order) > 1 and np.isfinite(ranked[order[1]]):
                se = float(self.se[order[0]])
                gap = float(ranked[order[1]] - ranked[order[0]])
                out["inner_cv_gap_se"] = gap / se if se > 0 else float("inf") if gap > 0 else 0.0
        return out


def select(options: Sequence[Params], evaluate: Callable[[Params, np.ndarray, np.ndarray], float],
           fold_ids: np.ndarray, *, better: str = "lower", rule: str = "best",
           progress: Callable[[float], None] | None = None, families: Sequence | None = None) -> Selection:
    """The candidate with the best mean validation score over the inner folds.

    evaluate(candidate, train, validation) : fit on the items ``train`` (indices into the caller's
        training part), return the mean loss (``better='lower'``) or score on ``validation``.
    fold_ids : from `inner_fold_ids` or `holdout_ids` (items with id -1 are always trained on), or a
        (repeats, n) stack of them (`repeated_fold_ids`): every partition's folds count.
    rule : 'best' — the best mean (the first of equals: the caller's order breaks ties); 'one-se' —
        the first candidate in the caller's order whose mean is within one standard error of the best
        mean (Hastie, Tibshirani & Friedman 2009, §7.10; the standard error of the best candidate's
        per-fold scores): callers order candidates from the strongest regulariser to the weakest, so
        near-ties go to the simpler model.
    families : with rule 'one-se', a label per candidate (e.g. its kernel): the order of simplicity holds
        within a family (one regularisation path), not between families — the family of the best mean is
        kept, and the one-standard-error rule walks that family's candidates only.

    A candidate whose evaluation raises ArithmeticError/LinAlgError or returns NaN scores worst.
    Candidates are evaluated in the order given, all inner folds of one before the next, so an
    ``evaluate`` may warm-start each candidate from the previous one's fit on the same fold (the
    matrix-variate GPs do, along their λ and rank grids).
    """
    if not options:
        raise ValueError("select needs at least one candidate")
    partitions = np.atleast_2d(fold_ids)
    parts = [(p, f) for p in range(partitions.shape[0]) for f in np.unique(partitions[p]) if f >= 0]
    sign = 1.0 if better == "lower" else -1.0
    scores = np.empty(len(options))
    per_fold = np.full((len(options), len(parts)), np.nan)
    for i, option in enumerate(options):
        total = weight = 0.0
        for j, (p, f) in enumerate(parts):
            ids = partitions[p]
            train, val = np.flatnonzero(ids != f), np.flatnonzero(ids == f)
            try:
                value = float(evaluate(option, train, val))
            except (ArithmeticError, np.linalg.LinAlgError):
                value = np.nan
            per_fold[i, j] = value
            total += value * val.size
            weight += val.size
        scores[i] = total / weight if weight else np.nan
        if progress is not None:
            progress((i + 1) / len(options))
    ranked = np.where(np.isnan(scores), np.inf, sign * scores)
    best = int(np.argmin(ranked))  # first of equals: the caller's preferred order breaks ties
    se = None
    if len(parts) > 1:
        with np.errstate(invalid="ignore"):
            se = np.nanstd(per_fold, axis=1, ddof=1) / np.sqrt(np.maximum(np.sum(~np.isnan(per_fold), axis=1), 1))
    if rule == "one-se" and se is not None and np.isfinite(se[best]):
        best = one_se_index(ranked, best, se[best], families)
    elif rule not in ("best", "one-se"):
        raise ValueError(f"rule must be 'best' or 'one-se', got {rule!r}")
    return Selection(options[best], scores, list(options), varied_names(options), better, se, rule)


def one_se_index(ranked: np.ndarray, best: int, se: float, families: Sequence | None = None) -> int:
    """The one-standard-error rule on means ``ranked`` (lower is better, in the caller's order from the
    strongest regulariser): the first candidate within ``se`` of ``ranked[best]``, among the candidates of
    ``best``'s ``families`` entry when given."""
    return next(i for i in range(len(ranked)) if ranked[i] <= ranked[best] + se
                and (families is None or families[i] == families[best]))


def varied_names(options: Sequence[Params]) -> tuple[str, ...]:
    """The parameter names whose value differs among ``options`` (what a selection over them chose)."""
    return tuple(name for name in options[0].names() if len({repr(getattr(o, name)) for o in options}) > 1)


def halving(n_options: int, score: Callable[[list[int], np.ndarray, np.ndarray], np.ndarray],
            fold_ids: np.ndarray, rng: np.random.Generator, eta: int = 3, better: str = "lower",
            min_rows: int = 500, families: Sequence | None = None) -> list[int]:
    """The candidates (indices 0..n_options-1, in order) that successive halving (Jamieson & Talwalkar 2016)
    sends on to the full inner cross-validation, whose rule (`select`) then chooses among them.

    Two rungs on the first fold of every partition of ``fold_ids`` (as `select` takes them; repeated
    partitions of a small training part give the rungs about as many validation rows as one partition of
    a large one): rung 0 fits every candidate on a random 1/eta of that fold's training rows, but at least
    ``min_rows`` of them (the fits of a few hundred rows cost little, and fewer let the noise of a small
    subsample drop the best: on emotions' 260, a third of them lost mlsvm's v10 choice in one of six
    seeds); rung 1 fits the best ⌈n/eta⌉ on all its training rows; the best ⌈·/eta⌉ of rung 1 are returned.
    A rung's loss is the mean over the validation rows of those folds (both rungs validate on the folds'
    whole validation parts); a rung keeps its ⌈·/eta⌉ best means, but the candidate the one-standard-error
    rule would choose there (as `select`'s: the first in the caller's order within one standard error of
    the best mean, in the best's ``families`` entry; the standard error over the validation rows) takes
    the last place if it is not among them, so the full CV still sees the stronger regulariser it would
    prefer (without it yeast's C = 1 fell at the rungs and C = 3 won: ranking loss 16.0 against 15.8).
    A rung that would keep every candidate is skipped; eta = 1 keeps all.

    score(which, train, val) : (len(which), len(val)) losses per validation row (``better='lower'``) or
        scores of the candidates ``which`` fit on ``train`` and scored on ``val`` (indices into the
        caller's training part); a caller that caches rung 1's fits reuses them in the full cross-
        validation (same folds).

    Ties keep the earlier candidate (the caller's order, strongest regulariser first). NaN ranks worst.
    Cost per partition: n fits on 1/eta of a fold's rows (a kernel SVM: about n/eta² full fits) + ⌈n/eta⌉
    full fits.
    """
    kept = list(range(n_options))
    if eta <= 1 or n_options <= 1:
        return kept
    folds = []  # (subsample, training rows, validation rows) of each partition's first fold
    for ids in np.atleast_2d(fold_ids):
        first = np.unique(ids[ids >= 0])[0]
        train, val = np.flatnonzero(ids != first), np.flatnonzero(ids == first)
        size = min(train.size, max(int(np.ceil(train.size / eta)), min_rows))
        folds.append((np.sort(rng.choice(train, size, replace=False)), train, val))
    sign = 1.0 if better == "lower" else -1.0
    for rung in (0, 1):
        keep = int(np.ceil(len(kept) / eta))
        if keep >= len(kept):
            continue
        rows = sign * np.concatenate([np.asarray(score(kept, f[rung], f[2]), dtype=float) for f in folds], axis=1)
        mean = np.where(np.isnan(rows).any(axis=1), np.inf, rows.mean(axis=1))
        order = list(np.argsort(mean, kind="stable")[:keep])
        best = order[0]
        if np.isfinite(mean[best]) and rows.shape[1] > 1:
            se = rows[best].std(ddof=1) / np.sqrt(rows.shape[1])
            one_se = one_se_index(mean, best, se, None if families is None else [families[k] for k in kept])
            if one_se not in order:
                order[-1] = one_se
        kept = sorted(kept[i] for i in order)
    return kept
