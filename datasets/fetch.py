"""`malt datasets fetch`: download a named dataset's files from their public source, verify each
file's sha256 and move it into place only when it matches.

Safety: one overall deadline for the whole download (not only per socket read), a size cap per
file (checked against Content-Length before reading and against the bytes received while
reading), the temporary ``.NAME.part`` file removed on any failure (including an interrupt), and no
symbolic link followed when writing: a link in the way (the target file, the ``.part`` file or a
folder below the data root) is refused, never written through.
"""
from __future__ import annotations

import hashlib
import http.client
import os
import stat
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from malt.errors import DataError

from .catalogue import DatasetEntry

CHUNK = 1 << 20
MAX_BYTES = 2 << 30
"""Default size cap per downloaded file (2 GiB); the catalogue's largest file is far below it."""
DEADLINE = 1800.0
"""Default deadline for a whole `fetch` call, in seconds."""


def fetch(item: DatasetEntry, target: Path, mirror: str | None = None, timeout: float = 60.0,
          deadline: float = DEADLINE, max_bytes: int = MAX_BYTES) -> list[Path]:
    """Download every remote file of ``item`` under ``target`` (skipping verified ones).

    mirror : base URL (http or https) replacing the canonical location: a file is fetched from
             ``mirror/relpath``
    timeout : seconds a single network read may wait
    deadline : seconds the whole call may take
    max_bytes : largest file accepted
    """
    if not item.remotes:
        if not item.files:
            raise DataError(f"Dataset '{item.name}' has no download source; it is always available.")
        raise DataError(f"Dataset '{item.name}' has no automatic download; place {', '.join(item.files)} under "
                        f"MALT_DATA (origin: {item.source}).")
    if mirror is not None:
        check_url(mirror, "--mirror")
    target = Path(target)
    stop_at = time.monotonic() + deadline
    done: list[Path] = []
    created: list[Path] = []
    try:
        for remote in item.remotes:
            path = safe_destination(target, remote.path, created)
            if path.is_file() and _sha256(path) == remote.sha256:
                done.append(path)
                continue
            url = f"{mirror.rstrip('/')}/{remote.path}" if mirror else remote.url
            _download(url, path, remote.sha256, stop_at, timeout, max_bytes)
            done.append(path)
    except BaseException:
        for folder in reversed(created):  # folders this call made and left empty
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
        raise
    return done


def check_url(url: str, what: str = "URL") -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise DataError(f"{what} {url!r} is not an http:// or https:// URL.")
    return url


def safe_destination(root: Path, relpath: str, created: list[Path] | None = None) -> Path:
    """root/relpath after checking that relpath stays below root and that no folder on the way is a
    symbolic link; missing folders are created (without following links) and appended to ``created``."""
    rel = Path(relpath)
    if rel.is_absolute() or ".." in rel.parts:
        raise DataError(f"Refusing to write {relpath!r}: the path leaves the data folder.")
    current = root
    for part in (root, *[root / Path(*rel.parts[:k]) for k in range(1, len(rel.parts))]):
        current = part
        if current.is_symlink():
            raise DataError(f"Refusing to write under {current}: it is a symbolic link (remove it or pass another "
                            "--repo).")
        if not current.exists():
            current.mkdir()
            if created is not None:
                created.append(current)
        elif not current.is_dir():
            raise DataError(f"Refusing to write under {current}: it is a file, not a folder.")
    path = root / rel
    if path.is_symlink():
        raise DataError(f"Refusing to write {path}: it is a symbolic link (remove it first).")
    return path


def _download(url: str, path: Path, sha256: str, stop_at: float, timeout: float, max_bytes: int) -> None:
    tmp = path.with_name(f".{path.name}.part")
    if tmp.is_symlink():
        tmp.unlink()
    digest = hashlib.sha256()
    received = 0
    try:
        remaining = stop_at - time.monotonic()
        if remaining <= 0:
            raise DataError(f"Download deadline passed before {url} started; run `malt datasets fetch` again.")
        with urllib.request.urlopen(url, timeout=min(timeout, remaining)) as response:
            length = response.headers.get("Content-Length")
            if length is not None and length.isdigit() and int(length) > max_bytes:
                raise DataError(f"{url} is {int(length):,} bytes, more than the {max_bytes:,}-byte limit; not "
                                "downloaded.")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as out:
                while True:
                    remaining = stop_at - time.monotonic()
                    if remaining <= 0:
                        raise DataError(f"Download of {url} passed its deadline after {received:,} bytes; run "
                                        "`malt datasets fetch` again, or use a faster --mirror.")
                    _set_read_timeout(response, min(timeout, remaining))
                    chunk = response.read1(min(CHUNK, max_bytes + 1 - received))  # what has arrived
                    if not chunk:
                        break
                    received += len(chunk)
                    if received > max_bytes:
                        raise DataError(f"{url} sent more than the {max_bytes:,}-byte limit; not saved.")
                    digest.update(chunk)
                    out.write(chunk)
            if length is not None and length.isdigit() and received != int(length):
                raise DataError(f"Could not download {url}: the connection closed after {received:,} of "
                                f"{int(length):,} bytes; run `malt datasets fetch` again.")
        if digest.hexdigest() != sha256:
            raise DataError(f"{url}: checksum mismatch (expected sha256 {sha256[:12]}…, got "
                            f"{digest.hexdigest()[:12]}…); the file was not saved.")
        if path.exists() and not stat.S_ISREG(path.lstat().st_mode):
            raise DataError(f"Refusing to replace {path}: it is not a regular file.")
        os.replace(tmp, path)  # replaces a link itself, never its target
    except DataError:
        tmp.unlink(missing_ok=True)
        raise
    except urllib.error.HTTPError as err:
        tmp.unlink(missing_ok=True)
        raise DataError(f"Could not download {url} (HTTP {err.code} {err.reason}); check the URL or pass "
                        "--mirror.") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as err:
        tmp.unlink(missing_ok=True)
        if time.monotonic() >= stop_at:
            raise DataError(f"Download of {url} passed its deadline after {received:,} bytes; run `malt datasets "
                            "fetch` again, or use a faster --mirror.") from None
        reason = getattr(err, "reason", None) or err.__class__.__name__ + (f": {err}" if str(err) else "")
        raise DataError(f"Could not download {url} ({reason}); check the network or pass --mirror.") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _set_read_timeout(response, seconds: float) -> None:
    """Shorten the socket timeout of an open response so one read cannot outlive the deadline."""
    try:
        response.fp.raw._sock.settimeout(max(seconds, 0.001))
    except AttributeError:
        pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
