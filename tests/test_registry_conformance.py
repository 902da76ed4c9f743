"""Checks every registered algorithm gets for free (GPyTorch-style conformance suite):
parameters declared with help and constraints, JSON round-trip, the standard error message,
pickling, and deterministic runs on a tiny instance of each task it declares."""
from __future__ import annotations

import dataclasses
import importlib
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from malt import registry
from malt.engine.context import Context
from malt.datasets.dataset import Dataset
from malt.errors import InvalidParameterError
from malt.params import Interval
from malt.tasks import get_task, tasks

ALGORITHMS = sorted(registry.algorithms())


def test_no_algorithm_module_is_broken():
    assert registry.broken() == {}, "\n".join(registry.broken().values())


@pytest.mark.parametrize("name", ALGORITHMS)
def test_params_are_declared_round_trip_and_pickle(name):
    algo = registry.get(name)
    params = algo.Params()
    for f in dataclasses.fields(params):
        assert f.metadata.get("help"), f"{name}.{f.name} has no help text"
    assert algo.Params.from_dict(params.to_dict()) == params
    assert pickle.loads(pickle.dumps(params)) == params
    pickle.dumps(algo())
    assert algo.summary(), f"{name} has no docstring summary"
    assert algo.tasks <= set(tasks()), f"{name} declares unknown tasks {algo.tasks - set(tasks())}"
    for module in algo.preload:
        importlib.import_module(module)  # the engine imports these before a unit's clock starts


@pytest.mark.parametrize("name", ALGORITHMS)
def test_out_of_range_values_get_the_standard_message(name):
    algo = registry.get(name)
    for f in dataclasses.fields(algo.Params):
        constraint = f.metadata.get("constraint")
        if isinstance(constraint, Interval) and constraint.low is not None and isinstance(f.default, (int, float)) \
                and not isinstance(f.default, bool):
            bad = constraint.low - 1
            with pytest.raises(InvalidParameterError, match=rf"The '{f.name}' parameter of {name} must be"):
                algo.Params(**{f.name: type(f.default)(bad)})


def _tiny(task: str) -> Dataset:
    rng = np.random.default_rng(0)
    if task in ("multilabel", "missing"):
        X = rng.normal(size=(40, 5))
        Y = (X[:, :3] + 0.5 * rng.normal(size=(40, 3)) > 0).astype(float)
        return Dataset("tiny", {"X": X, "Y": Y})
    if task == "semisupervised":
        X = np.vstack([rng.normal(0, 1, (30, 4)), rng.normal(3, 1, (30, 4))])
        return Dataset("tiny", {"X": X, "y": np.repeat([0, 1], 30)})
    if task == "topics":
        docs = sp.csr_matrix(rng.poisson(0.6, size=(40, 30)).astype(float))
        docs[docs.sum(1).A1 == 0, 0] = 1
        return Dataset("tiny", {"docs": sp.csr_matrix(docs), "vocab": [f"w{i}" for i in range(30)],
                                "y": np.repeat([0, 1], 20), "X": docs.toarray()})
    if task == "ratings":
        R = sp.random(30, 20, density=0.4, random_state=0, format="coo")
        R.data = np.ceil(R.data * 5)
        return Dataset("tiny", {"ratings": R})
    if task == "recovery":
        from malt.datasets.synthetic_cca import synthetic_cca

        return synthetic_cca(n=40, d1=5, d2=3, k=2, sparsity=0.3)
    pytest.skip(f"no tiny dataset for task {task}")


CASES = [(name, task) for name in ALGORITHMS for task in sorted(registry.get(name).tasks)]


@pytest.mark.parametrize("name,task", CASES)
def test_runs_deterministically_on_a_tiny_instance(name, task):
    algo = registry.get(name)
    t = get_task(task)
    dataset = _tiny(task)
    tparams = t.Params()
    t.check(dataset, tparams)
    split = t.split(dataset, tparams, 0)
    results = []
    for _ in range(2):
        ctx = Context(t.features(dataset), data_key=dataset.hash, seed=123, dataset=dataset)
        prediction = algo().run(split, algo.Params(), ctx)
        results.append(t.score(dataset, tparams, split, prediction))
    assert results[0].keys() == results[1].keys()
    np.testing.assert_array_equal(list(results[0].values()), list(results[1].values()))  # NaN == NaN here
    assert all(np.isfinite(v) or np.isnan(v) for v in results[0].values())


@pytest.mark.parametrize("name", sorted(tasks()))
def test_every_task_declares_its_protocol(name):
    """Options with help and a role, metrics with a label, a direction and unique names, settings that
    are options: what the CLI, figures, tables and report read."""
    import dataclasses

    cls = tasks()[name]
    assert cls.summary(), f"task {name} has no docstring summary"
    for f in dataclasses.fields(cls.Params):
        assert f.metadata.get("help"), f"{name}.{f.name} has no help text"
    assert set(cls.option_roles().values()) <= {"fitting", "scoring", "count", "repetition"}
    assert cls.metrics and len({m.name for m in cls.metrics}) == len(cls.metrics)
    for m in cls.metrics:
        assert m.label and m.better in ("lower", "higher") and m.version
        assert set(m.options) <= set(cls.Params.names()), f"{name}.{m.name} names unknown options"
    for s in cls.settings:
        assert s.name in cls.Params.names() and s.label
    assert cls.requires


def test_same_named_metrics_mean_the_same_everywhere():
    seen = {}
    for cls in tasks().values():
        for m in cls.metrics:
            first = seen.setdefault(m.name, m)
            assert (first.better, first.percent) == (m.better, m.percent), f"{m.name} differs between tasks"
