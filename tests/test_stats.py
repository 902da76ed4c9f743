"""Significance tests against scipy and against Demšar (2006)'s worked example.

Reference: J. Demšar, "Statistical Comparisons of Classifiers over Multiple Data Sets", JMLR 7
(2006) 1–30: §3.2.2 (Friedman, Iman–Davenport, Nemenyi, Holm) with the worked example of Table 6
(AUC of four C4.5 variants on 14 UCI data sets, the ranks printed in parentheses), Table 5(a)
(Nemenyi critical values) and the Holm table on p. 14.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from malt.results import stats as st

NAMES = ["C4.5", "C4.5+m", "C4.5+cf", "C4.5+m+cf"]
# Demšar 2006, Table 6: AUC as printed (three decimals) and the ranks printed beside them
TABLE6_AUC = np.array([
    [0.763, 0.768, 0.771, 0.798], [0.599, 0.591, 0.590, 0.569], [0.954, 0.971, 0.968, 0.967],
    [0.628, 0.661, 0.654, 0.657], [0.882, 0.888, 0.886, 0.898], [0.936, 0.931, 0.916, 0.931],
    [0.661, 0.668, 0.609, 0.685], [0.583, 0.583, 0.563, 0.625], [0.775, 0.838, 0.866, 0.875],
    [1.000, 1.000, 1.000, 1.000], [0.940, 0.962, 0.965, 0.962], [0.619, 0.666, 0.614, 0.669],
    [0.972, 0.981, 0.975, 0.975], [0.957, 0.978, 0.946, 0.970]])
TABLE6_RANKS = np.array([
    [4, 3, 2, 1], [1, 2, 3, 4], [4, 1, 2, 3], [4, 1, 3, 2], [4, 2, 3, 1], [1, 2.5, 4, 2.5], [3, 2, 4, 1],
    [2.5, 2.5, 4, 1], [4, 3, 2, 1], [2.5, 2.5, 2.5, 2.5], [4, 2.5, 1, 2.5], [3, 2, 4, 1], [4, 1, 2, 3],
    [3, 1, 4, 2]])
VOTING = 12  # the row whose printed AUCs tie (0.975, 0.975) where the paper's ranks (2, 3) do not


def test_ranks_of_table6_are_the_printed_ranks():
    ranks = st.rank_scores(pd.DataFrame(TABLE6_AUC, columns=NAMES), "higher").to_numpy()
    others = [i for i in range(14) if i != VOTING]
    np.testing.assert_array_equal(ranks[others], TABLE6_RANKS[others])
    np.testing.assert_array_equal(ranks[VOTING], [4, 1, 2.5, 2.5])  # printed values tie; the paper's 2, 3 do not


def test_friedman_iman_davenport_nemenyi_holm_reproduce_demsar_section_3_2_2():
    result = st.Friedman(pd.DataFrame(TABLE6_RANKS, columns=NAMES), "lower")
    # average ranks 3.143, 2.000, 2.893, 1.964
    np.testing.assert_allclose(result.average_ranks[NAMES], [3.143, 2.000, 2.893, 1.964], atol=5e-4)
    assert list(result.average_ranks.index) == ["C4.5+m+cf", "C4.5+m", "C4.5+cf", "C4.5"]
    # χ²_F = 9.28 and F_F = 3.69 (the paper's formula, without a tie correction)
    assert result.chi2_uncorrected == pytest.approx(9.28, abs=5e-3)
    f, _ = st.iman_davenport(result.chi2_uncorrected, 14, 4)
    assert f == pytest.approx(3.69, abs=5e-3)
    assert sps.f.ppf(0.95, 3, 39) == pytest.approx(2.85, abs=5e-3)  # the paper's critical F(3, 39)
    # Nemenyi: q_0.05 = 2.569, CD = 1.25; q_0.10 = 2.291, CD = 1.12
    assert st.nemenyi_q(4, 0.05) == pytest.approx(2.569, abs=5e-4)
    assert result.critical_difference == pytest.approx(1.25, abs=5e-3)
    assert st.critical_difference(4, 14, 0.10) == pytest.approx(1.12, abs=5e-3)
    assert st.rank_standard_error(4, 14) == pytest.approx(0.488, abs=5e-4)
    # at α = 0.10 pure C4.5 differs from C4.5+m and C4.5+m+cf; at 0.05 nothing does (gap 1.179 < 1.25)
    assert st.nemenyi_groups(result.average_ranks, st.critical_difference(4, 14, 0.10)) == [
        ["C4.5+m+cf", "C4.5+m", "C4.5+cf"], ["C4.5+cf", "C4.5"]]
    assert st.nemenyi_groups(result.average_ranks, 1.25) == [["C4.5+m+cf", "C4.5+m", "C4.5+cf", "C4.5"]]
    # Holm against C4.5: z = 2.416, 2.342, 0.512; p = 0.016, 0.019, 0.607; thresholds 0.017, 0.025, 0.05;
    # the first two hypotheses are rejected, the third retained
    holm = result.holm_against("C4.5")
    assert list(holm.algorithm) == ["C4.5+m+cf", "C4.5+m", "C4.5+cf"]
    np.testing.assert_allclose(holm.z, [2.416, 2.342, 0.512], atol=2e-3)
    np.testing.assert_allclose(holm.p_value, [0.016, 0.019, 0.607], atol=1.5e-3)
    np.testing.assert_allclose(holm.alpha_i, [0.05 / 3, 0.05 / 2, 0.05], atol=1e-12)
    assert list(holm.rejected) == [True, True, False]


def test_nemenyi_q_matches_demsar_table_5a():
    table_5a = {0.05: [1.960, 2.343, 2.569, 2.728, 2.850, 2.949, 3.031, 3.102, 3.164],
                0.10: [1.645, 2.052, 2.291, 2.459, 2.589, 2.693, 2.780, 2.855, 2.920]}
    # the paper's three decimals come from older studentized-range tables (k = 3 reads 2.343 for
    # 2.3437, k = 7 2.949 for 2.9483): they agree to within one unit of the last printed digit
    for alpha, values in table_5a.items():
        np.testing.assert_allclose([st.nemenyi_q(k, alpha) for k in range(2, 11)], values, atol=1e-3)


def test_friedman_matches_scipy_with_and_without_ties():
    rng = np.random.default_rng(3)
    tied = np.round(rng.random((9, 5)), 1)  # one decimal: many ties
    for scores in (TABLE6_AUC, rng.random((7, 4)), tied):
        result = st.Friedman(pd.DataFrame(scores), "higher")
        reference = sps.friedmanchisquare(*scores.T)
        assert result.chi2 == pytest.approx(reference.statistic, rel=1e-10)
        assert result.p_chi2 == pytest.approx(reference.pvalue, rel=1e-8)
    # direction: 'lower' ranks the negated scores the same
    a = st.Friedman(pd.DataFrame(TABLE6_AUC), "higher").average_ranks.sort_index()
    b = st.Friedman(pd.DataFrame(-TABLE6_AUC), "lower").average_ranks.sort_index()
    pd.testing.assert_series_equal(a, b)


def test_exact_friedman_p_against_brute_force():
    rng = np.random.default_rng(0)
    scores = rng.random((3, 4))
    scores[1, 2] = scores[1, 3]  # a tie
    ranks = st.rank_scores(pd.DataFrame(scores), "lower").to_numpy()
    observed = st.friedman_statistic(ranks)
    count = total = 0
    for perms in itertools.product(itertools.permutations(range(4)), repeat=3):  # all (4!)^3 datasets' orders
        permuted = np.array([ranks[i][list(p)] for i, p in enumerate(perms)])
        count += st.friedman_statistic(permuted) >= observed - 1e-9
        total += 1
    assert st.friedman_exact_p(ranks) == pytest.approx(count / total, abs=1e-12)
    # perfect agreement on three datasets: probability 1/24² that the other two repeat the first order
    same = np.tile(np.arange(1.0, 5.0), (3, 1))
    assert st.friedman_exact_p(same) == pytest.approx(1 / 24 ** 2)
    assert st.friedman_exact_p(np.tile(np.arange(1.0, 8.0), (12, 1))) is None  # (7!)^11: not enumerated


def test_holm_against_its_definition():
    rng = np.random.default_rng(1)
    for _ in range(20):
        p = rng.random(6) ** 3
        rejected, adjusted = st.holm(p, 0.05)
        order = np.argsort(p)
        expected, still = np.zeros(6, bool), True
        for i, j in enumerate(order):  # step down: reject while p_(i) <= α/(m−i)
            still = still and p[j] <= 0.05 / (6 - i)
            expected[j] = still
        np.testing.assert_array_equal(rejected, expected)
        brute = [max(min(1, (6 - i) * p[order[i]]) for i in range(r + 1)) for r in range(6)]
        np.testing.assert_allclose(adjusted[order], brute)


def test_corrected_resampled_ttest_is_the_paired_t_test_inflated_by_the_overlap():
    rng = np.random.default_rng(2)
    a = pd.Series(rng.normal(0.30, 0.02, 10))
    b = pd.Series(a + rng.normal(0.01, 0.01, 10))
    plain = sps.ttest_rel(a, b)
    uncorrected = st.corrected_resampled_ttest(a, b, 0.0)
    assert uncorrected.statistic == pytest.approx(plain.statistic, rel=1e-12)
    assert uncorrected.p_value == pytest.approx(plain.pvalue, rel=1e-10)
    # ten-fold CV: ρ = 1/9, t shrinks by sqrt((1/J) / (1/J + ρ)) (Nadeau & Bengio 2003, §5)
    corrected = st.corrected_resampled_ttest(a, b, 1 / 9)
    assert corrected.statistic == pytest.approx(plain.statistic * math.sqrt(0.1 / (0.1 + 1 / 9)), rel=1e-12)
    assert corrected.p_value == pytest.approx(2 * sps.t.sf(abs(corrected.statistic), 9), rel=1e-12)
    assert corrected.p_value > plain.pvalue
    # pairing by fold id, not by position
    shuffled = b.sample(frac=1, random_state=0)
    assert st.corrected_resampled_ttest(a, shuffled, 1 / 9).statistic == pytest.approx(corrected.statistic)
    assert st.corrected_resampled_ttest(a, a, 0.25).p_value == 1.0
    assert st.corrected_resampled_ttest(a, a + 0.1, 0.25).p_value == 0.0


def test_wilcoxon_smallest_p_values_and_the_policy_minimum():
    # all n differences positive: exact two-sided p = 2 / 2^n
    for n in (5, 6, 8):
        a, b = pd.Series(np.arange(1.0, n + 1) * 0.01 + 0.5), pd.Series(np.full(n, 0.5))
        assert st.wilcoxon_signed_rank(a, b).p_value == pytest.approx(2 / 2 ** n)
    assert 2 / 2 ** (st.MIN_RUNS_WILCOXON - 1) > 0.05 >= 2 / 2 ** st.MIN_RUNS_WILCOXON
    rng = np.random.default_rng(4)
    a, b = pd.Series(rng.random(12)), pd.Series(rng.random(12))
    assert st.wilcoxon_signed_rank(a, b).p_value == pytest.approx(sps.wilcoxon(a - b).pvalue)
    assert st.FoldTestPolicy.for_protocol(None).test == "Wilcoxon"
    policy = st.FoldTestPolicy.for_protocol(0.25)
    assert (policy.test, policy.min_folds) == ("corrected t", st.MIN_FOLDS)


def test_the_protocols_test_train_ratio():
    from malt.results.describe import test_train_ratio

    assert test_train_ratio("multilabel", {"folds": 5, "split": "cv"}) == pytest.approx(1 / 4)
    assert test_train_ratio("semisupervised", {"folds": 10}) == pytest.approx(1 / 9)
    assert test_train_ratio("missing", {"missing": 0.2, "folds": 5}) == pytest.approx(0.2 / 0.8)
    assert test_train_ratio("ratings", {"train_fraction": 0.7, "runs": 5}) == pytest.approx(0.3 / 0.7)
    assert test_train_ratio("multilabel", {"split": "given", "repeats": 10}) is None  # runs share one split
