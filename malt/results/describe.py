"""What the presentation layer needs to know about tasks, metrics and experiments, in one place.

Figures, tables, statistics and the report ask these few functions, which read the tasks'
declarations (`malt.tasks`) and the ResultSet, never an algorithm module:

* ``metric_info(name, task)`` — the declared metric (label, direction, percent, conventions); an
  undeclared metric is an error, never a silent "lower is better";
* ``known_metrics(names)`` — the declared ones among names, in declaration order (the papers'), with
  a warning for results of metrics no task declares any more;
* ``metric_label(name, options, task)`` — the label with its parameters filled in (``Precision@20``);
* ``setting_label(task, setting)`` — axis label and display scale of a swept task option;
* ``planned_folds(rs, experiment, display)`` — how many folds (runs, repeats) the protocol plans;
* ``test_train_ratio(task, options)`` — n_test / n_train of one fold (Nadeau & Bengio's ρ);
* ``sessions(rs, experiment)`` — the run sessions' provenance;
* ``task_defaults(task)``, ``provenance_columns(rs)``.
"""
from __future__ import annotations

import functools
import sys

import pandas as pd

from malt.errors import MaltError
from malt.tasks import Metric, get_task, tasks

MetricInfo = Metric


DIAGNOSTIC_PREFIX = "diagnostic:"
"""Prefix of a recorded diagnostic (fit seconds, iterations) drawn or tabled like a metric."""


def metric_info(name: str, task: str | None = None) -> Metric:
    from malt.tasks import metric_info as declared

    if name.startswith(DIAGNOSTIC_PREFIX):  # a recorded diagnostic drawn like a metric (malt plot --diagnostic)
        what = name[len(DIAGNOSTIC_PREFIX):]
        label = DIAGNOSTIC_LABELS.get(what, what.replace("_", " "))
        return Metric(name, label, "lower", conventions="a diagnostic the units recorded, not a score")
    return declared(task, name)


DIAGNOSTIC_LABELS = {"fit_seconds": "Fit time (s, wall)", "fit_cpu_seconds": "Fit time (s, CPU)",
                     "peak_rss_mib": "Peak memory (MiB, resident)"}


def metric_order() -> list[str]:
    """Every declared metric name, tasks in name order, metrics in their declared order."""
    out: list[str] = []
    for cls in tasks().values():
        out += [m.name for m in cls.metrics if m.name not in out]
    return out


_WARNED: set[str] = set()


def known_metrics(names) -> list[str]:
    """The declared metrics among ``names`` in declaration order; others are named once on stderr."""
    order = metric_order() + sorted(n for n in set(names) if n.startswith(DIAGNOSTIC_PREFIX))
    unknown = sorted(set(names) - set(order))
    for name in unknown:
        if name not in _WARNED:
            _WARNED.add(name)
            sys.stderr.write(f"warning: no task declares a metric '{name}' (results of another malt version); "
                             "it is not drawn or tabulated\n")
    return [n for n in order if n in set(names)]


def metric_label(name: str, options: dict | None = None, unit: bool = True, task: str | None = None) -> str:
    """'Precision@20', 'One-error (%)': the label with its parameters from ``options`` and its unit."""
    info = metric_info(name, task)
    return info.label_for(options or {}) + (" (%)" if unit and info.percent else "")


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
    """n_test / n_train of one fold of the task's protocol (None: folds are not resamples)."""
    try:
        cls = type(get_task(task))
    except MaltError:
        return None
    return cls.test_train_ratio(options or {})


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


def setting_label(task: str | None, setting: str) -> tuple[str, float]:
    """Axis label (with unit) of a swept task option and the factor from stored to shown values."""
    try:
        declared = type(get_task(task)).setting(setting)
    except MaltError:
        return setting.replace("_", " ").capitalize(), 1.0
    return declared.axis_label(), float(declared.scale)


def sessions(rs, experiment: str) -> list[dict]:
    """Provenance of the sessions that ran an experiment (code revision, versions, host, times)."""
    return list(rs.provenance(experiment))


PROVENANCE_COLUMNS = ("version", "seed", "timestamp", "fit_seconds")


def provenance_columns(rs) -> list[str]:
    """The per-unit provenance columns of the result frame."""
    return [c for c in PROVENANCE_COLUMNS if c in rs.frame.columns]


def decision_note(rs, task: str, experiments: list[str], metrics: list[str]) -> str:
    """One sentence naming the decision rule (`malt.numerics.decisions`) behind each bipartition metric
    shown, per algorithm, from the units' ``threshold_<family>=<rule>`` diagnostics (the rule most folds
    chose); '' for a task without declared decision families or units without those diagnostics."""
    declared = getattr(tasks().get(task), "decisions", None) or {}
    families = sorted({declared[m] for m in metrics if m in declared})
    diagnostics = rs.diagnostics if families else pd.DataFrame()
    if diagnostics.empty:
        return ""
    part = diagnostics[diagnostics["experiment"].isin(experiments)]
    rules = []
    for display, rows in part.groupby("display", sort=True):
        chosen = []
        for fam in families:
            names = rows.loc[rows["diagnostic"].str.startswith(f"threshold_{fam}="), "diagnostic"]
            if not names.empty:
                chosen.append(f"{fam} {names.value_counts().index[0].split('=', 1)[1]}")
        if chosen:
            rules.append(f"{display} {', '.join(chosen)}")
    if not rules:
        return ""
    which = "; ".join(f"{fam}: {', '.join(m for m in metrics if declared.get(m) == fam)}" for fam in families)
    return f" Decisions ({which}) by rule: {'; '.join(rules)}."
