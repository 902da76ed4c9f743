"""Engine cost, start-up and storage (issues 17 and 18), each against a reference measured in the same run.

1. Engine CPU per unit, at 1,000 and 10,000 units (100,000 with --large): `engine.execute` of a
   no-cost algorithm (column-mean on a 12 × 5 matrix) minus the floor — the same units' split, fit,
   pack and score called in a bare loop. Goal: ≤ 2 ms per unit, flat in the number of units.
2. 200 units serially, with --jobs 2 and on a 2-worker Dask cluster on 127.0.0.1 (wall time): units
   that cost nothing (the engine keeps them in process: even forked workers would cost more), cheap
   units of 5 ms and units of 50 ms. Goal: --jobs 2 never slower than serial, faster on cheap units.
3. `malt show` of a 10,000-unit experiment and a no-op `malt cv` (everything stored), as commands,
   beside the start-up of a bare `python -c "import numpy, scipy.sparse, h5py, click, pandas"`.
   Goal: each ≤ 0.5 s on a quiet machine.
4. Storage: the stored predictions beside the repository's size and the dataset's.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from malt import registry
from malt.engine import runner as engine
from malt.datasets.dataset import Dataset
from malt.repository.store import Repository
from malt.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: the test plugins (tests.plugins.counting) live under ROOT
    sys.path.insert(0, str(ROOT))


def tiny_plan(folds: int, sleep: float = 0.0) -> engine.Plan:
    """`folds` units of column-mean (or, with ``sleep``, of an algorithm that takes that long)."""
    dataset = Dataset("bench-tiny", {"M": np.arange(60.0).reshape(12, 5)})
    task = get_task("missing")
    if sleep:
        import tests.plugins.counting  # noqa: F401  (test-counting)

        algo = registry.get("test-counting")
        return engine.Plan(dataset, {"kind": "bench"}, task, task.Params(folds=folds), [(algo, algo.Params(sleep=sleep))])
    algo = registry.get("column-mean")
    return engine.Plan(dataset, {"kind": "bench"}, task, task.Params(folds=folds), [(algo, algo.Params())])


def floor_cpu(plan: engine.Plan) -> float:
    """CPU seconds of the units' own work (split, fit, pack, score) in a bare loop."""
    algo_cls, params = plan.entries[0]
    start = time.process_time()
    for unit in plan.units():
        split = plan.task.split(plan.dataset, plan.options, unit.fold)
        prediction = algo_cls().run(split, params, None)
        packed = plan.task.pack(split, prediction, plan.options)
        plan.task.score_packed(plan.dataset, plan.options, split, packed)
    return time.process_time() - start


def engine_cost(n: int) -> tuple[float, float, float]:
    plan = tiny_plan(n)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Repository(Path(tmp) / "repo")
        cpu, wall = time.process_time(), time.perf_counter()
        counts = engine.execute(repo, plan, quiet=True)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        assert counts.ran == n and counts.failed == 0
    floor = floor_cpu(plan)
    return 1000 * (cpu - floor) / n, 1000 * floor / n, 1000 * wall / n


def parallel(n: int = 200, sleep: float = 0.0) -> dict[str, float]:
    """Wall seconds of `n` units serially and with --jobs 2 (local workers are forked only while the
    process runs no other thread: call this before anything starts threads, such as a Dask cluster)."""
    plan = tiny_plan(n, sleep)
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in (("serial", {}), ("--jobs 2", {"jobs": 2})):
            start = time.perf_counter()
            engine.execute(Repository(Path(tmp) / name.replace(" ", "")), plan, quiet=True, **kw)
            times[name] = time.perf_counter() - start
    return times


def on_dask(n: int = 200, sleep: float = 0.0) -> float | None:
    """Wall seconds of `n` units on a 2-worker Dask cluster on 127.0.0.1 (None without Dask)."""
    try:
        from dask.distributed import LocalCluster
    except ImportError:
        return None
    plan = tiny_plan(n, sleep)
    with tempfile.TemporaryDirectory() as tmp, LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                                            dashboard_address=None, processes=True) as cluster:
        start = time.perf_counter()
        engine.execute(Repository(Path(tmp) / "dask"), plan, quiet=True, scheduler=cluster.scheduler_address)
        return time.perf_counter() - start


def command_seconds(args: list[str], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(args, check=True, capture_output=True, cwd=ROOT)
        best = min(best, time.perf_counter() - start)
    return best


def startup_and_storage() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        repo_path = Path(tmp) / "repo"
        plan = tiny_plan(10_000)
        engine.execute(Repository(repo_path), plan, quiet=True)
        bare = command_seconds([sys.executable, "-c", "import numpy, scipy.sparse, h5py, click, pandas"])
        malt = [sys.executable, "-m", "malt.cli"]
        show = command_seconds([*malt, "show", plan.experiment, "--repo", str(repo_path)])
        script = ("import sys; from malt import api, engine; from malt.repository.store import Repository; "
                  "from tests.benchmarks.bench_engine import tiny_plan; "
                  f"engine.execute(Repository({str(repo_path)!r}), tiny_plan(10_000), quiet=True)")
        resume = command_seconds([sys.executable, "-c", script])
        print(f"10,000-unit experiment: `malt show` {show:.2f} s, no-op resume {resume:.2f} s; bare start-up of "
              f"numpy+scipy.sparse+h5py+click+pandas {bare:.2f} s (show / bare = {show / bare:.2f})")
        folder = repo_path / "experiments" / plan.experiment
        predictions = (folder / "predictions.log").stat().st_size
        total = sum(p.stat().st_size for p in repo_path.rglob("*") if p.is_file())
        print(f"storage: predictions {predictions / 1e6:.2f} MB of a {total / 1e6:.2f} MB repository "
              f"({100 * predictions / total:.0f} %); per unit {predictions / 10_000:.0f} B against the dataset's "
              f"{plan.dataset['M'].nbytes} B")


if __name__ == "__main__":
    sizes = (1_000, 10_000, 100_000) if "--large" in sys.argv else (1_000, 10_000)
    for n in sizes:
        overhead, floor, wall = engine_cost(n)
        print(f"{n:>7,} units: engine {overhead:.2f} ms CPU/unit above the floor of {floor:.2f} ms "
              f"(wall {wall:.2f} ms/unit)")
    costs = (0.0, 0.005, 0.05)
    local = {sleep: parallel(200, sleep) for sleep in costs}
    for sleep in costs:
        times = dict(local[sleep])
        dask = on_dask(200, sleep)
        if dask is not None:
            times["Dask, 2 workers"] = dask
        print(f"200 units of {1000 * sleep:.0f}+ ms: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()) +
              f"; --jobs 2 / serial = {times['--jobs 2'] / times['serial']:.2f}")
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    startup_and_storage()
