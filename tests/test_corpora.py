"""The topic-model vocabulary (datasets/corpora.py) on a fixture whose kept words are known by hand."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from malt.datasets.corpora import TOPIC_VOCABULARY, topic_counts, with_topic_vocabulary
from malt.datasets.dataset import Dataset

# 10 documents. Document frequencies: "orbit" 4, "pitcher" 5, "moon" 3 (below the floor of 4),
# "god" 6 (above half of 10), "x" (one letter), "the" (stop word); document 9 keeps no word.
TEXTS = ["orbit orbit pitcher god", "orbit moon pitcher god", "Orbit, pitcher! The god", "orbit moon god",
         "pitcher pitcher x god", "moon god", "nothing here", "", "pitcher", "the the x"]


def test_kept_words_and_counts_by_hand():
    counts, vocab = topic_counts(TEXTS)
    assert vocab == ["orbit", "pitcher"]
    expected = np.zeros((10, 2), int)
    expected[[0, 1, 2, 3], 0] = [2, 1, 1, 1]
    expected[[0, 1, 2, 4, 8], 1] = [1, 1, 1, 2, 1]
    np.testing.assert_array_equal(counts.toarray(), expected)
    assert TOPIC_VOCABULARY["min_df"] == 4 and TOPIC_VOCABULARY["max_df"] == 0.5


def test_rows_stay_aligned_and_the_pipeline_is_in_the_hash():
    X = sp.identity(10, format="csr")
    base = Dataset("fixture", {"X": X, "y": np.arange(10) % 2, "docs": X, "vocab": [str(i) for i in range(10)]})
    data = with_topic_vocabulary(base, TEXTS)
    assert data["docs"].shape == (10, 2) and data["X"] is X and data["vocab"] == ["orbit", "pitcher"]
    assert data.meta["topic_vocabulary"]["empty_documents"] == 4   # rows 5, 6, 7, 9 have no kept word
    assert data.meta["hash_meta"]["topic_vocabulary"] == TOPIC_VOCABULARY
    same_counts = Dataset("fixture", dict(data.components), {})
    assert data.hash != same_counts.hash  # the pipeline's description is part of the hash
