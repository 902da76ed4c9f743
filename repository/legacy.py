"""Reading result sets written by malt's first store format (repository format 1).

Format 1 kept an experiment's units as sealed JSON strings (``{"checksum": …, "record": …}``) in
``results.h5`` plus ``journal/*.json`` files not yet compacted into it. These are read as they are;
when the HDF5 container cannot be opened (a flipped bit in its superblock, another process holding
it), its records are salvaged by scanning the file's bytes for sealed records, each verified by its
own checksum, so damage to the container's metadata costs no intact record. A file that cannot be
read at all raises; it is never treated as empty.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

from .files import describe_mode, read_bytes, refused

SEALED = re.compile(r'\{"checksum": "[0-9a-f]{16}", "record": ')


def unseal(text: str) -> dict:
    outer = json.loads(text)
    body = outer["record"]
    if hashlib.sha256(body.encode()).hexdigest()[:16] != outer["checksum"]:
        raise ValueError("checksum mismatch")
    record = json.loads(body)
    if not isinstance(record, dict) or "unit" not in record:
        raise ValueError("not a unit record")
    return record


def salvage(data: bytes) -> list[dict]:
    """Every sealed record whose checksum verifies, found by scanning raw bytes."""
    text = data.decode("latin-1")
    decoder = json.JSONDecoder()
    found = []
    for match in SEALED.finditer(text):
        try:
            obj, _ = decoder.raw_decode(text, match.start())
            found.append(unseal(json.dumps(obj)))
        except (ValueError, KeyError, TypeError):
            continue
    return found


def has_legacy(folder: Path) -> bool:
    return os.path.lexists(folder / "results.h5") or os.path.lexists(folder / "journal")


def read(folder: Path, problems: list) -> list[dict]:
    """All readable unit records of a format-1 experiment folder (damage described in ``problems``; a
    link or an entry of the wrong kind is refused by name, as everywhere in a repository)."""
    records: list[dict] = []
    results = folder / "results.h5"
    if os.path.lexists(results):
        records += _read_container(results, problems)
    journal = folder / "journal"
    if os.path.lexists(journal):
        mode = os.lstat(journal).st_mode
        if not stat.S_ISDIR(mode):
            raise refused(journal, describe_mode(mode))
        for path in sorted(journal.glob("*.json")):
            try:
                records.append(unseal(read_bytes(path).decode("utf-8")))
            except (ValueError, KeyError, UnicodeDecodeError, TypeError):
                problems.append(f"{path}: damaged journal entry")
            except FileNotFoundError:
                continue
    return records


def _read_container(path: Path, problems: list) -> list[dict]:
    data = read_bytes(path)  # an unreadable file raises: never treated as empty
    try:
        import h5py
        import io

        with h5py.File(io.BytesIO(data), "r") as f:
            texts = [t.decode("utf-8") if isinstance(t, bytes) else t for t in f["units"][()]] if "units" in f else []
    except Exception as err:
        found = salvage(data)
        problems.append(f"{path}: the HDF5 container is damaged ({type(err).__name__}); {len(found)} intact "
                        "record(s) recovered from its bytes")
        return found
    records = []
    for i, text in enumerate(texts):
        try:
            records.append(unseal(text))
        except (ValueError, KeyError, TypeError):
            problems.append(f"{path}: unit record {i} is damaged")
    return records


def read_spec(folder: Path) -> dict:
    from .integrity import unseal_json

    path = folder / "spec.json"
    return unseal_json(read_bytes(path), str(path), legacy_ok=True)
