"""Resolve what a user passes as --dataset: a catalogue name, a name imported into the
repository (either matched ignoring letter case when that is unambiguous), or a file path (ARFF
with --labels, or CSV/TSV)."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from malt.datasets.catalogue import DataRoots, catalogue, describe_entry, resolve
from malt.datasets.dataset import Dataset, check_labels
from malt.errors import DataError, unknown_name

FILE_SUFFIXES = (".arff", ".csv", ".tsv", ".txt", ".dat", ".data", ".gz")


def open_dataset(ref: str, repo=None, labels: str | None = None) -> Dataset:
    """Load the dataset ``ref``; ``repo`` (a Repository or None) supplies imported names and data/."""
    if not ref or not ref.strip():
        raise DataError("--dataset is empty; pass a dataset name (`malt datasets` lists them) or a file path.")
    imported = repo.imported() if repo is not None and repo.exists else []
    known = catalogue()
    if ref in imported:
        return repo.datasets.load(ref)
    if ref not in known:
        matches = {n for n in imported + list(known) if n.casefold() == ref.casefold()}
        if len(matches) > 1:
            raise DataError(f"--dataset {ref!r} matches {', '.join(sorted(matches))} ignoring case; give the exact "
                            "name.")
        if matches:
            ref = matches.pop()
            if ref in imported:
                return repo.datasets.load(ref)
    if ref in known:
        roots = DataRoots.default(repo.path if repo is not None else None)
        item = known[ref]
        dataset = item.loader(roots)
        dataset.meta.setdefault("source", item.source)
        return dataset
    path = Path(ref)
    if path.suffix.lower() in FILE_SUFFIXES or path.exists() or "/" in ref:
        return load_file(path, labels=labels)
    raise unknown_name("dataset", ref, list(known) + imported,
                       "Run `malt datasets` to list them, or pass a file path or an imported name.")


def catalogue_info(name: str, repo=None) -> dict[str, str] | None:
    """Citation, source, shape and download locations of a catalogue name (case-insensitive), for
    `malt datasets show NAME`; None for names that are not in the catalogue."""
    found = resolve(name)
    if found is None:
        return None
    return describe_entry(catalogue()[found], DataRoots.default(repo.path if repo is not None else None))


def name_from_path(path: Path) -> str:
    """A dataset name derived from a file name: its stem before the first dot, reduced to letters,
    digits, '.', '_', '+', '-' (so it can name files and experiments); 'data' if nothing is left."""
    stem = path.name.split(".")[0]
    name = re.sub(r"[^A-Za-z0-9._+-]+", "-", stem).strip("-._+")[:100]
    return name or "data"


def load_file(path: Path, labels: str | None = None, name: str | None = None, impute: str = "none",
              header: str = "auto") -> Dataset:
    """A user's file: ARFF (+ MULAN XML via ``labels``, or the last N attributes via ``labels='N'``)
    or a delimited text file (see `malt.datasets.delimited.load_delimited`). Every label must have
    a positive and a negative example."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"File not found: {path}")
    if path.is_dir():
        raise DataError(f"{path} is a folder; pass a data file (ARFF, CSV/TSV, optionally .gz).")
    name = name if name is not None else name_from_path(path)
    if ".arff" in path.name.lower():
        dataset = _load_arff(path, labels, name, impute)
    else:
        from malt.datasets.delimited import load_delimited

        dataset = load_delimited(path, name=name, labels=labels, impute=impute, header=header)
    check_labels(dataset)
    return dataset


def load_file_pair(train: Path, test: Path, labels: str | None = None, name: str | None = None,
                   impute: str = "none") -> Dataset:
    """A train file and a test file (MULAN's ``name-train.arff`` / ``name-test.arff``, or two CSVs with
    the same columns) as one dataset whose first rows are the training file's: ``meta['given_train']``
    records the split, so ``--split given`` reproduces the file pair's protocol. Every label needs a
    positive and a negative example in the two files together; one that has none among the training
    rows is accepted (normal for rare labels: it is never predicted, and its test positives count as
    misses). ``impute='mean'`` fills missing feature values with column means over both files."""
    train, test = Path(train), Path(test)
    for path in (train, test):
        if not path.exists():
            raise DataError(f"File not found: {path}")
    name = name if name is not None else name_from_path(train)
    arff = ".arff" in train.name.lower()
    if arff != (".arff" in test.name.lower()):
        raise DataError(f"{train} and {test} must both be ARFF or both delimited text files.")
    if arff and labels is not None and not labels.strip().isdigit() and Path(labels).exists():
        from malt.datasets.mulan import load_mulan

        dataset = load_mulan(name, [train, test], Path(labels), impute=impute)
    else:
        parts = []
        for path in (train, test):
            if arff:
                parts.append(_load_arff(path, labels, name, impute))
            else:
                from malt.datasets.delimited import load_delimited

                parts.append(load_delimited(path, name=name, labels=labels, impute=impute))
        first, second = parts
        if first.meta.get("feature_names") != second.meta.get("feature_names") or \
                first.meta.get("label_names") != second.meta.get("label_names"):
            raise DataError(f"{test} has other feature or label columns than {train}; the two files of a split must "
                            "share their columns.")
        if "Y" not in first:
            raise DataError(f"{train}: a train/test pair needs label columns (--labels); class columns are not "
                            "supported here.")
        import scipy.sparse as sp

        X = (sp.vstack([first["X"], second["X"]]).tocsr() if sp.issparse(first["X"]) or sp.issparse(second["X"])
             else np.vstack([first["X"], second["X"]]))
        meta = dict(first.meta, source_files=[str(train), str(test)], given_train=int(first.n_rows))
        dataset = Dataset(name, {"X": X, "Y": np.vstack([first["Y"], second["Y"]])}, meta)
    # where the split falls is part of the data's identity: the same rows cut elsewhere are another dataset
    dataset.meta["hash_meta"] = dict(dataset.meta.get("hash_meta", {}), given_train=int(dataset.meta["given_train"]))
    check_labels(dataset)
    return dataset


def _load_arff(path: Path, labels: str | None, name: str, impute: str = "none") -> Dataset:
    from malt.datasets.arff import feature_matrix, label_matrix, read_arff
    from malt.datasets.mulan import load_mulan

    if labels is None:
        raise DataError(f"{path} is ARFF: say which attributes are labels with --labels FILE.xml "
                        "(MULAN header) or --labels N (the last N attributes).")
    if labels.strip().isdigit():
        arff = read_arff(path)
        n = int(labels)
        n_attr = len(arff.attributes)
        if not 0 < n < n_attr:
            raise DataError(f"--labels {n}: the number of label attributes must be between 1 and {n_attr - 1} "
                            f"({path} has {n_attr} attributes).")
        X, feature_names = feature_matrix(arff, list(range(n_attr - n)))
        Y = label_matrix(arff, list(range(n_attr - n, n_attr)))
        meta = {"label_names": arff.names[-n:], "feature_names": feature_names, "source_files": [str(path)]}
        return Dataset(name, {"X": _impute(X, impute, meta, path), "Y": Y}, meta)
    xml = Path(labels)
    if not xml.exists():
        raise DataError(f"--labels {labels}: no such file; pass MULAN's XML label file or a number of label "
                        "attributes (the last N).")
    return load_mulan(name, [path], xml, impute=impute)


def _impute(X, impute: str, meta: dict, path: Path):
    from malt.datasets.delimited import impute_features

    return impute_features(X, impute, meta, path, meta.get("feature_names"))
