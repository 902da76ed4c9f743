"""The text corpora against counts published in their SOURCE.md files and a brute-force tokeniser."""
from __future__ import annotations

import re
import tarfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from malt.datasets.catalogue import DataRoots, entry
from malt.datasets.text import NEWS_ARCHIVE
from tests.conftest import require_data


def _load(name: str, *files: str):
    root = require_data(*files)
    return entry(name).loader(DataRoots([root])), root


@pytest.fixture(scope="module")
def different100():
    return _load("different100", NEWS_ARCHIVE)


def test_different100_draw_is_balanced_reproducible_and_from_the_named_groups(different100):
    data, root = different100
    again = entry("different100").loader(DataRoots([root]))
    assert data.hash == again.hash
    assert data.meta["documents"] == again.meta["documents"]
    assert np.bincount(data["y"]).tolist() == [100, 100, 100]
    groups = {doc.split("/")[0] for doc in data.meta["documents"]}
    assert groups == {"alt.atheism", "rec.sport.baseball", "sci.space"}
    assert len(set(data.meta["documents"])) == 300


def test_counts_match_a_brute_force_tokenisation_of_the_raw_posts(different100):
    data, root = different100
    vocab = {w: j for j, w in enumerate(data["vocab"])}
    wanted = {data.meta["documents"][i]: i for i in (0, 150, 299)}
    with tarfile.open(root / NEWS_ARCHIVE) as archive:
        for member in archive:
            key = "/".join(member.name.split("/")[1:])
            if key not in wanted:
                continue
            raw = archive.extractfile(member).read().decode("latin-1")
            head, _, body = raw.partition("\n\n")
            subject = [line[8:] for line in head.splitlines() if line.lower().startswith("subject:")]
            expected = np.zeros(len(vocab))
            for token in re.findall(r"[a-z]{2,}", (" ".join(subject) + " " + body).lower()):
                if token not in ENGLISH_STOP_WORDS and token in vocab:
                    expected[vocab[token]] += 1
            row = data["docs"][wanted[key]].toarray().ravel()
            np.testing.assert_array_equal(row, expected)


def test_vocabulary_respects_document_frequency_bounds_and_tfidf_rows_are_unit_norm(different100):
    data, _ = different100
    df = np.asarray((data["docs"] > 0).sum(axis=0)).ravel()
    assert df.min() >= 2 and df.max() <= 150
    assert not set(data["vocab"]) & ENGLISH_STOP_WORDS
    norms = sp.linalg.norm(data["X"], axis=1)
    np.testing.assert_allclose(norms, 1.0)


def test_classic3_matches_its_source_counts():
    data, _ = _load("classic3", "text/classic3/classic3.csv.gz")
    docs = data["docs"]
    assert docs.shape == (3891, 4303)
    assert docs.nnz == 176_347 and docs.sum() == 256_348
    assert np.bincount(data["y"]).tolist() == [1033, 1460, 1398]
    medline_top = np.array(data["vocab"])[np.argsort(-np.asarray(docs[data["y"] == 0].sum(axis=0)).ravel())[:10]]
    assert {"patients", "cells", "cases"} <= set(medline_top)


def test_asrs_labels_match_the_published_positives_per_category():
    data, _ = _load("asrs", "text/asrs/siam2007_TrainingData_small.txt.gz")
    positives = [29, 494, 13, 20, 121, 360, 93, 99, 15, 46, 15, 167, 77, 56, 17, 25, 13, 54, 245, 23, 11, 15]
    assert data["docs"].shape[0] == 944
    assert data["Y"].sum(axis=0).astype(int).tolist() == positives
    assert np.all(data["Y"][np.arange(944), [int(c.split()[1]) - 1 for c in np.array(data.meta["classes"])[data["y"]]]] == 1)
