"""The topic-model vocabulary of the text corpora (Agovic 2011, §6.4): the ``docs``/``vocab`` components.

The corpus loaders in `text` build the documents (which posts, which header lines) and the tf-idf
``X`` of the graph-based experiments (§3.6); this module builds the word counts the topic models of
chapter 6 see, over the same rows, with its own vocabulary:

* uuencoded binaries dropped first (version 2, `strip_uuencoded`): 20 Newsgroups holds 28 posts
  carrying one; four are in Same100 (parts 5 and 10 of a 14-part bitmap, a Windows executable, an
  X tool's tar.Z archive: 12785 of its 37182 tokens, 34 %), one in News100 (28 tokens);
* lower-cased alphabetic tokens of two or more letters, scikit-learn's English stop words removed
  (the tokeniser of `text`);
* words kept when they occur in at least ``min_df`` = 4 documents and in at most half of them.

Why a second vocabulary: chapter 6 of the thesis states no corpus preparation (no stop words, no
cut-offs, no vocabulary size) and cites no source for Dif100/Sim100/Same100/CMU100; chapter 3 takes
the same 20 Newsgroups subsets from Banerjee et al. 2005 (its ref. [65]), whose pipeline `text` uses
for the tf-idf ``X`` (MC toolkit: stop words out, words in ≥ max(2, 0.2 %) and ≤ 15 % of the
documents). That vocabulary cannot be the topic models' one. Under it the smoothed unigram model
(smoothing 0.01, the topics task's 5 folds) scores 4224 / 4397 / 4183 on Different100 / Similar100 /
Same100 (3618 / 3645 / 3543 with words in ≥ 2 and ≤ half of the documents), 3.4×, 2.6× and 5.5×
the thesis's CTM (1231, 1720, 761), while CTM with K = 3 is 15 % below the unigram model on
Different100 under the vocabulary below (1240 vs 1460, ``make table-6-2``). Perplexity grows with the vocabulary, so the thesis's numbers fix
its scale. With the document-frequency floor as the one free choice, CTM's held-out perplexity
(K = 3, 5 folds, folds 0–1) at floors 3 / 4 / 5 is 1888 / 1277 / 959 on Different100, 2131 / 1618 /
1343 on Similar100, 1245 / 706 / 763 on Same100 and 3067 / 2431 / 2025 on News100, against the
thesis's 1231, 1720, 761 and 2944. A floor of 4 puts the three 300-document sets within 3–7 % of the
thesis and reproduces its ordering Same < Different < Similar < News, which the tf-idf vocabulary
does not (all three near 3600). Under it the unigram model scores 1460 / 1826 / 1197 (1833 / 2598 /
1576 words). The floor calibrates the corpus, not a model: every topic model sees the same counts.

Rows never move: a document left without words keeps its (empty) row, so ``docs``, ``X`` and ``y``
stay aligned. The pipeline and its version are recorded in ``meta['topic_vocabulary']`` and in the
dataset hash.
"""
from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from .dataset import Dataset

TOPIC_VOCABULARY = {"name": "topic-vocabulary", "version": 2, "tokens": "[a-z]{2,}", "lowercase": True,
                    "stop_words": "sklearn-english", "min_df": 4, "max_df": 0.5,
                    "uuencoded": "dropped before tokenising: runs of >= 3 uuencode-shaped lines, and within a "
                                 "'begin NNN name' ... 'end' block its begin/end lines and every uuencode-shaped line"}
"""The topic-model corpus pipeline; bump ``version`` on any change (it is part of the dataset hash).
Version 2 drops uuencoded binaries (`strip_uuencoded`)."""
_TOKEN = re.compile(r"[a-z]{2,}")
_UU_ALPHABET = re.compile(r"[ -`]+")  # uuencode writes ASCII 32-96 only: no lower-case letter
_UU_BEGIN = re.compile(r"begin [0-7]{3,4} \S")
UU_MIN_RUN = 3


def uuencode_shaped(line: str) -> bool:
    """Whether uuencode could have written ``line``: its alphabet (ASCII 32-96) and exactly the length
    its first character declares (n = (ord(c) - 32) mod 64 bytes take 1 + 4⌈n/3⌉ characters; one
    more is allowed for encoders that append a checksum character)."""
    if not _UU_ALPHABET.fullmatch(line) or line.isspace():  # a blank line is no evidence
        return False
    n = (ord(line[0]) - 32) % 64
    return len(line) - (1 + 4 * -(-n // 3)) in (0, 1)


def strip_uuencoded(text: str, min_run: int = UU_MIN_RUN) -> str:
    """``text`` without its uuencoded content: every run of at least ``min_run`` consecutive
    `uuencode_shaped` lines, and inside a ``begin NNN name`` … ``end`` block the two marker lines
    and every shaped line (so the short last lines of a binary go too). Other lines are kept.

    Why a run and not one line: the alphabet includes the space and the capitals, so a single
    shouted line ("PREPARED FOR YOUR ETERNAL DAMNATION!!!") can have the declared length by chance
    (69 such lines with words in the 19997 post bodies of 20 Newsgroups, all kept); three in a row
    do not occur there: the rule drops lines from 28 posts, every one a binary (13 parts of one
    bitmap, zip and tar.Z archives, a GIF; 155-15302 tokens each), and nothing from the 944 ASRS
    reports. Multi-part posts carry no ``begin`` line, so the block alone is not enough. Blank lines
    are not evidence. Cost: one pass over the lines.
    """
    lines = text.split("\n")
    shaped = [uuencode_shaped(line.rstrip("\r")) for line in lines]
    drop = [False] * len(lines)
    start = 0
    for i in range(len(lines) + 1):
        if i == len(lines) or not shaped[i]:
            if i - start >= min_run:
                drop[start:i] = [True] * (i - start)
            start = i + 1
    in_block = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not in_block and _UU_BEGIN.match(stripped):
            in_block = drop[i] = True
        elif in_block:
            if stripped == "end":
                in_block, drop[i] = False, True
            elif shaped[i]:
                drop[i] = True
    return "\n".join(line for line, gone in zip(lines, drop) if not gone)


def topic_counts(texts: list[str], min_df: int = TOPIC_VOCABULARY["min_df"],
                 max_df: float = TOPIC_VOCABULARY["max_df"]) -> tuple[sp.csr_matrix, list[str]]:
    """Documents × words counts (int32 CSR, one row per text, in order) and the vocabulary; uuencoded
    content is dropped first (`strip_uuencoded`).

    A word is kept when its document frequency is at least ``min_df`` (a count) and at most
    ``max_df`` (a fraction of the documents). Cost: one pass over the texts.
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    vectorizer = CountVectorizer(lowercase=True, token_pattern=None, tokenizer=_TOKEN.findall,
                                 stop_words=sorted(ENGLISH_STOP_WORDS), min_df=min_df, max_df=max_df,
                                 dtype=np.int32)
    counts = vectorizer.fit_transform([strip_uuencoded(t).lower() for t in texts]).tocsr()
    return counts, list(vectorizer.get_feature_names_out())


def with_topic_vocabulary(data: Dataset, texts: list[str]) -> Dataset:
    """``data`` with ``docs``/``vocab`` rebuilt from ``texts`` (one per row of ``data``, same order)
    under `TOPIC_VOCABULARY`; every other component is kept as it is."""
    if len(texts) != data.n_rows:
        raise ValueError(f"with_topic_vocabulary: {len(texts)} texts for {data.n_rows} rows of '{data.name}'")
    counts, vocab = topic_counts(texts)
    empty = int(np.sum(counts.getnnz(axis=1) == 0))
    meta = dict(data.meta, topic_vocabulary=dict(TOPIC_VOCABULARY, empty_documents=empty),
                hash_meta=dict(data.meta.get("hash_meta", {}), topic_vocabulary=TOPIC_VOCABULARY))
    return Dataset(data.name, dict(data.components, docs=counts, vocab=vocab), meta)
