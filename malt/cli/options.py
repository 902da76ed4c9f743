"""What the commands share: the --repo option and the options of every command that runs units
(--jobs, --threads, --scheduler, --wait, --quiet, --unit-timeout), opening the repository,
``name=value`` flags, durations, a plain aligned table."""
from __future__ import annotations

from pathlib import Path

import click

from malt.errors import InvalidParameterError


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
unit_timeout_option = click.option(
    "--unit-timeout", "unit_timeout", metavar="DURATION",
    help="Stop a unit that runs longer than this (90s, 10m, 2h): it fails with that reason and the others go on.")


def run_options(func):
    """--jobs, --threads, --scheduler, --wait, --quiet and --unit-timeout: how units are run (`cv`, `run`,
    `rerun`)."""
    for decorator in reversed([jobs_option, threads_option, scheduler_option, wait_option, quiet_option,
                               unit_timeout_option]):
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


def assignments(items: tuple[str, ...], flag: str) -> dict[str, str]:
    """``name=value`` items of a repeatable flag as a dict; a name given twice with different values is
    refused, never a silent last-one-wins."""
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise InvalidParameterError(f"{flag} expects name=value, got {item!r}.")
        name = name.strip()
        if name in out and out[name] != value.strip():
            raise InvalidParameterError(given_twice(name, out[name], value.strip(), flag))
        out[name] = value.strip()
    return out


def given_twice(name: str, first: str, second: str, flag: str) -> str:
    """The message for a --param or task option given twice."""
    if flag == "--param":
        return (f"--param {name} is given twice ({first!r}, {second!r}); to sweep it give the values once: "
                f"--param {name}={first},{second}.")
    return (f"task option {name} is given twice ({first!r}, {second!r}); an experiment has one value of each task "
            f"option: run `malt cv` once per value.")


def duration_seconds(text: str | None) -> float | None:
    """'90s', '10m', '1.5h' or a number of seconds, as seconds (None stays None)."""
    if text is None:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    value = text.strip().lower()
    scale = units.get(value[-1:], None)
    try:
        seconds = float(value[:-1] if scale else value) * (scale or 1)
    except ValueError:
        raise InvalidParameterError(f"--unit-timeout expects a duration such as 90s, 10m or 2h, got {text!r}.") from None
    if not seconds > 0:
        raise InvalidParameterError(f"--unit-timeout must be positive, got {text!r}.")
    return seconds
