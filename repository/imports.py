"""Datasets imported into a repository (`malt datasets import`).

``datasets/objects/HASH.h5`` holds a dataset's content, addressed by its content hash (the hash
every experiment records), and ``datasets/NAME.json`` points a name at one object. Re-importing a
name needs ``force`` and only moves the pointer: experiments on the old content keep finding it by
hash, so they stay reproducible. Loading recomputes the content hash, so a damaged object is named
and never used. Repositories written before this layout kept ``datasets/NAME.h5``; those files are
still read (and verified against the hash an experiment recorded, when there is one).
"""
from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

from malt.errors import DataError, RepositoryError

from .files import RefusedEntry, atomic_write, check_folder, check_no_links, ensure_dir, read_bytes, validate_name
from .integrity import DamagedJSON, seal, unseal_json
from .locks import FileLock

IMPORT_AGAIN = "import the file again with `malt datasets import`"
"""What to do after an import's write failed (nothing of it was committed)."""


class DatasetStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.folder = self.root / "datasets"

    def pointer_path(self, name: str) -> Path:
        return self.folder / f"{validate_name('dataset', name)}.json"

    def object_path(self, content_hash: str) -> Path:
        if not all(c in "0123456789abcdef" for c in content_hash) or len(content_hash) != 64:
            raise RepositoryError(f"not a dataset content hash: {content_hash!r}")
        return self.folder / "objects" / f"{content_hash}.h5"

    def names(self) -> list[str]:
        check_folder(self.root, self.folder)  # a link is refused, never listed through
        if not self.folder.is_dir():
            return []
        found = {p.stem for p in self.folder.glob("*.json")} | {p.stem for p in self.folder.glob("*.h5")}
        return sorted(n for n in found if not n.startswith("."))

    def pointer(self, name: str) -> dict | None:
        path = self.pointer_path(name)
        try:
            return unseal_json(read_bytes(path), str(path))
        except FileNotFoundError:
            return None

    def save(self, dataset, source: dict, force: bool = False) -> Path:
        """Store the dataset's content (if new) and point ``dataset.name`` at it."""
        name = validate_name("dataset", dataset.name)
        check_folder(self.root, self.folder)
        check_folder(self.root, self.folder / "objects")
        try:
            current = self.pointer(name)
        except DamagedJSON:
            if not force:
                raise
            current = None  # --force points the name at the new content: the damaged pointer is replaced
        legacy = self.folder / f"{name}.h5"
        if (current is not None or os.path.lexists(legacy)) and not force:
            old = current["hash"][:16] if current else "an earlier import"
            raise RepositoryError(f"A dataset named '{name}' is already imported ({old}); pass --force to point the "
                                  "name at the new content (experiments on the old content keep it), or choose "
                                  "another name.")
        ensure_dir(self.root, self.folder / "objects")
        with FileLock(self.root, self.folder / ".lock", f"Datasets of {self.root}").acquire(wait=True):
            from .hdf5 import to_bytes

            target = self.object_path(dataset.hash)
            if not os.path.lexists(target):
                meta = {"name": dataset.name, "hash": dataset.hash, "meta": dataset.meta}
                atomic_write(self.root, target, to_bytes(dataset.components, meta), then=IMPORT_AGAIN)
            pointer = {"name": name, "hash": dataset.hash, "object": f"objects/{dataset.hash}.h5",
                       "source": source, "imported": time.time(), "rows": dataset.n_rows}
            atomic_write(self.root, self.pointer_path(name), seal(pointer), then=IMPORT_AGAIN)
        return target

    def load(self, name: str | None = None, content_hash: str | None = None):
        """The dataset by name (its current content) or by content hash (what an experiment used)."""
        from malt.datasets.dataset import Dataset

        if content_hash is None:
            pointer = self.pointer(name)
            if pointer is None:
                return self._legacy(name, None)
            content_hash = pointer["hash"]
        path = self.object_path(content_hash)
        try:
            check_no_links(self.root, path)
            data = read_bytes(path)
        except FileNotFoundError:
            if name is not None and os.path.lexists(self.folder / f"{name}.h5"):
                return self._legacy(name, content_hash)
            raise DataError(f"The imported data {content_hash[:16]} ({name or 'by hash'}) is no longer in "
                            f"{self.folder}; import the file again with `malt datasets import`.") from None
        from .hdf5 import DamagedFile, from_bytes

        try:
            components, meta = from_bytes(data, str(path))
        except DamagedFile as err:
            raise DataError(f"{err}; import the dataset again with `malt datasets import --force`.") from None
        dataset = Dataset(meta.get("name", name or "imported"), components, meta.get("meta", {}))
        if name is not None:
            dataset.name = name
        if dataset.hash != content_hash:
            raise DataError(f"{path} is damaged (its content no longer has the hash it was stored under); "
                            "import the dataset again with `malt datasets import --force`.")
        return dataset

    def _legacy(self, name: str | None, content_hash: str | None):
        """A ``datasets/NAME.h5`` written by the earlier layout (no digest of its own)."""
        import h5py

        from malt.datasets.dataset import Dataset
        from malt.repository.hdf5 import read_node

        if name is None:
            raise DataError("no imported dataset given")
        path = self.folder / f"{validate_name('dataset', name)}.h5"
        check_no_links(self.root, path)
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            raise DataError(f"No imported dataset '{name}' in {self.root}; import it with `malt datasets import`.") \
                from None
        try:
            with h5py.File(io.BytesIO(data), "r") as f:
                import hashlib

                scratch = hashlib.blake2b()
                components = {k: read_node(v, scratch, k) for k, v in f["components"].items()}
                meta = json.loads(f.attrs["meta"])
        except Exception as err:
            raise DataError(f"Imported dataset {path} is damaged ({type(err).__name__}); import it again with "
                            "`malt datasets import --force`.") from None
        dataset = Dataset(name, components, meta)
        if content_hash is not None and dataset.hash != content_hash:
            raise DataError(f"Imported dataset '{name}' ({path}) no longer has the content this experiment used; "
                            "start a new experiment with `malt cv`.")
        return dataset

    def verify(self) -> tuple[list[str], list[str]]:
        """Check every stored object against its hash and every pointer against its checksum; a
        damaged pointer is rebuilt when exactly one stored object was imported under its name (a
        pointer is derived: name -> content hash). Returns (what was done, what is left damaged);
        objects are never deleted."""
        done, problems = [], []
        objects = self.folder / "objects"
        check_folder(self.root, self.folder)
        check_folder(self.root, objects)
        intact: dict[str, list] = {}  # name the object was imported under -> [(hash, rows, mtime)]
        for path in sorted(objects.glob("*.h5")) if objects.is_dir() else []:
            try:
                dataset = self.load(content_hash=path.stem)
            except RefusedEntry:
                raise  # a link or a FIFO is not damage: it is refused, as everywhere
            except (DataError, RepositoryError) as err:
                problems.append(str(err))
                continue
            intact.setdefault(dataset.name, []).append((path.stem, dataset.n_rows, os.lstat(path).st_mtime))
        for name in self.names():
            if not os.path.lexists(self.folder / f"{name}.json"):
                continue
            try:
                self.pointer(name)
            except RepositoryError as err:
                found = intact.get(name, [])
                if len(found) != 1:
                    held = (f"{len(found)} stored contents were imported as '{name}'" if found else
                            f"no intact stored content was imported as '{name}'")
                    problems.append(f"{err}; {held}, so malt cannot tell which it pointed at: import the file "
                                    f"again with `malt datasets import {name} FILE --force`")
                    continue
                content_hash, rows, mtime = found[0]
                pointer = {"name": name, "hash": content_hash, "object": f"objects/{content_hash}.h5",
                           "source": {"kind": "rebuilt"}, "imported": mtime, "rows": rows}
                with FileLock(self.root, self.folder / ".lock", f"Datasets of {self.root}").acquire(wait=True):
                    atomic_write(self.root, self.pointer_path(name), seal(pointer), then="run `malt repair` again")
                done.append(f"rebuilt {self.pointer_path(name)} ({err}): it points at {content_hash[:16]}, the one "
                            f"stored content imported as '{name}'")
        return done, problems
