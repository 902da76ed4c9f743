"""The semisupervised task: fold protocol, labelled-point draw and scoring, and one CLI run."""
from __future__ import annotations

import numpy as np
import pytest

from malt.datasets.dataset import Dataset
from malt.errors import DataError
from malt.splits import Prediction
from malt.tasks import get_task
from malt.tasks.semisupervised import labeled_points
from tests.conftest import require_data


def dataset(n=103, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    y[:classes] = np.arange(classes)
    return Dataset("toy", {"X": rng.normal(size=(n, 3)) + y[:, None], "y": y})


def test_folds_partition_and_labelled_points_come_from_other_folds():
    d, task = dataset(), get_task("semisupervised")
    P = task.Params(labeled=12)
    seen = []
    for fold in range(task.n_folds(d, P)):
        s = task.split(d, P, fold)
        lab = np.flatnonzero(s.y >= 0)
        assert len(lab) == 12
        assert not np.intersect1d(lab, s.evaluate).size
        np.testing.assert_array_equal(s.y[lab], d["y"][lab])
        assert set(s.y[lab]) == {0, 1, 2, 3}  # every class appears
        assert s.n_classes == 4 and s.X.shape[0] == 103  # transductive: all points
        seen.append(s.evaluate)
    np.testing.assert_array_equal(np.sort(np.concatenate(seen)), np.arange(103))


def test_larger_budgets_label_supersets_and_splits_are_reproducible():
    d, task = dataset(), get_task("semisupervised")
    small = task.split(d, task.Params(labeled=10), 2)
    large = task.split(d, task.Params(labeled=30), 2)
    assert set(np.flatnonzero(small.y >= 0)) <= set(np.flatnonzero(large.y >= 0))
    again = task.split(d, task.Params(labeled=10), 2)
    np.testing.assert_array_equal(small.y, again.y)
    other = task.split(d, task.Params(labeled=10, seed=1), 2)
    assert not np.array_equal(small.y, other.y)


def test_labeled_points_with_fewer_slots_than_classes():
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(5), 4)
    got = labeled_points(np.arange(20), y, 3, rng)
    assert len(got) == 3 and len(set(y[got])) == 3


def test_score_is_the_error_rate_on_the_evaluated_fold():
    d, task = dataset(), get_task("semisupervised")
    P = task.Params(labeled=10)
    s = task.split(d, P, 0)
    labels = d["y"].copy()
    wrong = s.evaluate[:5]
    labels[wrong] = (labels[wrong] + 1) % 4
    labels[np.flatnonzero(s.y >= 0)] = 0  # errors outside the fold are not counted
    assert task.score(d, P, s, Prediction(labels=labels)) == {"error": pytest.approx(5 / len(s.evaluate))}


def test_bad_inputs_get_clear_errors():
    task = get_task("semisupervised")
    with pytest.raises(DataError, match="needs features X and class ids y"):
        task.check(Dataset("noy", {"X": np.zeros((5, 2))}), task.Params())
    with pytest.raises(DataError, match="too large"):
        task.check(dataset(n=20), task.Params(labeled=50))


def test_cli_runs_gf_on_iris(tmp_path):
    root = require_data("uci/iris/iris.data")
    from tests.helpers import run_malt

    env = {"MALT_DATA": str(root)}
    out = run_malt("cv", "--task", "semisupervised", "--labeled", "30", "--algo", "gf", "--dataset", "iris",
                   "--repo", str(tmp_path), "--quiet", env=env)
    exp = out.stdout.strip().splitlines()[-1]
    shown = run_malt("show", exp, "--repo", str(tmp_path), "--format", "csv", env=env).stdout
    assert "error" in shown and "gf" in shown


def test_published_semisupervised_rows_name_registered_datasets_and_algorithms():
    """Figures 3.4–3.6 as printed (published.csv, glp.csv) map to names malt runs, so `malt report`
    can put them beside our runs: 14 datasets × 7 methods per figure."""
    from malt import registry
    from malt.datasets.catalogue import entry
    from malt.results.report import published

    ref = published()
    ref = ref[ref.task == "semisupervised"]
    for name in set(ref.dataset):
        entry(name)
    for name in set(ref.algorithm):
        registry.get(name)
    for fig, labeled in (("3.5", 40), ("3.6", 50)):
        rows = ref[ref.source == f"Agovic 2011, Figure {fig}"]
        assert len(rows) == 98 and set(rows.setting) == {f"labeled={labeled}"}
    fig34 = ref[(ref.source == "Agovic 2011, Figure 3.4") & (ref.dataset != "usps")]
    assert len(fig34) == 98 and {"different100", "same1000", "usps-1234"} <= set(fig34.dataset)


@pytest.mark.timeout(30)
def test_stratified_labelled_points_follow_the_class_shares():
    """Hand-computed: 60 / 30 / 10 points of three classes and ℓ = 7 → quotas 4.2 / 2.1 / 0.7, floors
    4 / 2 / 0, the one left over to the largest remainder (class 2): 4 / 2 / 1."""
    from malt.tasks.semisupervised import stratified_points

    y = np.repeat([0, 1, 2], [60, 30, 10])
    pool = np.arange(100)
    lab = stratified_points(pool, y, 7, np.random.default_rng(0))
    assert np.bincount(y[lab], minlength=3).tolist() == [4, 2, 1] and len(set(lab)) == 7


@pytest.mark.timeout(30)
def test_evaluate_unlabeled_scores_every_point_but_the_labelled_ones():
    """evaluate=unlabeled keeps the graph's inputs (the same labelled draw as evaluate=fold) and scores
    the n − ℓ unlabelled points: 103 − 12 = 91 here, with 5 errors planted among them → 5/91."""
    d, task = dataset(), get_task("semisupervised")
    fold_split = task.split(d, task.Params(labeled=12), 1)
    P = task.Params(labeled=12, evaluate="unlabeled")
    s = task.split(d, P, 1)
    np.testing.assert_array_equal(s.y, fold_split.y)
    np.testing.assert_array_equal(s.evaluate, np.flatnonzero(s.y < 0))
    assert len(s.evaluate) == 91
    labels = d["y"].copy()
    wrong = s.evaluate[[0, 10, 30, 60, 90]]
    labels[wrong] = (labels[wrong] + 1) % 4
    assert task.score(d, P, s, Prediction(labels=labels)) == {"error": pytest.approx(5 / 91)}
    assert task.Params(labeled=12).key() != P.key()


@pytest.mark.timeout(30)
def test_stratified_folds_hold_every_class_share_within_one():
    """Hand-computed: 12 / 8 / 5 rows of three classes in 5 folds → per fold 12/5 → 2 or 3 (two folds
    of 3), 8/5 → 1 or 2 (three of 2), 5/5 → exactly 1; fold sizes 25/5 = 5 each. Hepatitis's 32 DIE
    of 155 rows → 6 or 7 DIE in every fold (unstratified, its folds hold 5-8)."""
    from malt.tasks.base import stratified_fold_assignment

    y = np.repeat([0, 1, 2], [12, 8, 5])
    for seed in range(5):
        ids = stratified_fold_assignment(y, 5, seed)
        counts = np.array([[np.sum((ids == f) & (y == c)) for c in range(3)] for f in range(5)])
        assert sorted(counts[:, 0]) == [2, 2, 2, 3, 3] and sorted(counts[:, 1]) == [1, 1, 2, 2, 2]
        assert counts[:, 2].tolist() == [1] * 5 and counts.sum(axis=1).tolist() == [5] * 5
    np.testing.assert_array_equal(stratified_fold_assignment(y, 5, 3), stratified_fold_assignment(y, 5, 3))
    assert not np.array_equal(stratified_fold_assignment(y, 5, 3), stratified_fold_assignment(y, 5, 4))
    hep = np.repeat([0, 1], [32, 123])
    die = np.bincount(stratified_fold_assignment(hep, 5, 0)[hep == 0], minlength=5)
    assert set(die) <= {6, 7} and die.sum() == 32
    d, task = dataset(), get_task("semisupervised")
    s = task.split(d, task.Params(labeled=12, stratify_folds=True), 0)
    assert len(s.evaluate) in (20, 21) and np.sum(s.y >= 0) == 12
