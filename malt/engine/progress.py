"""What running work tells its user on stderr: units done, the running units' own progress, an ETA.

The ETA adds up what each remaining unit is expected to cost, per setting (algorithm and parameters):
the median wall seconds of its units finished in this run, else what its units cost before (the
``fit_seconds`` the repository's records keep: `prior_costs`), else what a running unit's own reports
(``ctx.progress``) say: t / fraction; failing those, the algorithm's other settings give a guess
("ETA ~40s"), and a unit running for t seconds costs at least t, so a setting nothing is known about
gives a lower bound ("ETA > 40s"). A running unit has the rest of what its setting costs to go, or,
once it outlasts that (or nothing was measured), what its own reports say. The engine runs the first
unit of every setting first, so each is measured early. With ``jobs``
workers the remaining work is shared by them, and never ends before the longest running unit.

On a terminal the line updates in place (every 0.2 s); on a file or pipe a plain line is written
every ``LOG_SECONDS`` (``MALT_PROGRESS_SECONDS``, default 10) and at the end; ``quiet`` writes
nothing. `Counter` is the same for a known number of similar steps (figures of `malt plot`).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from statistics import mean, median


def log_seconds() -> float:
    try:
        return max(float(os.environ.get("MALT_PROGRESS_SECONDS", "10")), 0.0)
    except ValueError:
        return 10.0


def duration(seconds: float) -> str:
    """'4.2s', '35s', '4m10s', '2h05m'."""
    if seconds < 9.95:
        return f"{max(seconds, 0.0):.1f}s"
    seconds = int(round(seconds))
    if seconds < 100:
        return f"{seconds}s"
    if seconds < 6000:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Line:
    """One status line on stderr: rewritten in place on a terminal, a plain line at most every
    ``LOG_SECONDS`` elsewhere (logs), nothing when quiet."""

    TTY_SECONDS = 0.2
    LOG_SECONDS: float | None = None  # None: `log_seconds()` (MALT_PROGRESS_SECONDS)

    def __init__(self, quiet: bool | None):
        self.tty = sys.stderr.isatty()
        self.quiet = (not self.tty) if quiet is None else quiet
        self.last = float("-inf")

    def interval(self) -> float:
        if self.tty:
            return self.TTY_SECONDS
        return log_seconds() if self.LOG_SECONDS is None else self.LOG_SECONDS

    def due(self, now: float, force: bool = False) -> bool:
        return not self.quiet and (force or now - self.last >= self.interval())

    def write(self, text: str, now: float, final: bool = False) -> None:
        self.last = now
        sys.stderr.write(("\r" + text + "\x1b[K" + ("\n" if final else "")) if self.tty else text + "\n")
        sys.stderr.flush()


@dataclass
class _Running:
    setting: tuple
    started: float
    fraction: float = 0.0
    message: str = ""


@dataclass
class Progress:
    """Progress of an experiment's units (see the module docstring).

    units : (unit key, setting, label) of every unit to run, in the order they will start; a setting
        is (algorithm, params key), the label says which unit it is ("mllr fold 2")
    prior : setting or algorithm name -> seconds its units took before (`prior_costs`)
    """

    units: list
    label: str
    quiet: bool | None = None
    jobs: int = 1
    prior: dict = field(default_factory=dict)
    limit: float | None = None  # --unit-timeout: no unit takes longer

    def __post_init__(self):
        self.line = Line(self.quiet)
        self.start = time.perf_counter()
        self.pending = {key: setting for key, setting, _ in self.units}
        self.names = {key: name for key, _, name in self.units}
        self.running: dict[str, _Running] = {}
        self.measured: dict = {}  # setting -> wall seconds of its units finished in this run
        self.total = len(self.units)
        self.done = self.failed = 0
        self.jobs = max(1, self.jobs)

    # ---- events ---------------------------------------------------------------------------------
    def report(self, key: str, fraction: float, message: str = "") -> None:
        """A unit's own progress (0 when it starts); the first report of a unit marks its start."""
        now = time.perf_counter()
        unit = self.running.get(key)
        if unit is None:
            if key not in self.pending:
                return
            unit = self.running[key] = _Running(self.pending.pop(key), now)
        unit.fraction, unit.message = min(max(float(fraction), 0.0), 1.0), message
        self._show(now)

    def reporter(self, key: str):
        """The ``ctx.progress`` callback of one unit run in this process."""
        return lambda fraction, message="": self.report(key, fraction, message)

    def unit_done(self, key: str, failed: bool = False, seconds: float | None = None, timed_out: bool = False) -> None:
        """A unit is committed. What it cost is measured from its first report; ``seconds`` (its
        recorded fit seconds) stands in when it ran where it could not report (joblib's workers). A
        failed unit says nothing of what its setting costs, unless it ran out of time (``timed_out``)."""
        now = time.perf_counter()
        unit = self.running.pop(key, None)
        setting = unit.setting if unit else self.pending.pop(key, None)
        if unit is not None:
            seconds = now - unit.started
        if setting is not None and seconds is not None and (not failed or timed_out):
            self.measured.setdefault(setting, []).append(seconds)
        self.done += 1
        self.failed += failed
        self._show(now, force=self.done == self.total)

    # ---- the estimate -----------------------------------------------------------------------------
    def cost(self, setting: tuple, now: float) -> tuple[float | None, str | None]:
        """(expected seconds of one unit of ``setting``, where that comes from: 'measured' in this run or
        before, 'own' reports of its running units, 'guess' from its algorithm's other settings, None)."""
        cost, source = self._cost(setting, now)
        return (min(cost, self.limit) if cost is not None and self.limit else cost), source

    def _cost(self, setting: tuple, now: float) -> tuple[float | None, str | None]:
        if self.measured.get(setting):
            return median(self.measured[setting]), "measured"
        if setting in self.prior:
            return self.prior[setting], "measured"
        own = [(now - u.started) / u.fraction for u in self.running.values()
               if u.setting == setting and u.fraction >= 0.01]
        if own:
            return mean(own), "own"
        same = [v for k, values in self.measured.items() if k[0] == setting[0] for v in values]
        if same:
            return median(same), "guess"
        return self.prior.get(setting[0]), "guess" if setting[0] in self.prior else None

    def eta(self, now: float | None = None) -> tuple[float, str] | None:
        """(seconds left, 'exact' | 'guess' | 'bound'), or None before anything is known. 'guess': some
        setting's cost is taken from its algorithm's other settings; 'bound': some setting's cost is not
        known at all, so the time leaves it out (it is at least that)."""
        now = time.perf_counter() if now is None else now
        if self.done == self.total:
            return 0.0, "exact"
        work = longest = 0.0
        bound = guess = informed = False
        for unit in self.running.values():
            elapsed = now - unit.started
            cost, source = self.cost(unit.setting, now)
            if source == "measured" and elapsed < cost:  # what its units took is surer than its own reports
                left = cost - elapsed
            elif unit.fraction >= 0.01:  # its own reports say how far it is
                left = elapsed * (1 - unit.fraction) / unit.fraction
            else:
                left = max(cost - elapsed, 0.0) if cost is not None else 0.0
            if self.limit:  # it is stopped at the limit
                left = min(left, max(self.limit - elapsed, 0.0))
            bound |= source is None and unit.fraction < 0.01
            guess |= source == "guess" and unit.fraction < 0.01
            informed |= cost is not None or unit.fraction >= 0.01
            work += left
            longest = max(longest, left)
        for setting in self.pending.values():
            cost, source = self.cost(setting, now)
            if cost is None:  # it costs at least what a running unit of it has taken so far
                bound = True
                cost = max((now - u.started for u in self.running.values() if u.setting == setting), default=0.0)
            guess |= source == "guess"
            informed |= cost > 0
            work += cost
        if not informed:
            return None
        slots = min(self.jobs, len(self.running) + len(self.pending)) or 1
        return max(work / slots, longest), "bound" if bound else "guess" if guess else "exact"

    # ---- display ----------------------------------------------------------------------------------
    def _show(self, now: float, force: bool = False) -> None:
        if not self.line.due(now, force):
            return
        text = f"[{self.label}] {self.done}/{self.total} units" + (f", {self.failed} failed" if self.failed else "")
        if self.running and self.done < self.total:
            key, unit = max(self.running.items(), key=lambda item: now - item[1].started)
            what = f"{100 * unit.fraction:.0f}%" + (f" ({unit.message})" if unit.message else "")
            text += (f"; current unit {what}" if len(self.running) == 1 else
                     f"; {len(self.running)} running, {self.names.get(key, key)} {what}")
        text += f"; {duration(now - self.start)} elapsed"
        estimate = self.eta(now) if self.done < self.total else None
        if estimate is not None:
            text += f", ETA {MARKS[estimate[1]]}{duration(estimate[0])}"
        self.line.write(text, now, final=self.done == self.total)


MARKS = {"exact": "", "guess": "~", "bound": "> "}
"""How an ETA line marks a guess and a lower bound."""


class Counter:
    """Progress of ``total`` similar steps (figures, tables): done / total, ETA from their mean time."""

    def __init__(self, total: int, label: str, quiet: bool | None = None):
        self.total, self.label, self.done = total, label, 0
        self.line = Line(quiet)
        self.start = time.perf_counter()

    def step(self, what: str = "") -> None:
        self.done += 1
        now = time.perf_counter()
        if not self.line.due(now, force=self.done == self.total):
            return
        elapsed = now - self.start
        left = elapsed / self.done * (self.total - self.done)
        self.line.write(f"[{self.label}] {self.done}/{self.total}" + (f" ({what})" if what else "")
                        + f"; {duration(elapsed)} elapsed"
                        + (f", ETA {duration(left)}" if self.done < self.total else ""), now,
                        final=self.done == self.total)


def prior_costs(records) -> dict:
    """Setting (algorithm, params key) and algorithm name -> median fit seconds of the finished units
    among ``records`` (the repository's memory of what a unit costs)."""
    by_setting: dict = {}
    by_algorithm: dict = {}
    for record in records:
        seconds = record.get("fit_seconds")
        if record.get("status") != "ok" or not isinstance(seconds, (int, float)):
            continue
        by_setting.setdefault((record.get("algorithm"), record.get("params_key")), []).append(float(seconds))
        by_algorithm.setdefault(record.get("algorithm"), []).append(float(seconds))
    return {**{k: median(v) for k, v in by_algorithm.items()}, **{k: median(v) for k, v in by_setting.items()}}
