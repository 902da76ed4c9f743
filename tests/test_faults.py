"""Faults that must never lose finished work: a write error mid-run (a file-size limit makes the
kernel refuse the write, as a full disk would) and damaged repository files."""
from __future__ import annotations

import os
import resource
import signal
import subprocess

import h5py

from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import ROOT, malt_cmd, run_malt

ARGS = ["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--param", "C=0.1,0.3,1,3", "--quiet"]


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
    committed = Repository(repo).units(exp)
    assert len(committed) > 0  # what was committed before the failure is still there
    run_malt("rerun", "--repo", str(repo), "--quiet")
    reference = tmp_path / "reference"
    run_malt(*ARGS, "--repo", str(reference))
    assert _frame(repo)["value"].tolist() == _frame(reference)["value"].tolist()


def test_damaged_results_file_is_detected_named_and_repairable(tmp_path):
    repo = tmp_path / "repo"
    run_malt(*ARGS, "--repo", str(repo))
    exp = [p.name for p in (repo / "experiments").iterdir()][0]
    results = repo / "experiments" / exp / "results.h5"
    with h5py.File(results, "r+") as f:  # flip one record's content, keeping valid HDF5
        texts = f["units"].asstr()[()]
        f["units"][3] = texts[3].replace('"fold', '"fXld')
    shown = run_malt("show", exp, "--repo", str(repo), check=False)
    assert f"{results}: unit record 3 is damaged" in shown.stderr
    run_malt("repair", "--experiment", exp, "--repo", str(repo))
    listing = run_malt("results", "--repo", str(repo)).stdout
    assert "19/20" in listing
    run_malt("rerun", "--repo", str(repo), "--quiet")
    assert "20/20" in run_malt("results", "--repo", str(repo)).stdout


def test_truncated_results_file_leaves_the_journal_readable(tmp_path):
    repo = tmp_path / "repo"
    run_malt(*ARGS, "--repo", str(repo))
    exp = [p.name for p in (repo / "experiments").iterdir()][0]
    results = repo / "experiments" / exp / "results.h5"
    results.write_bytes(results.read_bytes()[:500])
    shown = run_malt("show", exp, "--repo", str(repo), check=False)
    assert str(results) in shown.stderr and "malt repair" in shown.stderr
    run_malt("repair", "--experiment", exp, "--repo", str(repo))
    run_malt("rerun", "--repo", str(repo), "--quiet")
    assert "20/20" in run_malt("results", "--repo", str(repo)).stdout
