"""Advisory file locks (flock): one writer per experiment, repository-wide operations exclusive.

``REPO/.lock`` is held *shared* by every writer of one experiment and *exclusive* by operations on
the whole repository (format migration, `malt repair` of everything), so those wait for running
experiments and the experiments wait for them. ``experiments/ID/.lock`` is held exclusive by the one
process writing that experiment: two `malt cv` on different experiments run side by side, a second
one on the same experiment waits (``--wait``) or refuses with one line. While held exclusive, the lock
file records who holds it, for that line; the note is cleared on release and the file's modification
time put back, so a command leaves the file as it found it (empty, same time) whether it succeeded,
refused its input or had nothing to do. A lock file is opened like every repository file (no link
followed, nothing but a regular file, and — since the note truncates it — a single hard link).
"""
from __future__ import annotations

import errno
import fcntl
import os
import time
from pathlib import Path

from malt.errors import RepositoryError

from .files import RefusedEntry, check_no_links, describe_os_error, open_file


class FileLock:
    def __init__(self, root: Path, path: Path, what: str):
        self.root, self.path, self.what = Path(root), Path(path), what
        self.fd: int | None = None
        self.noted = False  # this holder wrote its note into the file
        self.found_times: tuple[int, int] | None = None  # (atime, mtime) in ns before the note was written

    def acquire(self, *, exclusive: bool = True, wait: bool = False) -> "FileLock":
        check_no_links(self.root, self.path)
        try:
            fd = open_file(self.path, os.O_RDWR | os.O_CREAT, single_link=True)
        except RefusedEntry:
            raise
        except OSError as err:
            raise RepositoryError(f"Cannot write to {self.path.parent}: {describe_os_error(err)}. "
                                  "Pass --repo with a folder you can write to.") from None
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(fd, mode | (0 if wait else fcntl.LOCK_NB))
        except OSError as err:
            holder = ""
            try:
                holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
            except OSError:
                pass
            os.close(fd)
            if err.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise RepositoryError(f"{self.what} is in use by {holder or 'another malt process'}; wait for it "
                                      "to finish, or pass --wait to queue behind it.") from None
            raise RepositoryError(f"Cannot lock {self.path}: {describe_os_error(err)}.") from None
        self.noted = False
        if exclusive:
            try:
                found = os.fstat(fd)
                self.found_times = (found.st_atime_ns, found.st_mtime_ns)
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"malt pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
                self.noted = True
            except OSError:
                pass  # the note is a courtesy; the lock itself is held
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is not None:
            try:
                if self.noted:
                    try:
                        os.ftruncate(self.fd, 0)  # the note is true only while the lock is held
                        if self.found_times is not None:
                            os.utime(self.fd, ns=self.found_times)
                    except OSError:
                        pass
                    self.noted = False
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
