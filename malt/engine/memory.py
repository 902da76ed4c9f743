"""Peak resident memory of one unit of work, measured by the kernel: cheap (two small /proc reads and one
write per unit) and correct in a reused worker process.

Linux keeps each process's high-water mark of resident memory (``VmHWM`` in /proc/self/status) and resets
it to the current resident size when "5" is written to /proc/self/clear_refs (Linux ≥ 4.0). Resetting it
when a unit starts and reading it when the unit ends gives the unit's own peak, whatever ran before it in
the same process (joblib's workers run many units each; ``ru_maxrss`` would report the largest of them all).
The peak is the process's resident memory — the data set and libraries loaded before the unit included —
which is what must fit in the machine. Units sharing one process concurrently (threads of a Dask worker)
share one measurement. Elsewhere (no /proc, or the reset refused) the process's lifetime peak from
``getrusage`` is reported instead, and ``per_unit`` says so.

Before the reset, memory the process has freed but the allocator still holds is handed back to the
system (glibc's ``malloc_trim``): arrays freed after loading and splitting a data set stay resident
otherwise (glibc raises its mmap threshold after large frees, so later big arrays come from a heap
it rarely shrinks) — at 10⁷ ratings 300 MiB that belonged to no unit and would have counted as its
peak, and that the unit could not use for anything else. A no-op where glibc is absent.
"""
from __future__ import annotations

import re
import resource
import sys

_HWM = re.compile(rb"VmHWM:\s+(\d+)\s+kB")


def _read_hwm_kib() -> int | None:
    try:
        with open("/proc/self/status", "rb") as f:
            match = _HWM.search(f.read())
    except OSError:
        return None
    return int(match.group(1)) if match else None


def release_freed_memory() -> bool:
    """Return freed heap pages to the system (glibc's ``malloc_trim(0)``); False where that is unavailable."""
    try:
        import ctypes

        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class PeakMemory:
    """``with PeakMemory() as peak: ...`` then ``peak.mib`` (peak resident MiB during the block),
    ``peak.start_mib`` (resident MiB as it began: what was loaded before it, the data set included; nan where
    the reset is unavailable) and ``peak.per_unit`` (False: the process's lifetime peak, the reset being
    unavailable)."""

    def __enter__(self):
        release_freed_memory()
        start = _read_hwm_kib() if _reset_hwm() else None  # right after the reset the high-water mark is the RSS
        self.per_unit = start is not None
        self.start_mib = start / 1024.0 if start is not None else float("nan")
        self.mib = float("nan")
        return self

    def __exit__(self, *exc):
        kib = _read_hwm_kib() if self.per_unit else None
        if kib is None:
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            kib = rss // 1024 if sys.platform == "darwin" else rss  # bytes on macOS, KiB on Linux
        self.mib = kib / 1024.0
        return False
