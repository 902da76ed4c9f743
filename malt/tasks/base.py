"""The Task interface: a cross-validation protocol with frozen, hashable options.

A task knows how to cut a dataset into folds (deterministically from its options and the fold
number, so every algorithm sees the same splits) and how to score a prediction. Tasks are generic
over algorithms; each registers itself with `register_task`.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from malt.errors import unknown_name
from malt.params import NoParams, Params
from malt.splits import Prediction


@dataclass(frozen=True)
class MetricInfo:
    """How to show a metric: axis label, which direction is better, and a scale for display."""

    name: str
    label: str
    better: str  # 'lower' or 'higher'
    percent: bool = False  # stored as a fraction, shown ×100 with a % unit


METRICS: dict[str, MetricInfo] = {}


def describe_metric(name: str, label: str, better: str, percent: bool = False) -> MetricInfo:
    info = MetricInfo(name, label, better, percent)
    METRICS.setdefault(name, info)
    return METRICS[name]


class Task:
    """Base class of the CV protocols; subclasses set ``name``, ``Params`` and ``settings``."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = NoParams
    version: ClassVar[str] = "1"
    settings: ClassVar[tuple[str, ...]] = ()  # options that a figure may sweep on its x axis

    def check(self, dataset, params: Params) -> None:
        """Raise DataError if the dataset lacks what this task needs."""

    def n_folds(self, dataset, params: Params) -> int:
        return int(getattr(params, "folds", 5))

    def split(self, dataset, params: Params, fold: int):  # pragma: no cover - interface
        raise NotImplementedError

    def score(self, dataset, params: Params, split, prediction: Prediction) -> dict[str, float]:  # pragma: no cover
        raise NotImplementedError

    def features(self, dataset):
        """The matrix the run context builds kernels and kNN graphs from (None if none)."""
        return dataset.get("X")


_TASKS: dict[str, type[Task]] = {}
_LOADED = False


def register_task(cls: type[Task]) -> type[Task]:
    if cls.Params is not NoParams:
        cls.Params._owner = f"the {cls.name} task"
    _TASKS[cls.name] = cls
    return cls


def tasks() -> dict[str, type[Task]]:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        import malt.tasks as package

        for info in pkgutil.walk_packages(package.__path__, prefix="malt.tasks."):
            importlib.import_module(info.name)
    return dict(sorted(_TASKS.items()))


def get_task(name: str) -> Task:
    found = tasks().get(name)
    if found is None:
        raise unknown_name("task", name, _TASKS, "Tasks: " + ", ".join(sorted(_TASKS)) + ".")
    return found()


def fold_assignment(n: int, folds: int, seed: int) -> np.ndarray:
    """Random balanced fold ids (0..folds-1) for n rows, reproducible from the seed."""
    rng = np.random.default_rng([seed, n, folds])
    ids = np.arange(n) % folds
    rng.shuffle(ids)
    return ids


def subkey_rng(*parts: Any) -> np.random.Generator:
    """A generator seeded from integers/strings, for task-level randomness (hidden masks...)."""
    import hashlib

    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))
