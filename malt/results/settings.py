"""The one name of an algorithm setting wherever results are shown, and the order settings are shown in.

A stored unit keeps its full key (``display``: ``mllr[C=0.1]``, the algorithm and every parameter that
differs from its default). What a person reads — `malt show`, `malt table`, figure legends, the
report, ``ResultSet.summary()``'s ``setting`` column — is :func:`setting_names`: the algorithm name
alone when the settings shown hold one setting of it, else the algorithm with only the parameters
that differ between its settings shown (``mllr (C=0.1)``, never ``mllr (C=0.1, select=inner-cv)``
when every setting shown has ``select=inner-cv``).
"""
from __future__ import annotations

import math

import numpy as np

from malt.results.formatting import format_value


def clean(value):
    """A numpy scalar as the Python value it holds."""
    return value.item() if isinstance(value, np.generic) else value


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def sort_value(value):
    """Sort key of a parameter value: numbers numerically, then everything else as text."""
    value = clean(value)
    if _missing(value):
        return (0, 0.0, "")
    try:
        return (1, float(value), "")
    except (TypeError, ValueError):
        return (2, 0.0, str(value))


def display_order(rs, displays) -> list[str]:
    """Displays by algorithm, then by their parameter values in numeric order (C=0.01 before C=1)."""
    frame = rs.frame.drop_duplicates("display").set_index("display")
    params = sorted(c for c in frame.columns if c.startswith("param."))
    return sorted(displays, key=lambda d: (frame.loc[d, "algorithm"],
                                           tuple(sort_value(frame.loc[d, c]) for c in params), d))


def setting_names(rs, displays) -> dict[str, str]:
    """Shortest unambiguous name per display among ``displays`` (the settings shown together): the
    algorithm name, plus the parameters whose values differ between that algorithm's settings shown."""
    frame = rs.frame.drop_duplicates("display").set_index("display")
    params = [c for c in frame.columns if c.startswith("param.")]
    out = {}
    by_algo: dict[str, list[str]] = {}
    for display in displays:
        by_algo.setdefault(frame.loc[display, "algorithm"], []).append(display)
    for algo, group in by_algo.items():
        if len(group) == 1:
            out[group[0]] = algo
            continue
        varying = [c for c in params if len({repr(clean(frame.loc[d, c])) for d in group}) > 1]
        for display in group:
            parts = [f"{c[6:]}={format_value(clean(frame.loc[display, c]))}" for c in varying]
            out[display] = f"{algo} ({', '.join(parts)})" if parts else display
    return out


REFERENCE_BASELINES = frozenset({"column-mean", "label-prior", "majority", "baseline", "popularity", "unigram"})
"""Algorithms that are trivial references (column means, the majority class, each label's training
majority, user + item biases, item popularity, one word distribution): every model must beat them,
so every figure draws them as dashed reference lines that never set the scale of the models' axis.
Read by name from the stored records (results import no algorithm module); the test suite checks
that each is a registered algorithm."""


def is_reference(algorithm: str) -> bool:
    """Whether ``algorithm`` is a trivial reference baseline (:data:`REFERENCE_BASELINES`)."""
    return algorithm in REFERENCE_BASELINES
