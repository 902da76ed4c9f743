"""How a number is written in a label, a legend, a table cell or a caption: one convention for
every output of the results package (`malt show`, `malt table`, the report, the figures)."""
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


def format_mean_std(mean: float, std: float, percent: bool = False, folds: int | None = None) -> str:
    """A 'mean ± std' cell, the one rounding rule of every table: '26.7 ± 0.8' with one decimal for a
    percentage (as the papers print them), else one decimal from 10 up, two from 1 up, three below
    ('0.213 ± 0.011'); both numbers to the same decimals. One fold (``folds == 1``) or an undefined
    std (NaN) shows the mean alone; a non-finite mean is 'n/a'."""
    if not math.isfinite(mean):
        return "n/a"
    digits = 1 if percent or abs(mean) >= 10 else 2 if abs(mean) >= 1 else 3
    if folds == 1 or std is None or not math.isfinite(std):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"
