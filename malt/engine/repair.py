"""`malt repair`: verify every kind of stored file, keep everything that is intact, rebuild what is
derived, and name every loss.

* the repository marker (``malt-repository.json``): rebuilt when damaged or lost, its format inferred
  from the folder's contents (first-format files left to migrate, or none);
* experiment specs: a damaged spec is restored from the newest copy in the experiment's log;
* unit and prediction logs: rewritten without their damaged stretches (every intact record stays;
  the units whose records were hit are recomputed by `malt rerun`); an incomplete record at a log's
  end (a write cut short) is dropped and named;
* first-format result containers: migrated, salvaging every intact record from their bytes;
* cached artifacts: damaged entries are deleted (they are recomputed when needed), and temporary
  files of writers killed mid-write are removed;
* imported datasets: verified against their content hash and reported (they cannot be rebuilt
  from anything else: import the file again); a damaged pointer (name -> content) is rebuilt when
  one stored content was imported under that name.

Each experiment is repaired under its own lock, so repair runs beside writers of other experiments;
the marker and the cache's temporary files are handled under the exclusive repository lock.
"""
from __future__ import annotations

from malt.engine.migrate import inferred_format, migrate_if_needed
from malt.errors import MaltError
from malt.repository.experiments import PREDICTIONS, UNITS, latest_valid_spec
from malt.repository.records import read_log, torn_tail_note


def repair(repo, experiment: str | None = None, wait: bool = False) -> list[str]:
    lines = _rebuild_marker(repo, wait)
    migrate_if_needed(repo, wait)
    for exp in [experiment] if experiment else repo.experiments():
        lines += _repair_experiment(repo, exp, wait)
    if experiment is None:
        lines += repo.cache.verify()
        with repo.lock_all(wait=wait):
            lines += [f"removed {repo.cache.folder / name} (a temporary file of a writer killed mid-write)"
                      for name in repo.cache.sweep(older_than=0)]
        done, damaged = repo.datasets.verify()
        lines += done + [f"damaged imported dataset (not repairable here): {p}" for p in damaged]
    return lines


def _rebuild_marker(repo, wait: bool) -> list[str]:
    """A damaged (or lost) marker, rebuilt from what the folder holds; [] when it verifies."""
    if repo.marker_problem() is None:
        return []
    with repo.lock_all(wait=wait):
        problem = repo.marker_problem()
        if problem is None:
            return []
        version = inferred_format(repo)
        repo.rebuild_marker(version)
    return [f"rebuilt {repo.path / 'malt-repository.json'} ({problem}; store format {version}, inferred from the "
            "repository's contents)"]


def _repair_experiment(repo, exp: str, wait: bool) -> list[str]:
    files = repo.experiment(exp)
    lines = []
    if not files.folder.is_dir():
        files.read_spec()  # raises the standard unknown-experiment message
    with files.writer(wait=wait) as writer:
        scans = {name: read_log(files.folder / name)[1] for name in (UNITS, PREDICTIONS)}
        problems: list[str] = []
        _, _, spec_copies = files.read_log(problems)
        try:
            files.read_spec()
        except MaltError as err:
            spec = latest_valid_spec(spec_copies, exp)
            if spec is None:
                lines.append(f"{exp}: {err}; no copy of the spec survives in its log, so the experiment cannot be "
                             "restored (its records are kept)")
            else:
                writer.write_spec(spec)
                lines.append(f"{exp}: restored spec.json from the copy in its log")
        damaged = [f"{name}: {len(found.damaged)} damaged stretch(es) dropped" for name, found in scans.items()
                   if found.damaged]
        torn = [torn_tail_note(files.folder / name, found) for name, found in scans.items() if found.torn_tail]
        compacted = (damaged or torn) and writer.compact(force=True)
        if compacted:
            lines += [f"{exp}: {d}; `malt rerun` recomputes the units they held" for d in damaged]
        lines += [note for note in torn if compacted or note in writer.notes]
    return lines
