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
from malt.params import Interval, Options, When
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


# ---- no silent no-op settings -------------------------------------------------------------------
def _cli_text(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value).lower() if isinstance(value, bool) else str(value)


def _allowed(info, value) -> bool:
    constraint = info.field.metadata.get("constraint")
    if value is None:
        return info.optional
    elements = value if info.is_list else (value,)
    kind_ok = all(isinstance(e, info.kind) and not (info.kind is int and isinstance(e, bool)) for e in elements)
    return kind_ok and (constraint is None or all(e in constraint for e in elements))


def _other_values(info, default) -> list:
    """Valid values of a field other than its default (a few, in a fixed order)."""
    constraint = info.field.metadata.get("constraint")
    if info.is_list:
        found = [default[:1], default[1:], (), default + default[-1:]] if default else (
            [tuple(constraint.values[:1])] if isinstance(constraint, Options) else [(info.kind(1),)])
    elif isinstance(constraint, Options):
        found = [v for v in constraint.values if v != default]
    elif info.kind is bool:
        found = [not default]
    elif default is None:
        found = [info.kind(3), info.kind(1)]
    elif info.kind is str:
        found = ["1.5", "linear"]
    else:
        found = [default + 1, default * 2, default / 2 if info.kind is float else default - 1, 0.5, 1]
    found = [info.kind(v) if info.kind in (int, float) and not info.is_list and v is not None else v for v in found]
    return [v for v in dict.fromkeys(map(_hashable, found)) if v != default and _allowed(info, v)]


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


def _switch_settings(algo, name, used: bool = False):
    """(setting {field: value}, context) pairs under which field ``name`` of ``algo`` is unused (with
    ``used``: used): the defaults, or one or two switches of its condition moved, on each of the
    algorithm's tasks."""
    import itertools

    P = algo.Params
    infos = {i.name: i for i in P._fields()}
    defaults = P()
    switches = set()
    todo = [name]
    while todo:  # the switches of the condition, and theirs
        for switch in P.conditions().get(todo.pop(), When()).names() - switches:
            switches.add(switch)
            todo.append(switch)
    moves = [{}] + [{k: v} for k in sorted(switches - {"task"}) for v in _other_values(infos[k], getattr(defaults, k))]
    pairs = [a | b for a, b in itertools.combinations(moves[1:], 2) if a.keys() != b.keys()]
    for setting in moves + pairs:
        try:
            params = P(**setting)
        except InvalidParameterError:
            continue
        for task in sorted(algo.tasks):
            if (params.inactive_reason(name, {"task": task}) is None) == used:
                yield setting, {"task": task}


def _refusal_cases():
    for name in ALGORITHMS:
        algo = registry.get(name)
        for info in algo.Params._fields():
            if info.name in algo.Params.conditions():
                yield name, info.name


@pytest.mark.parametrize("name,field", list(_refusal_cases()))
def test_an_unused_parameter_is_refused_naming_its_switch(name, field):
    """For every parameter with a declared condition: giving it while the condition fails is refused in
    one line that names the switch (`malt cv ... --param C=10` with select='inner-cv'); where it is used,
    changing it changes the unit key."""
    from malt.engine.runner import unit_key
    from malt.params import grid

    algo = registry.get(name)
    P = algo.Params
    info = next(i for i in P._fields() if i.name == field)
    condition = P.conditions()[field]
    assert condition.names() <= set(P.names()) | {"task"}, f"{name}.{field}: condition names unknown fields"
    required_tasks = {t for alt in condition.alternatives for k, v in alt if k == "task"
                      for t in (v.values if isinstance(v, Options) else (v,))}
    assert required_tasks <= set(algo.tasks), f"{name}.{field}: its condition names a task {name} does not run"
    settings = list(_switch_settings(algo, field))
    shared = condition.names() == {"task"} and required_tasks >= set(algo.tasks)  # a vocabulary class's task
    assert settings or shared, f"{name}.{field}: no setting of its switches leaves it unused; drop its condition"
    assert next(_switch_settings(algo, field, used=True), None) is not None, \
        f"{name}.{field}: no setting of its switches uses it; {name} should not have it"
    others = _other_values(info, getattr(P(), field))
    assert others, f"{name}.{field}: no other valid value to try"
    for setting, context in settings[:3]:
        refused = rf"^({'|'.join([field, *setting])}) is ignored (while|on the) "
        switches = {k: _cli_text(v) for k, v in setting.items()}
        with pytest.raises(InvalidParameterError, match=refused):
            grid(P, switches | {field: _cli_text(others[0])}, context)
        with pytest.raises(InvalidParameterError, match=refused):  # given at its default value: still refused
            grid(P, switches | {field: _cli_text(getattr(P(), field))}, context)
    for task in sorted(algo.tasks):
        if P().inactive_reason(field, {"task": task}) is None:
            changed = grid(P, {field: _cli_text(others[0])}, {"task": task})[0]
            assert unit_key("fit", name, algo.version, changed, 0) != unit_key("fit", name, algo.version, P(), 0)


def _ignored_cases():
    """(algorithm, task, field) wherever some setting of the field's switches leaves it unused on the task."""
    for name, task in CASES:
        algo = registry.get(name)
        for field in algo.Params.conditions():
            if any(context["task"] == task for _, context in _switch_settings(algo, field)):
                yield name, task, field


_RUNS: dict = {}
SHORT_RUNS = {"pma-gibbs": {"burn_in": 10, "sweeps": 20}, "gptm": {"iters": 5, "test_iters": 5},
              "icca": {"max_sweeps": 40, "min_sweeps": 20, "check_every": 20}, "pcsa": {"max_iter": 10},
              "pcsa-sparse": {"max_iter": 10}, "bmr": {"iterations": 20}}
"""Settings that keep the runs of the slowest algorithms short (the check compares two runs, not quality)."""


def _packed_run(name: str, task: str, params):
    """The stored form of one deterministic run on the tiny instance (None if the run raises)."""
    key = (name, task, repr(params))
    if key not in _RUNS:
        algo, t, dataset = registry.get(name), get_task(task), _tiny(task)
        tparams = t.Params()
        split = t.split(dataset, tparams, 0)
        ctx = Context(t.features(dataset), data_key=dataset.hash, seed=123, dataset=dataset)
        try:
            _RUNS[key] = t.pack(split, algo().run(split, params, ctx), tparams)
        except Exception as err:  # the setting itself may not suit the tiny instance
            _RUNS[key] = err
    return _RUNS[key]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,task,field", list(_ignored_cases()))
def test_a_parameter_declared_unused_changes_nothing(name, task, field):
    """The converse check of a declaration: where a parameter is declared unused, a run with another
    value of it (forced past the refusal) predicts exactly what the run at its default predicts."""
    import copy

    algo = registry.get(name)
    P = algo.Params
    info = next(i for i in P._fields() if i.name == field)
    for setting in [s for s, context in _switch_settings(algo, field) if context["task"] == task][:1]:
        shorter = {k: v for k, v in SHORT_RUNS.get(name, {}).items() if k != field and k not in setting}
        base = P(**shorter, **setting)
        expected = _packed_run(name, task, base)
        if isinstance(expected, Exception):
            continue
        forced = copy.copy(base)
        object.__setattr__(forced, field, _other_values(info, getattr(base, field))[0])
        got = _packed_run(name, task, forced)
        assert not isinstance(got, Exception), f"{name} with {field} forced: {got!r}"
        assert got.keys() == expected.keys()
        for k in got:
            np.testing.assert_array_equal(got[k], expected[k], err_msg=f"{name}.{field} changed {k} ({setting})")
