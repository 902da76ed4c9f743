"""How every row of the cost-at-equal-accuracy table is measured.

* CPU seconds: ``time.process_time`` around the call, in a forked child process pinned to one BLAS
  thread (threadpoolctl; the entry script `bench_equal_accuracy.py` also sets one thread in the environment
  before numpy loads, else each child pays for OpenBLAS's inherited thread pool), so no run inherits
  another's caches or allocator state; the median of ``repeats`` runs, ours and the peer's interleaved
  (ours, peer, ours, peer, …) so drift on a shared machine hits both sides alike.
* Peak memory: one further child per side with ``tracemalloc`` on (numpy reports its buffers to it),
  the peak of traced allocations in MiB; timed runs never trace.
* Baseline: the trivial model of the row's task (user + item biases, column means, the label prior, the
  majority class) scored on the same split in the same run, so a row shows at once whether the default
  beats it. Untimed.
* Accuracy: whatever the callable returns as its first element (a float, in the row's metric);
  the timed runs must all return the same accuracy up to 1e-9 relative or the row says so.

A callable is ``fn() -> float`` (accuracy) and does its whole work inside — fit, predict, score — so
the cost a user pays is what is timed. Data loading belongs outside (in the parent, before forking).
"""
from __future__ import annotations

import multiprocessing as mp
import time
import traceback
import tracemalloc
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

_FORK = mp.get_context("fork")


@dataclass
class Row:
    """One line of the table: ours beside the fastest peer that matches our accuracy."""

    model: str                 # malt's algorithm name (its defaults, unless ``setting`` says otherwise)
    dataset: str               # data and protocol, e.g. "cal500, 25 % hidden, fold 0"
    metric: str                # e.g. "RMSE", "error %", "Hamming %"
    better: str                # "lower" or "higher"
    ours_acc: float = float("nan")
    ours_cpu: float = float("nan")
    ours_peak_mib: float = float("nan")
    floor_cpu: float = float("nan")   # one fit at the chosen setting (no selection), CPU s
    peer: str = ""             # e.g. "surprise.SVD(n_factors=10)"
    peer_acc: float = float("nan")
    peer_cpu: float = float("nan")
    peer_peak_mib: float = float("nan")
    peer_missing: str = ""     # why the peer could not be run (not installed, …)
    baseline: str = ""         # the trivial baseline a reviewer asks for (biases, column means, majority…)
    baseline_acc: float = float("nan")  # its accuracy on the same split, same metric, same run
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        """Our CPU over the peer's (≤ 2 is the issue's goal)."""
        return self.ours_cpu / self.peer_cpu if self.peer_cpu > 0 else float("nan")

    @property
    def floor_ratio(self) -> float:
        """Our CPU over one fit at the chosen setting (≤ 3 is the issue's goal)."""
        return self.ours_cpu / self.floor_cpu if self.floor_cpu > 0 else float("nan")

    def as_dict(self) -> dict:
        return {**asdict(self), "ratio": self.ratio, "floor_ratio": self.floor_ratio}


def _child(fn: Callable[[], float], trace: bool, conn) -> None:
    from threadpoolctl import threadpool_limits

    try:
        with threadpool_limits(1):
            if trace:
                tracemalloc.start()
            t0 = time.process_time()
            value = fn()
            cpu = time.process_time() - t0
            peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else float("nan")
        conn.send(("ok", float(value), cpu, peak))
    except BaseException:  # the parent reports it; a child never raises past here
        conn.send(("error", traceback.format_exc(), 0.0, 0.0))
    finally:
        conn.close()


def run_once(fn: Callable[[], float], *, trace: bool = False, timeout: float = 3600.0) -> tuple[float, float, float]:
    """(accuracy, CPU seconds, peak MiB or NaN) of ``fn()`` in a forked child on one BLAS thread."""
    parent, child = _FORK.Pipe(duplex=False)
    proc = _FORK.Process(target=_child, args=(fn, trace, child))
    proc.start()
    child.close()
    if not parent.poll(timeout):
        proc.kill()
        proc.join()
        raise TimeoutError(f"a measured call took more than {timeout:.0f} s")
    status, value, cpu, peak = parent.recv()
    proc.join()
    if status != "ok":
        raise RuntimeError(f"the measured call failed:\n{value}")
    return value, cpu, peak


def measure(fn: Callable[[], float], repeats: int = 3) -> tuple[float, float, float]:
    """(accuracy, median CPU seconds, peak MiB) of ``fn`` alone (no peer): for floors and one-sided rows."""
    runs = [run_once(fn) for _ in range(repeats)]
    _, _, peak = run_once(fn, trace=True)
    return runs[0][0], float(np.median([r[1] for r in runs])), peak


def compare(row: Row, ours: Callable[[], float], peer: Callable[[], float] | None, *,
            floor: Callable[[], float] | None = None, repeats: int = 3) -> Row:
    """Fill ``row``: ours and the peer interleaved ``repeats`` times (median CPU), then one traced run of
    each for peak memory, then ``floor`` (median of ``repeats``) when given. ``peer=None`` keeps
    ``row.peer_missing`` as the reason."""
    mine, theirs = [], []
    for _ in range(repeats):
        mine.append(run_once(ours))
        if peer is not None:
            theirs.append(run_once(peer))
    row.ours_acc = mine[0][0]
    row.ours_cpu = float(np.median([r[1] for r in mine]))
    row.ours_peak_mib = run_once(ours, trace=True)[2]
    if any(abs(r[0] - row.ours_acc) > 1e-9 * max(1.0, abs(row.ours_acc)) for r in mine):
        row.note = (row.note + "; " if row.note else "") + "ours not deterministic across repeats"
    if peer is not None:
        row.peer_acc = theirs[0][0]
        row.peer_cpu = float(np.median([r[1] for r in theirs]))
        row.peer_peak_mib = run_once(peer, trace=True)[2]
    if floor is not None:
        row.floor_cpu = float(np.median([run_once(floor)[1] for _ in range(repeats)]))
    return row


def peer_or_reason(module: str) -> tuple[object | None, str]:
    """(the imported module, "") or (None, why not): a missing peer is named in its row."""
    import importlib

    try:
        return importlib.import_module(module), ""
    except Exception as exc:  # ImportError, or a peer built against another numpy
        return None, f"{module} not importable ({type(exc).__name__}: {exc}); pip install -e '.[bench]'"
