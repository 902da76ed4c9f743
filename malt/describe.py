"""What the presentation layer needs to know about tasks, metrics and experiments, in one place.

Figures, tables, statistics and the report never read a task's declaration or an experiment's spec
directly; they ask these few functions. When the declarations move (metric descriptions onto the
task classes, the planned fold count onto the ResultSet), only this module changes.

* ``metric_info(name, task)`` — label, direction, percent flag.
* ``metric_label(name, options, task)`` — the label with the metric's parameters filled in from the
  experiment's task options (``Precision@20``, not ``Precision@k``).
* ``setting_label(task, setting)`` — axis label and display scale of a swept task option.
* ``planned_folds(rs, experiment, display)`` — how many folds (runs, repeats) the protocol plans.
* ``sessions(rs, experiment)`` — the run sessions' provenance records, when the ResultSet keeps them.

Each accessor uses the task declarations the lead is introducing (``malt.tasks.metric_info``,
``Metric.label_for``, ``Task.setting``, ``ResultSet.completeness``, ``ResultSet.provenance``) when
they exist and falls back to today's registries otherwise.
* ``test_train_ratio(task, options)`` — n_test / n_train of one fold, for the corrected resampled
  t-test; None when the folds are not resamples of the data (repeats on a fixed split).
* ``task_defaults(task)`` — the task's option defaults.
* ``provenance_columns(rs)`` — the per-unit provenance columns the result frame carries.
"""
from __future__ import annotations

import functools
import math
import re

import pandas as pd

from malt.errors import MaltError
from malt.tasks.base import METRICS, MetricInfo

# Metric name -> the task options that parameterise it. A parameter that appears in the label as
# '@name' is substituted there ('Precision@k' -> 'Precision@20'); any other is appended '(name=v)'.
METRIC_PARAMETERS: dict[str, tuple[str, ...]] = {
    "precision@k": ("k",),
    "recall@k": ("k",),
}


def metric_info(name: str, task: str | None = None) -> MetricInfo:
    """How to show a metric of ``task``; an unknown name (results of a newer malt) gets a neutral
    description."""
    import malt.tasks as registry

    declared = getattr(registry, "metric_info", None)  # per-task declarations, when the framework has them
    if declared is not None:
        try:
            return declared(name, task)
        except MaltError:
            pass
    registry.tasks()  # registers every task's metric descriptions
    return METRICS.get(name) or MetricInfo(name, name.replace("_", " "), "lower", False)


def metric_order() -> list[str]:
    """Metric names in registration order (the papers' order)."""
    metric_info("_")
    return list(METRICS)


def metric_label(name: str, options: dict | None = None, unit: bool = True, task: str | None = None) -> str:
    """'Precision@20', 'One-error (%)': the label with its parameters from ``options`` and its unit.

    A parameter missing from ``options`` (or swept, so None here) stays symbolic."""
    info = metric_info(name, task)
    if hasattr(info, "label_for"):  # the declaration knows its own parameters
        return info.label_for(options or {}) + (" (%)" if unit and info.percent else "")
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


def planned_folds(rs, experiment: str, display: str | None = None) -> int | None:
    """Folds (runs, repeats) the experiment's protocol plans, or None when unknown.

    Uses the ResultSet's ``completeness`` table (experiment, display, planned) when it has one, else
    the ``n_folds`` the spec records, else the task options of older specs."""
    completeness = getattr(rs, "completeness", None)
    if isinstance(completeness, pd.DataFrame) and not completeness.empty:
        rows = completeness[completeness["experiment"] == experiment]
        if display is not None and (rows["display"] == display).any():
            rows = rows[rows["display"] == display]
        planned = pd.to_numeric(rows["planned"], errors="coerce").dropna()
        if len(planned):
            return int(planned.max())
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


SETTING_LABELS = {  # today's fallback; the task declarations carry these
    "missing": ("Hidden entries", 100.0, "%"),
    "labeled": ("Labelled training points", 1.0, ""),
    "complete_rows": ("Fully observed rows", 1.0, ""),
}


def setting_label(task: str | None, setting: str) -> tuple[str, float]:
    """Axis label (with unit) of a swept task option and the factor from stored to shown values."""
    if task:
        try:
            from malt.tasks import get_task

            declared = getattr(type(get_task(task)), "setting", None)
            if callable(declared):
                found = declared(setting)
                if hasattr(found, "axis_label"):
                    return found.axis_label(), float(found.scale)
        except MaltError:
            pass
    label, scale, unit = SETTING_LABELS.get(setting, (setting.replace("_", " ").capitalize(), 1.0, ""))
    return (f"{label} ({unit})" if unit else label), scale


def sessions(rs, experiment: str) -> list[dict]:
    """Provenance of the sessions that ran an experiment (code revision, versions, host, times) when
    the ResultSet keeps them; [] otherwise."""
    accessor = getattr(rs, "provenance", None)
    return list(accessor(experiment)) if callable(accessor) else []


PROVENANCE_COLUMNS = ("version", "malt_version", "host", "seed", "timestamp", "fit_seconds")


def provenance_columns(rs) -> list[str]:
    """The provenance columns the result frame has today (the lead is adding host and malt_version)."""
    return [c for c in PROVENANCE_COLUMNS if c in rs.frame.columns]
