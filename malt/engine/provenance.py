"""What produced a result: code, libraries, machine, time.

Every run session of an experiment records `session_info` once (malt version, the git revision and
whether the tree was dirty when malt runs from a checkout, Python and the key libraries' versions,
the BLAS libraries threadpoolctl finds, host, user command, start time; the end time is added when
the session closes), and every unit record names its session.

The BLAS threads a unit runs with are set by `malt.numerics.threads`.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from malt.numerics.threads import default_threads


@functools.lru_cache(maxsize=1)
def code_revision() -> dict:
    """The git revision of the malt source tree, when malt runs from a checkout ({} otherwise)."""
    source = Path(__file__).resolve().parents[2]  # malt/engine/provenance.py -> the checkout
    try:
        head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
        if head.returncode != 0:
            return {}
        status = subprocess.run(["git", "--no-optional-locks", "-C", str(source), "status", "--porcelain",
                                 "--untracked-files=no"],
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
