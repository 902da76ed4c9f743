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


# A post carrying a binary, uuencoded by the standard library's encoder (binascii.b2a_uu, an
# independent source): its lines spell letter pairs such as "qp", "maxb", "ciznol" once lower-cased.
_BINARY = bytes(range(256))


def _uuencoded_lines(backtick: bool) -> list[str]:
    import binascii

    return [binascii.b2a_uu(_BINARY[i:i + 45], backtick=backtick).decode().rstrip("\n")
            for i in range(0, len(_BINARY), 45)]


SHOUTED = "> : PREPARED FOR YOUR ETERNAL DAMNATION!!!"  # a real 20 Newsgroups line of uuencode's shape


def test_uuencoded_binaries_are_dropped_and_the_text_kept():
    import re

    from malt.datasets.corpora import strip_uuencoded, uuencode_shaped

    block = _uuencoded_lines(backtick=False)  # spaces for zero bits, as many 1993 encoders wrote
    text_lines = ["Here is the orbit picture you asked for.", SHOUTED, "", "thanks for looking"]
    post = "\n".join(text_lines[:2] + ["begin 644 orbit.bmp"] + block + ["`", "end"] + text_lines[2:])
    # part 2 of a multi-part post: no begin/end line, only the encoded lines (backtick zeros)
    part = "\n".join(["Part 2 of 14: more pictures"] + _uuencoded_lines(backtick=True) * 3 + ["end of part 2"])

    uu_words = set(re.findall(r"[a-z]{2,}", "\n".join(block).lower()))
    assert {"qp", "maxb", "ciznol"} <= uu_words and all(uuencode_shaped(line) for line in block)
    assert uuencode_shaped(SHOUTED)  # the declared length by chance: one such line alone must stay
    assert strip_uuencoded(post) == "\n".join(text_lines)
    assert strip_uuencoded(part) == "Part 2 of 14: more pictures\nend of part 2"

    counts, vocab = topic_counts([post, part], min_df=1, max_df=1.0)
    # the words of the text, by hand ("here", "is", "the", "you", "for", "your", "of", "more", "part" are stop words)
    assert vocab == ["asked", "damnation", "end", "eternal", "looking", "orbit", "picture", "pictures", "prepared",
                     "thanks"]
    assert not uu_words & set(vocab) and counts.sum() == 10
