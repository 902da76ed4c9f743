"""A new user's first contact: the README's first screen runs as typed, every command explains itself
(help for every option, an example in every command's help), `malt run --help` describes the file
format its errors point to, and the example experiment file is valid."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from malt.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _commands(group: click.Group, prefix=()):
    for name, command in sorted(group.commands.items()):
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


COMMANDS = list(_commands(main))


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_option_has_help_and_every_command_an_example(path, command):
    undocumented = [p.opts[0] for p in command.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert undocumented == [], f"malt {' '.join(path)}: options without help: {undocumented}"
    shown = CliRunner().invoke(main, [*path, "--help"], terminal_width=100)
    assert shown.exit_code == 0, shown.output
    assert re.search(r"^  Examples?( \(.*\))?:$", shown.output, re.M), shown.output
    example_lines = re.findall(r"^    (\S.*)$", shown.output.split("Example", 1)[1], re.M)
    assert any(" ".join(["malt", *path]) in line for line in example_lines), shown.output


def test_task_option_flags_use_each_tasks_own_words():
    """--folds, --missing, --seed ... are declared by several tasks; the flag's help quotes each
    declaring task's own help, after the task's name, and never one task's words for all."""
    from malt.tasks import tasks

    options = {p.name: p for p in main.commands["cv"].params}
    shared = 0
    for name in ("folds", "missing", "seed", "labeled"):
        declared = {t.name: row["help"] for t in tasks().values() for row in t.Params.describe()
                    if row["name"] == name and t.__module__.startswith("malt.tasks.")}  # not a test's plugin task
        assert len(declared) >= 2
        shared += 1
        text = options[f"opt_{name}"].help
        for task, words in declared.items():
            assert f"{task}: {words}" in text or (len(set(declared.values())) == 1 and words in text), (name, task)
    assert shared == 4
    assert "fraction of observed entries hidden in each fold" not in options["opt_missing"].help.split(";")[1]


def test_algorithms_filters_by_task():
    from malt import registry

    result = CliRunner().invoke(main, ["algorithms", "--task", "ratings"])
    assert result.exit_code == 0, result.output
    listed = {line.split()[0] for line in result.output.splitlines() if line and not line.startswith(" ")}
    expected = {name for name, algo in registry.algorithms().items() if "ratings" in algo.tasks}
    assert listed == expected and "mllr" not in listed and len(expected) >= 5
    every = CliRunner().invoke(main, ["algorithms"]).output.count("\n")
    assert result.output.count("\n") < every / 2
    wrong = CliRunner().invoke(main, ["algorithms", "--task", "ratng"])
    assert wrong.exit_code == 2 and "Did you mean 'ratings'" in wrong.output


def test_run_help_describes_the_file_format_its_errors_point_to(tmp_path):
    from malt.cli.experiment_files import KEYS

    empty = tmp_path / "empty.toml"
    empty.write_text("repo = 'x'\n")
    refused = CliRunner().invoke(main, ["run", str(empty), "--repo", str(tmp_path / "r")])
    assert refused.exit_code == 2 and "see `malt run --help`" in refused.output
    shown = CliRunner().invoke(main, ["run", "--help"], terminal_width=100).output
    assert "[[experiment]]" in shown
    assert all(re.search(rf"^\s+{key} = ", shown, re.M) for key in KEYS - {"dataset", "algorithm"}), shown
    assert "examples/experiments.toml" in shown


@pytest.mark.timeout(120)
def test_the_example_experiment_file_is_valid(tmp_path):
    """Every block of examples/experiments.toml plans (datasets, algorithms, options and parameters
    all accepted) without running anything."""
    from malt import api
    from malt.cli.experiment_files import planned_calls, read

    content = read(ROOT / "examples" / "experiments.toml")
    calls = planned_calls(content)
    assert len(calls) == 5  # two option values, one missing-value experiment, two datasets
    for call in calls:
        call = dict(call)
        api.plan_experiment(call.pop("algorithms"), call.pop("dataset"), task=call.pop("task"),
                            params=call.pop("params"), repo=api.repository(tmp_path / "r"), labels=call.pop("labels"),
                            **call)
    assert not (tmp_path / "r").exists()


def _start_here() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Start here"):]
    section = section[:section.index("\n## ", 1)]
    block = re.search(r"```\n(.*?)```", section, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.strip().splitlines()]


def test_start_here_installs_then_activates():
    lines = _start_here()
    assert lines[0].startswith("git clone ") and lines[0].endswith("&& cd malt")
    assert lines[1] == "make demo" and lines[2] == ". .venv/bin/activate"
    assert "activate" in (ROOT / "Makefile").read_text().split("\ndemo:", 1)[1].split("\n\n")[0]


@pytest.mark.timeout(240)
def test_start_here_runs_as_typed(tmp_path):
    """The commands after `make demo` and the activation, typed into bash in a clone's place (the
    example file copied beside), with `malt` found on PATH as the activation puts it there."""
    malt = Path(sys.executable).parent / "malt"
    assert malt.exists(), f"{malt}: the test runs in the project's virtual environment (make test)"
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "experiments.toml").write_text((ROOT / "examples" / "experiments.toml").read_text())
    script = "set -euo pipefail\n" + "\n".join(_start_here()[3:]) + "\n"
    env = {k: v for k, v in os.environ.items() if k not in ("MALT_REPO",)}
    env.update(PATH=f"{malt.parent}{os.pathsep}{os.environ['PATH']}", MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=220)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "one_error" in out and "mlknn" in out and "mllr" in out  # malt show
    assert "units done" in out  # malt results
    assert (tmp_path / "report" / "report.html").exists()
    assert len(re.findall(r"^sklearn-wine-semisupervised-\w+$", out, re.M)) == 1  # malt run's ids


def test_license_and_citation():
    """The licence pyproject declares is the one shipped; CITATION.cff is valid YAML naming malt and
    asking users to cite the models' papers too."""
    import tomllib

    import yaml  # a dependency of dask, in the test extra

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]  # an SPDX expression
    assert declared == "MIT" and (ROOT / "LICENSE").read_text().startswith("MIT License")
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["license"] == "MIT"
    assert citation["title"].startswith("malt") and citation["authors"]
    assert "papers of the models" in " ".join(citation["message"].split())
    assert any("Probabilistic Matrix Addition" in ref["title"] for ref in citation["references"])
