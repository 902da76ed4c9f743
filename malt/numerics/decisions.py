"""Label decisions learned inside the training rows: the one thresholding mechanism every
multi-label scorer uses (issue 33).

A scorer ranks labels; a bipartition needs a threshold. The model's own cut (½ on a probability, 0
on a margin or log-odds) is right only for a calibrated model and for Hamming loss; F1 rewards
predicting rare labels more often (Fan & Lin 2007, "A study on threshold selection for multi-label
classification"; Yang 2001). Here the thresholds are learned from **out-of-fold scores of the
training rows** — scores each training row got from a model that did not see it (the scorer's inner
cross-validation, out-of-bag trees, leave-one-out neighbours, or refits on inner folds, `out_of_fold`)
— by one of eight rules:

* ``prior``: the decisions of the training label shares alone, the same for every row: the objective's
  best single cut on the shares (for Hamming loss the per-label majority), what the feature-free
  ``label-prior`` baseline decides. As a candidate of ``auto`` it keeps every scorer's learned decisions
  from losing to that baseline by more than inner-CV noise (issue 49).
* ``natural``: the model's own cut ``natural`` (½ or 0), for every label.
* ``global``: one threshold for all labels, the best cut of the pooled training scores (MULAN's
  OneThreshold; Fan & Lin's "SCut" with one shared value).
* ``scut``: one threshold per label (Yang 2001's SCut), shrunk towards the global one by the label's
  positive count: t_j = (n⁺_j t̂_j + m t) / (n⁺_j + m), m = ``SHRINK`` positives, so a rare
  label's cut rests mostly on the shared one (its own is fitted to a handful of rows).
* ``calibrated``: per label, the cut where a logistic calibration of the scores (Platt 1999: a slope and
  an offset fitted on the training scores, with Platt's smoothed targets) reaches ½, the Hamming-optimal
  cut of a calibrated probability; a label whose scores do not rise with it gets its majority decision.
* ``pcut``: proportional cut (Fan & Lin's PCut, learned on the training rows instead of the test
  batch): label j is predicted for the share of rows it has in training, t_j the
  corresponding quantile of its training scores.
* ``rcut``: rank cut (Fan & Lin's RCut): each row gets its r top-ranked labels, r the training
  rows' mean label cardinality rounded (MULAN's RCut).
* ``rscut``: rank and score cut: each row gets its r top-ranked labels, r the training rows' median
  cardinality (0 when half of them have no label), and every other label whose score exceeds that label's
  ``scut`` threshold, fitted on the entries the rank part leaves (with the rank part's counts in the
  objective). Unlike ``rcut`` it can give a row more labels than the typical one (scene's two-label rows,
  issue 49); unlike ``scut`` it never leaves a row of a set whose rows all carry labels empty.

Decisions are learned once per loss family a multi-label table reports (Dembczyński et al. 2012: the
risk minimisers of Hamming loss and of F-measures differ, and so do those of micro- and macro-F1):
``hamming`` (labels scored by Hamming loss and overall accuracy), ``f1`` (micro-F1 and the example-based
Jaccard accuracy, criterion ½ (micro-F1 + macro-F1)) and ``f1_macro`` (macro-F1, criterion macro-F1 alone:
the mean of per-label F1s, maximised by each label's own F1-optimal cut, which the pooled criterion trades
against the pooled counts — on scene it chose ``rcut``, one label a row, which no two-label row's second
label survives). With ``rule='auto'`` each family's rule is chosen by repeated
3-fold cross-validation over the out-of-fold scores (thresholds fitted on two thirds, scored on the
third), the simplest rule (in the order of `RULES`: prior, natural, global, calibrated, pcut, rcut, scut,
rscut) whose mean is within one standard error of the best (Hastie et al. 2009, §7.10's
one-standard-error rule), the standard error of the rule's paired shortfall to the best over the same
inner folds (the folds' difficulty, common to every rule, cancels; the standard error of the best's mean
held it in and let a simpler rule that is worse on every fold win, issue 49).

Labels without both classes in the training rows get a defined decision under every rule: a label
never positive there is never predicted, one never negative always predicted; a label with no known
training entry gets the rule's shared cut.

Cost: sorting the n × L training scores once per fit, O(nL log nL) (``calibrated``: 30 Newton steps,
O(nL) each); ``auto`` fits every rule on ``folds × repeats`` subsets.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from malt.params import Options, Params, When, param
from malt.splits import Prediction

RULES = ("prior", "natural", "global", "calibrated", "pcut", "rcut", "scut", "rscut")
"""Simplest first: the one-SE rule prefers earlier ones (``prior`` reads no score at all)."""
OBJECTIVES = ("hamming", "f1", "f1_macro")
SHRINK = 10.0
"""Positive training rows at which a label's own ``scut`` threshold weighs as much as the shared one."""
AUTO_FOLDS = 3


@dataclass(frozen=True, kw_only=True)
class ThresholdParams(Params):
    """The decision field every multi-label scorer's Params carries."""

    threshold: str = param("auto", "label decisions from the scores, learned on out-of-fold scores of the training "
                           "rows (malt.decisions): 'auto' chooses per loss family among 'prior' (the label shares' "
                           "decisions), 'natural' (the model's own cut), 'global', 'calibrated', 'pcut', 'rcut', "
                           "'scut' and 'rscut' by cross-validation on those scores; or one rule for every family",
                           Options("auto", *RULES), active_when=When(task="multilabel"))


NATURAL_HELP = ("label decisions (multilabel task): 'natural' (default: the model's own cut, as the paper "
                "reproduced decides; a label never positive in training is never predicted) or a rule learned on "
                "out-of-fold scores of the training rows by 3 inner refits (malt.decisions): 'auto', 'prior', "
                "'global', 'calibrated', 'pcut', 'rcut', 'scut', 'rscut'")


@dataclass(frozen=True, kw_only=True)
class NaturalThresholdParams(Params):
    """The decision field of paper reproductions whose numbers rest on the model's own cut (and whose
    runs are costly to repeat on inner folds)."""

    threshold: str = param("natural", NATURAL_HELP, Options("auto", *RULES), active_when=When(task="multilabel"))


# ---------------------------------------------------------------------------------------------
# One decision rule, fitted
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    """A fitted rule: label j is predicted when its score exceeds ``thresholds[j]`` (±inf for labels
    never/always predicted); for ``rcut`` and ``rscut`` also when it is among a row's ``rank`` top-scored
    labels (``rcut``: only then; labels forced by ±inf thresholds excepted)."""

    rule: str
    thresholds: np.ndarray
    rank: int = 0

    def decide(self, S: np.ndarray) -> np.ndarray:
        """(n, L) 0/1 decisions for scores S (n, L)."""
        S = np.asarray(S, dtype=float)
        if self.rule not in ("rcut", "rscut"):
            return (S > self.thresholds[None, :]).astype(float)
        forced_off, forced_on = np.isposinf(self.thresholds), np.isneginf(self.thresholds)
        out = top_ranked(S, ~(forced_off | forced_on), self.rank)
        if self.rule == "rscut":
            out = np.maximum(out, S > self.thresholds[None, :])
        out[:, forced_on] = 1.0
        out[:, forced_off] = 0.0
        return out


def top_ranked(S: np.ndarray, free: np.ndarray, rank: int) -> np.ndarray:
    """(n, L) 0/1: each row's ``rank`` top-scored labels among the columns ``free`` (L,) bool."""
    out = np.zeros(S.shape)
    r = min(int(rank), int(free.sum()))
    if r > 0:
        ranked = np.where(free[None, :], S, -np.inf)
        top = np.argpartition(-ranked, r - 1, axis=1)[:, :r]
        np.put_along_axis(out, top, 1.0, axis=1)
    return out


def _classes(Y: np.ndarray):
    """(known mask, positives per label, negatives per label) of a 0/1/NaN label matrix."""
    known = ~np.isnan(Y)
    pos = np.where(known, Y, 0.0).sum(0)
    return known, pos, known.sum(0) - pos


def best_cut(s: np.ndarray, y: np.ndarray, objective: str, base: tuple[float, float, float] = (0.0, 0.0, 0.0)
             ) -> tuple[float, float]:
    """The threshold t (predict s > t) that optimises ``objective`` on scores s with 0/1 truth y, and
    its value: 'f1' maximises F1 = 2TP / (#predicted + #positive), 'hamming' minimises the errors
    FP + FN (returned negated, so larger is better for both). ``base`` = (true positives, predicted,
    positives) of entries decided already (predicted whatever t is: ``rscut``'s rank part), counted in the
    objective. Cuts lie midway between adjacent distinct scores (above the largest: predict none; below
    the smallest: predict all); among equal values the highest threshold wins. O(n log n)."""
    s, y = np.asarray(s, float), np.asarray(y, float)
    tp0, predicted0, positives0 = (float(v) for v in base)
    if s.size == 0:
        return np.inf, 0.0
    order = np.argsort(-s, kind="stable")
    s, y = s[order], y[order]
    tp = np.concatenate([[0.0], np.cumsum(y)])  # tp[k]: true positives among the k top-scored
    k = np.arange(s.size + 1, dtype=float)
    cut_ok = np.concatenate([[True], s[:-1] > s[1:], [True]])  # a cut after position k separates distinct values
    positives = y.sum()
    if objective == "f1":
        denominator = predicted0 + k + positives0 + positives
        value = np.where(denominator > 0, 2 * (tp0 + tp) / np.maximum(denominator, 1), 0.0)
    else:
        value = -((predicted0 - tp0) + (k - tp) + (positives - tp))
    value = np.where(cut_ok, value, -np.inf)
    best = int(np.argmax(value))  # the first maximum: the fewest predicted, the highest threshold
    gap = max(float(s[0] - s[-1]), 1.0)
    if best == 0:
        t = s[0] + gap
    elif best == s.size:
        t = s[-1] - gap
    else:
        t = 0.5 * (s[best - 1] + s[best])
    return float(t), float(value[best])


def fit_rule(S: np.ndarray, Y: np.ndarray, rule: str, objective: str, natural: float) -> Decision:
    """Fit one rule on training scores S (n, L) and labels Y (n, L; NaN unknown) for ``objective``. The
    cuts of 'f1_macro' are F1 cuts: a label's own cut maximises its F1, the macro criterion's term; a
    pooled cut (``global``, the shrinkage target, ``prior``) the pooled F1."""
    S, Y = np.asarray(S, float), np.asarray(Y, float)
    objective = "f1" if objective == "f1_macro" else objective
    known, pos, neg = _classes(Y)
    L = Y.shape[1]
    learnable = (pos > 0) & (neg > 0)
    one_class = ((pos == 0) & (neg > 0)) | ((neg == 0) & (pos > 0))
    thresholds, rank = np.full(L, float(natural)), 0
    if rule == "prior":
        thresholds = prior_thresholds(Y, objective)
    elif rule in ("global", "scut"):
        thresholds = shrunk_cuts(S, Y, known & learnable[None, :], objective, rule == "scut", natural)
    elif rule == "calibrated":
        thresholds = calibrated_cuts(S, Y, learnable, natural)
    elif rule == "pcut":
        for j in np.flatnonzero(learnable):
            rows = known[:, j]
            s = np.sort(S[rows, j])[::-1]
            k = int(round(pos[j] / rows.sum() * s.size))
            thresholds[j] = best_cut_at(s, k)
    elif rule == "rcut":
        cardinality = pos.sum() / max(known.any(1).sum(), 1)
        rank = max(1, int(round(cardinality))) if pos.sum() > 0 else 0
    elif rule == "rscut":
        rank = median_cardinality(Y)
        top = (top_ranked(S, ~one_class, rank) > 0) & known  # the rank part, as `Decision.decide` takes it
        thresholds = shrunk_cuts(S, Y, known & ~top & learnable[None, :], objective, True, natural, forced=top)
    elif rule != "natural":
        raise ValueError(f"unknown threshold rule {rule!r}; use one of {', '.join(RULES)}")
    thresholds[(pos == 0) & (neg > 0)] = np.inf   # never positive in training: never predicted
    thresholds[(neg == 0) & (pos > 0)] = -np.inf  # never negative in training: always predicted
    return Decision(rule, thresholds, rank)


def shrunk_cuts(S: np.ndarray, Y: np.ndarray, mask: np.ndarray, objective: str, per_label: bool, natural: float,
                forced: np.ndarray | None = None) -> np.ndarray:
    """(L,) thresholds over the entries ``mask`` (n, L): the best pooled cut (``global``) or, with
    ``per_label``, each label's best cut shrunk towards the pooled one by its positive count
    (t_j = (n⁺_j t̂_j + m t) / (n⁺_j + m), m = `SHRINK`); ``natural`` where ``mask`` holds nothing.
    ``forced`` (n, L): entries predicted anyway, counted in the objective (`best_cut`'s ``base``)."""
    L = Y.shape[1]
    y = np.where(np.isnan(Y), 0.0, Y)
    forced = np.zeros(Y.shape, bool) if forced is None else forced

    def base(cols):
        hits = float((y[:, cols] * forced[:, cols]).sum())  # forced true positives, also the forced positives
        return hits, float(forced[:, cols].sum()), hits

    if not mask.any():
        return np.full(L, float(natural))
    shared = best_cut(S[mask], y[mask], objective, base(slice(None)))[0]
    thresholds = np.full(L, float(shared))
    if per_label:
        for j in np.flatnonzero(mask.any(0)):
            rows = mask[:, j]
            own = best_cut(S[rows, j], y[rows, j], objective, base(j))[0]
            n_pos = y[rows, j].sum() + base(j)[2]
            w = n_pos / (n_pos + SHRINK)
            thresholds[j] = w * own + (1 - w) * shared if np.isfinite(own) else shared
    return thresholds


def prior_thresholds(Y: np.ndarray, objective: str) -> np.ndarray:
    """(L,) ±inf: label j predicted for every row or for none, by the objective's best single cut on the
    training shares f_j (pooled over the known entries; for Hamming loss f_j > ½, the majority)."""
    known, pos, _ = _classes(Y)
    share = pos / np.maximum(known.sum(0), 1)
    broadcast = np.broadcast_to(share, Y.shape)
    t, _ = best_cut(broadcast[known], Y[known], objective)
    return np.where(share > t, -np.inf, np.inf)


def calibrated_cuts(S: np.ndarray, Y: np.ndarray, learnable: np.ndarray, natural: float,
                    iterations: int = 30) -> np.ndarray:
    """(L,) the score where a per-label logistic calibration σ(a s + b) crosses ½ (s = −b/a), fitted by
    Newton's method on all labels at once with Platt's smoothed targets ((n⁺ + 1)/(n⁺ + 2) and 1/(n⁻ + 2))
    on the standardised scores; a label with a ≤ 0 (scores not rising with the label) gets its majority
    decision (±inf), a label without both classes ``natural``. Cost O(iterations · nL)."""
    known, pos, neg = _classes(Y)
    w = known.astype(float)
    count = np.maximum(w.sum(0), 1)
    mean = (np.where(known, S, 0.0)).sum(0) / count
    scale = np.sqrt((np.where(known, S - mean, 0.0) ** 2).sum(0) / count)
    scale = np.where(scale > 0, scale, 1.0)
    z = np.where(known, (S - mean) / scale, 0.0)
    target = np.where(np.where(known, Y, 0.0) > 0.5, ((pos + 1) / (pos + 2))[None, :], (1 / (neg + 2))[None, :])
    a = np.zeros(S.shape[1])
    b = np.log((pos + 1) / (neg + 1))
    ridge = 1e-6
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-np.clip(a * z + b, -35, 35)))
        r, h = w * (p - target), w * p * (1 - p)
        ga, gb = (r * z).sum(0) + ridge * a, r.sum(0)
        haa, hab, hbb = (h * z * z).sum(0) + ridge, (h * z).sum(0), h.sum(0) + ridge
        det = haa * hbb - hab ** 2
        ok = det > 1e-12
        da = np.where(ok, (hbb * ga - hab * gb) / np.where(ok, det, 1), 0.0)
        db = np.where(ok, (haa * gb - hab * ga) / np.where(ok, det, 1), 0.0)
        a, b = a - da, b - db
    majority = np.where(pos > neg, -np.inf, np.inf)
    rising = a > 1e-9
    cut = mean + scale * (-b / np.where(rising, a, 1.0))
    return np.where(learnable & rising, cut, np.where(learnable, majority, natural))


def median_cardinality(Y: np.ndarray) -> int:
    """The largest r such that more than half of the rows with a known label have r or more positives (0 when
    half of them have none)."""
    known = ~np.isnan(Y)
    counts = np.where(known, Y, 0.0).sum(1)[known.any(1)]
    if counts.size == 0:
        return 0
    return int(np.floor(np.sort(counts)[::-1][counts.size // 2]))


def best_cut_at(s_desc: np.ndarray, k: int) -> float:
    """A threshold predicting the k top entries of the descending scores ``s_desc`` (midway to the next)."""
    if k <= 0:
        return float(s_desc[0] + max(float(s_desc[0] - s_desc[-1]), 1.0))
    if k >= s_desc.size:
        return float(s_desc[-1] - max(float(s_desc[0] - s_desc[-1]), 1.0))
    return float(0.5 * (s_desc[k - 1] + s_desc[k]))


# ---------------------------------------------------------------------------------------------
# Scoring decisions on held-out rows, and the choice of rule
# ---------------------------------------------------------------------------------------------
def objective_value(Y: np.ndarray, P: np.ndarray, objective: str) -> float:
    """Larger is better: 1 − Hamming loss ('hamming'), ½ (micro-F1 + macro-F1) ('f1') or macro-F1 ('f1_macro')
    over the known entries of Y; macro-F1 over the labels with a positive in truth or decision (the task's
    convention)."""
    known = ~np.isnan(Y)
    y = np.where(known, Y, 0.0) > 0.5
    p = (P > 0.5) & known
    if objective == "hamming":
        return 1.0 - float(np.sum(y != p) / max(known.sum(), 1))
    tp, fp, fn = (y & p).sum(0), (~y & p & known).sum(0), (y & ~p).sum(0)
    denominator = 2 * tp + fp + fn
    micro = 2 * tp.sum() / denominator.sum() if denominator.sum() else 0.0
    defined = denominator > 0
    macro = float(np.mean(2 * tp[defined] / denominator[defined])) if defined.any() else 0.0
    return macro if objective == "f1_macro" else 0.5 * (float(micro) + macro)


@dataclass
class Decisions:
    """The fitted decisions of one scorer: one `Decision` per loss family (`OBJECTIVES`), with how they were
    chosen."""

    hamming: Decision
    f1: Decision
    f1_macro: Decision
    choice: dict[str, Any] = field(default_factory=dict)

    def predict(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Hamming-family, F1-family, macro-F1-family decisions) for test scores S."""
        return self.hamming.decide(S), self.f1.decide(S), self.f1_macro.decide(S)

    def diagnostics(self) -> dict[str, Any]:
        """The rule of each family (also as ``threshold_<family>=<rule>`` = 1, so `malt show --diagnostics`,
        which shows numbers, gives the share of folds that chose it), its thresholds' median or rank,
        and with 'auto' each rule's cross-validated value, the chosen rule's margin to the best and the
        best's standard error."""
        out: dict[str, Any] = {f"threshold_{family}": getattr(self, family).rule for family in OBJECTIVES}
        out.update({f"threshold_{family}={getattr(self, family).rule}": 1 for family in OBJECTIVES})
        for family in OBJECTIVES:
            t = getattr(self, family).thresholds
            finite = t[np.isfinite(t)]
            if getattr(self, family).rule == "rcut":
                out[f"threshold_{family}_rank"] = getattr(self, family).rank
            elif finite.size:
                out[f"threshold_{family}_median"] = float(np.median(finite))
        out.update(self.choice)
        return out


def learn(S_oof: np.ndarray | None, Y: np.ndarray, rule: str, natural: float,
          rng: np.random.Generator | None = None, repeats: int | None = None) -> Decisions:
    """Decisions for each loss family (`OBJECTIVES`) from out-of-fold training scores ``S_oof`` (n, L) and the
    training labels Y (NaN unknown). ``rule``: one of `RULES` for every family, or 'auto' (see the
    module docstring). ``S_oof`` may be None for ``rule='natural'`` (nothing is learned from scores)."""
    Y = np.asarray(Y, dtype=float)
    if rule == "natural":
        fitted = fit_rule(np.zeros_like(Y), Y, "natural", "hamming", natural)
        return Decisions(fitted, fitted, fitted)
    if S_oof is None:
        raise ValueError(f"threshold rule {rule!r} needs out-of-fold training scores")
    S_oof = np.asarray(S_oof, dtype=float)
    if rule != "auto":
        return Decisions(*(fit_rule(S_oof, Y, rule, objective, natural) for objective in OBJECTIVES))
    rng = rng if rng is not None else np.random.default_rng(0)
    n = Y.shape[0]
    repeats = repeats or int(np.clip(np.ceil(2000 / max(n, 1)), 1, 5))
    chosen, choice = {}, {}
    ids = [inner_ids(Y, AUTO_FOLDS, rng) for _ in range(repeats)]
    for objective in OBJECTIVES:
        values = np.full((len(RULES), repeats * AUTO_FOLDS), np.nan)
        for r, fold_ids in enumerate(ids):
            for f in range(AUTO_FOLDS):
                train, test = fold_ids != f, fold_ids == f
                if not train.any() or not test.any():
                    continue
                for i, name in enumerate(RULES):
                    d = fit_rule(S_oof[train], Y[train], name, objective, natural)
                    values[i, r * AUTO_FOLDS + f] = objective_value(Y[test], d.decide(S_oof[test]), objective)
        mean = np.nanmean(values, axis=1)
        best = int(np.nanargmax(mean))
        se = paired_se(values, best)
        pick = next(i for i in range(len(RULES)) if mean[i] >= mean[best] - se[i])
        chosen[objective] = fit_rule(S_oof, Y, RULES[pick], objective, natural)
        choice[f"threshold_{objective}_margin"] = float(mean[pick] - mean[best])
        choice[f"threshold_{objective}_se"] = float(se[pick])
        choice[f"threshold_{objective}_cv"] = {name: round(float(v), 4) for name, v in zip(RULES, mean)}
    return Decisions(chosen["hamming"], chosen["f1"], chosen["f1_macro"], choice)


def paired_se(values: np.ndarray, best: int) -> np.ndarray:
    """(rules,) standard error of each rule's mean shortfall to rule ``best`` over the inner folds
    (``values`` (rules, folds), NaN for a fold not run): the folds are shared, so their difficulty cancels
    in the difference and the one-SE rule compares rules by their paired differences; 0 with one fold."""
    diff = values[best][None, :] - values
    ok = ~np.isnan(diff)
    m = ok.sum(1)
    if values.shape[1] < 2:
        return np.zeros(len(values))
    mean = np.where(ok, diff, 0.0).sum(1) / np.maximum(m, 1)
    var = np.where(ok, (diff - mean[:, None]) ** 2, 0.0).sum(1) / np.maximum(m - 1, 1)
    return np.where(m > 1, np.sqrt(var / np.maximum(m, 1)), 0.0)


def inner_ids(Y: np.ndarray, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold ids of the training rows, stratified by labels (iterative stratification) so rare labels
    reach every fold."""
    from malt.numerics.stratify import iterative_stratification

    return iterative_stratification(Y, folds, rng)


def learned(rule: str, Y: np.ndarray, natural: float, rng: np.random.Generator, oof: np.ndarray | None = None,
            fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
            folds: int = AUTO_FOLDS) -> Decisions:
    """`learn` for a scorer: ``rule`` 'natural' needs nothing; otherwise the out-of-fold scores ``oof``
    the scorer already has (its inner CV), or ``fit_predict`` refit on ``folds`` inner folds
    (`out_of_fold`)."""
    if rule == "natural":
        return learn(None, Y, "natural", natural)
    if oof is None:
        oof = out_of_fold(fit_predict, Y, folds, rng)
    return learn(oof, Y, rule, natural, rng)


def decide_by_refits(run: Callable, split, params: Params, ctx, natural: float) -> Prediction:
    """For a scorer without cheap out-of-fold scores: ``run(split, params, ctx)`` once on the split and,
    unless ``params.threshold`` is 'natural', once per inner fold of the training rows (the sub-splits'
    rows are dataset rows, so the context's kernels and graphs serve them), and the decisions learned
    from those refits' scores. Cost: 1 + `AUTO_FOLDS` runs."""
    from malt.splits import MultilabelSplit

    plain = params.derived(threshold="natural")
    prediction = run(split, plain, ctx)
    tr_index = np.asarray(split.train_index)

    def fit_predict(train, val):
        sub = MultilabelSplit(split.X_train[train], split.Y_train[train], split.X_train[val], tr_index[train],
                              tr_index[val], split.fold)
        return np.asarray(run(sub, plain, ctx).scores, dtype=float)

    decisions = learned(params.threshold, np.asarray(split.Y_train, float), natural, ctx.rng, fit_predict=fit_predict)
    extras = {k: v for k, v in (prediction.extras or {}).items() if k not in ("labels_f1", "labels_f1_macro")}
    return decided(np.asarray(prediction.scores, dtype=float), decisions, prediction.diagnostics, extras)


def out_of_fold(fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray], Y: np.ndarray, folds: int,
                rng: np.random.Generator) -> np.ndarray:
    """(n, L) scores of every training row from a model fit without it: ``fit_predict(train, val)``
    (indices into the training rows) returns the (len(val), L) scores of the rows ``val``; one call
    per inner fold (stratified by labels). Cost: ``folds`` fits on (folds − 1)/folds of the rows."""
    Y = np.asarray(Y, dtype=float)
    ids = inner_ids(Y, folds, rng)
    out = np.zeros(Y.shape)
    for f in range(int(ids.max()) + 1 if ids.size else 0):
        val = np.flatnonzero(ids == f)
        train = np.flatnonzero(ids != f)
        if val.size and train.size:
            out[val] = fit_predict(train, val)
    return out


def decided(scores: np.ndarray, decisions: Decisions, diagnostics: dict | None = None,
            extras: dict | None = None) -> Prediction:
    """The multilabel Prediction of test scores under fitted decisions: ``labels`` the Hamming-family
    decisions, ``extras['labels_f1']`` and ``extras['labels_f1_macro']`` the F1 and macro-F1 families' (the
    task scores each family from its own), and the decisions' diagnostics beside the algorithm's."""
    labels, labels_f1, labels_f1_macro = decisions.predict(scores)
    return Prediction(scores=scores, labels=labels,
                      extras={**(extras or {}), "labels_f1": labels_f1, "labels_f1_macro": labels_f1_macro},
                      diagnostics={**(diagnostics or {}), **decisions.diagnostics()})
