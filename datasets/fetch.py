"""`malt datasets fetch`: download a named dataset's files from their public source, verify each
file's sha256 and move it into place only when it matches."""
from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from malt.errors import DataError

from .catalogue import DatasetEntry

CHUNK = 1 << 20


def fetch(item: DatasetEntry, target: Path, mirror: str | None = None, timeout: float = 60.0) -> list[Path]:
    """Download every remote file of ``item`` under ``target`` (skipping verified ones).

    mirror : base URL replacing the canonical location: a file is fetched from ``mirror/relpath``.
    """
    if not item.remotes:
        if not item.files:
            raise DataError(f"Dataset '{item.name}' has no download source; it is always available.")
        raise DataError(f"Dataset '{item.name}' has no automatic download; place {', '.join(item.files)} under "
                        f"MALT_DATA (origin: {item.source}).")
    done = []
    for remote in item.remotes:
        path = Path(target) / remote.path
        if path.exists() and _sha256(path) == remote.sha256:
            done.append(path)
            continue
        url = f"{mirror.rstrip('/')}/{remote.path}" if mirror else remote.url
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.part")
        digest = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response, open(tmp, "wb") as out:
                while chunk := response.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        except (urllib.error.URLError, OSError) as err:
            tmp.unlink(missing_ok=True)
            raise DataError(f"Could not download {url} ({getattr(err, 'reason', err)}); check the network "
                            "or pass --mirror.") from None
        if digest.hexdigest() != remote.sha256:
            tmp.unlink(missing_ok=True)
            raise DataError(f"{url}: checksum mismatch (expected sha256 {remote.sha256[:12]}…, got "
                            f"{digest.hexdigest()[:12]}…); the file was not saved.")
        os.replace(tmp, path)
        done.append(path)
    return done


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
