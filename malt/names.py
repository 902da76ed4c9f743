"""The one rule for names that become file or folder names (datasets, imports, experiment ids).

Kept free of numeric imports: every command that opens a repository checks names.
"""
from __future__ import annotations

import os
import re

from malt.errors import InvalidParameterError

NAME_MAX = 100
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def validate_name(kind: str, name: str) -> str:
    """Check a name that becomes part of a file or folder name (a dataset, an imported name, ...):
    1 to 100 of letters, digits, '.', '_', '+', '-', starting with a letter or digit; no path
    separator, no '..', not absolute. Returns the name; raises InvalidParameterError saying what is
    wrong and what to choose instead."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidParameterError(f"The {kind} name is empty; choose a name such as 'my-data'.")
    shown = repr(name) if len(name) <= 60 else repr(name[:60]) + f"… ({len(name)} characters)"
    if len(name) > NAME_MAX:
        raise InvalidParameterError(f"The {kind} name {shown} is longer than {NAME_MAX} characters; choose a "
                                    "shorter one.")
    if "/" in name or "\\" in name or os.path.isabs(name):
        raise InvalidParameterError(f"The {kind} name {shown} contains a path separator; a name is one word such "
                                    "as 'my-data'.")
    if ".." in name:
        raise InvalidParameterError(f"The {kind} name {shown} contains '..'; choose a name such as 'my-data'.")
    if not _NAME.fullmatch(name):
        bad = next((c for c in name if not (c.isascii() and (c.isalnum() or c in "._+-"))), name[0])
        raise InvalidParameterError(f"The {kind} name {shown} contains {bad!r}; use letters, digits, '.', '_', '+' "
                                    "and '-', starting with a letter or digit.")
    return name
