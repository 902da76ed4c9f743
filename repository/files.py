"""File primitives of the repository: a repository is data, never instructions.

* No operation follows a symbolic link inside a repository or opens anything but a regular file
  there: every file is opened by `open_file` (O_NOFOLLOW | O_NONBLOCK, then fstat must say a regular
  file, so a FIFO, device, socket or folder in a file's place is refused by name instead of hanging
  or being read), and every folder between the repository root and a file is checked with lstat
  (the root itself may be a link: that is the user's choice of where the repository lives). A file
  malt appends to or truncates (logs, lock files) must also have a single link: a hard link would
  carry the write to a file outside the repository.
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
import re
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


RERUN = "run `malt rerun`"
"""What to do after a failed write of a run (the default advice of `write_error`)."""


class WriteFailed(RepositoryError):
    """A write the file system refused (a full disk, a quota, permissions); nothing committed changed."""

    def __init__(self, path, reason: str, then: str):
        super().__init__(f"Could not write {path}: {reason}. Nothing already committed was changed; free space or "
                         f"fix permissions, then {then}.")
        self.path, self.reason = path, reason


def write_error(path, err: OSError, then: str = RERUN) -> WriteFailed:
    return WriteFailed(path, describe_os_error(err), then)


def read_error(path, err: OSError) -> RepositoryError:
    return RepositoryError(f"Could not read {path}: {describe_os_error(err)}. Nothing was changed; fix the "
                           "file's permissions or the file system and try again.")


class RefusedEntry(RepositoryError):
    """A symbolic link, or a FIFO, device, socket or folder, where a repository keeps a regular file."""


def describe_mode(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def refused(path, what: str) -> RefusedEntry:
    if what == "a symbolic link":
        return RefusedEntry(f"{path} is a symbolic link; malt never follows links inside a repository. Replace it "
                            "with the real file or folder (or remove it) and try again.")
    return RefusedEntry(f"{path} is {what} where the repository keeps a regular file; malt opens nothing else "
                        "inside a repository. Remove it (or put the real file back) and try again.")


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
            raise refused(current, "a symbolic link")


def ensure_dir(root: Path, path: Path) -> Path:
    """Create ``path`` (and missing parents below ``root``) without following links."""
    check_no_links(root, path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise write_error(path, err) from None
    check_no_links(root, path)
    return path


def _entry(root: Path, path: Path) -> os.stat_result | None:
    """lstat of ``path`` (None if absent) after refusing a link on the way to it."""
    check_no_links(root, path)
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise read_error(path, err) from None


def check_file(root: Path, path: Path, *, single_link: bool = False) -> None:
    """Refuse a link on the way to ``path`` and anything but a regular file at ``path`` (if it exists);
    ``single_link``: also a file with other hard links (one malt will append to or truncate)."""
    info = _entry(root, path)
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise refused(path, describe_mode(info.st_mode))
    if info is not None and single_link and info.st_nlink > 1:
        raise hard_linked(path, info.st_nlink)


def check_folder(root: Path, path: Path) -> None:
    """Refuse a link on the way to ``path`` and anything but a folder at ``path`` (if it exists)."""
    info = _entry(root, path)
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise RefusedEntry(f"{path} is {describe_mode(info.st_mode)} where the repository keeps a folder; remove it "
                           "and try again.")


def hard_linked(path, links: int) -> RefusedEntry:
    return RefusedEntry(f"{path} has {links} hard links; malt writes only to files of its own inside a repository "
                        "(a hard link would carry the write to a file elsewhere). Make it a file of its own (copy it "
                        "and move the copy over it) and try again.")


def open_file(path: Path, flags: int = os.O_RDONLY, mode: int = 0o666, *, single_link: bool = False) -> int:
    """The one way malt opens a file inside a repository: a descriptor of a regular file, never
    through a symbolic link and never blocking (a FIFO or device in the file's place is refused by
    name, not waited on). ``single_link``: also refuse a file with other hard links (malt is about to
    append to or truncate it). FileNotFoundError passes through; other OS errors are raised as they
    are for the caller to name."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise refused(path, "a symbolic link") from None
        if err.errno in (errno.ENXIO, errno.EISDIR, errno.ENODEV, errno.EOPNOTSUPP):  # a socket, folder, device
            try:
                what = describe_mode(os.lstat(path).st_mode)
            except OSError:
                what = "not a regular file"
            raise refused(path, what) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise refused(path, describe_mode(info.st_mode))
        if single_link and info.st_nlink > 1:
            raise hard_linked(path, info.st_nlink)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_read(path: Path) -> int:
    """A read-only descriptor of a regular file, never through a symbolic link."""
    return open_file(path)


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


TEMPORARY = re.compile(r"\.(?P<name>[^/]+)\.(?P<pid>[0-9]+)\.[0-9a-f]{8}\.tmp")
"""The names `atomic_write` gives its temporary files (the only files `sweep_temporaries` removes)."""


def temporary_name(name: str) -> str:
    return f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def atomic_write(root: Path, path: Path, data: bytes, then: str = RERUN) -> None:
    """Replace ``path`` by ``data`` atomically: temporary sibling, full write, fsync, read-back check,
    rename, fsync of the folder. On any error the temporary file is removed and ``path`` is left as it
    was; the error is one RepositoryError line."""
    path = Path(path)
    ensure_dir(root, path.parent)
    check_file(root, path)
    tmp = path.parent / temporary_name(path.name)
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
        raise write_error(path, err, then) from None
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


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def sweep_temporaries(root: Path, folder: Path, older_than: float = 3600.0, dead_after: float | None = None
                      ) -> list[str]:
    """Remove the temporary files `atomic_write` left behind when its writer was killed mid-write:
    only names of its own pattern, only regular files (a link or anything else of that name is left
    alone), only in ``folder`` itself (opened without following a link, entries removed relative to
    it), and only stale ones: older than ``older_than`` seconds (0 when the caller holds the lock that
    excludes every writer of the folder), or older than ``dead_after`` seconds when the process named
    in the file's name no longer runs on this machine (a write takes seconds). Returns the names
    removed; cleaning is best effort, never an error."""
    import time

    try:
        check_no_links(root, folder)
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, RepositoryError):
        return []
    removed = []
    try:
        now = time.time()
        for entry in list(os.scandir(fd)):
            match = TEMPORARY.fullmatch(entry.name)
            if not match:
                continue
            try:
                info = os.stat(entry.name, dir_fd=fd, follow_symlinks=False)
                age = now - info.st_mtime
                stale = age >= older_than or (dead_after is not None and age >= dead_after
                                              and not _running(int(match["pid"])))
                if stat.S_ISREG(info.st_mode) and stale:
                    os.unlink(entry.name, dir_fd=fd)
                    removed.append(entry.name)
            except OSError:
                pass
    except OSError:
        pass
    finally:
        os.close(fd)
    return removed
