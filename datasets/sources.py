"""Where an experiment's data came from, so `malt rerun` can reopen it from anywhere.

A source is recorded in every experiment's spec:

* ``{"kind": "catalogue", "name": N}`` — a named dataset of malt's catalogue;
* ``{"kind": "imported", "name": N, "hash": H}`` — imported into the repository; reopened by content
  hash, so re-importing the name later does not change what the experiment used;
* ``{"kind": "file", "path": ABSOLUTE, "labels": …, "hash": H}`` — a user's own file, with the
  options it was read with (``--labels`` as an absolute path when it names a file).

Reopening checks the content hash against the one the experiment recorded: data that really
changed gets one line naming the file, never results mixed across versions.
"""
from __future__ import annotations

from pathlib import Path

from malt.datasets.dataset import Dataset
from malt.errors import DataError


def open_source(ref: str, repo=None, labels: str | None = None) -> tuple[Dataset, dict]:
    """The dataset a user named on the command line, and its source record. Names match ignoring
    letter case when that is unambiguous (imported names first, then the catalogue)."""
    from malt.datasets.open import load_file, open_dataset
    from malt.datasets.catalogue import resolve

    if not isinstance(ref, str) or not ref.strip():
        raise DataError("--dataset is empty; give a dataset name (`malt datasets` lists them) or a file path.")
    imported = repo.imported() if repo is not None and repo.exists else []
    name = resolve(ref, imported)
    if name is None:
        name = resolve(ref)
        kind = "catalogue" if name is not None else "file"
    else:
        kind = "imported"
    if labels is not None and kind != "file":
        raise DataError(f"--labels applies to a file given as --dataset; '{ref}' is a named dataset whose labels "
                        "are known. Drop --labels.")
    if kind == "imported":
        dataset = repo.datasets.load(name)
        return dataset, {"kind": "imported", "name": name, "hash": dataset.hash}
    if kind == "catalogue":
        return open_dataset(name, repo), {"kind": "catalogue", "name": name}
    path = Path(ref).expanduser()
    if not path.exists():
        open_dataset(ref, repo, labels=labels)  # raises the standard unknown-name or not-found message
    dataset = load_file(path, labels=labels)
    label_option = labels
    if labels and not labels.strip().isdigit() and Path(labels).expanduser().exists():
        label_option = str(Path(labels).expanduser().resolve())
    return dataset, {"kind": "file", "path": str(path.resolve()), "labels": label_option, "hash": dataset.hash}


def reopen(spec: dict, repo) -> Dataset:
    """The dataset an experiment was run on, checked against its recorded content hash."""
    from malt.datasets.open import open_dataset

    source = spec.get("source") or {"kind": "legacy", "ref": spec.get("dataset_ref", spec.get("dataset"))}
    expected = spec.get("dataset_hash")
    kind = source.get("kind")
    if kind == "imported":
        dataset = repo.datasets.load(source["name"], content_hash=source.get("hash") or expected)
        where = f"imported dataset '{source['name']}'"
    elif kind == "catalogue":
        dataset = open_dataset(source["name"], repo)
        where = f"dataset '{source['name']}'"
    elif kind == "file":
        from malt.datasets.open import load_file

        path = Path(source["path"])
        if not path.exists():
            raise DataError(f"The file {path} that experiment {spec.get('experiment')} was run on no longer exists; "
                            "restore it, or start a new experiment with `malt cv`.")
        dataset = load_file(path, labels=source.get("labels"))
        where = f"file {path}"
    else:  # specs written before sources were recorded: the reference as the user typed it
        ref = source.get("ref")
        if repo is not None and repo.exists and ref in repo.imported():
            dataset = repo.datasets.load(ref, content_hash=expected)
        else:
            dataset = open_dataset(ref, repo)
        where = f"dataset '{ref}'"
    if expected and dataset.hash != expected:
        raise DataError(f"The {where} changed since experiment {spec.get('experiment')} was run (its content hash "
                        "differs); its results belong to the old data. Start a new experiment with `malt cv`.")
    dataset.name = spec.get("dataset", dataset.name)
    return dataset
