"""kill -9 a running `malt cv` at random moments; `malt rerun` then completes and the stored numbers
equal an uninterrupted run's."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import time

import pandas as pd

from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import ROOT, malt_cmd, run_malt

ARGS = ["cv", "--algo", "test-counting", "--dataset", "synthetic-multilabel", "--task", "missing",
        "--param", "sleep=0.05,0.06,0.07,0.08", "--quiet"]


def _table(path) -> pd.DataFrame:
    frame = ResultSet.from_repository(Repository(path)).frame
    return frame.sort_values(["display", "fold", "metric"])[["display", "fold", "metric", "value", "seed"]]


def test_kill_minus_nine_then_rerun_equals_uninterrupted(tmp_path):
    reference = tmp_path / "reference"
    run_malt(*ARGS, "--repo", str(reference))
    crashed = tmp_path / "crashed"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rng = random.Random(7)
    kills = 0
    for attempt in range(4):
        proc = subprocess.Popen(malt_cmd(*ARGS, "--repo", str(crashed)), env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.monotonic()
        while not (crashed / "experiments").exists() and proc.poll() is None and time.monotonic() - started < 60:
            time.sleep(0.02)  # start-up time varies with load: kill only once units are being committed
        time.sleep(rng.uniform(0.0, 1.2))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if crashed.exists():
            # whatever was committed must stay readable after every kill
            ResultSet.from_repository(Repository(crashed))
    assert kills >= 1
    run_malt("rerun", "--repo", str(crashed), "--quiet")
    assert not list(crashed.rglob(".*.tmp"))  # half-written files of killed writers are swept
    pd.testing.assert_frame_equal(_table(reference).reset_index(drop=True), _table(crashed).reset_index(drop=True))
    assert len(_table(crashed)) == 20 * 1  # 4 settings × 5 folds × one metric (error)


def _kill_during(args, repo, seconds, env):
    proc = subprocess.Popen(malt_cmd(*args, "--repo", str(repo)), env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()


def test_kill_minus_nine_during_rescore_and_cache_clear_loses_nothing(tmp_path):
    repo = tmp_path / "repo"
    grid = [*ARGS[:-1], "--param", "kernel_seconds=0.05", "--param", "kernel_size=300"]
    run_malt(*grid, "--repo", str(repo))
    expected = _table(repo)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rng = random.Random(3)
    for _ in range(3):
        _kill_during(["rescore"], repo, rng.uniform(0.5, 2.0), env)
        pd.testing.assert_frame_equal(_table(repo).reset_index(drop=True), expected.reset_index(drop=True))
        _kill_during(["cache", "clear"], repo, rng.uniform(0.3, 1.5), env)
        pd.testing.assert_frame_equal(_table(repo).reset_index(drop=True), expected.reset_index(drop=True))
    run_malt("rescore", "--repo", str(repo))
    new_setting = [*ARGS[:-3], "--param", "sleep=0.051", "--param", "kernel_seconds=0.05", "--param", "kernel_size=300"]
    run_malt(*new_setting, "--repo", str(repo))  # a new setting recomputes what the cache lost
    exp = ResultSet.from_repository(Repository(repo)).frame["experiment"].iloc[0]
    assert "damaged" not in run_malt("show", exp, "--repo", str(repo)).stderr
    after = _table(repo)
    pd.testing.assert_frame_equal(after[after["display"].isin(expected["display"])].reset_index(drop=True),
                                  expected.reset_index(drop=True))


def _children(pid: int) -> set[int]:
    """Direct children of a live process (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return {int(p) for p in f.read().split()}
    except OSError:
        return set()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "\nState:\tZ" not in f.read()
    except OSError:
        return False


def test_kill_minus_nine_with_local_workers_loses_only_units_in_flight(tmp_path):
    """--jobs 2: the workers die with the driver (none is left running orphaned), what was committed
    stays readable, and `malt rerun` completes to the uninterrupted numbers."""
    args = [*ARGS, "--jobs", "2"]
    reference = tmp_path / "reference"
    run_malt(*ARGS, "--repo", str(reference))
    crashed = tmp_path / "crashed"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    workers: set[int] = set()
    proc = subprocess.Popen(malt_cmd(*args, "--repo", str(crashed)), env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while not workers and proc.poll() is None and time.monotonic() - started < 60:
        workers = _children(proc.pid)
        time.sleep(0.01)
    assert workers, "the run never started worker processes"
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)
    ResultSet.from_repository(Repository(crashed))
    run_malt("rerun", "--repo", str(crashed), "--quiet")
    pd.testing.assert_frame_equal(_table(reference).reset_index(drop=True), _table(crashed).reset_index(drop=True))
