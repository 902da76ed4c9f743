"""File primitives of the repository: a repository is data, never instructions.

* No operation follows a symbolic link inside a repository: files are opened with O_NOFOLLOW and
  every folder between the repository root and a file is checked with lstat (the root itself may be
  a link: that is the user's choice of where the repository lives).
* Names that become paths (experiment ids, dataset names, cache keys) are validated (one rule,
  `malt.names.validate_name`): no separators, no ``..``, no absolute paths.
* Whole files are written to a temporary sibling, checked, flushed and renamed into place, so a
  reader (or a process killed mid-write) sees the old file or the new one. The temporary file is
  read back and compared before the rename: a write whose success is not certain is never
  committed. New files get the permissions the umask allows (not 0600).
* Every OS error becomes one RepositoryError line naming the file and what to do.
"""
from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from pathlib import Path

from malt.errors import RepositoryError
from malt.names import validate_name  # noqa: F401  (the repository's names follow the one rule)

def describe_os_error(err: OSError) -> str:
    code = getattr(err, "errno", None)
    text = str(err)
    if code == errno.ENOSPC or "No space left" in text:
        return "the disk is full"
    if code == errno.EFBIG or "File too large" in text:
        return "the file size limit was reached"
    if code == errno.EDQUOT:
        return "the disk quota is exceeded"
    if code in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if code == errno.EROFS:
        return "the file system is read-only"
    if code == errno.ELOOP:
        return "it is a symbolic link, which malt never follows inside a repository"
    if code == errno.EMFILE:
        return "too many open files"
    return getattr(err, "strerror", None) or text.splitlines()[0]


def write_error(path, err: OSError) -> RepositoryError:
    return RepositoryError(f"Could not write {path}: {describe_os_error(err)}. Nothing already committed was "
                           "changed; free space or fix permissions, then run `malt rerun`.")


def read_error(path, err: OSError) -> RepositoryError:
    return RepositoryError(f"Could not read {path}: {describe_os_error(err)}. Nothing was changed; fix the "
                           "file's permissions or the file system and try again.")


def check_no_links(root: Path, path: Path) -> None:
    """Raise if any existing component of ``path`` below ``root`` is a symbolic link."""
    root, path = Path(root), Path(path)
    try:
        relative = path.relative_to(root)
    except ValueError:
        raise RepositoryError(f"{path} is outside the repository {root}; malt writes nothing there.") from None
    current = root
    for part in relative.parts:
        if part in ("..", ""):
            raise RepositoryError(f"{path}: '..' is not allowed inside a repository path.")
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return
        except OSError as err:
            raise read_error(current, err) from None
        if stat.S_ISLNK(mode):
            raise RepositoryError(f"{current} is a symbolic link; malt never follows links inside a repository. "
                                  "Replace it with a real file or folder (or remove it) and try again.")


def ensure_dir(root: Path, path: Path) -> Path:
    """Create ``path`` (and missing parents below ``root``) without following links."""
    check_no_links(root, path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_error(path, err) from None
    check_no_links(root, path)
    return path


def open_read(path: Path) -> int:
    """A read-only descriptor of a regular file, never through a symbolic link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RepositoryError(f"{path} is a symbolic link; malt never follows links inside a repository. "
                                  "Replace it with the real file.") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RepositoryError(f"{path} is not a regular file; remove it and try again.")
    return fd


def read_bytes(path: Path) -> bytes:
    """The whole file (FileNotFoundError passes through; other OS errors become one line)."""
    try:
        fd = open_read(path)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise read_error(path, err) from None
    try:
        with os.fdopen(fd, "rb") as handle:
            return handle.read()
    except OSError as err:
        raise read_error(path, err) from None


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[written:]


def atomic_write(root: Path, path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically: temporary sibling, full write, fsync, read-back check,
    rename, fsync of the folder. On any error the temporary file is removed and ``path`` is left as it
    was; the error is one RepositoryError line."""
    path = Path(path)
    ensure_dir(root, path.parent)
    check_no_links(root, path)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    digest = hashlib.blake2b(data, digest_size=16).digest()
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if hashlib.blake2b(read_bytes(tmp), digest_size=16).digest() != digest:
            raise OSError(errno.EIO, "the written file did not read back as written")
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as err:
        _remove(tmp)
        raise write_error(path, err) from None
    except BaseException:
        _remove(tmp)
        raise


def remove(root: Path, path: Path) -> bool:
    """Delete one file inside the repository (a link is removed as a link, never followed)."""
    check_no_links(root, path.parent)
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
    except OSError as err:
        raise write_error(path, err) from None


def _remove(path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def sweep_temporaries(folder: Path, older_than: float = 3600.0) -> None:
    """Remove temporary files of writers that were killed mid-write (only stale ones: a live writer's
    temporary file is younger than an hour)."""
    import time

    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    now = time.time()
    for entry in entries:
        if entry.name.startswith(".") and entry.name.endswith(".tmp") and entry.is_file(follow_symlinks=False):
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime > older_than:
                    os.unlink(entry.path)
            except OSError:
                pass
