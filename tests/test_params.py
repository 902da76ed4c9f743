from dataclasses import dataclass

import pytest

from malt.errors import InvalidParameterError
from malt.params import Interval, Options, Params, grid, param


@dataclass(frozen=True, kw_only=True)
class Example(Params):
    alpha: float = param(0.2, "a rate", Interval(0, 1, "neither"))
    k: int = param(5, "neighbours", Interval(1, None))
    mode: str = param("fast", "how", Options("fast", "exact"))
    cap: int | None = param(None, "optional cap", Interval(1, None))
    flag: bool = param(False, "a switch")


def test_validation_message_names_field_range_and_value():
    with pytest.raises(InvalidParameterError, match=r"The 'alpha' parameter of .* must be a float in the range "
                                                    r"\(0, 1\)\. Got 1\.5 instead\."):
        Example(alpha=1.5)
    with pytest.raises(InvalidParameterError, match="'mode'.*one of 'fast', 'exact'"):
        Example(mode="slow")
    with pytest.raises(InvalidParameterError, match="'k'.*must be an int"):
        Example(k=2.5)
    with pytest.raises(InvalidParameterError, match="'k'.*must be an int"):
        Example(k=True)


def test_cli_strings_parse_to_declared_types():
    p = Example.from_strings({"alpha": "0.5", "k": "7", "cap": "none", "flag": "yes"})
    assert (p.alpha, p.k, p.cap, p.flag) == (0.5, 7, None, True)
    with pytest.raises(InvalidParameterError, match="no parameter 'beta'"):
        Example.from_strings({"beta": "1"})
    with pytest.raises(InvalidParameterError, match="must be an int"):
        Example.from_strings({"k": "seven"})


def test_key_is_stable_and_depends_only_on_values():
    assert Example().key() == Example(alpha=0.2).key()
    assert Example(k=6).key() != Example().key()
    assert Example.from_dict(Example(k=3).to_dict()) == Example(k=3)
    assert Example(k=3, mode="exact").display("ex") == "ex[k=3,mode=exact]"
    assert Example().display("ex") == "ex"


def test_grid_expands_comma_separated_values():
    combos = grid(Example, {"alpha": "0.1,0.5", "mode": "fast,exact"})
    assert len(combos) == 4
    assert {(c.alpha, c.mode) for c in combos} == {(0.1, "fast"), (0.1, "exact"), (0.5, "fast"), (0.5, "exact")}
