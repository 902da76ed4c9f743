"""Pages written from the code when the docs are built: the CLI reference (every command's own
``--help``) and the tasks with their options and metrics (their declarations)."""
from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner


def _literal(text: str) -> str:
    return "::\n\n" + "".join(f"   {line}\n" if line.strip() else "\n" for line in text.splitlines()) + "\n"


def _title(text: str, mark: str) -> str:
    return f"{text}\n{mark * len(text)}\n\n"


def cli_page() -> str:
    from malt.cli import main

    out = [".. This page is generated from `malt --help` when the docs are built; edit the commands.\n\n",
           _title("Command-line reference", "="),
           "Every command's own help, as ``malt COMMAND --help`` prints it. Every command takes "
           "``--repo PATH`` (default ``./results``, or ``$MALT_REPO``).\n\n"]
    runner = CliRunner()

    def walk(group: click.Group, path: tuple[str, ...]):
        for name, command in sorted(group.commands.items()):
            full = (*path, name)
            shown = runner.invoke(main, [*full, "--help"], terminal_width=100, prog_name="malt")
            out.append(_title("malt " + " ".join(full), "-"))
            out.append(_literal(shown.output))
            if isinstance(command, click.Group):
                walk(command, full)

    out.append(_title("malt", "-"))
    out.append(_literal(runner.invoke(main, ["--help"], terminal_width=100, prog_name="malt").output))
    walk(main, ())
    return "".join(out)


def _table(headers: list[str], rows: list[list[str]]) -> str:
    def cell(text) -> str:
        return " ".join(str(text).split()).replace("|", "\\|") or " "

    lines = [".. list-table::", "   :header-rows: 1", ""]
    for row in [headers, *rows]:
        lines.append("   * - " + cell(row[0]))
        lines += [f"     - {cell(value)}" for value in row[1:]]
    return "\n".join(lines) + "\n\n"


def tasks_page() -> str:
    from malt.tasks import tasks

    out = [".. This page is generated from the task declarations when the docs are built.\n\n",
           _title("Tasks and metrics", "="),
           "A task is a cross-validation protocol: its options (each a ``malt cv --NAME`` flag), the "
           "metrics it scores and the settings a figure may sweep. *Role* says what an option changes: "
           "``fitting`` options are part of every unit's key, ``scoring`` options only rescore stored "
           "predictions, ``count`` and ``repetition`` options repeat the protocol. A metric marked "
           "*percent* is stored as a fraction and shown ×100 everywhere (see :doc:`../conventions`).\n\n"]
    for name, cls in sorted(tasks().items()):
        out.append(_title(f"{name}", "-"))
        out.append(f"{cls.summary()}\n\n")
        roles = cls.option_roles()
        rows = [[f"``--{row['name'].replace('_', '-')}``", repr(row["default"]), f"{row['type']} {row['allowed']}",
                 roles[row["name"]], row["help"]] for row in cls.Params.describe()]
        if rows:
            out.append(_table(["flag", "default", "type", "role", "meaning"], rows))
        metrics = [[f"``{m.name}``", m.label, "percent" if m.percent else "as stored", f"{m.better} is better",
                    m.conventions or "—"] for m in cls.metrics]
        out.append(_table(["metric", "label", "shown", "direction", "conventions"], metrics))
        if cls.settings:
            out.append("Swept settings: " + ", ".join(f"``{s.name}`` ({s.axis_label()})" for s in cls.settings)
                       + ".\n\n")
    return "".join(out)


def write_generated_pages(folder: Path) -> None:
    """Write cli.rst and tasks.rst into ``folder`` (only when their text changed, so Sphinx rebuilds
    nothing it need not)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("cli.rst", cli_page()), ("tasks.rst", tasks_page())):
        path = folder / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
