"""The shared label decisions (malt.numerics.decisions) against brute-force threshold searches on small data."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from malt.tasks import metrics
from malt.numerics.decisions import RULES, best_cut, fit_rule, learn


def brute_force(s, y, objective):
    """Every threshold between (and beyond) the distinct scores, scored by malt.metrics directly."""
    values = np.unique(s)
    cuts = np.concatenate([[values[0] - 1], (values[:-1] + values[1:]) / 2, [values[-1] + 1]])
    best, best_t = -np.inf, None
    for t in cuts[::-1]:  # from the highest threshold down: ties keep the highest, as best_cut does
        p = (s > t).astype(float)
        if objective == "f1":
            value = metrics.f1_micro(y[None, :], p[None, :])
            value = 0.0 if np.isnan(value) else value
        else:
            value = -metrics.hamming_loss(y[None, :], p[None, :]) * y.size
        if value > best + 1e-12:
            best, best_t = value, t
    return best_t, best


@pytest.mark.parametrize("objective", ["f1", "hamming"])
@pytest.mark.parametrize("seed", range(6))
def test_best_cut_equals_a_brute_force_search(objective, seed):
    rng = np.random.default_rng(seed)
    n = 25
    s = np.round(rng.normal(size=n), 1)  # rounded: ties between scores
    y = (rng.random(n) < 0.3 + 0.1 * seed % 3).astype(float)
    t, value = best_cut(s, y, objective)
    t_ref, value_ref = brute_force(s, y, objective)
    assert value == pytest.approx(value_ref)
    np.testing.assert_array_equal(s > t, s > t_ref)


def test_global_rule_maximises_micro_f1_over_every_label_by_brute_force():
    rng = np.random.default_rng(3)
    S = rng.normal(size=(12, 3))
    Y = (S + rng.normal(size=S.shape) > 0.5).astype(float)
    d = fit_rule(S, Y, "global", "f1", 0.0)
    got = metrics.f1_micro(Y, d.decide(S))
    # brute force: every cut of the pooled scores
    best = max(metrics.f1_micro(Y, (S > t).astype(float)) for t in np.concatenate([np.unique(S) - 1e-9, [S.max() + 1]]))
    assert got == pytest.approx(best)
    assert np.all(d.thresholds == d.thresholds[0])


def test_scut_is_each_labels_best_cut_shrunk_towards_the_global_one():
    rng = np.random.default_rng(4)
    S = rng.normal(size=(40, 3))
    Y = (S + 0.7 * rng.normal(size=S.shape) > 0.3).astype(float)
    d = fit_rule(S, Y, "scut", "f1", 0.0)
    shared = fit_rule(S, Y, "global", "f1", 0.0).thresholds[0]
    for j in range(3):
        own, _ = brute_force(S[:, j], Y[:, j], "f1")
        n_pos = Y[:, j].sum()
        w = n_pos / (n_pos + 10.0)
        # the label's own best cut is any point between the same two scores: compare decisions of the parts
        assert np.array_equal(S[:, j] > best_cut(S[:, j], Y[:, j], "f1")[0], S[:, j] > own)
        assert d.thresholds[j] == pytest.approx(w * best_cut(S[:, j], Y[:, j], "f1")[0] + (1 - w) * shared)


def test_pcut_predicts_each_label_as_often_as_in_training_and_rcut_the_mean_cardinality():
    rng = np.random.default_rng(5)
    S = rng.normal(size=(50, 4))
    Y = (rng.random((50, 4)) < [0.1, 0.3, 0.5, 0.2]).astype(float)
    d = fit_rule(S, Y, "pcut", "f1", 0.0)
    np.testing.assert_array_equal(d.decide(S).sum(0), Y.sum(0))
    r = fit_rule(S, Y, "rcut", "f1", 0.0)
    assert r.rank == round(Y.sum() / 50)
    assert np.all(r.decide(S).sum(1) == r.rank)


@pytest.mark.parametrize("rule", RULES)
def test_labels_without_both_classes_in_training_get_a_defined_decision(rule):
    rng = np.random.default_rng(6)
    S = rng.normal(size=(30, 4))
    Y = (rng.random((30, 4)) < 0.4).astype(float)
    Y[:, 1] = 0.0           # never positive in training
    Y[:, 2] = 1.0           # never negative
    Y[:, 3] = np.nan        # never known
    Y[0, 0] = np.nan        # one unknown entry elsewhere
    d = fit_rule(S, Y, rule, "f1", 0.0)
    P = d.decide(rng.normal(size=(10, 4)) * 100)
    assert np.all(P[:, 1] == 0) and np.all(P[:, 2] == 1)
    assert np.isin(P, (0.0, 1.0)).all()


def test_auto_picks_a_learned_rule_when_the_natural_cut_is_badly_placed_and_is_reproducible():
    """Scores shifted by +2 (a model far from calibrated): the natural cut predicts nearly everything."""
    rng = np.random.default_rng(7)
    n, L = 200, 5
    Z = rng.normal(size=(n, L))
    Y = (Z + 0.5 * rng.normal(size=(n, L)) > 1.0).astype(float)
    S = Z + 2.0
    a = learn(S, Y, "auto", 0.0, np.random.default_rng(1))
    b = learn(S, Y, "auto", 0.0, np.random.default_rng(1))
    assert a.hamming.rule != "natural" and a.f1.rule != "natural"
    assert (a.hamming.rule, a.f1.rule) == (b.hamming.rule, b.f1.rule)
    np.testing.assert_array_equal(a.hamming.thresholds, b.hamming.thresholds)
    assert -a.choice["threshold_f1_se"] - 1e-12 <= a.choice["threshold_f1_margin"] <= 0.0  # the one-SE rule
    natural = learn(S, Y, "natural", 0.0)
    assert metrics.hamming_loss(Y, a.hamming.decide(S)) < metrics.hamming_loss(Y, natural.hamming.decide(S))


def test_auto_keeps_the_natural_cut_of_a_calibrated_model_for_hamming_loss():
    """Labels drawn with P(y = 1) = σ(s): the ½ cut (s > 0) is Hamming-optimal; the one-SE rule keeps it
    unless another rule is clearly better."""
    rng = np.random.default_rng(8)
    S = rng.normal(scale=2.0, size=(600, 6))
    Y = (rng.random(S.shape) < 1 / (1 + np.exp(-S))).astype(float)
    d = learn(S, Y, "auto", 0.0, np.random.default_rng(2))
    assert d.hamming.rule == "natural"
    assert d.choice["threshold_hamming_cv"]["natural"] >= max(d.choice["threshold_hamming_cv"].values()) - \
        d.choice["threshold_hamming_se"]


def test_brute_force_over_every_decision_set_on_a_tiny_problem():
    """On 4 rows × 2 labels the global F1 rule's decisions are as good as the best of all thresholds
    pairs applied label-wise with one shared value (enumerated)."""
    S = np.array([[0.9, 0.2], [0.4, 0.8], [0.3, 0.1], [0.7, 0.6]])
    Y = np.array([[1, 0], [0, 1], [1, 0], [1, 1]], dtype=float)
    d = fit_rule(S, Y, "global", "f1", 0.5)
    got = metrics.f1_micro(Y, d.decide(S))
    best = max(metrics.f1_micro(Y, (S > t).astype(float)) for t in itertools.chain(S.ravel() - 1e-9, [1.0]))
    assert got == pytest.approx(best)


def test_the_macro_f1_criterion_is_scikit_learns_macro_f1_and_the_f1_criterion_its_mean_with_micro():
    """objective_value('f1_macro') against sklearn.metrics.f1_score(average='macro') (every label with a
    positive in truth, so the conventions agree), and 'f1' the mean of that and average='micro'."""
    from sklearn.metrics import f1_score

    from malt.numerics.decisions import objective_value

    rng = np.random.default_rng(11)
    Y = (rng.random((40, 5)) < 0.3).astype(float)
    Y[0] = 1.0
    P = (rng.random(Y.shape) < 0.4).astype(float)
    macro, micro = f1_score(Y, P, average="macro"), f1_score(Y, P, average="micro")
    assert objective_value(Y, P, "f1_macro") == pytest.approx(macro)
    assert objective_value(Y, P, "f1") == pytest.approx(0.5 * (macro + micro))


def test_the_macro_f1_family_is_learned_on_its_own_criterion():
    """With 'auto' the macro-F1 family's rule is the one whose cross-validated macro-F1 (not the pooled
    criterion) is best within one standard error, and with a fixed rule its cuts are F1 cuts: one rule,
    the same decisions as the F1 family's."""
    rng = np.random.default_rng(12)
    n, L = 300, 6
    Z = rng.normal(size=(n, L))
    Y = (Z + 0.7 * rng.normal(size=(n, L)) > np.linspace(0.3, 1.8, L)).astype(float)  # rare and common labels
    d = learn(Z, Y, "auto", 0.0, np.random.default_rng(3))
    cv = d.choice["threshold_f1_macro_cv"]
    best = max(cv.values())
    assert cv[d.f1_macro.rule] >= best - d.choice["threshold_f1_macro_se"] - 1e-12
    assert set(d.diagnostics()) >= {"threshold_f1_macro", f"threshold_f1_macro={d.f1_macro.rule}"}
    fixed = learn(Z, Y, "scut", 0.0)
    np.testing.assert_array_equal(fixed.f1_macro.thresholds, fixed.f1.thresholds)
    hamming, f1, macro = fixed.predict(Z)
    np.testing.assert_array_equal(macro, f1)
