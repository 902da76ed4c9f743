"""The command line: `malt cv`, `rerun`, `show`, `plot`, ... as click commands.

A thin layer over `malt.api`, so the CLI and Python never disagree: a command parses its flags,
calls the API, and prints. ``commands`` holds the experiment commands, ``data`` the catalogue and
cache commands, ``figures`` plot/table/report, ``experiment_files`` the `malt run` file format and
``options`` what they share.

May import: `malt.api` and every part below it (engine, results, tasks, datasets, repository,
the vocabulary). Nothing in malt imports the command line.
"""
from malt.cli.commands import main

__all__ = ["main"]


MOVED_NAMES = {"repo_option": "repo_option", "_repo": "open_repo", "_print_table": "print_table"}
"""Names the flat module `malt.cli` had, now public in `malt.cli.options` (kept for one release)."""


def __getattr__(name):
    if name in MOVED_NAMES:
        from malt import moved

        moved.warn_moved(f"malt.cli.{name}", f"malt.cli.options.{MOVED_NAMES[name]}")
        from malt.cli import options

        globals()[name] = value = getattr(options, MOVED_NAMES[name])  # warned once
        return value
    raise AttributeError(f"module 'malt.cli' has no attribute {name!r}")
