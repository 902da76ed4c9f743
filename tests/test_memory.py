"""Peak memory per unit (`malt.engine.memory.PeakMemory`): the kernel's high-water mark, reset when a unit starts,
so a later, smaller unit in the same process does not inherit an earlier unit's peak; and the engine
records it with every unit (`malt show --diagnostics`)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

import malt

LINUX = sys.platform.startswith("linux")


PEAKS = """
import json
import numpy as np
from malt.engine.memory import PeakMemory
with PeakMemory() as big:
    block = np.ones(400 * 2 ** 17)  # 400 MiB, touched
    del block
with PeakMemory() as small:
    block = np.ones(40 * 2 ** 17)  # 40 MiB
    del block
with PeakMemory() as baseline:
    pass
held = np.ones(200 * 2 ** 17)  # 200 MiB loaded before the next unit (a data set)
with PeakMemory() as after_load:
    block = np.ones(40 * 2 ** 17)
    del block
print(json.dumps([big.per_unit and small.per_unit, big.mib, small.mib, baseline.mib, baseline.start_mib,
                  after_load.start_mib, after_load.mib]))
"""


@pytest.mark.timeout(120)
@pytest.mark.skipif(not LINUX, reason="the per-unit reset needs Linux's /proc/self/clear_refs")
def test_peak_is_the_units_own_even_after_a_larger_unit_in_the_same_process():
    """In a fresh interpreter: a long-lived process (a test worker) may hold freed heap pages that a
    later allocation reuses without raising its resident size, which would hide the 40 MiB unit."""
    out = subprocess.run([sys.executable, "-c", PEAKS], capture_output=True, text=True, check=True, timeout=100)
    per_unit, big, small, baseline, baseline_start, loaded_start, loaded = json.loads(out.stdout)
    assert per_unit
    assert big - small > 300  # the reset forgot the first unit's 400 MiB
    assert 30 < small - baseline < 60
    # start_mib: what was resident as a unit began; the unit's own part of its peak is mib - start_mib
    assert abs(baseline - baseline_start) < 5
    assert 190 < loaded_start - baseline_start < 210
    assert 30 < loaded - loaded_start < 60


HEAP = """
import json
import numpy as np
from malt.engine.memory import PeakMemory

def rss_mib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

blocks = [np.ones(12_000) for _ in range(20_000)]  # 1.8 GiB in 96 kB arrays: heap, not mmap
keep = np.ones(12_000)  # the top of the heap stays in use, so free() alone cannot shrink it
del blocks
before = rss_mib()
with PeakMemory() as unit:
    pass
print(json.dumps([before, rss_mib(), unit.mib]))
"""


@pytest.mark.timeout(120)
@pytest.mark.skipif(not LINUX, reason="malloc_trim is glibc's")
def test_a_unit_starts_from_live_memory_not_from_heap_freed_before_it():
    """Arrays freed before a unit (a data set's temporaries) stay resident in glibc's heap; the unit's
    peak must not carry them: PeakMemory returns them to the system first."""
    out = subprocess.run([sys.executable, "-c", HEAP], capture_output=True, text=True, check=True, timeout=100)
    before, after, peak = json.loads(out.stdout)
    assert before > 1000  # the freed blocks were still resident (else this test shows nothing)
    assert after < 300 and peak < 300


@pytest.mark.timeout(120)
def test_every_unit_records_its_peak_resident_memory(tmp_path):
    malt.cv("mllr", "synthetic-multilabel", repo=tmp_path / "repo", folds=2)
    d = malt.load(tmp_path / "repo").diagnostics
    peak = d[d["diagnostic"] == "peak_rss_mib"]["value"]
    assert len(peak) == 2 and (peak > 10).all()  # the interpreter with numpy alone needs more than 10 MiB
