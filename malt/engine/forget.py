"""`malt forget`: remove a mistaken setting, algorithm or whole experiment from a repository.

Safe like every other write. Holding the experiment's lock, it first writes the experiment's plan
without the forgotten settings (the spec, replaced atomically), then appends one forget record to
its ``units.log`` naming them: from then on their unit records no longer count (the next compaction
drops them and their predictions), and the record stays in the experiment's provenance (who, when,
which command, what). A crash between the two steps leaves the settings out of the plan with their
units still stored but not shown; the same command finishes the job. A whole experiment gets its
forget record, then its folder moves to ``REPO/forgotten/`` in one rename (move it back to undo;
delete it to free the space). Every other experiment, setting, cached artifact and dataset is left
as it was.
"""
from __future__ import annotations

import dataclasses
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from malt import registry
from malt.engine import provenance
from malt.errors import InvalidParameterError, MaltError


@dataclass
class Forgotten:
    """What one `forget` removed."""

    experiment: str
    settings: list[str]  # the displays of the forgotten settings ("the whole experiment")
    units: int  # unit records that no longer count
    moved_to: Path | None = None  # where a whole experiment went


def full_params(algorithm: str, given: dict) -> dict | None:
    """Every parameter of a setting (the defaults of today's declaration under the stored changes), or
    None for an algorithm this malt does not know."""
    try:
        algo = registry.get(algorithm)
    except MaltError:
        return None
    return {f.name: f.default for f in dataclasses.fields(algo.Params)} | dict(given)


def matches(algorithm: str, params: dict, wanted: dict[str, str]) -> bool:
    """Whether a setting's parameters take the values typed on the command line (parsed by the
    algorithm's declaration, so '0.10' matches 0.1 and '5,10' a list)."""
    try:
        declared = registry.get(algorithm).Params
    except MaltError:
        declared = None
    for name, text in wanted.items():
        if name not in params:
            return False
        try:
            value = declared.parse_value(name, text) if declared is not None else text
        except InvalidParameterError:
            return False
        stored = params[name]
        stored = tuple(stored) if isinstance(stored, list) else stored
        if declared is None:
            stored, value = str(stored), str(value)
        if stored != value:
            return False
    return True


def settings_of(spec: dict, units: dict) -> dict[tuple, dict]:
    """(algorithm, params key) -> {display, params (all of them)} of every setting the experiment plans
    or holds units of."""
    found: dict[tuple, dict] = {}
    for record in units.values():
        key = (record.get("algorithm"), record.get("params_key"))
        found.setdefault(key, {"display": record.get("display") or key[0], "params": record.get("params") or {}})
    for item in spec.get("plan", []):
        key = (item["algorithm"], item.get("key"))
        params = full_params(item["algorithm"], item.get("params", {}))
        found[key] = {"display": item.get("display") or item["algorithm"],
                      "params": params if params is not None else found.get(key, {}).get("params", item.get("params"))}
    return found


def forget(repo, experiment: str, algorithms=(), params: dict[str, str] | None = None, *,
           wait: bool = False) -> Forgotten:
    """Forget the settings of ``experiment`` of these ``algorithms`` whose parameters take these
    ``params`` values; with neither, the whole experiment. See the module docstring."""
    params = dict(params or {})
    files = repo.experiment(experiment)
    if files.is_legacy:
        raise MaltError(f"Experiment {experiment} is in malt's first store format; any `malt cv` or `malt rerun` "
                        "migrates it, then `malt forget` can change it.")
    with files.writer(wait=wait) as writer:
        spec = files.read_spec()
        units, _, _ = files.read_log()
        info = dict(provenance.session_info(), session=secrets.token_hex(8), ended=time.time())
        if not algorithms and not params:
            writer.forget(dict(info, experiment=True, settings=[], forgot=["the whole experiment"], units=len(units)))
            return Forgotten(experiment, ["the whole experiment"], len(units), writer.set_aside())
        known = settings_of(spec, units)
        unknown = [a for a in algorithms if a not in {k[0] for k in known}]
        if unknown:
            raise MaltError(f"Experiment {experiment} has no setting of '{unknown[0]}'; it has: "
                            f"{', '.join(sorted(s['display'] for s in known.values()))}.")
        chosen = {key: s for key, s in known.items()
                  if (not algorithms or key[0] in algorithms) and matches(key[0], s["params"], params)}
        if not chosen:
            raise MaltError(f"No setting of experiment {experiment} matches "
                            f"{', '.join([*algorithms, *(f'{k}={v}' for k, v in params.items())])}; its settings "
                            f"are: {', '.join(sorted(s['display'] for s in known.values()))}.")
        gone = [k for k, r in units.items() if (r.get("algorithm"), r.get("params_key")) in chosen]
        writer.write_spec(dict(spec, plan=[item for item in spec.get("plan", [])
                                           if (item["algorithm"], item.get("key")) not in chosen]))
        writer.forget(dict(info, settings=[list(key) for key in chosen],
                           forgot=sorted(s["display"] for s in chosen.values()), units=len(gone)))
        writer.compact()
    return Forgotten(experiment, sorted(s["display"] for s in chosen.values()), len(gone))
