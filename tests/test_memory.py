"""Peak memory per unit (`malt.engine.memory.PeakMemory`): the kernel's high-water mark, reset when a unit starts,
so a later, smaller unit in the same process does not inherit an earlier unit's peak; and the engine
records it with every unit (`malt show --diagnostics`)."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import malt
from malt.engine.memory import PeakMemory

LINUX = sys.platform.startswith("linux")


@pytest.mark.skipif(not LINUX, reason="the per-unit reset needs Linux's /proc/self/clear_refs")
def test_peak_is_the_units_own_even_after_a_larger_unit_in_the_same_process():
    with PeakMemory() as big:
        block = np.ones(400 * 2 ** 17)  # 400 MiB, touched
        del block
    with PeakMemory() as small:
        block = np.ones(40 * 2 ** 17)  # 40 MiB
        del block
    assert big.per_unit and small.per_unit
    assert big.mib - small.mib > 300  # the reset forgot the first unit's 400 MiB
    with PeakMemory() as baseline:
        pass
    assert 30 < small.mib - baseline.mib < 60


@pytest.mark.timeout(120)
def test_every_unit_records_its_peak_resident_memory(tmp_path):
    malt.cv("mllr", "synthetic-multilabel", repo=tmp_path / "repo", folds=2)
    d = malt.load(tmp_path / "repo").diagnostics
    peak = d[d["diagnostic"] == "peak_rss_mib"]["value"]
    assert len(peak) == 2 and (peak > 10).all()  # the interpreter with numpy alone needs more than 10 MiB
