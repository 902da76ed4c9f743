"""What every command shares: the --repo option, opening the repository it names, and a plain
aligned table on stdout."""
from __future__ import annotations

from pathlib import Path

import click

repo_option = click.option("--repo", "repo_path", type=click.Path(path_type=Path), envvar="MALT_REPO",
                           default=Path("results"), show_default=True, help="Repository folder (or $MALT_REPO).")


def open_repo(path: Path):
    """The repository at ``path`` (not created until something is written)."""
    from malt.repository.store import Repository

    return Repository(path)


def print_table(headers, rows) -> None:
    """``rows`` under ``headers`` in left-aligned columns, two spaces apart."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in rows:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())
