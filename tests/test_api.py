"""malt from Python: the API and the CLI store the same units; experiment files run, resume after
kill -9 and equal the CLI's numbers; provenance is recorded and true."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import malt
import tests.plugins.counting  # noqa: F401  (test-counting)
from malt.errors import MaltError
from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import ROOT, malt_cmd, run_malt


def _records(repo) -> dict:
    out = {}
    for exp in Repository(repo).experiments():
        units, _, _ = Repository(repo).experiment(exp).read_log()
        out.update({(exp, k): (r["metrics"], r["seed"], r["params_key"]) for k, r in units.items()})
    return out


@pytest.mark.timeout(180)
def test_the_api_and_the_cli_store_the_same_units(tmp_path):
    run = malt.cv(["mllr", "mlknn"], "synthetic-multilabel", params={"C": [0.1, 1.0], "select": "none"},
                  repo=tmp_path / "api", missing=0.3, folds=3)
    assert run.ok and run.ran == 9 and run.experiment.startswith("synthetic-multilabel-multilabel-")
    shown = run_malt("cv", "--algo", "mllr", "--algo", "mlknn", "--param", "C=0.1,1.0", "--param", "select=none",
                     "--dataset", "synthetic-multilabel", "--missing", "0.3", "--folds", "3", "--quiet",
                     "--repo", tmp_path / "cli")
    assert shown.stdout.strip() == run.experiment
    assert _records(tmp_path / "api") == _records(tmp_path / "cli")
    frame = malt.load(tmp_path / "api").frame
    assert {"experiment", "algorithm", "display", "fold", "metric", "value", "task.missing", "param.C"} <= set(frame)
    summary = malt.load(tmp_path / "api").summary(by="algorithm")
    assert set(summary["algorithm"]) == {"mllr", "mlknn"} and (summary["folds"] > 0).all()
    planned = summary.groupby("algorithm")["planned"].first()  # mllr: two settings × 3 folds
    assert planned.to_dict() == {"mllr": 6, "mlknn": 3} and summary["complete"].all()
    with pytest.raises(MaltError, match="Unknown algorithm 'mlr'"):
        malt.cv("mlr", "synthetic-multilabel", repo=tmp_path / "api")


EXPERIMENTS = """
[[experiment]]
datasets = ["synthetic-multilabel", "synthetic-pma-50x20"]
algorithms = ["test-counting", "column-mean"]
task = "missing"
options = { folds = 3 }
params = { sleep = 0.4 }
"""


@pytest.mark.timeout(300)
def test_an_experiment_file_runs_resumes_after_kill_and_equals_the_cli(tmp_path):
    plan = tmp_path / "grid.toml"
    plan.write_text(EXPERIMENTS)
    repo = tmp_path / "repo"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(malt_cmd("run", str(plan), "--repo", str(repo), "--quiet"), env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(repo.glob("experiments/*/units.log")):
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished = run_malt("run", plan, "--repo", repo)
    ids = finished.stdout.split()
    assert len(ids) == 2 and "already stored" in finished.stderr
    for dataset in ("synthetic-multilabel", "synthetic-pma-50x20"):
        run_malt("cv", "--algo", "test-counting", "--algo", "column-mean", "--dataset", dataset, "--task", "missing",
                 "--folds", "3", "--param", "sleep=0.4", "--quiet", "--repo", tmp_path / "cli")
    a = ResultSet.load(repo).frame.sort_values(["experiment", "display", "fold", "metric"])
    b = ResultSet.load(tmp_path / "cli").frame.sort_values(["experiment", "display", "fold", "metric"])
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())
    assert sorted(set(a["experiment"])) == sorted(ids)


@pytest.mark.timeout(300)
def test_provenance_names_the_revision_the_libraries_and_the_host(tmp_path):
    """Run from a temporary checkout: the recorded git revision is that checkout's HEAD, and a dirty
    tree says so."""
    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(checkout)], check=True)
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    code = ("import sys; sys.path.insert(0, {src!r}); import malt, malt.engine.provenance as p; "
            "assert malt.__file__.startswith({src!r}), malt.__file__; import json; print(json.dumps(p.code_revision()))")
    layout = tmp_path / "layout"  # the installed package layout (malt/, malt/algorithms, ...) over the checkout
    (layout / "malt").mkdir(parents=True)
    for item in (checkout / "malt").iterdir():
        (layout / "malt" / item.name).symlink_to(item)
    for sub in ("algorithms", "datasets", "repository"):
        (layout / "malt" / sub).symlink_to(checkout / sub)

    def revision():
        out = subprocess.run([sys.executable, "-c", code.format(src=str(layout))], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    assert revision() == {"git_revision": head, "git_dirty": False, "source": str(checkout)}
    (checkout / "malt" / "errors.py").write_text((checkout / "malt" / "errors.py").read_text() + "\n# edited\n")
    assert revision()["git_dirty"] is True
    repo = tmp_path / "repo"
    exp = run_malt("cv", "--algo", "mllr", "--dataset", "synthetic-multilabel", "--folds", "2", "--quiet",
                   "--repo", repo).stdout.strip()
    sessions = ResultSet.load(repo).provenance(exp)
    assert len(sessions) == 1 and sessions[0]["ended"] >= sessions[0]["started"]
    assert {"numpy", "scipy", "scikit-learn", "malt"} <= set(sessions[0]["versions"])
    assert sessions[0]["blas"] and sessions[0]["host"] == os.uname().nodename
    shown = run_malt("show", exp, "--provenance", "--repo", repo).stdout
    assert "python " in shown and "BLAS:" in shown


@pytest.mark.timeout(120)
def test_a_loaded_result_set_tables_and_plots_like_the_commands(tmp_path):
    malt.cv(["mllr", "mlknn"], "synthetic-multilabel", repo=tmp_path / "repo", folds=3)
    results = malt.load(tmp_path / "repo")
    text = results.table(metrics=["one_error"])
    assert "One-error" in text and "mlknn" in text and "mllr" in text
    paths = results.plot(tmp_path / "figures", metrics=["one_error"], formats=("png",))
    assert paths and all(p.stat().st_size > 5000 for p in paths)


@pytest.mark.timeout(120)
def test_recorded_diagnostics_are_drawn_and_tabulated_like_metrics(tmp_path):
    """Speed and convergence figures come from stored experiments: `--diagnostic fit_cpu_seconds`."""
    for n in (40, 80):
        malt.cv("mllr", "synthetic-multilabel", repo=tmp_path / "repo", labeled=n, folds=2)
    view = malt.load(tmp_path / "repo").diagnostic_view(["fit_cpu_seconds"])
    assert set(view.frame["metric"]) == {"diagnostic:fit_cpu_seconds"} and (view.frame["value"] >= 0).all()
    assert len(view.frame) == 4
    figure = run_malt("plot", tmp_path / "repo", "--diagnostic", "fit_cpu_seconds", "--out", tmp_path / "f",
                      "--format", "png").stdout.split()
    assert len(figure) == 1 and figure[0].endswith("diagnostic_fit_cpu_seconds.png") and "by-labeled" in figure[0]
    assert "Fit time (s, CPU)" in run_malt("table", tmp_path / "repo", "--diagnostic", "fit_cpu_seconds").stdout
    refused = run_malt("plot", tmp_path / "repo", "--diagnostic", "nosuch", check=False)
    assert refused.returncode == 2 and "No unit recorded a diagnostic 'nosuch'" in refused.stderr


def test_words_and_mappings_among_a_units_diagnostics_reach_the_diagnostics_table():
    """`malt show --diagnostics` tabulates numbers: a word becomes ``name=word`` (1), a mapping to numbers
    ``name[key]``; a Selection's ``selected`` mapping is left out (its ``selected_<name>`` numbers carry it)."""
    from malt.results.result_set import numeric_diagnostics

    got = numeric_diagnostics({"fit_seconds": 2.0, "diagnostics": {
        "carried_by": "mf+kernel", "validation_rmse": {"kernel": 0.91, "mf": 0.92, "label": "x"},
        "selected": {"signal": 0.5}, "ranking_selected": {"rank_signal": 0.02}, "selected_signal": 0.5,
        "trace": [3.0, 2.0, 1.5], "converged": True, "empty": ""}})
    assert got == {"fit_seconds": 2.0, "carried_by=mf+kernel": 1.0, "validation_rmse[kernel]": 0.91,
                   "validation_rmse[mf]": 0.92, "selected_signal": 0.5, "trace (last)": 1.5, "trace (length)": 3.0,
                   "converged": 1.0}
