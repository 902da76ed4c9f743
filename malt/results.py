"""ResultSet: the tidy table of a repository's results (one row per unit and metric).

Columns: experiment, dataset, task, task.<option>..., algorithm, display, params_key, param.<name>...,
fold, metric, value, fit_seconds, seed, version, timestamp. Plots and tables are computed from this
table alone.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from malt.tasks.base import METRICS


class ResultSet:
    def __init__(self, frame: pd.DataFrame, specs: dict[str, dict] | None = None, failed: pd.DataFrame | None = None,
                 stale: int = 0, diagnostics: pd.DataFrame | None = None):
        self.frame = frame
        # one row per unit and recorded diagnostic (numbers only): what a run learned about itself
        self.diagnostics = diagnostics if diagnostics is not None else pd.DataFrame()
        self.specs = specs or {}
        self.failed = failed if failed is not None else pd.DataFrame()
        self.stale = stale  # units computed by another version of their algorithm, left out

    @classmethod
    def from_repository(cls, repo, experiments: list[str] | None = None, problems: list | None = None,
                        include_stale: bool = False) -> "ResultSet":
        """Every stored unit of the experiments; units of an algorithm version other than today's
        are left out (counted in ``stale``) unless ``include_stale``."""
        from malt import registry

        current = {name: algo.version for name, algo in registry.algorithms().items()}
        rows, failed, specs, stale, diags = [], [], {}, 0, []
        for exp in experiments or repo.experiments():
            spec = repo.read_spec(exp)
            specs[exp] = spec
            base = {"experiment": exp, "dataset": spec["dataset"], "task": spec["task"]}
            base.update({f"task.{k}": v for k, v in spec["task_params"].items()})
            for rec in repo.units(exp, problems).values():
                if not include_stale and rec["version"] != current.get(rec["algorithm"], rec["version"]):
                    stale += 1
                    continue
                common = dict(base, algorithm=rec["algorithm"], display=current_display(rec),
                              params_key=rec["params_key"], fold=rec["fold"], seed=rec["seed"],
                              version=rec["version"], timestamp=rec["timestamp"],
                              fit_seconds=rec.get("fit_seconds", np.nan))
                common.update({f"param.{k}": v for k, v in rec["params"].items()})
                if rec["status"] != "ok":
                    failed.append(dict(common, error=rec.get("error", "")))
                    continue
                for metric, value in rec["metrics"].items():
                    rows.append(dict(common, metric=metric, value=value))
                for name, value in numeric_diagnostics(rec).items():
                    diags.append(dict(common, diagnostic=name, value=value))
        return cls(pd.DataFrame(rows), specs, pd.DataFrame(failed), stale, pd.DataFrame(diags))

    @classmethod
    def load(cls, path: str | Path) -> "ResultSet":
        """A repository folder, or a folder holding repositories (``malt plot results/``)."""
        from malt.repository.store import MARKER, Repository

        path = Path(path)
        if (path / MARKER).exists():
            return cls.from_repository(Repository(path).check_readable())
        if path.name == "results.h5" and (path.parent / "spec.json").exists():
            repo = Repository(path.parent.parent.parent)
            return cls.from_repository(repo, [path.parent.name])
        repos = sorted(p.parent for p in path.glob("*/" + MARKER)) if path.is_dir() else []
        if not repos:
            Repository(path).check_readable()  # raises the standard message
        sets = [cls.from_repository(Repository(p)) for p in repos]
        return cls(pd.concat([s.frame for s in sets], ignore_index=True),
                   {k: v for s in sets for k, v in s.specs.items()},
                   pd.concat([s.failed for s in sets], ignore_index=True), sum(s.stale for s in sets),
                   pd.concat([s.diagnostics for s in sets], ignore_index=True))

    @property
    def empty(self) -> bool:
        return self.frame.empty

    def summary(self) -> pd.DataFrame:
        """Mean ± std over folds per experiment, algorithm setting and metric."""
        if self.frame.empty:
            return pd.DataFrame(columns=["experiment", "display", "metric", "mean", "std", "folds"])
        grouped = self.frame.groupby(["experiment", "display", "metric"], sort=True)["value"]
        out = grouped.agg(mean="mean", std=lambda v: v.std(ddof=1) if len(v) > 1 else 0.0, folds="count")
        return out.reset_index()

    def wide(self, experiment: str, percent: bool = True) -> pd.DataFrame:
        """One experiment as algorithm × metric cells 'mean ± std' (percent metrics ×100)."""
        from malt.tasks import tasks

        tasks()  # registers every task's metric descriptions
        s = self.summary()
        s = s[s["experiment"] == experiment]
        cells = {}
        for _, row in s.iterrows():
            info = METRICS.get(row["metric"])
            scale = 100.0 if percent and info is not None and info.percent else 1.0
            label = row["metric"]
            if info is not None:
                label += f" ({'%, ' if scale == 100.0 else ''}{info.better} is better)"
            cells.setdefault(label, {})[row["display"]] = _cell(row["mean"] * scale, row["std"] * scale)
        return pd.DataFrame(cells).T


    def diagnostics_wide(self, experiment: str) -> pd.DataFrame:
        """One experiment's recorded diagnostics as diagnostic × algorithm cells 'mean ± std' over folds."""
        d = self.diagnostics
        if d.empty or experiment not in set(d["experiment"]):
            return pd.DataFrame()
        d = d[d["experiment"] == experiment]
        stats = d.groupby(["diagnostic", "display"], sort=True)["value"].agg(
            mean="mean", std=lambda v: v.std(ddof=1) if len(v) > 1 else 0.0)
        cells = {}
        for (name, display), row in stats.iterrows():
            cells.setdefault(display, {})[name] = _cell(row["mean"], row["std"])
        return pd.DataFrame(cells)


def numeric_diagnostics(record: dict) -> dict[str, float]:
    """A unit's diagnostics reduced to numbers: scalars as they are, a numeric list (a bound trace,
    say) by its last value and length; plus the unit's fit seconds."""
    out = {"fit_seconds": float(record.get("fit_seconds", np.nan))}
    for name, value in (record.get("diagnostics") or {}).items():
        if isinstance(value, bool):
            out[name] = float(value)
        elif isinstance(value, (int, float)):
            out[name] = float(value)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
            out[f"{name} (last)"] = float(value[-1])
            out[f"{name} (length)"] = float(len(value))
    return out


def _cell(mean: float, std: float) -> str:
    digits = 1 if abs(mean) >= 10 else 2 if abs(mean) >= 1 else 3
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def current_display(record: dict) -> str:
    """The unit's readable key under today's code: ``name[k=v,...]`` listing values that differ from
    the current defaults, and ``@vN`` when it was computed by another version of the algorithm, so
    results of changed code or changed defaults are never averaged with current ones."""
    from malt import registry

    name, label = record["algorithm"], record["display"]
    algo = registry.algorithms().get(name)
    if algo is None:
        return label
    try:
        label = algo.Params.from_dict(record["params"]).display(name)
    except Exception:  # parameters of an older version that no longer validate
        return f"{label}@v{record['version']}"
    return label if record["version"] == algo.version else f"{label}@v{record['version']}"
