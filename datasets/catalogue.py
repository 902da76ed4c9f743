"""The catalogue of named datasets.

Each module in `malt.datasets` registers its named datasets with `register_dataset`; the loader of
an entry receives a `DataRoots` that finds its files in ``MALT_DATA`` (laid out like
``../shared/datasets``) or in the repository's ``data/`` folder, where `malt datasets fetch` puts
downloads. Datasets with ``files=()`` (scikit-learn bundles, synthetic generators) are always there.
"""
from __future__ import annotations

import importlib
import os
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from malt.errors import DataError, unknown_name

from .dataset import NAME_MAX, Dataset, validate_name  # noqa: F401  (validate_name: part of this API)


@dataclass(frozen=True)
class Remote:
    """One downloadable file: where it comes from, where it goes (relative path), its sha256."""

    url: str
    path: str
    sha256: str


@dataclass(frozen=True)
class DatasetEntry:
    name: str
    loader: Callable[["DataRoots"], Dataset]
    description: str
    shape: str  # human summary, e.g. "593 × 72, 6 labels"
    source: str  # citation / origin
    files: tuple[str, ...] = ()  # relative paths that must exist under a data root
    remotes: tuple[Remote, ...] = ()
    tasks: tuple[str, ...] = ()
    group: str = ""


class DataRoots:
    """The folders searched for dataset files, in order."""

    def __init__(self, roots: list[Path]):
        self.roots = [Path(r) for r in roots]

    @classmethod
    def default(cls, repo_path: Path | None = None) -> "DataRoots":
        roots = []
        env = os.environ.get("MALT_DATA")
        if env:
            roots.append(Path(env))
        if repo_path is not None:
            roots.append(Path(repo_path) / "data")
        return cls(roots)

    def find(self, relpath: str) -> Path | None:
        for root in self.roots:
            candidate = root / relpath
            if candidate.exists():
                return candidate
        return None

    def path(self, relpath: str) -> Path:
        found = self.find(relpath)
        if found is None:
            where = ", ".join(str(r) for r in self.roots) or "(no data folder: MALT_DATA is not set)"
            raise DataError(
                f"Data file '{relpath}' not found in {where}. Set MALT_DATA to a folder laid out like "
                f"shared/datasets, or run `malt datasets fetch` for this dataset."
            )
        return found


_CATALOGUE: dict[str, DatasetEntry] = {}
_LOADED = False


def register_dataset(entry: DatasetEntry) -> DatasetEntry:
    if entry.name in _CATALOGUE and _CATALOGUE[entry.name] is not entry:
        raise TypeError(f"dataset name {entry.name!r} is registered twice")
    _CATALOGUE[entry.name] = entry
    return entry


def catalogue() -> dict[str, DatasetEntry]:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        import malt.datasets as package

        for info in pkgutil.walk_packages(package.__path__, prefix="malt.datasets."):
            importlib.import_module(info.name)
    return dict(sorted(_CATALOGUE.items()))


def resolve(name: str, known=None) -> str | None:
    """The catalogue (or ``known``) name that ``name`` means: itself, or the one name equal to it
    ignoring letter case (``CAL500`` -> ``cal500``); None when there is none or several."""
    names = list(catalogue() if known is None else known)
    if name in names:
        return name
    folded = [n for n in names if n.casefold() == name.casefold()]
    return folded[0] if len(folded) == 1 else None


def entry(name: str) -> DatasetEntry:
    found = resolve(name)
    if found is None:
        raise unknown_name("dataset", name, catalogue(),
                           "Run `malt datasets` to list them, or pass a file path or an imported name.")
    return _CATALOGUE[found]


def describe_entry(item: DatasetEntry, roots: "DataRoots | None" = None) -> dict[str, str]:
    """What `malt datasets show NAME` prints about a catalogue entry besides the data itself:
    description, shape, citation/source, tasks, files and download locations."""
    info = {"description": item.description, "shape": item.shape, "source": item.source,
            "tasks": ", ".join(item.tasks) or "any"}
    if item.files:
        info["files"] = ", ".join(item.files)
        if roots is not None:
            info["available"] = "yes" if available(item, roots) else (
                "no: `malt datasets fetch " + item.name + "`" if item.remotes else "no: place the files under MALT_DATA")
    if item.remotes:
        info["download"] = ", ".join(r.url for r in item.remotes)
    return info




def available(item: DatasetEntry, roots: DataRoots) -> bool:
    return all(roots.find(f) is not None for f in item.files)
