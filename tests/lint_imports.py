"""`make lint`: the layering contracts of pyproject.toml checked on the package as installed.

import-linter (grimp) walks a package's folder, but the editable install maps algorithms/,
datasets/ and repository/ into `malt` from outside malt/, so `lint-imports` in a checkout says
"Module 'malt.algorithms' does not exist". This stages the installed layout into one tree (a copy
of every module's source, seconds) and runs lint-imports on it; tests/test_layout.py calls the same
functions.

    python -m tests.lint_imports      # prints lint-imports' report, exits with its status
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.layout import package_modules

ROOT = Path(__file__).resolve().parents[1]


def stage(out: Path, extra: dict[str, str] | None = None) -> Path:
    """The installed package copied into ``out`` as one tree, plus ``extra`` lines appended to named
    modules (a planted violation, for the tests)."""
    for name, path in package_modules().items():
        parts = name.split(".")
        dest = (out.joinpath(*parts) / "__init__.py" if path.name == "__init__.py"
                else out.joinpath(*parts[:-1], parts[-1] + ".py"))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        if extra and name in extra:
            dest.write_text(dest.read_text() + "\n" + extra[name] + "\n")
    return out


def lint(staged: Path) -> subprocess.CompletedProcess:
    """lint-imports with the repository's pyproject.toml on a staged tree (its output captured)."""
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if not command:
        raise SystemExit("lint-imports not found beside this Python: install the test extra "
                         "(pip install -e '.[test]', or make install)")
    return subprocess.run([command, str(ROOT / "pyproject.toml"), "--no-cache"], cwd=staged, capture_output=True,
                          text=True, env={"PYTHONPATH": str(staged), "PATH": "/usr/bin:/bin"}, timeout=120)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="malt-lint-") as tmp:
        out = lint(stage(Path(tmp) / "stage"))
    sys.stdout.write(out.stdout)
    sys.stderr.write(out.stderr)
    return out.returncode


if __name__ == "__main__":
    sys.exit(main())
