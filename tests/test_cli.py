"""The malt command as a user meets it: the tour of the README, and every bad input ending in one
clear line, a non-zero exit and an untouched repository."""
from __future__ import annotations

import fcntl
import os

import pytest
from click.testing import CliRunner

import tests.plugins.counting  # noqa: F401
from malt.cli import main
from tests.conftest import require_data
from tests.helpers import run_malt, snapshot


def invoke(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    result = invoke("cv", "--repo", str(path), "--algo", "column-mean", "--dataset", "synthetic-multilabel",
                    "--task", "missing", "--quiet")
    assert result.exit_code == 0, result.output
    return path


def test_cv_adds_an_algorithm_without_rerunning_the_other(repo):
    first = invoke("cv", "--repo", str(repo), "--algo", "mllr", "--dataset", "synthetic-multilabel", "--quiet")
    exp = first.output.strip().splitlines()[-1]
    second = invoke("cv", "--repo", str(repo), "--algo", "mllr", "--algo", "mlsvm", "--dataset",
                    "synthetic-multilabel", "--quiet")
    assert second.output.strip().splitlines()[-1] == exp
    assert "5 unit(s) run, 5 already stored" in second.output
    shown = invoke("show", "--repo", str(repo), exp)
    assert "mllr" in shown.output and "mlsvm" in shown.output and "one_error" in shown.output
    listing = invoke("results", "--repo", str(repo))
    assert "10/10" in listing.output
    assert invoke("show", "--repo", str(repo), exp, "--format", "csv", "--raw").output.count("\n") > 40


BAD_INPUTS = [
    (["cv", "--algo", "mlr", "--dataset", "synthetic-multilabel"], "Unknown algorithm 'mlr'. Did you mean 'mllr'"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabl"], "Unknown dataset"),
    (["cv", "--algo", "column-mean", "--dataset", "synthetic-multilabel", "--task", "multilabel"],
     "does not support the 'multilabel' task"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--param", "C=abc"], "'C' parameter of mllr"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--param", "C=-1"], "range (0, inf)"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--param", "gamma=1"], "parameter 'gamma'"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--missing", "1.5"], "range [0, 1)"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--missing", "-0.1"], "range [0, 1)"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--missing", "0.1", "--missing", "0.3"],
     "task option missing is given twice ('0.1', '0.3')"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--task-param", "missing=0.1", "--missing", "0.3"],
     "task option missing is given twice"),
    (["cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--param", "C=1", "--param", "C=2"],
     "to sweep it give the values once: --param C=1,2"),
    (["show", "no-such-experiment"], "Unknown experiment"),
]


@pytest.mark.parametrize("args,message", BAD_INPUTS)
def test_bad_input_one_line_nonzero_exit_repository_untouched(repo, args, message):
    before = snapshot(repo)
    result = CliRunner().invoke(main, [args[0], "--repo", str(repo), *args[1:]])
    assert result.exit_code == 2
    lines = [line for line in result.output.strip().splitlines() if line]
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.output
    assert snapshot(repo) == before


def test_malformed_arff_names_file_and_line(tmp_path):
    bad = tmp_path / "bad.arff"
    bad.write_text("@relation r\n@attribute a numeric\n@attribute b {0,1}\n@data\n1.0,0\n2.0\n")
    result = CliRunner().invoke(main, ["cv", "--repo", str(tmp_path / "r"), "--algo", "mllr", "--dataset",
                                       str(bad), "--labels", "1"])
    assert result.exit_code == 2 and f"{bad}, line 6" in result.output
    assert not (tmp_path / "r").exists()


def test_nan_features_are_refused(tmp_path):
    csv = tmp_path / "nan.csv"
    csv.write_text("a,b,class\n1,2,x\n3,?,y\n4,5,x\n")
    result = CliRunner().invoke(main, ["datasets", "import", "mine", str(csv), "--repo", str(tmp_path / "r")])
    assert result.exit_code == 2 and "NaN" in result.output and "--impute mean" in result.output
    ok = CliRunner().invoke(main, ["datasets", "import", "mine", str(csv), "--impute", "mean",
                                   "--repo", str(tmp_path / "r")])
    assert ok.exit_code == 0, ok.output
    shown = CliRunner().invoke(main, ["datasets", "show", "mine", "--repo", str(tmp_path / "r")])
    assert "3×2" in shown.output


def test_a_folder_that_is_not_a_repository_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    result = CliRunner().invoke(main, ["cv", "--repo", str(tmp_path), "--algo", "mllr", "--dataset",
                                       "synthetic-multilabel"])
    assert result.exit_code == 2 and "not a malt repository" in result.output
    assert snapshot(tmp_path) == before


def test_a_locked_repository_is_refused_with_a_clear_message(repo):
    before = snapshot(repo)
    fd = os.open(repo / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)  # what a whole-repository operation (migration) holds
    try:
        result = run_malt("cv", "--repo", str(repo), "--algo", "mllr", "--dataset", "synthetic-multilabel",
                          check=False)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("error: Repository") and "--wait" in result.stderr
    assert snapshot(repo) == before


def test_a_second_run_can_wait_for_the_lock(repo):
    import subprocess
    import time

    from tests.helpers import ROOT, malt_cmd

    fd = os.open(repo / ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    proc = subprocess.Popen(malt_cmd("cv", "--repo", str(repo), "--algo", "mllr", "--dataset",
                                     "synthetic-multilabel", "--wait", "--quiet"),
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    assert proc.poll() is None  # still queued behind the lock
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.strip().startswith("synthetic-multilabel-multilabel-")


def test_degenerate_folds_are_handled(tmp_path):
    csv = tmp_path / "ml.csv"
    rows = ["f1,f2,l1,l2"] + [f"{i},{i % 3},{int(i == 0)},{i % 2}" for i in range(20)]
    csv.write_text("\n".join(rows) + "\n")  # label l1 has a single positive: most folds see none
    result = CliRunner().invoke(main, ["cv", "--repo", str(tmp_path / "r"), "--algo", "mllr", "--dataset",
                                       str(csv), "--labels", "2", "--quiet"])
    assert result.exit_code == 0, result.output


def test_emotions_tour_with_real_data(tmp_path):
    require_data("multilabel/emotions/emotions-train.arff")
    shown = invoke("datasets", "show", "emotions")
    assert "593×72" in shown.output and "1.868" in shown.output
    result = invoke("cv", "--repo", str(tmp_path / "r"), "--algo", "mllr", "--dataset", "emotions",
                    "--missing", "0.3", "--quiet")
    assert result.exit_code == 0


def test_show_diagnostics_reports_what_each_run_recorded(tmp_path):
    path = str(tmp_path / "repo")
    exp = invoke("cv", "--repo", path, "--algo", "pmf", "--dataset", "synthetic-multilabel", "--task", "missing",
                 "--quiet").output.strip().splitlines()[-1]
    from malt.repository.store import Repository

    records = list(Repository(path).experiment(exp).read_log()[0].values())
    iterations = [r["diagnostics"]["iterations"] for r in records]
    shown = invoke("show", "--repo", path, exp, "--diagnostics")
    assert shown.exit_code == 0
    row = next(line for line in shown.output.splitlines() if line.startswith("iterations"))
    mean, std = sum(iterations) / len(iterations), float(__import__("numpy").std(iterations, ddof=1))
    assert row.split()[1:4] == [f"{mean:.1f}" if mean >= 10 else f"{mean:.2f}", "±",
                                f"{std:.1f}" if mean >= 10 else f"{std:.2f}"]
    assert "fit_seconds" in shown.output
    raw = invoke("show", "--repo", path, exp, "--diagnostics", "--format", "csv", "--raw").output
    assert raw.count("\n") >= 2 * len(records)


def test_a_run_whose_units_all_fail_exits_one_with_one_line_per_kind_of_failure(tmp_path):
    result = run_malt("cv", "--algo", "test-counting", "--param", "fail_fold=0,1", "--dataset", "synthetic-multilabel",
                      "--task", "missing", "--folds", "2", "--repo", tmp_path / "r", check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert any(line.strip().startswith("2 unit(s) failed: RuntimeError: planned failure") for line in lines)
    assert any("malt show" in line and "--failed" in line for line in lines)
    exp = result.stdout.strip()
    shown = run_malt("show", exp, "--failed", "--repo", tmp_path / "r")
    assert shown.stdout.count("planned failure") == 2
