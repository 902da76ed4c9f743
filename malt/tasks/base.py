"""The Task interface: a cross-validation protocol that owns everything it means.

A task declares, in one place:

* its options (``Params``; each with help text, marked ``scoring=True`` when it only changes how
  stored predictions are scored, ``count=True`` when it only says how many repetitions to plan,
  ``repetition=True`` when it repeats the protocol differently, like a seed) — the CLI flags,
  `malt tasks`, the experiment identity and the matching of published tables derive from them;
* the dataset components it ``requires`` (task inference reads them);
* its ``metrics``: label, which direction is better, percent or not, a version, and the
  conventions of undefined and tied cases;
* the ``settings`` a figure may sweep (label, unit, display scale);
* how to cut a dataset into folds (`split`), how to check and compactly store an algorithm's answer
  (`pack`: the test entries only), and how to score stored predictions (`score_packed`), a pure function of
  (declaration, stored prediction, truth), so `malt rescore` needs no refit.

The CLI, plotting, tables and the report read only these declarations. Adding a task is one module
in ``malt/tasks/`` (plus its test).
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import pkgutil
from pathlib import Path
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from malt.errors import MaltError, unknown_name
from malt.params import NoParams, Params, Size, canonical_json
from malt.splits import Prediction


@dataclass(frozen=True)
class Metric:
    """One score a task reports.

    ``label`` may name task options in braces ("Precision@{k}"); ``version`` changes whenever the
    definition changes, and values of another version are never averaged with current ones;
    ``conventions`` says what happens with ties and undefined cases.
    """

    name: str
    label: str
    better: str  # 'lower' or 'higher'
    percent: bool = False  # stored as a fraction, shown ×100 with a % unit
    version: str = "1"
    conventions: str = ""
    options: tuple[str, ...] = ()

    def __post_init__(self):
        if self.better not in ("lower", "higher"):
            raise ValueError(f"metric {self.name}: better must be 'lower' or 'higher'")

    def label_for(self, options: Mapping[str, Any] | None = None) -> str:
        """The label with its parameters filled in ("Precision@20")."""
        if not self.options:
            return self.label
        values = {k: _fmt((options or {}).get(k, "k")) for k in self.options}
        return self.label.format(**values)


MetricInfo = Metric  # the name plotting and tables have used


@dataclass(frozen=True)
class Setting:
    """A task option a figure may sweep on its x axis."""

    name: str
    label: str
    unit: str = ""
    scale: float = 1.0  # stored value × scale = shown value (fractions shown as %)

    def axis_label(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


def _fmt(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Task:
    """Base class of the CV protocols; see the module docstring for what a subclass declares."""

    name: ClassVar[str] = ""
    Params: ClassVar[type[Params]] = NoParams
    version: ClassVar[str] = "1"  # of the fitting protocol (how splits are drawn): part of every unit key
    requires: ClassVar[tuple[str, ...]] = ()
    metrics: ClassVar[tuple[Metric, ...]] = ()
    settings: ClassVar[tuple[Setting, ...]] = ()

    # ---- declarations --------------------------------------------------------------------------
    @classmethod
    def summary(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return doc.splitlines()[0] if doc else ""

    @classmethod
    def metric(cls, name: str) -> Metric:
        for m in cls.metrics:
            if m.name == name:
                return m
        raise MaltError(f"The {cls.name} task declares no metric '{name}'; it declares "
                        f"{', '.join(m.name for m in cls.metrics)}.")

    @classmethod
    def setting(cls, name: str) -> Setting:
        for s in cls.settings:
            if s.name == name:
                return s
        return Setting(name, name.replace("_", " ").capitalize())

    @classmethod
    def option_roles(cls) -> dict[str, str]:
        """'fitting', 'scoring', 'count' or 'repetition' for each option."""
        roles = {}
        for f in dataclasses.fields(cls.Params):
            roles[f.name] = next((role for role in ("scoring", "count", "repetition") if f.metadata.get(role)),
                                 "fitting")
        return roles

    @classmethod
    def scoring_options(cls) -> frozenset[str]:
        return frozenset(k for k, role in cls.option_roles().items() if role == "scoring")

    @classmethod
    def repetition_options(cls) -> frozenset[str]:
        """Options a published table is matched regardless of (seeds, repetition counts)."""
        return frozenset(k for k, role in cls.option_roles().items() if role in ("count", "repetition"))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return cls.Params().to_dict()

    @classmethod
    def test_train_ratio(cls, options: Mapping[str, Any]) -> float | None:
        """n_test / n_train of one fold: the ρ of Nadeau & Bengio's corrected resampled t-test
        (k-fold: 1/(k-1)); None when the folds are not resamples of the data."""
        folds = options.get("folds")
        return 1.0 / (int(folds) - 1) if folds is not None and int(folds) >= 2 else None

    # ---- identity ------------------------------------------------------------------------------
    def fit_identity(self, dataset_hash: str, options: Params) -> str:
        """What every unit's fit depends on besides its algorithm and fold: the data, this
        protocol's version and the options that change fitting — not scoring options, not
        repetition counts, and none at its default (so an option added later at a default keeping
        the old behaviour changes nothing)."""
        roles = self.option_roles()
        fitting = {k: v for k, v in options.changed().items() if roles[k] in ("fitting", "repetition")}
        text = canonical_json({"data": dataset_hash, "task": self.name, "version": self.version, "options": fitting})
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def experiment_id(self, dataset_name: str, dataset_hash: str, options: Params) -> str:
        """Readable, content-derived id: ``DATASET-TASK-<hash of data, task and its options>``."""
        scoring = {k: v for k, v in options.changed().items() if k in self.scoring_options()}
        digest = hashlib.sha256(f"{self.fit_identity(dataset_hash, options)}|{canonical_json(scoring)}".encode())
        safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in dataset_name)[:40].strip("_-") or "data"
        return f"{safe}-{self.name}-{digest.hexdigest()[:8]}"

    # ---- protocol ------------------------------------------------------------------------------
    def check(self, dataset, params: Params) -> None:
        """Raise DataError if the dataset lacks what this task needs or the options contradict it."""

    def n_folds(self, dataset, params: Params) -> int:
        return int(getattr(params, "folds", 5))

    def sizes(self, dataset, params: Params) -> dict[str, Size]:
        """The sizes of ``dataset`` under these options that algorithm parameters are bounded by
        (``max_from`` in `malt.params.param`), checked before any unit runs. The shared vocabulary:

        ``train_rows``   training rows of the smallest fold     ``points``      points of a graph over all rows
        ``docs``         documents of a graph over all of them  ``train_docs``  training documents of the smallest fold
        ``rows``/``cols`` sides of the matrix to complete       ``min_side``    the smaller of the two
        ``inner_items``  what an inner CV divides into folds (training rows, labelled points)
        ``features``     feature columns                        ``min_view``    the smaller of features and labels

        A task leaves out the sizes it has no meaning for (no bound applies there). A size may carry
        `Size.notice_above`, a smaller count a value may exceed with only a notice in the unit's
        diagnostics (the least populated class or rarest label of a stratified inner CV). Cost: a fold
        assignment at most, or every fold's split where a notice needs its counts."""
        return {}

    def split(self, dataset, params: Params, fold: int):  # pragma: no cover - interface
        raise NotImplementedError

    def pack(self, split, prediction: Prediction, params: Params) -> dict[str, np.ndarray]:  # pragma: no cover
        """Check an algorithm's answer once, at the task boundary, and return the arrays stored for
        it: the test entries only, in a compact dtype. Raises ValueError naming what is wrong."""
        raise NotImplementedError

    def score_packed(self, dataset, params: Params, split, packed: dict[str, np.ndarray]) -> dict[str, float]:  # pragma: no cover
        """Every declared metric from stored predictions (NaN where a metric is undefined on this fold)."""
        raise NotImplementedError

    def score(self, dataset, params: Params, split, prediction: Prediction) -> dict[str, float]:
        """The metrics of an algorithm's answer, computed from its stored form (as the engine does)."""
        packed = {k: np.array(v) for k, v in self.pack(split, prediction, params).items()}
        return self.score_packed(dataset, params, split, packed)

    def can_score(self, packed: dict[str, np.ndarray], params: Params) -> bool:
        """Whether predictions stored under other scoring options suffice for these ones."""
        return True

    def features(self, dataset):
        """The matrix the run context builds kernels and kNN graphs from (None if none)."""
        return dataset.get("X")


_TASKS: dict[str, type[Task]] = {}
_LOADED = False


def register_task(cls: type[Task]) -> type[Task]:
    if cls.Params is not NoParams:
        cls.Params._owner = f"the {cls.name} task"
        cls.Params._task_options = True
    names = [m.name for m in cls.metrics]
    if len(set(names)) != len(names):
        raise TypeError(f"task {cls.name!r} declares a metric twice")
    _TASKS[cls.name] = cls
    return cls


def tasks() -> dict[str, type[Task]]:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for info in pkgutil.walk_packages([str(Path(__file__).parent)], prefix="malt.tasks."):
            importlib.import_module(info.name)
    return dict(sorted(_TASKS.items()))


def get_task(name: str) -> Task:
    found = tasks().get(name)
    if found is None:
        raise unknown_name("task", name, _TASKS, "Tasks: " + ", ".join(sorted(_TASKS)) + ".")
    return found()


def metric_info(task: str | None, name: str) -> Metric:
    """The declaration of metric ``name`` (of ``task``, or of whichever task declares it)."""
    if task is not None and task in tasks():
        return tasks()[task].metric(name)
    for cls in tasks().values():
        for m in cls.metrics:
            if m.name == name:
                return m
    raise MaltError(f"No task declares a metric '{name}' (results written by another version of malt?).")


class _AllMetrics(Mapping):
    """Read-only view name -> Metric over every task's declarations (same-named metrics agree)."""

    def _all(self) -> dict[str, Metric]:
        out: dict[str, Metric] = {}
        for cls in tasks().values():
            for m in cls.metrics:
                out.setdefault(m.name, m)
        return out

    def __getitem__(self, key):
        return self._all()[key]

    def __iter__(self):
        return iter(self._all())

    def __len__(self):
        return len(self._all())


METRICS: Mapping[str, Metric] = _AllMetrics()


def fold_assignment(n: int, folds: int, seed: int) -> np.ndarray:
    """Random balanced fold ids (0..folds-1) for n rows, reproducible from the seed."""
    rng = np.random.default_rng([seed, n, folds])
    ids = np.arange(n) % folds
    rng.shuffle(ids)
    return ids


def stratified_fold_assignment(y: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Random fold ids (0..folds-1) for the rows of class ids ``y`` with every class spread evenly:
    rows ordered by class (random order within each), then dealt round-robin, so each fold holds
    each class's count within one and every fold's size within one. Reproducible from the seed."""
    y = np.asarray(y)
    rng = np.random.default_rng([seed, y.size, folds, 1])
    order = np.lexsort((rng.permutation(y.size), y))
    ids = np.empty(y.size, dtype=np.int64)
    ids[order] = (np.arange(y.size) + rng.integers(folds)) % folds
    return ids


def subkey_rng(*parts: Any) -> np.random.Generator:
    """A generator seeded from integers/strings, for task-level randomness (hidden masks...)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def as_array(value, name: str, shape: tuple, *, finite: bool = True, dtype=float) -> np.ndarray:
    """``value`` as an array of ``shape`` (ValueError naming the field otherwise)."""
    if value is None:
        raise ValueError(f"the algorithm returned no {name}; this task needs {name} of shape {shape}")
    arr = np.asarray(value.toarray() if hasattr(value, "toarray") else value, dtype=dtype)
    if arr.shape != tuple(shape):
        raise ValueError(f"the algorithm returned {name} of shape {arr.shape}, expected {tuple(shape)}")
    if finite and not np.all(np.isfinite(arr)):
        raise ValueError(f"the algorithm returned NaN or inf in {name}")
    return arr
