"""The multilabel task's given split (the MULAN train/test files) and its repeats."""
from __future__ import annotations

import numpy as np
import pytest

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


def test_each_bipartition_metric_reads_its_own_decisions_and_older_units_fall_back():
    """score_packed: Hamming loss from ``labels``, micro-F1 from ``labels_f1``, macro-F1 (and Rai & Daumé's)
    from ``labels_f1_macro`` — each equal to scikit-learn's measure of that set; a unit stored without the
    macro set (before the family existed) reads macro-F1 from ``labels_f1``, as it was scored then."""
    from sklearn.metrics import f1_score, hamming_loss

    from malt.splits import MultilabelSplit, Prediction
    from malt.tasks.multilabel import MultilabelParams, MultilabelTask

    rng = np.random.default_rng(5)
    n, L = 30, 4
    Y = (rng.random((2 * n, L)) < 0.4).astype(float)
    Y[:L, :] = np.eye(L)  # every label has a positive among the test rows
    dataset = {"X": rng.normal(size=(2 * n, 3)), "Y": Y}
    test = np.arange(n)
    split = MultilabelSplit(dataset["X"][n:], Y[n:], dataset["X"][:n], np.arange(n, 2 * n), test, 0)
    sets = {name: (rng.random((n, L)) < p).astype(float) for name, p in
            (("labels", 0.2), ("labels_f1", 0.4), ("labels_f1_macro", 0.6))}
    task, params = MultilabelTask(), MultilabelParams()
    prediction = Prediction(scores=rng.normal(size=(n, L)), labels=sets["labels"],
                            extras={k: v for k, v in sets.items() if k != "labels"})
    out = task.score_packed(dataset, params, split, task.pack(split, prediction, params))
    truth = Y[test]
    assert out["hamming_loss"] == pytest.approx(hamming_loss(truth, sets["labels"]))
    assert out["f1_micro"] == pytest.approx(f1_score(truth, sets["labels_f1"], average="micro"))
    assert out["f1_macro"] == pytest.approx(f1_score(truth, sets["labels_f1_macro"], average="macro"))
    assert out["rd_f1_macro"] == pytest.approx(f1_score(truth, sets["labels_f1_macro"], average="macro"))
    older = task.pack(split, Prediction(scores=prediction.scores, labels=sets["labels"],
                                        extras={"labels_f1": sets["labels_f1"]}), params)
    assert "labels_f1_macro" not in older
    assert task.score_packed(dataset, params, split, older)["f1_macro"] == pytest.approx(
        f1_score(truth, sets["labels_f1"], average="macro"))
