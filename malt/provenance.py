"""What produced a result: code, libraries, machine, time — and the BLAS threads a unit runs with.

Every run session of an experiment records `session_info` once (malt version, the git revision and
whether the tree was dirty when malt runs from a checkout, Python and the key libraries' versions,
the BLAS libraries threadpoolctl finds, host, user command, start time; the end time is added when
the session closes), and every unit record names its session.

BLAS threads: OpenBLAS spins its threads while waiting; when the machine's cores are busy that makes
small solves many times slower than one thread (issue 18 measured 26× for lgc at 30,000 points).
malt therefore sets the threads of every unit (threadpoolctl): ``--threads N`` when given, otherwise
the cores left by the load on the machine divided among the ``--jobs`` processes, at least one.
"""
from __future__ import annotations

import contextlib
import functools
import os
import platform
import subprocess
import sys
import time
from pathlib import Path


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


@functools.lru_cache(maxsize=1)
def code_revision() -> dict:
    """The git revision of the malt source tree, when malt runs from a checkout ({} otherwise)."""
    source = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
        if head.returncode != 0:
            return {}
        status = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=5)
        return {"git_revision": head.stdout.strip(), "git_dirty": bool(status.stdout.strip()),
                "source": str(source)}
    except (OSError, subprocess.SubprocessError):
        return {}


def library_versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("malt", "numpy", "scipy", "scikit-learn", "pandas", "h5py", "joblib", "threadpoolctl"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def blas_info() -> list[dict]:
    try:
        from threadpoolctl import threadpool_info

        return [{k: item.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer")}
                for item in threadpool_info()]
    except Exception:
        return []


def session_info(dataset=None, *, threads: int | None = None, jobs: int = 1) -> dict:
    info = {
        "started": time.time(),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": library_versions(),
        "blas": blas_info(),
        "threads": threads or f"auto ({default_threads(jobs)} now)",
        "jobs": jobs,
        "command": " ".join(sys.argv[:1] and [Path(sys.argv[0]).name] + sys.argv[1:])[:1000],
        "cwd": os.getcwd(),
        "pid": os.getpid(),
    }
    info.update(code_revision())
    if dataset is not None:
        info["dataset_hash"] = dataset.hash
    return info
