"""The engine: expand (experiment, algorithm, params, fold) units, skip those already stored, run
the rest (in process, on local processes with joblib, or on a Dask cluster) and commit each finished
unit as it arrives.

Seeds derive from the unit key, so serial, parallel, distributed and resumed runs give identical
numbers. Only the driver writes the repository; workers return records and newly computed cache
entries.
"""
from __future__ import annotations

import hashlib
import math
import os
import platform
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

import malt
from malt import registry
from malt.context import Context, MemoryCache
from malt.errors import MaltError
from malt.params import Params
from malt.tasks.base import Task

_WORKER_CACHES: dict[str, MemoryCache] = {}


def experiment_id(dataset_name: str, dataset_hash: str, task: Task, task_params: Params) -> str:
    """Readable, content-derived id: ``DATASET-TASK-<hash of data, task and its options>``."""
    digest = hashlib.sha256(f"{dataset_hash}|{task.name}|{task.version}|{task_params.to_json()}".encode())
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in dataset_name)[:40]
    return f"{safe}-{task.name}-{digest.hexdigest()[:8]}"


@dataclass(frozen=True)
class Unit:
    algorithm: str
    params: Params
    fold: int
    key: str

    @property
    def seed(self) -> int:
        return int(self.key[:8], 16)


def unit_key(experiment: str, algo: type[registry.Algorithm], params: Params, fold: int) -> str:
    text = f"{experiment}|{algo.name}|{algo.version}|{params.to_json()}|{fold}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass
class Plan:
    """What an experiment asks for: algorithms with parameter settings, over a task's folds."""

    experiment: str
    dataset: object
    dataset_ref: str
    task: Task
    task_params: Params
    entries: list[tuple[type[registry.Algorithm], Params]] = field(default_factory=list)

    def units(self) -> list[Unit]:
        folds = self.task.n_folds(self.dataset, self.task_params)
        return [Unit(algo.name, params, fold, unit_key(self.experiment, algo, params, fold))
                for algo, params in self.entries for fold in range(folds)]

    def spec(self, previous: dict | None = None) -> dict:
        plan = list((previous or {}).get("plan", []))
        for algo, params in self.entries:
            item = {"algorithm": algo.name, "params": params.to_dict()}
            if item not in plan:
                plan.append(item)
        return {
            "experiment": self.experiment,
            "dataset": self.dataset.name,
            "dataset_ref": self.dataset_ref,
            "dataset_hash": self.dataset.hash,
            "task": self.task.name,
            "task_version": self.task.version,
            "task_params": self.task_params.to_dict(),
            "settings": list(self.task.settings),
            "n_folds": self.task.n_folds(self.dataset, self.task_params),
            "plan": plan,
            "created": (previous or {}).get("created", time.time()),
        }


def _jsonable(value, limit: int = 2000):
    if isinstance(value, dict):
        return {str(k): _jsonable(v, limit) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        value = value.ravel()[:limit].tolist() if value.ndim else value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, limit) for v in list(value)[:limit]]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def run_unit(dataset, task: Task, task_params: Params, unit: Unit, experiment: str,
             cache_path: str | None) -> tuple[dict, dict]:
    """Compute one unit; never raises for algorithm errors (they become a failed record).

    Returns (record, new cache entries computed here).
    """
    algo = registry.get(unit.algorithm)
    cache = _worker_cache(cache_path)
    before = len(cache.new_keys)
    record = {
        "unit": unit.key, "experiment": experiment, "algorithm": algo.name, "version": algo.version,
        "params": unit.params.to_dict(), "params_key": unit.params.key(),
        "display": unit.params.display(algo.name), "fold": unit.fold, "seed": unit.seed,
        "malt_version": malt.__version__, "host": platform.node(), "pid": os.getpid(),
    }
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            split = task.split(dataset, task_params, unit.fold)
            ctx = Context(task.features(dataset), data_key=dataset.hash, seed=unit.seed, cache=cache,
                          dataset=dataset, producer=f"{algo.name}@{algo.version}")
            prediction = algo().run(split, unit.params, ctx)
        fit = time.perf_counter() - start
        scores = task.score(dataset, task_params, split, prediction)
        record.update(status="ok", metrics={k: float(v) for k, v in scores.items()}, fit_seconds=fit,
                      diagnostics=_jsonable(prediction.diagnostics),
                      warnings=sorted({str(w.message) for w in caught})[:10])
    except MemoryError:
        record.update(status="failed", error="MemoryError: the unit ran out of memory", metrics={},
                      fit_seconds=time.perf_counter() - start)
    except Exception as err:  # one failing unit must not stop the others; it is retried on rerun
        record.update(status="failed", error=f"{type(err).__name__}: {err}", metrics={},
                      traceback=traceback.format_exc()[-4000:], fit_seconds=time.perf_counter() - start)
    record["timestamp"] = time.time()
    new = {k: cache._items[k] for k in cache.new_keys[before:]}
    return record, new


def _worker_cache(cache_path: str | None) -> MemoryCache:
    key = cache_path or ""
    if key not in _WORKER_CACHES:
        from malt.repository.store import ReadOnlyCache

        _WORKER_CACHES[key] = MemoryCache(ReadOnlyCache(cache_path) if cache_path else None)
    return _WORKER_CACHES[key]


class Progress:
    """Units done / total, elapsed and ETA on stderr (a single updating line on a terminal)."""

    def __init__(self, total: int, label: str, quiet: bool):
        self.total, self.label, self.quiet = total, label, quiet
        self.done = self.failed = 0
        self.start = time.perf_counter()
        self.last = 0.0
        self.tty = sys.stderr.isatty()

    def update(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        now = time.perf_counter()
        if self.quiet or (now - self.last < 0.5 and self.done < self.total):
            return
        self.last = now
        elapsed = now - self.start
        eta = elapsed / self.done * (self.total - self.done)
        text = (f"[{self.label}] {self.done}/{self.total} units"
                + (f", {self.failed} failed" if self.failed else "")
                + f", {elapsed:.1f}s elapsed, ETA {eta:.1f}s")
        sys.stderr.write(("\r" + text + " " * 4) if self.tty else text + "\n")
        if self.tty and self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def execute(repo, plan: Plan, *, force: set[str] = frozenset(), jobs: int = 1, scheduler: str | None = None,
            quiet: bool = False) -> dict:
    """Run the plan's missing units (and every unit of the algorithms in ``force``) into ``repo``.

    The caller holds the repository lock. Returns counts: planned, stored, ran, failed.
    """
    previous = None
    if (repo.experiment_dir(plan.experiment) / "spec.json").exists():
        previous = repo.read_spec(plan.experiment)
    repo.write_spec(plan.experiment, plan.spec(previous))
    stored = repo.units(plan.experiment)
    todo = [u for u in plan.units()
            if u.algorithm in force or stored.get(u.key, {}).get("status") != "ok"]
    counts = {"planned": len(plan.units()), "stored": len(plan.units()) - len(todo), "ran": 0, "failed": 0}
    if not todo:
        return counts
    progress = Progress(len(todo), plan.experiment, quiet)
    cache_path = str(repo.path)
    try:
        for record, new_cache in _results(plan, todo, cache_path, jobs, scheduler):
            for key, value in new_cache.items():
                repo.cache_put(key, value)
            repo.commit_unit(plan.experiment, record)
            counts["ran"] += 1
            failed = record["status"] != "ok"
            counts["failed"] += failed
            if failed and not quiet:
                sys.stderr.write(f"\nunit {record['display']} fold {record['fold']} failed: {record['error']}\n")
            progress.update(failed)
    finally:
        repo.compact(plan.experiment)
    return counts


def _results(plan: Plan, todo: list[Unit], cache_path: str, jobs: int, scheduler: str | None):
    args = (plan.task, plan.task_params)
    if scheduler:
        yield from _dask_results(plan, todo, cache_path, scheduler)
    elif jobs == 1:
        for unit in todo:
            yield run_unit(plan.dataset, *args, unit, plan.experiment, cache_path)
    else:
        from joblib import Parallel, delayed

        parallel = Parallel(n_jobs=jobs, return_as="generator_unordered")
        yield from parallel(delayed(run_unit)(plan.dataset, *args, unit, plan.experiment, cache_path)
                            for unit in todo)


def _dask_results(plan: Plan, todo: list[Unit], cache_path: str, scheduler: str):
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise MaltError("--scheduler needs Dask: install the optional extra with `pip install 'malt[distributed]'`.")
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as err:
        raise MaltError(f"Cannot reach the Dask scheduler at {scheduler} ({err}); start it with "
                        "`dask scheduler` or check the address.") from None
    try:
        dataset = client.scatter(plan.dataset, broadcast=True)
        futures = [client.submit(run_unit, dataset, plan.task, plan.task_params, unit, plan.experiment,
                                 cache_path, key=f"malt-{unit.key}", pure=False, retries=2)
                   for unit in todo]
        for future in as_completed(futures):
            yield future.result()
    finally:
        client.close()

