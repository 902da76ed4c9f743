"""One experiment's files: its spec, its unit records and its stored predictions.

``experiments/ID/``

``spec.json``        the dataset (name, source, content hash), the task with its options, the plan of
                     (algorithm, version, parameters), sealed with a checksum; its content is also
                     bound to the id (the id is a hash of the data, the task and its options)
``units.log``        append-only records (see `records`): one per finished unit (metrics,
                     diagnostics, timings, seed, provenance session), one per run session, a copy
                     of the spec each time it changes (`malt repair` restores a damaged spec from it),
                     and one per `malt forget` (the settings it removed: their earlier unit records
                     no longer count; it stays in the experiment's provenance)
``predictions.log``  append-only records holding each unit's test predictions (the arrays the task
                     packs), so scores can be recomputed without refitting (`malt rescore`)
``.lock``            held by the one process writing this experiment

A unit is committed when its record is in ``units.log``; the newest record of a unit key wins.
Results of the first store format (``results.h5`` + ``journal/``) are read as they are.
"""
from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import numpy as np

from malt.errors import unknown_name

from . import legacy
from .files import (atomic_write, check_file, check_folder, check_no_links, ensure_dir, fsync_dir, read_bytes,
                    sweep_temporaries, validate_name, write_error)
from .integrity import DamagedJSON, seal, unseal_json
from .locks import FileLock
from .records import MAGIC_1, AppendLog, encode, payload, read_log, reframed

SPEC, UNITS, PREDICTIONS, LOCK = "spec.json", "units.log", "predictions.log", ".lock"
SYNC_SECONDS = 0.5
"""Appended records are fdatasync'ed at most this often (and at the end of a run): kill -9 never
loses a committed unit; a power cut loses at most the last half second of units."""
COMPACT_WASTE = 0.5
"""A log is rewritten without superseded records once they make up more than half of it."""


def pack_arrays(arrays: dict[str, np.ndarray]) -> tuple[list[dict], bytes]:
    meta, chunks, offset = [], [], 0
    for name in sorted(arrays):
        arr = np.asarray(arrays[name])
        arr = np.ascontiguousarray(arr).reshape(arr.shape)  # ascontiguousarray makes a 0-d array 1-d
        if arr.dtype == object:
            raise TypeError(f"prediction array {name!r} has dtype object")
        raw = arr.tobytes()
        meta.append({"name": name, "dtype": arr.dtype.str, "shape": list(arr.shape), "offset": offset,
                     "nbytes": len(raw)})
        chunks.append(raw)
        offset += len(raw)
    return meta, b"".join(chunks)


def unpack_arrays(meta: list[dict], blob: memoryview) -> dict[str, np.ndarray]:
    out = {}
    for item in meta:
        raw = blob[item["offset"]:item["offset"] + item["nbytes"]]
        out[item["name"]] = np.frombuffer(raw, dtype=np.dtype(item["dtype"])).reshape(item["shape"]).copy()
    return out


def experiment_ids(root: Path) -> list[str]:
    """The experiments of the repository at ``root``: folders of experiments/ with a spec, no links."""
    folder = Path(root) / "experiments"
    check_folder(root, folder)  # a link is refused, never listed through
    if not folder.is_dir():
        return []
    return sorted(entry.name for entry in os.scandir(folder)
                  if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False)
                  and os.path.lexists(os.path.join(entry.path, "spec.json")))


class ExperimentFiles:
    """Read access to one experiment folder (no lock needed: logs only grow, files are replaced
    atomically)."""

    def __init__(self, root: Path, experiment_id: str):
        self.root = Path(root)
        self.id = validate_name("experiment", experiment_id)
        self.folder = self.root / "experiments" / self.id

    @property
    def exists(self) -> bool:
        return os.path.lexists(self.folder / SPEC)

    @property
    def is_legacy(self) -> bool:
        return not os.path.lexists(self.folder / UNITS) and legacy.has_legacy(self.folder)

    def read_spec(self) -> dict:
        path = self.folder / SPEC
        check_no_links(self.root, path)
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            raise unknown_name("experiment", self.id, experiment_ids(self.root),
                               "Run `malt results` to list the experiments.") from None
        try:
            spec = unseal_json(data, str(path), legacy_ok=self.is_legacy)
        except DamagedJSON as err:
            raise DamagedJSON(f"{err}; `malt repair --experiment {self.id}` restores it from the experiment's log."
                              ) from None
        if not self.is_legacy and spec.get("experiment") != self.id:
            raise DamagedJSON(f"{path} describes experiment {spec.get('experiment')!r}, not {self.id!r}; "
                              f"`malt repair --experiment {self.id}` restores it from the experiment's log.")
        return spec

    def read_log(self, problems: list | None = None) -> tuple[dict[str, dict], list[dict], list[dict]]:
        """(newest unit record by key, session records, spec copies) of this experiment.

        Damaged stretches are described in ``problems``; a write cut short at the end of the log (a
        writer killed mid-append) was never committed and is not reported."""
        problems = problems if problems is not None else []
        units: dict[str, dict] = {}
        sessions: list[dict] = []
        specs: list[dict] = []
        if self.is_legacy:
            for record in sorted(legacy.read(self.folder, problems), key=lambda r: r.get("timestamp", 0)):
                units[record["unit"]] = dict(record, legacy=True)
            return units, sessions, specs
        path = self.folder / UNITS
        check_no_links(self.root, path)
        data, found = read_log(path)
        for offset in found.damaged:
            problems.append(f"{path}: damaged bytes at offset {offset} (the record there is lost; "
                            f"`malt repair --experiment {self.id}` cleans the log, `malt rerun` recomputes the unit)")
        if legacy_tail(data, found):
            problems.append(f"{path}: {LEGACY_TAIL} `malt repair --experiment {self.id}` drops it, `malt rerun` "
                            "recomputes the unit")
        for record in found.records:
            header = record.header
            kind = header.get("type")
            if kind == "unit" and isinstance(header.get("unit"), str):
                units[header["unit"]] = header
            elif kind == "session":
                sessions.append(dict(header))
            elif kind == "session-end":
                for session in sessions:
                    if session.get("session") == header.get("session"):
                        session["ended"] = header.get("ended")
            elif kind == "spec" and isinstance(header.get("spec"), dict):
                specs.append(header["spec"])
            elif kind == "forget":
                units = forget_units(units, header)
                sessions.append(dict(header))
        return units, sessions, specs

    def read_predictions(self, wanted: dict[str, str], problems: list | None = None) -> dict[str, dict]:
        """Stored predictions by unit key, for ``wanted`` {unit key: predictions id}."""
        if not wanted:
            return {}
        path = self.folder / PREDICTIONS
        check_no_links(self.root, path)
        data, found = read_log(path)
        if found.damaged and problems is not None:
            problems.append(f"{path}: damaged bytes at {len(found.damaged)} place(s); the units whose predictions "
                            "were there need `malt rerun --algo NAME` to be rescored")
        if legacy_tail(data, found) and problems is not None:
            problems.append(f"{path}: {LEGACY_TAIL} `malt repair --experiment {self.id}` drops it")
        out = {}
        for record in found.records:
            header = record.header
            if header.get("type") == "predictions" and wanted.get(header.get("unit")) == header.get("id"):
                out[header["unit"]] = unpack_arrays(header["arrays"], payload(data, record))
        return out

    def prediction_ids(self) -> dict[str, str]:
        """{unit key: predictions id} of the units whose newest ok record has stored predictions."""
        units, _, _ = self.read_log()
        return {k: r["predictions"] for k, r in units.items() if r.get("status") == "ok" and r.get("predictions")}

    def writer(self, *, wait: bool = False) -> "ExperimentWriter":
        return ExperimentWriter(self, wait=wait)


class ExperimentWriter:
    """The one writer of an experiment: holds the repository lock shared and the experiment's lock."""

    def __init__(self, files: ExperimentFiles, *, wait: bool = False):
        self.files = files
        root = files.root
        check_layout(root, files.folder)
        self.repo_lock = FileLock(root, root / ".lock", f"Repository {root}").acquire(exclusive=False, wait=wait)
        try:
            ensure_dir(root, files.folder)
            self.lock = FileLock(root, files.folder / LOCK, f"Experiment {files.id}").acquire(wait=wait)
        except BaseException:
            self.repo_lock.release()
            raise
        sweep_temporaries(root, files.folder, older_than=0)  # we hold the lock: nobody else writes here
        self.notes: list[str] = []  # what a user should hear of (a torn tail dropped)
        self._units: AppendLog | None = None
        self._predictions: AppendLog | None = None
        self._last_sync = time.monotonic()
        self._pending_spec: dict | None = None
        self._pending_session: dict | None = None
        self._written_sessions: set[str] = set()

    def _log(self, name: str) -> AppendLog:
        attr = "_units" if name == UNITS else "_predictions"
        if getattr(self, attr) is None:
            log = AppendLog(self.files.root, self.files.folder / name)
            self.notes += log.notes
            setattr(self, attr, log)
        return getattr(self, attr)

    def write_spec(self, spec: dict, *, with_first_unit: bool = False) -> None:
        """Replace spec.json and keep a copy in the log (what `repair` restores from).
        ``with_first_unit``: only once a unit is committed (a run that fails before committing
        anything, such as one whose cluster cannot be reached, leaves the experiment as it was)."""
        if with_first_unit:
            self._pending_spec = spec
            return
        self._log(UNITS).append(encode({"type": "spec", "spec": spec, "time": time.time()}))
        self._log(UNITS).sync()
        atomic_write(self.files.root, self.files.folder / SPEC, seal(spec))

    def session(self, info: dict) -> str:
        """A run session's id; its record is written with the session's first unit (a run that
        commits nothing, such as one whose cluster cannot be reached, leaves the log as it was)."""
        sid = secrets.token_hex(8)
        self._pending_session = dict(info, type="session", session=sid)
        return sid

    def forget(self, record: dict) -> None:
        """Append a `malt forget` record (``settings``: [algorithm, params key] pairs whose unit records
        so far stop counting) and make it durable."""
        self._log(UNITS).append(encode(dict(record, type="forget")))
        self.sync()

    def set_aside(self) -> Path:
        """Move the whole experiment folder to ``REPO/forgotten/`` (one rename: it is in one place or the
        other); returns where it went. The caller's lock goes with it."""
        self.close_logs()
        root = self.files.root
        target = ensure_dir(root, root / "forgotten") / self.files.id
        n = 1
        while os.path.lexists(target):
            n += 1
            target = target.with_name(f"{self.files.id}.{n}")
        try:
            os.rename(self.files.folder, target)
        except OSError as err:
            raise write_error(self.files.folder, err) from None
        fsync_dir(target.parent)
        fsync_dir(self.files.folder.parent)
        return target

    def end_session(self, sid: str) -> None:
        """Mark the end of a run session (its provenance gets an end time) and make everything durable."""
        if sid in self._written_sessions:
            self._log(UNITS).append(encode({"type": "session-end", "session": sid, "ended": time.time()}))
        self._pending_session = None
        self.sync()

    def commit(self, record: dict, arrays: dict[str, np.ndarray] | None) -> None:
        """Store one finished unit: its predictions first, then the record that makes it committed."""
        if self._pending_spec is not None:
            spec, self._pending_spec = self._pending_spec, None
            self.write_spec(spec)
        if self._pending_session is not None:
            self._log(UNITS).append(encode(self._pending_session))
            self._written_sessions.add(self._pending_session["session"])
            self._pending_session = None
        record = dict(record, type="unit")
        if arrays:
            meta, blob = pack_arrays(arrays)
            pid = secrets.token_hex(8)
            self._log(PREDICTIONS).append(encode({"type": "predictions", "unit": record["unit"], "id": pid,
                                                  "arrays": meta}, blob))
            record["predictions"] = pid
        self._log(UNITS).append(encode(record))
        if time.monotonic() - self._last_sync > SYNC_SECONDS:
            self.sync()

    def sync(self) -> None:
        for log in (self._predictions, self._units):
            if log is not None:
                log.sync()
        self._last_sync = time.monotonic()

    def compact(self, force: bool = False) -> bool:
        """Rewrite the logs without superseded or damaged records when that saves half of them."""
        self.close_logs()
        folder, root = self.files.folder, self.files.root
        data, found = read_log(folder / UNITS)
        if not found.records and not (force and (found.damaged or found.torn_tail)):
            return False
        newest: dict[str, int] = {}
        specs, forgets = [], []
        for i, record in enumerate(found.records):
            kind = record.header.get("type")
            if kind == "unit":
                newest[record.header["unit"]] = i
            elif kind == "spec":
                specs.append(i)
            elif kind == "forget":  # what it removed goes; the record stays (provenance)
                kept = forget_units({k: found.records[j].header for k, j in newest.items()}, record.header)
                newest = {k: j for k, j in newest.items() if k in kept}
                forgets.append(i)
        sessions_used = {found.records[i].header.get("session") for i in newest.values()}
        keep = sorted(set(newest.values()) | set(specs[-1:]) | set(forgets)
                      | {i for i, r in enumerate(found.records)
                         if r.header.get("type") in ("session", "session-end")
                         and r.header.get("session") in sessions_used})
        waste = 1 - len(keep) / max(len(found.records), 1)
        if not force and (waste <= COMPACT_WASTE or len(data) < (256 << 10)) and not found.damaged:
            return False
        check_file(root, folder / PREDICTIONS, single_link=True)
        check_file(root, folder / UNITS, single_link=True)
        live_predictions = {found.records[i].header.get("predictions") for i in newest.values()} - {None}
        pdata, pfound = read_log(folder / PREDICTIONS)
        pkeep = [r for r in pfound.records if r.header.get("id") in live_predictions]
        if pfound.records or pfound.damaged or pfound.torn_tail:
            atomic_write(root, folder / PREDICTIONS, b"".join(reframed(pdata, r) for r in pkeep))
        atomic_write(root, folder / UNITS, b"".join(reframed(data, found.records[i]) for i in keep))
        return True

    def close_logs(self) -> None:
        for attr in ("_predictions", "_units"):
            log = getattr(self, attr)
            if log is not None:
                log.close()
                setattr(self, attr, None)

    def close(self) -> None:
        try:
            self.close_logs()
        finally:
            self.lock.release()
            self.repo_lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def check_layout(root: Path, folder: Path) -> None:
    """Refuse, before anything is written, a repository whose shared folders or this experiment's
    files are symbolic links, FIFOs, devices, sockets or (for files) folders, or whose logs and lock
    files have other hard links (a repository someone sent may try to redirect writes elsewhere, or
    to hang the writer)."""
    for name in ("cache", "datasets", "data", "experiments", "forgotten", "legacy"):
        check_folder(root, root / name)
    check_file(root, root / ".lock", single_link=True)
    check_folder(root, folder)
    check_file(root, folder / SPEC)
    for name in (UNITS, PREDICTIONS, LOCK):
        check_file(root, folder / name, single_link=True)


LEGACY_TAIL = ("its last record, written by an earlier malt (record framing 1, whose lengths carry no check), "
               "runs past the end of the file: a write cut short, or damage to its lengths;")


def legacy_tail(data: bytes, found) -> bool:
    """The log ends in an incomplete record of framing 1. No writer of today appends one, so it is not
    a write in flight: readers name it (framing 1 cannot tell a torn write from damaged lengths)."""
    return found.torn_tail and data[found.end:found.end + 8] == MAGIC_1


def forget_units(units: dict[str, dict], record: dict) -> dict[str, dict]:
    """``units`` without those of the settings a forget record names."""
    settings = {tuple(s) for s in record.get("settings") or [] if isinstance(s, (list, tuple)) and len(s) == 2}
    return {k: r for k, r in units.items() if (r.get("algorithm"), r.get("params_key")) not in settings}


def latest_valid_spec(specs: list[dict], experiment_id: str) -> dict | None:
    for spec in reversed(specs):
        if spec.get("experiment") == experiment_id:
            return spec
    return None


