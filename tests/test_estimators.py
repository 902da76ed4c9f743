"""scikit-learn estimators over malt's algorithms: pipelines and grid search, and the same numbers
as the registered algorithm on the same split (scikit-learn's own estimator checks are in
tests/test_estimator_checks.py)."""
from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from malt import registry
from malt.engine.context import Context
from malt.estimators import BMRClassifier, LabelPropagationGF, MLkNNClassifier, PMAImputer, make
from malt.splits import MissingSplit, MultilabelSplit


def _multilabel(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    Y = (X[:, :3] + 0.4 * rng.normal(size=(n, 3)) > 0).astype(float)
    return X, Y


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", ["bmr", "mlknn"])
def test_an_estimator_gives_the_registered_algorithms_numbers(name):
    X, Y = _multilabel()
    est = make(name)().fit(X[:90], Y[:90])
    algo = registry.get(name)
    split = MultilabelSplit(X[:90], Y[:90], X[90:], np.arange(90), np.arange(90, 120), 0)
    reference = algo().run(split, algo.Params(), Context.for_arrays(X))
    expected = np.asarray(reference.extras.get("probabilities", reference.scores), dtype=float)
    np.testing.assert_allclose(est.predict_proba(X[90:]), expected, atol=1e-10)
    np.testing.assert_array_equal(est.predict(X[90:]), reference.labels)
    assert ((est.predict_proba(X[90:]) > 0.5) == est.predict(X[90:]).astype(bool)).mean() > 0.99


@pytest.mark.timeout(120)
def test_pipelines_and_grid_search_tune_an_estimator():
    X, Y = _multilabel(150)
    search = GridSearchCV(make_pipeline(StandardScaler(), MLkNNClassifier()), {"mlknnclassifier__k": [3, 10]},
                          cv=3, scoring="f1_micro").fit(X, Y)
    assert search.best_params_["mlknnclassifier__k"] in (3, 10) and search.best_score_ > 0.6


@pytest.mark.timeout(120)
def test_the_imputer_is_the_registered_pma_map_and_beats_column_means():
    rng = np.random.default_rng(1)
    truth = rng.normal(size=(40, 6)) @ rng.normal(size=(6, 15))
    M = truth.copy()
    hidden = rng.random(M.shape) < 0.25
    M[hidden] = np.nan
    filled = PMAImputer().fit_transform(M)
    algo = registry.get("pma-map")
    reference = algo().run(MissingSplit(M, hidden, None, np.arange(40), "real", 0), algo.Params(),
                           Context.for_arrays(None))
    np.testing.assert_allclose(filled[hidden], np.asarray(reference.values)[hidden])
    assert np.all(filled[~hidden] == truth[~hidden])
    column_means = np.broadcast_to(np.nanmean(M, axis=0), M.shape)[hidden]
    assert np.sqrt(np.mean((filled[hidden] - truth[hidden]) ** 2)) < np.sqrt(np.mean((column_means - truth[hidden]) ** 2))


@pytest.mark.timeout(120)
def test_label_propagation_estimator_is_transductive_like_label_spreading():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    partial = y.copy()
    partial[rng.random(len(y)) < 0.85] = -1
    model = LabelPropagationGF().fit(X, partial)
    assert (model.transduction_[partial >= 0] == y[partial >= 0]).all()
    assert (model.transduction_ == y).mean() > 0.85
    assert np.allclose(model.label_distributions_.sum(axis=1), 1.0)
    new = X[::10] + 0.01
    assert (model.predict(new) == y[::10]).mean() > 0.85
