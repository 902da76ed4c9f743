"""Resolve what a user passes as --dataset: a catalogue name, a name imported into the
repository, or a file path (MULAN ARFF with --labels, or CSV/TSV)."""
from __future__ import annotations

from pathlib import Path

from malt.datasets.catalogue import DataRoots, catalogue, entry
from malt.datasets.dataset import Dataset
from malt.errors import DataError, unknown_name


def open_dataset(ref: str, repo=None, labels: str | None = None) -> Dataset:
    """Load the dataset ``ref``; ``repo`` (a Repository or None) supplies imported names and data/."""
    if repo is not None and repo.exists and ref in repo.imported():
        return repo.load_dataset(ref)
    known = catalogue()
    if ref in known:
        roots = DataRoots.default(repo.path if repo is not None else None)
        return known[ref].loader(roots)
    path = Path(ref)
    if path.suffix.lower() in (".arff", ".csv", ".tsv", ".txt", ".gz") or path.exists():
        return load_file(path, labels=labels)
    names = list(known) + (repo.imported() if repo is not None and repo.exists else [])
    raise unknown_name("dataset", ref, names,
                       "Run `malt datasets` to list them, or pass a file path or an imported name.")


def load_file(path: Path, labels: str | None = None, name: str | None = None) -> Dataset:
    """A user's file: ARFF (+ MULAN XML via ``labels``, or the last N attributes via ``labels='N'``) or CSV."""
    if not path.exists():
        raise DataError(f"File not found: {path}")
    name = name or path.name.split(".")[0]
    if ".arff" in path.name.lower():
        from malt.datasets.arff import read_arff
        from malt.datasets.mulan import load_mulan

        if labels is None:
            raise DataError(f"{path} is ARFF: say which attributes are labels with --labels FILE.xml "
                            "(MULAN header) or --labels N (the last N attributes).")
        if labels.isdigit():
            attributes, data, _ = read_arff(path)
            n = int(labels)
            if not 0 < n < len(attributes):
                raise DataError(f"--labels {n}: {path} has {len(attributes)} attributes.")
            return Dataset(name, {"X": data[:, :-n], "Y": data[:, -n:]},
                           {"label_names": [a.name for a in attributes[-n:]], "source_files": [str(path)]})
        return load_mulan(name, [path], Path(labels))
    from malt.datasets.delimited import load_delimited

    return load_delimited(path, name=name, labels=labels)
