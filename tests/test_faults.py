"""Faults that must never lose finished work: a write error mid-run (a file-size limit makes the
kernel refuse the write, as a full disk would) and damaged repository files."""
from __future__ import annotations

import os
import resource
import signal
import subprocess

from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import ROOT, malt_cmd, run_malt

ARGS = ["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--param", "C=0.1,0.3,1,3", "--param", "select=none",
        "--quiet"]


def _limit_file_size():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16_000, 16_000))


def _frame(path):
    return ResultSet.from_repository(Repository(path)).frame.sort_values(["display", "fold", "metric"])


def test_write_error_stops_with_a_clear_message_and_loses_nothing(tmp_path):
    repo = tmp_path / "repo"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(malt_cmd(*ARGS, "--repo", str(repo)), capture_output=True, text=True, env=env,
                            cwd=ROOT, preexec_fn=_limit_file_size, timeout=120)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: Could not write") and "malt rerun" in last
    exp = [p.name for p in (repo / "experiments").iterdir()][0]
    committed, _, _ = Repository(repo).experiment(exp).read_log()
    assert len(committed) > 0  # what was committed before the failure is still there
    run_malt("rerun", "--repo", str(repo), "--quiet")
    reference = tmp_path / "reference"
    run_malt(*ARGS, "--repo", str(reference))
    assert _frame(repo)["value"].tolist() == _frame(reference)["value"].tolist()


def _flip(path, offset, bit=0):
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def test_a_damaged_unit_record_is_detected_named_and_repairable(tmp_path):
    repo = tmp_path / "repo"
    exp = run_malt(*ARGS, "--repo", str(repo)).stdout.strip()
    log = repo / "experiments" / exp / "units.log"
    data = log.read_bytes()
    _flip(log, data.index(b'"fold":3') + 3)  # inside one unit record: its digest no longer matches
    shown = run_malt("show", exp, "--repo", str(repo), check=False)
    assert f"{log}: damaged bytes at offset" in shown.stderr and "malt repair" in shown.stderr
    assert "19/20" in run_malt("results", "--repo", str(repo)).stdout
    repaired = run_malt("repair", "--experiment", exp, "--repo", str(repo))
    assert "units.log: 1 damaged stretch(es) dropped" in repaired.stdout
    assert "damaged" not in run_malt("show", exp, "--repo", str(repo)).stderr
    run_malt("rerun", "--repo", str(repo), "--quiet")
    assert "20/20" in run_malt("results", "--repo", str(repo)).stdout


def test_a_truncated_log_keeps_every_complete_record(tmp_path):
    """A log cut short (a writer killed mid-append) loses only the record that was being written."""
    repo = tmp_path / "repo"
    exp = run_malt(*ARGS, "--repo", str(repo)).stdout.strip()
    log = repo / "experiments" / exp / "units.log"
    data = log.read_bytes()
    log.write_bytes(data[:data.rindex(b'"fold":')])  # the log now ends inside its last unit record
    shown = run_malt("show", exp, "--repo", str(repo))
    assert "damaged" not in shown.stderr  # a torn write was never committed: nothing is damaged
    assert "19/20" in run_malt("results", "--repo", str(repo)).stdout
    run_malt("rerun", "--repo", str(repo), "--quiet")
    assert "20/20" in run_malt("results", "--repo", str(repo)).stdout
