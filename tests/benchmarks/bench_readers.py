"""Reader speed (issue 22): the CSV loader against `pandas.read_csv` on a 50,000 × 51 numeric file
(50 features and a class column), and the ARFF reader against liac-arff (the test extra's reference
reader) on every shipped ARFF under MALT_DATA. Both measured in the same run; ratios printed."""
from __future__ import annotations

import gzip
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from malt.datasets.arff import read_arff
from malt.datasets.delimited import load_delimited


def best(fn, repeats=3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_csv() -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.csv"
        X = rng.standard_normal((50_000, 50))
        y = rng.integers(0, 3, 50_000)
        frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(50)])
        frame["class"] = y
        frame.to_csv(path, index=False)
        ours = best(lambda: load_delimited(path, "big"))
        ref = best(lambda: pd.read_csv(path))
        print(f"CSV 50,000 × 51: load_delimited {ours:.2f} s, pandas.read_csv {ref:.2f} s, ratio {ours / ref:.2f}")


def bench_arff() -> None:
    root = os.environ.get("MALT_DATA")
    try:
        import arff as liac
    except ImportError:
        print("ARFF: liac-arff not installed (pip install -e '.[test]'); skipped")
        return
    if not root:
        print("ARFF: MALT_DATA not set; skipped")
        return
    for path in sorted(Path(root, "multilabel").glob("*/*.arff*")):
        ours = best(lambda: read_arff(path))

        def reference():
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as handle:
                liac.load(handle)

        ref = best(reference, 1)
        print(f"ARFF {path.name:22s} read_arff {ours:6.3f} s, liac-arff {ref:6.3f} s, ratio {ours / ref:.2f}")


if __name__ == "__main__":
    bench_csv()
    bench_arff()
