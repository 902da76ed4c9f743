"""Writing figures, tables and reports: whole files or nothing.

Every output is written to a temporary sibling and renamed into place, so an interrupted or failed
`malt plot`/`table`/`report` (kill -9, a full disk) never leaves a zero-byte or truncated file where a
paper's figure was; a failure is one line naming the file.
"""
from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Callable

from malt.errors import MaltError


def output_dir(path: Path) -> Path:
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise MaltError(f"{path} is a file; --out takes a folder here.")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise MaltError(f"Cannot create the output folder {path}: {_reason(err)}.") from None
    return path


def output_file(path: Path) -> Path:
    path = Path(path)
    if path.is_dir():
        raise MaltError(f"{path} is a folder; --out takes a file name here.")
    output_dir(path.parent)
    return path


def write(path: Path, produce: Callable[[Path], None] | str | bytes) -> Path:
    """Create ``path`` from text, bytes, or ``produce(temporary_path)``; atomically."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp{path.suffix}")
    try:
        if callable(produce):
            produce(tmp)
        elif isinstance(produce, bytes):
            tmp.write_bytes(produce)
        else:
            tmp.write_text(produce)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except Exception as err:
        tmp.unlink(missing_ok=True)
        cause = _os_error(err)
        if cause is None:
            raise
        raise MaltError(f"Could not write {path}: {_reason(cause)}; nothing was left half-written.") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _os_error(err: BaseException) -> OSError | None:
    """The OS error behind ``err``: itself, or one it was raised while handling (matplotlib's PDF
    writer, cleaning up after a full disk, fails with an AttributeError whose context is the OSError)."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, OSError):
            return err
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return None


def _reason(err: OSError) -> str:
    from malt.repository.files import describe_os_error

    return describe_os_error(err)
