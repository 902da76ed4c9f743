"""What the presentation layer needs to know about tasks, metrics and experiments, in one place.

Figures, tables, statistics and the report never read a task's declaration or an experiment's spec
directly; they ask these few functions. When the declarations move (metric descriptions onto the
task classes, the planned fold count onto the ResultSet), only this module changes.

* ``metric_info(name)`` — label, direction, percent flag.
* ``metric_label(name, options)`` — the label with the metric's parameters filled in from the
  experiment's task options (``Precision@20``, not ``Precision@k``).
* ``planned_folds(rs, experiment)`` — how many folds (runs, repeats) the protocol plans.
* ``test_train_ratio(task, options)`` — n_test / n_train of one fold, for the corrected resampled
  t-test; None when the folds are not resamples of the data (repeats on a fixed split).
* ``task_defaults(task)`` — the task's option defaults.
* ``provenance_columns(rs)`` — the per-unit provenance columns the result frame carries.
"""
from __future__ import annotations

import functools
import math
import re

from malt.errors import MaltError
from malt.tasks.base import METRICS, MetricInfo

# Metric name -> the task options that parameterise it. A parameter that appears in the label as
# '@name' is substituted there ('Precision@k' -> 'Precision@20'); any other is appended '(name=v)'.
METRIC_PARAMETERS: dict[str, tuple[str, ...]] = {
    "precision@k": ("k",),
    "recall@k": ("k",),
}


def metric_info(name: str) -> MetricInfo:
    """How to show a metric; an unknown name (results of a newer malt) gets a neutral description."""
    from malt.tasks import tasks

    tasks()  # registers every task's metric descriptions
    return METRICS.get(name) or MetricInfo(name, name.replace("_", " "), "lower", False)


def metric_order() -> list[str]:
    """Metric names in registration order (the papers' order)."""
    metric_info("_")
    return list(METRICS)


def metric_label(name: str, options: dict | None = None, unit: bool = True) -> str:
    """'Precision@20', 'One-error (%)': the label with its parameters from ``options`` and its unit.

    A parameter missing from ``options`` (or swept, so None here) stays symbolic."""
    info = metric_info(name)
    label = info.label
    for parameter in METRIC_PARAMETERS.get(name, ()):
        value = (options or {}).get(parameter)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        text = _fmt(value)
        pattern = rf"@{re.escape(parameter)}\b"
        if re.search(pattern, label):
            label = re.sub(pattern, f"@{text}", label)
        else:
            label += f" ({parameter}={text})"
    return label + (" (%)" if unit and info.percent else "")


def _fmt(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def planned_folds(rs, experiment: str) -> int | None:
    """Folds (runs, repeats) the experiment's protocol plans, or None when unknown.

    Uses ``rs.planned_folds(experiment)`` when the ResultSet offers it (the lead's planned addition),
    else the ``n_folds`` the spec records, else the task options of older specs."""
    accessor = getattr(rs, "planned_folds", None)
    if callable(accessor):
        value = accessor(experiment)
        return None if value is None else int(value)
    spec = rs.specs.get(experiment) or {}
    if "n_folds" in spec:
        return int(spec["n_folds"])
    params = spec.get("task_params") or {}
    if params.get("split") == "given":
        return int(params.get("repeats", 1))
    for name in ("folds", "runs", "repeats"):
        if params.get(name) is not None:
            return int(params[name])
    return None


def test_train_ratio(task: str, options: dict) -> float | None:
    """n_test / n_train of one fold of the protocol: the ρ of Nadeau & Bengio's correction.

    k-fold protocols: 1/(k-1). ``missing``: each fold hides a fresh ``missing`` fraction,
    missing / (1 - missing). ``ratings``: (1 - train_fraction) / train_fraction. Repeats on a
    dataset's own train/test split (``split=given``) share their training set, so the folds are not
    resamples: None (the marks then come from a Wilcoxon test over the runs).
    """
    options = options or {}
    if options.get("split") == "given":
        return None
    if task == "missing" and options.get("missing") is not None:
        hidden = float(options["missing"])
        return hidden / (1.0 - hidden) if 0 < hidden < 1 else None
    if task == "ratings" and options.get("train_fraction") is not None:
        train = float(options["train_fraction"])
        return (1.0 - train) / train if 0 < train < 1 else None
    folds = options.get("folds")
    if folds is not None and int(folds) >= 2:
        return 1.0 / (int(folds) - 1)
    return None


@functools.lru_cache(maxsize=None)
def _defaults(task: str) -> tuple:
    from malt.tasks import get_task

    return tuple(get_task(task).Params().to_dict().items())


def task_defaults(task: str) -> dict:
    """The task's option defaults; {} for a task this malt does not know."""
    try:
        return dict(_defaults(task))
    except MaltError:
        return {}


PROVENANCE_COLUMNS = ("version", "malt_version", "host", "seed", "timestamp", "fit_seconds")


def provenance_columns(rs) -> list[str]:
    """The provenance columns the result frame has today (the lead is adding host and malt_version)."""
    return [c for c in PROVENANCE_COLUMNS if c in rs.frame.columns]
