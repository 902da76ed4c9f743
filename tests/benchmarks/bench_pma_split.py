"""Peak memory and CPU seconds of one scalable-path pma-map solve, in one process and split over the two
workers of a LocalCluster (`malt.algorithms.pma.split.SplitKroneckerSum`, issue 47).

    python -m tests.benchmarks.bench_pma_split [synthetic:20000,20000,1000000] [--rank 20] [--repeats 3]

Memory: tracemalloc's peak (numpy's arrays included) of the solver's construction and one weight-space solve,
in this process for the local solve, and on each worker and in the driver for the split one; also each
worker's resident set before and after. The eigenbases are computed once, beforehand, in this process (not measured).
CPU: process_time of this process (local), and of the driver plus both workers (split); median of repeats, each
untraced (tracemalloc's cost per allocation falls mostly on Dask's Python objects, not on the solver's arrays),
then one traced run for the memory figures."""
from __future__ import annotations

import argparse
import resource
import statistics
import time
import tracemalloc

import numpy as np


def _rss() -> int:
    """This process's resident set now, KiB (ru_maxrss is inherited across the fork that starts a worker)."""
    import psutil

    return psutil.Process().memory_info().rss // 1024


def _start():
    tracemalloc.start()
    tracemalloc.reset_peak()
    return time.process_time()


def _peak():
    return tracemalloc.get_traced_memory()[1], time.process_time(), _rss()


def main():
    try:
        import distributed
    except ImportError:
        print("bench_pma_split: not run — Dask is not installed (pip install 'malt[distributed]')")
        return

    from malt.algorithms.pma.ratings import fit_moments_low_rank
    from malt.algorithms.pma.split import SplitKroneckerSum
    from malt.numerics.kron_observed import ObservedKroneckerSum
    from tests.benchmarks.bench_scale import load

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?", default="synthetic:20000,20000,1000000",
                    help="a named dataset or synthetic:n,m,nnz (default: what `make bench` measures)")
    ap.add_argument("--rank", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    R = load(args.dataset).components["ratings"].tocoo()
    rows, cols, y, shape = R.row.astype(np.int64), R.col.astype(np.int64), R.data.astype(float), R.shape
    t = time.process_time()
    moments = fit_moments_low_rank(rows, cols, y, shape, rank=args.rank)
    print(f"{args.dataset}: {y.size} ratings, rank {args.rank}; eigenbases {time.process_time() - t:.1f} CPU s (local)")
    E1, E2, resid = moments["E1"], moments["E2"], moments["resid"]
    noise, scale = 0.5 * moments["total"], 0.5
    local_cpu, local_peak = [], 0
    # timed runs untraced (the tracer's cost per allocation is not the solver's), then one traced for the memory
    for traced in [False] * args.repeats + [True]:
        if traced:
            tracemalloc.start()
            tracemalloc.reset_peak()
        t = time.process_time()
        mean, info = ObservedKroneckerSum(E1, E2, rows, cols, shape).solve(resid, noise=noise, scale=scale,
                                                                            space="weights")
        if traced:
            local_peak = max(local_peak, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
        else:
            local_cpu.append(time.process_time() - t)
    reference = mean.at(rows, cols)
    print(f"local (weights space): {info['iterations']} iterations, {statistics.median(local_cpu):.2f} CPU s "
          f"(median of {args.repeats}), peak traced {local_peak / 2**20:.1f} MiB")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        base_rss = client.run(lambda: _rss())
        split_cpu, driver_cpu, worker_peaks, driver_peak, worker_rss = [], [], {}, 0, {}
        for traced in [False] * args.repeats + [True]:  # as above: CPU from untraced runs, memory from a traced one
            before = client.run(_start if traced else time.process_time)
            if traced:
                tracemalloc.start()
                tracemalloc.reset_peak()
            t = time.process_time()
            solver = SplitKroneckerSum(E1, E2, rows, cols, shape, client)
            got, info = solver.solve(resid, noise=noise, scale=scale)
            driver = time.process_time() - t
            after = client.run(_peak if traced else time.process_time)
            solver.close()
            if traced:
                driver_peak = max(driver_peak, tracemalloc.get_traced_memory()[1])
                tracemalloc.stop()
                for w, (peak, _, rss) in after.items():
                    worker_peaks[w] = max(worker_peaks.get(w, 0), peak)
                    worker_rss[w] = rss
                client.run(tracemalloc.stop)
            else:
                driver_cpu.append(driver)
                split_cpu.append(driver + sum(after[w] - before[w] for w in after))
        difference = float(np.max(np.abs(got.at(rows, cols) - reference)))
        print(f"split over 2 workers: {info['iterations']} iterations, {statistics.median(split_cpu):.2f} CPU s "
              f"(driver + workers, median of {args.repeats}), max |difference| at the ratings {difference:.1e}")
        print(f"  driver (with the LocalCluster's scheduler) {statistics.median(driver_cpu):.2f} CPU s, "
              f"peak traced {driver_peak / 2**20:.1f} MiB")
        for w in sorted(worker_peaks):
            print(f"  worker {w}: peak traced {worker_peaks[w] / 2**20:.1f} MiB, RSS after "
                  f"{worker_rss[w] / 1024:.0f} MiB (before it {base_rss[w] / 1024:.0f} MiB)")


if __name__ == "__main__":
    main()
