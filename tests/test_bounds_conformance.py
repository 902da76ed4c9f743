"""Every parameter bounded by the data (``max_from``) gets the same checks, for every algorithm that
declares it and every task that reports its size: one above the largest valid value is refused before
any unit runs, in one line naming the setting, the data's size and the largest valid value, from the
Python API, `malt cv` and an experiment file (`malt run`) alike, with the repository byte-identical;
the largest valid value itself is accepted (so the bound is not tighter than the data). A bound declared
``clamp=True`` (and any default the user did not type) is lowered instead, as the unit starts, with one
notice line in the unit's diagnostics, and the unit computes what the largest valid value computes."""
from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from click.testing import CliRunner

from malt import api, registry
from malt.cli import main
from malt.errors import InvalidParameterError
from malt.params import _wanted
from malt.tasks import get_task
from tests.helpers import snapshot

DATA = {"multilabel": "synthetic-multilabel", "missing": "synthetic-pma-50x20", "semisupervised": "wine2",
        "topics": "synthetic-ctm", "ratings": "yamanishi-nr", "recovery": "synthetic-cca"}
_SIZES: dict[str, dict] = {}


def _sizes(task: str) -> dict:
    """What the task reports for its small dataset under default options (computed once)."""
    if task not in _SIZES:
        t = get_task(task)
        _SIZES[task] = t.sizes(api.dataset(DATA[task]), t.Params())
    return _SIZES[task]


def _used_setting(algo, field: str, task: str) -> dict | None:
    """Values of the switches under which ``field`` is used on ``task`` (None: never): the defaults, or
    each alternative of its condition with the switches' own conditions met too."""
    P = algo.Params
    tries, todo = [{}], [dict(alt) for alt in P.conditions()[field].alternatives] if field in P.conditions() else []
    for alternative in todo:
        setting = {}
        for name, required in alternative.items():
            if name in P.conditions():
                setting.update({k: _wanted(v) for k, v in P.conditions()[name].alternatives[0] if k != "task"})
        setting.update({k: _wanted(v) for k, v in alternative.items() if k != "task"})
        tries.append(setting)
    for setting in tries:
        try:
            params = P(**setting)
        except InvalidParameterError:
            continue
        if params.inactive_reason(field, {"task": task}) is None:
            return {k: v for k, v in setting.items() if v != getattr(P(), k)}
    return None


def _clamped(algo, field: str) -> bool:
    return bool(algo.Params.__dataclass_fields__[field].metadata.get("clamp"))


def _cases(clamped: bool):
    for name in sorted(registry.algorithms()):
        algo = registry.get(name)
        for field, (size, offset) in sorted(algo.Params.bounds().items()):
            for task in sorted(algo.tasks):
                if (task in DATA and size in _sizes(task) and _used_setting(algo, field, task) is not None
                        and _clamped(algo, field) == clamped):
                    yield name, field, task


CASES = list(_cases(clamped=False))
CLAMPED = list(_cases(clamped=True))


def test_every_declared_bound_is_checked_somewhere():
    """A bound no task reports a size for would never be checked: each declared one has a case."""
    declared = {(name, field) for name in registry.algorithms()
                for field in registry.get(name).Params.bounds()}
    assert declared and declared == {(name, field) for name, field, _ in CASES + CLAMPED}
    assert {(n, f) for n, f, _ in CLAMPED} >= {("pca-svm", "k_grid"), ("cca", "k_grid"), ("pmf", "rank_grid"),
                                                ("softimpute", "rank"), ("pcsa", "rank"), ("pcsa-sparse", "rank")}
    assert ("knn-impute", "n_neighbors_grid") in {(n, f) for n, f, _ in CASES}


def _text(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, tuple) else str(value)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A repository holding one real experiment, to prove refusals leave it byte-identical."""
    path = tmp_path_factory.mktemp("bounds") / "repo"
    result = CliRunner().invoke(main, ["cv", "--repo", str(path), "--quiet", "--algo", "label-prior", "--dataset",
                                       DATA["multilabel"], "--folds", "2"])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.parametrize("name,field,task", CASES)
def test_a_value_above_the_data_is_refused_everywhere_and_the_largest_valid_is_accepted(name, field, task, repo,
                                                                                           tmp_path):
    algo = registry.get(name)
    size, offset = algo.Params.bounds()[field]
    setting = _used_setting(algo, field, task)
    n = _sizes(task)[size].value
    largest = n - offset
    params = {k: _text(v) for k, v in setting.items()}
    is_list = isinstance(getattr(algo.Params(), field), tuple)
    entry = (rf" \(its entry {largest + 1}\)", " entry") if is_list else ("", "")
    expected = (rf"^{re.escape(name)}: --param {field}={largest + 1}{entry[0]} is more than the data allow: .* is "
                rf"{n}, so the largest valid {field}{entry[1]} is {largest}\.$")
    before = snapshot(repo)

    with pytest.raises(InvalidParameterError, match=expected):  # Python API
        api.cv(name, DATA[task], task=task, params={**params, field: largest + 1}, repo=repo, quiet=True)
    assert snapshot(repo) == before

    flags = [item for k, v in {**params, field: largest + 1}.items() for item in ("--param", f"{k}={v}")]
    cli = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--algo", name, "--dataset", DATA[task], "--task",
                                    task, *flags])
    lines = cli.output.strip().splitlines()
    assert cli.exit_code != 0 and len(lines) == 1 and re.match(expected, lines[0].removeprefix("error: ")), cli.output
    assert snapshot(repo) == before

    values = ", ".join(f"{k} = {v!r}" for k, v in {**params, field: str(largest + 1)}.items())
    file = tmp_path / "experiments.toml"
    file.write_text(f'[[experiment]]\ndataset = "{DATA[task]}"\nalgorithm = "{name}"\ntask = "{task}"\n'
                    f"params = {{ {values} }}\n")
    run = CliRunner().invoke(main, ["run", str(file), "--repo", str(repo)])
    assert run.exit_code != 0 and re.search(expected[1:-1], run.output), run.output
    assert snapshot(repo) == before

    if largest >= 1 and (largest >= 2 or field != "inner_folds"):  # the bound is not tighter than the data
        plan = api.plan_experiment(name, DATA[task], task=task, params={**params, field: largest})
        value = getattr(plan.entries[0][1], field)
        assert value == ((largest,) if isinstance(value, tuple) else largest)


FITTED = {"missing", "multilabel"}  # small data: the clamped unit is also fitted and compared


@pytest.mark.parametrize("name,field,task", CLAMPED)
def test_a_clamped_value_is_lowered_with_one_notice_and_computes_what_the_largest_valid_does(name, field, task):
    """Typed above the data, a clamp=True field plans (no refusal), the unit runs with the largest valid
    value and records one notice line naming the setting, the size and that value; on the small tasks
    the unit is fitted too and stores the same predictions as the largest valid value typed."""
    from malt.engine import runner as engine

    algo = registry.get(name)
    size, offset = algo.Params.bounds()[field]
    setting = {k: _text(v) for k, v in _used_setting(algo, field, task).items()}
    n = _sizes(task)[size].value
    largest = n - offset
    is_list = isinstance(getattr(algo.Params(), field), tuple)
    over, best = ((1, largest + 1), (1, largest)) if is_list else (largest + 1, largest)
    plans = [api.plan_experiment(name, DATA[task], task=task, params={**setting, field: _text(v)})
             for v in (over, best)]
    clamped, notices = engine.within_bounds(plans[0].task, plans[0].dataset, plans[0].options, plans[0].entries[0][1])
    assert getattr(clamped, field) == best and clamped == plans[1].entries[0][1]
    assert len(notices) == 1 and re.fullmatch(
        rf"{field}={_text(over)} lowered to {_text(best)}: .* is {n}, so the largest valid {field}"
        rf"{' entry' if is_list else ''} is {largest}\.", notices[0]), notices
    if task in FITTED:
        unit = plans[0].units()[0]  # the largest valid value typed, on the same unit seed
        same_seed = dataclasses.replace(unit, params=plans[1].entries[0][1])
        outcomes = [engine.run_unit(plans[0].dataset, plans[0].task, plans[0].options, u, None)
                    for u in (unit, same_seed)]
        assert [o.record["status"] for o in outcomes] == ["ok", "ok"], [o.record.get("error") for o in outcomes]
        assert outcomes[0].record["diagnostics"]["notices"] == notices
        assert "notices" not in outcomes[1].record.get("diagnostics", {})
        assert outcomes[0].packed.keys() == outcomes[1].packed.keys()
        for key in outcomes[0].packed:
            assert (outcomes[0].packed[key] == outcomes[1].packed[key]).all(), key


def _tiny_multilabel(path):
    """12 rows, 3 features, 2 labels: two folds of 6 training rows, fewer than mlknn's default k=10."""
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(12, 3)), (rng.random((12, 2)) < 0.5).astype(int)
    Y[0], Y[1] = 1, 0
    path.write_text("a,b,c,l1,l2\n" + "".join(",".join(f"{v:.3f}" for v in x) + "," + ",".join(map(str, y)) + "\n"
                                               for x, y in zip(X, Y)))
    return str(path)


def test_a_default_above_the_data_is_clamped_with_a_notice_and_typed_it_is_refused(tmp_path):
    """mlknn's default k=10 on 6 training rows: `malt cv` runs it at k=5 and `malt show --diagnostics`
    prints the notice; the stored predictions are those of k=5 typed. Typed (--param k=10, even the
    default value) it is refused from the CLI, the API and an experiment file, nothing written."""
    data = _tiny_multilabel(tmp_path / "tiny.csv")
    repo = tmp_path / "repo"
    base = ["--dataset", data, "--labels", "2", "--folds", "2", "--quiet", "--algo", "mlknn"]
    ran = CliRunner().invoke(main, ["cv", "--repo", str(repo), *base])
    assert ran.exit_code == 0, ran.output
    experiment = ran.output.strip().splitlines()[-1]
    shown = CliRunner().invoke(main, ["show", experiment, "--repo", str(repo), "--diagnostics"])
    notice = ("notice: mlknn: k=10 (its default) lowered to 5: the number of training rows in the smallest fold of "
              "'tiny' is 6, so the largest valid k is 5.")
    assert shown.exit_code == 0 and notice in shown.output.splitlines(), shown.output
    explicit = CliRunner().invoke(main, ["cv", "--repo", str(repo), *base, "--param", "k=5"])
    assert explicit.exit_code == 0, explicit.output
    from malt.results.result_set import ResultSet

    frame = ResultSet.load(repo).frame.sort_values(["fold", "metric"])
    by = {d: f["value"].to_numpy() for d, f in frame.groupby("display")}
    assert set(by) == {"mlknn", "mlknn[k=5]"} and (by["mlknn"] == by["mlknn[k=5]"]).all()

    before = snapshot(repo)
    refusal = ("mlknn: --param k=10 is more than the data allow: the number of training rows in the smallest fold "
               "of 'tiny' is 6, so the largest valid k is 5.")
    typed = CliRunner().invoke(main, ["cv", "--repo", str(repo), *base, "--param", "k=10"])
    assert typed.exit_code != 0 and typed.output.strip() == f"error: {refusal}", typed.output
    with pytest.raises(InvalidParameterError, match=re.escape(refusal)):
        api.cv("mlknn", data, labels="2", params={"k": 10}, repo=repo, folds=2, quiet=True)
    file = tmp_path / "experiments.toml"
    file.write_text(f'[[experiment]]\ndataset = "{data}"\nlabels = "2"\nalgorithm = "mlknn"\n'
                    f'options = {{ folds = 2 }}\nparams = {{ k = "10" }}\n')
    run = CliRunner().invoke(main, ["run", str(file), "--repo", str(repo)])
    assert run.exit_code != 0 and refusal in run.output, run.output
    assert snapshot(repo) == before


def test_new_rows_ratings_splits_bound_inner_folds_by_their_fewest_training_ratings(tmp_path):
    """With new_rows the training ratings vary by split: the bound is the fewest over the planned runs
    (counted here from the splits themselves), refused one above it in one line, nothing written."""
    task = get_task("ratings")
    data = api.dataset(DATA["ratings"])
    options = task.Params(new_rows=True)
    fewest = min(task.split(data, options, run).train.nnz for run in range(options.runs))
    assert task.sizes(data, options)["inner_items"].value == fewest
    result = CliRunner().invoke(main, ["cv", "--repo", str(tmp_path / "r"), "--algo", "pmf", "--dataset",
                                       DATA["ratings"], "--new-rows", "--param", f"inner_folds={fewest + 1}"])
    assert result.exit_code != 0 and result.output.strip() == (
        f"error: pmf: --param inner_folds={fewest + 1} is more than the data allow: the number of training ratings "
        f"in the smallest split of '{DATA['ratings']}' (new_rows) is {fewest}, so the largest valid inner_folds is "
        f"{fewest}."), result.output
    assert not (tmp_path / "r").exists()
    api.plan_experiment("pmf", DATA["ratings"], params={"inner_folds": fewest}, new_rows=True)


MULTILABEL = ("emotions", "scene", "yeast", "CAL500", "enron", "genbase")


@pytest.mark.parametrize("dataset", MULTILABEL)
def test_rare_labels_are_a_notice_never_a_refusal_on_the_shipped_multilabel_sets(dataset):
    """The rarest label's positive training rows (counted by brute force over the folds) is the stratum
    size; more inner folds than that runs as given with a notice, so every multilabel algorithm plans at
    its defaults on every shipped set."""
    from malt.engine import runner as engine
    from malt.tasks.base import fold_assignment

    task = get_task("multilabel")
    data = api.dataset(dataset)
    options = task.Params()
    Y = np.nan_to_num(np.asarray(data["Y"], dtype=float))
    ids = fold_assignment(data.n_rows, options.folds, options.seed)
    rarest = min(int(Y[ids != fold].sum(axis=0).min()) for fold in range(options.folds))
    assert task.sizes(data, options)["inner_items"].notice_above.value == rarest
    names = sorted(n for n in registry.algorithms() if "multilabel" in registry.get(n).tasks)
    plan = api.plan_experiment(names, dataset, task="multilabel")  # no default refused
    for algo, params in plan.entries:
        ran, notices = engine.within_bounds(plan.task, plan.dataset, plan.options, params)
        folds = getattr(params, "inner_folds", None)
        used = folds is not None and params.inactive_reason("inner_folds", {"task": "multilabel"}) is None
        assert ran.inner_folds == folds if used else True
        expected = (f"inner_folds={folds} is more than the positive training rows of the rarest label in a fold of "
                    f"'{data.name}' ({rarest}): some of the inner folds hold none of them; run as given.")
        assert (expected in notices) == (used and folds > rarest), (algo.name, notices)


def test_a_class_with_fewer_labelled_points_than_inner_folds_is_a_notice_in_the_units_diagnostics():
    """Semisupervised, stratify=True: the least populated class gets its largest-remainder share of ℓ in
    each fold's pool (computed here from the fold ids); gf's stratified inner CV with more folds than that
    runs as given and its unit records the notice; with fewer, no notice."""
    from malt.engine import runner as engine
    from malt.tasks.base import fold_assignment

    task = get_task("semisupervised")
    data = api.dataset(DATA["semisupervised"])
    options = task.Params(labeled=8, stratify=True)
    y = np.asarray(data["y"]).astype(int)
    ids = fold_assignment(y.size, options.folds, options.seed)
    least = []
    for fold in range(options.folds):
        counts = np.bincount(y[ids != fold])
        quota = options.labeled * counts / counts.sum()
        take = np.floor(quota).astype(int)
        take[np.argsort(take - quota, kind="stable")[: options.labeled - take.sum()]] += 1
        least.append(int(take.min()))
    assert task.sizes(data, options)["inner_items"].notice_above.value == min(least) < 5
    plan = api.plan_experiment("gf", DATA["semisupervised"], params={"select": "inner-cv", "inner_folds": "5"},
                               labeled=8, stratify=True)
    outcome = engine.run_unit(plan.dataset, plan.task, plan.options, plan.units()[0], None)
    assert outcome.record["status"] == "ok", outcome.record.get("error")
    assert outcome.record["diagnostics"]["notices"] == [
        f"inner_folds=5 is more than the labelled points of the least populated class in a fold of "
        f"'{DATA['semisupervised']}' ({min(least)}): some of the inner folds hold none of them; run as given."]
    few = api.plan_experiment("gf", DATA["semisupervised"], params={"select": "inner-cv",
                                                                    "inner_folds": str(min(least))},
                              labeled=8, stratify=True)
    assert engine.within_bounds(few.task, few.dataset, few.options, few.entries[0][1])[1] == []


def test_rerun_leaves_a_stored_setting_the_data_cannot_support_as_it_is(tmp_path):
    """A setting stored before its bound existed (run here by planning around the check) is not rerun:
    `malt rerun` says so in one line and the repository stays byte-identical."""
    from malt.datasets.sources import open_source
    from malt.engine import runner as engine

    task = get_task("multilabel")
    data, source = open_source(DATA["multilabel"])
    options = task.Params(folds=2)
    algo = registry.get("mlknn")
    store = api.repository(tmp_path / "repo")
    rows = task.sizes(data, options)["train_rows"].value
    assert rows == 200  # 400 rows in two folds of 200
    engine.execute(store, engine.Plan(data, source, task, options, [(algo, algo.Params(k=rows))]), quiet=True)
    before = snapshot(tmp_path / "repo")
    assert before
    result = CliRunner().invoke(main, ["rerun", "--repo", str(tmp_path / "repo")])
    assert result.exit_code == 0, result.output
    assert re.search(r"mlknn\[k=200\] is refused today \(--param k=200 is more than the data allow: .* is 200, "
                     r"so the largest valid k is 199\.\)", result.output), result.output
    assert snapshot(tmp_path / "repo") == before


def test_topics_more_inner_folds_than_a_class_has_training_documents_runs_with_a_notice():
    """gptm stratifies its inner CV by class: the least populated class's training documents (counted
    from the splits' labels) bound it softly; one more inner fold plans and notes it, that many does not."""
    from malt.engine import runner as engine

    task = get_task("topics")
    data = api.dataset(DATA["topics"])
    options = task.Params()
    least = min(int(np.bincount(task.split(data, options, fold).labels_train).min()) for fold in range(options.folds))
    assert task.sizes(data, options)["inner_items"].notice_above.value == least
    plans = [api.plan_experiment("gptm", DATA["topics"], params={"select": "inner-cv", "inner_folds": str(folds)})
             for folds in (least + 1, least)]
    notes = [engine.within_bounds(p.task, p.dataset, p.options, p.entries[0][1])[1] for p in plans]
    assert notes == [[f"inner_folds={least + 1} is more than the training documents of the least populated class "
                      f"in a fold of '{data.name}' ({least}): some of the inner folds hold none of them; run as "
                      f"given."], []]
