"""malt from Python: the same engine, store and ids as the command line (which is a thin layer over
these functions, so the two never disagree).

    import malt
    run = malt.cv(["bmr", "mlknn"], dataset="emotions", missing=0.3, repo="results")
    results = malt.load("results")
    results.frame                        # tidy DataFrame: one row per unit × metric
    results.summary(by="algorithm")      # mean, std in each metric's unit, folds done / planned
    malt.rescore(repo="results")         # recompute metrics from stored predictions
    malt.forget("emot", repo="results", algorithms=["mllr"], params={"C": 10})   # remove a mistaken setting

Errors are `malt.errors.MaltError` subclasses with the messages the CLI prints.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from malt.errors import InvalidParameterError, MaltError


@dataclass
class Run:
    """What one call of `cv` (or one experiment of `rerun`) did."""

    experiment: str
    planned: int = 0
    stored: int = 0
    ran: int = 0
    rescored: int = 0
    failed: int = 0
    failures: list = field(default_factory=list)  # (setting, fold, error)
    refused: list = field(default_factory=list)  # (rerun) settings today's declarations refuse: left as stored
    warnings: list = field(default_factory=list)  # (setting, fold, message) warnings the run's units stored

    @property
    def ok(self) -> bool:
        return self.failed == 0


def repository(repo):
    """The `Repository` at ``repo`` (a path), or ``repo`` itself if it is one already."""
    from malt.repository.store import Repository

    if hasattr(repo, "experiment"):
        return repo
    if not str(repo).strip():
        from malt.errors import RepositoryError

        raise RepositoryError("The repository path is empty; pass the repository folder (for example repo=\"results\").")
    return Repository(Path(repo))


def _names(items) -> list[str]:
    if isinstance(items, str):
        return [items]
    return list(dict.fromkeys(items))


def _strings(value, list_valued: bool = False) -> str:
    """A Python value of a parameter or a sweep as the command-line text `grid` parses: a list sweeps
    (its alternatives joined by ',' — by ';' for a list-valued parameter, whose own values are
    tuples or comma-separated strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    if isinstance(value, (list, set)):
        parts = [_strings(v) for v in value]
        return (";" if list_valued else ",").join(parts)
    return str(value)


def algorithm_grid(algos, params: Mapping[str, Any], task: str | None = None) -> list:
    """(algorithm class, Params) for every algorithm × combination of swept values. A value is one
    setting, a list of values a sweep (a tuple is one value of a list-valued parameter). A parameter
    given where its algorithm would not use it (on ``task``, with the other values) is refused."""
    from malt.params import grid

    used, entries = set(), []
    for algo in algos:
        lists = {info.name for info in algo.Params._fields() if info.is_list}
        mine = {k: _strings(v, k in lists) for k, v in params.items() if k in algo.Params.names()}
        used |= set(mine)
        entries += [(algo, p) for p in grid(algo.Params, mine, {"task": task} if task else None)]
    unused = set(params) - used
    if unused:
        name = sorted(unused)[0]
        raise InvalidParameterError(f"No chosen algorithm has a parameter '{name}' "
                                    f"({', '.join(a.name for a in algos)}); see `malt algorithms NAME`.")
    return entries


def infer_task(algos, dataset) -> str:
    """The task all chosen algorithms support whose required components the dataset has."""
    from malt.tasks import tasks

    common = set.intersection(*(set(a.tasks) for a in algos))
    if len(common) == 1:
        return next(iter(common))
    fits = [name for name in sorted(common) if all(c in dataset for c in tasks()[name].requires)]
    if len(fits) == 1:
        return fits[0]
    raise MaltError(f"Cannot tell which task to run; pass --task (one of {', '.join(sorted(fits or common)) or 'none'}).")


def task_options(task, options: Mapping[str, Any]):
    names = set(task.Params.names())
    unknown = [k for k in options if k not in names]
    if unknown:
        raise InvalidParameterError(f"The {task.name} task has no option '{unknown[0]}'; its options are: "
                                    f"{', '.join(sorted(names))}. See `malt tasks`.")
    return task.Params.from_strings({k: _strings(v) for k, v in options.items()})


def check_scheduler(address: str | None) -> None:
    if address is not None and not re.fullmatch(r"(tcp|tls|inproc|ucx)://[^\s/:]+(:\d+)?/?", address):
        raise InvalidParameterError(f"--scheduler expects a Dask scheduler address such as tcp://HOST:8786, got "
                                    f"{address!r}.")


def check_timeout(seconds: float | None) -> None:
    if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
        raise InvalidParameterError(f"--unit-timeout must be a positive duration (90s, 10m, 2h), got {seconds!r}.")


def plan_experiment(algorithms, dataset, *, task=None, params=None, repo=None, labels=None, **options):
    """The Plan `cv` would run (validated; nothing is written)."""
    from malt import registry
    from malt.datasets.sources import open_source
    from malt.engine import runner as engine
    from malt.tasks import get_task

    algos = [registry.get(n) for n in _names(algorithms)]
    if not algos:
        raise InvalidParameterError("Name at least one algorithm (--algo NAME).")
    data, source = open_source(dataset, repo, labels=labels)
    chosen = get_task(task or infer_task(algos, data))
    for algo in algos:
        registry.check_task(algo, chosen.name)
    opts = task_options(chosen, options)
    chosen.check(data, opts)
    entries = algorithm_grid(algos, params or {}, chosen.name)
    check_bounds(chosen, data, opts, entries, given=set(params or {}))
    return engine.Plan(data, source, chosen, opts, entries)


def check_bounds(task, data, options, entries, given=()) -> None:
    """Refuse, before any unit runs, a setting above a size of the data its parameter is bounded by
    (``max_from``): one line naming the setting, the size and the largest valid value. A parameter
    not in ``given`` (the names the user typed) and left at its default is clamped as its units run,
    with a notice in their diagnostics, rather than refused (`malt.params.Params.within_bounds`)."""
    sizes = task.sizes(data, options)
    for algo, params in entries:
        try:
            params.check_bounds(sizes, {"task": task.name}, given)
        except InvalidParameterError as err:
            raise InvalidParameterError(f"{algo.name}: {err}") from None


def cv(algorithms: str | Iterable[str], dataset: str, *, task: str | None = None,
       params: Mapping[str, Any] | None = None, repo="results", labels: str | None = None, jobs: int = 1,
       scheduler: str | None = None, threads: int | None = None, wait: bool = False, quiet: bool | None = None,
       cache: bool = True, unit_timeout: float | None = None, **options) -> Run:
    """Cross-validate algorithms on a dataset into the repository (stored units are not recomputed).

    ``params``: algorithm parameters, a list of values sweeps; ``options``: task options
    (``missing=0.3``, ``folds=10``, ``split="given"``...); ``cache=False`` makes every unit compute its
    neighbour graphs and eigenbases itself (timing studies); ``quiet``: None shows progress (units
    done, the running units' own progress, an ETA) on stderr when it is a terminal, False always, True
    never; ``unit_timeout``: seconds a unit may run (one over it fails with that reason, the others go
    on). Returns the experiment id and counts.
    """
    from malt.engine import runner as engine
    from malt.engine.migrate import migrate_if_needed

    if jobs < 1:
        raise InvalidParameterError(f"--jobs must be at least 1, got {jobs}.")
    if threads is not None and threads < 1:
        raise InvalidParameterError(f"--threads must be at least 1, got {threads}.")
    check_scheduler(scheduler)
    check_timeout(unit_timeout)
    store = repository(repo)
    store.check_writable_target()
    plan = plan_experiment(algorithms, dataset, task=task, params=params, repo=store, labels=labels, **options)
    migrate_if_needed(store, wait)
    counts = engine.execute(store, plan, jobs=jobs, scheduler=scheduler, quiet=quiet, wait=wait, threads=threads,
                            cache=cache, unit_timeout=unit_timeout)
    return Run(plan.experiment, **counts.as_dict(), failures=counts.failures, warnings=counts.warnings)


def rerun(repo="results", *, experiments: Iterable[str] = (), algorithms: Iterable[str] = (), jobs: int = 1,
          scheduler: str | None = None, threads: int | None = None, wait: bool = False, quiet: bool | None = None,
          unit_timeout: float | None = None, on_error=None) -> list[Run]:
    """Finish what interruptions left (and retry failed units) in every experiment (or those named);
    with ``algorithms``, recompute every unit of those. An experiment that cannot be reopened is
    reported through ``on_error(experiment, error)`` and skipped, never stopping the others (without
    ``on_error`` the first such error is raised)."""
    from malt import registry
    from malt.engine import runner as engine
    from malt.engine.migrate import migrate_if_needed
    from malt.datasets.sources import reopen
    from malt.tasks import get_task

    store = repository(repo).check_readable()
    check_scheduler(scheduler)
    check_timeout(unit_timeout)
    names = _names(algorithms)
    for name in names:
        registry.get(name)
    migrate_if_needed(store, wait)
    runs = []
    for exp in resolve(store, experiments) or store.experiments():
        try:
            spec = store.read_spec(exp)
            dataset = reopen(spec, store)
            task = get_task(spec["task"])
            try:
                options = task.Params.from_dict(spec["task_params"])
            except InvalidParameterError as err:  # options an older malt accepted that contradict
                runs.append(Run(exp, refused=[f"{exp}: its task options are refused today ({err}), so it is not "
                                              f"rerun and its stored units stay as they are."]))
                continue
            sizes = task.sizes(dataset, options)
            entries, folds, refused = [], {}, []
            for item in spec["plan"]:
                if names and item["algorithm"] not in names:
                    continue
                try:
                    algo, params = planned_entry(exp, item, task.name)
                    try:
                        params.check_bounds(sizes, {"task": task.name})
                    except InvalidParameterError as err:
                        raise InvalidParameterError(f"{exp}: the setting {params.display(algo.name)} is refused today "
                                                    f"({err}), so it is not rerun and its stored units stay as they "
                                                    f"are.") from None
                except InvalidParameterError as err:  # nothing to compute for it today; its units stay
                    refused.append(str(err))
                    continue
                entries.append((algo, params))
                if "folds" in item:
                    folds[(item["algorithm"], entries[-1][1].key())] = int(item["folds"])
            if not entries:
                if refused:
                    runs.append(Run(exp, refused=refused))
                continue
            plan = engine.Plan(dataset, spec.get("source") or {"kind": "legacy", "ref": spec.get("dataset_ref")},
                               task, options, entries, folds)
            if plan.experiment != exp:
                raise MaltError(f"Experiment {exp} does not match its spec (it would now be {plan.experiment}); "
                                f"`malt repair --experiment {exp}` checks it.")
            counts = engine.execute(store, plan, force=set(names), jobs=jobs, scheduler=scheduler, quiet=quiet,
                                    wait=wait, threads=threads, unit_timeout=unit_timeout)
            runs.append(Run(exp, **counts.as_dict(), failures=counts.failures, refused=refused,
                            warnings=counts.warnings))
        except MaltError as err:
            if on_error is None:
                raise
            on_error(exp, err)
    return runs


def planned_entry(experiment: str, item: dict, task: str) -> tuple:
    """(algorithm class, Params) of one item of a stored plan. A setting today's declarations refuse (a
    parameter it does not use, stored by an older malt) raises InvalidParameterError naming the
    `malt forget` that removes it."""
    from malt import registry

    algo = registry.get(item["algorithm"])
    try:
        params = algo.Params(**item["params"])
        params.check_active(item["params"], {"task": task})
    except InvalidParameterError as err:
        forget = " ".join(f"--param {k}={_strings(v)}" for k, v in sorted(item["params"].items()))
        raise InvalidParameterError(f"{experiment}: the setting {item.get('display') or algo.name} is refused today "
                                    f"({err}), so it is not rerun and its stored units stay as they are; "
                                    f"`malt forget {experiment} --algo {algo.name} {forget}` removes it.") from None
    return algo, params


def resolve(store, experiments: Iterable[str]) -> list[str]:
    """The experiment ids these name: each an id or an unambiguous beginning of one (``emot``)."""
    return [store.resolve(e) for e in _names(experiments)]


def forget(experiment: str, repo="results", *, algorithms: Iterable[str] = (), params: Mapping[str, Any] | None = None,
           wait: bool = False):
    """Remove the settings of ``experiment`` (an id or its unambiguous beginning) of these
    ``algorithms`` whose parameters take these ``params`` values, or with neither the whole
    experiment: safe, recorded in its provenance, everything else left as it was (see
    `malt.engine.forget`). Returns a `Forgotten` (experiment, settings, units, moved_to)."""
    from malt.engine.forget import forget as run_forget

    store = repository(repo).check_readable()
    exp = store.resolve(experiment)
    return run_forget(store, exp, _names(algorithms), {k: _strings(v) for k, v in (params or {}).items()}, wait=wait)


@dataclass
class Rescored:
    experiment: str
    rescored: int = 0
    without_predictions: int = 0  # units written by an older malt, or whose predictions were damaged
    problems: list = field(default_factory=list)


def rescore(repo="results", *, experiments: Iterable[str] = (), metrics: Iterable[str] = (), wait: bool = False,
            on_error=None) -> list[Rescored]:
    """Recompute metrics from stored predictions (no model is refit), for every experiment or those
    named; ``metrics`` limits which metrics are recomputed."""
    from malt.engine import runner as engine
    from malt.engine.migrate import migrate_if_needed
    from malt.datasets.sources import reopen
    from malt.tasks import get_task

    store = repository(repo).check_readable()
    migrate_if_needed(store, wait)
    only = set(metrics)
    out: list[Rescored] = []
    for exp in resolve(store, experiments) or store.experiments():
        try:
            files = store.experiment(exp)
            spec = files.read_spec()
            task = get_task(spec["task"])
            for name in only:
                task.metric(name)
            dataset = reopen(spec, store)
            options = task.Params.as_stored(spec["task_params"])  # scoring refits nothing
            problems: list[str] = []
            with files.writer(wait=wait) as writer:
                units, _, _ = files.read_log(problems)
                ok = {k: r for k, r in units.items() if r.get("status") == "ok"}
                stored = files.read_predictions({k: r["predictions"] for k, r in ok.items() if r.get("predictions")},
                                                problems)
                for key, record in ok.items():
                    if key in stored:  # the new record points at the same stored predictions
                        new = engine.rescore_unit(dataset, task, options, record, stored[key], only)
                        if _same_scores(new, record):
                            continue  # nothing changed: the log is left as it was
                        writer.commit(new, None)
                writer.sync()
                writer.compact()
            out.append(Rescored(exp, len(stored), len(ok) - len(stored), problems))
        except MaltError as err:
            if on_error is None:
                raise
            on_error(exp, err)
    return out


def _same_scores(new: dict, old: dict) -> bool:
    import json

    def scores(record):
        return json.dumps([record.get("metrics"), record.get("metric_versions")], sort_keys=True)

    return scores(new) == scores(old)


def load(path="results", experiments: Iterable[str] | None = None):
    """The stored results under ``path`` (a repository, or a folder of repositories); ``experiments``:
    only these (ids or their unambiguous beginnings)."""
    from malt.results.result_set import ResultSet

    if experiments:
        store = repository(path).check_readable()
        return ResultSet.from_repository(store, resolve(store, experiments))
    return ResultSet.load(path)


def dataset(name: str, repo=None, labels: str | None = None):
    """The dataset ``--dataset name`` would use, as a `Dataset` (``ds["X"]``, ``ds["Y"]``, ``ds.describe()``):
    a catalogue name (read from ``MALT_DATA``), a name imported into ``repo``, or a file path."""
    from malt.datasets.open import open_dataset

    store = repository(repo) if repo is not None else None
    return open_dataset(name, store if store is not None and store.exists else None, labels)


def split(dataset: str, task: str, fold: int = 0, *, repo=None, labels: str | None = None, **options):
    """The split `malt cv` gives every algorithm for one ``fold`` of ``task`` on ``dataset`` (task
    options as keywords, e.g. ``missing=0.5``): the training view and what is held out, as documented
    per task in `malt.splits`. Deterministic from the data, the options and the fold."""
    from malt.datasets.sources import open_source
    from malt.tasks import get_task

    store = repository(repo) if repo is not None else None
    data, _ = open_source(dataset, store if store is not None and store.exists else None, labels=labels)
    chosen = get_task(task)
    opts = task_options(chosen, options)
    chosen.check(data, opts)
    return chosen.split(data, opts, fold)


def expand(params: Mapping[str, Any]) -> list[dict]:
    """Every combination of a parameter mapping whose list values are sweeps (for experiment files)."""
    names = list(params)
    choices = [v if isinstance(v, list) else [v] for v in params.values()]
    return [dict(zip(names, combo)) for combo in itertools.product(*choices)]
