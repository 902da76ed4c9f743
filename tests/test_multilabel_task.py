"""The multilabel task's given split (the MULAN train/test files) and its repeats."""
from __future__ import annotations

import numpy as np

from malt.datasets.catalogue import DataRoots, entry
from malt.results import ResultSet
from malt.tasks import get_task
from tests.conftest import require_data
from tests.helpers import run_malt, snapshot


def test_given_split_is_the_mulan_training_file_then_its_test_file():
    require_data("multilabel/scene/scene-train.arff")
    ds = entry("scene").loader(DataRoots.default())
    task = get_task("multilabel")
    params = task.Params(split="given", repeats=3)
    assert task.n_folds(ds, params) == 3
    splits = [task.split(ds, params, fold) for fold in range(3)]
    for s in splits:  # MULAN's scene-train.arff has 1,211 rows, scene-test.arff 1,196
        np.testing.assert_array_equal(s.train_index, np.arange(1211))
        np.testing.assert_array_equal(s.test_index, np.arange(1211, 2407))


def test_repeats_rerun_a_seeded_sampler_with_different_seeds(repo_path):
    require_data("multilabel/scene/scene-train.arff")
    run_malt("cv", "--repo", str(repo_path), "--quiet", "--algo", "icca", "--param", "max_sweeps=4",
             "--param", "min_sweeps=4", "--param", "thin=1", "--dataset", "scene", "--task-param", "split=given",
             "--task-param", "repeats=2")
    frame = ResultSet.load(repo_path).frame
    auc = frame[frame.metric == "auc"].sort_values("fold")
    assert list(auc.fold) == [0, 1] and auc.seed.nunique() == 2
    assert auc.value.iloc[0] != auc.value.iloc[1]


def test_repeats_without_the_given_split_is_refused_and_writes_nothing(repo_path):
    require_data("multilabel/scene/scene-train.arff")
    before = snapshot(repo_path)
    result = run_malt("cv", "--repo", str(repo_path), "--algo", "mllr", "--dataset", "scene",
                      "--task-param", "repeats=3", check=False)
    assert result.returncode != 0 and "split=given" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(repo_path) == before


def test_results_counts_repeats_as_the_planned_units(repo_path):
    require_data("multilabel/scene/scene-train.arff")
    run_malt("cv", "--repo", str(repo_path), "--quiet", "--algo", "mllr", "--dataset", "scene",
             "--task-param", "split=given", "--task-param", "repeats=2")
    listing = run_malt("results", "--repo", str(repo_path)).stdout
    assert "2/2" in listing.splitlines()[-1]
