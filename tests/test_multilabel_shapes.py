"""Every registered multi-label algorithm on every data shape the multilabel task allows (issue 33).

A registry-wide conformance suite over generated shapes: p > n_train, fewer training rows than
neighbours, constant and duplicated features, sparse X, a label all-0 or all-1 in the training rows,
one label, a few hundred labels, binary features, nominal (one-hot) features read through malt's ARFF
reader. Each case goes the engine's way (task split → algorithm run → the task's check of the answer →
scores) and must either return finite scores and 0/1 decisions or stop with one `MaltError` line that
names the condition — never an internal error, never NaN predictions. A new algorithm that declares
the multilabel task gets every case for free.

Slow algorithms run with cheap settings (``CHEAP``: fewer sweeps, trees, chains); everything else at
its defaults. Small shapes keep the whole file within about a minute on one core.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from malt import registry
from malt.engine.context import Context
from malt.datasets.dataset import Dataset
from malt.errors import MaltError
from malt.tasks import get_task

MULTILABEL = sorted(name for name, algo in registry.algorithms().items() if "multilabel" in algo.tasks)

# Cheap settings for the algorithms whose defaults run for minutes (samplers, forests, ensembles).
CHEAP = {
    "icca": {"max_sweeps": 20, "min_sweeps": 10, "check_every": 10, "hold_psi": 2, "thin": 5},
    "pma-gibbs": {"burn_in": 4, "sweeps": 8, "kernel_updates": 1},
    "pma-map": {"iterations": 50},
    "rf": {"trees": 10},
    "ecc": {"chains": 2},
    "clr": {"select": "none"},  # Platt-scaled SVMs per label pair, run again on each inner fold for thresholds
}


def _labels(rng, scores: np.ndarray, n_train: int) -> np.ndarray:
    """0/1 labels from scores (each column's top third), with every label positive and negative
    somewhere in the data (the task refuses a label without any example)."""
    Y = (scores > np.quantile(scores, 2 / 3, axis=0)).astype(float)
    Y[rng.integers(Y.shape[0]), ~Y.any(0)] = 1.0
    Y[rng.integers(Y.shape[0]), Y.all(0)] = 0.0
    return Y


def _gaussian(n_train, n_test, p, L, seed=0):
    rng = np.random.default_rng(seed)
    n = n_train + n_test
    X = rng.normal(size=(n, p))
    Y = _labels(rng, X @ rng.normal(size=(p, L)) + 0.5 * rng.normal(size=(n, L)), n_train)
    return X, Y


def p_above_n():
    return _gaussian(20, 10, 50, 4)


def fewer_rows_than_neighbours():
    return _gaussian(6, 4, 5, 3)


def constant_and_duplicated():
    X, Y = _gaussian(30, 10, 8, 4)
    X[:, 0] = 3.0           # constant
    X[:, 1] = 0.0           # constant zero
    X[:, 3] = X[:, 2]       # duplicated
    X[:, 5] = 2 * X[:, 4]   # collinear
    return X, Y


def sparse_counts():
    rng = np.random.default_rng(1)
    n, p = 40, 60
    X = sp.random(n, p, density=0.08, random_state=1, format="csr", data_rvs=lambda k: rng.poisson(2, k) + 1.0)
    dense = X.toarray()
    Y = _labels(rng, dense @ rng.normal(size=(p, 4)) + 0.3 * rng.normal(size=(n, 4)), 30)
    return X, Y


def label_never_positive_in_training():
    X, Y = _gaussian(30, 10, 6, 4)
    Y[:30, 0] = 0.0
    Y[30:, 0] = 0.0
    Y[[31, 35], 0] = 1.0    # positive only among the test rows
    return X, Y


def label_always_positive_in_training():
    X, Y = _gaussian(30, 10, 6, 4)
    Y[:30, 1] = 1.0
    Y[[32, 36], 1] = 0.0    # negative only among the test rows
    return X, Y


def one_label():
    return _gaussian(30, 10, 6, 1)


def many_labels(L=200):
    rng = np.random.default_rng(2)
    n, p = 40, 6
    X = rng.normal(size=(n, p))
    Y = (X @ rng.normal(size=(p, L)) + 2 * rng.normal(size=(n, L)) > 4.5).astype(float)
    Y[rng.integers(n, size=L), np.arange(L)] = 1.0
    Y[rng.integers(n), Y.all(0)] = 0.0
    return X, Y


def binary_features():
    rng = np.random.default_rng(3)
    n, p = 40, 20
    X = (rng.random((n, p)) < 0.2).astype(float)
    X[:30, :3] = 0.0        # never present in the training rows
    Y = _labels(rng, X @ rng.normal(size=(p, 4)) + 0.3 * rng.normal(size=(n, 4)), 30)
    return X, Y


def nominal_features(tmp_path):
    """Nominal attributes (one-hot through malt's ARFF reader), a two-valued one, a numeric one."""
    from malt.datasets.open import load_file

    rng = np.random.default_rng(4)
    n = 40
    colour = rng.choice(["red", "green", "blue", "grey"], n)
    size = rng.choice(["s", "m", "l"], n)
    flag = rng.choice(["yes", "no"], n)
    weight = rng.normal(size=n).round(3)
    labels = np.column_stack([colour == "red", size == "l", (flag == "yes") ^ (weight > 1)]).astype(int)
    labels[0, ~labels.any(0)] = 1
    lines = ["@relation shapes", "@attribute colour {red,green,blue,grey}", "@attribute size {s,m,l}",
             "@attribute flag {yes,no}", "@attribute weight numeric"]
    lines += [f"@attribute y{j} {{0,1}}" for j in range(3)] + ["@data"]
    lines += [",".join([colour[i], size[i], flag[i], str(weight[i]), *map(str, labels[i])]) for i in range(n)]
    path = tmp_path / "shapes.arff"
    path.write_text("\n".join(lines) + "\n")
    dataset = load_file(path, labels="3", name="nominal")
    return dataset["X"], dataset["Y"]


SHAPES = {
    "p-above-n-train": (p_above_n, 20),
    "n-train-below-k": (fewer_rows_than_neighbours, 6),
    "constant-duplicated": (constant_and_duplicated, 30),
    "sparse-X": (sparse_counts, 30),
    "label-all-0-in-train": (label_never_positive_in_training, 30),
    "label-all-1-in-train": (label_always_positive_in_training, 30),
    "one-label": (one_label, 30),
    "200-labels": (many_labels, 30),
    "binary-X": (binary_features, 30),
    "nominal-X": (nominal_features, 30),
}


# The many-label shape without inner CV over hyper-parameters (3 folds × the grid × 200 labels of
# scikit-learn fits would take ~25 s per algorithm); CLR fits L(L−1)/2 pairwise models (19,900 at 200
# labels, ~2 min), so it meets the shape at 32 labels: still more labels than training rows.
MANY_LABELS = {"clr": {"learner": "logistic"}}
MANY_LABELS_L = {"clr": 32}


def shape_dataset(shape: str, tmp_path=None, name: str = "") -> Dataset:
    make, n_train = SHAPES[shape]
    if shape == "nominal-X":
        X, Y = make(tmp_path)
    elif shape == "200-labels":
        X, Y = make(MANY_LABELS_L.get(name, 200))
    else:
        X, Y = make()
    return Dataset(f"shape-{shape}", {"X": X, "Y": Y}, {"given_train": n_train})


def case_params(name: str, shape: str):
    algo = registry.get(name)
    settings = dict(CHEAP.get(name, {}))
    if shape == "200-labels":
        if "select" in algo.Params.names():
            settings["select"] = "none"
        settings.update(MANY_LABELS.get(name, {}))
    return algo.Params(**settings)


def run_case(name: str, shape: str, tmp_path=None):
    """What the engine does with one unit: 'ok' with the scores, or the MaltError it stopped with."""
    algo = registry.get(name)
    task = get_task("multilabel")
    dataset = shape_dataset(shape, tmp_path, name)
    options = task.Params(split="given")
    task.check(dataset, options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        split = task.split(dataset, options, 0)
        ctx = Context(task.features(dataset), data_key=dataset.hash, seed=7, dataset=dataset,
                      producer=f"{name}@{algo.version}")
        params = case_params(name, shape)
        try:
            prediction = algo().run(split, params, ctx)
        except MaltError as err:
            return err
        scores = task.score(dataset, options, split, prediction)
    return scores, prediction


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("name", MULTILABEL)
def test_every_multilabel_algorithm_handles_every_shape(name, shape, tmp_path):
    outcome = run_case(name, shape, tmp_path)
    if isinstance(outcome, MaltError):
        message = str(outcome)
        assert message and "\n" not in message, f"{name} on {shape}: a refusal must be one line, got {message!r}"
        return
    scores, prediction = outcome
    assert np.isfinite(scores["hamming_loss"]) and np.isfinite(scores["ranking_loss"]), scores
    decisions = [prediction.labels, prediction.extras.get("labels_f1", prediction.labels)]
    if shape == "label-all-0-in-train":  # the defined decision: a label never positive in training is never predicted
        assert all(not np.asarray(d)[:, 0].any() for d in decisions)
    if shape == "label-all-1-in-train":  # ... and one never negative always
        assert all(np.asarray(d)[:, 1].all() for d in decisions)
