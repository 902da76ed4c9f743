"""figures.d/scripts/glp_embedding.py: the reader behind figures.d/ch3-glp-embedding.md."""

import numpy as np
import pytest

from malt.results import ResultSet
from tests.helpers import figure_script


@pytest.fixture(scope="module")
def ge():
    return figure_script("glp_embedding")


def test_paired_and_ranks_hand_values(ge):
    r = ge.paired([10, 20, 30, 40, 50], [12, 18, 30, 45, 40])
    np.testing.assert_allclose(r["diffs"], [-2, 2, 0, -5, 10])
    assert r["mean"] == pytest.approx(1.0) and (r["a_lower"], r["a_higher"]) == (2, 2)
    assert ge.ranks({"a": 1.0, "b": 3.0, "c": 1.0}) == {"a": 1.5, "b": 3.0, "c": 1.5}


def test_majority_cells_from_a_real_run(ge, tmp_path):
    """WDBC (bundled): 212 malignant of 569. With l = 30 labelled points drawn per class in proportion
    (11 or 12 malignant) and every unlabelled point scored, `majority` (benign everywhere) errs on
    exactly the 212 − m unlabelled malignant points of 539, and never predicts the minority class."""
    import malt

    malt.cv(["majority"], "sklearn-breast-cancer", task="semisupervised", repo=tmp_path, labeled=30,
            stratify=True, evaluate="unlabeled")
    f = ge.load([tmp_path], "stratified-unlabeled")
    v = ge.fold_values(f, "sklearn-breast-cancer", 30, "majority", ge.DEFAULT_PARAMS)
    assert v is not None and len(v) == 5
    allowed = [100 * (212 - m) / 539 for m in (11, 12)]
    assert all(min(abs(x - a) for a in allowed) < 1e-9 for x in v)
    assert ge.predicted_share([ResultSet.load(tmp_path)], f, "sklearn-breast-cancer", 30, "majority", ge.DEFAULT_PARAMS, 0) == 0.0
