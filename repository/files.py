"""Crash-safe file primitives: every file in a repository is written to a temporary name, flushed
to disk and renamed into place, so a reader (or a process killed mid-write) sees the old file or
the new one, never half of one."""
from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from pathlib import Path

from malt.errors import RepositoryError


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, write) -> None:
    """Create ``path`` through ``write(tmp_path)`` on a temporary sibling, then rename it into place.

    A disk-full or other OS error removes the temporary file, leaves ``path`` as it was, and is
    reported as a RepositoryError naming the file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except (OSError, RuntimeError) as err:
        # h5py reports a failed write while closing a file as RuntimeError carrying the errno text
        if isinstance(err, RuntimeError) and "errno" not in str(err):
            _remove(tmp)
            raise
        _remove(tmp)
        code = getattr(err, "errno", None)
        text = str(err)
        if code == errno.ENOSPC or "No space left" in text:
            reason = "the disk is full"
        elif code == errno.EFBIG or "File too large" in text:
            reason = "the file size limit was reached"
        else:
            reason = getattr(err, "strerror", None) or text.splitlines()[0]
        raise RepositoryError(f"Could not write {path}: {reason}. Nothing already committed was changed; "
                              "free space or fix permissions, then run `malt rerun`.") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_json(path: Path, value) -> None:
    text = json.dumps(value, sort_keys=True, indent=1)
    atomic_write(path, lambda tmp: tmp.write_text(text))


def checksum(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def sealed(record: dict) -> str:
    """JSON of a record with its own checksum, so a damaged journal entry is detected on reading."""
    body = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return json.dumps({"checksum": checksum(body), "record": body})


def unseal(text: str) -> dict:
    """Inverse of `sealed`; raises ValueError when the text is damaged."""
    outer = json.loads(text)
    if checksum(outer["record"]) != outer["checksum"]:
        raise ValueError("checksum mismatch")
    return json.loads(outer["record"])
