"""What the commands share: the --repo option and the options of every command that runs units
(--jobs, --threads, --scheduler, --wait, --quiet), opening the repository, a plain aligned table."""
from __future__ import annotations

from pathlib import Path

import click


def checked_repo_path(ctx, param, value):
    """--repo as a Path; an empty one is refused (Path("") would be the current folder)."""
    if value is None:
        return None
    if not str(value).strip():
        from malt.errors import RepositoryError

        raise RepositoryError("--repo is empty; pass the repository folder (for example --repo results).")
    return Path(value)


repo_option = click.option("--repo", "repo_path", type=click.Path(), envvar="MALT_REPO", callback=checked_repo_path,
                           default="results", show_default=True, help="Repository folder (or $MALT_REPO).")


jobs_option = click.option("--jobs", type=int, default=1, show_default=True,
                           help="Units run in this many local worker processes.")
threads_option = click.option("--threads", type=int,
                              help="BLAS threads per unit (default: the idle cores, shared by the jobs).")
scheduler_option = click.option("--scheduler", metavar="tcp://HOST:PORT",
                                help="Run the units on this Dask scheduler instead (pip install 'malt[distributed]').")
wait_option = click.option("--wait", is_flag=True,
                           help="Wait for a lock another malt holds on the repository instead of failing at once.")
quiet_option = click.option("--quiet", is_flag=True, help="Print only errors and the experiment id(s).")


def run_options(func):
    """--jobs, --threads, --scheduler, --wait and --quiet: how units are run (`cv`, `run`, `rerun`)."""
    for decorator in reversed([jobs_option, threads_option, scheduler_option, wait_option, quiet_option]):
        func = decorator(func)
    return func


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
