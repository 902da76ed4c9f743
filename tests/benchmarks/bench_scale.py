"""Benchmark (issue 36): the matrix models at the scale of real rating matrices, beside the peers measured in the
same run. ``make bench-scale`` (full sizes, hours on 2 shared cores) or ``make bench-scale QUICK=1`` (reduced
sizes, minutes).

Every fit runs in its own process (``--one``), so its peak resident memory is its own (`malt.engine.memory.PeakMemory`,
reset after the data are loaded: the data set counts, the loading does not), with ``--threads`` BLAS threads
(default 2: "2 cores"). Times are CPU and wall seconds of the algorithm's ``run`` on fold 0 of the ratings task
(70 % of the ratings for training, the rest predicted); CPU is the honest figure on a shared machine, where
wall time grows with the load. Printed:

1. Same numbers where both paths run: pma-map's exact path against its scalable path (dense_limit=1, so both
   sides take the low-rank eigenbases) on MovieLens-100K and FilmTrust — test RMSE of each and the difference
   (goal ≤ 0.003), CPU of each.
2. Full CiaoDVD (17,615 × 16,121, 50,641 training ratings): every kernel model at its defaults beside
   baseline, biased-mf and popularity — CPU / wall seconds (goal ≤ 600 s), peak MiB (goal ≤ 6 GiB), RMSE
   (goal ≤ biased-mf's), recall@20 (goal ≥ popularity's), CPU ratio to biased-mf.
3. Jester (24,983 × 100, 1.27 M training ratings): every kernel model at its defaults beside baseline, biased-mf
   and popularity.
4. Synthetic 100,000 × 20,000 with 2 M ratings drawn from PMA's ratings model (`synthetic_ratings`):
   pma-map and con-mvgp beside biased-mf (goal ≤ 900 s, ≤ 8 GiB); RMSE to the held-out ratings and to the
   noise-free truth.
5. Growth of CPU time in the number of ratings, synthetic draws with 20 ratings per row and per column
   (n = m = nnz / 20) from 10⁵ to 10⁷ ratings, every matrix model with select='none' (one fit, the protocol
   fixed across sizes): the slope of log CPU against log nnz (goal ≤ 1.2), over all sizes and between the last two
   (where the work no longer fits the caches; between 10⁵ and 10⁶ ratings a block of 110 vectors per row outgrows
   a 32 MiB L3 and the same sparse product costs ~28× for 10× the entries). The first row, ``floor R X``, is that
   product alone (`floor_cpu`), measured in the same run: the machine's slope for a sweep over the ratings.
   With 14 training ratings a row and column for a rank-20 truth, pcsa's ARD keeps no component on these draws
   at any size (its fit is the bias model with noise scales after the first sweep; RMSE 1.2596 at 10⁷ against
   the baseline's 1.2612): its row is the cost of the SVD start, one sweep over 40 components and the bias
   model's sweeps, not of a fit that keeps components.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("MALT_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "datasets"))

KERNEL_MODELS = ["pma-map", "con-mvgp", "kpmf", "pcsa"]
MATRIX_MODELS = ["pma-map", "con-mvgp", "trace-gp", "mvgp", "kpmf", "pcsa"]
GiB = 1024.0
CHUNK = 1 << 20


def load(dataset: str):
    """A named dataset, or 'synthetic:n,m,nnz' drawn by `synthetic_ratings` (seed 0)."""
    if dataset.startswith("synthetic:"):
        from malt.datasets.synthetic_ratings import synthetic_ratings

        n, m, nnz = (int(v) for v in dataset.split(":")[1].split(","))
        return synthetic_ratings(n, m, nnz)
    from malt.datasets.catalogue import DataRoots, entry

    return entry(dataset).loader(DataRoots.default())


def one(algo_name: str, dataset: str, params: dict, threads: int) -> dict:
    """Fit one algorithm on fold 0 of one dataset in this process; its numbers as a dict."""
    from malt.engine.context import Context
    from malt.engine.memory import PeakMemory
    from malt.numerics.threads import blas_threads
    from malt.registry import get
    from malt.tasks.ratings import RatingsParams, RatingsTask

    data = load(dataset)
    task, options = RatingsTask(), RatingsParams()
    split = task.split(data, options, 0)
    algo = get(algo_name)
    started = time.process_time()
    ctx = Context(None, data_key=data.hash, seed=0, dataset=data,  # progress on stderr: a long fit shows its pace
                  progress=lambda fraction, message: print(f"{time.process_time() - started:9.1f} CPU s  {message}",
                                                           file=sys.stderr, flush=True))
    with PeakMemory() as peak, blas_threads(threads):
        wall, cpu = time.perf_counter(), time.process_time()
        prediction = algo().run(split, algo.Params(**params), ctx)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if dataset.startswith("synthetic"):  # ranking every one of ~all rows over every column is not the point here
        from malt.tasks import metrics

        R = data["ratings"].tocsr()  # held-out values looked up a chunk of pairs at a time (10⁸ ratings: 4·10⁷ pairs)
        held_out = np.concatenate([np.asarray(R[split.test_rows[s:s + CHUNK], split.test_cols[s:s + CHUNK]]).ravel()
                                   for s in range(0, split.test_rows.size, CHUNK)])
        del R
        seen = split.train.data
        est = np.clip(np.asarray(prediction.values, dtype=float), seen.min(), seen.max())
        scores = {"rmse": metrics.rmse(held_out, est), "recall@k": float("nan")}
    else:
        scores = task.score(data, options, split, prediction)
    out = {"algo": algo_name, "dataset": dataset, "params": params, "cpu": cpu, "wall": wall, "peak_mib": peak.mib,
           "start_mib": peak.start_mib,
           "rmse": scores["rmse"], "recall": scores["recall@k"], "nnz": int(split.train.nnz),
           "shape": list(split.train.shape)}
    if "truth_Z" in data:
        r, c = split.test_rows, split.test_cols
        from malt.numerics.linalg import dot_at  # chunked: no (pairs, rank) copies of the truth factors

        truth = (data.meta["mean"] + data["truth_bias_rows"][r] + data["truth_bias_cols"][c]
                 + dot_at(data["truth_Z"], data["truth_W"], r, c))
        out["rmse_truth"] = float(np.sqrt(np.mean((np.asarray(prediction.values) - truth) ** 2)))
    diag = prediction.diagnostics or {}
    out["diagnostics"] = {k: v for k, v in diag.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)}
    return out


def run(algo_name: str, dataset: str, params: dict | None = None, threads: int = 2, timeout: float = 7200) -> dict:
    """`one` in a fresh process (its own peak memory); a failure or time-out is reported, not raised."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
               MKL_NUM_THREADS=str(threads), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    cmd = [sys.executable, __file__, "--one", algo_name, dataset, json.dumps(params or {}), str(threads)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"algo": algo_name, "dataset": dataset, "error": f"no result within {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        return {"algo": algo_name, "dataset": dataset, "error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def fmt(value, spec=".4f"):
    return "—" if value is None or (isinstance(value, float) and not np.isfinite(value)) else format(value, spec)


def row(r: dict, ref_cpu: float | None = None, extra: str = "") -> str:
    if "error" in r:
        return f"{r['algo']:12s} FAILED: {r['error']}"
    ratio = f"{r['cpu'] / ref_cpu:7.1f}×" if ref_cpu else f"{'—':>8s}"
    truth = f" {fmt(r.get('rmse_truth')):>10s}" if "rmse_truth" in r else ""
    return (f"{r['algo']:12s} {r['cpu']:9.1f} {r['wall']:9.1f} {ratio} {r['peak_mib']:9.0f} "
            f"{bytes_per_rating(r):>9s} {fit_bytes_per_rating(r):>9s} {fmt(r['rmse']):>8s} {fmt(r['recall']):>8s}"
            f"{truth} {extra}")


def bytes_per_rating(r: dict) -> str:
    """Peak resident bytes of the fit's process over its training ratings (issue 47's goal: ≤ 100 at 10⁷): the
    data set, its split and the libraries loaded before the fit included."""
    return fmt(r["peak_mib"] * 2**20 / r["nnz"], ".0f") if r.get("nnz") else "—"


def fit_bytes_per_rating(r: dict) -> str:
    """The fit's own part of that peak: peak resident bytes above the process's resident size as the fit began
    (the data set, its split and the libraries), over the training ratings."""
    if not r.get("nnz") or not np.isfinite(r.get("start_mib", float("nan"))):
        return "—"
    return fmt((r["peak_mib"] - r["start_mib"]) * 2**20 / r["nnz"], ".0f")


HEADER = (f"{'algorithm':12s} {'CPU s':>9s} {'wall s':>9s} {'CPU/ref':>8s} {'peak MiB':>9s} {'B/rating':>9s} "
          f"{'fit B/r':>9s} {'RMSE':>8s} {'R@20':>8s}")


def section_equivalence(datasets, threads):
    print("\n== 1. exact path vs scalable path (pma-map, defaults; scalable: dense_limit=1, rank 100)")
    print(f"{'dataset':16s} {'exact RMSE':>10s} {'scalable':>10s} {'|diff|':>8s} {'goal':>6s} {'exact CPU':>9s} "
          f"{'scal. CPU':>9s} {'exact MiB':>9s} {'scal. MiB':>9s}")
    for d in datasets:
        exact, scalable = run("pma-map", d, {}, threads), run("pma-map", d, {"dense_limit": 1}, threads)
        if "error" in exact or "error" in scalable:
            print(f"{d:16s} FAILED: {exact.get('error') or scalable.get('error')}")
            continue
        diff = abs(exact["rmse"] - scalable["rmse"])
        print(f"{d:16s} {exact['rmse']:10.4f} {scalable['rmse']:10.4f} {diff:8.4f} {'ok' if diff <= 0.003 else 'MISS':>6s} "
              f"{exact['cpu']:9.1f} {scalable['cpu']:9.1f} {exact['peak_mib']:9.0f} {scalable['peak_mib']:9.0f}",
              flush=True)


def section_models(title, dataset, models, threads, refs=("baseline", "biased-mf", "popularity"), goals=None):
    print(f"\n== {title}")
    print(HEADER + (" RMSE-truth" if dataset.startswith("synthetic") else "") + " goals")
    results = {name: run(name, dataset, {}, threads) for name in list(refs) + list(models)}
    ref = results.get("biased-mf", {})
    ref_cpu = ref.get("cpu")
    for name, r in results.items():
        checks = []
        if name in models and "error" not in r:
            if goals:
                seconds, gib = goals
                checks.append(f"time {'ok' if r['wall'] <= seconds else 'MISS'}")
                checks.append(f"memory {'ok' if r['peak_mib'] <= gib * GiB else 'MISS'}")
            if "rmse" in ref:
                checks.append(f"RMSE {'ok' if r['rmse'] <= ref['rmse'] else 'MISS'}")
            pop = results.get("popularity", {})
            if "recall" in pop and np.isfinite(pop["recall"]):
                checks.append(f"R@20 {'ok' if r['recall'] >= pop['recall'] else 'MISS'}")
        print(row(r, ref_cpu, ", ".join(checks)), flush=True)
    return results


FLOOR_COLUMNS = 110
"""Columns of the floor's dense block: the Krylov blocks of `top_eigenpairs` at the default rank 100."""


def floor_cpu(dataset: str) -> float:
    """CPU seconds of one sparse product R X of the training ratings with a dense (m, 110) block, best of three:
    the least a sweep over the ratings costs, whose growth with size is the machine's (caches and TLB stop
    holding the block), not a model's."""
    from malt.tasks.ratings import RatingsParams, RatingsTask

    train = RatingsTask().split(load(dataset), RatingsParams(), 0).train.tocsr()
    X = np.random.default_rng(0).standard_normal((train.shape[1], FLOOR_COLUMNS))
    best = float("inf")
    for _ in range(3):
        cpu = time.process_time()
        train @ X
        best = min(best, time.process_time() - cpu)
    return best


def section_growth(sizes, models, threads):
    print(f"\n== 5. growth of CPU seconds in nnz (synthetic, n = m = nnz/20, select='none'); goal: slope ≤ 1.2")
    print(f"{'algorithm':12s} " + " ".join(f"{s:>10.0e}" for s in sizes)
          + f" {'slope':>7s} {'last two':>9s} {'peak MiB at max':>16s} {'B/rating at max':>16s}"
          + f" {'fit B/r at max':>15s}")
    floor = [floor_cpu(f"synthetic:{int(max(nnz // 20, 50))},{int(max(nnz // 20, 50))},{int(nnz / 0.7)}")
             for nnz in sizes]
    last = np.polyfit(np.log(sizes[-2:]), np.log(floor[-2:]), 1)[0] if len(sizes) >= 2 else float("nan")
    print(f"{'floor R X':12s} " + " ".join(f"{c:10.3f}" for c in floor)
          + f" {np.polyfit(np.log(sizes), np.log(floor), 1)[0]:7.2f} {last:9.2f} {'(one product)':>16s}", flush=True)
    for name in models:
        params = {"select": "none"}
        points, peak, per_rating, fit_per_rating = [], None, "—", "—"
        cells = []
        for nnz in sizes:
            n = int(max(nnz // 20, 50))
            r = run(name, f"synthetic:{n},{n},{int(nnz / 0.7)}", params, threads)
            if "error" in r:
                cells.append(f"{'fail':>10s}")
                continue
            points.append((r["nnz"], r["cpu"]))
            peak, per_rating, fit_per_rating = r["peak_mib"], bytes_per_rating(r), fit_bytes_per_rating(r)
            cells.append(f"{r['cpu']:10.1f}")
        slope = np.polyfit(*np.log(np.array(points)).T, 1)[0] if len(points) >= 2 else float("nan")
        last = np.polyfit(*np.log(np.array(points[-2:])).T, 1)[0] if len(points) >= 2 else float("nan")
        print(f"{name:12s} " + " ".join(cells) + f" {slope:7.2f} {last:9.2f} {fmt(peak, '.0f'):>16s} {per_rating:>16s}"
              f" {fit_per_rating:>15s}",
              flush=True)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes (minutes)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads per fit (1: CPU seconds without spin-waiting, a bound on the wall time on 2 cores)")
    parser.add_argument("--only", nargs="*", default=None, help="sections to run (1-5)")
    parser.add_argument("--growth-sizes", nargs="*", type=float, default=None,
                        help="section 5's numbers of ratings (default 1e5 3e5 1e6 3e6 1e7; --quick 1e4 3e4 1e5)")
    parser.add_argument("--growth-models", nargs="*", default=None, help="section 5's models (default: all)")
    args = parser.parse_args(argv)
    only = set(args.only or "12345")
    t = args.threads
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {t} BLAS threads per fit; "
          f"{'QUICK (reduced sizes)' if args.quick else 'full sizes'}")
    if "1" in only:
        section_equivalence(["movielens-100k"] if args.quick else ["movielens-100k", "filmtrust"], t)
    if "2" in only:
        section_models("2. full CiaoDVD (goals: ≤ 600 s, ≤ 6 GiB, RMSE ≤ biased-mf, R@20 ≥ popularity)", "ciaodvd",
                       ["pma-map"] if args.quick else KERNEL_MODELS, t, goals=(600, 6))
    if "3" in only and not args.quick:
        section_models("3. Jester (goals: RMSE ≤ biased-mf, R@20 ≥ popularity)", "jester", KERNEL_MODELS, t)
    if "4" in only:
        size = "synthetic:20000,4000,285715" if args.quick else "synthetic:100000,20000,2857143"
        section_models(f"4. synthetic {size.split(':')[1]} (goals: ≤ 900 s, ≤ 8 GiB)", size, ["pma-map", "con-mvgp"],
                       t, refs=("baseline", "biased-mf"), goals=(900, 8))
    if "5" in only:
        sizes = args.growth_sizes or ([1e4, 3e4, 1e5] if args.quick else [1e5, 3e5, 1e6, 3e6, 1e7])
        models = args.growth_models or (["pma-map", "con-mvgp"] if args.quick else MATRIX_MODELS)
        section_growth(sizes, models, t)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        algo_name, dataset, params, threads = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(one(algo_name, dataset, params, threads)), flush=True)
    else:
        main(sys.argv[1:])
