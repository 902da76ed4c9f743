"""Reading stored results: what the diagnostics table makes of what a unit recorded."""
from __future__ import annotations

import pytest


@pytest.mark.timeout(30)
def test_numeric_diagnostics_flatten_mappings_and_reduce_traces():
    """Nested mappings become ``name.key`` numbers (a sampler's per-scalar R̂, say); lists of numbers
    their last value and length; strings and empty lists are left out."""
    from malt.results import numeric_diagnostics

    got = numeric_diagnostics({"fit_seconds": 2.0, "diagnostics": {
        "converged": True, "rhat": {"K": 2.5, "loglik": {"split": 1.1}}, "bound": [3, 2.5, 2],
        "solver": "cg", "empty": []}})
    assert got == {"fit_seconds": 2.0, "converged": 1.0, "rhat.K": 2.5, "rhat.loglik.split": 1.1,
                   "bound (last)": 2.0, "bound (length)": 3.0}
