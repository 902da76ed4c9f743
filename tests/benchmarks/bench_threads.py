"""BLAS threads per unit (issue 18): one unit of each model family at 1 thread, 2 threads and malt's
default (--threads unset: the idle cores, shared by the jobs), on the machine as it is and with two
busy-loop processes beside it. Goal: the default is never more than 1.2× slower than the better of
1 and 2 threads, in either condition.

An algorithm may declare the BLAS threads it runs with (``blas_threads``, e.g. BMR's 1): its 1- and
2-thread columns are measured with that preference switched off, its default column as declared.

Run on a quiet machine: `python tests/benchmarks/bench_threads.py [--only BMR] [--repeats 3]`
(needs MALT_DATA).
"""
from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time

from malt import registry
from malt.engine import runner as engine
from malt.datasets.open import open_dataset
from malt.tasks import get_task

UNITS = [  # (family, algorithm, params, dataset, task, options)
    ("label propagation", "lgc", {}, "swiss-roll-30000", "semisupervised", {"labeled": 100}),
    ("PMA", "pma-map", {}, "cal500", "missing", {"missing": 0.2}),
    ("BMR", "bmr", {}, "scene", "multilabel", {}),
    ("topic models", "ctm", {}, "different100", "topics", {}),
    ("PCSA", "pcsa", {}, "emotions", "missing", {"missing": 0.3}),
    ("matrix-variate GPs", "kpmf", {}, "filmtrust", "ratings", {"runs": 1}),
]


def swiss_roll(n: int = 30_000):
    import numpy as np
    from sklearn.datasets import make_swiss_roll

    from malt.datasets.dataset import Dataset

    X, t = make_swiss_roll(n, noise=0.1, random_state=0)
    return Dataset(f"swiss-roll-{n}", {"X": X, "y": np.digitize(t, np.quantile(t, [0.25, 0.5, 0.75]))})


def seconds(plan: engine.Plan, threads: int | None) -> float:
    """Wall seconds of the plan's first unit, run as the engine runs it, nothing cached."""
    engine._WORKER_CACHES.clear()
    start = time.perf_counter()
    outcome = engine.run_unit(plan.dataset, plan.task, plan.options, plan.units()[0], None, threads)
    took = time.perf_counter() - start
    assert outcome.record["status"] == "ok", outcome.record.get("error")
    time.sleep(SETTLE_SECONDS)
    return took


SETTLE_SECONDS = 0.5
"""Pause after each run: OpenBLAS keeps its worker threads spinning for a while after a call, and a
2-thread run's spinning worker would slow whichever setting is measured next."""


def best_of_interleaved(plan: engine.Plan, algo, repeats: int) -> tuple[float, float, float]:
    """Best of ``repeats`` for 1 thread, 2 threads and the default, taken in turn within each repeat so
    that a change of load over the measurement hits the three alike."""
    best = [float("inf")] * 3
    for _ in range(repeats):
        with own_preference(algo, keep=False):
            best[0] = min(best[0], seconds(plan, 1))
            best[1] = min(best[1], seconds(plan, 2))
        with own_preference(algo, keep=True):
            best[2] = min(best[2], seconds(plan, None))
    return best[0], best[1], best[2]


@contextlib.contextmanager
def own_preference(algo, keep: bool):
    """Run with the algorithm's declared ``blas_threads`` (keep) or with the unit's setting (not keep)."""
    declared = getattr(algo, "blas_threads", None)
    if keep or declared is None:
        yield
        return
    algo.blas_threads = None
    try:
        yield
    finally:
        algo.blas_threads = declared


def busy(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated families (as printed), e.g. BMR")
    ap.add_argument("--repeats", type=int, default=5, help="best of this many runs per cell, the three settings "
                    "taken in turn")
    a = ap.parse_args()
    only = {f.strip().lower() for f in a.only.split(",") if f.strip()}
    print(f"{'family':<20} {'condition':<8} {'1 thread':>9} {'2 threads':>10} {'default':>8} {'default/best':>13}")
    for family, name, params, dataset_name, task_name, options in UNITS:
        if only and family.lower() not in only:
            continue
        try:
            dataset = swiss_roll() if dataset_name.startswith("swiss-roll") else open_dataset(dataset_name)
        except Exception as err:  # a dataset missing here: say so and go on
            print(f"{family:<20} skipped ({err})")
            continue
        task = get_task(task_name)
        algo = registry.get(name)
        plan = engine.Plan(dataset, {"kind": "bench"}, task, task.Params(**options), [(algo, algo.Params(**params))])
        for condition in ("quiet", "loaded"):
            loops = busy(2) if condition == "loaded" else []
            time.sleep(0.5 if loops else 0)
            try:
                one, two, default = best_of_interleaved(plan, algo, a.repeats)
            finally:
                for proc in loops:
                    proc.kill()
            print(f"{family:<20} {condition:<8} {one:>8.3f}s {two:>9.3f}s {default:>7.3f}s "
                  f"{default / min(one, two):>12.2f}x", flush=True)
    print("default: --threads unset (the idle cores shared by the jobs, or the algorithm's declared blas_threads).")


if __name__ == "__main__":
    main()
