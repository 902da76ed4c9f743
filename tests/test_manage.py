"""Experiments a researcher can manage and failures they can debug, through the real `malt` command:
`malt forget` (a setting, an algorithm, a whole experiment: safe, logged, nothing else touched),
experiment ids by unambiguous prefix, `--param` filters, repetitions per setting, tracebacks of
failed units and a per-unit time limit."""
from __future__ import annotations

import json
import time

import pytest

import tests.plugins.counting  # noqa: F401  (registers test-counting)
from malt import api
from malt.engine import runner as engine
from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import run_malt, snapshot


class _Result:
    def __init__(self, result):
        self.returncode, self.stdout, self.stderr = result.exit_code, result.stdout, result.stderr


def malt(*args, check: bool = True):
    """`malt ...` in this process (the test plugins are registered here); like `run_malt`'s result."""
    from click.testing import CliRunner

    from malt.cli import main

    result = _Result(CliRunner().invoke(main, [str(a) for a in args]))
    if check and result.returncode != 0:
        raise AssertionError(f"malt {' '.join(map(str, args))} failed ({result.returncode}):\n{result.stderr}")
    return result

CV = ["cv", "--algo", "test-counting", "--dataset", "synthetic-multilabel", "--task", "missing", "--folds", "3",
      "--quiet"]


def _two_experiments(repo):
    """Two settings in one experiment, a second experiment (other options) beside it; returns both ids."""
    first = malt(*CV, "--param", "sleep=0,0.001", "--repo", repo).stdout.strip()
    second = malt(*CV, "--missing", "0.3", "--repo", repo).stdout.strip()
    return first, second


def _displays(repo, experiment):
    return sorted(set(ResultSet.from_repository(Repository(repo), [experiment]).frame["display"]))


@pytest.mark.timeout(120)
def test_forget_a_setting_leaves_everything_else_as_it_was_and_is_logged(tmp_path):
    repo = tmp_path / "repo"
    first, second = _two_experiments(repo)
    other = snapshot(repo / "experiments" / second)
    kept = ResultSet.from_repository(Repository(repo), [first]).frame
    kept = kept[kept["display"] == "test-counting"].reset_index(drop=True)
    done = run_malt("forget", first[:-4], "--algo", "test-counting", "--param", "sleep=0.001", "--repo", repo)
    assert done.stdout.strip() == f"{first}: forgot test-counting[sleep=0.001] (3 unit record(s))"
    assert snapshot(repo / "experiments" / second) == other  # the other experiment: byte for byte
    after = ResultSet.from_repository(Repository(repo), [first])
    assert _displays(repo, first) == ["test-counting"] and after.stale == 0
    import pandas as pd

    pd.testing.assert_frame_equal(after.frame.reset_index(drop=True), kept)
    assert [item["display"] for item in Repository(repo).read_spec(first)["plan"]] == ["test-counting"]
    provenance = malt("show", first, "--provenance", "--repo", repo).stdout
    assert "- forget " in provenance and "forget " + first[:-4] in provenance
    assert "test-counting[sleep=0.001] (3 unit(s))" in provenance
    assert "0 unit(s) run, 3 already stored" in malt("rerun", "--experiment", first, "--repo", repo).stderr
    again = malt(*CV, "--param", "sleep=0.001", "--repo", repo)  # a forgotten setting asked for again: run again
    assert "3 unit(s) run, 0 already stored" in again.stderr


@pytest.mark.timeout(120)
def test_forget_the_whole_experiment_sets_its_folder_aside(tmp_path):
    repo = tmp_path / "repo"
    first, second = _two_experiments(repo)
    other = snapshot(repo / "experiments" / second)
    before = snapshot(repo / "experiments" / first)
    done = malt("forget", first, "--repo", repo)
    assert f"its folder is now {repo / 'forgotten' / first}" in done.stdout
    assert Repository(repo).experiments() == [second] and snapshot(repo / "experiments" / second) == other
    aside = snapshot(repo / "forgotten" / first)
    assert {k: v for k, v in aside.items() if k != "units.log"} == {k: v for k, v in before.items() if k != "units.log"}
    sessions = Repository(repo).experiment(second).read_log()[1]
    assert all(s.get("type") != "forget" for s in sessions)
    log = (repo / "forgotten" / first / "units.log").read_bytes()
    assert b'"type":"forget"' in log and b'"experiment":true' in log


def test_forget_refuses_what_it_cannot_find_and_changes_nothing(tmp_path):
    repo = tmp_path / "repo"
    first, _ = _two_experiments(repo)
    before = snapshot(repo)
    for args, message in ((["--algo", "mllr"], "has no setting of 'mllr'"),
                          (["--param", "sleep=0.5"], "No setting of experiment"),
                          (["--param", "nosuch=1"], "No setting of experiment")):
        result = malt("forget", first, *args, "--repo", repo, check=False)
        assert result.returncode == 2 and message in result.stderr and len(result.stderr.splitlines()) == 1
    assert malt("forget", "nosuch", "--repo", repo, check=False).returncode == 2
    assert snapshot(repo) == before


def test_a_forget_cut_short_after_its_first_step_shows_the_right_numbers_and_finishes_when_run_again(tmp_path):
    """The forget writes the plan without the setting first, then its record: a crash between the two leaves
    the setting's units stored but not shown (nothing wrong on screen), and the same command completes it."""
    repo = tmp_path / "repo"
    first, _ = _two_experiments(repo)
    files = Repository(repo).experiment(first)
    with files.writer() as writer:  # the first step of `forget`, as it writes it, then a crash
        spec = files.read_spec()
        writer.write_spec(dict(spec, plan=[p for p in spec["plan"] if p["display"] != "test-counting[sleep=0.001]"]))
    rs = ResultSet.from_repository(Repository(repo), [first])
    assert sorted(set(rs.frame["display"])) == ["test-counting"] and rs.completeness["done"].tolist() == [3]
    malt("forget", first, "--param", "sleep=0.001", "--repo", repo)
    assert len(Repository(repo).experiment(first).read_log()[0]) == 3
    assert ResultSet.from_repository(Repository(repo), [first]).stale == 0


def test_an_experiment_id_prefix_is_enough_and_an_ambiguous_one_is_refused(tmp_path):
    repo = tmp_path / "repo"
    first, second = _two_experiments(repo)
    common = "synthetic-multilabel-missing-"
    assert first[:len(common)] == second[:len(common)] and first[len(common)] != second[len(common)]
    shown = malt("show", first[:len(common) + 1], "--repo", repo).stdout
    assert shown == malt("show", first, "--repo", repo).stdout
    ambiguous = malt("show", common, "--repo", repo, check=False)
    assert ambiguous.returncode == 2 and first in ambiguous.stderr and second in ambiguous.stderr
    assert "give more of the id" in ambiguous.stderr
    assert malt("rerun", "--experiment", first[:len(common) + 1], "--repo", repo).returncode == 0
    assert f"{first}: 6 unit(s) rescored" in malt("rescore", "--experiment", first[:len(common) + 1],
                                                      "--repo", repo).stdout
    table = malt("table", repo, "--experiment", second[:len(common) + 1], "--format", "csv").stdout
    rows = table.splitlines()[1:]
    assert rows and all(row.startswith("synthetic-multilabel_missing_folds=3_missing=0.3,") for row in rows)
    assert api.load(repo, experiments=[first[:len(common) + 1]]).specs.keys() == {first}


def test_param_filters_select_one_setting_in_show_table_and_plot(tmp_path):
    import io

    import pandas as pd

    repo = tmp_path / "repo"
    first, _ = _two_experiments(repo)
    everything = malt("show", first, "--repo", repo).stdout.splitlines()[0]
    assert "(sleep=0)" in everything and "(sleep=0.001)" in everything
    assert len(malt("show", first, "--param", "sleep=0.001", "--repo", repo).stdout.splitlines()[0].split()) == 1
    raw = pd.read_csv(io.StringIO(malt("show", first, "--param", "sleep=0.001", "--raw", "--format", "csv",
                                           "--repo", repo).stdout))
    assert set(raw["param.sleep"]) == {0.001} and len(raw) == 3
    both = malt("table", repo, "--experiment", first, "--format", "csv").stdout.splitlines()
    one = malt("table", repo, "--experiment", first, "--param", "sleep=0", "--format", "csv").stdout.splitlines()
    assert len(both) == 3 and len(one) == 2
    out = tmp_path / "figures"
    malt("plot", repo, "--param", "sleep=0.001", "--experiment", first, "--out", out, "--format", "png")
    assert list(out.glob("*.png"))
    refused = malt("show", first, "--param", "sleep=7", "--repo", repo, check=False)
    assert refused.returncode == 2 and "No stored unit matches sleep=7" in refused.stderr


def test_repetitions_are_per_setting(tmp_path):
    """A deterministic baseline run once, then a sampler with --repeats 3 in the same experiment: the
    baseline stays complete (not "1/3 runs"), and rerun does not repeat it."""
    repo = tmp_path / "repo"
    args = ["--dataset", "synthetic-cca", "--task", "recovery", "--quiet", "--repo", repo]
    exp = malt("cv", "--algo", "cca", "--repeats", "1", *args).stdout.strip()
    assert malt("cv", "--algo", "icca", "--repeats", "3", "--param", "max_sweeps=20", "--param", "min_sweeps=10",
                    "--param", "check_every=10", *args).stdout.strip() == exp
    shown = malt("show", exp, "--repo", repo)
    assert "folds" not in shown.stdout and "fewer finished folds" not in shown.stderr
    planned = ResultSet.from_repository(Repository(repo)).completeness.set_index("algorithm")["planned"].to_dict()
    assert planned == {"cca": 1, "icca": 3}
    assert "0 unit(s) run, 4 already stored" in malt("rerun", "--repo", repo).stderr


def test_a_failed_unit_keeps_its_traceback_bounded(tmp_path):
    repo = tmp_path / "repo"
    result = malt(*CV, "--param", "fail_fold=1", "--param", "fail_bytes=100000", "--repo", repo, check=False)
    assert result.returncode == 1
    exp = result.stdout.strip()
    shown = malt("show", exp, "--failed", "--traceback", "--repo", repo).stdout
    assert shown.startswith("--- test-counting[fail_bytes=100000,fail_fold=1] fold 1: RuntimeError: planned failure")
    assert "Traceback (most recent call last):" in shown and 'raise RuntimeError("planned failure"' in shown
    assert "characters left out" in shown
    record = next(r for r in Repository(repo).experiment(exp).read_log()[0].values() if r["status"] == "failed")
    assert len(record["traceback"]) <= engine.TRACEBACK_CHARS + 100 and len(record["error"]) <= 2000
    as_json = json.loads(malt("show", exp, "--failed", "--traceback", "--format", "json", "--repo", repo).stdout)
    assert as_json[0]["traceback"] == record["traceback"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_unit_over_its_time_limit_fails_with_that_reason_and_the_others_go_on(tmp_path, jobs):
    repo = tmp_path / "repo"
    start = time.monotonic()
    result = run_malt(*CV, "--param", "fold_seconds=0,0,30", "--unit-timeout", "2s", "--jobs", jobs, "--repo", repo,
                      check=False)
    assert time.monotonic() - start < 25 and result.returncode == 1
    assert "1 unit(s) failed: UnitTimeout: the unit ran longer than its limit of 2.0s (--unit-timeout)" in result.stderr
    exp = result.stdout.strip()
    units = Repository(repo).experiment(exp).read_log()[0].values()
    assert sorted((u["fold"], u["status"]) for u in units) == [(0, "ok"), (1, "ok"), (2, "failed")]
    again = run_malt("rerun", "--unit-timeout", "1.5s", "--repo", repo, check=False)  # only the failed unit again
    assert again.returncode == 1 and "1 unit(s) run, 2 already stored, 1 failed" in again.stderr


def test_the_python_api_takes_a_unit_time_limit(tmp_path):
    run = api.cv("test-counting", "synthetic-multilabel", task="missing", folds=2, repo=tmp_path / "repo",
                 params={"fold_seconds": (20.0,)}, unit_timeout=1.0)
    assert run.failed == 1 and run.ran == 2 and "UnitTimeout" in run.failures[0][2]
    with pytest.raises(Exception, match="--unit-timeout must be a positive"):
        api.cv("test-counting", "synthetic-multilabel", task="missing", repo=tmp_path / "repo", unit_timeout=0)


@pytest.mark.timeout(180)
def test_kill_minus_nine_during_forget_never_shows_a_forgotten_setting_or_loses_another(tmp_path):
    """Whenever a forget is killed, the repository reads, the other setting and experiment are intact, and
    the setting is either still there in full or gone from the results; the same command then finishes."""
    import os
    import random
    import signal
    import subprocess

    from tests.helpers import ROOT, malt_cmd

    repo = tmp_path / "repo"
    first, second = _two_experiments(repo)
    other = snapshot(repo / "experiments" / second)
    kept = ResultSet.from_repository(Repository(repo), [first]).frame
    kept = kept[kept["display"] == "test-counting"].reset_index(drop=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rng = random.Random(3)
    for _ in range(4):
        proc = subprocess.Popen(malt_cmd("forget", first, "--param", "sleep=0.001", "--repo", repo), env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 2.5))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        rs = ResultSet.from_repository(Repository(repo), [first])
        assert set(rs.frame["display"]) in ({"test-counting"}, {"test-counting", "test-counting[sleep=0.001]"})
        frame = rs.frame[rs.frame["display"] == "test-counting"].reset_index(drop=True)
        import pandas as pd

        pd.testing.assert_frame_equal(frame, kept)
        assert snapshot(repo / "experiments" / second) == other
        if proc.returncode == 0:
            break
    result = run_malt("forget", first, "--param", "sleep=0.001", "--repo", repo, check=False)
    assert result.returncode in (0, 2)  # 2: an earlier attempt had finished (nothing left to forget)
    assert _displays(repo, first) == ["test-counting"]
    assert not list(repo.rglob(".*.tmp"))


def test_forget_from_python(tmp_path):
    import malt

    repo = tmp_path / "repo"
    run = malt.cv("test-counting", "synthetic-multilabel", task="missing", folds=2, repo=repo,
                  params={"sleep": [0.0, 0.001]})
    done = malt.forget(run.experiment[:-2], repo=repo, params={"sleep": 0.001})
    assert (done.experiment, done.settings, done.units) == (run.experiment, ["test-counting[sleep=0.001]"], 2)
    assert set(malt.load(repo).frame["display"]) == {"test-counting"}
