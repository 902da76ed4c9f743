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
