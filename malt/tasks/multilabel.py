"""The `multilabel` task: predict whole label rows of unseen points (dissertation §4.4, §5.4).

Five folds over rows (random, or iteratively stratified by labels with ``stratify_folds``; or
the dataset's own train/test split with ``split=given``, run ``repeats``
times with a different algorithm seed each time; the repeats take the place of folds). Training labels
may have a ``missing`` fraction of entries hidden (NaN), ``discard`` drops partially labelled
training rows (the papers' "-D" variants), ``labeled`` caps the training rows (learning curves).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from malt.tasks import metrics
from malt.tasks import paper_metrics
from malt.errors import DataError
from malt.params import Interval, Options, Params, Size, When, param
from malt.splits import MultilabelSplit, Prediction
from malt.numerics.stratify import iterative_stratification
from malt.tasks.base import Metric, Setting, Task, as_array, fold_assignment, register_task, subkey_rng

RANKING = "ties count against the ranking (a label tied with another ranks below it)"
F1_DECISIONS = "; read from the decisions an algorithm learned for the F1 family (malt.numerics.decisions), if any"
MACRO_DECISIONS = ("; read from the decisions an algorithm learned for macro-F1 (malt.numerics.decisions), if any, "
                   "else the F1 family's")


DECISION_FAMILIES = {"hamming": "labels", "f1": "labels_f1", "f1_macro": "labels_f1_macro"}
"""Each decision family (`malt.numerics.decisions`) and the packed array holding its 0/1 decisions."""
FALLBACK = {"f1": "hamming", "f1_macro": "f1"}
"""The family whose decisions a unit stored without a family's own serve for it (units from before the
macro-F1 family, or scorers with one decision set)."""
METRIC_DECISIONS = {"hamming_loss": "hamming", "rd_accuracy": "hamming", "accuracy": "f1", "f1_micro": "f1",
                    "f1_macro": "f1_macro", "rd_f1_macro": "f1_macro", "rd_f1_micro": "f1", "rd_auc": "f1"}
"""The decision family each bipartition metric reads (the others read the scores): `score_packed` scores
from it, `malt show` names the rule that produced it (diagnostics ``threshold_<family>``)."""


@dataclass(frozen=True, kw_only=True)
class MultilabelParams(Params):
    missing: float = param(0.0, "fraction of training label entries hidden at random", Interval(0, 1, "left"))
    discard: bool = param(False, "drop training rows with any hidden label (the '-D' variants)")
    labeled: int | None = param(None, "use at most this many training rows (learning curves)", Interval(1, None))
    folds: int = param(5, "number of cross-validation folds (split=cv)", Interval(2, None),
                       active_when=When(split="cv"))
    split: str = param("cv", "'cv' for k-fold CV, 'given' for the dataset's own train/test split",
                       Options("cv", "given"))
    stratify_folds: bool = param(False, "split=cv: assign the folds so each fold holds every label's share of "
                                 "positives (iterative stratification, Sechidis et al. 2011); as the semisupervised "
                                 "task's option of the same name does per class", active_when=When(split="cv"))
    seed: int = param(0, "seed of the fold assignment and the hidden entries", Interval(0, None), repetition=True)
    repeats: int = param(1, "with split=given: runs on the same split, each with its own seed (a sampler's "
                         "restarts; Rai & Daumé average 10)", Interval(1, None), count=True,
                         active_when=When(split="given"))


@register_task
class MultilabelTask(Task):
    """Predict whole label rows of unseen points; five-fold CV or the dataset's own split."""

    name = "multilabel"
    Params = MultilabelParams
    requires = ("X", "Y")
    metrics = (
        Metric("one_error", "One-error", "lower", True, version="2",
               conventions="1 unless every label tied at the top score is relevant; a row without a relevant "
                           "label counts as 1"),
        Metric("average_precision", "Average precision", "higher", True, version="2",
               conventions=f"rows without a relevant label are left out (as MULAN); {RANKING}"),
        Metric("coverage", "Coverage", "lower", False,
               conventions=f"depth of the lowest-ranked relevant label minus one; 0 for a row without a relevant "
                           f"label; {RANKING}"),
        Metric("hamming_loss", "Hamming loss", "lower", True),
        Metric("ranking_loss", "Ranking loss", "lower", True,
               conventions=f"a row without both relevant and irrelevant labels counts as 0; {RANKING}"),
        Metric("accuracy", "Accuracy (Jaccard)", "higher", True,
               conventions="a row whose true and predicted label sets are both empty counts as 1 (as MULAN)"
                           + F1_DECISIONS),
        Metric("f1_micro", "Micro-F1", "higher", True, version="2",
               conventions="NaN when neither truth nor prediction has a positive" + F1_DECISIONS),
        Metric("f1_macro", "Macro-F1", "higher", True, version="3",  # v3: its own decisions (macro-F1 family)
               conventions="labels with no positive in the truth and none predicted are left out (MULAN counts "
                           "them as 1)" + MACRO_DECISIONS),
        Metric("auc", "Macro AUC", "higher", True,
               conventions="labels without both classes in the fold are left out; tied scores get average ranks"),
        # Rai & Daumé 2009, Table 1, as its numbers read (see malt.tasks.paper_metrics)
        Metric("rd_accuracy", "Overall accuracy (Rai & Daumé)", "higher", True,
               conventions="fraction of (instance, label) entries decided correctly: 1 - Hamming loss"),
        Metric("rd_f1_macro", "Macro-F1 (Rai & Daumé)", "higher", True, version="2",  # v2: as f1_macro's v3
               conventions="a label with no positive and no positive decision in the fold scores 0" + MACRO_DECISIONS),
        Metric("rd_f1_micro", "Micro-F1 (Rai & Daumé)", "higher", True,
               conventions="pooled counts; 0 when there is no positive at all" + F1_DECISIONS),
        Metric("rd_auc", "AUC of label decisions (Rai & Daumé)", "higher", True,
               conventions="mean over labels with both classes of (TPR + TNR) / 2 of the 0/1 decisions"
                           + F1_DECISIONS),
    )
    decisions = METRIC_DECISIONS
    settings = (Setting("missing", "Hidden training labels", "%", 100.0),
                Setting("labeled", "Labelled training rows"))

    @classmethod
    def test_train_ratio(cls, options):
        """Repeats on the dataset's own split share one training set: not resamples."""
        return None if options.get("split") == "given" else super().test_train_ratio(options)

    def check(self, dataset, params):
        missing = [c for c in self.requires if c not in dataset]
        if missing:
            raise DataError(f"The multilabel task needs features X and a label matrix Y; dataset "
                            f"'{dataset.name}' has {', '.join(sorted(dataset.components))}.")
        Y = np.asarray(dataset["Y"], dtype=float)
        if Y.ndim != 2 or Y.shape[1] == 0:
            raise DataError(f"Dataset '{dataset.name}': the label matrix Y must have shape (rows, labels), "
                            f"got {Y.shape}.")
        values = Y[~np.isnan(Y)]
        if values.size and not np.isin(values, (0.0, 1.0)).all():
            bad = values[~np.isin(values, (0.0, 1.0))][0]
            raise DataError(f"Dataset '{dataset.name}': labels must be 0 or 1 (NaN for unknown), found {bad:g}; "
                            "recode the label columns.")
        if values.size == 0:
            raise DataError(f"Dataset '{dataset.name}': every label entry is unknown (NaN); there is nothing to "
                            "learn or score.")
        empty = np.flatnonzero(np.nansum(Y, axis=0) == 0)
        if empty.size:
            names = dataset.meta.get("label_names") or []
            which = ", ".join(str(names[i]) if i < len(names) else str(i) for i in empty[:3])
            raise DataError(f"Dataset '{dataset.name}': {empty.size} label(s) have no positive example at all "
                            f"({which}{', …' if empty.size > 3 else ''}); drop those columns.")
        if params.split == "given":
            if "given_train" not in dataset.meta:
                raise DataError(f"Dataset '{dataset.name}' ships no train/test split; use --task-param split=cv.")
        else:
            if dataset.n_rows < params.folds:
                raise DataError(f"Dataset '{dataset.name}' has {dataset.n_rows} rows, fewer than --folds "
                                f"{params.folds}; lower --folds.")

        fold_rows = self._fold_rows(dataset, params)
        if params.labeled is not None and params.labeled > fold_rows:
            raise DataError(f"--labeled {params.labeled} is more than the data allow: the number of training rows in "
                            f"the smallest fold of '{dataset.name}' is {fold_rows}, so the largest valid labeled "
                            f"is {fold_rows}.")

    def n_folds(self, dataset, params):
        return params.repeats if params.split == "given" else params.folds

    def _fold_ids(self, dataset, params) -> np.ndarray:
        """Fold id of every row under split=cv."""
        n = dataset.n_rows
        if params.stratify_folds:
            return iterative_stratification(np.asarray(dataset["Y"], dtype=float), params.folds,
                                            np.random.default_rng([params.seed, n, params.folds, 2]))
        return fold_assignment(n, params.folds, params.seed)

    def _fold_rows(self, dataset, params) -> int:
        """Training rows of the smallest fold, before ``labeled`` caps them."""
        if params.split == "given":
            return int(dataset.meta["given_train"])
        ids = self._fold_ids(dataset, params)
        return int(ids.size - np.bincount(ids, minlength=params.folds).max())

    def sizes(self, dataset, params):
        rows = self._fold_rows(dataset, params)
        if params.labeled is not None:
            rows = min(rows, params.labeled)
        train = Size(rows, f"the number of training rows in the smallest fold of '{dataset.name}'"
                           + (f" (labeled={params.labeled})" if params.labeled is not None else ""))
        features, labels = dataset["X"].shape[1], np.shape(dataset["Y"])[1]
        return {"train_rows": train, "inner_items": Size(train.value, train.what, self._rarest(dataset, params)),
                "features": Size(features, f"the number of feature columns of '{dataset.name}'"),
                "min_view": Size(min(features, labels), f"the smaller of the feature and label counts of "
                                                        f"'{dataset.name}'")}

    def _rarest(self, dataset, params) -> Size:
        """The positive training rows of the rarest label over the folds. More inner folds than that
        leaves some without a positive: normal for rare labels (iterative stratification, Sechidis et
        al. 2011, deals them as evenly as it can), so it is a notice (`Size.notice_above`), as
        scikit-learn's StratifiedKFold warns, never a refusal. Cost: every fold's split."""
        fewest = None
        for fold in range(self.n_folds(dataset, params)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # labels without a positive: the unit itself warns
                try:
                    Y_train = self.split(dataset, params, fold).Y_train
                except DataError:  # the unit fails with it
                    continue
            least = int(np.nansum(Y_train, axis=0).min())
            fewest = least if fewest is None else min(fewest, least)
        return Size(fewest if fewest is not None else 0,
                    f"the positive training rows of the rarest label in a fold of '{dataset.name}'")

    def _parts(self, dataset, params, fold):
        n = dataset.n_rows
        if params.split == "given":
            cut = dataset.meta["given_train"]
            return np.arange(cut), np.arange(cut, n)
        ids = self._fold_ids(dataset, params)
        return np.flatnonzero(ids != fold), np.flatnonzero(ids == fold)

    def split(self, dataset, params, fold):
        train, test = self._parts(dataset, params, fold)
        rng = subkey_rng("multilabel", params.seed, fold)
        if params.labeled is not None and params.labeled < len(train):
            train = np.sort(rng.choice(train, params.labeled, replace=False))
        Y = np.asarray(dataset["Y"], dtype=float)
        Y_train = Y[train].copy()
        if params.missing > 0:
            observed = np.flatnonzero(~np.isnan(Y_train))
            hide = rng.choice(observed, int(round(params.missing * observed.size)), replace=False)
            Y_train.ravel()[hide] = np.nan
        if params.discard:
            complete = ~np.isnan(Y_train).any(axis=1)
            if not complete.any():
                raise DataError(f"With missing={params.missing} every training row of fold {fold} has a hidden "
                                "label, so discard=True leaves nothing to train on; lower --missing.")
            train, Y_train = train[complete], Y_train[complete]
        empty = np.nansum(Y_train, axis=0) == 0
        if empty.any():
            warnings.warn(f"fold {fold}: {int(empty.sum())} label(s) have no positive training example",
                          stacklevel=2)
        X = dataset["X"]
        return MultilabelSplit(X[train], Y_train, X[test], train, test, fold)

    def pack(self, split, prediction: Prediction, params):
        shape = (len(split.test_index), split.Y_train.shape[1])
        scores = as_array(prediction.scores, "scores", shape)
        packed = {"scores": scores.astype(np.float32)}
        extras = prediction.extras or {}
        for name in DECISION_FAMILIES.values():
            value = prediction.labels if name == "labels" else extras.get(name)
            if name != "labels" and value is None:
                continue
            labels = as_array(value, name, shape)
            if not np.isin(labels, (0.0, 1.0)).all():
                raise ValueError(f"the algorithm returned {name} other than 0 and 1")
            packed[name] = labels.astype(np.uint8)
        return packed

    def score_packed(self, dataset, params, split, packed):
        """Ranking measures from the scores; Hamming loss and overall accuracy from ``labels``; micro-F1,
        Jaccard accuracy, Rai & Daumé's micro-F1 and decision AUC from ``labels_f1``, and both macro-F1s from
        ``labels_f1_macro``, when the algorithm learned decisions for them (`malt.numerics.decisions`; else
        the `FALLBACK` family's)."""
        Y = np.asarray(dataset["Y"], dtype=float)[split.test_index]
        keep = ~np.isnan(Y).any(axis=1)  # test rows with an unknown label are not scored
        scores = np.asarray(packed["scores"], dtype=float)[keep]
        sets = {}
        for family, name in DECISION_FAMILIES.items():  # a family not stored reads the one before it (older units)
            sets[family] = packed[name][keep] if name in packed else sets.get(FALLBACK.get(family), packed["labels"][keep])
        out = metrics.multilabel_scores(Y[keep], scores, sets[METRIC_DECISIONS["hamming_loss"]],
                                        sets[METRIC_DECISIONS["f1_micro"]], sets[METRIC_DECISIONS["f1_macro"]])
        rd = paper_metrics.rai_daume_scores(Y[keep], sets[METRIC_DECISIONS["rd_f1_micro"]])
        rd["rd_accuracy"] = paper_metrics.overall_accuracy(Y[keep], sets[METRIC_DECISIONS["rd_accuracy"]])
        rd["rd_f1_macro"] = paper_metrics.macro_f1(Y[keep], sets[METRIC_DECISIONS["rd_f1_macro"]])
        out.update(rd)
        return out
