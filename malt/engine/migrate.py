"""Migration of a repository written by malt's first store format (format 1) to format 2.

Runs once, under the exclusive repository lock, before the first write of a newer malt. Every
format-1 experiment is converted into a new folder — its id recomputed under today's identity rules
(options at their defaults and scoring options no longer change ids), its unit records re-keyed the
same way (with the algorithm version they were computed by, so out-of-date units are still
recomputed) and written as a checksummed log — and only then is the old folder moved to
``legacy/experiments/`` (kept, never deleted). Records salvaged from a damaged container are kept;
records that fail their checksum are reported. A kill at any point leaves either the old folder or
a complete new one (a half-written new folder has a temporary name and is redone). Migrated units
have no stored predictions, and their values of metrics whose definition changed since (for
example average precision, now MULAN's convention) stay out of summaries until the unit is refit:
`malt rerun --algo NAME` does that. ``legacy/ids.json`` maps old experiment ids to new ones.

A format-1 repository may come from anyone: before anything is changed, every entry migration will
read, move or delete is checked (`check_layout`) — a symbolic link, FIFO, device, socket, or a file
where a folder belongs (or the reverse) is refused by name and nothing is migrated; every file is
then opened the one no-follow, regular-files-only way (`repository.files.open_file`).
"""
from __future__ import annotations

import json
import os
import shutil
import time

from malt.errors import MaltError

from malt.repository import legacy
from malt.repository.files import (atomic_write, check_file, check_folder, ensure_dir, read_bytes, refused, remove,
                                   describe_mode)
from malt.repository.integrity import seal
from malt.repository.records import encode


def migrate_if_needed(repo, wait: bool) -> None:
    """Migrate ``repo`` in place if it was written by malt's first store format; nothing otherwise."""
    if repo.exists and repo.format < 2:
        migrate(repo, wait=wait)


def migrate(repo, wait: bool = False, report=None) -> list[str]:
    """Convert ``repo`` in place; returns one line per action (also passed to ``report``)."""
    from malt.repository.store import FORMAT

    actions: list[str] = []

    def note(line: str) -> None:
        actions.append(line)
        if report is not None:
            report(line)

    check_layout(repo)
    with repo.lock_all(wait=wait):
        if repo.format >= FORMAT:
            return actions
        check_layout(repo)
        mapping = {}
        for exp in repo.experiments():
            folder = repo.experiment(exp).folder
            if os.path.lexists(folder / "units.log") or not legacy.has_legacy(folder) and not _legacy_spec(folder):
                continue
            new_id = _convert(repo, exp, note)
            if new_id:
                mapping[exp] = new_id
        _convert_datasets(repo, note)
        _drop_cache(repo, note)
        if mapping:
            path = repo.legacy_dir() / "ids.json"
            old = _read_ids(repo, path, note)
            atomic_write(repo.path, path, json.dumps(dict(old, **mapping), indent=1, sort_keys=True).encode())
        repo.set_format(FORMAT)
        note(f"migrated {repo.path} to store format {FORMAT} ({len(mapping)} experiment(s); old files kept in "
             f"{repo.path / 'legacy'})")
    return actions


def inferred_format(repo) -> int:
    """The store format a repository's contents say it has: 1 while first-format files are left to
    migrate (migration skips what it already converted, so inferring 1 is always safe), else today's."""
    from malt.repository.store import FORMAT

    for exp in repo.experiments():
        folder = repo.experiment(exp).folder
        if not os.path.lexists(folder / "units.log") and (legacy.has_legacy(folder) or _legacy_spec(folder)):
            return 1
    datasets = repo.path / "datasets"
    if datasets.is_dir() and not datasets.is_symlink() and any(p.suffix == ".h5" for p in datasets.iterdir()):
        return 1
    return FORMAT


def check_layout(repo) -> None:
    """Refuse, before anything is migrated, a link or an entry of the wrong kind anywhere migration
    reads, moves or deletes (RefusedEntry names the first one)."""
    root = repo.path
    for name in ("cache", "datasets", "experiments", "legacy", "legacy/experiments", "legacy/datasets"):
        check_folder(root, root / name)
    check_file(root, root / "legacy" / "ids.json")
    for folder, pattern in ((root / "cache", ".h5"), (root / "datasets", ".h5")):
        for entry in _entries(folder):
            if entry.name.endswith(pattern) and not entry.is_file(follow_symlinks=False):
                raise refused(entry.path, describe_mode(entry.stat(follow_symlinks=False).st_mode))
    for entry in _entries(root / "experiments"):
        if entry.name.startswith(".migrating-"):
            check_folder(root, root / "experiments" / entry.name)
            continue
        if entry.is_symlink():
            raise refused(entry.path, "a symbolic link")
        if not entry.is_dir(follow_symlinks=False):
            continue
        folder = root / "experiments" / entry.name
        for name in ("spec.json", "results.h5", "units.log", "predictions.log"):
            check_file(root, folder / name)
        check_folder(root, folder / "journal")
        for item in _entries(folder / "journal"):
            if not item.is_file(follow_symlinks=False):
                raise refused(item.path, describe_mode(item.stat(follow_symlinks=False).st_mode))


def _entries(folder) -> list:
    try:
        return list(os.scandir(folder)) if os.path.isdir(folder) and not os.path.islink(folder) else []
    except OSError:
        return []


def _read_ids(repo, path, note) -> dict:
    """legacy/ids.json, or {} when absent; a damaged one is set aside (legacy files are never deleted)."""
    try:
        old = json.loads(read_bytes(path))
        if isinstance(old, dict):
            return old
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError):
        pass
    kept = _free(path.with_name("ids.damaged.json"))
    os.replace(path, kept)
    note(f"{path} was damaged; kept as {kept}, a new one started")
    return {}


def _legacy_spec(folder) -> bool:
    try:
        return "checksum" not in json.loads(read_bytes(folder / "spec.json"))
    except FileNotFoundError:
        return False
    except (ValueError, UnicodeDecodeError):
        return False


def _convert(repo, exp: str, note) -> str | None:
    from malt import registry
    from malt.engine import runner as engine
    from malt.tasks import get_task

    folder = repo.experiment(exp).folder
    try:
        spec = legacy.read_spec(folder)
        task = get_task(spec["task"])
        options = task.Params.as_stored(spec["task_params"])
    except (MaltError, KeyError, TypeError, ValueError) as err:
        note(f"kept {exp} in the old format: its spec cannot be read under today's task declarations ({err})")
        return None
    problems: list[str] = []
    records = sorted(legacy.read(folder, problems), key=lambda r: r.get("timestamp", 0))
    for line in problems:
        note(f"{exp}: {line}")
    fit = task.fit_identity(spec["dataset_hash"], options)
    new_id = task.experiment_id(spec["dataset"], spec["dataset_hash"], options)
    converted = []
    for record in records:
        algo = registry.algorithms().get(record.get("algorithm"))
        try:
            params = algo.Params.as_stored(record["params"]) if algo else None
        except MaltError:
            params = None
        new = dict(record, type="unit", legacy=True, metric_versions={m: "1" for m in record.get("metrics", {})})
        new.pop("experiment", None)
        if params is not None:
            new.update(unit=engine.unit_key(fit, algo.name, record["version"], params, record["fold"]),
                       params=params.to_dict(), params_key=params.key(), display=params.display(algo.name))
        converted.append(new)
    plan = []
    for item in spec.get("plan", []):
        algo = registry.algorithms().get(item["algorithm"])
        if algo is None:
            continue
        try:
            params = algo.Params.as_stored(item["params"])
        except MaltError:
            continue
        versions = [r["version"] for r in converted if r.get("algorithm") == algo.name
                    and r.get("params_key") == params.key()]
        plan.append({"algorithm": algo.name, "version": versions[-1] if versions else algo.version,
                     "params": params.changed(), "key": params.key(), "display": params.display(algo.name)})
    ref = spec.get("dataset_ref", spec["dataset"])
    source = ({"kind": "imported", "name": ref, "hash": spec["dataset_hash"]} if ref in repo.imported()
              else {"kind": "legacy", "ref": ref})
    new_spec = {"format": 2, "experiment": new_id, "fit": fit, "dataset": spec["dataset"], "source": source,
                "dataset_hash": spec["dataset_hash"], "task": task.name, "task_version": task.version,
                "task_params": options.to_dict(), "settings": [s.name for s in task.settings],
                "n_folds": task_folds(task, options, spec), "plan": plan, "created": spec.get("created", time.time()),
                "migrated_from": exp}
    target = repo.path / "experiments" / new_id
    if not (target / "units.log").exists():
        staging = repo.path / "experiments" / f".migrating-{new_id}"
        check_folder(repo.path, staging)
        if os.path.lexists(staging):
            shutil.rmtree(staging)  # a half-written new folder of an interrupted migration (fd-based: no link followed)
        ensure_dir(repo.path, staging)
        blob = encode({"type": "spec", "spec": new_spec, "time": time.time()}) + b"".join(encode(r) for r in converted)
        atomic_write(repo.path, staging / "units.log", blob)
        atomic_write(repo.path, staging / "spec.json", seal(new_spec))
        os.replace(staging, target)
    keep = ensure_dir(repo.path, repo.legacy_dir() / "experiments")
    os.replace(folder, _free(keep / exp))
    note(f"{exp} -> {new_id}: {len(converted)} unit record(s) migrated")
    return new_id


def _free(path):
    """``path``, or ``path.1``, ``path.2``… if taken (the old files are never overwritten)."""
    candidate, n = path, 0
    while os.path.lexists(candidate):
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def task_folds(task, options, spec) -> int:
    if "n_folds" in spec:
        return int(spec["n_folds"])
    for name in ("folds", "runs", "repeats"):
        if name in spec.get("task_params", {}):
            return int(spec["task_params"][name])
    return int(getattr(options, "folds", 1))


def _convert_datasets(repo, note) -> None:
    folder = repo.path / "datasets"
    for path in sorted(folder / e.name for e in _entries(folder) if e.name.endswith(".h5")):
        name = path.stem
        try:
            dataset = repo.datasets.load(name)
            repo.datasets.save(dataset, {"kind": "migrated", "file": str(path)}, force=True)
        except MaltError as err:
            note(f"imported dataset {name} kept as it was: {err}")
            continue
        keep = ensure_dir(repo.path, repo.legacy_dir() / "datasets")
        os.replace(path, _free(keep / path.name))
        note(f"imported dataset {name}: stored by content hash {dataset.hash[:16]}")


def _drop_cache(repo, note) -> None:
    """Format-1 cache entries carry no digest and keys without a producer: nothing will ask for them.
    Only regular files directly in the repository's own cache folder are looked at (`check_layout`
    refused anything else before migration began)."""
    from malt.repository.hdf5 import read_meta

    folder = repo.path / "cache"
    check_folder(repo.path, folder)
    removed = 0
    for entry in sorted(_entries(folder), key=lambda e: e.name):
        if not entry.name.endswith(".h5") or not entry.is_file(follow_symlinks=False):
            continue
        path = folder / entry.name
        if "producer" not in read_meta(path) and remove(repo.path, path):
            removed += 1
    if removed:
        note(f"removed {removed} cache entr{'y' if removed == 1 else 'ies'} of the old format (recomputed on demand)")
