"""What a running experiment tells its user on stderr."""
from __future__ import annotations

import sys
import time


class Progress:
    """Units done / total, the running unit's own progress, and an ETA from measured unit times, on
    one updating line (a plain line at most every few seconds when stderr is not a terminal)."""

    TTY_SECONDS = 0.2
    LOG_SECONDS = 5.0  # between plain lines when stderr is a file or a pipe

    def __init__(self, total: int, label: str, quiet: bool, jobs: int = 1):
        self.total, self.label, self.quiet, self.jobs = total, label, quiet, max(1, jobs)
        self.done = self.failed = 0
        self.start = time.perf_counter()
        self.last = 0.0
        self.inner: tuple[float, str] = (0.0, "")
        self.tty = sys.stderr.isatty()
        self.interval = self.TTY_SECONDS if self.tty else self.LOG_SECONDS

    def unit_done(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        self.inner = (0.0, "")
        self._show(force=self.done == self.total)

    def unit_progress(self, fraction: float, message: str = "") -> None:
        self.inner = (min(max(fraction, 0.0), 1.0), message)
        self._show()

    def eta(self, now: float) -> float | None:
        if self.done == 0:
            return None
        per_unit = (now - self.start) / (self.done + self.inner[0] / self.jobs)
        return per_unit * max(self.total - self.done - self.inner[0], 0.0)

    def _show(self, force: bool = False) -> None:
        now = time.perf_counter()
        if self.quiet or (not force and now - self.last < self.interval):
            return
        self.last = now
        fraction, message = self.inner
        eta = self.eta(now)
        text = (f"[{self.label}] {self.done}/{self.total} units"
                + (f", {self.failed} failed" if self.failed else "")
                + (f"; current unit {100 * fraction:.0f}%" + (f" ({message})" if message else "")
                   if fraction > 0 and self.done < self.total else "")
                + f"; {now - self.start:.1f}s elapsed"
                + (f", ETA {eta:.0f}s" if eta is not None and self.done < self.total else ""))
        sys.stderr.write(("\r" + text + "\x1b[K") if self.tty else text + "\n")
        if self.tty and self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()
