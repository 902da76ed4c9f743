"""`malt repair`: verify every kind of stored file and keep everything that is intact.

* experiment specs: a damaged spec is restored from the newest copy in the experiment's log;
* unit and prediction logs: rewritten without their damaged stretches (every intact record stays;
  the units whose records were hit are recomputed by `malt rerun`);
* first-format result containers: migrated, salvaging every intact record from their bytes;
* cached artifacts: damaged entries are deleted (they are recomputed when needed);
* imported datasets: verified against their content hash and reported (they cannot be rebuilt
  from anything else: import the file again).

Each experiment is repaired under its own lock, so repair runs beside writers of other experiments.
"""
from __future__ import annotations

from malt.engine.migrate import migrate_if_needed
from malt.errors import MaltError
from malt.repository.experiments import latest_valid_spec
from malt.repository.records import read_log


def repair(repo, experiment: str | None = None, wait: bool = False) -> list[str]:
    migrate_if_needed(repo, wait)
    lines: list[str] = []
    for exp in [experiment] if experiment else repo.experiments():
        lines += _repair_experiment(repo, exp, wait)
    if experiment is None:
        lines += repo.cache.verify()
        lines += [f"damaged imported dataset (not repairable here): {p}" for p in repo.datasets.verify()]
    return lines


def _repair_experiment(repo, exp: str, wait: bool) -> list[str]:
    files = repo.experiment(exp)
    lines = []
    if not files.folder.is_dir():
        files.read_spec()  # raises the standard unknown-experiment message
    with files.writer(wait=wait) as writer:
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
        damaged = []
        for name in ("units.log", "predictions.log"):
            _, found = read_log(files.folder / name)
            if found.damaged:
                damaged.append(f"{name}: {len(found.damaged)} damaged stretch(es) dropped")
        if damaged and writer.compact(force=True):
            lines += [f"{exp}: {d}; `malt rerun` recomputes the units they held" for d in damaged]
    return lines
