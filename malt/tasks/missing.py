"""The `missing` task: recover hidden entries of a matrix (dissertation §4.4.5, §5.3; PCSA §4).

Each fold hides a fresh random ``missing`` fraction of the observed entries. Label matrices enter
as truncated log-odds ±c (1 → +c, 0 → −c) and are scored by sign; real matrices (component ``M``,
any number of axes) by RMSE, MAE and correlation. ``complete_rows`` keeps that many rows fully
observed and hides entries of the others only (the image-completion protocol of the PCSA paper).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from malt.tasks import metrics
from malt.errors import DataError
from malt.params import Interval, Options, Params, Size, param
from malt.splits import MissingSplit, Prediction
from malt.tasks.base import Metric, Setting, Task, as_array, register_task, subkey_rng


@dataclass(frozen=True, kw_only=True)
class MissingParams(Params):
    missing: float = param(0.2, "fraction of observed entries hidden in each fold", Interval(0, 1, "neither"))
    folds: int = param(5, "number of folds (each hides a fresh random set)", Interval(1, None))
    c: float = param(1.0, "labels enter as truncated log-odds ±c", Interval(0, None, "neither"))
    source: str = param("auto", "array to complete: 'Y' (labels), 'M' (real values), 'T' (a k-way real "
                        "array, for pcsa-tensor) or 'auto' (Y if present)", Options("auto", "Y", "M", "T"))
    complete_rows: int = param(0, "rows kept fully observed; entries are hidden in the others only",
                               Interval(0, None))
    seed: int = param(0, "seed of the hidden entries", Interval(0, None), repetition=True)


@register_task
class MissingTask(Task):
    """Recover hidden entries of a label or real matrix (each fold hides a fresh random set)."""

    name = "missing"
    Params = MissingParams
    requires = ("M",)  # or Y / T, chosen by the source option
    metrics = (
        Metric("error", "Error rate", "lower", True, conventions="sign disagreement at the hidden label entries"),
        Metric("rmse", "RMSE", "lower", conventions="over the hidden entries"),
        Metric("mae", "MAE", "lower", conventions="over the hidden entries"),
        Metric("correlation", "Correlation", "higher",
               conventions="Pearson correlation of truth and estimate at the hidden entries; NaN when either is "
                           "constant"),
    )
    settings = (Setting("missing", "Hidden entries", "%", 100.0), Setting("complete_rows", "Fully observed rows"))

    @classmethod
    def test_train_ratio(cls, options):
        """Each fold hides a fresh ``missing`` fraction: hidden / observed."""
        hidden = float(options.get("missing", MissingParams().missing))
        return hidden / (1.0 - hidden) if 0 < hidden < 1 else None

    def _source(self, dataset, params) -> str:
        if params.source != "auto":
            return params.source
        return "Y" if "Y" in dataset else "M"

    def check(self, dataset, params):
        source = self._source(dataset, params)
        if source not in dataset:
            raise DataError(f"The missing task completes component '{source}', which dataset '{dataset.name}' "
                            f"lacks (it has {', '.join(sorted(dataset.components))}); set --task-param source=...")
        T, kind = self.truth(dataset, params)
        if params.complete_rows >= T.shape[0]:
            raise DataError(f"complete_rows={params.complete_rows} leaves no row to hide entries in "
                            f"(the matrix has {T.shape[0]} rows).")
        observed = int(np.isfinite(T).sum())
        if int(round(params.missing * observed)) < 1:
            raise DataError(f"Hiding {params.missing:g} of the {observed} observed entries of '{dataset.name}' hides "
                            "none; raise --missing.")
        if source == "Y":
            values = np.asarray(dataset["Y"], dtype=float)
            values = values[~np.isnan(values)]
            if not np.isin(values, (0.0, 1.0)).all():
                raise DataError(f"Dataset '{dataset.name}': labels must be 0 or 1 (NaN for unknown); recode them or "
                                "complete them as a real matrix with --task-param source=M.")

    def truth(self, dataset, params) -> tuple[np.ndarray, str]:
        source = self._source(dataset, params)
        T = np.asarray(dataset[source], dtype=float)
        if source == "Y":
            return np.where(np.isnan(T), np.nan, params.c * (2.0 * T - 1.0)), "labels"
        return T, "real"

    def sizes(self, dataset, params):
        T = self.truth(dataset, params)[0]
        rows, cols = T.shape[:2]
        observed = np.count_nonzero(~np.isnan(T))
        what = f"of the matrix completed in '{dataset.name}'"
        return {"rows": Size(rows, f"the number of rows {what}"), "cols": Size(cols, f"the number of columns {what}"),
                "min_side": Size(min(rows, cols), f"the smaller side {what}"),
                "inner_items": Size(observed - int(round(params.missing * observed)),  # fewest a fold keeps
                                    f"the number of training entries {what}")}

    def split(self, dataset, params, fold):
        T, kind = self.truth(dataset, params)
        rng = subkey_rng("missing", params.seed, fold, params.missing)
        eligible = ~np.isnan(T)
        if params.complete_rows:
            keep = rng.choice(T.shape[0], params.complete_rows, replace=False)
            eligible[keep] = False
        candidates = np.flatnonzero(eligible)
        hidden = np.zeros(T.shape, dtype=bool)
        hidden.ravel()[rng.choice(candidates, int(round(params.missing * candidates.size)), replace=False)] = True
        M = T.copy()
        M[hidden] = np.nan
        X = dataset.get("X")
        if X is not None and X.shape[0] != T.shape[0]:
            X = None
        return MissingSplit(M, hidden, X, np.arange(T.shape[0]), kind, fold)

    def pack(self, split, prediction: Prediction, params):
        values = as_array(prediction.values, "values", split.M.shape, finite=False)
        hidden = values[split.hidden]
        if not np.all(np.isfinite(hidden)):
            raise ValueError("the algorithm returned NaN or inf at hidden entries")
        out = {"values": hidden.astype(np.float32 if split.kind == "labels" else np.float64)}
        if prediction.variance is not None:
            out["variance"] = as_array(prediction.variance, "variance", split.M.shape, finite=False)[split.hidden] \
                .astype(np.float32)
        return out

    def score_packed(self, dataset, params, split, packed):
        T, kind = self.truth(dataset, params)
        truth, estimate = T[split.hidden], np.asarray(packed["values"], dtype=float)
        if kind == "labels":
            return {"error": metrics.sign_error(truth, estimate)}
        corr = float(np.corrcoef(truth, estimate)[0, 1]) if truth.std() > 0 and estimate.std() > 0 else float("nan")
        return {"rmse": metrics.rmse(truth, estimate), "mae": metrics.mae(truth, estimate), "correlation": corr}
