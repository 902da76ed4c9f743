"""Shared test fixtures.

Real-data tests call `require_data(relpath)`: the file under MALT_DATA, or a loud failure when the
CI variable is set (CI must never pass by skipping), or a skip that says why elsewhere.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest


def data_root() -> Path | None:
    env = os.environ.get("MALT_DATA")
    return Path(env) if env else None


def require_data(*relpaths: str) -> Path:
    """Return MALT_DATA after checking that every relpath exists under it."""
    root = data_root()
    missing = [p for p in relpaths if root is None or not (root / p).exists()]
    if missing:
        why = (f"real data {missing} not found under MALT_DATA={root}" if root
               else "MALT_DATA is not set; point it at shared/datasets to run real-data tests")
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)
    return root


def require_reference(module: str):
    """Import a reference implementation from the test extra; under CI its absence is a failure."""
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as exc:
        why = f"reference implementation {module} is not installed (pip install -e '.[test]'): {exc}"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {why}")
        pytest.skip(why)


@pytest.fixture
def repo_path(tmp_path) -> Path:
    """A fresh, empty repository folder for one test."""
    return tmp_path / "repo"
