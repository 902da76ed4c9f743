"""Benchmark: seconds per fit of every ratings algorithm on MovieLens-100K, beside `baseline` and
`biased-mf` measured in the same run (issue 23's speed goals: pcsa ≤ 60 s per fit, every other model
≤ 30 s on 2 cores; memory never dense in users × items × anything).

One split of malt's ratings task (train_fraction 0.7, fold 0), every algorithm at its defaults on
that split (self-tuning ones include their inner CV), one after the other in this process. Printed:
wall and CPU seconds of ``run`` at the BLAS threads `malt cv` would give the unit (the idle cores, or
the algorithm's declared ``blas_threads``; CPU is the honest figure on a shared machine: wall time
grows with the load), the ratio to biased-mf's CPU seconds,
peak traced memory against the users × items float matrix (7.6 MiB for 943 × 1682 doubles), and the
test RMSE as a check that the fit is the real one.
Run: ``python tests/benchmarks/bench_ratings.py [algo ...]``.
"""
from __future__ import annotations

import os
import sys
import time
import tracemalloc
from pathlib import Path


os.environ.setdefault("MALT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "datasets"))

from malt.numerics import threads  # noqa: E402
from malt.engine.context import Context  # noqa: E402
from malt.datasets.catalogue import DataRoots, entry  # noqa: E402
from malt.registry import get  # noqa: E402
from malt.tasks.ratings import RatingsParams, RatingsTask  # noqa: E402

REFERENCES = ["baseline", "biased-mf"]
MODELS = ["popularity", "pmf", "pcsa", "pcsa-sparse", "kpmf", "con-mvgp", "trace-gp", "mvgp", "pma-map"]
GOAL = {"pcsa": 60.0, "pcsa-sparse": 60.0}


def main(names):
    data = entry("movielens-100k").loader(DataRoots.default())
    task, tp = RatingsTask(), RatingsParams()
    split = task.split(data, tp, 0)
    n, m = split.train.shape
    dense_mib = n * m * 8 / 2**20
    print(f"MovieLens-100K {n} × {m}, {split.train.nnz} training ratings, {split.test_rows.size} test; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, BLAS threads per unit "
          f"{threads.default_threads()} unless the algorithm declares its own")
    print(f"{'algorithm':12s} {'wall s':>8s} {'CPU s':>8s} {'CPU / biased-mf':>16s} {'goal s':>7s} "
          f"{'peak MiB':>9s} {'peak / (n·m·8)':>15s} {'RMSE':>7s}")
    ref = None
    for name in REFERENCES + [a for a in (names or MODELS) if a not in REFERENCES]:
        algo = get(name)()
        ctx = Context(None, data_key=data.hash, seed=0, dataset=data)
        tracemalloc.start()
        wall, cpu = time.perf_counter(), time.process_time()
        with threads.blas_threads(algo.blas_threads):  # the threads `malt cv` would give the unit
            pred = algo.run(split, algo.Params(), ctx)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        rmse = task.score(data, tp, split, pred)["rmse"]
        if name == "biased-mf":
            ref = cpu
        ratio = f"{cpu / ref:15.1f}×" if ref else f"{'—':>16s}"
        print(f"{name:12s} {wall:8.1f} {cpu:8.1f} {ratio} {GOAL.get(name, 30.0):7.0f} {peak:9.1f} "
              f"{peak / dense_mib:14.1f}× {rmse:7.4f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
