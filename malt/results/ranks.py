"""Comparisons across datasets: which experiments can be ranked together, and their Friedman analysis.

Experiments with the same task and the same task options on different datasets form a group; for
every metric of a group the fold means give a datasets × algorithm-settings table, and
``malt.results.stats.Friedman`` ranks it (Demšar 2006, §3.2.2). An algorithm setting missing on one of the
datasets cannot be ranked there and is left out of that comparison (the caption names it).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from malt.results.describe import metric_info, metric_label, metric_order, planned_folds, task_defaults
from malt.results.formatting import format_p
from malt.results.stats import ALPHA, Friedman

MIN_DATASETS = 2


@dataclass
class Comparison:
    """One task, one set of task options, one metric, several datasets."""

    task: str
    options: dict
    metric: str
    experiments: dict[str, str]  # dataset -> experiment id
    friedman: Friedman  # scores: datasets × algorithm labels
    displays: dict[str, str] = field(default_factory=dict)  # label -> display key
    dropped: list[str] = field(default_factory=list)  # labels missing on some dataset
    incomplete: list[tuple[str, str, int, int]] = field(default_factory=list)  # (dataset, label, folds, planned)

    @property
    def datasets(self) -> list[str]:
        return list(self.friedman.scores.index)

    def options_text(self) -> str:
        """The task options that differ from the task's defaults, 'missing=0.2, folds=10'."""
        defaults = task_defaults(self.task)
        shown = {k: v for k, v in self.options.items() if k not in defaults or not _same(v, defaults[k])}
        return ", ".join(f"{k}={_fmt(v)}" for k, v in sorted(shown.items()))

    def metric_text(self) -> str:
        info = metric_info(self.metric, self.task)
        return f"{metric_label(self.metric, self.options, task=self.task)}, {info.better} is better"

    def title(self) -> str:
        opts = self.options_text()
        return f"{self.task}{' (' + opts + ')' if opts else ''} · {self.metric_text()}"

    def caption(self) -> str:
        f = self.friedman
        alpha = f.alpha
        text = (f"Average ranks over {f.n_datasets} datasets ({', '.join(self.datasets)}); rank 1 is best, ties "
                f"share the average rank; each dataset's value is the mean over its folds. {f.summary()} ")
        if f.rejects:
            text += (f"Nemenyi critical difference (α = {alpha:g}): CD = {f.critical_difference:.2f}; "
                     "settings joined by a bar do not differ significantly.")
        else:
            text += (f"The Friedman test does not reject equal ranks at α = {alpha:g} "
                     f"({f.p_value_kind} {format_p(f.p_value)}), so no post-hoc difference is claimed "
                     f"(CD = {f.critical_difference:.2f} shown for scale).")
        if self.dropped:
            text += f" Left out (missing on some dataset): {', '.join(self.dropped)}."
        if self.incomplete:
            text += " Fewer folds than planned: " + ", ".join(
                f"{label} on {dataset} ({n}/{planned})" for dataset, label, n, planned in self.incomplete) + "."
        return text

    def slug(self) -> str:
        opts = re.sub(r"[^A-Za-z0-9.=-]+", "_", self.options_text().replace(", ", "_"))
        text = "_".join(p for p in (self.task, "across-datasets", opts, self.metric) if p)
        text = re.sub(r"[^A-Za-z0-9._=@-]+", "_", text)
        if len(text) > 100:
            text = text[:80] + "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
        return text


def _fmt(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _same(a, b) -> bool:
    try:
        return bool(np.isclose(float(a), float(b)))
    except (TypeError, ValueError):
        return a == b


def _options(rs, experiment: str) -> dict:
    spec = rs.specs.get(experiment) or {}
    if spec.get("task_params") is not None:
        return dict(spec["task_params"])
    row = rs.frame[rs.frame["experiment"] == experiment].iloc[0]
    return {c[5:]: row[c] for c in rs.frame.columns if c.startswith("task.") and not pd.isna(row[c])}


def comparable_groups(rs) -> list[tuple[str, dict, dict[str, str]]]:
    """(task, options, {dataset: experiment}) for every task and option set run on ≥ 2 datasets."""
    frame = rs.frame
    if frame.empty:
        return []
    groups: dict[tuple, tuple[str, dict, dict[str, str]]] = {}
    for exp, row in frame.drop_duplicates("experiment").set_index("experiment").iterrows():
        options = _options(rs, exp)
        key = (row["task"], repr(sorted((k, repr(v)) for k, v in options.items())))
        task, _, members = groups.setdefault(key, (row["task"], options, {}))
        members.setdefault(row["dataset"], exp)  # one experiment per dataset
    return [g for _, g in sorted(groups.items(), key=lambda kv: kv[0]) if len(g[2]) >= MIN_DATASETS]


def comparisons(rs, metrics: list[str] | None = None, alpha: float = ALPHA) -> list[Comparison]:
    """Every across-datasets comparison of a ResultSet, one per (task, options, metric)."""
    from malt.results.plotting import legend_labels

    out = []
    order = metric_order()
    for task, options, members in comparable_groups(rs):
        frame = rs.frame[rs.frame["experiment"].isin(members.values())]
        displays = sorted(frame["display"].unique())
        names = sorted(frame["metric"].unique(), key=lambda n: (order.index(n) if n in order else len(order), n))
        for metric in [m for m in names if metrics is None or m in metrics]:
            part = frame[frame["metric"] == metric]
            means = part.groupby(["dataset", "display"])["value"].mean().unstack("display")
            counts = part.groupby(["dataset", "display"])["value"].count().unstack("display")
            means = means.reindex(index=sorted(members), columns=displays)
            labels = legend_labels(rs, displays)
            complete = [d for d in displays if means[d].notna().all()]
            dropped = [labels[d] for d in displays if d not in complete]
            if len(complete) < 2 or len(means) < MIN_DATASETS:
                continue
            labels = legend_labels(rs, complete)  # the shortest names that tell the compared settings apart
            scores = means[complete].rename(columns=labels)
            scores.columns.name = None
            incomplete = []
            for dataset, exp in sorted(members.items()):
                for display in complete:
                    planned = planned_folds(rs, exp, display)
                    n = int(counts.loc[dataset, display])
                    if planned is not None and n < planned:
                        incomplete.append((dataset, labels[display], n, planned))
            out.append(Comparison(task, options, metric, dict(sorted(members.items())),
                                  Friedman(scores, metric_info(metric, task).better, alpha),
                                  {labels[d]: d for d in complete}, dropped, incomplete))
    return out
