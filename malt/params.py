"""Parameters: one frozen dataclass per algorithm, declared once.

Validation, CLI parsing, JSON serialisation, stable hashing and the help listing all derive from
the declaration::

    @dataclass(frozen=True, kw_only=True)
    class Params(malt.params.Params):
        sweeps: int = param(500, "Gibbs sweeps after burn-in", Interval(1, None))
        sampler: str = param("blocked", "how G is sampled", Options("blocked", "single-site"))

Sweeps over values (``--param gamma=0.01,0.1``) belong to the experiment, not to this class:
`grid` expands them into several Params objects.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from malt.errors import InvalidParameterError


class Interval:
    """A numeric range; ``None`` for an open end. ``closed`` is 'both', 'left', 'right' or 'neither'."""

    def __init__(self, low: float | None, high: float | None, closed: str = "both"):
        self.low, self.high, self.closed = low, high, closed

    def __contains__(self, value) -> bool:
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        return True

    def __str__(self) -> str:
        left = "[" if self.closed in ("both", "left") and self.low is not None else "("
        right = "]" if self.closed in ("both", "right") and self.high is not None else ")"
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"{left}{low}, {high}{right}"

    def describe(self) -> str:
        return f"in the range {self}"


class Options:
    """A finite set of allowed values (strings, usually)."""

    def __init__(self, *values):
        self.values = tuple(values)

    def __contains__(self, value) -> bool:
        return value in self.values

    def __str__(self) -> str:
        return "{" + ", ".join(map(str, self.values)) + "}"

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


def param(default: Any, help: str, constraint: Interval | Options | None = None):
    """Declare one parameter: its default, a help line, and its allowed values."""
    return field(default=default, metadata={"help": help, "constraint": constraint})


_TYPE_NAMES = {int: "an int", float: "a float", bool: "a bool", str: "a str"}


def _base_type(annotation) -> tuple[type, bool]:
    """(scalar type, optional?) of an annotation such as ``float`` or ``float | None``."""
    args = typing.get_args(annotation)
    if args:
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            return non_none[0], len(non_none) < len(args)
    return annotation, False


@dataclass(frozen=True, kw_only=True)
class Params:
    """Base class of every algorithm's parameters (a frozen, keyword-only dataclass)."""

    _owner: ClassVar[str] = "this algorithm"

    def __post_init__(self):
        for f, kind, optional in self._fields():
            value = getattr(self, f.name)
            if value is None and optional:
                continue
            value = self._coerce(f.name, kind, value)
            object.__setattr__(self, f.name, value)
            constraint = f.metadata.get("constraint")
            if constraint is not None and value not in constraint:
                raise InvalidParameterError(
                    f"The '{f.name}' parameter of {self._owner} must be {_TYPE_NAMES.get(kind, kind)} "
                    f"{constraint.describe()}. Got {value!r} instead."
                )

    def _coerce(self, name: str, kind: type, value):
        ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if kind is float and ok and not math.isfinite(value):
            ok = False
        if not ok:
            raise InvalidParameterError(
                f"The '{name}' parameter of {self._owner} must be {_TYPE_NAMES.get(kind, kind)}. "
                f"Got {value!r} instead."
            )
        return value

    @classmethod
    def _fields(cls):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            kind, optional = _base_type(hints[f.name])
            yield f, kind, optional

    # ---- conversions -------------------------------------------------------------------------
    @classmethod
    def parse_value(cls, name: str, text: str):
        """Convert one command-line string to the declared type of field ``name``."""
        for f, kind, optional in cls._fields():
            if f.name != name:
                continue
            if optional and text.lower() in ("none", "null", ""):
                return None
            try:
                if kind is bool:
                    lowered = text.lower()
                    if lowered not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError(text)
                    return lowered in ("true", "1", "yes")
                if kind is int:
                    number = float(text)
                    if not number.is_integer():
                        raise ValueError(text)
                    return int(number)
                return kind(text)
            except ValueError:
                raise InvalidParameterError(
                    f"The '{name}' parameter of {cls._owner} must be {_TYPE_NAMES.get(kind, kind)}. "
                    f"Got {text!r} instead."
                ) from None
        raise InvalidParameterError(
            f"{cls._owner} has no parameter '{name}'. Its parameters are: "
            + (", ".join(cls.names()) or "(none)")
            + f". See `malt algorithms {cls._owner}`."
        )

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_strings(cls, assignments: Mapping[str, str]) -> "Params":
        return cls(**{k: cls.parse_value(k, v) for k, v in assignments.items()})

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> "Params":
        unknown = set(values) - set(cls.names())
        if unknown:
            cls.parse_value(sorted(unknown)[0], "")
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    def key(self) -> str:
        """Stable hash of the values (not of the code): equal values give equal keys."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def display(self, name: str) -> str:
        """Readable key ``name[k=v,...]`` listing only the values that differ from the defaults."""
        default = type(self)()
        changed = [f"{k}={v}" for k, v in sorted(self.to_dict().items()) if getattr(default, k) != v]
        return f"{name}[{','.join(changed)}]" if changed else name

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """One dict per parameter (name, type, default, allowed, help) for listings."""
        rows = []
        for f, kind, optional in cls._fields():
            constraint = f.metadata.get("constraint")
            rows.append({
                "name": f.name,
                "type": kind.__name__ + (" or None" if optional else ""),
                "default": f.default,
                "allowed": str(constraint) if constraint is not None else "",
                "help": f.metadata.get("help", ""),
            })
        return rows


@dataclass(frozen=True, kw_only=True)
class NoParams(Params):
    """For algorithms without parameters."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: the form every hash in malt is taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_jsonable)


def _jsonable(value):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def grid(cls: type[Params], assignments: Mapping[str, str]) -> list[Params]:
    """Expand ``{'gamma': '0.01,0.1'}`` into one Params per combination of comma-separated values."""
    names = list(assignments)
    choices = [[cls.parse_value(n, part.strip()) for part in assignments[n].split(",")] for n in names]
    return [cls(**dict(zip(names, combo))) for combo in itertools.product(*choices)]
