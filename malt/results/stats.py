"""Significance tests for cross-validated results: within one dataset, and across datasets.

Within a dataset (the marks in a table) two algorithms are compared over the folds they share:

* the **corrected resampled t-test** of Nadeau & Bengio (2003, *Machine Learning* 52:239–281, §5,
  "corrected resampled t-test"; Bouckaert & Frank 2004 for k-fold CV). Training sets of CV folds
  overlap, so the fold differences d_j are positively correlated and the plain paired t-test
  underestimates the variance of their mean. With J folds, each with n_test/n_train = ρ,

      t = mean(d) / sqrt((1/J + ρ) · s_d²),   s_d² the sample variance of d (ddof=1),

  compared with Student's t on J - 1 degrees of freedom. ρ = 1/(k-1) for k-fold CV.
* the **Wilcoxon signed-rank test** (scipy.stats.wilcoxon) over repeated runs that share one
  train/test split (the folds are then seeds, not resamples, and no overlap correction applies).

Neither is drawn below a minimum number of folds (``MIN_FOLDS``): with two or three folds the
variance of the differences is not estimable in any useful sense, and a Wilcoxon test on five
pairs cannot reach p < 0.05 at all (its smallest two-sided p-value is 2/2⁵ = 0.0625).

Across datasets (Demšar 2006, *JMLR* 7:1–30, §3.2.2): the algorithms are ranked on every dataset
(1 = best, ties get the average rank), the Friedman test asks whether the average ranks R_j differ,

    χ²_F = 12N / (k(k+1)) · [Σ_j R_j² − k(k+1)²/4]                (Demšar's eq., no ties)

divided by the tie correction 1 − Σ(t³ − t) / (N k (k² − 1)) (as scipy.stats.friedmanchisquare),
its Iman–Davenport form F_F = (N−1) χ²_F / (N(k−1) − χ²_F) on (k−1, (k−1)(N−1)) degrees of
freedom, and two post-hoc procedures: the Nemenyi test (all pairs; critical difference
CD = q_α · sqrt(k(k+1)/(6N)), q_α the studentized range quantile for k groups and infinite degrees
of freedom over √2, Demšar's Table 5(a)) and Holm's step-down procedure against a control
(z = (R_0 − R_i) / sqrt(k(k+1)/(6N)), two-sided normal p-values compared with α/(k−i)). With few
datasets the χ² and F approximations are poor; where the (k!)^(N−1) rank permutations can be
enumerated the exact permutation p-value of χ²_F is computed as well and used.

Cost: everything here is O(N k log k) except the exact Friedman p-value, O((k!)^(N−1) k),
enumerated only up to ``EXACT_LIMIT`` permutations.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from malt.results.formatting import format_p

ALPHA = 0.05
MIN_FOLDS = 5  # fewest paired folds for which a per-dataset mark is drawn
MIN_RUNS_WILCOXON = 6  # fewest runs for which a two-sided Wilcoxon test can reach p < 0.05 (2/2⁶)
EXACT_LIMIT = 1_000_000  # most rank permutations enumerated for the exact Friedman p-value


# ---- two algorithms on one dataset ----------------------------------------------------------------
@dataclass(frozen=True)
class PairedTest:
    """One paired comparison: which test, its statistic, two-sided p-value and number of pairs."""

    test: str
    statistic: float
    p_value: float
    n: int


def _paired(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Differences a − b over the folds (index) both have a finite value for."""
    joined = pd.concat([pd.Series(a, dtype=float).rename("a"), pd.Series(b, dtype=float).rename("b")], axis=1)
    joined = joined.replace([np.inf, -np.inf], np.nan).dropna()
    return (joined["a"] - joined["b"]).to_numpy(dtype=float)


def corrected_resampled_ttest(a: pd.Series, b: pd.Series, test_train_ratio: float) -> PairedTest:
    """Nadeau & Bengio's corrected resampled t-test of two per-fold series (paired by index).

    ``test_train_ratio`` is ρ = n_test / n_train of one fold; ρ = 0 gives the plain paired t-test
    (scipy.stats.ttest_rel). Identical series give p = 1; a constant non-zero difference, p = 0.
    """
    d = _paired(a, b)
    n = len(d)
    if n < 2:
        return PairedTest("corrected t", float("nan"), float("nan"), n)
    mean = float(d.mean())
    var = float(d.var(ddof=1))
    scale = abs(mean) + float(np.abs(d).max())
    if var <= (1e-12 * max(scale, 1e-300)) ** 2:  # no spread: identical, or apart by a constant
        same = abs(mean) <= 1e-12 * max(scale, 1e-300) or scale == 0
        return PairedTest("corrected t", 0.0 if same else math.copysign(math.inf, mean), 1.0 if same else 0.0, n)
    t = mean / math.sqrt((1.0 / n + test_train_ratio) * var)
    return PairedTest("corrected t", t, float(2 * sps.t.sf(abs(t), n - 1)), n)


def wilcoxon_signed_rank(a: pd.Series, b: pd.Series) -> PairedTest:
    """Two-sided Wilcoxon signed-rank test of two per-run series (scipy.stats.wilcoxon; zero
    differences dropped, exact null distribution for small samples without ties)."""
    d = _paired(a, b)
    if len(d) < 1:
        return PairedTest("Wilcoxon", float("nan"), float("nan"), 0)
    if np.all(d == 0):
        return PairedTest("Wilcoxon", 0.0, 1.0, len(d))
    result = sps.wilcoxon(d)
    return PairedTest("Wilcoxon", float(result.statistic), float(result.pvalue), len(d))


@dataclass(frozen=True)
class FoldTestPolicy:
    """Which paired test a protocol's folds admit, and from how many folds on marks are drawn."""

    test: str  # 'corrected t' or 'Wilcoxon'
    test_train_ratio: float | None
    min_folds: int

    @classmethod
    def for_protocol(cls, test_train_ratio: float | None) -> "FoldTestPolicy":
        if test_train_ratio is None:  # runs on one fixed split: seeds, not resamples
            return cls("Wilcoxon", None, MIN_RUNS_WILCOXON)
        return cls("corrected t", float(test_train_ratio), MIN_FOLDS)

    def compare(self, a: pd.Series, b: pd.Series) -> PairedTest:
        if self.test == "Wilcoxon":
            return wilcoxon_signed_rank(a, b)
        return corrected_resampled_ttest(a, b, self.test_train_ratio)

    def describe(self) -> str:
        if self.test == "Wilcoxon":
            return "Wilcoxon signed-rank test over runs"
        return f"corrected resampled t-test of Nadeau & Bengio, n_test/n_train = {self.test_train_ratio:.3g}"


# ---- many algorithms over many datasets ----------------------------------------------------------
def rank_scores(scores: pd.DataFrame, better: str) -> pd.DataFrame:
    """Ranks within each row (dataset) of a datasets × algorithms table: 1 = best, ties averaged."""
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    values = scores.to_numpy(dtype=float)
    ranks = sps.rankdata(values if better == "lower" else -values, method="average", axis=1)
    return pd.DataFrame(ranks, index=scores.index, columns=scores.columns)


def _tie_sum(ranks: np.ndarray) -> float:
    """Σ over blocks and tie groups of t³ − t."""
    total = 0.0
    for row in ranks:
        _, counts = np.unique(row, return_counts=True)
        total += float(np.sum(counts.astype(float) ** 3 - counts))
    return total


def friedman_statistic(ranks: np.ndarray, tie_correction: bool = True) -> float:
    """χ²_F of an N × k matrix of within-row ranks (Demšar 2006, §3.2.2), tie-corrected by default."""
    ranks = np.asarray(ranks, dtype=float)
    n, k = ranks.shape
    mean_ranks = ranks.mean(axis=0)
    chi2 = 12.0 * n / (k * (k + 1)) * (np.sum(mean_ranks ** 2) - k * (k + 1) ** 2 / 4.0)
    if tie_correction:
        c = 1.0 - _tie_sum(ranks) / (n * k * (k * k - 1))
        if c <= 1e-12:  # every dataset ties every algorithm
            return 0.0
        chi2 /= c
    return float(max(chi2, 0.0))


def iman_davenport(chi2: float, n: int, k: int) -> tuple[float, float]:
    """F_F = (N−1) χ²_F / (N(k−1) − χ²_F) and its p-value on (k−1, (k−1)(N−1)) degrees of freedom."""
    if n < 2:
        return float("nan"), float("nan")
    denominator = n * (k - 1) - chi2
    if denominator <= 1e-12 * n * k:  # every dataset ranks the algorithms the same way
        return math.inf, 0.0
    f = (n - 1) * chi2 / denominator
    return float(f), float(sps.f.sf(f, k - 1, (k - 1) * (n - 1)))


def friedman_exact_p(ranks: np.ndarray, limit: int = EXACT_LIMIT) -> float | None:
    """Exact permutation p-value of χ²_F: under H0 each dataset's ranks are a uniformly random
    permutation of its observed ranks. None when (k!)^(N−1) exceeds ``limit``.

    The first dataset is held fixed: relabelling the algorithms leaves χ²_F unchanged, so the
    distribution over the other N−1 datasets' permutations is the full one."""
    ranks = np.asarray(ranks, dtype=float)
    n, k = ranks.shape
    if n < 1 or math.factorial(k) ** (n - 1) > limit:
        return None
    perms = np.array(list(itertools.permutations(range(k))))
    sums = ranks[0][None, :]
    for row in ranks[1:]:
        sums = (sums[:, None, :] + row[perms][None, :, :]).reshape(-1, k)
    # χ²_F is increasing in Σ_j (rank sum_j)² for fixed N, k and tie pattern
    observed = float(np.sum(ranks.sum(axis=0) ** 2))
    spread = np.sum(sums ** 2, axis=1)
    return float(np.mean(spread >= observed - 1e-9 * max(observed, 1.0)))


def nemenyi_q(k: int, alpha: float = ALPHA) -> float:
    """Critical value q_α of the two-tailed Nemenyi test for k algorithms (Demšar's Table 5(a)):
    the studentized range quantile for k groups and infinite degrees of freedom, over √2."""
    if k < 2:
        return float("nan")
    return float(sps.studentized_range.ppf(1 - alpha, k, np.inf) / math.sqrt(2))


def rank_standard_error(k: int, n: int) -> float:
    """sqrt(k(k+1)/(6N)): the standard error of a difference of two average ranks."""
    return math.sqrt(k * (k + 1) / (6.0 * n))


def critical_difference(k: int, n: int, alpha: float = ALPHA) -> float:
    """Nemenyi critical difference CD = q_α sqrt(k(k+1)/(6N)) of average ranks."""
    return nemenyi_q(k, alpha) * rank_standard_error(k, n)


def holm(p_values, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
    """Holm's (1979) step-down procedure: (rejected, adjusted p-values), in the input's order.

    The i-th smallest p-value (i = 1..m) is compared with α/(m−i+1) while they are all rejected; the
    adjusted p-value is max_{j≤i} min(1, (m−j+1) p_(j))."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_sorted
    return adjusted <= alpha, adjusted


def nemenyi_groups(average_ranks: pd.Series, cd: float) -> list[list[str]]:
    """Maximal runs of algorithms (in rank order) whose average ranks span less than ``cd``: the
    bars of a critical-difference diagram. Singletons are left out."""
    ordered = average_ranks.sort_values(kind="stable")
    names, values = list(ordered.index), ordered.to_numpy(dtype=float)
    groups, last_end = [], -1
    for i in range(len(values)):
        j = i
        while j + 1 < len(values) and values[j + 1] - values[i] < cd:
            j += 1
        if j > i and j > last_end:
            groups.append(names[i:j + 1])
            last_end = j
    return groups


@dataclass
class Friedman:
    """The across-datasets comparison of k algorithms on N datasets (Demšar 2006, §3.2.2)."""

    scores: pd.DataFrame  # datasets × algorithms, the compared values
    better: str
    alpha: float = ALPHA
    ranks: pd.DataFrame = field(init=False)
    average_ranks: pd.Series = field(init=False)  # ascending: best first
    chi2: float = field(init=False)
    chi2_uncorrected: float = field(init=False)
    p_chi2: float = field(init=False)
    iman_davenport: float = field(init=False)
    p_iman_davenport: float = field(init=False)
    p_exact: float | None = field(init=False)

    def __post_init__(self):
        if self.scores.isna().any().any():
            raise ValueError("the Friedman test needs a complete datasets × algorithms table")
        self.ranks = rank_scores(self.scores, self.better)
        self.average_ranks = self.ranks.mean(axis=0).sort_values(kind="stable")
        n, k = self.n_datasets, self.n_algorithms
        r = self.ranks.to_numpy(dtype=float)
        self.chi2 = friedman_statistic(r, tie_correction=True)
        self.chi2_uncorrected = friedman_statistic(r, tie_correction=False)
        self.p_chi2 = float(sps.chi2.sf(self.chi2, k - 1)) if k > 1 else float("nan")
        self.iman_davenport, self.p_iman_davenport = iman_davenport(self.chi2, n, k)
        self.p_exact = friedman_exact_p(r) if k > 1 else None

    @property
    def n_datasets(self) -> int:
        return self.scores.shape[0]

    @property
    def n_algorithms(self) -> int:
        return self.scores.shape[1]

    @property
    def p_value(self) -> float:
        """The p-value the post-hoc tests are gated on: exact when enumerable, else Iman–Davenport."""
        return self.p_exact if self.p_exact is not None else self.p_iman_davenport

    @property
    def p_value_kind(self) -> str:
        return "exact permutation" if self.p_exact is not None else "Iman–Davenport F"

    @property
    def rejects(self) -> bool:
        return bool(self.p_value < self.alpha)

    @property
    def critical_difference(self) -> float:
        return critical_difference(self.n_algorithms, self.n_datasets, self.alpha)

    def nemenyi_groups(self) -> list[list[str]]:
        """The CD diagram's bars; when the Friedman test does not reject, all algorithms form one."""
        if not self.rejects:
            return [list(self.average_ranks.index)] if self.n_algorithms > 1 else []
        return nemenyi_groups(self.average_ranks, self.critical_difference)

    def holm_against(self, control: str | None = None) -> pd.DataFrame:
        """Holm's step-down comparison of every algorithm with ``control`` (default: the best ranked).

        Columns: algorithm, average_rank, z = (R_control − R_i)/SE, p_value, alpha_i (the threshold α/(k−i) of its step),
        adjusted_p, rejected — in the order the procedure tests them (smallest p first)."""
        control = control or self.average_ranks.index[0]
        if control not in self.average_ranks.index:
            raise ValueError(f"unknown control {control!r}; algorithms: {', '.join(self.average_ranks.index)}")
        se = rank_standard_error(self.n_algorithms, self.n_datasets)
        others = [a for a in self.average_ranks.index if a != control]
        z = np.array([(self.average_ranks[control] - self.average_ranks[a]) / se for a in others])
        p = 2 * sps.norm.sf(np.abs(z))
        rejected, adjusted = holm(p, self.alpha)
        frame = pd.DataFrame({"algorithm": others, "average_rank": [self.average_ranks[a] for a in others],
                              "z": z, "p_value": p, "adjusted_p": adjusted, "rejected": rejected})
        frame = frame.sort_values("p_value", kind="stable").reset_index(drop=True)
        frame.insert(4, "alpha_i", self.alpha / (len(others) - np.arange(len(others))))
        return frame

    def summary(self) -> str:
        """One caption sentence with every number a reviewer needs to check the test."""
        n, k = self.n_datasets, self.n_algorithms
        parts = [f"Friedman test over N = {n} datasets, k = {k} algorithms: χ²_F = {self.chi2:.2f} "
                 f"({format_p(self.p_chi2)})", f"Iman–Davenport F_F = {_num(self.iman_davenport)} "
                 f"({format_p(self.p_iman_davenport)})"]
        if self.p_exact is not None:
            parts.append(f"exact permutation {format_p(self.p_exact)}")
        return "; ".join(parts) + "."


def _num(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.2f}"
