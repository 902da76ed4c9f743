import re
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


# ---- bounds from the data ------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class Bounded(Params):
    select: str = param("none", "switch", Options("none", "grid"))
    k: int = param(5, "neighbours", Interval(1, None), max_from="train_rows-1", active_when=When(select="none"))
    ks: tuple[int, ...] = param((2, 3), "candidates", Interval(1, None), max_from="train_rows")
    rank: int = param(2, "factors", Interval(1, None), max_from="min_side")


def test_a_value_above_its_size_is_refused_naming_setting_size_and_largest_valid():
    from malt.params import Size

    sizes = {"train_rows": Size(8, "the number of training rows in the smallest fold of 'toy'")}
    Bounded(k=7).check_bounds(sizes)  # 7 = 8 − 1 neighbours besides the row itself
    with pytest.raises(InvalidParameterError, match=r"^--param k=8 is more than the data allow: the number of "
                                                    r"training rows in the smallest fold of 'toy' is 8, so the "
                                                    r"largest valid k is 7\.$"):
        Bounded(k=8).check_bounds(sizes)
    with pytest.raises(InvalidParameterError, match=r"^--param ks=2,9 \(its entry 9\) is more than the data allow: "
                                                    r".* is 8, so the largest valid ks entry is 8\.$"):
        Bounded(ks=(2, 9)).check_bounds(sizes)  # each element of a list
    Bounded.as_stored({"select": "grid", "k": 100}).check_bounds(sizes)  # unused: not checked (refused as given)
    Bounded(rank=100).check_bounds(sizes)  # a size the task does not report: no bound there


@dataclass(frozen=True, kw_only=True)
class Capped(Params):
    k: int = param(5, "neighbours", Interval(1, None), max_from="train_rows-1")
    ks: tuple[int, ...] = param((2, 6, 9), "candidates, clamped", Interval(1, None), max_from="train_rows",
                                clamp=True)
    folds: int = param(5, "inner folds", Interval(2, None), max_from="items")


def test_a_default_or_a_clamped_field_is_lowered_with_one_notice_and_a_typed_value_is_refused():
    """The clamp path: a clamp=True list is lowered entry by entry (repeats dropped, order kept) even as
    typed; a default above its size is lowered, typed at the same value it is refused; each lowering is one
    notice line; a field already within its size is left as it is and says nothing."""
    from malt.params import Size

    sizes = {"train_rows": Size(4, "the number of training rows of 'toy'")}
    low, notices = Capped().within_bounds(sizes)
    assert (low.k, low.ks) == (3, (2, 4))
    assert notices == ["k=5 (its default) lowered to 3: the number of training rows of 'toy' is 4, so the largest "
                       "valid k is 3.",
                       "ks=2,6,9 lowered to 2,4: the number of training rows of 'toy' is 4, so the largest valid ks "
                       "entry is 4."]
    Capped().check_bounds(sizes)  # nothing refused: both are lowered as the unit starts
    Capped(ks=(9, 1)).check_bounds(sizes, given={"ks"})  # clamp=True: lowered even as typed
    assert Capped(ks=(9, 1)).within_bounds(sizes)[0].ks == (4, 1)
    with pytest.raises(InvalidParameterError, match=r"^--param k=5 is more than the data allow: .* largest valid k "
                                                    r"is 3\.$"):
        Capped().check_bounds(sizes, given={"k"})  # typed, even at the default value
    with pytest.raises(InvalidParameterError, match=r"^--param k=4 "):
        Capped(k=4).check_bounds(sizes)
    ok = Capped(k=2, ks=(1,))
    assert ok.within_bounds(sizes) == (ok, [])
    default_list = Bounded(select="grid").within_bounds({"train_rows": Size(2, "the rows")})  # not clamp=True
    assert default_list[0].ks == (2,) and default_list[1] == ["ks=2,3 (its default) lowered to 2: the rows is 2, so "
                                                              "the largest valid ks entry is 2."]
    with pytest.raises(InvalidParameterError, match=r"^--param ks=2,3 \(its entry 3\) "):
        Bounded(select="grid").check_bounds({"train_rows": Size(2, "the rows")}, given={"ks"})


def test_a_default_below_its_constraint_after_clamping_is_refused_and_a_soft_size_only_notes():
    """Clamping never leaves the declared range (2 inner folds of 1 item is refused, default or not); a
    size's `notice_above` runs the value as given, with one notice line."""
    from malt.params import Size

    with pytest.raises(InvalidParameterError, match=r"^--param folds=5 .* the number of items is 1, so the largest "
                                                    r"valid folds is 1\.$"):
        Capped().check_bounds({"items": Size(1, "the number of items")})
    rare = Size(2, "the positive rows of the rarest label")
    same, notices = Capped().within_bounds({"items": Size(50, "the number of items", rare)})
    assert same == Capped() and notices == ["folds=5 is more than the positive rows of the rarest label (2): some of "
                                            "the folds hold none of them; run as given."]
    assert Capped(folds=2).within_bounds({"items": Size(50, "the number of items", rare)}) == (Capped(folds=2), [])


def test_a_bound_names_a_size_with_an_optional_offset():
    assert Bounded.bounds() == {"k": ("train_rows", 1), "ks": ("train_rows", 0), "rank": ("min_side", 0)}
    with pytest.raises(TypeError, match="max_from"):
        param(1, "x", max_from="train rows - one")


# ---- task options that contradict ------------------------------------------------------------------
def test_a_task_option_its_split_ignores_is_refused_naming_the_switch_everywhere(tmp_path):
    """`--split given --stratify-folds` (and --folds, --repeats the other way round) is refused in one
    line naming the switch, from the API, `malt cv` and an experiment file; nothing is written."""
    from click.testing import CliRunner

    from malt import api
    from malt.cli import main
    from tests.helpers import snapshot

    repo = tmp_path / "repo"
    cases = [({"split": "given", "stratify_folds": True}, ["--split", "given", "--stratify-folds"],
              r"--stratify-folds is ignored while split=given \(the multilabel task uses it with split=cv\); "
              r"drop --stratify-folds or pass --split cv\."),
             ({"split": "given", "folds": 3}, ["--split", "given", "--folds", "3"],
              r"--folds 3 is ignored while split=given \(the multilabel task uses it with split=cv\); drop --folds or "
              r"pass --split cv\."),
             ({"repeats": 3}, ["--repeats", "3"],
              r"--repeats 3 is ignored while split=cv \(the multilabel task uses it with split=given\); drop "
              r"--repeats or pass --split given\.")]
    for options, flags, expected in cases:
        with pytest.raises(InvalidParameterError, match="^" + expected + "$"):
            api.cv("mlknn", "emotions", repo=repo, quiet=True, **options)
        result = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--algo", "mlknn", "--dataset", "emotions",
                                           *flags])
        lines = result.output.strip().splitlines()
        assert result.exit_code != 0 and len(lines) == 1 and re.fullmatch("error: " + expected, lines[0]), lines
        values = ", ".join(f"{k} = {str(v).lower() if isinstance(v, bool) else repr(v)}" for k, v in options.items())
        file = tmp_path / "e.toml"
        file.write_text(f'[[experiment]]\ndataset = "emotions"\nalgorithm = "mlknn"\noptions = {{ {values} }}\n')
        run = CliRunner().invoke(main, ["run", str(file), "--repo", str(repo)])
        assert run.exit_code != 0 and re.search(expected, run.output), run.output
    assert snapshot(repo) == {}


def test_an_ignored_task_option_at_its_default_changes_no_experiment_id():
    from malt.tasks import get_task

    task = get_task("multilabel")
    given = task.Params(split="given")
    assert task.experiment_id("d", "h", task.Params(split="given", folds=5, stratify_folds=False)) == \
        task.experiment_id("d", "h", given)
    assert task.experiment_id("d", "h", task.Params(folds=3)) != task.experiment_id("d", "h", task.Params())


def test_labeled_above_the_training_rows_is_refused_with_the_largest_valid():
    from malt import api

    with pytest.raises(Exception, match=r"^--labeled 1000 is more than the data allow: the number of training "
                                        r"rows in the smallest fold of 'emotions' is 474, so the largest valid "
                                        r"labeled is 474\.$"):
        api.plan_experiment("mlknn", "emotions", labeled=1000)
    assert api.plan_experiment("mlknn", "emotions", labeled=474).options.labeled == 474


def test_rerun_skips_a_stored_experiment_whose_task_options_are_refused_today(tmp_path):
    """Options an older malt stored that contradict (split=given with stratify_folds) are left as they
    are: `malt rerun` says so in one line, exits 0 and writes nothing."""
    from click.testing import CliRunner

    from malt import api, registry
    from malt.cli import main
    from malt.datasets.sources import open_source
    from malt.engine import runner as engine
    from malt.tasks import get_task
    from tests.helpers import snapshot

    task = get_task("multilabel")
    data, source = open_source("emotions")
    options = task.Params.as_stored({"split": "given", "stratify_folds": True})
    store = api.repository(tmp_path / "repo")
    algo = registry.get("label-prior")
    engine.execute(store, engine.Plan(data, source, task, options, [(algo, algo.Params())]), quiet=True)
    before = snapshot(tmp_path / "repo")
    result = CliRunner().invoke(main, ["rerun", "--repo", str(tmp_path / "repo")])
    assert result.exit_code == 0, result.output
    assert re.search(r"its task options are refused today \(--stratify-folds is ignored while split=given",
                     result.output), result.output
    assert snapshot(tmp_path / "repo") == before
