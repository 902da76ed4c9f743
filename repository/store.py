"""The on-disk repository: imported datasets, cached artifacts and one result set per experiment.

Layout (format 2)::

    REPO/malt-repository.json      marker with the format version, sealed with a checksum (derived:
                                   `malt repair` rebuilds it from the folder's contents when damaged)
    REPO/.lock                     shared by experiment writers, exclusive for whole-repository work
    REPO/data/                     files downloaded by `malt datasets fetch` (MALT_DATA layout)
    REPO/datasets/NAME.json        an imported name -> content hash (see `imports`)
    REPO/datasets/objects/H.h5     imported content, addressed by hash
    REPO/cache/KEY.h5              content-addressed artifacts with digests (see `cache`)
    REPO/experiments/ID/           spec.json, units.log, predictions.log, .lock (see `experiments`)
    REPO/forgotten/ID/             experiments `malt forget` set aside (delete the folder to free the space)
    REPO/legacy/                   format-1 files kept after migration (never deleted by malt)

Guarantees: everything kept is checksummed and verified on read (damage is named, never used); an
unreadable file is never treated as empty; a write whose success is not certain is never committed;
damage costs at most the records it hits; one writer per experiment, so experiments of one
repository run concurrently; no symbolic link inside a repository is followed.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from malt.errors import RepositoryError, UnknownNameError, unknown_name

from .cache import ArtifactCache
from .experiments import ExperimentFiles, experiment_ids
from .files import atomic_write, check_no_links, ensure_dir, read_bytes
from .imports import DatasetStore
from .integrity import DamagedJSON, seal, unseal_json
from .locks import FileLock

FORMAT = 2
MARKER = "malt-repository.json"
FORMAT_1_KEYS = {"format", "created"}
"""All a format-1 marker held (it had no checksum): an unsealed marker with anything else is damaged."""


class DamagedMarker(DamagedJSON):
    """The repository's marker does not verify (`malt repair` rebuilds it)."""


def read_marker(root: Path) -> dict:
    """The content of ``root``'s marker (FileNotFoundError if it has none); DamagedMarker, saying to
    run `malt repair`, when it does not verify."""
    path = Path(root) / MARKER
    data = read_bytes(path)
    try:
        sealed = b'"checksum"' in data
        value = unseal_json(data, str(path), legacy_ok=not sealed)
        if not sealed and (set(value) - FORMAT_1_KEYS or value.get("format") != 1):
            raise DamagedJSON(f"{path} is damaged (it has no checksum, and is not a marker of the first store format)")
        if not isinstance(value.get("format"), int) or isinstance(value["format"], bool) or value["format"] < 1:
            raise DamagedJSON(f"{path} is damaged (no store format version)")
    except DamagedJSON as err:
        raise DamagedMarker(f"{err}; `malt repair --repo {root}` rebuilds it from the repository's contents") \
            from None
    return value


def default_path() -> Path:
    return Path(os.environ.get("MALT_REPO", "results"))


def _being_created(path: Path) -> bool:
    """Empty, or holding only what a malt creating this repository right now writes first (its marker's
    temporary file), so two writers starting on a new repository at once both proceed."""
    return all(p.name.startswith(f".{MARKER}.") or p.name == ".lock" for p in path.iterdir())


class Repository:
    """A repository folder. Reading needs no lock; writers lock what they write."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.cache = ArtifactCache(self.path)
        self.datasets = DatasetStore(self.path)

    # ---- existence -------------------------------------------------------------------------------
    @property
    def exists(self) -> bool:
        return os.path.lexists(self.path / MARKER)

    @property
    def format(self) -> int:
        try:
            return read_marker(self.path)["format"]
        except FileNotFoundError:
            return FORMAT

    def check_readable(self, *, for_repair: bool = False) -> "Repository":
        """Fail with one line unless this is a repository malt can read. ``for_repair``: a damaged
        or missing marker is accepted when the folder holds malt's experiments (repair rebuilds it)."""
        if self.path.exists() and not self.path.is_dir():
            raise RepositoryError(f"{self.path} is a file, not a malt repository; pass --repo with a folder.")
        if for_repair and self.looks_like_a_repository():
            try:
                newer = self.format > FORMAT
            except (FileNotFoundError, DamagedMarker):
                return self  # what repair rebuilds
            if newer:
                raise RepositoryError(f"{self.path} was written by a newer malt (format {self.format}); upgrade "
                                      "malt.")
            return self
        if not self.exists:
            if experiment_ids(self.path):
                raise RepositoryError(f"{self.path} holds malt experiments but no {MARKER}; `malt repair --repo "
                                      f"{self.path}` rebuilds it (or pass --repo with another folder).")
            if self.path.is_dir() and any(self.path.iterdir()):
                raise RepositoryError(f"{self.path} is a folder but not a malt repository (no {MARKER}); "
                                      "pass --repo with a repository folder or a new path.")
            raise RepositoryError(f"No repository at {self.path}; run `malt cv ...` to create one, "
                                  "or point --repo / MALT_REPO (or the PATH argument) at an existing repository.")
        if self.format > FORMAT:
            raise RepositoryError(f"{self.path} was written by a newer malt (format {self.format}); upgrade malt.")
        return self

    def looks_like_a_repository(self) -> bool:
        """The folder has a marker (perhaps damaged) or holds an experiment of malt's layout
        (``experiments/ID/spec.json``): what lets `malt repair` rebuild a damaged or lost marker."""
        return self.exists or bool(experiment_ids(self.path))

    def marker_problem(self) -> str | None:
        """Why the marker cannot be used (damaged, missing, not a regular file), or None."""
        try:
            read_marker(self.path)
        except FileNotFoundError:
            return f"{self.path / MARKER} is missing"
        except RepositoryError as err:
            return str(err).split("; `malt repair")[0]
        return None

    def rebuild_marker(self, format_version: int) -> None:
        """Write a fresh marker (the caller holds the exclusive repository lock)."""
        from .files import check_file

        check_file(self.path, self.path / MARKER)
        atomic_write(self.path, self.path / MARKER, seal({"format": format_version, "rebuilt": time.time()}),
                     then="run `malt repair` again")

    def check_writable_target(self) -> None:
        """Fail (touching nothing) if the path cannot become or be a repository."""
        if self.path.exists() and not self.path.is_dir():
            raise RepositoryError(f"{self.path} is a file, not a malt repository; pass --repo with a folder.")
        try:
            if self.path.is_dir() and not self.exists and not _being_created(self.path):
                raise RepositoryError(f"{self.path} is a folder but not a malt repository (no {MARKER}); "
                                      "pass --repo with a repository folder or a new path.")
        except PermissionError:
            raise RepositoryError(f"Cannot read {self.path} (permission denied); pass --repo with a folder you "
                                  "can write to.") from None
        if self.exists and self.format > FORMAT:
            raise RepositoryError(f"{self.path} was written by a newer malt (format {self.format}); upgrade malt.")

    def create(self, *, filled_by_us: bool = False) -> None:
        """Make the folder a repository (idempotent; safe when two writers start at once).
        ``filled_by_us``: the folder holds only what this command just put there (a fetch)."""
        if not filled_by_us:
            self.check_writable_target()
        if self.exists:
            return
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            from .files import describe_os_error

            raise RepositoryError(f"Cannot create the repository {self.path}: {describe_os_error(err)}. "
                                  "Pass --repo with a folder you can write to.") from None
        atomic_write(self.path, self.path / MARKER, seal({"format": FORMAT, "created": time.time()}),
                     then="run the command again")

    def lock_all(self, *, wait: bool = False) -> FileLock:
        """The exclusive repository lock (whole-repository operations: migration, repair of all)."""
        return FileLock(self.path, self.path / ".lock", f"Repository {self.path}").acquire(exclusive=True, wait=wait)

    def set_format(self, version: int) -> None:
        atomic_write(self.path, self.path / MARKER, seal({"format": version, "migrated": time.time()}))

    # ---- experiments -----------------------------------------------------------------------------
    def experiment(self, experiment_id: str) -> ExperimentFiles:
        return ExperimentFiles(self.path, experiment_id)

    def experiments(self) -> list[str]:
        return experiment_ids(self.path)

    def read_spec(self, experiment_id: str) -> dict:
        return self.experiment(experiment_id).read_spec()

    def resolve(self, given: str) -> str:
        """The experiment id ``given`` names: itself, or the one id it begins (``emot`` for
        ``emotions-multilabel-1a2b3c4d``); an ambiguous or unknown one is refused, listing the candidates."""
        ids = self.experiments()
        if given in ids:
            return given
        matches = [e for e in ids if e.startswith(given)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UnknownNameError(f"'{given}' begins {len(matches)} experiment ids: {', '.join(matches[:8])}"
                                   f"{', …' if len(matches) > 8 else ''}; give more of the id.")
        raise unknown_name("experiment", given, ids, "Run `malt results` to list the experiments.")

    # ---- imported datasets -----------------------------------------------------------------------
    def imported(self) -> list[str]:
        return self.datasets.names()

    # ---- housekeeping ----------------------------------------------------------------------------
    def legacy_dir(self) -> Path:
        return ensure_dir(self.path, self.path / "legacy")

    def describe(self) -> dict:
        try:
            return read_marker(self.path)
        except (FileNotFoundError, RepositoryError):
            return {}

    def check_inside(self, path: Path) -> None:
        check_no_links(self.path, path)
