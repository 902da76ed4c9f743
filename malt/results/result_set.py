"""ResultSet: the tidy table of a repository's results (one row per unit and metric).

Columns: experiment, dataset, task, task.<option>..., algorithm, display, params_key, param.<name>...,
fold, metric, value, fit_seconds, seed, version, timestamp. Plots and tables are computed from this
table alone.

Reading is light: it needs the store and the task declarations, never an algorithm module. Which
records count is decided from what the experiment's spec recorded: a unit computed by another
version of its algorithm than the plan's (`malt cv` and `malt rerun` update the plan to the running
code) is left out (``stale``), and so is a metric value computed under another version of the
metric's definition (``rescore_stale``; `malt rescore` updates them from stored predictions).
How many of the planned folds each number rests on is in ``completeness``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from malt.errors import MaltError
from malt.results.describe import DIAGNOSTIC_PREFIX
from malt.results.formatting import format_mean_std


class ResultSet:
    def __init__(self, frame: pd.DataFrame, specs: dict[str, dict] | None = None, failed: pd.DataFrame | None = None,
                 stale: int = 0, diagnostics: pd.DataFrame | None = None, completeness: pd.DataFrame | None = None,
                 sessions: dict[str, list] | None = None, rescore_stale: int = 0, problems: list | None = None,
                 records: list[dict] | None = None, stores: dict[str, Path] | None = None):
        self.frame = frame
        self._records = records or []  # the stored record of each unit in the table
        self.stores = stores or {}  # experiment -> the repository folder it was read from
        self._diagnostics = diagnostics if diagnostics is not None else pd.DataFrame()
        self.specs = specs or {}
        self.failed = failed if failed is not None else pd.DataFrame()
        self.stale = stale  # units computed by another version of their algorithm, left out
        self.rescore_stale = rescore_stale  # metric values of another metric version, left out
        self.completeness = completeness if completeness is not None else pd.DataFrame(
            columns=["experiment", "display", "algorithm", "planned", "done", "failed"])
        self.sessions = sessions or {}
        self.problems = problems or []

    @classmethod
    def from_repository(cls, repo, experiments: list[str] | None = None, problems: list | None = None,
                        include_stale: bool = False) -> "ResultSet":
        """Every stored unit of the experiments (see the module docstring for what is left out).

        Damage is described in ``problems``; an experiment whose spec is damaged is skipped there
        when reading all experiments, and raises when named. A link or a FIFO, device, socket or
        folder where the store keeps a file is not damage but something planted: it always raises."""
        from malt.repository.files import RefusedEntry
        from malt.tasks import tasks

        problems = problems if problems is not None else []
        declared = tasks()
        row_unit: list[int] = []  # per row: index into `units_kept`; the row's metric and value
        row_metric: list[str] = []
        row_value: list[float] = []
        units_kept: list[dict] = []  # one flat dict per unit: experiment, task options, unit fields, parameters
        failed, specs, completeness, sessions = [], {}, [], {}
        stale = rescore_stale = 0
        named = experiments is not None
        for exp in experiments if named else repo.experiments():
            files = repo.experiment(exp)
            try:
                spec = files.read_spec()
            except MaltError as err:
                if named or isinstance(err, RefusedEntry):
                    raise
                problems.append(str(err))
                continue
            specs[exp] = spec
            units, exp_sessions, _ = files.read_log(problems)
            sessions[exp] = exp_sessions
            task = declared.get(spec["task"])
            current_metrics = {m.name: m.version for m in task.metrics} if task else {}
            planned = _planned_versions(spec, units)
            n_folds = int(spec.get("n_folds", 1))
            done: dict[tuple, int] = {}
            fails: dict[tuple, int] = {}
            base = {"experiment": exp, "dataset": spec["dataset"], "task": spec["task"]}
            base.update({f"task.{k}": v for k, v in spec.get("task_params", {}).items()})
            for rec in units.values():
                key = (rec.get("algorithm"), rec.get("params_key"))
                if not include_stale and (key not in planned or rec.get("version") != planned[key]):
                    stale += 1
                    continue
                if rec.get("status") != "ok":
                    fails[key] = fails.get(key, 0) + 1
                    failed.append({"experiment": exp, "dataset": spec["dataset"], "task": spec["task"],
                                   "algorithm": rec.get("algorithm"), "display": rec.get("display"),
                                   "fold": rec.get("fold"), "error": rec.get("error", ""),
                                   "traceback": rec.get("traceback", ""), "timestamp": rec.get("timestamp"),
                                   **{f"param.{k}": _param_value(v) for k, v in (rec.get("params") or {}).items()}})
                    continue
                done[key] = done.get(key, 0) + 1
                versions = rec.get("metric_versions") or {}
                index = len(units_kept)
                unit = dict(base, algorithm=rec["algorithm"], display=rec["display"], params_key=rec.get("params_key"),
                            fold=rec["fold"], fit_seconds=rec.get("fit_seconds", np.nan), seed=rec.get("seed"),
                            version=rec.get("version"), timestamp=rec.get("timestamp"))
                unit.update({f"param.{k}": _param_value(v) for k, v in (rec.get("params") or {}).items()})
                unit["_record"] = rec
                units_kept.append(unit)
                for metric, value in rec.get("metrics", {}).items():
                    if metric in current_metrics and versions.get(metric, "1") != current_metrics[metric] \
                            and not include_stale:
                        rescore_stale += 1
                        continue
                    row_unit.append(index)
                    row_metric.append(metric)
                    row_value.append(value)
            displays = {(r.get("algorithm"), r.get("params_key")): r.get("display") for r in units.values()}
            for item in spec.get("plan", []):
                key = (item["algorithm"], _plan_key(item))
                completeness.append({"experiment": exp, "display": item.get("display") or displays.get(key)
                                     or item["algorithm"],
                                     "algorithm": item["algorithm"], "planned": int(item.get("folds", n_folds)),
                                     "done": done.get(key, 0), "failed": fails.get(key, 0)})
        frame = _frame(units_kept, row_unit, row_metric, row_value)
        return cls(frame, specs, pd.DataFrame(failed), stale, _LazyDiagnostics(units_kept), pd.DataFrame(
            completeness, columns=["experiment", "display", "algorithm", "planned", "done", "failed"]),
            sessions, rescore_stale, problems, [dict(u["_record"], experiment=u["experiment"]) for u in units_kept],
            {exp: repo.path for exp in specs})

    @classmethod
    def load(cls, path: str | Path) -> "ResultSet":
        """A repository folder, or a folder holding repositories (``malt plot results/``)."""
        from malt.repository.store import MARKER, Repository

        path = Path(path)
        if (path / MARKER).exists():
            return cls.from_repository(Repository(path).check_readable())
        if path.name in ("results.h5", "units.log", "spec.json") and path.parent.parent.name == "experiments":
            repo = Repository(path.parent.parent.parent)
            return cls.from_repository(repo.check_readable(), [path.parent.name])
        repos = sorted(p.parent for p in path.glob("*/" + MARKER)) if path.is_dir() else []
        if not repos:
            Repository(path).check_readable()  # raises the standard message
        sets = [cls.from_repository(Repository(p).check_readable()) for p in repos]
        return cls(pd.concat([s.frame for s in sets], ignore_index=True),
                   {k: v for s in sets for k, v in s.specs.items()},
                   pd.concat([s.failed for s in sets], ignore_index=True), sum(s.stale for s in sets),
                   pd.concat([s.diagnostics for s in sets], ignore_index=True),
                   pd.concat([s.completeness for s in sets], ignore_index=True),
                   {k: v for s in sets for k, v in s.sessions.items()}, sum(s.rescore_stale for s in sets),
                   [p for s in sets for p in s.problems], [r for s in sets for r in s._records],
                   {k: v for s in sets for k, v in s.stores.items()})

    def where(self, algorithms=(), params: dict[str, str] | None = None) -> "ResultSet":
        """The units of these algorithms whose parameters have these values (``{'C': '0.1'}``, as typed
        on the command line; a setting without the parameter does not match). Raises if none does."""
        from malt.results.plotting import option_matches

        def keep(frame: pd.DataFrame) -> pd.Series:
            chosen = frame["algorithm"].isin(algorithms) if algorithms else pd.Series(True, index=frame.index)
            for name, value in (params or {}).items():
                column = frame.get(f"param.{name}")
                chosen &= column.map(lambda v: option_matches(v, value)) if column is not None else False
            return chosen.astype(bool)

        frame = self.frame[keep(self.frame)] if not self.frame.empty else self.frame
        failed = self.failed[keep(self.failed)] if not self.failed.empty else self.failed
        if frame.empty and failed.empty:
            what = ", ".join([*algorithms, *(f"{k}={v}" for k, v in (params or {}).items())])
            settings = sorted(set(self.frame.get("display", [])) | set(self.failed.get("display", [])))
            raise MaltError(f"No stored unit matches {what}; the settings are: {', '.join(settings) or 'none'}.")
        shown = set(frame["display"]) | set(failed.get("display", []))
        records = [r for r in self._records
                   if r.get("display") in shown and (not algorithms or r.get("algorithm") in algorithms)]
        completeness = self.completeness[self.completeness["display"].isin(shown)]
        diagnostics = (_LazyDiagnostics([u for u in self._diagnostics.units if u["display"] in shown])
                       if isinstance(self._diagnostics, _LazyDiagnostics) else
                       self._diagnostics[self._diagnostics["display"].isin(shown)] if not self._diagnostics.empty
                       else self._diagnostics)
        return ResultSet(frame.reset_index(drop=True), self.specs, failed, self.stale, diagnostics, completeness,
                         self.sessions, self.rescore_stale, self.problems, records, self.stores)

    @property
    def diagnostics(self) -> pd.DataFrame:
        """One row per unit and recorded diagnostic (numbers only): what a run learned about itself."""
        if isinstance(self._diagnostics, _LazyDiagnostics):
            self._diagnostics = self._diagnostics.frame()
        return self._diagnostics

    @property
    def empty(self) -> bool:
        return self.frame.empty

    def frame_view(self) -> pd.DataFrame:
        return self.frame

    def summary(self, by: str | list[str] = ("experiment", "display", "metric"), percent: bool = True) -> pd.DataFrame:
        """Mean, std (NaN with one fold), defined folds and planned folds per group.

        Numbers are in each metric's declared display unit, as `malt show`, `malt table`, the
        figures and the report print them: a metric declared ``percent`` (``Metric.percent``) is
        ×100 and its ``unit`` column says "%"; ``percent=False`` gives the stored fractions (and an
        empty ``unit``). Grouped by ``display``, the ``setting`` column holds the setting's name as
        every table shows it (:func:`malt.results.settings.setting_names`).
        """
        by = [by] if isinstance(by, str) else list(by)
        if "metric" not in by:
            by = by + ["metric"]
        if self.frame.empty:
            return pd.DataFrame(columns=[*by, "mean", "std", "unit", "folds", "planned", "complete"])
        scales = {pair: _display_scale(*pair) if percent else (1.0, "")
                  for pair in self.frame[["task", "metric"]].drop_duplicates().itertuples(index=False, name=None)}
        factor = [scales[pair][0] for pair in zip(self.frame["task"], self.frame["metric"])]
        frame = self.frame.assign(value=self.frame["value"] * factor)
        grouped = frame.groupby(by, sort=True)["value"]
        out = grouped.agg(mean="mean", std=lambda v: v.std(ddof=1) if v.notna().sum() > 1 else np.nan,
                          folds="count").reset_index()
        units = {metric: unit for (_, metric), (_, unit) in scales.items()}
        out.insert(out.columns.get_loc("std") + 1, "unit", [units.get(m, "") for m in out["metric"]])
        keys = [k for k in by if k != "metric"]
        if keys and set(keys) <= set(self.completeness.columns) and not self.completeness.empty:
            # each completeness row is one planned setting of one experiment: a group plans their sum
            planned = self.completeness.groupby(keys)["planned"].sum()
            out["planned"] = [planned.get(key[0] if len(keys) == 1 else key, np.nan)
                              for key in out[keys].itertuples(index=False, name=None)]
        else:
            out["planned"] = np.nan
        out["complete"] = out["folds"] >= out["planned"].fillna(0)
        if "display" in by:
            from malt.results.settings import setting_names

            names = setting_names(self, out["display"].unique())
            out.insert(by.index("display") + 1, "setting", out["display"].map(names))
        return out

    def wide(self, experiment: str, percent: bool = True) -> pd.DataFrame:
        """One experiment as metric × algorithm setting cells 'mean ± std' (percent metrics ×100,
        settings named as every table names them); a cell resting on fewer folds than planned says
        so ("(3/5 folds)"), one fold shows no ±."""
        from malt.results.settings import display_order, setting_names
        from malt.tasks import metric_info

        s = self.summary(percent=percent)
        s = s[s["experiment"] == experiment]
        task = self.specs.get(experiment, {}).get("task")
        order = _declared_order(task)
        s = s.assign(_order=[order.get(m, len(order)) for m in s["metric"]]).sort_values(["_order", "display"])
        options = self.specs.get(experiment, {}).get("task_params", {})
        displays = display_order(self, s["display"].unique())
        names = setting_names(self, displays)
        cells: dict[str, dict] = {}
        for _, row in s.iterrows():
            try:
                info = metric_info(task, row["metric"])
                shown = "".join(f"{k}={options.get(k)}, " for k in info.options)
                label = f"{row['metric']} ({shown}{'%, ' if row['unit'] == '%' else ''}{info.better} is better)"
            except MaltError:
                label = f"{row['metric']} (undeclared metric)"
            cell = format_cell(row["mean"], row["std"], int(row["folds"]), row["planned"], row["unit"] == "%")
            cells.setdefault(label, {})[names[row["display"]]] = cell
        return pd.DataFrame(cells).T[[names[d] for d in displays]] if cells else pd.DataFrame()

    def notices(self, experiment: str) -> list[str]:
        """'setting: line' for each distinct notice the units of ``experiment`` recorded (a value
        lowered to what the data allow, `malt.params.Params.within_bounds`), in setting order."""
        units = self._diagnostics.units if isinstance(self._diagnostics, _LazyDiagnostics) else []
        found = {(u["display"], line): None for u in units if u["experiment"] == experiment
                 for line in (u["_record"].get("diagnostics") or {}).get("notices", [])}
        return [f"{display}: {line}" for display, line in found]

    def warnings(self, experiment: str) -> list[tuple[str, int, str]]:
        """(setting, fold, message) for each warning the units of ``experiment`` stored while they ran (a
        sampler's chains that have not mixed, a solver that stopped at its cap), in setting order."""
        units = self._diagnostics.units if isinstance(self._diagnostics, _LazyDiagnostics) else []
        return [(u["display"], u["fold"], message) for u in units if u["experiment"] == experiment
                for message in u["_record"].get("warnings") or ()]

    def diagnostics_wide(self, experiment: str) -> pd.DataFrame:
        """One experiment's recorded diagnostics as diagnostic × algorithm cells 'mean ± std' over folds."""
        d = self.diagnostics
        if d.empty or experiment not in set(d["experiment"]):
            return pd.DataFrame()
        d = d[d["experiment"] == experiment]
        stats = d.groupby(["diagnostic", "display"], sort=True)["value"].agg(
            mean="mean", std=lambda v: v.std(ddof=1) if len(v) > 1 else np.nan, n="count")
        from malt.results.settings import display_order, setting_names

        shown = [d for d in display_order(self, d["display"].unique()) if d in set(self.frame["display"])]
        names = setting_names(self, shown)
        cells: dict[str, dict] = {}
        for (name, display), row in stats.iterrows():
            cells.setdefault(names.get(display, display), {})[name] = format_cell(row["mean"], row["std"],
                                                                                   int(row["n"]), np.nan)
        order = [names[d] for d in shown if names[d] in cells]
        return pd.DataFrame(cells)[order + [c for c in cells if c not in order]]

    def diagnostic_view(self, names: list[str]) -> "ResultSet":
        """A ResultSet whose 'metrics' are these recorded diagnostics (``fit_seconds``,
        ``fit_cpu_seconds``, ``iterations``, ``K``…), so speed and convergence figures and tables come
        from stored experiments like any metric (as `malt plot --diagnostic NAME`)."""
        d = self.diagnostics
        unknown = sorted(set(names) - set(d["diagnostic"] if not d.empty else ()))
        if unknown:
            known = ", ".join(sorted(set(d["diagnostic"]))) if not d.empty else "none"
            raise MaltError(f"No unit recorded a diagnostic '{unknown[0]}'; recorded: {known}.")
        d = d[d["diagnostic"].isin(names)].rename(columns={"diagnostic": "metric"})
        d = d.assign(metric=DIAGNOSTIC_PREFIX + d["metric"])
        keys = ["experiment", "algorithm", "display", "fold"]
        units = self.frame.drop(columns=["metric", "value"]).drop_duplicates(keys)
        frame = d.merge(units, on=keys, how="inner")[[*units.columns, "metric", "value"]]
        return ResultSet(frame.reset_index(drop=True), self.specs, self.failed, self.stale, self._diagnostics,
                         self.completeness, self.sessions, self.rescore_stale, self.problems, self._records,
                         self.stores)

    def table(self, fmt: str = "markdown", metrics: list[str] | None = None) -> str:
        """Every table `malt table` would print (markdown, latex or html)."""
        from malt.results.tables import all_tables

        return "\n".join(t.render(fmt) for _, group in all_tables(self, metrics) for t in group)

    def plot(self, out="figures", metrics: list[str] | None = None, formats=("png", "pdf")) -> list:
        """Every figure `malt plot` would draw, written into ``out``; returns their paths."""
        from malt.results.plotting import plot_all

        return [path for item in plot_all(self, out, metrics=metrics, formats=tuple(formats)) for path in item.paths]

    def records(self, experiment: str | None = None) -> list[dict]:
        """The stored record of every unit in the table (of one ``experiment``), each a dict with its
        ``experiment``, ``algorithm``, ``display``, ``params``, ``fold``, ``metrics``, ``diagnostics``
        (non-numeric ones too, such as a topic model's top words), ``seed`` and ``version``."""
        return [r for r in self._records if experiment is None or r["experiment"] == experiment]

    def predictions(self, experiment: str, display: str | None = None) -> list[tuple[dict, dict]]:
        """(record, stored test-prediction arrays) of every unit of ``experiment`` in the table (of one
        ``display``), read from the repository the experiment came from; units whose predictions
        are damaged are left out (``problems`` says which)."""
        from malt.repository.store import Repository

        chosen = [r for r in self.records(experiment) if display is None or r.get("display") == display]
        wanted = {r["unit"]: r["predictions"] for r in chosen if r.get("predictions") and r.get("unit")}
        if not wanted:
            return []
        found = Repository(self.stores[experiment]).experiment(experiment).read_predictions(wanted, self.problems)
        return [(r, found[r["unit"]]) for r in chosen if r.get("unit") in found]

    def provenance(self, experiment: str) -> list[dict]:
        """The run sessions of an experiment: code revision, library versions, host, times."""
        return list(self.sessions.get(experiment, []))


UNIT_COLUMNS = ("algorithm", "display", "params_key", "fold")
RECORD_COLUMNS = ("fit_seconds", "seed", "version", "timestamp")


def _frame(units: list[dict], row_unit: list[int], row_metric: list[str], row_value: list) -> pd.DataFrame:
    """The tidy frame: unit-level columns repeated for each of the unit's metrics."""
    if not units:
        return pd.DataFrame(columns=["experiment", "dataset", "task", *UNIT_COLUMNS, "metric", "value",
                                     *RECORD_COLUMNS])
    table = pd.DataFrame(units).drop(columns="_record")
    rows = table.iloc[row_unit].reset_index(drop=True)
    rows["metric"] = row_metric
    rows["value"] = pd.to_numeric(pd.Series(row_value, dtype=object), errors="coerce").astype(float)
    tasks_ = [c for c in rows if c.startswith("task.")]
    params = sorted(c for c in rows if c.startswith("param."))
    return rows[["experiment", "dataset", "task", *tasks_, *UNIT_COLUMNS, "metric", "value", *RECORD_COLUMNS,
                 *params]]


class _LazyDiagnostics:
    """The diagnostics frame, built only when asked for (`malt show --diagnostics`)."""

    def __init__(self, units: list[dict]):
        self.units = units

    def frame(self) -> pd.DataFrame:
        rows = [{"experiment": u["experiment"], "algorithm": u["algorithm"], "display": u["display"],
                 "fold": u["fold"], "diagnostic": name, "value": value}
                for u in self.units for name, value in numeric_diagnostics(u["_record"]).items()]
        return pd.DataFrame(rows)


def _display_scale(task: str, metric: str) -> tuple[float, str]:
    """Factor from a stored value to the metric's declared display unit, and the unit ('%' or '')."""
    from malt.tasks import metric_info

    try:
        return (100.0, "%") if metric_info(task, metric).percent else (1.0, "")
    except MaltError:  # an undeclared metric or a diagnostic: shown as stored
        return 1.0, ""


def _declared_order(task: str | None) -> dict[str, int]:
    from malt.tasks import tasks

    cls = tasks().get(task)
    return {m.name: i for i, m in enumerate(cls.metrics)} if cls else {}


def _planned_versions(spec: dict, units: dict) -> dict[tuple, str]:
    """(algorithm, params key) -> the algorithm version the plan records (for specs that recorded
    none, the newest version among the stored records)."""
    out = {}
    for item in spec.get("plan", []):
        if "version" in item:
            out[(item["algorithm"], _plan_key(item))] = item["version"]
    if out:
        return out
    newest: dict[tuple, tuple] = {}
    for rec in units.values():
        key = (rec.get("algorithm"), rec.get("params_key"))
        stamp = rec.get("timestamp", 0)
        if key not in newest or stamp > newest[key][0]:
            newest[key] = (stamp, rec.get("version"))
    return {k: v for k, (_, v) in newest.items()}


def _plan_key(item: dict) -> str:
    """The parameter key of a plan entry (format-1 specs kept the full parameters, whose hash was
    the key then)."""
    if "key" in item:
        return item["key"]
    import hashlib

    from malt.params import canonical_json

    return hashlib.sha256(canonical_json(item.get("params", {})).encode()).hexdigest()[:16]


def _param_value(value):
    return ",".join(map(str, value)) if isinstance(value, list) else value


def numeric_diagnostics(record: dict) -> dict[str, float]:
    """A unit's diagnostics reduced to numbers: scalars as they are, a numeric list (a bound trace,
    say) by its last value and length, a word as ``name=word`` (1), a mapping to numbers as ``name[key]``
    (a `Selection`'s ``selected`` mapping, under any prefix, is already spelled out as ``selected_<name>``);
    plus the unit's fit seconds and peak resident memory."""
    out = {"fit_seconds": float(record.get("fit_seconds", np.nan))}
    if "fit_cpu_seconds" in record:
        out["fit_cpu_seconds"] = float(record["fit_cpu_seconds"])
    if "peak_rss_mib" in record:
        out["peak_rss_mib"] = float(record["peak_rss_mib"])
    for name, value in (record.get("diagnostics") or {}).items():
        if isinstance(value, bool):
            out[name] = float(value)
        elif isinstance(value, (int, float)):
            out[name] = float(value)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
            out[f"{name} (last)"] = float(value[-1])
            out[f"{name} (length)"] = float(len(value))
        elif isinstance(value, str) and value:
            out[f"{name}={value}"] = 1.0
        elif isinstance(value, dict) and not name.endswith("selected"):
            out.update({f"{name}[{key}]": float(v) for key, v in value.items()
                        if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return out


def format_cell(mean: float, std: float, folds: int, planned, percent: bool = False) -> str:
    """'mean ± std' rounded as every table rounds it (`format_mean_std`), no ± for a single fold,
    and '(k/n folds)' when fewer folds than planned."""
    text = format_mean_std(mean, std, percent, folds)
    if planned == planned and planned and folds < planned:  # planned is not NaN
        text += f" ({folds}/{int(planned)} folds)"
    return text
