"""The documentation pages generated from the code (the full site is built with warnings as errors by
`make docs`, which CI runs after the suite): the CLI reference holds every command's own help, the
tasks page every task, option and metric with its unit; every page the index names exists."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parents[1]


def _pages():
    spec = importlib.util.spec_from_file_location("reference_pages", ROOT / "docs" / "reference_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_holds_every_commands_help():
    from malt.cli import main

    page = _pages().cli_page()

    def names(group, prefix=()):
        for name, command in group.commands.items():
            yield " ".join(("malt", *prefix, name))
            if isinstance(command, click.Group):
                yield from names(command, (*prefix, name))

    for name in names(main):
        assert f"\n{name}\n" in page and f"Usage: {name} [OPTIONS]" in page, name
    assert page.count("Example") >= len(list(names(main)))


def test_tasks_page_lists_every_option_and_metric_with_its_unit():
    from malt.tasks import tasks

    page = _pages().tasks_page()
    for name, cls in tasks().items():
        assert f"\n{name}\n" in page
        for row in cls.Params.describe():
            assert f"``--{row['name'].replace('_', '-')}``" in page
        for metric in cls.metrics:
            line = next(line for line in page.splitlines()[page.splitlines().index(name):]
                        if line.strip() == f"* - ``{metric.name}``")
            assert line
    assert "percent" in page and "as stored" in page


def test_every_page_of_the_index_exists():
    docs = ROOT / "docs"
    index = (docs / "index.rst").read_text()
    entries = re.findall(r"^   ([\w/-]+)$", index, re.M)
    assert {"getting-started", "api", "conventions", "generated/cli", "generated/tasks", "gallery/index"} <= set(entries)
    generated = {"generated/cli", "generated/tasks", "gallery/index"}  # written when the docs are built
    for entry in set(entries) - generated:
        assert (docs / f"{entry}.rst").exists(), entry
    assert len(list((docs / "examples").glob("plot_*.py"))) >= 3
