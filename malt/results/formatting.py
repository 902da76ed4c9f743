"""How a number is written in a label, a legend, a table cell or a caption: one convention for
every output of the results package."""
from __future__ import annotations

import math


def format_value(value) -> str:
    """A parameter or option value as a label shows it: integral floats without '.0' (``10.0`` -> '10')."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def format_p(p: float | None) -> str:
    """A p-value as a caption shows it: 'p = 0.042', 'p < 0.001', 'p n/a'."""
    if p is None or not math.isfinite(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
