"""MULAN train/test file pairs import as a given split (issue 33), and stratified multi-label folds,
end to end through `malt`."""
from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from malt.cli import main


def write_pair(folder, n_train=40, n_test=20, seed=0, rare_only_in_test=True):
    """name-train.arff / name-test.arff / name.xml in MULAN's layout: 4 numeric features, 3 labels; with
    ``rare_only_in_test`` label 'rare' has no positive row in the training file."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train + n_test, 4)).round(4)
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] + X[:, 2] > 0.5, np.zeros(len(X), bool)]).astype(int)
    if rare_only_in_test:
        Y[[n_train + 1, n_train + 5], 2] = 1
    header = ["@relation pair"] + [f"@attribute f{j} numeric" for j in range(4)] + \
        [f"@attribute {name} {{0,1}}" for name in ("a", "b", "rare")] + ["@data"]
    for part, rows in (("train", range(n_train)), ("test", range(n_train, n_train + n_test))):
        lines = header + [",".join([*map(str, X[i]), *map(str, Y[i])]) for i in rows]
        (folder / f"pair-{part}.arff").write_text("\n".join(lines) + "\n")
    (folder / "pair.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/'
                                     'labels">\n<label name="a"></label>\n<label name="b"></label>\n'
                                     '<label name="rare"></label>\n</labels>\n')
    return X, Y


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    return result


@pytest.mark.timeout(120)
def test_a_mulan_pair_imports_as_the_given_split_and_cv_runs_on_it(tmp_path):
    X, Y = write_pair(tmp_path)
    repo = tmp_path / "repo"
    single = invoke("datasets", "import", "one", tmp_path / "pair-train.arff", "--labels", tmp_path / "pair.xml",
                    "--repo", repo)
    assert single.exit_code != 0 and "'rare' has no positive example" in single.output  # alone, the label never occurs
    done = invoke("datasets", "import", "mine", tmp_path / "pair-train.arff", "--test", tmp_path / "pair-test.arff",
                  "--labels", tmp_path / "pair.xml", "--repo", repo)
    assert done.exit_code == 0, done.output
    assert "given split 40 train / 20 test" in done.output
    run = invoke("cv", "--algo", "mllr", "--algo", "label-prior", "--dataset", "mine", "--split", "given",
                 "--repo", repo, "--quiet")
    assert run.exit_code == 0, run.output
    # the stored units are scored on the 20 test rows of the file pair, each label decided
    from malt.repository.store import Repository

    repository = Repository(repo)
    (experiment,) = repository.experiments()
    spec = repository.experiment(experiment).read_spec()
    assert spec["task_params"]["split"] == "given" and spec["n_folds"] == 1
    units, _, _ = repository.experiment(experiment).read_log()
    records = [r for r in units.values() if r["algorithm"] == "mllr"]
    assert records and records[0]["status"] == "ok"
    packed = repository.experiment(experiment).read_predictions({records[0]["unit"]: records[0]["predictions"]})
    labels = next(iter(packed.values()))["labels"]
    assert labels.shape == (20, 3)
    assert not labels[:, 2].any()  # never positive in the training file: never predicted
    # an imported set with no split refuses split=given with one line
    plain = invoke("datasets", "import", "plain", tmp_path / "pair-test.arff", "--labels", tmp_path / "pair.xml",
                   "--repo", repo)
    assert plain.exit_code == 0, plain.output
    refused = invoke("cv", "--algo", "mllr", "--dataset", "plain", "--split", "given", "--repo", repo, "--quiet")
    assert refused.exit_code == 2 and "ships no train/test split" in refused.output


def test_a_pair_whose_files_disagree_is_refused_with_one_line(tmp_path):
    write_pair(tmp_path)
    other = tmp_path / "other-test.arff"
    text = (tmp_path / "pair-test.arff").read_text().replace("@attribute f3 numeric", "@attribute g3 numeric")
    other.write_text(text)
    result = invoke("datasets", "import", "bad", tmp_path / "pair-train.arff", "--test", other, "--labels",
                    tmp_path / "pair.xml", "--repo", tmp_path / "repo")
    assert result.exit_code == 2
    assert "other attributes" in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.timeout(120)
def test_stratify_folds_is_a_task_flag_and_spreads_a_rare_label_over_every_fold(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "rare.arff"
    lines = ["@relation rare"] + [f"@attribute f{j} numeric" for j in range(3)] + \
        ["@attribute common {0,1}", "@attribute rare {0,1}", "@data"]
    rare = np.zeros(100, int)
    rare[rng.choice(100, 5, replace=False)] = 1
    for i in range(100):
        lines.append(",".join([*map(str, rng.normal(size=3).round(3)), str(int(rng.random() < 0.5)), str(rare[i])]))
    path.write_text("\n".join(lines) + "\n")
    repo = tmp_path / "repo"
    assert invoke("datasets", "import", "rare", path, "--labels", "2", "--repo", repo).exit_code == 0
    for flags in (["--stratify-folds"], ["--task-param", "stratify_folds=true"]):
        run = invoke("cv", "--algo", "label-prior", "--dataset", "rare", *flags, "--repo", repo, "--quiet")
        assert run.exit_code == 0, run.output
    from malt.datasets.dataset import Dataset
    from malt.tasks import get_task

    task = get_task("multilabel")
    Y = np.column_stack([np.zeros(100), rare]).astype(float)
    Y[::2, 0] = 1
    dataset = Dataset("rare", {"X": np.zeros((100, 1)), "Y": Y})
    options = task.Params(stratify_folds=True)
    per_fold = [Y[task.split(dataset, options, f).test_index, 1].sum() for f in range(5)]
    assert per_fold == [1.0] * 5


def test_where_a_pair_is_cut_is_part_of_the_data_hash(tmp_path):
    """The same rows cut at another row are another dataset: results under --split given never mix."""
    from malt.datasets.open import load_file_pair

    rng = np.random.default_rng(0)
    rows = [",".join(map(str, list(rng.normal(size=3).round(3)) + [int(i % 2), int(i % 3 == 0)])) for i in range(12)]
    header = "a,b,c,y1,y2"
    cuts = []
    for cut in (6, 8):
        (tmp_path / f"train{cut}.csv").write_text("\n".join([header] + rows[:cut]) + "\n")
        (tmp_path / f"test{cut}.csv").write_text("\n".join([header] + rows[cut:]) + "\n")
        cuts.append(load_file_pair(tmp_path / f"train{cut}.csv", tmp_path / f"test{cut}.csv", labels="2"))
    assert cuts[0].meta["given_train"] == 6 and cuts[1].meta["given_train"] == 8
    assert np.array_equal(cuts[0]["X"], cuts[1]["X"]) and cuts[0].hash != cuts[1].hash
