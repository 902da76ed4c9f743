"""Every parameter bounded by the data (``max_from``) gets the same checks, for every algorithm that
declares it and every task that reports its size: one above the largest valid value is refused before
any unit runs, in one line naming the setting, the data's size and the largest valid value, from the
Python API, `malt cv` and an experiment file (`malt run`) alike, with the repository byte-identical;
the largest valid value itself is accepted (so the bound is not tighter than the data)."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from malt import api, registry
from malt.cli import main
from malt.errors import InvalidParameterError
from malt.params import _wanted
from malt.tasks import get_task
from tests.helpers import snapshot

DATA = {"multilabel": "synthetic-multilabel", "missing": "synthetic-pma-50x20", "semisupervised": "wine2",
        "topics": "synthetic-ctm", "ratings": "yamanishi-nr", "recovery": "synthetic-cca"}
_SIZES: dict[str, dict] = {}


def _sizes(task: str) -> dict:
    """What the task reports for its small dataset under default options (computed once)."""
    if task not in _SIZES:
        t = get_task(task)
        _SIZES[task] = t.sizes(api.dataset(DATA[task]), t.Params())
    return _SIZES[task]


def _used_setting(algo, field: str, task: str) -> dict | None:
    """Values of the switches under which ``field`` is used on ``task`` (None: never): the defaults, or
    each alternative of its condition with the switches' own conditions met too."""
    P = algo.Params
    tries, todo = [{}], [dict(alt) for alt in P.conditions()[field].alternatives] if field in P.conditions() else []
    for alternative in todo:
        setting = {}
        for name, required in alternative.items():
            if name in P.conditions():
                setting.update({k: _wanted(v) for k, v in P.conditions()[name].alternatives[0] if k != "task"})
        setting.update({k: _wanted(v) for k, v in alternative.items() if k != "task"})
        tries.append(setting)
    for setting in tries:
        try:
            params = P(**setting)
        except InvalidParameterError:
            continue
        if params.inactive_reason(field, {"task": task}) is None:
            return {k: v for k, v in setting.items() if v != getattr(P(), k)}
    return None


def _cases():
    for name in sorted(registry.algorithms()):
        algo = registry.get(name)
        for field, (size, offset) in sorted(algo.Params.bounds().items()):
            for task in sorted(algo.tasks):
                if task in DATA and size in _sizes(task) and _used_setting(algo, field, task) is not None:
                    yield name, field, task


CASES = list(_cases())


def test_every_declared_bound_is_checked_somewhere():
    """A bound no task reports a size for would never be checked: each declared one has a case."""
    declared = {(name, field) for name in registry.algorithms()
                for field in registry.get(name).Params.bounds()}
    assert declared and declared == {(name, field) for name, field, _ in CASES}


def _text(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A repository holding one real experiment, to prove refusals leave it byte-identical."""
    path = tmp_path_factory.mktemp("bounds") / "repo"
    result = CliRunner().invoke(main, ["cv", "--repo", str(path), "--quiet", "--algo", "label-prior", "--dataset",
                                       DATA["multilabel"], "--folds", "2"])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize("name,field,task", CASES)
def test_a_value_above_the_data_is_refused_everywhere_and_the_largest_valid_is_accepted(name, field, task, repo,
                                                                                           tmp_path):
    algo = registry.get(name)
    size, offset = algo.Params.bounds()[field]
    setting = _used_setting(algo, field, task)
    n = _sizes(task)[size].value
    largest = n - offset
    params = {k: _text(v) for k, v in setting.items()}
    expected = (rf"^{re.escape(name)}: --param {field}={largest + 1} is more than the data allow: .* is {n}, "
                rf"so the largest valid {field} is {largest}\.$")
    before = snapshot(repo)

    with pytest.raises(InvalidParameterError, match=expected):  # Python API
        api.cv(name, DATA[task], task=task, params={**params, field: largest + 1}, repo=repo, quiet=True)
    assert snapshot(repo) == before

    flags = [item for k, v in {**params, field: largest + 1}.items() for item in ("--param", f"{k}={v}")]
    cli = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--algo", name, "--dataset", DATA[task], "--task",
                                    task, *flags])
    lines = cli.output.strip().splitlines()
    assert cli.exit_code != 0 and len(lines) == 1 and re.match(expected, lines[0].removeprefix("error: ")), cli.output
    assert snapshot(repo) == before

    values = ", ".join(f"{k} = {v!r}" for k, v in {**params, field: str(largest + 1)}.items())
    file = tmp_path / "experiments.toml"
    file.write_text(f'[[experiment]]\ndataset = "{DATA[task]}"\nalgorithm = "{name}"\ntask = "{task}"\n'
                    f"params = {{ {values} }}\n")
    run = CliRunner().invoke(main, ["run", str(file), "--repo", str(repo)])
    assert run.exit_code != 0 and re.search(expected[1:-1], run.output), run.output
    assert snapshot(repo) == before

    if largest >= 1 and (largest >= 2 or field != "inner_folds"):  # the bound is not tighter than the data
        plan = api.plan_experiment(name, DATA[task], task=task, params={**params, field: largest})
        assert getattr(plan.entries[0][1], field) == largest


def test_rerun_leaves_a_stored_setting_the_data_cannot_support_as_it_is(tmp_path):
    """A setting stored before its bound existed (run here by planning around the check) is not rerun:
    `malt rerun` says so in one line and the repository stays byte-identical."""
    from malt.datasets.sources import open_source
    from malt.engine import runner as engine

    task = get_task("multilabel")
    data, source = open_source(DATA["multilabel"])
    options = task.Params(folds=2)
    algo = registry.get("mlknn")
    store = api.repository(tmp_path / "repo")
    rows = task.sizes(data, options)["train_rows"].value
    assert rows == 200  # 400 rows in two folds of 200
    engine.execute(store, engine.Plan(data, source, task, options, [(algo, algo.Params(k=rows))]), quiet=True)
    before = snapshot(tmp_path / "repo")
    assert before
    result = CliRunner().invoke(main, ["rerun", "--repo", str(tmp_path / "repo")])
    assert result.exit_code == 0, result.output
    assert re.search(r"mlknn\[k=200\] is refused today \(--param k=200 is more than the data allow: .* is 200, "
                     r"so the largest valid k is 199\.\)", result.output), result.output
    assert snapshot(tmp_path / "repo") == before
