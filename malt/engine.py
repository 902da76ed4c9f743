"""The engine: expand (experiment, algorithm, params, fold) units, skip those already stored, run
the rest (in process, on local worker processes, or on a Dask cluster) and commit each finished
unit as it arrives.

Identity: a unit's key hashes the experiment's fit identity (data, task version, the options that
change fitting), the algorithm's name and version, the parameters that differ from their defaults
and the fold — so it changes exactly when the unit's result could. Seeds derive from the key, so
serial, parallel, distributed and resumed runs give identical numbers.

Scores are derived: each unit's test predictions are packed by the task and stored beside its
record, and the metrics are computed from that stored form — in a fresh run exactly as in
`malt rescore` — so rescoring never refits. A unit whose predictions already exist (in this
experiment, or in another one that differs only in scoring options) is scored, not refit.

Only the driver writes the repository; workers return records, predictions and newly computed
cache entries.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import math
import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

from malt import provenance, registry
from malt.context import Context, MemoryCache
from malt.progress import Progress
from malt.errors import MaltError
from malt.memory import PeakMemory
from malt.params import Params
from malt.repository.cache import worth_caching
from malt.tasks.base import Task

_WORKER_CACHES: dict[str, MemoryCache] = {}


def unit_key(fit: str, algorithm: str, version: str, params: Params, fold: int) -> str:
    text = f"{fit}|{algorithm}|{version}|{params.key()}|{fold}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Unit:
    algorithm: str
    version: str
    params: Params
    fold: int
    key: str

    @property
    def seed(self) -> int:
        return int(self.key[:8], 16)

    @property
    def display(self) -> str:
        return self.params.display(self.algorithm)


@dataclass
class Plan:
    """What an experiment asks for: algorithms with parameter settings, over a task's folds."""

    dataset: object
    source: dict  # where the data came from (see malt.sources)
    task: Task
    options: Params
    entries: list[tuple[type[registry.Algorithm], Params]] = field(default_factory=list)

    def __post_init__(self):
        self.fit = self.task.fit_identity(self.dataset.hash, self.options)
        self.experiment = self.task.experiment_id(self.dataset.name, self.dataset.hash, self.options)
        self.n_folds = self.task.n_folds(self.dataset, self.options)

    def units(self) -> list[Unit]:
        return [Unit(algo.name, algo.version, params, fold, unit_key(self.fit, algo.name, algo.version, params, fold))
                for algo, params in self.entries for fold in range(self.n_folds)]

    def spec(self, previous: dict | None = None) -> dict:
        plan = [item for item in (previous or {}).get("plan", [])]
        for algo, params in self.entries:
            item = {"algorithm": algo.name, "version": algo.version, "params": params.changed(),
                    "key": params.key(), "display": params.display(algo.name)}
            plan = [p for p in plan if (p["algorithm"], p.get("key")) != (algo.name, item["key"])] + [item]
        return {
            "format": 2,
            "experiment": self.experiment,
            "fit": self.fit,
            "dataset": self.dataset.name,
            "dataset_ref": self.source.get("name") or self.source.get("path") or self.source.get("ref"),
            "source": self.source,
            "dataset_hash": self.dataset.hash,
            "task": self.task.name,
            "task_version": self.task.version,
            "task_params": self.options.to_dict(),
            "settings": [s.name for s in self.task.settings],
            "n_folds": self.n_folds,
            "plan": plan,
            "created": (previous or {}).get("created", time.time()),
        }


def _jsonable(value, limit: int = 500):
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


@dataclass
class Outcome:
    """What one unit sends back to the driver."""

    record: dict
    packed: dict | None = None
    new_cache: dict = field(default_factory=dict)  # key -> (value, meta)
    used_cache: list = field(default_factory=list)
    damaged_cache: list = field(default_factory=list)  # (key, what is wrong): not used, recomputed


def metric_versions(task: Task, metrics: dict) -> dict[str, str]:
    return {name: task.metric(name).version for name in metrics}


def score_packed(task: Task, dataset, options: Params, split, packed: dict) -> dict[str, float]:
    """The task's metrics of stored predictions; every returned name must be declared."""
    scores = task.score_packed(dataset, options, split, packed)
    declared = {m.name for m in task.metrics}
    undeclared = sorted(set(scores) - declared)
    if undeclared:
        raise MaltError(f"The {task.name} task returned undeclared metric(s) {', '.join(undeclared)}; declare them "
                        "in the task's `metrics`.")
    return {k: float(v) for k, v in scores.items()}


def _roundtrip(packed: dict) -> dict:
    """The arrays exactly as they will be read back from the store."""
    return {k: np.array(v) for k, v in packed.items()}


def run_unit(dataset, task: Task, options: Params, unit: Unit, cache_path: str | None, threads: int | None = None,
             progress=None, jobs: int = 1) -> Outcome:
    """Fit, predict and score one unit; never raises for algorithm errors (they become a failed record).
    ``cache_path`` None: the unit computes every artifact itself and shares none (timing studies)."""
    if jobs > 1:
        _die_with_parent()
    algo = registry.get(unit.algorithm)
    cache = _worker_cache(cache_path) if cache_path is not None else MemoryCache()
    before = len(cache.new_keys)
    hits_before = len(cache.hits)
    problems_before = len(cache.problems)
    record = {
        "unit": unit.key, "algorithm": algo.name, "version": algo.version, "params": unit.params.to_dict(),
        "params_key": unit.params.key(), "display": unit.display, "fold": unit.fold, "seed": unit.seed,
        "pid": os.getpid(), "started": time.time(),
    }
    for module in algo.preload:
        with contextlib.suppress(ImportError):  # a missing module fails the run itself, with its record
            importlib.import_module(module)
    packed = None
    start, cpu = time.perf_counter(), time.process_time()
    try:
        with (warnings.catch_warnings(record=True) as caught, PeakMemory() as peak,
              provenance.blas_threads(threads or algo.blas_threads, jobs)):
            warnings.simplefilter("always")
            split = task.split(dataset, options, unit.fold)
            ctx = Context(task.features(dataset), data_key=dataset.hash, seed=unit.seed, cache=cache,
                          dataset=dataset, producer=f"{algo.name}@{algo.version}", progress=progress)
            prediction = algo().run(split, unit.params, ctx)
            fit, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
            packed = _roundtrip(task.pack(split, prediction, options))
            scores = score_packed(task, dataset, options, split, packed)
        record.update(status="ok", metrics=scores, metric_versions=metric_versions(task, scores), fit_seconds=fit,
                      fit_cpu_seconds=fit_cpu, peak_rss_mib=round(peak.mib, 1))
        if prediction.diagnostics:
            record["diagnostics"] = _jsonable(prediction.diagnostics)
        if caught:
            record["warnings"] = sorted({str(w.message) for w in caught})[:10]
    except MemoryError:
        packed = None
        record.update(status="failed", error="MemoryError: the unit ran out of memory", metrics={},
                      fit_seconds=time.perf_counter() - start)
    except Exception as err:  # one failing unit must not stop the others; it is retried on rerun
        packed = None
        record.update(status="failed", error=f"{type(err).__name__}: {err}".strip(), metrics={},
                      traceback=traceback.format_exc()[-4000:], fit_seconds=time.perf_counter() - start)
    record["timestamp"] = time.time()
    new = {k: (cache._items[k], cache.meta[k]) for k in cache.new_keys[before:]}
    return Outcome(record, packed, new, sorted(set(cache.hits[hits_before:])), cache.problems[problems_before:])


def rescore_unit(dataset, task: Task, options: Params, record: dict, packed: dict, only: set | None = None) -> dict:
    """A new record for a stored unit with metrics recomputed from its stored predictions."""
    split = task.split(dataset, options, record["fold"])
    scores = score_packed(task, dataset, options, split, packed)
    if only:
        scores = dict(record.get("metrics", {}), **{k: v for k, v in scores.items() if k in only})
    return dict(record, metrics=scores, metric_versions=metric_versions(task, scores), rescored=time.time(),
                timestamp=time.time())


def _die_with_parent() -> None:
    """In a local worker process: ask Linux to kill it when the driver dies (a driver killed with
    kill -9 would otherwise leave its joblib workers running orphaned). Idempotent and cheap."""
    global _DEATH_SIGNAL_SET
    if _DEATH_SIGNAL_SET or not sys.platform.startswith("linux"):
        return
    _DEATH_SIGNAL_SET = True
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the driver died before the signal was armed
        os._exit(1)


_DEATH_SIGNAL_SET = False


def _worker_cache(cache_path: str | None) -> MemoryCache:
    key = cache_path or ""
    if key not in _WORKER_CACHES:
        from malt.repository.cache import ArtifactCache

        _WORKER_CACHES[key] = MemoryCache(ArtifactCache(cache_path) if cache_path else None)
    return _WORKER_CACHES[key]


def _current(record: dict | None, unit: Unit, task: Task) -> bool:
    """A stored record that stands for the unit as today's code would compute it."""
    if record is None or record.get("status") != "ok" or record.get("version") != unit.version:
        return False
    versions = record.get("metric_versions") or {}
    return all(versions.get(name, "1") == task.metric(name).version for name in record.get("metrics", {})
               if name in {m.name for m in task.metrics})


@dataclass
class Counts:
    planned: int = 0
    stored: int = 0
    ran: int = 0
    rescored: int = 0
    failed: int = 0
    failures: list = field(default_factory=list)  # (display, fold, error) of this run's failed units

    def as_dict(self) -> dict:
        return {"planned": self.planned, "stored": self.stored, "ran": self.ran, "rescored": self.rescored,
                "failed": self.failed}


def stored_predictions(repo, plan: Plan, keys: set[str]) -> dict[str, tuple[dict, dict, str]]:
    """Predictions already stored for these unit keys — in this experiment or in one that differs
    only in scoring options (same fit identity) — as {key: (record, packed, experiment)}."""
    found: dict[str, tuple[dict, dict, str]] = {}
    order = sorted(repo.experiments(), key=lambda e: e != plan.experiment)  # our own first
    for experiment in order:
        if not keys - set(found):
            break
        files = repo.experiment(experiment)
        if files.is_legacy:
            continue
        try:
            spec = files.read_spec()
        except MaltError:
            continue
        if spec.get("fit") != plan.fit:
            continue
        units, _, _ = files.read_log()
        wanted = {k: r["predictions"] for k, r in units.items()
                  if k in keys and k not in found and r.get("status") == "ok" and r.get("predictions")
                  and r.get("version") == _version_of(plan, r)}
        for key, packed in files.read_predictions(wanted).items():
            if plan.task.can_score(packed, plan.options):
                found[key] = (units[key], packed, experiment)
    return found


def _version_of(plan: Plan, record: dict) -> str | None:
    for algo, _ in plan.entries:
        if algo.name == record.get("algorithm"):
            return algo.version
    return None


def execute(repo, plan: Plan, *, force: set[str] = frozenset(), jobs: int = 1, scheduler: str | None = None,
            quiet: bool = False, wait: bool = False, threads: int | None = None, cache: bool = True) -> Counts:
    """Run the plan's missing units (and every unit of the algorithms in ``force``) into ``repo``.
    ``cache=False``: no unit reads or stores shared artifacts (neighbour graphs, eigenbases), so each
    unit's recorded seconds are its whole cost.

    Takes the experiment's lock for the duration. Returns what was planned, found, run and failed.
    """
    repo.create()
    files = repo.experiment(plan.experiment)
    counts = Counts()
    with files.writer(wait=wait) as writer:
        previous = files.read_spec() if files.exists and not files.is_legacy else None
        writer.write_spec(plan.spec(previous))
        stored, _, _ = files.read_log()
        units = plan.units()
        counts.planned = len(units)
        todo = [u for u in units if u.algorithm in force or not _current(stored.get(u.key), u, plan.task)]
        counts.stored = counts.planned - len(todo)
        if not todo:
            return counts
        session = writer.session(provenance.session_info(plan.dataset, threads=threads, jobs=jobs))
        reusable = stored_predictions(repo, plan, {u.key for u in todo if u.algorithm not in force})
        progress = Progress(len(todo), plan.experiment, quiet, jobs)
        try:
            for unit in [u for u in todo if u.key in reusable]:
                record, packed, source = reusable[unit.key]
                new = dict(rescore_unit(plan.dataset, plan.task, plan.options, record, packed), session=session)
                if source == plan.experiment:
                    writer.commit(new, None)  # points at the predictions already in this experiment
                else:
                    new.pop("predictions", None)
                    writer.commit(dict(new, predictions_from=source), packed)
                counts.rescored += 1
                progress.unit_done()
            run = [u for u in todo if u.key not in reusable]
            cache_path = str(repo.path) if cache else None
            for outcome in _results(plan, run, cache_path, jobs, scheduler, threads, progress):
                for key, problem in outcome.damaged_cache:
                    sys.stderr.write(f"warning: {problem}\n")
                    repo.cache.remove(key)
                stored_artifacts = outcome.new_cache if cache else {}
                for key, (value, meta) in stored_artifacts.items():
                    if worth_caching(int(meta.get("nbytes", 0)), float(meta.get("compute_seconds", 0.0))):
                        repo.cache.put(key, value, meta)
                repo.cache.touch(outcome.used_cache)
                record = dict(outcome.record, session=session)
                if outcome.used_cache or outcome.new_cache:
                    record["artifacts"] = sorted(set(outcome.used_cache) | set(outcome.new_cache))
                writer.commit(record, outcome.packed)
                counts.ran += 1
                failed = record["status"] != "ok"
                if failed:
                    counts.failed += 1
                    counts.failures.append((record["display"], record["fold"], record["error"]))
                progress.unit_done(failed)
        finally:
            writer.end_session(session)
        writer.compact()
    return counts


def _can_fork() -> bool:
    """Local workers are forked from the driver on Linux when it runs no other thread (a thread holding
    a lock at the fork would leave it held in the child; a notebook kernel has such threads): they
    inherit its imports (numpy, scipy, the algorithm) and the dataset, so one starts in milliseconds.
    Otherwise (and on macOS, where fork is unsafe) they are joblib's loky processes, which start a
    fresh interpreter and import everything (~1 s)."""
    import threading

    return sys.platform.startswith("linux") and threading.active_count() == 1


WORKER_START_SECONDS = {"fork": 0.2, "loky": 1.5}
"""What starting local worker processes costs (bench_engine): parallel runs only pay once the units'
serial work is well above it."""
BATCH_SECONDS = 0.5
"""Work sent to a worker at once: cheap units travel in batches, one pickled dataset per batch."""


def _results(plan: Plan, todo: list[Unit], cache_path: str | None, jobs: int, scheduler: str | None,
             threads: int | None, progress: Progress):
    args = (plan.task, plan.options)
    if scheduler:
        yield from _dask_results(plan, todo, cache_path, scheduler, threads)
        return
    if jobs == 1:
        for unit in todo:
            yield run_unit(plan.dataset, *args, unit, cache_path, threads, progress.unit_progress)
        return
    # the first units run here and say what a unit costs (the first alone also pays warm-up: imports,
    # first reads, so a cheap one is sampled twice); workers start only if they pay
    start_cost = WORKER_START_SECONDS["fork" if _can_fork() else "loky"]
    seconds, sampled = float("inf"), 0
    while sampled < min(2, len(todo)) and (sampled == 0 or seconds < start_cost):
        start = time.perf_counter()
        yield run_unit(plan.dataset, *args, todo[sampled], cache_path, threads, progress.unit_progress)
        seconds = min(seconds, time.perf_counter() - start)
        sampled += 1
    rest = todo[sampled:]
    fork = _can_fork()
    if seconds * len(rest) < 2 * WORKER_START_SECONDS["fork" if fork else "loky"]:
        for unit in rest:
            yield run_unit(plan.dataset, *args, unit, cache_path, threads, progress.unit_progress)
        return
    size = max(1, min(int(BATCH_SECONDS / max(seconds, 1e-6)), math.ceil(len(rest) / (4 * jobs))))
    batches = [rest[i:i + size] for i in range(0, len(rest), size)]
    if fork:
        yield from _forked_results(plan, batches, cache_path, jobs, threads)
        return
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=jobs, return_as="generator_unordered")
    for outcomes in parallel(delayed(run_batch)(plan.dataset, *args, batch, cache_path, threads, jobs)
                             for batch in batches):
        yield from outcomes


_FORKED_PLAN: "Plan | None" = None
"""The plan a forked worker inherits from the driver (so the dataset is never pickled to it)."""


def _forked_results(plan: Plan, batches: list[list[Unit]], cache_path: str | None, jobs: int, threads: int | None):
    """Batches on `jobs` processes forked from this one, outcomes in the order they finish; if the
    driver stops consuming (an error while committing), batches not yet started are cancelled."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    global _FORKED_PLAN
    _FORKED_PLAN = plan
    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"))
    try:
        futures = [pool.submit(_run_forked_batch, batch, cache_path, threads, jobs) for batch in batches]
        for future in as_completed(futures):
            yield from future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        _FORKED_PLAN = None


def _run_forked_batch(units: list[Unit], cache_path: str | None, threads: int | None, jobs: int) -> list[Outcome]:
    plan = _FORKED_PLAN
    return run_batch(plan.dataset, plan.task, plan.options, units, cache_path, threads, jobs)


def run_batch(dataset, task: Task, options: Params, units: list[Unit], cache_path: str | None, threads: int | None,
              jobs: int) -> list[Outcome]:
    """Several units in one worker call (one transfer of the dataset for all of them)."""
    return [run_unit(dataset, task, options, unit, cache_path, threads, None, jobs) for unit in units]


def _dask_results(plan: Plan, todo: list[Unit], cache_path: str | None, scheduler: str, threads: int | None):
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise MaltError("--scheduler needs Dask: install the optional extra with `pip install 'malt[distributed]'`.")
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as err:
        raise MaltError(f"Cannot reach the Dask scheduler at {scheduler} ({str(err).splitlines()[0]}); start it with "
                        "`dask scheduler` or check the address (tcp://HOST:PORT).") from None
    try:
        dataset = client.scatter(plan.dataset, broadcast=True)
        futures = [client.submit(run_unit, dataset, plan.task, plan.options, unit, cache_path, threads,
                                 key=f"malt-{unit.key}", pure=False, retries=2)
                   for unit in todo]
        for future in as_completed(futures):
            try:
                yield future.result()
            except Exception as err:  # the cluster lost the unit (scheduler or all its workers gone)
                raise MaltError(f"The Dask cluster at {scheduler} failed ({type(err).__name__}: "
                                f"{str(err).splitlines()[0] if str(err) else ''}); finished units are stored, "
                                "`malt rerun` completes the rest.") from None
    finally:
        try:
            client.close()
        except Exception:
            pass
