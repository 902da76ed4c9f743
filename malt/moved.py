"""Import paths that moved when malt's modules were grouped into part folders (0.2), kept working
for one release.

``import malt.plotting`` (or ``from malt import plotting``) still gives the module, now
`malt.results.plotting`, with a DeprecationWarning naming the new path. The old names are served
by a finder appended to ``sys.meta_path`` when `malt` is imported, so the tree holds no stub files.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "malt.cli_data": "malt.cli.data",
    "malt.cli_figures": "malt.cli.figures",
    "malt.experiment_files": "malt.cli.experiment_files",
    "malt.context": "malt.engine.context",
    "malt.progress": "malt.engine.progress",
    "malt.provenance": "malt.engine.provenance",
    "malt.migrate": "malt.engine.migrate",
    "malt.repair": "malt.engine.repair",
    "malt.data": "malt.datasets.open",
    "malt.sources": "malt.datasets.sources",
    "malt.eigenbasis": "malt.numerics.eigenbasis",
    "malt.graphs": "malt.numerics.graphs",
    "malt.linalg": "malt.numerics.linalg",
    "malt.selection": "malt.numerics.selection",
    "malt.metrics": "malt.tasks.metrics",
    "malt.paper_metrics": "malt.tasks.paper_metrics",
    "malt.describe": "malt.results.describe",
    "malt.plotting": "malt.results.plotting",
    "malt.tables": "malt.results.tables",
    "malt.ranks": "malt.results.ranks",
    "malt.stats": "malt.results.stats",
    "malt.cd_diagram": "malt.results.cd_diagram",
    "malt.report": "malt.results.report",
    "malt.outputs": "malt.results.outputs",
}
"""Old module path -> where it lives now."""


def warn_moved(old: str, new: str) -> None:
    """The DeprecationWarning for a moved path, attributed to the first caller outside importlib."""
    level = 2
    frame = sys._getframe(1)
    while frame is not None and (frame.f_code.co_filename.startswith("<frozen importlib")
                                 or frame.f_globals.get("__name__") == __name__
                                 or frame.f_code.co_name == "__getattr__"):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"{old} moved to {new}; import it from there ({old} is kept for one release).",
                  DeprecationWarning, stacklevel=level)


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        warn_moved(spec.name, self.new)
        return importlib.import_module(self.new)

    def exec_module(self, module) -> None:
        """The module was executed under its new name; nothing to do."""


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Resolves an old path of `MOVED` to the module at its new path (the same module object)."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        return None if new is None else importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Serve the old paths (once per process)."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())


MOVED_NAMES = {
    "malt.engine": ("malt.engine.runner", ("unit_key", "Unit", "Plan", "Outcome", "metric_versions", "score_packed",
                                           "run_unit", "rescore_unit", "Counts", "stored_predictions", "execute",
                                           "WORKER_START_SECONDS", "BATCH_SECONDS", "run_batch")),
    "malt.results": ("malt.results.result_set", ("UNIT_COLUMNS", "RECORD_COLUMNS", "numeric_diagnostics",
                                                 "format_mean_std", "format_cell")),
}
"""Names a flat module had before it became a package: package -> (their module now, names)."""


def moved_attribute(package: str, name: str):
    """``package.name`` for a name of `MOVED_NAMES` (a package's ``__getattr__``)."""
    new_module, names = MOVED_NAMES[package]
    if name == "DIAGNOSTIC_PREFIX" and package == "malt.results":
        new_module = "malt.results.describe"
    elif name not in names:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    warn_moved(f"{package}.{name}", f"{new_module}.{name}")
    value = getattr(importlib.import_module(new_module), name)
    setattr(sys.modules[package], name, value)  # warned once; `from package import name` looks twice
    return value
