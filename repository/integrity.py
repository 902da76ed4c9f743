"""Sealed JSON files: readable JSON with a ``checksum`` field over the rest of the content.

Used for experiment specs and dataset pointers: a flipped bit that still parses (``0.3`` becoming
``0.1``, a setting gained) is caught by the checksum; bytes that are not UTF-8 or not JSON are named
as damage instead of crashing the reader.
"""
from __future__ import annotations

import hashlib
import json

from malt.errors import RepositoryError


class DamagedJSON(RepositoryError):
    pass


def _checksum(value: dict) -> str:
    body = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.blake2b(body.encode(), digest_size=16).hexdigest()


def seal(value: dict) -> bytes:
    body = {k: v for k, v in value.items() if k != "checksum"}
    return (json.dumps(dict(body, checksum=_checksum(body)), sort_keys=True, indent=1, ensure_ascii=True)
            + "\n").encode()


def unseal_json(data: bytes, where: str, *, legacy_ok: bool = False) -> dict:
    """The content of a sealed file; DamagedJSON naming ``where`` if it does not verify.

    ``legacy_ok`` accepts a file without a checksum (written before files were sealed)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise DamagedJSON(f"{where} is damaged (not UTF-8 text)") from None
    except ValueError:
        raise DamagedJSON(f"{where} is damaged (not valid JSON)") from None
    if not isinstance(value, dict):
        raise DamagedJSON(f"{where} is damaged (not a JSON object)")
    if "checksum" not in value:
        if legacy_ok:
            return value
        raise DamagedJSON(f"{where} is damaged (its checksum is missing)")
    stored = value.pop("checksum")
    if stored != _checksum(value):
        raise DamagedJSON(f"{where} is damaged (its content does not match its checksum)")
    return value
