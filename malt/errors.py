"""Errors a user can act on.

Every exception that reaches the command line as a one-line message derives from `MaltError`.
Anything else escaping the CLI is a bug in malt and is shown with its traceback.
"""
from __future__ import annotations

import difflib


class MaltError(Exception):
    """An error caused by the user's input; its message says what is wrong and how to fix it."""


class InvalidParameterError(MaltError, ValueError):
    """A parameter value of the wrong type or outside its allowed range."""


class UnknownNameError(MaltError, KeyError):
    """An algorithm, dataset, task or experiment name that does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DataError(MaltError, ValueError):
    """Malformed or unusable data: a broken file, NaN in features, wrong shapes."""


class RepositoryError(MaltError):
    """A repository that is missing, locked by another run, or damaged."""


def unknown_name(kind: str, name: str, known, hint: str = "") -> UnknownNameError:
    """Build the standard 'unknown X' error with close-name suggestions."""
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    message = f"Unknown {kind} '{name}'."
    if close:
        message += " Did you mean " + " or ".join(f"'{c}'" for c in close) + "?"
    if hint:
        message += f" {hint}"
    return UnknownNameError(message)
