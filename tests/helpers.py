"""Helpers for tests that drive the real `malt` command."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_BOOT = "import tests.plugins.counting, tests.plugins.toy_task; from malt.cli import main; main()"


def malt_cmd(*args) -> list[str]:
    """`malt ...` run through Python with the test plugins registered."""
    return [sys.executable, "-c", PLUGIN_BOOT, *map(str, args)]


def run_malt(*args, env: dict | None = None, check: bool = True, timeout: float = 120):
    full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    result = subprocess.run(malt_cmd(*args), capture_output=True, text=True, env=full_env, timeout=timeout,
                            cwd=ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"malt {' '.join(map(str, args))} failed ({result.returncode}):\n{result.stderr}")
    return result


def snapshot(folder: Path) -> dict[str, str]:
    """sha256 of every file under folder (empty if it does not exist)."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def three_dataset_semisupervised_repo(path: Path):
    """gf, lgc and tikreg on three bundled datasets (20 labelled points): the across-datasets fixture
    of the rank tables and critical-difference diagrams. Returns the loaded ResultSet."""
    from click.testing import CliRunner

    from malt.cli import main
    from malt.results import ResultSet

    for dataset in ("sklearn-iris", "sklearn-wine", "sklearn-breast-cancer"):
        result = CliRunner().invoke(main, ["cv", "--repo", str(path), "--quiet", "--dataset", dataset, "--task",
                                           "semisupervised", "--labeled", "20", "--algo", "gf", "--algo", "lgc",
                                           "--algo", "tikreg"])
        assert result.exit_code == 0, result.output
    return ResultSet.load(path)


def figure_script(name: str):
    """The module ``figures.d/scripts/<name>.py`` (the folder is not a package), freshly loaded."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "figures.d" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
