"""Benchmark: the cost at equal accuracy (issue 46) — every headline default beside the fastest peer that
reaches its accuracy, one BLAS thread each, interleaved, median of repeats (tests/benchmarks/equal_accuracy).

    python tests/benchmarks/bench_equal_accuracy.py [--quick] [--only ratings missing ...] [--json FILE]

Columns: our accuracy and CPU s, the peer's, ratio = ours / peer (goal ≤ 2), our floor (one fit at the
chosen setting, goal ≤ 3× it), peak traced MiB of each, the task's trivial baseline on the same split
(same run). Printed, never asserted.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from pathlib import Path

# Every measured call runs on one BLAS thread. Limiting the pool only inside each forked child (threadpoolctl)
# left OpenBLAS's start-up thread pool in the parent, and each child then spent about 0.17 CPU s on it: pma-map on
# CAL500 measured 0.27 s for a 0.10 s fit, halving its multiple of the floor. One thread from the start instead,
# before numpy loads OpenBLAS.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

FAMILIES = ("ratings", "missing", "multilabel", "graph")


def fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}g}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller data and fewer repeats (minutes)")
    parser.add_argument("--only", nargs="*", default=None, choices=FAMILIES)
    parser.add_argument("--json", default=None, help="also write every row as JSON to this file")
    args = parser.parse_args(argv)
    header = ("model", "data", "metric", "ours", "ours CPU s", "peer", "peer acc", "peer CPU s", "ratio",
              "floor CPU s", "×floor", "ours MiB", "peer MiB", "baseline", "note")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header), flush=True)
    rows = []
    for family in args.only or FAMILIES:
        try:
            module = importlib.import_module(f"tests.benchmarks.equal_accuracy.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"tests.benchmarks.equal_accuracy.{family}":
                raise
            print(f"[{family}] no rows yet", file=sys.stderr)
            continue
        for r in module.rows(args.quick):  # a family's rows as soon as it is done: a long one loses no other
            rows.append(r)
            peer = r.peer if not r.peer_missing else f"{r.peer} (missing: {r.peer_missing})"
            print("| " + " | ".join([r.model, r.dataset, r.metric, fmt(r.ours_acc, 4), fmt(r.ours_cpu), peer,
                                     fmt(r.peer_acc, 4), fmt(r.peer_cpu), fmt(r.ratio, 2), fmt(r.floor_cpu),
                                     fmt(r.floor_ratio, 2), fmt(r.ours_peak_mib), fmt(r.peer_peak_mib),
                                     f"{r.baseline} {fmt(r.baseline_acc, 4)}" if r.baseline else "—", r.note])
                  + " |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in rows], indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
