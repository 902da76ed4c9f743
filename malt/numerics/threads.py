"""The BLAS/OpenMP threads a computation runs with.

OpenBLAS spins its threads while waiting; when the machine's cores are busy that makes small solves
many times slower than one thread (issue 18 measured 26× for lgc at 30,000 points). malt therefore
sets the threads of every unit (threadpoolctl): ``--threads N`` when given, otherwise the cores left
by the load on the machine divided among the ``--jobs`` processes, at least one. Numeric cores that
run many small solves pin themselves to one thread with `one_blas_thread`.
"""
from __future__ import annotations

import contextlib
import os
import sys


def busy_elsewhere(jobs: int = 1) -> float:
    """Runnable threads on the machine besides our ``jobs`` processes: the kernel's count right now
    (/proc/loadavg's fourth field, which includes this reader), else the 1-minute load average."""
    try:
        with open("/proc/loadavg") as handle:
            runnable = int(handle.read().split()[3].split("/")[0])
        return max(0.0, runnable - jobs)
    except (OSError, ValueError, IndexError):
        try:
            return max(0.0, os.getloadavg()[0] - jobs)
        except OSError:
            return 0.0


def default_threads(jobs: int = 1) -> int:
    """BLAS threads per unit: the cores nobody else is using, shared by the jobs (at least one)."""
    cores = os.cpu_count() or 1
    return max(1, int((cores - busy_elsewhere(jobs)) // max(jobs, 1)))


_CONTROLLER: list = [None, -1]  # threadpoolctl controller, and len(sys.modules) when it scanned


def _controller():
    """The process's thread-pool controller; rescanned only after new modules were imported (finding
    the loaded BLAS/OpenMP libraries reads /proc/self/maps: milliseconds, too dear per unit)."""
    if _CONTROLLER[0] is None or _CONTROLLER[1] != len(sys.modules):
        from threadpoolctl import ThreadpoolController

        _CONTROLLER[0] = ThreadpoolController()
        _CONTROLLER[1] = len(sys.modules)
    return _CONTROLLER[0]


@contextlib.contextmanager
def blas_threads(threads: int | None, jobs: int = 1):
    """Limit BLAS/OpenMP threads inside the block (``None``: `default_threads`)."""
    with _controller().limit(limits=threads if threads else default_threads(jobs)):
        yield


@contextlib.contextmanager
def one_blas_thread():
    """Every BLAS/OpenMP pool at one thread inside the block (the unit's setting is restored after)."""
    with _controller().limit(limits=1):
        yield
