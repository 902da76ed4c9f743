"""The README's Python section runs as written: every ```python block, in order, in a fresh folder,
in a fresh interpreter (a new user's first contact with the API must not raise)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_data

README = Path(__file__).resolve().parents[1] / "README.md"


def python_section_blocks() -> list[str]:
    text = README.read_text()
    section = text[text.index("\n## Python"):]
    section = section[:section.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_python_section_has_code():
    blocks = python_section_blocks()
    assert len(blocks) >= 2 and all("import malt" in b for b in blocks)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("index", range(len(python_section_blocks())))
def test_readme_python_block_runs(index, tmp_path):
    root = require_data("multilabel/emotions")
    env = dict(os.environ, MALT_DATA=str(root), MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", python_section_blocks()[index]], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=220)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), "the block prints what it shows"
