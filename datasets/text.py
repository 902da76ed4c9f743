"""Text corpora of the label-propagation (§3.6) and topic-model (§6.4) experiments.

Files live under ``MALT_DATA/text/`` (see each folder's SOURCE.md). Every corpus has the same
components: ``docs`` (documents × words CSR counts), ``vocab`` (the words, column order), ``y``
(class ids 0..C−1, the newsgroup or collection) and ``X`` (l2-normalised tf-idf document vectors for
the cosine kNN graphs of chapter 3, built from the same texts by their own pipeline, ``TFIDF``).
``docs``/``vocab`` of the 20 Newsgroups and ASRS sets use the topic-model vocabulary of `corpora`
(words in ≥ 4 documents, chapter 6).

20 Newsgroups subsets come from the original 20news-19997 collection (1000 posts per group), since
no group of the by-date release has 1000 posts. The 100-per-group draws are reproducible: post ids
sorted numerically per group, then a ``numpy.random.default_rng(DRAW_SEED)`` permutation keyed by the
dataset name; the chosen posts are recorded in ``meta['documents']``. The vocabulary pipeline
(``VOCABULARY``, recorded in ``meta['vocabulary']``): Usenet headers dropped except the Subject line,
lower-cased alphabetic tokens of two or more letters, scikit-learn's English stop words removed,
words in at least 2 documents and at most half of them kept; documents left empty are dropped.

The tf-idf pipeline of ``X`` (``TFIDF``, recorded in ``meta['tfidf']`` and in the dataset hash)
follows the source of the thesis's text sets, Banerjee, Dhillon, Ghosh & Sra (JMLR 2005, ref. [65]
of ch. 3), who built them with the MC toolkit (Dhillon, Fan & Guan 2001): the message headers
removed "to avoid biasing the results" (all of them, the Subject line too: version 2), stop words
removed, no stemming, words kept when they occur in at least max(2, 0.2 %) and at most 15 % of the
documents (MC's pruning; on the 3893 raw Classic3 abstracts it leaves 4262 words, [65] reports
4666), tf × log(n/df) weights, rows scaled to unit length ([65]: "each document … is represented as
a unit vector"). Classic3 is built from the raw SMART abstracts (title and abstract text) by the
same pipeline. A post whose body leaves no word is dropped (from ``docs`` too: the two share their
rows); an all-zero row would sit at cosine distance ½ from every document and become every
document's neighbour in a cosine kNN graph. Version 1 kept the Subject line, because without it
GF on Different100 had seemed to fail (32 %); that failure was one such empty post, a hub of the
graph (figures.d/ch3-glp-text.md).

The thesis's ASRS sets (1000 reports in 25 categories; ASRS3, 788 reports in 3 categories) are not
public. ``asrs`` stands in with the 944 public SIAM-2007 ASRS reports: ``Y`` holds their 22 anomaly
labels and ``y`` the least frequent label a report carries (its most specific anomaly). ``asrs3``
keeps the reports that carry exactly one of the three most frequent anomalies (categories 2, 6 and
19), a three-class set in the spirit of ASRS3.
"""
from __future__ import annotations

import gzip
import re
import tarfile
import zlib

import numpy as np
import scipy.sparse as sp

from .catalogue import DataRoots, DatasetEntry, register_dataset
from .corpora import with_topic_vocabulary
from .dataset import Dataset

NEWS_ARCHIVE = "text/20newsgroups/20news-19997.tar.gz"
DRAW_SEED = 2011
VOCABULARY = {"tokens": "[a-z]{2,}", "lowercase": True, "stop_words": "sklearn-english",
              "min_df": 2, "max_df": 0.5, "headers": "subject only"}
TFIDF = {"version": 2, "source": "Banerjee et al. 2005 (MC toolkit)", "headers": "all removed (Subject too)",
         "tokens": "[a-z]{2,}", "lowercase": True, "stop_words": "sklearn-english", "stemming": False,
         "min_df": "max(2, 0.2% of documents)", "max_df": 0.15, "tf": "raw count", "idf": "log(n/df)",
         "norm": "l2", "empty": "posts whose body leaves no word dropped"}
"""The pipeline of the ``X`` component (chapter 3's document vectors); bump ``version`` on any change."""

GROUPS = {
    "different": ("alt.atheism", "rec.sport.baseball", "sci.space"),
    "similar": ("talk.politics.guns", "talk.politics.mideast", "talk.politics.misc"),
    "same": ("comp.graphics", "comp.os.ms-windows.misc", "comp.windows.x"),
    # The thesis does not list News100's (CMU100's) ten groups; these cover the topics of its
    # Tables 6.3–6.5 (cars, politics, PC hardware, hockey, Macintosh files, atheism, space, medicine).
    "news": ("alt.atheism", "comp.graphics", "comp.sys.ibm.pc.hardware", "comp.sys.mac.hardware",
             "rec.autos", "rec.sport.hockey", "sci.med", "sci.space", "talk.politics.misc",
             "soc.religion.christian"),
}
_TOKEN = re.compile(r"[a-z]{2,}")


def message_body(text: str) -> str:
    """A Usenet post without its header block (everything before the first blank line): ``X``'s text."""
    return text.partition("\n\n")[2]


def _strip_headers(text: str) -> str:
    """Subject line + body: the topic-model vocabulary's text (``VOCABULARY``)."""
    head, _, body = text.partition("\n\n")
    subject = next((line[8:] for line in head.splitlines() if line.lower().startswith("subject:")), "")
    return subject + "\n" + body


def read_newsgroups(roots: DataRoots, groups: tuple[str, ...]) -> dict[str, dict[int, str]]:
    """Posts of ``groups`` from the 20news-19997 archive: group -> {post id: raw text with headers}."""
    posts: dict[str, dict[int, str]] = {g: {} for g in groups}
    with tarfile.open(roots.path(NEWS_ARCHIVE)) as archive:
        for member in archive:
            parts = member.name.split("/")
            if member.isfile() and len(parts) == 3 and parts[1] in posts:
                posts[parts[1]][int(parts[2])] = archive.extractfile(member).read().decode("latin-1")
    return posts


def draw_posts(name: str, posts: dict[str, dict[int, str]], per_group: int | None):
    """The reproducible subset: ``per_group`` posts of each group (all of them when None)."""
    rng = np.random.default_rng([DRAW_SEED, zlib.crc32(name.encode())])
    texts, labels, ids = [], [], []
    for label, group in enumerate(posts):
        order = np.array(sorted(posts[group]))
        chosen = order if per_group is None else np.sort(rng.permutation(order)[:per_group])
        for post in chosen:
            texts.append(posts[group][int(post)])
            labels.append(label)
            ids.append(f"{group}/{post}")
    return texts, np.array(labels, dtype=np.int64), ids


def count_matrix(texts: list[str]) -> tuple[sp.csr_matrix, list[str], np.ndarray]:
    """Documents × words counts under ``VOCABULARY``; returns (counts, vocab, kept document rows)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    vectorizer = CountVectorizer(lowercase=True, token_pattern=None, tokenizer=_TOKEN.findall,
                                 stop_words=sorted(ENGLISH_STOP_WORDS), min_df=VOCABULARY["min_df"],
                                 max_df=VOCABULARY["max_df"], dtype=np.int32)
    counts = vectorizer.fit_transform(texts).tocsr()
    kept = np.flatnonzero(counts.getnnz(axis=1) > 0)
    return counts[kept], list(vectorizer.get_feature_names_out()), kept


def tfidf_vectors(texts: list[str]) -> tuple[sp.csr_matrix, int]:
    """Documents × words tf-idf under ``TFIDF``: stop words out, words in at least max(2, 0.2 %)
    and at most 15 % of the documents, tf·log(n/df), rows scaled to unit length (an empty row
    stays zero). Returns (X, vocabulary size)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer
    from sklearn.preprocessing import normalize

    n = len(texts)
    vectorizer = CountVectorizer(lowercase=True, token_pattern=None, tokenizer=_TOKEN.findall,
                                 stop_words=sorted(ENGLISH_STOP_WORDS), min_df=max(2, int(np.ceil(0.002 * n))),
                                 max_df=TFIDF["max_df"], dtype=np.float64)
    counts = vectorizer.fit_transform(texts).tocsr()
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    X = counts @ sp.diags(np.log(n / df))
    return normalize(sp.csr_matrix(X)), counts.shape[1]


def _corpus(name, counts, vocab, y, meta, X: sp.csr_matrix) -> Dataset:
    meta = dict(meta, vocabulary=meta.get("vocabulary", VOCABULARY), tfidf=TFIDF)
    meta["hash_meta"] = dict(meta.get("hash_meta", {}), tfidf=TFIDF)
    return Dataset(name, {"docs": counts, "vocab": vocab, "y": y, "X": X}, meta)


def _newsgroups(name: str, kind: str, per_group: int | None):
    def load(roots: DataRoots) -> Dataset:
        groups = GROUPS[kind]
        raw, y, ids = draw_posts(name, read_newsgroups(roots, groups), per_group)
        texts = [_strip_headers(t) for t in raw]
        bodies = [message_body(t) for t in raw]
        rows = np.arange(len(raw))
        while True:  # drop posts left empty by either pipeline, refit on the rest (once or twice)
            X, words = tfidf_vectors([bodies[i] for i in rows])
            counts, vocab, kept = count_matrix([texts[i] for i in rows])
            full = np.zeros(rows.size, dtype=bool)
            full[kept] = True
            full &= X.getnnz(axis=1) > 0
            if full.all():
                break
            rows = rows[full]
        meta = {"classes": list(groups), "documents": [ids[i] for i in rows],
                "dropped_empty": int(len(raw) - rows.size), "draw_seed": DRAW_SEED, "tfidf_words": words,
                "hash_meta": {"draw_seed": DRAW_SEED}}
        return with_topic_vocabulary(_corpus(name, counts, vocab, y[rows], meta, X), [texts[i] for i in rows])
    return load


def _read_lines(roots: DataRoots, rel: str) -> list[str]:
    with gzip.open(roots.path(rel), "rt", encoding="latin-1") as handle:
        return handle.read().splitlines()


CLASSIC3_RAW = ("text/classic3/med.all.gz", "text/classic3/CISI.ALL.gz", "text/classic3/cran.all.1400.gz")


def smart_documents(lines: list[str], fields: str = "TW") -> list[str]:
    """Documents of a SMART collection file (``.I`` starts a document): the text of the ``fields``
    of each (default title ``.T`` and abstract ``.W``; ``.A`` authors, ``.B`` bibliography)."""
    docs: list[str] = []
    field = None
    for line in lines:
        if line.startswith(".I"):
            docs.append("")
            field = None
        elif len(line) >= 2 and line[0] == "." and line[1].isalpha() and line[2:].strip() == "":
            field = line[1]
        elif docs and field is not None and field in fields:
            docs[-1] += line + "\n"
    return docs


def classic3_texts(roots: DataRoots, fields: str = "TW") -> tuple[list[str], np.ndarray]:
    """The 3893 raw documents (MEDLINE, CISI, CRANFIELD; their ``fields``) and collection ids 0, 1, 2."""
    texts, labels = [], []
    for label, rel in enumerate(CLASSIC3_RAW):
        docs = smart_documents(_read_lines(roots, rel), fields)
        texts += docs
        labels += [label] * len(docs)
    return texts, np.array(labels, dtype=np.int64)


def classic3_alignment(counts: sp.csr_matrix, vocab: list[str], y: np.ndarray, texts: list[str],
                       raw_y: np.ndarray) -> np.ndarray:
    """The raw document behind each row of the count matrix (whose CISI and CRANFIELD rows are not
    in file order; ``texts`` with every field, as the matrix counts authors and bibliography too):
    within each collection the one-to-one assignment maximising the shared words (Hungarian).
    Raises unless every row finds at least 90 % of its words in its document."""
    from scipy.optimize import linear_sum_assignment

    column = {w: j for j, w in enumerate(vocab)}
    rows, cols = [], []
    for i, text in enumerate(texts):
        hits = {column[w] for w in _TOKEN.findall(text.lower()) if w in column}
        rows += [i] * len(hits)
        cols += sorted(hits)
    R = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(texts), len(vocab)))
    D = sp.csr_matrix(counts > 0, dtype=float)
    order = np.empty(D.shape[0], dtype=np.int64)
    share = np.empty(D.shape[0])
    for c in np.unique(y):
        mine, theirs = np.flatnonzero(y == c), np.flatnonzero(raw_y == c)
        overlap = (D[mine] @ R[theirs].T).toarray() / np.maximum(np.asarray(D[mine].sum(axis=1)), 1)
        _, best = linear_sum_assignment(-overlap)
        order[mine] = theirs[best]
        share[mine] = overlap[np.arange(mine.size), best]
    if share.min() < 0.9:
        raise ValueError("Classic3: the raw abstracts do not match the rows of the count matrix one to one; "
                         "check the files against SOURCE.md")
    return order


def load_classic3(roots: DataRoots) -> Dataset:
    """Classic3: ``docs``/``vocab`` are the standard 3891 × 4303 count matrix (coclust's release;
    labels MED, CISI, CRAN); ``X`` is the ``TFIDF`` pipeline over the raw abstracts of the same 3891
    documents, row for row (`classic3_alignment`; the two empty Cranfield abstracts are the ones
    the matrix drops)."""
    lines = _read_lines(roots, "text/classic3/classic3.csv.gz")
    n_docs, n_words = map(int, lines[0].split(","))
    triples = np.array([line.split(",") for line in lines[1:] if line], dtype=np.int64)
    counts = sp.csr_matrix((triples[:, 2].astype(np.int32), (triples[:, 0], triples[:, 1])),
                           shape=(n_docs, n_words))
    vocab = [w.strip() for w in _read_lines(roots, "text/classic3/classic3_terms.txt.gz")][:n_words]
    y = np.array([int(v) for v in _read_lines(roots, "text/classic3/classic3_coclustFormat_doc.csv.gz") if v.strip()])
    texts, raw_y = classic3_texts(roots)
    order = classic3_alignment(counts, vocab, y, classic3_texts(roots, "TABW")[0], raw_y)
    X, words = tfidf_vectors([texts[i] for i in order])
    meta = {"classes": ["MEDLINE", "CISI", "CRANFIELD"], "vocabulary": "coclust's Classic3 matrix as released",
            "tfidf_words": words, "raw_documents": len(texts),
            "raw_order": "each matrix row's abstract found by word overlap (classic3_alignment)"}
    return _corpus("classic3", counts, vocab, y, meta, X)


def _siam_reports(roots: DataRoots) -> tuple[list[str], np.ndarray]:
    texts = [line.partition("~")[2] for line in _read_lines(roots, "text/asrs/siam2007_TrainingData_small.txt.gz")
             if line.strip()]
    rows = [line for line in _read_lines(roots, "text/asrs/siam2007_TrainCategoryMatrix.csv.gz") if line.strip()]
    Y = (np.array([r.split(",") for r in rows[: len(texts)]], dtype=np.int64) > 0).astype(float)
    return texts, Y


def load_asrs(roots: DataRoots) -> Dataset:
    texts, Y = _siam_reports(roots)
    counts, vocab, kept = count_matrix(texts)
    Y = Y[kept]
    rarity = np.where(Y > 0, Y.sum(axis=0), np.inf)
    y = np.argmin(rarity, axis=1)
    used, y = np.unique(y, return_inverse=True)
    meta = {"classes": [f"anomaly {c + 1}" for c in used], "labels": [f"anomaly {c + 1}" for c in range(Y.shape[1])],
            "y_rule": "least frequent anomaly of the report", "dropped_empty": int(len(texts) - len(kept))}
    data = _corpus("asrs", counts, vocab, y.astype(np.int64), meta, tfidf_vectors(texts)[0][kept])
    data.components["Y"] = Y
    return with_topic_vocabulary(data, [texts[i] for i in kept])


ASRS3_CATEGORIES = (2, 6, 19)


def load_asrs3(roots: DataRoots) -> Dataset:
    texts, Y = _siam_reports(roots)
    picked = Y[:, [c - 1 for c in ASRS3_CATEGORIES]]
    rows = np.flatnonzero(picked.sum(axis=1) == 1)
    chosen = [texts[i] for i in rows]
    counts, vocab, kept = count_matrix(chosen)
    y = np.argmax(picked[rows[kept]], axis=1).astype(np.int64)
    meta = {"classes": [f"anomaly {c}" for c in ASRS3_CATEGORIES], "reports": (rows[kept] + 1).tolist(),
            "y_rule": "reports with exactly one of anomalies 2, 6, 19"}
    return with_topic_vocabulary(_corpus("asrs3", counts, vocab, y, meta, tfidf_vectors(chosen)[0][kept]),
                                 [texts[i] for i in rows[kept]])


_NEWS = "20 Newsgroups (Lang 1995), 20news-19997 release; MALT_DATA/text/20newsgroups/SOURCE.md"
_TASKS = ("topics", "semisupervised")
for _kind, _label in (("different", "easy to separate"), ("similar", "moderately hard"), ("same", "hard")):
    for _per, _suffix in ((100, "100"), (None, "1000")):
        _name = f"{_kind}{_suffix}"
        register_dataset(DatasetEntry(
            name=_name, loader=_newsgroups(_name, _kind, _per),
            description=f"20 Newsgroups {', '.join(GROUPS[_kind])} ({_label}), {_suffix} posts per group",
            shape=f"{3 * int(_suffix)} posts drawn (those left empty dropped), 3 classes", source=_NEWS, files=(NEWS_ARCHIVE,), tasks=_TASKS,
            group="text"))
register_dataset(DatasetEntry(
    name="news100", loader=_newsgroups("news100", "news", 100),
    description="20 Newsgroups, 100 posts from each of ten groups (the thesis's News100 / CMU100)",
    shape="1000 posts drawn (997 kept), 10 classes", source=_NEWS, files=(NEWS_ARCHIVE,), tasks=_TASKS, group="text"))
register_dataset(DatasetEntry(
    name="classic3", loader=load_classic3, description="Classic3: MEDLINE, CISI and CRANFIELD abstracts",
    shape="3891 docs × 4303 words, 3 classes", source="SMART collections via coclust; MALT_DATA/text/classic3/SOURCE.md",
    files=("text/classic3/classic3.csv.gz", "text/classic3/classic3_terms.txt.gz",
           "text/classic3/classic3_coclustFormat_doc.csv.gz") + CLASSIC3_RAW, tasks=_TASKS, group="text"))
_SIAM = "SIAM 2007 Text Mining Competition (NASA ASRS), first 944 reports; MALT_DATA/text/asrs/SOURCE.md"
_SIAM_FILES = ("text/asrs/siam2007_TrainingData_small.txt.gz", "text/asrs/siam2007_TrainCategoryMatrix.csv.gz")
register_dataset(DatasetEntry(
    name="asrs", loader=load_asrs, description="ASRS incident reports, 22 anomaly labels (stand-in for the thesis's ASRS)",
    shape="944 docs, 22 labels", source=_SIAM, files=_SIAM_FILES, tasks=_TASKS + ("multilabel",), group="text"))
register_dataset(DatasetEntry(
    name="asrs3", loader=load_asrs3, description="ASRS reports with exactly one of three frequent anomalies (ASRS3 stand-in)",
    shape="513 docs, 3 classes", source=_SIAM, files=_SIAM_FILES, tasks=_TASKS, group="text"))
