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
    counts = np.bincount(data["y"])  # 100 drawn per group; posts left empty are dropped (one here)
    assert counts.max() == 100 and counts.sum() == 300 - data.meta["dropped_empty"] and data.meta["dropped_empty"] <= 3
    groups = {doc.split("/")[0] for doc in data.meta["documents"]}
    assert groups == {"alt.atheism", "rec.sport.baseball", "sci.space"}
    assert len(set(data.meta["documents"])) == counts.sum()


def test_counts_match_a_brute_force_tokenisation_of_the_raw_posts(different100):
    data, root = different100
    vocab = {w: j for j, w in enumerate(data["vocab"])}
    last = len(data.meta["documents"]) - 1
    wanted = {data.meta["documents"][i]: i for i in (0, 150, last)}
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


FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "text"


@pytest.mark.timeout(30)
def test_tfidf_pipeline_on_a_fixture_computed_by_hand():
    """The X pipeline (TFIDF, version 2) on 20 tiny posts: every header line dropped (the Subject
    too), stop words out, words kept in 2..3 documents (max(2, 0.2 %) and 15 % of 20), tf·ln(n/df),
    unit rows.

    Hand count over the bodies: rocket in posts 0, 2; orbit in 0, 1, 3 (also in the Organization
    header of 5, 6, which must not count); fruit and basket only in the Subject lines of 12, 13
    (dropped with the headers); the, is, and are stop words; single-document words drop.
    """
    from malt.datasets.text import TFIDF, message_body, tfidf_vectors

    posts = (FIXTURES / "posts.txt").read_text().split("%%\n")
    X, words = tfidf_vectors([message_body(p) for p in posts])
    assert words == 9  # belief faith god homer inning launch orbit pitcher rocket
    assert X.shape == (20, 9)
    ln = np.log
    expected0 = np.array([2 * ln(20 / 2), 1 * ln(20 / 3)])  # post 0: rocket ×2, orbit ×1
    row0 = X[0].toarray().ravel()
    np.testing.assert_allclose(np.sort(row0[row0 > 0]), np.sort(expected0 / np.linalg.norm(expected0)))
    row5 = X[5].toarray().ravel()  # "inning homer": orbit of its header must not appear
    np.testing.assert_allclose(np.sort(row5[row5 > 0]), [2 ** -0.5, 2 ** -0.5])
    assert X[12].nnz == 0 and X[13].nnz == 0  # "apple", "banana": their Subject words are gone
    np.testing.assert_allclose(sp.linalg.norm(X[:11], axis=1), 1.0)
    assert TFIDF["version"] == 2 and TFIDF["max_df"] == 0.15


def test_different100_x_is_a_brute_force_tfidf_of_the_message_bodies(different100):
    """X of Different100 against an independent count (dicts, no scikit-learn) over the bodies of
    the posts it lists: posts whose body leaves no word are the ones dropped, no row is empty (an
    empty row would be every document's nearest cosine neighbour), and X Xᵀ (free of the column
    order) equals the brute-force tf·ln(n/df) unit rows'."""
    from collections import Counter

    data, root = different100
    ids = data.meta["documents"]
    X = data["X"]
    assert X.shape[0] == data["docs"].shape[0] == len(ids) == 300 - data.meta["dropped_empty"]
    assert X.getnnz(axis=1).min() > 0
    bodies = {}
    with tarfile.open(root / NEWS_ARCHIVE) as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 3 and parts[1] in {"alt.atheism", "rec.sport.baseball", "sci.space"}:
                bodies["/".join(parts[1:])] = archive.extractfile(member).read().decode("latin-1").partition("\n\n")[2]
    tokens = [[t for t in re.findall(r"[a-z]{2,}", bodies[i].lower()) if t not in ENGLISH_STOP_WORDS] for i in ids]
    n = len(ids)
    df = Counter(w for doc in tokens for w in set(doc))
    vocab = sorted(w for w, c in df.items() if max(2, np.ceil(0.002 * n)) <= c <= 0.15 * n)
    col = {w: j for j, w in enumerate(vocab)}
    B = np.zeros((n, len(vocab)))
    for i, doc in enumerate(tokens):
        for w, c in Counter(doc).items():
            if w in col:
                B[i, col[w]] = c * np.log(n / df[w])
    assert X.shape[1] == len(vocab) and (B > 0).sum(axis=1).min() > 0
    B /= np.linalg.norm(B, axis=1, keepdims=True)
    np.testing.assert_allclose((X @ X.T).toarray(), B @ B.T, atol=1e-10)


@pytest.mark.timeout(30)
def test_smart_reader_keeps_title_and_abstract_only():
    from malt.datasets.text import smart_documents

    docs = smart_documents((FIXTURES / "tiny.smart").read_text().splitlines())
    assert docs == ["rocket design\nrocket orbit study\n", "", "blood cells\n"]
    assert smart_documents((FIXTURES / "tiny.smart").read_text().splitlines(), "A")[:2] == ["smith\n", "jones\n"]


def test_classic3_tfidf_rows_line_up_with_the_count_matrix():
    """X of Classic3 comes from the raw abstracts; its rows are the count matrix's documents (the
    two empty Cranfield abstracts dropped): row by row, the two share most of their words."""
    data, _ = _load("classic3", "text/classic3/classic3.csv.gz", "text/classic3/med.all.gz")
    X, docs = data["X"], data["docs"]
    assert X.shape[0] == docs.shape[0] == 3891 and data.meta["raw_documents"] == 3893
    assert data.meta["tfidf_words"] == X.shape[1] and data.meta["tfidf"]["version"] == 2
    np.testing.assert_allclose(sp.linalg.norm(X, axis=1), 1.0)
    from malt.datasets.text import classic3_alignment, classic3_texts

    texts, raw_y = classic3_texts(DataRoots([require_data("text/classic3/med.all.gz")]))
    assert np.bincount(raw_y).tolist() == [1033, 1460, 1400]
    every_field, _ = classic3_texts(DataRoots([require_data("text/classic3/med.all.gz")]), "TABW")
    order = classic3_alignment(docs, data["vocab"], data["y"], every_field, raw_y)
    assert np.unique(order).size == 3891 and set(np.setdiff1d(np.arange(3893), order)) == {2493 + 470, 2493 + 994}
    vocab = np.array(data["vocab"])
    for row in (0, 1500, 3890):  # a MEDLINE, a CISI and the last CRANFIELD row
        raw = set(re.findall("[a-z]{2,}", every_field[order[row]].lower()))
        counted = set(vocab[docs[row].indices])
        assert len(counted & raw) >= 0.9 * len(counted), row
