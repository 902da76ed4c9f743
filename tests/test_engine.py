"""The engine against a real repository: skip-if-stored, cache reuse, rerun, failures, parallel."""
from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp

import tests.plugins.counting  # noqa: F401  (registers test-counting)
from malt import registry
from malt.engine import runner as engine
from malt.engine.progress import Progress
from malt.datasets.open import open_dataset
from malt.repository.store import Repository
from malt.results import ResultSet
from malt.tasks import get_task


def _run(repo_path, algo="test-counting", params=None, task="missing", jobs=1, force=(), cache=True, **task_opts):
    repo = Repository(repo_path)
    dataset = open_dataset("synthetic-multilabel")
    t = get_task(task)
    cls = registry.get(algo)
    plan = engine.Plan(dataset, {"kind": "catalogue", "name": dataset.name}, t, t.Params(**task_opts),
                       [(cls, cls.Params(**(params or {})))])
    counts = engine.execute(repo, plan, jobs=jobs, force=set(force), quiet=True, cache=cache)
    return plan.experiment, counts.as_dict()


@pytest.fixture
def counter(tmp_path, monkeypatch):
    path = tmp_path / "counter.txt"
    monkeypatch.setattr(tests.plugins.counting, "COUNTER", str(path))
    engine._WORKER_CACHES.clear()
    return lambda: path.read_text().splitlines() if path.exists() else []


def test_three_invocations_one_computation(repo_path, counter):
    for _ in range(3):
        exp, counts = _run(repo_path)
    runs = [line for line in counter() if line.startswith("run")]
    assert len(runs) == 5 and counts == {"planned": 5, "stored": 5, "ran": 0, "rescored": 0, "failed": 0}
    assert counter().count("kernel") == 1  # one artifact shared by all folds


def test_an_expensive_artifact_survives_the_process_through_the_repository(repo_path, counter):
    _run(repo_path, params={"kernel_seconds": 0.05})
    engine._WORKER_CACHES.clear()  # a new process: only the repository remembers
    _run(repo_path, params={"kernel_seconds": 0.05, "sleep": 0.001})  # a new setting, so its units run
    assert counter().count("kernel") == 1


def test_without_the_cache_every_unit_computes_its_own_artifacts(repo_path, counter):
    """`malt cv --no-cache` (timing studies): five folds compute the kernel five times, none is stored."""
    _run(repo_path, params={"kernel_seconds": 0.05}, cache=False)
    assert counter().count("kernel") == 5
    assert Repository(repo_path).cache.entries() == []


def test_inductive_units_record_their_train_and_predict_seconds(repo_path):
    exp, counts = _run(repo_path, algo="mlknn", task="multilabel", folds=2)
    d = ResultSet.from_repository(Repository(repo_path)).diagnostics
    seconds = d[d["diagnostic"].isin(["train_cpu_seconds", "predict_cpu_seconds"])]
    assert counts["ran"] == 2 and len(seconds) == 4 and (seconds["value"] >= 0).all()


def test_only_artifacts_dearer_than_their_storage_are_stored():
    """Reading an artifact back must not cost more than computing it again (issue 18): a 72 MB
    distance matrix computed in 0.3 s is recomputed, one computed in 2 s is stored."""
    from malt.repository.cache import worth_caching

    assert not worth_caching(72_000_000, 0.3) and worth_caching(72_000_000, 2.0)
    assert not worth_caching(72, 0.001) and worth_caching(72, 0.05)


def test_changed_version_reruns(repo_path, counter, monkeypatch):
    _run(repo_path)
    monkeypatch.setattr(tests.plugins.counting.CountingMean, "version", "2")
    _, counts = _run(repo_path)
    assert counts["ran"] == 5
    current = ResultSet.from_repository(Repository(repo_path))
    assert current.stale == 5 and set(current.frame["version"]) == {"2"}
    everything = ResultSet.from_repository(Repository(repo_path), include_stale=True)
    assert sorted(everything.frame["version"].unique()) == ["1", "2"]


def test_failed_units_are_recorded_and_retried(repo_path, counter):
    exp, counts = _run(repo_path, params={"fail_fold": 2})
    assert counts["failed"] == 1 and counts["ran"] == 5
    rs = ResultSet.from_repository(Repository(repo_path))
    assert len(rs.failed) == 1 and "planned failure" in rs.failed["error"].iloc[0]
    _, counts = _run(repo_path, params={"fail_fold": 2})
    assert counts == {"planned": 5, "stored": 4, "ran": 1, "rescored": 0, "failed": 1}


def test_force_recomputes_only_that_algorithm(repo_path, counter):
    _run(repo_path)
    _, counts = _run(repo_path, force=("test-counting",))
    assert counts["ran"] == 5


def test_parallel_and_serial_store_identical_numbers(tmp_path, counter):
    serial, _ = _run(tmp_path / "a", algo="mllr", task="multilabel", missing=0.2)
    parallel, _ = _run(tmp_path / "b", algo="mllr", task="multilabel", jobs=2, missing=0.2)
    a = ResultSet.from_repository(Repository(tmp_path / "a")).frame.sort_values(["fold", "metric"])
    b = ResultSet.from_repository(Repository(tmp_path / "b")).frame.sort_values(["fold", "metric"])
    assert serial == parallel
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())
    np.testing.assert_array_equal(a["seed"].to_numpy(), b["seed"].to_numpy())


def test_seeded_randomness_is_reproducible(tmp_path, counter):
    _run(tmp_path / "a")
    _run(tmp_path / "b")
    a = ResultSet.from_repository(Repository(tmp_path / "a")).frame.sort_values(["fold", "metric"])
    b = ResultSet.from_repository(Repository(tmp_path / "b")).frame.sort_values(["fold", "metric"])
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())


def test_a_parameter_added_at_its_default_reruns_nothing(repo_path, counter, monkeypatch):
    """A plugin gains a parameter whose default keeps the old behaviour (no version bump): the
    stored units stand, and `malt show` counts each fold once."""
    from dataclasses import dataclass

    from malt.params import Interval, param

    exp, _ = _run(repo_path, params={"sleep": 0.001})

    @dataclass(frozen=True, kw_only=True)
    class Grown(tests.plugins.counting.CountingParams):
        extra: int = param(3, "a parameter added in a later release", Interval(0, None))

    monkeypatch.setattr(tests.plugins.counting.CountingMean, "Params", Grown)
    again, counts = _run(repo_path, params={"sleep": 0.001})
    assert again == exp and counts["ran"] == 0 and counts["stored"] == 5
    rs = ResultSet.from_repository(Repository(repo_path))
    assert rs.summary()["folds"].tolist() == [5] and rs.completeness["done"].tolist() == [5]


def test_a_version_bump_never_reuses_its_old_artifact(repo_path, counter, monkeypatch):
    _run(repo_path, params={"kernel_seconds": 0.05})
    engine._WORKER_CACHES.clear()
    monkeypatch.setattr(tests.plugins.counting.CountingMean, "version", "2")
    _run(repo_path, params={"kernel_seconds": 0.05})
    assert counter().count("kernel") == 2  # the artifact's key carries its producer's version


def test_a_scoring_option_reuses_stored_predictions(repo_path, counter):
    """precision@k's k only changes scoring: a new k is a new experiment scored from the stored
    predictions, without refitting, and equals a fresh run's numbers."""
    from malt.datasets.dataset import Dataset

    R = sp.random(40, 30, density=0.3, random_state=1, format="coo")
    R.data = np.ceil(R.data * 5)
    data = Dataset("tiny-ratings", {"ratings": R})
    task = get_task("ratings")
    algo = registry.get("test-popular")

    def run(path, **options):
        plan = engine.Plan(data, {"kind": "test"}, task, task.Params(runs=2, **options), [(algo, algo.Params())])
        return plan, engine.execute(Repository(path), plan, quiet=True)

    first, _ = run(repo_path, k=5)
    second, counts = run(repo_path, k=10)
    assert first.experiment != second.experiment and counts.ran == 0 and counts.rescored == 2
    assert [line for line in counter() if line.startswith("ratings")] == ["ratings 0", "ratings 1"]
    _, fresh = run(repo_path.parent / "fresh", k=10)
    a = ResultSet.from_repository(Repository(repo_path), [second.experiment]).frame.sort_values(["fold", "metric"])
    b = ResultSet.load(repo_path.parent / "fresh").frame.sort_values(["fold", "metric"])
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())


def test_a_long_unit_reports_its_own_progress_and_an_eta(repo_path, counter, monkeypatch, capsys):
    """Inner loops report through ctx.progress; the engine shows the running unit's share and an ETA
    (one line per update when stderr is not a terminal and MALT_PROGRESS_SECONDS=0)."""
    from malt import api

    monkeypatch.setenv("MALT_PROGRESS_SECONDS", "0")
    api.cv("test-counting", "synthetic-multilabel", task="missing", params={"steps": 4, "sleep": 0.01},
           repo=repo_path, quiet=False, folds=2)
    err = capsys.readouterr().err
    assert "current unit 50% (step 2/4)" in err and "current unit 100% (step 4/4)" in err
    assert "1/2 units" in err and "ETA" in err


def test_the_eta_adds_what_each_remaining_unit_of_each_setting_costs():
    """Measured in this run, else known from the repository, else from a running unit's own reports;
    a setting nothing is known about gives a lower bound."""
    cheap, slow, new = ("test-counting", "cheap"), ("test-counting", "slow"), ("other", "x")
    units = [(f"c{i}", cheap, "") for i in range(4)] + [(f"s{i}", slow, "") for i in range(2)]
    progress = Progress(units, "x", quiet=True, prior={slow: 10.0})
    progress.report("c0", 0.0)
    progress.running["c0"].started -= 1.0  # it started a second ago
    progress.unit_done("c0")
    eta, kind = progress.eta(time.perf_counter())
    assert eta == pytest.approx(3 * 1.0 + 2 * 10.0, abs=0.01) and kind == "exact"
    progress.report("s0", 0.25)
    progress.running["s0"].started -= 4.0  # 4 s into a setting whose units took 10 s: 6 s to go
    eta, kind = progress.eta(time.perf_counter())
    assert eta == pytest.approx(3 * 1.0 + 6.0 + 10.0, abs=0.05) and kind == "exact"
    progress.running["s0"].started -= 8.0  # 12 s in, past what its units took: its own report (a quarter) rules
    eta, kind = progress.eta(time.perf_counter())
    assert eta == pytest.approx(3 * 1.0 + 36.0 + 10.0, abs=0.05) and kind == "exact"
    parallel = Progress(units + [("n0", new, "")], "x", quiet=True, jobs=2, prior={slow: 10.0, cheap: 1.0})
    eta, kind = parallel.eta(time.perf_counter())
    assert kind == "bound" and eta == pytest.approx((4 * 1.0 + 2 * 10.0) / 2)
    limited = Progress(units, "x", quiet=True, prior={slow: 10.0, cheap: 1.0}, limit=2.0)  # --unit-timeout 2s
    assert limited.eta(time.perf_counter()) == (pytest.approx(4 * 1.0 + 2 * 2.0), "exact")


def _seconds(text: str) -> float:
    import re

    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?", text)
    return 3600 * float(m[1] or 0) + 60 * float(m[2] or 0) + float(m[3] or 0)


def _progress_lines(err: str) -> tuple[list[tuple[float, float]], float]:
    """(seconds elapsed, ETA) of every progress line with an exact ETA, and the elapsed time of the last line."""
    import re

    etas = [(_seconds(a), _seconds(b)) for a, b in re.findall(r"; (\S+) elapsed, ETA ([\d.hms]+)$", err,
                                                                re.MULTILINE)]
    ends = [_seconds(a) for a in re.findall(r"; (\S+) elapsed", err)]
    return etas, max(ends)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("jobs", [1, 2])
def test_the_eta_of_a_run_mixing_cheap_and_expensive_units_is_within_two_fold_of_the_truth(repo_path, monkeypatch,
                                                                                          capsys, jobs):
    """Six units of 20 ms and six of 1 s (reporting five steps each): an ETA within two seconds, and every
    ETA within 2x of the time that was in fact left (an average over all finished units was 6-19x optimistic)."""
    monkeypatch.setenv("MALT_PROGRESS_SECONDS", "0")
    dataset = open_dataset("synthetic-multilabel")
    task, algo = get_task("missing"), registry.get("test-counting")
    plan = engine.Plan(dataset, {"kind": "catalogue", "name": dataset.name}, task, task.Params(folds=6),
                       [(algo, algo.Params(sleep=0.02)), (algo, algo.Params(sleep=0.2, steps=5))])
    engine.execute(Repository(repo_path), plan, jobs=jobs, quiet=False)
    etas, end = _progress_lines(capsys.readouterr().err)
    assert etas and min(t for t, _ in etas) < 2.0, etas[:5]
    checked = [(t, eta, end - t) for t, eta in etas if end - t >= 1.0]
    assert len(checked) >= 3, etas
    for t, eta, truth in checked:
        assert truth / 2 <= eta <= 2 * truth, (t, eta, truth, etas)


def test_reading_results_imports_no_algorithm_and_running_one_imports_only_its_module(tmp_path):
    """`malt show` works from the store and the task declarations; `malt cv --algo mllr` imports the
    one module declaring mllr, not the thirty others (nor scipy.stats)."""
    import subprocess
    import sys

    from tests.helpers import ROOT

    repo = tmp_path / "repo"
    exp = api_cv("mllr", repo)
    probe = ("import sys; from malt.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "mods = sorted(m for m in sys.modules if m.startswith('malt.algorithms.'))\n"
             "print(mods, 'scipy.stats' in sys.modules, file=sys.stderr)")
    for args, allowed in ((["show", exp], []), (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel",
                                                   "--folds", "2", "--quiet"], ["malt.algorithms.baselines"])):
        out = subprocess.run([sys.executable, "-c", probe, *args, "--repo", str(repo)], capture_output=True,
                             text=True, cwd=ROOT)
        assert out.stderr.strip().splitlines()[-1] == f"{allowed} False", out.stderr


def api_cv(algorithm, repo):
    from malt import api

    return api.cv(algorithm, "synthetic-multilabel", repo=repo, folds=2).experiment


@pytest.mark.timeout(120)
def test_jobs_sample_a_costly_first_unit_once_then_share_the_rest(tmp_path, counter):
    """A unit that costs more than starting the workers is not sampled twice in the driver: after the
    first, every remaining unit runs on the workers (so with --jobs 2 three such units take two
    rounds, not three); a cheap first unit is sampled twice (its first run pays warm-up)."""
    import os

    def driver_units(path, sleep):
        exp, counts = _run(path, params={"sleep": sleep}, jobs=2, folds=3)
        assert counts["ran"] == 3
        records, _, _ = Repository(path).experiment(exp).read_log()
        return sum(r["pid"] == os.getpid() for r in records.values())

    start_cost = engine.WORKER_START_SECONDS["fork" if engine._can_fork() else "loky"]  # loky if a thread runs
    assert driver_units(tmp_path / "costly", 2 * start_cost) == 1
    assert driver_units(tmp_path / "cheap", 0.0) == 3  # all in process: workers would not pay


@pytest.mark.timeout(60)
def test_the_repository_remembers_what_a_setting_costs_so_the_eta_is_there_from_the_start(repo_path, monkeypatch,
                                                                                          capsys):
    """Units of a setting run before on the same data (another experiment) say what the next ones cost:
    the very first progress line of a new run already has an exact ETA, within 2x of the truth."""
    monkeypatch.setenv("MALT_PROGRESS_SECONDS", "0")
    dataset = open_dataset("synthetic-multilabel")
    task, algo = get_task("missing"), registry.get("test-counting")

    def run(folds):
        plan = engine.Plan(dataset, {"kind": "catalogue", "name": dataset.name}, task, task.Params(folds=folds),
                           [(algo, algo.Params(sleep=0.3))])
        engine.execute(Repository(repo_path), plan, quiet=False)
        return capsys.readouterr().err

    run(2)
    err = run(5)
    first = err.splitlines()[0]
    assert "0/5 units" in first and " ETA " in first and "ETA >" not in first and "ETA ~" not in first, first
    etas, end = _progress_lines(err)
    assert etas[0][0] < 0.5 and end / 2 <= etas[0][1] <= 2 * end, (etas[0], end)
