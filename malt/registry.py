"""Algorithm registry: built-in modules under `malt.algorithms` plus the entry-point group
`malt.algorithms` for third-party packages.

An algorithm is a small class::

    @register
    class ColumnMean(Algorithm):
        name = "column-mean"
        tasks = frozenset({"missing"})
        Params = ColumnMeanParams
        version = "1"            # bump when results would change; part of every result key

        def run(self, split, params, ctx) -> Prediction: ...

A module that fails to import does not break the listing: it shows up as a broken entry whose
error is raised when it is used.

`get(name)` imports only the module that declares ``name`` (found by reading the modules' source
for ``name = "..."``), so `malt cv --algo mllr` does not import the other thirty modules and their
libraries; listing every algorithm imports them all.
"""
from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import time
import traceback
from importlib.metadata import entry_points
from typing import ClassVar

from malt.errors import MaltError, unknown_name
from malt.params import NoParams, Params
from malt.splits import Prediction

BUILTIN = "malt.algorithms"
"""The package whose modules hold the built-in algorithms."""

_REGISTRY: dict[str, type["Algorithm"]] = {}
_BROKEN: dict[str, str] = {}
_LOADED = False


class Algorithm:
    """Base class: subclasses set ``name``, ``tasks``, ``Params``, ``version`` and implement ``run``."""

    name: ClassVar[str] = ""
    tasks: ClassVar[frozenset[str]] = frozenset()
    Params: ClassVar[type[Params]] = NoParams
    version: ClassVar[str] = "1"
    preload: ClassVar[tuple[str, ...]] = ()
    """Modules a run imports on first use; the engine imports them before a unit's clock starts, so
    the first unit in a process is not charged for loading scikit-learn."""
    blas_threads: ClassVar[int | None] = None
    """BLAS threads the engine gives a unit when ``--threads`` is not set (None: the default, the idle
    cores shared by the jobs). For algorithms measured to lose with more (bench_threads)."""

    def run(self, split, params: Params, ctx) -> Prediction:  # pragma: no cover - interface
        raise NotImplementedError

    def fit_then_predict(self, split, params: Params, ctx) -> Prediction:
        """``predict_model(fit_model(split))`` for an inductive algorithm that defines the two halves,
        recording each half's CPU seconds as the diagnostics ``train_cpu_seconds`` and
        ``predict_cpu_seconds`` (the dissertation's Figures 4.6 / 4.7 time them separately)."""
        start = time.process_time()
        fitted = self.fit_model(split, params, ctx)
        trained = time.process_time()
        prediction = self.predict_model(fitted, split, params, ctx)
        prediction.diagnostics = {**(prediction.diagnostics or {}), "train_cpu_seconds": trained - start,
                                  "predict_cpu_seconds": time.process_time() - trained}
        return prediction

    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Class decorator adding an algorithm to the registry under ``cls.name``."""
    if not cls.name:
        raise TypeError(f"{cls.__qualname__} must set a non-empty `name`")
    if not cls.tasks:
        raise TypeError(f"algorithm {cls.name!r} must declare the tasks it supports")
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise TypeError(f"algorithm name {cls.name!r} is registered twice ({existing.__qualname__}, {cls.__qualname__})")
    if cls.Params is not NoParams:
        if "_owner" in vars(cls.Params) and cls.Params._owner != cls.name:
            cls.Params = _own_params(cls)
        cls.Params._owner = cls.name
    _REGISTRY[cls.name] = cls
    return cls


def _own_params(cls: type[Algorithm]) -> type[Params]:
    """A Params class shared by several algorithms gets a subclass per algorithm, so its error
    messages name the right one; it is reachable (and picklable) as ``<Algorithm>.Params``."""
    sub = type(cls.Params.__name__, (cls.Params,), {"__module__": cls.__module__})
    sub.__qualname__ = f"{cls.__qualname__}.Params"
    return sub


def _builtin_modules():
    """The modules of the `malt.algorithms` package, found by name like entry points (the registry
    never imports an algorithm statically: algorithms import the registry, not the other way)."""
    return pkgutil.walk_packages(importlib.import_module(BUILTIN).__path__, prefix=BUILTIN + ".")


def _load() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for info in _builtin_modules():
        try:
            importlib.import_module(info.name)
        except Exception:  # a broken plugin must not hide the others
            _BROKEN[info.name] = traceback.format_exc()
    for ep in entry_points(group="malt.algorithms"):
        try:
            obj = ep.load()
            if isinstance(obj, type) and issubclass(obj, Algorithm) and obj.name not in _REGISTRY:
                register(obj)
        except Exception:
            _BROKEN[f"{ep.name} (entry point {ep.value})"] = traceback.format_exc()


_DECLARED = re.compile(r"^\s+name\s*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)


def _module_declaring(name: str) -> str | None:
    """The built-in module whose source declares an algorithm ``name`` (None if none does)."""
    for info in _builtin_modules():
        spec = importlib.util.find_spec(info.name)
        if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
            continue
        try:
            with open(spec.origin, encoding="utf-8") as handle:
                if name in _DECLARED.findall(handle.read()):
                    return info.name
        except OSError:
            continue
    return None


def _load_one(name: str) -> None:
    """Import just the module that declares ``name``; everything when it cannot be found that way."""
    module = None if _LOADED else _module_declaring(name)
    if module is not None:
        try:
            importlib.import_module(module)
        except Exception:
            _BROKEN[module] = traceback.format_exc()
    if name not in _REGISTRY:
        _load()


def algorithms() -> dict[str, type[Algorithm]]:
    """All registered algorithms by name (loads built-ins and entry points on first use)."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def broken() -> dict[str, str]:
    """Modules that failed to import, with their tracebacks."""
    _load()
    return dict(_BROKEN)


def get(name: str) -> type[Algorithm]:
    if name not in _REGISTRY:
        _load_one(name)
    found = _REGISTRY.get(name)
    if found is None:
        hint = "Run `malt algorithms` to list them."
        _load()
        if _BROKEN:
            hint += f" {len(_BROKEN)} algorithm module(s) failed to import; `malt algorithms --broken` shows why."
        raise unknown_name("algorithm", name, _REGISTRY, hint)
    return found


def check_task(algo: type[Algorithm], task: str) -> None:
    if task not in algo.tasks:
        raise MaltError(
            f"Algorithm '{algo.name}' does not support the '{task}' task; it supports: "
            f"{', '.join(sorted(algo.tasks))}. Choose another --task or another --algo."
        )
