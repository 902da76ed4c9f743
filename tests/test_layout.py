"""The layout shows the design (issue 32): no import circles, no private name imported across
modules, the design's arrows as import-linter contracts, a docstring per part saying what it may
import, and every moved import path still working for one release with a DeprecationWarning."""
from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from tests.layout import cycles, import_graph, package_modules
from tests.lint_imports import lint, stage

ROOT = Path(__file__).resolve().parents[1]
PARTS = ("malt.cli", "malt.engine", "malt.tasks", "malt.numerics", "malt.results")


def test_the_installed_package_has_no_import_cycle():
    edges, _ = import_graph()
    assert len(edges) > 100  # the walk saw the mapped folders too (algorithms/, datasets/, repository/)
    assert any(m.startswith("malt.algorithms.") for m in edges)
    assert cycles(edges) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    edges, _ = import_graph()
    edges = {k: set(v) for k, v in edges.items()}
    edges["malt.numerics.linalg"].add("malt.algorithms.bmr")  # bmr -> linalg exists; close the circle
    assert any({"malt.numerics.linalg", "malt.algorithms.bmr"} <= set(c) for c in cycles(edges))


def test_nothing_in_the_package_imports_a_moved_path():
    """The old paths are for users' code; inside malt they would hide an arrow from the contracts."""
    from malt.moved import MOVED

    for module, path in package_modules().items():
        text = path.read_text(encoding="utf-8")
        for old in MOVED:
            parent, _, leaf = old.rpartition(".")
            assert f"from {old} import" not in text and f"import {old}\n" not in text, (module, old)
            assert not any(line.strip().startswith(f"from {parent} import") and leaf in
                           [n.strip().split(" as ")[0] for n in line.split("import", 1)[1].split(",")]
                           for line in text.splitlines()), (module, old)


def test_no_private_name_is_imported_across_modules():
    _, private = import_graph()
    assert private == []


@pytest.mark.parametrize("part", PARTS)
def test_each_part_says_its_job_and_what_it_may_import(part):
    doc = importlib.import_module(part).__doc__ or ""
    assert len(doc.split()) > 20 and "May import" in doc, part


def _staged(tmp_path: Path, extra: dict[str, str] | None = None) -> Path:
    return stage(tmp_path / "stage", extra)


@pytest.mark.timeout(180)
def test_the_layering_contracts_hold(tmp_path):
    out = lint(_staged(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout and "Analyzed 1" in out.stdout


@pytest.mark.timeout(180)
def test_make_lint_runs_the_same_check():
    """The command README gives a developer: the staged check, from the checkout, exit 0."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    bin_dir = Path(sys.executable).parent  # this environment, never reinstalled by the test (-o)
    out = subprocess.run([make, "-s", "lint", f"BIN={bin_dir}", "-o", f"{bin_dir}/.installed"], cwd=ROOT,
                         capture_output=True, text=True, timeout=170)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout and "Analyzed 1" in out.stdout


@pytest.mark.timeout(180)
def test_an_algorithm_importing_the_store_breaks_a_contract(tmp_path):
    staged = _staged(tmp_path, {"malt.algorithms.baselines": "from malt.repository.store import Repository"})
    out = lint(staged)
    assert out.returncode != 0
    assert "Algorithms never import the command line" in out.stdout and "BROKEN" in out.stdout
    assert "malt.algorithms.baselines -> malt.repository.store" in out.stdout


def test_the_contracts_name_every_part():
    text = (ROOT / "pyproject.toml").read_text()
    for part in PARTS + ("malt.algorithms", "malt.datasets", "malt.repository"):
        assert f'"{part}"' in text, part


@pytest.mark.parametrize("old", sorted(__import__("malt.moved", fromlist=["MOVED"]).MOVED))
def test_a_moved_module_still_imports_with_a_deprecation_warning(old):
    from malt.moved import MOVED

    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is new


def test_names_of_the_old_flat_modules_still_resolve_with_a_warning():
    from malt.cli.options import open_repo
    from malt.engine.runner import Plan
    from malt.results.describe import DIAGNOSTIC_PREFIX

    for package, name, expected in (("malt.engine", "Plan", Plan), ("malt.cli", "_repo", open_repo),
                                    ("malt.results", "DIAGNOSTIC_PREFIX", DIAGNOSTIC_PREFIX)):
        module = importlib.import_module(package)
        module.__dict__.pop(name, None)
        with pytest.warns(DeprecationWarning, match=f"{package}.{name} moved"):
            assert getattr(module, name) is expected


def test_the_paths_users_and_plugins_import_did_not_move():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "import malt, malt.params, malt.registry, malt.splits, malt.errors, malt.api, malt.estimators\n"
            "from malt.cli import main\nfrom malt.results import ResultSet\n"
            "from malt.params import Params, param, Interval\nfrom malt.registry import Algorithm, register\n"
            "from malt.splits import Prediction\nassert callable(malt.cv) and callable(malt.load)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_reproduction_scripts_use_public_api_only():
    internal = ("malt.repository", "malt.engine", "malt.registry", "malt.tasks", "malt.datasets.catalogue",
                "malt.cli", "malt.moved")
    for script in sorted((ROOT / "figures.d" / "scripts").glob("*.py")):
        text = script.read_text()
        for name in internal:
            assert f"from {name}" not in text and f"import {name}" not in text, (script.name, name)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            compile(text, str(script), "exec")
