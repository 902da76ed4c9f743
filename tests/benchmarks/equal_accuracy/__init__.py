"""The "cost at equal accuracy" table of `make bench` (issue 46): each headline default beside the fastest
peer that reaches its accuracy, both on one BLAS thread, interleaved, median of repeats.

One module per family (``ratings``, ``missing``, ``multilabel``, ``graph``, …) defines

    def rows(quick: bool) -> list[Row]

and measures with `measure.compare`, so every row is taken the same way. ``bench_equal_accuracy.py``
imports each module, prints one table and the ratios. A peer that cannot be imported is a row with
``peer_missing`` set (named, never skipped silently).
"""
