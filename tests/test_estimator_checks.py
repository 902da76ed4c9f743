"""scikit-learn's own estimator checks (issue 48) for every public estimator of malt.estimators, at
its default constructor, with only the exemptions each estimator names in its docstring; the
generic wrappers' choice of algorithm; the neighbour cap on data smaller than k."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import check_classifiers_classes, parametrize_with_checks

from malt import estimators, registry
from malt.engine.context import Context
from malt.estimators import (ImputerEstimator, LabelPropagationGF, MultilabelEstimator, TransductiveClassifier,
                             expected_failed_checks)
from malt.splits import SemiSupervisedSplit

PUBLIC = sorted((cls for _, cls in inspect.getmembers(estimators, inspect.isclass)
                 if issubclass(cls, BaseEstimator) and cls.__module__ == estimators.__name__
                 and not cls.__name__.startswith("_")), key=lambda cls: cls.__name__)


def test_the_public_estimators_are_the_seven():
    assert [cls.__name__ for cls in PUBLIC] == ["BMRClassifier", "ImputerEstimator", "LabelPropagationGF",
                                                "MLkNNClassifier", "MultilabelEstimator", "PMAImputer",
                                                "TransductiveClassifier"]


@parametrize_with_checks([cls() for cls in PUBLIC], expected_failed_checks=expected_failed_checks)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda cls: cls.__name__)
def test_each_exemption_is_named_with_its_reason_in_the_docstring(cls):
    for name, reason in expected_failed_checks(cls()).items():
        assert f"``{name}``: {reason}" in " ".join(cls.__doc__.split()), name


@pytest.mark.parametrize("cls", [TransductiveClassifier, LabelPropagationGF], ids=lambda cls: cls.__name__)
def test_the_exempt_check_really_fails_for_the_reason_given(cls):
    """An exemption that no longer fails would hide a regression: keep the list exact."""
    assert set(expected_failed_checks(cls())) == {"check_classifiers_classes"}
    with pytest.raises(ValueError, match="1 class among the labelled points"):
        check_classifiers_classes(cls.__name__, cls())


@pytest.mark.parametrize("cls, wrong", [(MultilabelEstimator, "gf"), (ImputerEstimator, "mlknn"),
                                        (TransductiveClassifier, "nosuch"), (MultilabelEstimator, "")])
def test_a_generic_wrapper_names_the_algorithms_it_accepts(cls, wrong):
    X = np.random.default_rng(0).normal(size=(12, 3))
    y = np.arange(12) % 2
    choices = [n for n, a in registry.algorithms().items() if cls.task in a.tasks]
    with pytest.raises(ValueError, match="The 'algorithm' parameter of " + cls.__name__) as err:
        cls(algorithm=wrong).fit(X, y) if cls is not ImputerEstimator else cls(algorithm=wrong).fit_transform(
            np.where(X > 1, np.nan, X))
    assert f"Got {wrong!r}" in str(err.value) and all(name in str(err.value) for name in choices)
    assert cls.__init__.__defaults__[0] in choices  # the default is one of them


def test_a_generic_wrapper_rejects_a_parameter_its_algorithm_lacks():
    X = np.random.default_rng(0).normal(size=(12, 3))
    with pytest.raises(ValueError, match="name no parameter of 'mlknn': nosuch; its parameters are .*k"):
        MultilabelEstimator(params={"nosuch": 1}).fit(X, np.arange(12) % 2)


def test_a_generic_wrapper_passes_its_params_to_the_algorithm():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    Y = (X[:, :2] + 0.3 * rng.normal(size=(60, 2)) > 0).astype(float)
    from malt.splits import MultilabelSplit

    algo = registry.get("mlknn")
    split = MultilabelSplit(X[:40], Y[:40], X[40:], np.arange(40), np.arange(40, 60), 0)
    reference = algo().run(split, algo.Params(k=3), Context.for_arrays(X))
    got = MultilabelEstimator(params={"k": 3}).fit(X[:40], Y[:40]).predict_proba(X[40:])
    np.testing.assert_allclose(got, np.asarray(reference.scores, dtype=float), atol=1e-12)
    default = MultilabelEstimator().fit(X[:40], Y[:40]).predict_proba(X[40:])
    assert not np.allclose(default, got)  # k = 3 was used, not the default 10


def test_label_propagation_on_fewer_points_than_k_links_every_point():
    """Nine points and k = 10: the graph of the n − 1 = 8 others, the registered algorithm's k = 8 result."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.3, (5, 2)), rng.normal(3, 0.3, (4, 2))])
    y = np.array([0, -1, -1, -1, -1, 1, -1, -1, -1])
    model = LabelPropagationGF().fit(X, y)
    assert model.k == 10  # the parameter itself is untouched
    algo = registry.get("gf")
    codes = y.copy()
    reference = algo().run(SemiSupervisedSplit(X, codes, 2, np.flatnonzero(codes < 0), 0), algo.Params(k=8),
                           Context(X, seed=0, producer="gf"))
    F = np.asarray(reference.scores, dtype=float)
    np.testing.assert_allclose(model.label_distributions_, F / F.sum(axis=1, keepdims=True), atol=1e-12)
    np.testing.assert_array_equal(model.transduction_, [0] * 5 + [1] * 4)
