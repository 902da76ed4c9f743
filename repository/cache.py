"""Content-addressed artifacts (kernels, distance matrices, kNN graphs, eigendecompositions).

``cache/KEY.h5``: the key is a hash of the dataset, the artifact's name, its producer
("name@version" of the code that computes it) and its spec, so a version bump never reuses an
artifact computed by older code. Each file records that name, producer and spec, its size and how
long it took to compute, and carries a digest verified on every read: a damaged entry is named,
never used, and recomputed. Writes are atomic and idempotent, so concurrent writers of one key are
harmless and `clear` is safe at any time (a run that misses an entry recomputes it). The
modification time of an entry is its "last used" time: the writer touches the entries its units
read. The cache is optional: a write that fails (a full disk) costs the entry, never the unit that
computed it. Temporary files of writers killed mid-write are swept (`sweep`).
"""
from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from malt.errors import RepositoryError

from .files import (atomic_write, check_folder, check_no_links, describe_mode, read_bytes, refused, remove,
                    sweep_temporaries)

KEY = re.compile(r"[0-9a-f]{16,64}")
ENTRY_SECONDS = 0.02
"""Fixed cost of one entry: building the HDF5 image, fsync, rename (measured ~20 ms)."""
READ_BYTES_PER_SECOND = 100e6
"""Reading an entry back with its digest check (measured 80–300 MB/s on a loaded 2-core machine)."""


def worth_caching(nbytes: int, compute_seconds: float) -> bool:
    """Persist an artifact only if computing it again costs more than reading it back (issue 18:
    artifact reads and writes must not cost more than recomputing the artifact)."""
    return compute_seconds > ENTRY_SECONDS + nbytes / READ_BYTES_PER_SECOND


@dataclass
class Entry:
    key: str
    path: Path
    nbytes: int
    last_used: float
    name: str = ""
    producer: str = ""
    spec: str = ""
    compute_seconds: float = float("nan")


class ArtifactCache:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.folder = self.root / "cache"

    def path(self, key: str) -> Path:
        if not KEY.fullmatch(key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.folder / f"{key}.h5"

    def get(self, key: str, problems: list | None = None):
        """The artifact, or None when absent or damaged (a damaged entry is described in ``problems``)."""
        path = self.path(key)
        try:
            check_no_links(self.root, path)
            data = read_bytes(path)
        except FileNotFoundError:
            return None
        except (OSError, RepositoryError) as err:  # unreadable: recompute rather than fail the run
            if problems is not None:
                problems.append(f"{path}: {err}; it will be recomputed")
            return None
        from .hdf5 import DamagedFile, from_bytes  # h5py only when an artifact is read or written

        try:
            value, _ = from_bytes(data, str(path))
        except DamagedFile as err:
            if problems is not None:
                problems.append(f"{err}; it will be recomputed")
            return None
        return value

    def put(self, key: str, value, meta: dict) -> None:
        """Store an artifact (a damaged or missing entry is replaced; an intact one is kept)."""
        from .hdf5 import to_bytes

        path = self.path(key)
        if path.exists() and self.get(key) is not None:
            return
        atomic_write(self.root, path, to_bytes(value, dict(meta, created=time.time())))

    def touch(self, keys) -> None:
        now = time.time()
        for key in keys:
            try:
                path = self.path(key)
                check_no_links(self.root, path)
                os.utime(path, (now, now), follow_symlinks=False)
            except (OSError, ValueError, RepositoryError):
                pass  # last-used times are advisory

    def check_entries(self) -> None:
        """Refuse (by name) a link, FIFO, device, socket or folder in the place of an entry: readers
        and `clear` would otherwise meet it (checked by the driver before a run, and by listings)."""
        self._scan()

    def _scan(self) -> list:
        check_folder(self.root, self.folder)
        if not os.path.lexists(self.folder):
            return []
        found = []
        for item in sorted(os.scandir(self.folder), key=lambda e: e.name):
            if not item.name.endswith(".h5") or not KEY.fullmatch(item.name[:-3]):
                continue
            if not item.is_file(follow_symlinks=False):
                raise refused(item.path, describe_mode(item.stat(follow_symlinks=False).st_mode))
            found.append(item)
        return found

    def entries(self) -> list[Entry]:
        """The entries (regular files with a key's name; a link or anything else there is refused)."""
        from .hdf5 import read_meta

        out = []
        for item in self._scan():
            key = item.name[:-3]
            st = item.stat(follow_symlinks=False)
            meta = read_meta(Path(item.path))
            out.append(Entry(key, Path(item.path), st.st_size, st.st_mtime, meta.get("name", "?"),
                             meta.get("producer", "?"), meta.get("spec", ""),
                             float(meta.get("compute_seconds", float("nan")))))
        return out

    def remove(self, key: str) -> bool:
        return remove(self.root, self.path(key))

    def sweep(self, older_than: float = 3600.0) -> list[str]:
        """Remove temporary files of cache writers killed mid-write: those of a process no longer
        running (after a minute's grace) or older than ``older_than`` (0 only under the exclusive
        repository lock: every cache writer holds it shared)."""
        return sweep_temporaries(self.root, self.folder, older_than, dead_after=60.0)

    def verify(self) -> list[str]:
        """Check every entry; delete damaged ones (they are recomputed on demand). Returns what was done."""
        done = []
        for entry in self.entries():
            problems: list[str] = []
            if self.get(entry.key, problems) is None and problems:
                self.remove(entry.key)
                done.append(f"removed damaged cache entry {entry.path} ({entry.name})")
        return done
