"""Experiment files: a grid of datasets × algorithms × parameters × task options in one TOML file
(the format is ``FORMAT`` below, which `malt run --help` prints).

Each block runs every dataset × option combination through `malt.cv` — the same engine, store and
experiment ids as the command line — so `malt run FILE` is incremental and resumable like `malt cv`.
"""
from __future__ import annotations

import sys
from pathlib import Path

from malt.errors import InvalidParameterError

FORMAT = """\b
The file (TOML) holds [[experiment]] blocks:
  repo = "results"                    # optional (--repo wins)
  [[experiment]]
  datasets = ["emotions", "scene"]    # named, imported, or file paths
  algorithms = ["mllr", "mlknn"]
  task = "multilabel"                 # optional: inferred as by `malt cv`
  options = { missing = [0.1, 0.3] }  # task options; a list: one experiment each
  params = { k = [5, 10] }            # algorithm parameters; a list: a sweep
  labels = "6"                        # a data file's MULAN XML or label count

Keys: datasets (or dataset), algorithms (or algorithm), task, options, params, labels. Every
dataset × option value is one experiment. A list-valued parameter is written as a string
("5,10,20") or, to sweep lists, a list of strings."""

KEYS = {"datasets", "dataset", "algorithms", "algorithm", "task", "options", "params", "labels"}


def read(path: Path) -> dict:
    if sys.version_info < (3, 11):  # pragma: no cover - tomllib is in the standard library from 3.11
        raise InvalidParameterError("`malt run` reads TOML with Python's tomllib (Python 3.11 or newer).")
    import tomllib

    try:
        text = Path(path).read_bytes()
    except FileNotFoundError:
        raise InvalidParameterError(f"Experiment file {path} not found.") from None
    except IsADirectoryError:
        raise InvalidParameterError(f"{path} is a folder; give an experiment file (TOML).") from None
    try:
        content = tomllib.loads(text.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise InvalidParameterError(f"{path} is not valid TOML: {err}.") from None
    blocks = content.get("experiment")
    if not isinstance(blocks, list) or not blocks:
        raise InvalidParameterError(f"{path} has no [[experiment]] block; see `malt run --help`.")
    if "repo" in content and not (isinstance(content["repo"], str) and content["repo"].strip()):
        raise InvalidParameterError(f"{path}: repo must be a folder name (a non-empty string), got "
                                    f"{content['repo']!r}.")
    for i, block in enumerate(blocks, 1):
        _check_block(path, i, block)
    return content


SCALAR = (str, int, float, bool)


def _check_block(path: Path, i: int, block) -> None:
    """Every key of one [[experiment]] block has the shape `planned_calls` and `malt.cv` expect."""
    where = f"{path}: experiment block {i}"
    if not isinstance(block, dict):
        raise InvalidParameterError(f"{where} is not a table; write it as [[experiment]] with keys below it.")
    unknown = sorted(set(block) - KEYS)
    if unknown:
        raise InvalidParameterError(f"{where} has an unknown key '{unknown[0]}'; keys are {', '.join(sorted(KEYS))}.")
    if not (block.get("datasets") or block.get("dataset")) or not (block.get("algorithms") or block.get("algorithm")):
        raise InvalidParameterError(f"{where} needs datasets and algorithms.")
    for key in ("datasets", "dataset", "algorithms", "algorithm"):
        value = block.get(key)
        if value is not None and not (_text(value) or isinstance(value, list) and value
                                      and all(_text(v) for v in value)):
            raise InvalidParameterError(f"{where}: {key} must be a name or a list of names (strings), got {value!r}.")
    for key in ("task", "labels"):
        if key in block and not _text(block[key]):
            raise InvalidParameterError(f"{where}: {key} must be a string, got {block[key]!r}.")
    for key in ("options", "params"):
        table = block.get(key, {})
        if not isinstance(table, dict):
            raise InvalidParameterError(f"{where}: {key} must be a table (name = value, a list sweeps), got "
                                        f"{table!r}.")
        for name, value in table.items():
            if isinstance(value, list) and not value:
                raise InvalidParameterError(f"{where}: {key}.{name} sweeps no value; give at least one.")
            if not all(isinstance(v, SCALAR) for v in (value if isinstance(value, list) else [value])):
                raise InvalidParameterError(f"{where}: {key}.{name} must be a value or a list of values (numbers, "
                                            f"strings, booleans), got {value!r}.")


def _text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def planned_calls(content: dict) -> list[dict]:
    """The `malt.cv` calls a file describes (validated later by cv itself)."""
    from malt.api import expand

    calls = []
    for block in content["experiment"]:
        datasets = block.get("datasets", block.get("dataset"))
        algorithms = block.get("algorithms", block.get("algorithm"))
        for dataset in [datasets] if isinstance(datasets, str) else datasets:
            for options in expand(block.get("options", {})):
                calls.append({"algorithms": algorithms, "dataset": dataset, "task": block.get("task"),
                              "params": block.get("params", {}), "labels": block.get("labels"), **options})
    return calls


def run_experiment_file(path: Path, *, repo=None, **engine_options):
    """Run every experiment of the file in order, yielding each `malt.api.Run`."""
    from malt import api

    content = read(path)
    target = repo or content.get("repo") or "results"
    calls = planned_calls(content)
    for call in calls:  # validate everything before running anything
        call = dict(call)
        api.plan_experiment(call.pop("algorithms"), call.pop("dataset"), task=call.pop("task"),
                            params=call.pop("params"), repo=api.repository(target), labels=call.pop("labels"), **call)
    for call in calls:
        call = dict(call)
        yield api.cv(call.pop("algorithms"), call.pop("dataset"), task=call.pop("task"), params=call.pop("params"),
                     repo=target, labels=call.pop("labels"), **engine_options, **call)
