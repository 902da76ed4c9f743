"""Rows of the graph family: gf and lgc at their default tolerances beside scikit-learn's
LabelPropagation / LabelSpreading converged at their default tol on the same graph — the swiss roll of
bench_label_propagation.py (4 classes on the manifold, 50 labelled points, k = 10 RBF kNN graph,
`malt.numerics.graphs`), α = 0.9, at 10⁴ and 10⁵ points (10⁴ only with --quick). LabelPropagation runs at
10⁴ only (``GF_PEER_MAX``): at 10⁵ one fit ran over 16 minutes (2026-12-06, 2 shared cores), and compare()
fits the peer four times (three timed, one traced), so the family would not finish in ten minutes; gf's
10⁵ row keeps its own time and error with the reason in place of the peer.

Accuracy is the test error % on the unlabelled points; ``extra`` holds each solution's distance to the
exact one (our solver at rtol 1e-12), as bench_label_propagation.py defines it. scikit-learn gets the
graph through a callable kernel (its sparse path). The graph is built before the clock starts and is
the same object for both sides. The floor is one product W @ Y (n × 4), the least an iterative solver reads.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from tests.benchmarks.equal_accuracy.measure import Row, compare

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench_label_propagation import ALPHA, problem  # noqa: E402  (the same swiss roll)

SIZES = (10_000, 100_000)
GF_PEER_MAX = 10_000
"""Largest n at which scikit-learn's LabelPropagation runs beside gf (see the module docstring)."""


def rows(quick: bool) -> list[Row]:
    from sklearn.semi_supervised import LabelPropagation, LabelSpreading

    from malt.algorithms.label_propagation import methods as m
    from malt.numerics import graphs

    out = []
    for n in SIZES[:1] if quick else SIZES:
        X, y, lab = problem(n)
        W = graphs.knn_graph(X, graphs.GraphSpec(k=10))
        Yl = m.one_hot(y[lab], 4)
        unl = np.setdiff1d(np.arange(n), lab)
        y_in = np.full(n, -1)
        y_in[lab] = y[lab]
        Y = np.zeros((n, 4))
        Y[lab] = Yl
        for kind in ("gf", "lgc"):
            def ours(kind=kind):
                F = (m.gaussian_fields(W, lab, Yl) if kind == "gf"
                     else m.local_global_consistency(W, lab, Yl, ALPHA))
                return 100.0 * float(np.mean(F.argmax(1)[unl] != y[unl]))

            def peer(kind=kind):
                model = (LabelPropagation(kernel=lambda A, B: W.copy(), max_iter=10 ** 7) if kind == "gf"
                         else LabelSpreading(kernel=lambda A, B: W.copy(), alpha=ALPHA, max_iter=10 ** 7))
                model.fit(X, y_in)
                return 100.0 * float(np.mean(model.transduction_[unl] != y[unl]))

            name = "LabelPropagation" if kind == "gf" else f"LabelSpreading(alpha={ALPHA})"
            row = Row(kind, f"swiss roll n={n:,}, 50 labels, k=10", "error %", "lower",
                      peer=f"sklearn {name}, same graph")
            if kind == "gf" and n > GF_PEER_MAX:
                row.peer_missing = f"LabelPropagation not run above n={GF_PEER_MAX:,} (one fit at 10⁵: over 16 min)"
            out.append(compare(row, ours, None if row.peer_missing else peer,
                               floor=lambda: float(np.sum(W @ Y) * 0), repeats=1 if quick else 3))
    return out
