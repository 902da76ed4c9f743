"""The on-disk repository: imported datasets, cached artifacts and one result set per experiment.

Layout::

    REPO/malt-repository.json          marker (format version)
    REPO/.lock                         one writer at a time (flock)
    REPO/data/                         files downloaded by `malt datasets fetch` (MALT_DATA layout)
    REPO/datasets/NAME.h5              datasets imported with `malt datasets import`
    REPO/cache/KEY.h5                  content-addressed artifacts (kernels, distances, graphs)
    REPO/experiments/ID/spec.json      dataset, task, task params and the plan of (algorithm, params)
    REPO/experiments/ID/results.h5     compacted unit records (JSON strings with checksums)
    REPO/experiments/ID/journal/*.json units finished since the last compaction

Crash safety: a finished unit lands in the journal by write-to-temp + rename; compaction writes a
new results.h5 the same way and only then deletes the journal files it absorbed. A kill -9 at any
instant leaves either the journal entry or the compacted copy (or both: duplicates are merged by
key, the newest record winning).
"""
from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import h5py
import numpy as np
import scipy.sparse as sp

from malt.errors import RepositoryError

from .files import atomic_write, sealed, unseal, write_json

FORMAT = 1
MARKER = "malt-repository.json"
COMPACT_EVERY = int(os.environ.get("MALT_COMPACT_EVERY", "200"))
"""Journal entries that trigger a compaction (tests lower it to kill the driver mid-compaction)."""


def default_path() -> Path:
    return Path(os.environ.get("MALT_REPO", "results"))


class Repository:
    """A repository folder. Reading needs no lock; every write happens inside `writing()`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock_fd: int | None = None
        self._journal_sizes: dict[str, int] = {}

    # ---- existence and locking -----------------------------------------------------------
    @property
    def exists(self) -> bool:
        return (self.path / MARKER).is_file()

    def check_readable(self) -> "Repository":
        if self.path.exists() and not self.path.is_dir():
            raise RepositoryError(f"{self.path} is a file, not a malt repository; pass --repo with a folder.")
        if not self.exists:
            if self.path.is_dir() and any(self.path.iterdir()):
                raise RepositoryError(f"{self.path} is a folder but not a malt repository (no {MARKER}); "
                                      "pass --repo with a repository folder or a new path.")
            raise RepositoryError(f"No repository at {self.path}; run `malt cv ...` to create one, "
                                  "or point --repo / MALT_REPO (or the PATH argument) at an existing repository.")
        return self

    def check_writable_target(self) -> None:
        """Fail (touching nothing) if the path cannot become or be a repository."""
        if self.path.exists() and not self.path.is_dir():
            raise RepositoryError(f"{self.path} is a file, not a malt repository; pass --repo with a folder.")
        if self.path.is_dir() and not self.exists and any(self.path.iterdir()):
            raise RepositoryError(f"{self.path} is a folder but not a malt repository (no {MARKER}); "
                                  "pass --repo with a repository folder or a new path.")

    def lock(self, wait: bool = False) -> None:
        self.check_writable_target()
        self.path.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise RepositoryError(f"Repository {self.path} is in use by {holder}; wait for it to finish, "
                                  "or pass --wait to queue behind it.") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"malt pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode())
        self._lock_fd = fd
        if not self.exists:
            write_json(self.path / MARKER, {"format": FORMAT, "created": time.time()})
        self._remove_stale_temporaries()

    def _remove_stale_temporaries(self) -> None:
        """Temporary files left by a writer killed mid-write (we hold the lock: nobody else writes)."""
        for tmp in self.path.rglob(".*.tmp"):
            tmp.unlink(missing_ok=True)

    def unlock(self) -> None:
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.unlock()

    def _require_lock(self):
        if self._lock_fd is None:
            raise RuntimeError("repository writes need repo.lock() first")

    # ---- experiments ---------------------------------------------------------------------
    def experiment_dir(self, experiment_id: str) -> Path:
        return self.path / "experiments" / experiment_id

    def experiments(self) -> list[str]:
        root = self.path / "experiments"
        return sorted(p.name for p in root.iterdir() if (p / "spec.json").is_file()) if root.is_dir() else []

    def read_spec(self, experiment_id: str) -> dict:
        path = self.experiment_dir(experiment_id) / "spec.json"
        try:
            return json.loads(path.read_text())
        except FileNotFoundError:
            from malt.errors import unknown_name

            raise unknown_name("experiment", experiment_id, self.experiments(),
                               "Run `malt results` to list the experiments.") from None
        except json.JSONDecodeError:
            raise RepositoryError(f"{path} is damaged (not valid JSON); restore it from a backup or delete "
                                  f"the experiment folder {path.parent}.") from None

    def write_spec(self, experiment_id: str, spec: dict) -> None:
        self._require_lock()
        write_json(self.experiment_dir(experiment_id) / "spec.json", spec)

    def commit_unit(self, experiment_id: str, record: dict) -> None:
        """Store one finished unit durably (journal entry), compacting every COMPACT_EVERY entries."""
        self._require_lock()
        journal = self.experiment_dir(experiment_id) / "journal"
        text = sealed(record)
        atomic_write(journal / f"{record['unit']}-{time.time_ns()}.json", lambda tmp: tmp.write_text(text))
        if experiment_id not in self._journal_sizes:
            self._journal_sizes[experiment_id] = sum(1 for _ in journal.glob("*.json"))
        else:
            self._journal_sizes[experiment_id] += 1
        if self._journal_sizes[experiment_id] >= COMPACT_EVERY:
            self.compact(experiment_id)

    def units(self, experiment_id: str, problems: list | None = None) -> dict[str, dict]:
        """Every stored unit record of an experiment by unit key (newest record wins).

        Damaged entries are skipped and described in ``problems`` when a list is given.
        """
        problems = problems if problems is not None else []
        records: dict[str, dict] = {}
        results = self.experiment_dir(experiment_id) / "results.h5"
        if results.exists():
            try:
                with h5py.File(results, "r") as f:
                    texts = f["units"].asstr()[()] if "units" in f else []
                for i, text in enumerate(texts):
                    try:
                        rec = unseal(text)
                        _keep_newest(records, rec)
                    except (ValueError, KeyError):
                        problems.append(f"{results}: unit record {i} is damaged")
            except OSError as err:
                problems.append(f"{results}: unreadable ({err}); run `malt repair --experiment {experiment_id}` "
                                "to drop it and recompute its units with `malt rerun`")
        journal = self.experiment_dir(experiment_id) / "journal"
        if journal.is_dir():
            for path in sorted(journal.glob("*.json")):
                try:
                    _keep_newest(records, unseal(path.read_text()))
                except (ValueError, KeyError, OSError):
                    problems.append(f"{path}: damaged journal entry; `malt repair --experiment {experiment_id}` "
                                    "removes it")
        return records

    def compact(self, experiment_id: str) -> None:
        """Fold the journal into results.h5 (atomically), then delete the absorbed journal files."""
        self._require_lock()
        folder = self.experiment_dir(experiment_id)
        journal_files = sorted((folder / "journal").glob("*.json")) if (folder / "journal").is_dir() else []
        if not journal_files:
            return
        records = self.units(experiment_id)
        texts = [sealed(records[k]) for k in sorted(records)]

        def write(tmp: Path):
            with h5py.File(tmp, "w") as f:
                f.create_dataset("units", data=np.array(texts, dtype=object), dtype=h5py.string_dtype())
                f.attrs["format"] = FORMAT

        atomic_write(folder / "results.h5", write)
        for path in journal_files:
            path.unlink(missing_ok=True)
        self._journal_sizes.pop(experiment_id, None)

    def repair(self, experiment_id: str) -> list[str]:
        """Drop damaged parts of an experiment, keeping every readable unit; returns what was done."""
        self._require_lock()
        problems: list[str] = []
        records = self.units(experiment_id, problems)
        folder = self.experiment_dir(experiment_id)
        for path in (folder / "journal").glob("*.json") if (folder / "journal").is_dir() else []:
            try:
                unseal(path.read_text())
            except (ValueError, KeyError, OSError):
                path.unlink()
        texts = [sealed(records[k]) for k in sorted(records)]

        def write(tmp: Path):
            with h5py.File(tmp, "w") as f:
                f.create_dataset("units", data=np.array(texts, dtype=object), dtype=h5py.string_dtype())
                f.attrs["format"] = FORMAT

        atomic_write(folder / "results.h5", write)
        for path in (folder / "journal").glob("*.json") if (folder / "journal").is_dir() else []:
            path.unlink()
        return problems

    # ---- cache ---------------------------------------------------------------------------
    def cache_get(self, key: str):
        path = self.path / "cache" / f"{key}.h5"
        if not path.exists():
            return None
        try:
            with h5py.File(path, "r") as f:
                return read_value(f["value"])
        except (OSError, KeyError):
            return None  # a damaged cache entry is recomputed, never trusted

    def cache_put(self, key: str, value) -> None:
        self._require_lock()
        path = self.path / "cache" / f"{key}.h5"
        if path.exists():
            return

        def write(tmp: Path):
            with h5py.File(tmp, "w") as f:
                write_value(f, "value", value)

        atomic_write(path, write)

    # ---- imported datasets ---------------------------------------------------------------
    def dataset_path(self, name: str) -> Path:
        return self.path / "datasets" / f"{name}.h5"

    def imported(self) -> list[str]:
        root = self.path / "datasets"
        return sorted(p.stem for p in root.glob("*.h5")) if root.is_dir() else []

    def save_dataset(self, dataset) -> Path:
        self._require_lock()
        path = self.dataset_path(dataset.name)

        def write(tmp: Path):
            with h5py.File(tmp, "w") as f:
                group = f.create_group("components")
                for key, value in dataset.components.items():
                    write_value(group, key, value)
                f.attrs["meta"] = json.dumps(dataset.meta, default=str)
                f.attrs["name"] = dataset.name

        atomic_write(path, write)
        return path

    def load_dataset(self, name: str):
        from malt.datasets.dataset import Dataset

        path = self.dataset_path(name)
        try:
            with h5py.File(path, "r") as f:
                components = {k: read_value(v) for k, v in f["components"].items()}
                meta = json.loads(f.attrs["meta"])
        except (OSError, KeyError) as err:
            raise RepositoryError(f"Imported dataset {path} is damaged ({err}); import it again with "
                                  "`malt datasets import`.") from None
        return Dataset(name, components, meta)


class ReadOnlyCache:
    """What a worker may use: reads cached artifacts of a repository, never writes."""

    def __init__(self, path: str | Path):
        self.repo = Repository(path)

    def get(self, key: str):
        return self.repo.cache_get(key)


def _keep_newest(records: dict, rec: dict) -> None:
    old = records.get(rec["unit"])
    if old is None or rec.get("timestamp", 0) >= old.get("timestamp", 0):
        records[rec["unit"]] = rec


# ---- values <-> HDF5 ---------------------------------------------------------------------
def write_value(group, key: str, value) -> None:
    if sp.issparse(value):
        coo = value.tocoo()
        g = group.create_group(key)
        g.attrs["kind"] = "coo" if sp.isspmatrix_coo(value) or isinstance(value, sp.coo_array) else "csr"
        g.attrs["shape"] = coo.shape
        for name, arr in (("row", coo.row), ("col", coo.col), ("data", coo.data)):
            g.create_dataset(name, data=arr, compression="gzip" if arr.size > 1024 else None)
    elif isinstance(value, dict):
        g = group.create_group(key)
        g.attrs["kind"] = "dict"
        for k, v in value.items():
            write_value(g, k, v)
    elif isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.dtype == object):
        ds = group.create_dataset(key, data=np.array([str(v) for v in value], dtype=object),
                                  dtype=h5py.string_dtype())
        ds.attrs["kind"] = "strings"
    else:
        arr = np.asarray(value)
        ds = group.create_dataset(key, data=arr, compression="gzip" if arr.size > 4096 else None)
        ds.attrs["kind"] = "array"


def read_value(node):
    kind = node.attrs.get("kind", "array")
    if kind in ("coo", "csr"):
        shape = tuple(node.attrs["shape"])
        m = sp.coo_matrix((node["data"][()], (node["row"][()], node["col"][()])), shape=shape)
        return m if kind == "coo" else m.tocsr()
    if kind == "dict":
        return {k: read_value(v) for k, v in node.items()}
    if kind == "strings":
        return list(node.asstr()[()])
    return node[()]
