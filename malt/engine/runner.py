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

from malt import registry
from malt.engine import provenance
from malt.engine.context import Context, MemoryCache
from malt.engine.memory import PeakMemory
from malt.engine.progress import Progress, prior_costs
from malt.errors import MaltError
from malt.numerics.threads import blas_threads
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
    def setting(self) -> tuple[str, str]:
        """(algorithm, params key): the units of one setting cost about the same."""
        return self.algorithm, self.params.key()

    @property
    def display(self) -> str:
        return self.params.display(self.algorithm)


@dataclass
class Plan:
    """What an experiment asks for: algorithms with parameter settings, over a task's folds.

    Repetitions are per setting: ``folds`` keeps the fold (run, repeat) count a setting was planned
    with, so adding a setting with ``--repeats 10`` leaves a setting planned with one run complete."""

    dataset: object
    source: dict  # where the data came from (see malt.datasets.sources)
    task: Task
    options: Params
    entries: list[tuple[type[registry.Algorithm], Params]] = field(default_factory=list)
    folds: dict = field(default_factory=dict)  # (algorithm, params key) -> its folds, when not n_folds

    def __post_init__(self):
        self.fit = self.task.fit_identity(self.dataset.hash, self.options)
        self.experiment = self.task.experiment_id(self.dataset.name, self.dataset.hash, self.options)
        self.n_folds = self.task.n_folds(self.dataset, self.options)

    def units(self) -> list[Unit]:
        return [Unit(algo.name, algo.version, params, fold, unit_key(self.fit, algo.name, algo.version, params, fold))
                for algo, params in self.entries
                for fold in range(self.folds.get((algo.name, params.key()), self.n_folds))]

    def spec(self, previous: dict | None = None) -> dict:
        earlier = (previous or {}).get("n_folds")
        plan = [dict(item, folds=item.get("folds", earlier)) if earlier else item
                for item in (previous or {}).get("plan", [])]
        for algo, params in self.entries:
            item = {"algorithm": algo.name, "version": algo.version, "params": params.changed(),
                    "key": params.key(), "display": params.display(algo.name),
                    "folds": self.folds.get((algo.name, params.key()), self.n_folds)}
            same = [i for i, p in enumerate(plan) if (p["algorithm"], p.get("key")) == (algo.name, item["key"])]
            if same:  # updated where it stands, so a spec that says the same is not rewritten
                plan = [p for i, p in enumerate(plan) if i not in same[1:]]
                plan[same[0]] = item
            else:
                plan.append(item)
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


TRACEBACK_CHARS = 20_000
"""A failed unit keeps at most this many characters of its traceback (`malt show EXP --failed --traceback`)."""


def bounded_traceback() -> str:
    """The traceback being handled, its first and last TRACEBACK_CHARS / 2 characters when longer (the
    outer frames, and the innermost ones with the error: a huge message cannot push the frames out)."""
    text = traceback.format_exc()
    if len(text) <= TRACEBACK_CHARS:
        return text
    half = TRACEBACK_CHARS // 2
    return f"{text[:half]}\n… ({len(text) - 2 * half} characters left out) …\n{text[-half:]}"


def unit_record(unit: Unit) -> dict:
    """The fields every record of ``unit`` starts with (which unit, where and when it ran)."""
    return {"unit": unit.key, "algorithm": unit.algorithm, "version": unit.version, "params": unit.params.to_dict(),
            "params_key": unit.params.key(), "display": unit.display, "fold": unit.fold, "seed": unit.seed,
            "pid": os.getpid(), "started": time.time()}


def failed_outcome(unit: Unit, error: str, seconds: float) -> Outcome:
    """The outcome of a unit stopped from outside (over its time limit, its process lost)."""
    return Outcome(dict(unit_record(unit), status="failed", error=error, metrics={}, fit_seconds=seconds,
                        timestamp=time.time()))


def within_bounds(task: Task, dataset, options: Params, params: Params) -> tuple[Params, list[str]]:
    """The values a unit runs with: ``params`` with fields above the data's sizes clamped, and the
    notices saying so (`Params.within_bounds`; the unit's key stays that of ``params``). Cost: the
    task's sizes (a fold assignment at most), only for Params that declare a bound."""
    if not params.bounds():
        return params, []
    key = (task.name, dataset.hash, options.to_json())
    if key not in _SIZES:  # one data set and options per plan: the last one is enough
        _SIZES.clear()
        _SIZES[key] = task.sizes(dataset, options)
    return params.within_bounds(_SIZES[key], {"task": task.name})


_SIZES: dict = {}


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
    record = dict(unit_record(unit), version=algo.version)  # the code that ran it (a Dask worker's may differ)
    for module in algo.preload:
        with contextlib.suppress(ImportError):  # a missing module fails the run itself, with its record
            importlib.import_module(module)
    if progress is not None:
        progress(0.0, "")  # the unit has started (its clock starts here)
    packed = None
    start, cpu = time.perf_counter(), time.process_time()
    try:
        with (warnings.catch_warnings(record=True) as caught, PeakMemory() as peak,
              blas_threads(threads or algo.blas_threads, jobs)):
            warnings.simplefilter("always")
            split = task.split(dataset, options, unit.fold)
            ctx = Context(task.features(dataset), data_key=dataset.hash, seed=unit.seed, cache=cache,
                          dataset=dataset, producer=f"{algo.name}@{algo.version}", progress=progress)
            params, notices = within_bounds(task, dataset, options, unit.params)
            prediction = algo().run(split, params, ctx)
            fit, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
            packed = _roundtrip(task.pack(split, prediction, options))
            scores = score_packed(task, dataset, options, split, packed)
        record.update(status="ok", metrics=scores, metric_versions=metric_versions(task, scores), fit_seconds=fit,
                      fit_cpu_seconds=fit_cpu, peak_rss_mib=round(peak.mib, 1))
        if prediction.diagnostics or notices:
            record["diagnostics"] = _jsonable({**(prediction.diagnostics or {}), **({"notices": notices} if notices
                                                                                 else {})})
        if caught:
            record["warnings"] = sorted({str(w.message) for w in caught})[:10]
    except MemoryError:
        packed = None
        record.update(status="failed", error="MemoryError: the unit ran out of memory", metrics={},
                      traceback=bounded_traceback(), fit_seconds=time.perf_counter() - start)
    except Exception as err:  # one failing unit must not stop the others; it is retried on rerun
        packed = None
        record.update(status="failed", error=f"{type(err).__name__}: {err}".strip()[:2000], metrics={},
                      traceback=bounded_traceback(), fit_seconds=time.perf_counter() - start)
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


def measured_first(units: list[Unit]) -> list[Unit]:
    """The first unit of every setting, then the rest in plan order: what each setting costs is
    measured early, so the ETA of a run mixing cheap and expensive settings is right from the start
    (a unit's numbers never depend on when it runs: its seed comes from its key)."""
    seen: set = set()
    first = [u for u in units if u.setting not in seen and not seen.add(u.setting)]
    chosen = {u.key for u in first}
    return first + [u for u in units if u.key not in chosen]


def similar_records(repo, plan: Plan, limit: int = 20) -> list[dict]:
    """Unit records of other experiments on the same data (what their units cost: the ETA's prior)."""
    records: list[dict] = []
    for experiment in repo.experiments():
        if experiment == plan.experiment or limit <= 0:
            continue
        files = repo.experiment(experiment)
        try:
            if files.is_legacy or files.read_spec().get("dataset_hash") != plan.dataset.hash:
                continue
            records += list(files.read_log()[0].values())
        except MaltError:
            continue
        limit -= 1
    return records


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
    warnings: list = field(default_factory=list)  # (display, fold, message) of the warnings its units stored

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
            quiet: bool | None = False, wait: bool = False, threads: int | None = None, cache: bool = True,
            unit_timeout: float | None = None) -> Counts:
    """Run the plan's missing units (and every unit of the algorithms in ``force``) into ``repo``.
    ``cache=False``: no unit reads or stores shared artifacts (neighbour graphs, eigenbases), so each
    unit's recorded seconds are its whole cost. ``unit_timeout``: seconds a unit may run; one over it
    is stopped and fails with that reason while the others go on (each unit then runs in a child
    process the driver can kill, or on Dask is cancelled).

    Takes the experiment's lock for the duration — unless everything is stored already: then nothing
    on disk is touched (no lock, no record). Returns what was planned, found, run and failed.
    """
    repo.create()
    files = repo.experiment(plan.experiment)
    counts = Counts()
    if _nothing_to_do(files, plan, force):
        counts.planned = counts.stored = len(plan.units())
        return counts
    with files.writer(wait=wait) as writer:
        try:
            _execute(repo, files, writer, plan, counts, force, jobs, scheduler, quiet, threads, cache, unit_timeout)
        finally:
            for note in writer.notes:
                sys.stderr.write(f"warning: {note}\n")
    return counts


def _same_spec(new: dict, previous: dict | None) -> bool:
    import json

    return previous is not None and json.loads(json.dumps(new)) == previous


def _nothing_to_do(files, plan: Plan, force: set[str]) -> bool:
    """Every unit is stored and the spec is current (read without the lock: logs only grow, and the
    newest record of a unit survives compaction, so a unit seen stored stays stored)."""
    if force or not files.exists or files.is_legacy:
        return False
    try:
        previous = files.read_spec()
        stored, _, _ = files.read_log()
    except MaltError:
        return False  # the locked path names what is wrong
    return _same_spec(plan.spec(previous), previous) and all(
        _current(stored.get(u.key), u, plan.task) for u in plan.units())


def _execute(repo, files, writer, plan: Plan, counts: Counts, force, jobs, scheduler, quiet, threads, cache,
             unit_timeout) -> None:
    previous = files.read_spec() if files.exists and not files.is_legacy else None
    spec = plan.spec(previous)
    stored, _, _ = files.read_log()
    units = plan.units()
    counts.planned = len(units)
    todo = measured_first([u for u in units if u.algorithm in force or not _current(stored.get(u.key), u, plan.task)])
    counts.stored = counts.planned - len(todo)
    if not _same_spec(spec, previous):  # with work to do, only once a unit is committed: a run that fails
        writer.write_spec(spec, with_first_unit=bool(todo))  # before committing anything changes nothing
    if not todo:
        return
    if cache:
        repo.cache.check_entries()
        repo.cache.sweep()
    session = writer.session(provenance.session_info(plan.dataset, threads=threads, jobs=jobs))
    reusable = stored_predictions(repo, plan, {u.key for u in todo if u.algorithm not in force})
    progress = Progress([(u.key, u.setting, f"{u.display} fold {u.fold}") for u in todo], plan.experiment, quiet,
                        1 if scheduler else jobs, prior_costs(list(stored.values()) + similar_records(repo, plan)),
                        unit_timeout)
    cache_writes = CacheWrites(repo.cache)
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
            progress.unit_done(unit.key)
        run = [u for u in todo if u.key not in reusable]
        cache_path = str(repo.path) if cache else None
        for outcome in _results(plan, run, cache_path, jobs, scheduler, threads, progress, unit_timeout):
            for key, problem in outcome.damaged_cache:
                sys.stderr.write(f"warning: {problem}\n")
                repo.cache.remove(key)
            for key, (value, meta) in (outcome.new_cache if cache else {}).items():
                if worth_caching(int(meta.get("nbytes", 0)), float(meta.get("compute_seconds", 0.0))):
                    cache_writes.put(key, value, meta)
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
            counts.warnings.extend((record["display"], record["fold"], message) for message in record.get("warnings", ()))
            progress.unit_done(record["unit"], failed, record.get("fit_seconds"),
                               timed_out=str(record.get("error", "")).startswith("UnitTimeout"))
    finally:
        writer.end_session(session)
    writer.compact()


class CacheWrites:
    """Stores a run's new artifacts. The cache is optional: when a write fails (a full disk, a quota)
    the unit that computed the artifact is still committed; the run says so once and stores no
    further artifacts (each later unit computes what it needs)."""

    def __init__(self, cache):
        self.cache, self.failed = cache, False

    def put(self, key: str, value, meta: dict) -> None:
        from malt.repository.files import WriteFailed

        if self.failed:
            return
        try:
            self.cache.put(key, value, meta)
        except WriteFailed as err:
            self.failed = True
            sys.stderr.write(f"warning: could not store the cached artifact {err.path} ({err.reason}); the run goes "
                             "on without caching (finished units are still stored)\n")


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
             threads: int | None, progress: Progress, unit_timeout: float | None = None):
    args = (plan.task, plan.options)
    if scheduler:
        yield from _dask_results(plan, todo, cache_path, scheduler, threads, progress, unit_timeout)
        return
    if unit_timeout is not None:
        yield from _timed_results(plan, todo, cache_path, jobs, threads, progress, unit_timeout)
        return
    if jobs == 1:
        for unit in todo:
            yield run_unit(plan.dataset, *args, unit, cache_path, threads, progress.reporter(unit.key))
        return
    # the first units run here and say what a unit costs (the first alone also pays warm-up: imports,
    # first reads, so a cheap one is sampled twice); workers start only if they pay
    start_cost = WORKER_START_SECONDS["fork" if _can_fork() else "loky"]
    seconds, sampled = float("inf"), 0
    while sampled < min(2, len(todo)) and (sampled == 0 or seconds < start_cost):
        start = time.perf_counter()
        yield run_unit(plan.dataset, *args, todo[sampled], cache_path, threads, progress.reporter(todo[sampled].key))
        seconds = min(seconds, time.perf_counter() - start)
        sampled += 1
    rest = todo[sampled:]
    fork = _can_fork()
    now = time.perf_counter()
    expected = sum(progress.cost(u.setting, now)[0] or seconds for u in rest)
    if expected < 2 * WORKER_START_SECONDS["fork" if fork else "loky"]:
        for unit in rest:
            yield run_unit(plan.dataset, *args, unit, cache_path, threads, progress.reporter(unit.key))
        return
    batches = _batches(rest, progress, jobs, seconds)
    if fork:
        yield from _forked_results(plan, batches, cache_path, jobs, threads, progress)
        return
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=jobs, return_as="generator_unordered")
    for outcomes in parallel(delayed(run_batch)(plan.dataset, *args, batch, cache_path, threads, jobs)
                             for batch in batches):
        yield from outcomes


def _batches(units: list[Unit], progress: Progress, jobs: int, sampled: float) -> list[list[Unit]]:
    """Units of one setting in batches of about BATCH_SECONDS (cheap units travel together, one pickled
    dataset per batch), at least four batches per worker, a setting of unknown cost one by one; in the
    order of their first units, so every setting's first unit starts early and says what it costs."""
    now = time.perf_counter()
    settings: dict[tuple, list[Unit]] = {}
    for unit in units:
        settings.setdefault(unit.setting, []).append(unit)
    batches = []
    for setting, group in settings.items():
        cost = progress.cost(setting, now)[0]
        cost = sampled if cost is None and len(settings) == 1 else cost
        size = 1 if cost is None else max(1, min(int(BATCH_SECONDS / max(cost, 1e-6)), math.ceil(len(group) / (4 * jobs))))
        batches += [group[i:i + size] for i in range(0, len(group), size)]
    order = {unit.key: i for i, unit in enumerate(units)}
    return sorted(batches, key=lambda batch: order[batch[0].key])  # each setting's first unit early (measured_first)


POLL_SECONDS = 0.2
"""How often the driver looks at its workers' progress reports while waiting for units."""


class UnitReporter:
    """A unit's ``ctx.progress`` in a worker: (unit key, fraction, message) through ``send`` — its start,
    then a report once ``SECONDS`` have passed or the fraction moved by ``STEP`` (a report never fails
    the unit)."""

    SECONDS = 0.25
    STEP = 0.2

    def __init__(self, key: str, send):
        self.key, self.send, self.last, self.sent = key, send, float("-inf"), -1.0

    def __call__(self, fraction: float, message: str = "") -> None:
        now = time.monotonic()
        if fraction > 0 and now - self.last < self.SECONDS and fraction - self.sent < self.STEP:
            return
        self.last, self.sent = now, fraction
        try:
            self.send((self.key, float(fraction), str(message)))
        except Exception:
            pass


_FORKED_PLAN: "Plan | None" = None
"""The plan a forked worker inherits from the driver (so the dataset is never pickled to it)."""
_FORKED_CHANNEL = None
"""The queue a forked worker's units report their progress through."""


def _forked_results(plan: Plan, batches: list[list[Unit]], cache_path: str | None, jobs: int, threads: int | None,
                    progress: Progress):
    """Batches on `jobs` processes forked from this one, outcomes in the order they finish; if the
    driver stops consuming (an error while committing), batches not yet started are cancelled."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    global _FORKED_PLAN, _FORKED_CHANNEL
    context = multiprocessing.get_context("fork")
    _FORKED_PLAN, _FORKED_CHANNEL = plan, context.SimpleQueue()
    channel = _FORKED_CHANNEL
    pool = ProcessPoolExecutor(jobs, mp_context=context)
    try:
        waiting = {pool.submit(_run_forked_batch, batch, cache_path, threads, jobs) for batch in batches}
        while waiting:
            done, waiting = wait(waiting, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
            while not channel.empty():
                progress.report(*channel.get())
            for future in done:
                yield from future.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        _FORKED_PLAN = _FORKED_CHANNEL = None


def _run_forked_batch(units: list[Unit], cache_path: str | None, threads: int | None, jobs: int) -> list[Outcome]:
    plan = _FORKED_PLAN
    return run_batch(plan.dataset, plan.task, plan.options, units, cache_path, threads, jobs, _FORKED_CHANNEL.put)


def run_batch(dataset, task: Task, options: Params, units: list[Unit], cache_path: str | None, threads: int | None,
              jobs: int, send=None) -> list[Outcome]:
    """Several units in one worker call (one transfer of the dataset for all of them); ``send``
    carries their progress reports to the driver."""
    return [run_unit(dataset, task, options, unit, cache_path, threads,
                     None if send is None else UnitReporter(unit.key, send), jobs) for unit in units]


def timeout_error(limit: float) -> str:
    from malt.engine.progress import duration

    return (f"UnitTimeout: the unit ran longer than its limit of {duration(limit)} (--unit-timeout) and was stopped; "
            "the other units went on")


def _timed_results(plan: Plan, todo: list[Unit], cache_path: str | None, jobs: int, threads: int | None,
                   progress: Progress, limit: float):
    """Each unit in a child process of its own (forked when that is safe, else spawned), at most ``jobs``
    at once: a child still running ``limit`` seconds after it started is killed — whatever it is doing,
    BLAS calls holding the GIL included — and its unit fails with that reason; the others go on."""
    import multiprocessing
    from multiprocessing.connection import wait as ready

    context = multiprocessing.get_context("fork" if _can_fork() else "spawn")
    channel = context.SimpleQueue()
    waiting = list(todo)
    running: dict = {}  # receiving end -> (process, unit, deadline)
    shared = _worker_cache(cache_path) if cache_path is not None else None
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                unit = waiting.pop(0)
                receive, send = context.Pipe(duplex=False)
                child = context.Process(target=_run_timed_unit, daemon=True,
                                        args=(plan.dataset, plan.task, plan.options, unit, cache_path, threads, jobs,
                                              send, channel))
                child.start()
                send.close()
                running[receive] = (child, unit, time.monotonic() + limit)
            answered = ready(list(running), timeout=POLL_SECONDS)
            while not channel.empty():
                progress.report(*channel.get())
            now = time.monotonic()
            for receive in list(running):
                child, unit, deadline = running[receive]
                if receive in answered:
                    try:
                        outcome = receive.recv()
                    except (EOFError, OSError):
                        child.join(5)
                        outcome = failed_outcome(unit, f"LostUnit: the unit's process ended without a result (exit "
                                                       f"code {child.exitcode}); `malt rerun` retries it",
                                                 limit - (deadline - now))
                elif now > deadline:
                    child.kill()
                    outcome = failed_outcome(unit, timeout_error(limit), limit)
                else:
                    continue
                child.join()
                receive.close()
                del running[receive]
                if shared is not None:  # later children start with what this one computed
                    for key, (value, _) in outcome.new_cache.items():
                        shared.remember(key, value)
                yield outcome
    finally:
        for receive, (child, _, _) in running.items():
            child.kill()
            child.join()
            receive.close()


def _run_timed_unit(dataset, task: Task, options: Params, unit: Unit, cache_path: str | None, threads: int | None,
                    jobs: int, send, channel) -> None:
    """In the child of `_timed_results`: run the unit, send its outcome back."""
    _die_with_parent()
    outcome = run_unit(dataset, task, options, unit, cache_path, threads, UnitReporter(unit.key, channel.put), jobs)
    send.send(outcome)
    send.close()


class DaskEvents:
    """Sends a unit's progress reports from a Dask worker to the driver (an event topic of the scheduler)."""

    def __init__(self, topic: str):
        self.topic = topic

    def __call__(self, message) -> None:
        from distributed import get_worker

        get_worker().log_event(self.topic, list(message))


def _dask_results(plan: Plan, todo: list[Unit], cache_path: str | None, scheduler: str, threads: int | None,
                  progress: Progress, limit: float | None = None):
    try:
        from dask.distributed import Client
    except ImportError:
        raise MaltError("--scheduler needs Dask: install the optional extra with `pip install 'malt[distributed]'`.")
    with _quiet_dask_logs():
        yield from _dask_session(Client, plan, todo, cache_path, scheduler, threads, progress, limit)


@contextlib.contextmanager
def _quiet_dask_logs():
    """Dask's client logs its own tracebacks when the scheduler goes away (reconnect attempts); malt
    turns that event into one error line, so Dask's log handlers stay quiet while malt uses it."""
    import logging

    silence = logging.Filter("malt.never")  # passes no record of the distributed loggers
    handlers = {h for name, logger in list(logging.root.manager.loggerDict.items())
                if name.split(".")[0] == "distributed" and isinstance(logger, logging.Logger)
                for h in logger.handlers}
    for handler in handlers:
        handler.addFilter(silence)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(silence)


def _dask_session(Client, plan: Plan, todo: list[Unit], cache_path: str | None, scheduler: str, threads: int | None,
                  progress: Progress, limit: float | None):
    """Units on the cluster, outcomes as they finish; the units' progress reports arrive through a
    scheduler event topic, and a unit past ``limit`` seconds is stopped (`_stop_on_cluster`)."""
    import collections
    import secrets

    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as err:
        raise MaltError(f"Cannot reach the Dask scheduler at {scheduler} ({str(err).splitlines()[0]}); start it with "
                        "`dask scheduler` or check the address (tcp://HOST:PORT).") from None
    try:
        progress.jobs = max(1, sum(client.nthreads().values()))
        topic = f"malt-progress-{secrets.token_hex(6)}"
        events: collections.deque = collections.deque()
        client.subscribe_topic(topic, lambda event: events.append(event[1]))
        dataset = client.scatter(plan.dataset, broadcast=True)
        waiting = [client.submit(run_unit, dataset, plan.task, plan.options, unit, cache_path, threads,
                                 UnitReporter(unit.key, DaskEvents(topic)), key=f"malt-{unit.key}", pure=False,
                                 retries=2)
                   for unit in todo]
        units = dict(zip((f.key for f in waiting), todo))
        started: dict[str, float] = {}
        while waiting:
            done = [f for f in waiting if f.done()]
            while events:
                key, fraction, message = events.popleft()
                started.setdefault(key, time.monotonic())
                progress.report(key, fraction, message)
            if limit is not None:
                finished = {f.key for f in done}
                late = [f for f in waiting if f.key not in finished and units[f.key].key in started
                        and time.monotonic() - started[units[f.key].key] > limit]
                for future in late:
                    _stop_on_cluster(client, future)
                    waiting = [f for f in waiting if f.key != future.key]
                    yield failed_outcome(units[future.key], timeout_error(limit), limit)
            if not done:
                time.sleep(POLL_SECONDS)
                continue
            finished = {id(f) for f in done}
            waiting = [f for f in waiting if id(f) not in finished]
            for future in done:
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


def _stop_on_cluster(client, future) -> None:
    """Cancel a unit on the cluster; a worker thread cannot be interrupted, so the worker running it is
    restarted by its nanny (its other units are rescheduled: Dask retries lost tasks)."""
    try:
        running_on = [worker for worker, keys in client.processing().items() if future.key in keys]
        future.cancel()
        if running_on:
            client.restart_workers(running_on, timeout=30)
    except Exception:  # a worker without a nanny cannot be restarted: the result is dropped all the same
        pass
