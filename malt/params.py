"""Parameters: one frozen dataclass per algorithm, declared once.

Validation, CLI parsing, JSON serialisation, stable hashing and the help listing all derive from
the declaration::

    @dataclass(frozen=True, kw_only=True)
    class Params(malt.params.Params):
        sweeps: int = param(500, "Gibbs sweeps after burn-in", Interval(1, None))
        sampler: str = param("blocked", "how G is sampled", Options("blocked", "single-site"))

A list-valued parameter is annotated ``tuple[T, ...]`` and written with commas on the command
line (``--param k_grid=5,10,20``); its constraint applies to every element.

Sweeps over values (``--param gamma=0.01,0.1``) belong to the experiment, not to this class:
`grid` expands them into several Params objects (alternatives of a list-valued parameter are
separated by ``;``: ``--param "k_grid=5,10;20,40"``).

Identity: `key` hashes only the values that differ from the defaults, so a parameter added later
at a default that keeps the old behaviour leaves every stored key as it was.

Activity: a parameter used only in some modes says so with ``active_when`` (a `When`)::

    C: float = param(1.0, "used as given with select=none", Interval(0, None), active_when=When(select="none"))

and is refused, in one line naming the switch, whenever it is given while inactive ("C is ignored
while select='inner-cv'; pass --param select=none"), so no setting is a silent no-op. A field that
depends on an inactive switch is inactive too.

Bounds the data set: a parameter that cannot exceed a size of the data says so with ``max_from``::

    k: int = param(10, "neighbours", Interval(1, None), max_from="train_rows-1")

naming a size the task reports for a dataset (`malt.tasks.base.Task.sizes`: ``train_rows``,
``points``, ``min_side``, ``train_docs``, ``inner_items`` ...), less an optional offset. Before any unit
runs, a value above it (an element above it, for a list) is refused in one line naming the setting,
the data's size and the largest valid value (`Params.check_bounds`); a task without that size has no
such bound, and an unused parameter is not checked.

Some values above a bound are lowered to it instead, with a one-line notice recorded in the unit's
diagnostics (`Params.within_bounds`, applied by the engine as each unit starts; ``malt show
--diagnostics`` prints it): every field declared ``clamp=True`` (a cap the literature defines, such
as a candidate list capped at the data's size), and any field left at its default (a value the user
did not ask for is not refused; one typed at the default value is, as `check_bounds` is told). A size
may also carry a softer limit (`Size.notice_above`): a value above it runs as given, with a notice
(scikit-learn's StratifiedKFold warns when a class has fewer members than folds).
"""
from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import itertools
import json
import math
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping

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


class Includes:
    """A required value of a list-valued parameter: the list holds ``value`` (``kernel_grid`` with 'rbf')."""

    def __init__(self, value):
        self.value = value


class When:
    """When a parameter is used: required values of other parameters, or of the run's context
    (``task='ratings'``). ``When(a=1, b=Options("x", "y"))`` requires both; ``w1 | w2`` either;
    ``w1 & w2`` both. A required value is a value (compared with ==), an `Options` of values, or
    `Includes` (a list that holds a value)."""

    def __init__(self, **required):
        self.alternatives: tuple[tuple[tuple[str, Any], ...], ...] = (tuple(required.items()),)

    @classmethod
    def _of(cls, alternatives) -> "When":
        out = cls()
        out.alternatives = tuple(alternatives)
        return out

    def __or__(self, other: "When") -> "When":
        return When._of(self.alternatives + other.alternatives)

    def __and__(self, other: "When") -> "When":
        return When._of(a + b for a in self.alternatives for b in other.alternatives)

    def names(self) -> set[str]:
        return {name for alternative in self.alternatives for name, _ in alternative}

    def __str__(self) -> str:
        return " or ".join(" and ".join(f"{name}={_required(value)}" for name, value in alternative)
                           for alternative in self.alternatives)


def _required(value) -> str:
    if isinstance(value, Options):
        return "|".join(_show(v) for v in value.values)
    if isinstance(value, Includes):
        return f"(with {_show(value.value)})"
    return "(empty)" if value == () else _show(value)


def _meets(value, required) -> bool:
    if isinstance(required, Includes):
        return required.value in (value or ())
    return value in required if isinstance(required, Options) else value == required


def _wanted(required, current=None):
    if isinstance(required, Includes):
        return tuple(current or ()) + (required.value,)
    return required.values[0] if isinstance(required, Options) else required


def param(default: Any, help: str, constraint: Interval | Options | None = None, *, scoring: bool = False,
          count: bool = False, repetition: bool = False, active_when: When | None = None,
          max_from: str | None = None, clamp: bool = False, execution: bool = False):
    """Declare one parameter: its default, a help line, its allowed values and when it is used.

    For task options: ``scoring`` marks an option that only changes how stored predictions are
    scored (precision@k's k), so changing it reuses the predictions instead of refitting; ``count``
    one that only says how many repetitions to plan (run i is the same whatever the count), so
    raising it computes only the new ones; ``repetition`` one that repeats the protocol differently
    (a seed), so a published table is matched whatever its value (counts are repetitions too).

    ``active_when``: the condition under which the parameter is used (see `When`); it joins the
    conditions the Params class implies (`Params.implied_condition`). Giving the parameter while
    the condition fails is refused.

    ``max_from``: the size of the data the value may not exceed, ``"train_rows"`` or ``"train_rows-1"``
    (see `Params.check_bounds`). ``clamp``: a value above it is lowered to it (every entry of a list,
    repeats dropped) with a notice in the unit's diagnostics rather than refused (`Params.within_bounds`).

    ``execution``: the parameter says how a fit runs (where its blocks are solved), never what it
    computes — the same numbers for every value — so it is left out of `Params.key`: it changes no
    unit's key, seed or experiment id, and results stored without it are reused."""
    if max_from is not None:
        _bound(max_from)  # a typo fails at declaration, not at the first run
    return field(default=default, metadata={"help": help, "constraint": constraint, "scoring": scoring,
                                            "count": count, "repetition": repetition or count,
                                            "active_when": active_when, "max_from": max_from,
                                            "clamp": clamp, "execution": execution})


def _bound(text: str) -> tuple[str, int]:
    """``"train_rows-1"`` -> ("train_rows", 1): the size a bound reads and what it takes off."""
    size, minus, offset = text.partition("-")
    if not size.isidentifier() or (minus and not offset.isdigit()):
        raise TypeError(f"max_from expects a size name with an optional '-N', got {text!r}")
    return size, int(offset or 0)


@dataclass(frozen=True)
class Size:
    """One size of a dataset under a task's options: its value and what it counts, phrased to be
    followed by "is N" ("the number of training rows in the smallest fold of 'emotions'")."""

    value: int
    what: str
    notice_above: "Size | None" = None
    """A smaller size a value may exceed with only a notice in the unit's diagnostics (the least
    populated class of a stratified inner CV), or None."""


_TYPE_NAMES = {int: "an int", float: "a float", bool: "a bool", str: "a str"}
_CHECK_ACTIVE = contextvars.ContextVar("malt_check_active", default=True)
"""False while `Params.as_stored` reads an old setting."""


@dataclass(frozen=True)
class FieldInfo:
    """What the declaration says about one parameter (computed once per Params class)."""

    field: dataclasses.Field
    kind: type  # the scalar type, or the element type of a list-valued parameter
    optional: bool
    is_list: bool = False

    @property
    def name(self) -> str:
        return self.field.name

    def type_name(self) -> str:
        name = _TYPE_NAMES.get(self.kind, str(self.kind))
        return f"a list of {name.split()[-1]}s" if self.is_list else name


def _field_info(f: dataclasses.Field, annotation) -> FieldInfo:
    """Scalar type, optional? and list-valued? of ``float``, ``float | None`` or ``tuple[int, ...]``."""
    optional = False
    args = typing.get_args(annotation)
    if args and typing.get_origin(annotation) is not tuple:
        non_none = [a for a in args if a is not type(None)]
        if len(non_none) == 1:
            optional = len(non_none) < len(args)
            annotation = non_none[0]
    if typing.get_origin(annotation) is tuple:
        return FieldInfo(f, typing.get_args(annotation)[0], optional, True)
    return FieldInfo(f, annotation, optional)


@dataclass(frozen=True, kw_only=True)
class Params:
    """Base class of every algorithm's parameters (a frozen, keyword-only dataclass)."""

    _owner: ClassVar[str] = "this algorithm"
    _task_options: ClassVar[bool] = False  # a task's options are --NAME flags, not --param NAME=VALUE

    def __post_init__(self):
        for info in self._fields():
            value = getattr(self, info.name)
            if value is None and info.optional:
                continue
            if info.is_list:
                if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
                    raise InvalidParameterError(f"The '{info.name}' parameter of {self._owner} must be "
                                                f"{info.type_name()}. Got {value!r} instead.")
                value = tuple(self._coerce(info.name, info.kind, v) for v in value)
                elements = value
            else:
                value = self._coerce(info.name, info.kind, value)
                elements = (value,)
            object.__setattr__(self, info.name, value)
            constraint = info.field.metadata.get("constraint")
            for element in elements:
                if constraint is not None and element not in constraint:
                    raise InvalidParameterError(
                        f"The '{info.name}' parameter of {self._owner} must be "
                        f"{'' if isinstance(constraint, Options) else info.type_name() + ' '}"
                        f"{constraint.describe()}. Got {value!r} instead."
                    )
        if _CHECK_ACTIVE.get():
            self.check_active(self.changed())

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
    def _fields(cls) -> tuple[FieldInfo, ...]:
        found = cls.__dict__.get("_field_infos")
        if found is None:  # resolving annotations is slow: once per class, not per instance
            hints = typing.get_type_hints(cls)
            found = tuple(_field_info(f, hints[f.name]) for f in dataclasses.fields(cls))
            type.__setattr__(cls, "_field_infos", found)
        return found

    # ---- activity ----------------------------------------------------------------------------
    @classmethod
    def implied_condition(cls, name: str) -> When | None:
        """The condition a family of Params implies for field ``name`` by convention (None: always
        used); `malt.numerics.selection.InnerCVParams` declares its selection vocabulary here."""
        return None

    @classmethod
    def also_used_when(cls, name: str) -> When | None:
        """Where a subclass uses an inherited field beyond its declared condition (None: nowhere else);
        OR-ed with it. E.g. pma-map's inner CV builds K1 of several families, so their width is used
        whatever ``k1`` says."""
        return None

    @classmethod
    def conditions(cls) -> dict[str, When]:
        """Field name -> the condition under which it is used (fields used always are absent)."""
        found = cls.__dict__.get("_conditions")
        if found is None:
            found = {}
            for f in dataclasses.fields(cls):
                implied, declared = cls.implied_condition(f.name), f.metadata.get("active_when")
                condition = implied & declared if implied and declared else implied or declared
                extra = cls.also_used_when(f.name)
                if condition is not None and extra is not None:
                    condition = condition | extra
                if condition is not None:
                    found[f.name] = condition
            type.__setattr__(cls, "_conditions", found)
        return found

    def inactive_reason(self, name: str, context: Mapping[str, Any] | None = None,
                        _seen: frozenset = frozenset()) -> tuple[str, Any, Any] | None:
        """None when field ``name`` is used with these values; else (the switch that turns it off, the
        switch's value, what the switch must be: a value or an `Options`). A switch that is itself unused
        turns off what depends on it; a context entry (``task``) missing from ``context`` is assumed to
        allow it."""
        condition = self.conditions().get(name)
        if condition is None or name in _seen:
            return None
        context = context or {}
        fields = set(self.names())
        first = None
        for alternative in condition.alternatives:
            reason = None
            for key, required in alternative:
                if key in fields:
                    reason = self.inactive_reason(key, context, _seen | {name})
                    value = getattr(self, key)
                elif key in context:
                    value = context[key]
                else:
                    continue
                if reason is None and not _meets(value, required):
                    reason = (key, value, required)
                if reason is not None:
                    break
            if reason is None:
                return None
            first = first or reason
        return first

    def check_active(self, given: Iterable[str] = (), context: Mapping[str, Any] | None = None) -> None:
        """Refuse (InvalidParameterError, one line naming the switch) any of the ``given`` fields that
        these values leave unused."""
        for name in given:
            reason = self.inactive_reason(name, context)
            if reason is None:
                continue
            switch, value, required = reason
            if switch == "task":
                tasks = required.values if isinstance(required, Options) else (required,)
                raise InvalidParameterError(f"{name} is ignored on the {value} task ({self._owner} uses it on the "
                                            f"{' and '.join(tasks)} task{'s' if len(tasks) > 1 else ''}); drop "
                                            f"--param {name}.")
            if self._task_options:
                wanted = _wanted(required, value)
                raise InvalidParameterError(f"{_flag(name, getattr(self, name))} is ignored while {switch}={_show(value)} "
                                            f"({self._owner} uses it with {switch}={_show(wanted)}); drop "
                                            f"{_flag(name)} or pass {_flag(switch, wanted)}.")
            raise InvalidParameterError(f"{name} is ignored while {switch}={value!r}; pass --param "
                                        f"{switch}={_show(_wanted(required, value))}")

    # ---- bounds from the data ----------------------------------------------------------------
    @classmethod
    def bounds(cls) -> dict[str, tuple[str, int]]:
        """Field name -> (size name, offset) of every field declared with ``max_from``."""
        return {f.name: _bound(f.metadata["max_from"]) for f in dataclasses.fields(cls) if f.metadata.get("max_from")}

    def _bounded(self, sizes: Mapping[str, Size], context: Mapping[str, Any] | None):
        """(name, value, Size, largest valid value) of every used field whose size the task reports."""
        for name, (size, offset) in self.bounds().items():
            value = getattr(self, name)
            if size in sizes and value is not None and self.inactive_reason(name, context) is None:
                yield name, value, sizes[size], sizes[size].value - offset

    def _clamps(self, name: str, largest: int, given: Iterable[str] = ()) -> bool:
        """Whether field ``name`` above ``largest`` is lowered to it (declared ``clamp``, or left at its
        default and not in ``given``) rather than refused; never below the smallest value its constraint
        allows."""
        f = self.__dataclass_fields__[name]
        constraint = f.metadata.get("constraint")
        if isinstance(constraint, Interval) and constraint.low is not None and largest not in constraint:
            return False
        return bool(f.metadata.get("clamp")) or (name not in given and getattr(self, name) == f.default)

    def check_bounds(self, sizes: Mapping[str, Size], context: Mapping[str, Any] | None = None,
                     given: Iterable[str] = ()) -> None:
        """Refuse (InvalidParameterError, one line) a used field above the size of the data it is bound
        by, unless it is clamped (`within_bounds`): ``sizes`` is what `Task.sizes` reports; ``given``
        the names the user typed (one typed at its default value is refused too). Cost: one comparison
        per bounded field."""
        given = set(given)
        for name, value, size, largest in self._bounded(sizes, context):
            over = [v for v in (value if isinstance(value, tuple) else (value,)) if v > largest]
            if over and not self._clamps(name, largest, given):
                shown = _flag(name, value) if self._task_options else f"--param {name}={_show(value)}"
                entry = f" (its entry {over[0]})" if isinstance(value, tuple) else ""
                raise InvalidParameterError(f"{shown}{entry} is more than the data allow: {size.what} is "
                                            f"{size.value}, so the largest valid {name}{' entry' if entry else ''} "
                                            f"is {largest}.")

    def within_bounds(self, sizes: Mapping[str, Size],
                      context: Mapping[str, Any] | None = None) -> tuple["Params", list[str]]:
        """These values with every clamped field above its size lowered to it (a list's entries each,
        repeats dropped, order kept), and one notice line per field lowered or above its size's
        `Size.notice_above`: the one clamp path, run as a unit starts (after `check_bounds` refused the
        rest at planning). Cost: one comparison per bounded field."""
        changes, notices = {}, []
        for name, value, size, largest in self._bounded(sizes, context):
            values = value if isinstance(value, tuple) else (value,)
            if any(v > largest for v in values) and self._clamps(name, largest):
                low = tuple(dict.fromkeys(min(v, largest) for v in values))
                changes[name] = low if isinstance(value, tuple) else low[0]
                entry = " entry" if isinstance(value, tuple) else ""
                why = "" if self.__dataclass_fields__[name].metadata.get("clamp") else " (its default)"
                notices.append(f"{name}={_show(value)}{why} lowered to {_show(changes[name])}: {size.what} is "
                               f"{size.value}, so the largest valid {name}{entry} is {largest}.")
            elif size.notice_above is not None and max(values) > size.notice_above.value:
                soft = size.notice_above
                notices.append(f"{name}={_show(value)} is more than {soft.what} ({soft.value}): some of the "
                               f"{name.replace('_', ' ')} hold none of them; run as given.")
        return (self.derived(**changes) if changes else self), notices

    def active_values(self, **changes) -> "Params":
        """A copy with ``changes``, every field they leave unused back at its default (how a selection
        turns a Params with grids into one candidate: select='none' and the chosen values)."""
        values = {**self.to_dict(), **changes}
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        for _ in range(len(defaults)):
            probe = _unchecked(type(self), values)
            unused = {k for k in values if values[k] != defaults[k] and probe.inactive_reason(k)}
            if not unused:
                break
            values.update({k: defaults[k] for k in unused})
        return type(self)(**values)

    # ---- conversions -------------------------------------------------------------------------
    @classmethod
    def parse_value(cls, name: str, text: str):
        """Convert one command-line string to the declared type of field ``name``."""
        for info in cls._fields():
            if info.name != name:
                continue
            if info.optional and text.lower() in ("none", "null", ""):
                return None
            try:
                if info.is_list:
                    return tuple(_parse_scalar(info.kind, part.strip()) for part in text.split(",") if part.strip())
                return _parse_scalar(info.kind, text)
            except ValueError:
                raise InvalidParameterError(
                    f"The '{name}' parameter of {cls._owner} must be {info.type_name()}. Got {text!r} instead."
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

    def derived(self, **changes) -> "Params":
        """A copy with ``changes`` for an algorithm's own use (its refits with another decision rule):
        values are validated, activity is not checked again (the setting was, when it was given)."""
        token = _CHECK_ACTIVE.set(False)
        try:
            return dataclasses.replace(self, **changes)
        finally:
            _CHECK_ACTIVE.reset(token)

    @classmethod
    def as_stored(cls, values: Mapping[str, Any]) -> "Params":
        """`from_dict` of a setting an older malt stored, even one today's declarations refuse (a field
        its mode ignores): for reading and converting old results, never for running them."""
        token = _CHECK_ACTIVE.set(False)
        try:
            return cls.from_dict(values)
        finally:
            _CHECK_ACTIVE.reset(token)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    def changed(self) -> dict[str, Any]:
        """The values that differ from the declared defaults (what identifies a setting)."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}
        return {k: v for k, v in self.to_dict().items() if v != defaults[k]}

    def key(self) -> str:
        """Stable hash of the values that differ from the defaults (not of the code): equal values
        give equal keys, and a parameter added at its default leaves every key unchanged. Execution
        parameters (``param(..., execution=True)``) are left out: they never change the numbers."""
        execution = {f.name for f in dataclasses.fields(self) if f.metadata.get("execution")}
        changed = {k: v for k, v in self.changed().items() if k not in execution}
        return hashlib.sha256(canonical_json(changed).encode()).hexdigest()[:16]

    def display(self, name: str) -> str:
        """Readable key ``name[k=v,...]`` listing only the values that differ from the defaults."""
        changed = [f"{k}={_show(v)}" for k, v in sorted(self.changed().items())]
        return f"{name}[{','.join(changed)}]" if changed else name

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """One dict per parameter (name, type, default, allowed, help, when it is used) for listings."""
        rows = []
        conditions = cls.conditions()
        for info in cls._fields():
            constraint = info.field.metadata.get("constraint")
            kind = f"list of {info.kind.__name__}" if info.is_list else info.kind.__name__
            rows.append({
                "name": info.name,
                "type": kind + (" or None" if info.optional else ""),
                "default": info.field.default,
                "allowed": str(constraint) if constraint is not None else "",
                "help": info.field.metadata.get("help", ""),
                "active_when": str(conditions[info.name]) if info.name in conditions else "",
            })
        return rows


def _parse_scalar(kind: type, text: str):
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


def _flag(name: str, value: Any = None) -> str:
    """A task option as its command-line flag: ``--split given``, ``--stratify-folds``."""
    flag = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return flag if value else f"--no-{name.replace('_', '-')}"
    return flag if value is None else f"{flag} {_show(value)}"


def _show(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


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


def _unchecked(cls: type[Params], values: Mapping[str, Any]) -> Params:
    """An instance holding ``values`` as given (no validation): for asking what they would leave unused."""
    probe = object.__new__(cls)
    for name, value in values.items():
        object.__setattr__(probe, name, value)
    return probe


def grid(cls: type[Params], assignments: Mapping[str, str], context: Mapping[str, Any] | None = None) -> list[Params]:
    """Expand ``{'gamma': '0.01,0.1'}`` into one Params per combination of comma-separated values
    (``;``-separated for a list-valued parameter, whose own elements are comma-separated). A given
    parameter that its combination leaves unused is refused, even at its default value; ``context``
    (``{'task': 'ratings'}``) lets conditions on the task be checked too."""
    lists = {info.name for info in cls._fields() if info.is_list}
    names = list(assignments)
    choices = [[cls.parse_value(n, part.strip()) for part in assignments[n].split(";" if n in lists else ",")]
               for n in names]
    out = []
    for combo in itertools.product(*choices):
        token = _CHECK_ACTIVE.set(False)  # checked below, knowing the task
        try:
            params = cls(**dict(zip(names, combo)))
        finally:
            _CHECK_ACTIVE.reset(token)
        params.check_active(dict.fromkeys([*names, *params.changed()]), context)
        out.append(params)
    return out
