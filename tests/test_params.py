from dataclasses import dataclass

import pytest

from malt.errors import InvalidParameterError
from malt.params import Interval, Options, Params, When, grid, param


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
    with pytest.raises(InvalidParameterError, match="'mode' parameter of .* must be one of 'fast', 'exact'"):
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


@dataclass(frozen=True, kw_only=True)
class Listed(Params):
    k_grid: tuple[int, ...] = param((5, 10), "candidate neighbourhood sizes", Interval(1, None))
    alpha: float = param(0.5, "a rate", Interval(0, 1))


def test_list_valued_parameters_parse_validate_and_sweep_with_semicolons():
    assert Listed.from_strings({"k_grid": "5, 20,40"}).k_grid == (5, 20, 40)
    assert Listed(k_grid=[3]).k_grid == (3,)
    with pytest.raises(InvalidParameterError, match="'k_grid' parameter of .* must be a list of ints in the range"):
        Listed(k_grid=(5, 0))
    with pytest.raises(InvalidParameterError, match="must be a list of ints"):
        Listed.from_strings({"k_grid": "5,x"})
    combos = grid(Listed, {"k_grid": "5,10;20,40", "alpha": "0.1,0.2"})
    assert sorted((c.k_grid, c.alpha) for c in combos) == [((5, 10), 0.1), ((5, 10), 0.2), ((20, 40), 0.1),
                                                           ((20, 40), 0.2)]
    assert Listed.from_dict(Listed(k_grid=(7,)).to_dict()) == Listed(k_grid=(7,))
    assert Listed(k_grid=(7, 8)).display("x") == "x[k_grid=7,8]"


def test_key_hashes_only_values_that_differ_from_the_defaults():
    """A parameter added later at its default must leave the keys of the older settings unchanged."""

    @dataclass(frozen=True, kw_only=True)
    class Older(Params):
        alpha: float = param(0.2, "a rate", Interval(0, 1))

    @dataclass(frozen=True, kw_only=True)
    class Newer(Params):
        alpha: float = param(0.2, "a rate", Interval(0, 1))
        beta: int = param(3, "added later", Interval(0, None))

    assert Older().key() == Newer().key()
    assert Older(alpha=0.5).key() == Newer(alpha=0.5).key()
    assert Newer(beta=4).key() != Newer().key()


@dataclass(frozen=True, kw_only=True)
class Switched(Params):
    select: str = param("inner-cv", "a switch", Options("none", "inner-cv"))
    C: float = param(1.0, "used with select=none", Interval(0, None), active_when=When(select="none"))
    solver: str = param("cg", "a solver", Options("cg", "alternate"), active_when=When(task="missing"))
    relax: float = param(1.5, "alternate only", Interval(0, 2), active_when=When(solver="alternate"))
    rank: int = param(5, "a rank", Interval(1, None), active_when=When(select="none") | When(task="ratings"))


def test_a_parameter_given_while_its_switch_turns_it_off_is_refused_in_one_line():
    with pytest.raises(InvalidParameterError, match=r"^C is ignored while select='inner-cv'; pass --param select=none$"):
        Switched(C=0.1)
    assert Switched(select="none", C=0.1).C == 0.1
    with pytest.raises(InvalidParameterError, match=r"^C is ignored while select='inner-cv'"):
        grid(Switched, {"C": "0.1,1,10"})
    with pytest.raises(InvalidParameterError, match=r"^C is ignored"):  # given at its default: still refused
        grid(Switched, {"C": "1"})
    assert [p.C for p in grid(Switched, {"C": "0.1,1", "select": "none"})] == [0.1, 1.0]


def test_a_switch_that_is_itself_unused_turns_off_what_depends_on_it():
    Switched(solver="alternate", relax=1.0)  # without a task, the task condition may hold
    with pytest.raises(InvalidParameterError, match=r"^relax is ignored while solver='cg'; pass --param "
                                                    r"solver=alternate$"):
        Switched(relax=1.0)
    with pytest.raises(InvalidParameterError, match=r"^relax is ignored on the ratings task"):
        grid(Switched, {"relax": "1.0", "solver": "alternate"}, {"task": "ratings"})
    with pytest.raises(InvalidParameterError, match=r"^solver is ignored on the ratings task"):
        grid(Switched, {"solver": "alternate"}, {"task": "ratings"})
    grid(Switched, {"solver": "alternate", "relax": "1.0"}, {"task": "missing"})


def test_alternatives_either_of_which_turns_a_parameter_on():
    assert Switched(rank=3, select="none").rank == 3
    assert grid(Switched, {"rank": "3"}, {"task": "ratings"})[0].rank == 3
    with pytest.raises(InvalidParameterError, match=r"^rank is ignored while select='inner-cv'"):
        grid(Switched, {"rank": "3"}, {"task": "missing"})
    assert str(Switched.conditions()["rank"]) == "select=none or task=ratings"
    assert {row["name"]: row["active_when"] for row in Switched.describe()}["C"] == "select=none"


def test_active_values_resets_what_the_changes_turn_off():
    """How a selection makes one candidate of a Params with grids: unused fields back at their defaults."""
    chosen = Switched(select="none", C=0.1, solver="alternate", relax=1.0).active_values(select="inner-cv")
    assert (chosen.select, chosen.C, chosen.relax) == ("inner-cv", 1.0, 1.0)
    assert Switched(solver="alternate", relax=1.0).active_values(solver="cg").relax == 1.5
