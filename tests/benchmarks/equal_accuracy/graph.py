"""Rows of the graph family: gf and lgc at their default tolerances beside scikit-learn's
LabelPropagation / LabelSpreading converged at their default tol on the same graph — the swiss roll of
bench_label_propagation.py (4 classes on the manifold, 50 labelled points, k = 10 RBF kNN graph,
`malt.numerics.graphs`), α = 0.9, at 10⁴ and 10⁵ points (10⁴ only with --quick). LabelPropagation runs at
10⁴ only (``GF_PEER_MAX``): at 10⁵ one fit ran over 16 minutes (2026-12-06, 2 shared cores), and compare()
fits the peer four times (three timed, one traced), so the family would not finish in ten minutes; gf's
10⁵ row keeps its own time and error with the reason in place of the peer.

Accuracy is the test error % on the unlabelled points. scikit-learn gets the graph through a callable
kernel (its sparse path). The graph is built before the clock starts and is the same object for both
sides.

The floor is issue 46's: one fit at the setting the row's selection chose, with selection off and the
same solver and tolerance (``select='none'``; until 2026-12-07 it was one product W @ Y, the least an
iterative solver reads, which made "× floor" the number of products, not the cost of selecting). The
default rows select nothing (gf and lgc default to select='none', k = 10, α = 0.9), so their floor is
that same fit again (× floor ≈ 1). The ``select=inner-cv`` rows (10⁴ points; the selection the ch. 3
figures run, over the default grids k ∈ {10, 5, 20} and lgc's α ∈ {0.9, 0.5, 0.99}) run the registered
algorithm from the features — kNN search, graphs, inner CV, the final fit — and their floor the
registered algorithm with select='none' at the chosen k (and α) from the features too: × floor is what
the selection costs over one fit (goal ≤ 3). scikit-learn selects nothing, so those rows have no peer.
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
SELECT_SIZES = (10_000,)
"""Sizes of the select=inner-cv rows."""


def registered(kind: str, X, y, lab, **params):
    """(error %, chosen values) of the registered algorithm ``kind`` run from the features X (graph,
    selection and final fit inside) with ``params`` over its defaults."""
    from malt import registry
    from malt.engine.context import Context
    from malt.splits import SemiSupervisedSplit

    n = len(y)
    y_split = np.full(n, -1)
    y_split[lab] = y[lab]
    unl = np.setdiff1d(np.arange(n), lab)
    algo = registry.get(kind)()
    pred = algo.run(SemiSupervisedSplit(X, y_split, 4, unl), algo.Params(**params), Context.for_arrays(X, seed=0))
    chosen = (pred.diagnostics or {}).get("selected") or {}
    return 100.0 * float(np.mean(pred.labels[unl] != y[unl])), dict(chosen)


def rows(quick: bool) -> list[Row]:
    from sklearn.semi_supervised import LabelPropagation, LabelSpreading

    from malt.algorithms.label_propagation import methods as m
    from malt.numerics import graphs

    out = []
    repeats = 1 if quick else 3
    for n in SIZES[:1] if quick else SIZES:
        X, y, lab = problem(n)
        W = graphs.knn_graph(X, graphs.GraphSpec(k=10))
        Yl = m.one_hot(y[lab], 4)
        unl = np.setdiff1d(np.arange(n), lab)
        y_in = np.full(n, -1)
        y_in[lab] = y[lab]
        baseline = registered("majority", X, y, lab)[0]  # the labelled points' majority class
        for kind in ("gf", "lgc"):
            def ours(kind=kind):  # the default: select='none', k = 10, α = 0.9
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
                      peer=f"sklearn {name}, same graph", baseline="majority", baseline_acc=baseline)
            if kind == "gf" and n > GF_PEER_MAX:
                row.peer_missing = f"LabelPropagation not run above n={GF_PEER_MAX:,} (one fit at 10⁵: over 16 min)"
            # nothing is selected: the floor (one fit at the chosen setting, selection off) is this fit
            out.append(compare(row, ours, None if row.peer_missing else peer, floor=ours, repeats=repeats))
    for n in SELECT_SIZES:
        X, y, lab = problem(n)
        for kind in ("gf", "lgc"):
            _, chosen = registered(kind, X, y, lab, select="inner-cv")
            row = Row(f"{kind} select=inner-cv", f"swiss roll n={n:,}, 50 labels, from the features", "error %",
                      "lower", peer="—", peer_missing="scikit-learn selects nothing (see the default rows)",
                      baseline="majority", baseline_acc=registered("majority", X, y, lab)[0])
            compare(row, lambda kind=kind: registered(kind, X, y, lab, select="inner-cv")[0], None,
                    floor=lambda kind=kind: registered(kind, X, y, lab, select="none", **chosen)[0],
                    repeats=repeats)
            row.extra["chosen"] = chosen
            row.note = "chosen " + ", ".join(f"{k}={v}" for k, v in chosen.items())
            out.append(row)
    return out
