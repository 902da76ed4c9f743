"""Engine overhead and resume cost (issue 2 and 7 benchmarks).

1. Resume check: a repository holding an experiment with 10,000 stored units; time for `malt cv` to
   find that nothing is left to run (reference: the time to read the same records back).
2. Overhead per unit: a 200-unit experiment of an algorithm that costs nothing (column-mean on a
   tiny matrix), serial vs --jobs 2 vs a 2-worker Dask LocalCluster on 127.0.0.1.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from malt import engine, registry
from malt.datasets.dataset import Dataset
from malt.repository.store import Repository
from malt.tasks import get_task


def tiny_plan(n_settings: int, folds: int):
    dataset = Dataset("bench-tiny", {"M": np.arange(60.0).reshape(12, 5)})
    task = get_task("missing")
    tparams = task.Params(folds=folds)
    algo = registry.get("mllr") if False else registry.get("column-mean")
    exp = engine.experiment_id(dataset.name, dataset.hash, task, tparams)
    # distinct parameter settings are emulated by distinct experiments' seeds: use folds for units
    return engine.Plan(exp, dataset, "bench-tiny", task, tparams, [(algo, algo.Params())] * n_settings)


def timed_run(repo_path: Path, plan, **kw) -> float:
    repo = Repository(repo_path)
    repo.lock()
    start = time.perf_counter()
    with repo:
        engine.execute(repo, plan, quiet=True, **kw)
    return time.perf_counter() - start


def resume_check() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo_path = Path(tmp) / "repo"
        plan = tiny_plan(1, 10_000)
        t_fill = timed_run(repo_path, plan)
        repo = Repository(repo_path)
        start = time.perf_counter()
        records = repo.units(plan.experiment)
        t_read = time.perf_counter() - start
        t_resume = timed_run(repo_path, plan)
        print(f"stored {len(records)} units in {t_fill:.1f}s ({1000 * t_fill / len(records):.2f} ms/unit incl. "
              f"fsync and compaction)")
        print(f"resume check over 10,000 stored units: {t_resume:.3f}s "
              f"(reading the records alone: {t_read:.3f}s, ratio {t_resume / t_read:.2f})")


def overhead() -> None:
    plan = tiny_plan(1, 200)
    with tempfile.TemporaryDirectory() as tmp:
        serial = timed_run(Path(tmp) / "serial", plan)
        parallel = timed_run(Path(tmp) / "jobs2", plan, jobs=2)
        line = (f"200 units of a no-cost algorithm: serial {serial:.2f}s ({1000 * serial / 200:.2f} ms/unit), "
                f"--jobs 2 {parallel:.2f}s ({1000 * parallel / 200:.2f} ms/unit)")
        try:
            from dask.distributed import LocalCluster

            with LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                              processes=True) as cluster:
                dask_t = timed_run(Path(tmp) / "dask", plan, scheduler=cluster.scheduler_address)
            line += f", Dask 2 workers {dask_t:.2f}s ({1000 * dask_t / 200:.2f} ms/unit)"
        except ImportError:
            line += ", Dask not installed"
        print(line)


if __name__ == "__main__":
    resume_check()
    overhead()
