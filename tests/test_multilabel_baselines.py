"""ML-kNN, IBLR-ML and the classifier chain against reference implementations and brute force."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import NearestNeighbors

from malt.algorithms.baselines import MLLR, MLLRParams, log_loss, logistic_path, select_on_path
from malt.algorithms.ccml import CCML, CCMLParams, classifier_chain
from malt.algorithms.iblr import IBLR, IBLRParams, neighbour_label_rates
from malt.algorithms.mlknn import MLkNN, MLkNNParams, mlknn_posteriors, mlknn_tables
from malt.engine.context import Context
from malt.splits import MultilabelSplit
from tests.conftest import require_data, require_reference


def _data(n=120, d=5, L=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(L, d))
    Y = (X @ W.T + rng.normal(size=(n, L)) > 0.3).astype(float)
    return X, Y


def _raw_neighbours(X_tr, X_te, k):
    nn = NearestNeighbors(n_neighbors=k + 1).fit(X_tr)
    nb_tr = nn.kneighbors(X_tr, k + 1, return_distance=False)[:, 1:]  # drop self
    nb_te = nn.kneighbors(X_te, k, return_distance=False)
    return nb_tr, nb_te


def _mlknn_brute(Y, nb_tr, nb_te, k, s):
    """Zhang & Zhou (2007) Fig. 1, transcribed loop by loop."""
    n, L = Y.shape
    out = np.zeros((len(nb_te), L))
    for l in range(L):
        ph1 = (s + Y[:, l].sum()) / (2 * s + n)
        c, cp = np.zeros(k + 1), np.zeros(k + 1)
        for i in range(n):
            delta = int(sum(Y[j, l] for j in nb_tr[i]))
            if Y[i, l] == 1:
                c[delta] += 1
            else:
                cp[delta] += 1
        for t in range(len(nb_te)):
            C = int(sum(Y[j, l] for j in nb_te[t]))
            a = ph1 * (s + c[C]) / (s * (k + 1) + c.sum())
            b = (1 - ph1) * (s + cp[C]) / (s * (k + 1) + cp.sum())
            out[t, l] = a / (a + b)
    return out


@pytest.mark.parametrize("k,s", [(5, 1.0), (8, 0.5)])
def test_mlknn_matches_brute_force_transcription(k, s):
    X, Y = _data()
    nb_tr, nb_te = _raw_neighbours(X[:90], X[90:], k)
    got = mlknn_posteriors(Y[:90], nb_tr, nb_te, k, s)
    np.testing.assert_allclose(got, _mlknn_brute(Y[:90], nb_tr, nb_te, k, s), rtol=1e-12)


def test_mlknn_matches_scikit_multilearn(monkeypatch):
    skml = require_reference("skmultilearn.adapt.mlknn")
    k, s = 6, 1.0
    X, Y = _data(seed=3)
    # scikit-multilearn 0.2.0 calls NearestNeighbors(k) positionally, which current scikit-learn
    # rejects; give it the keyword form of the same estimator.
    monkeypatch.setattr(skml, "NearestNeighbors", lambda n: NearestNeighbors(n_neighbors=n))
    ref = skml.MLkNN(k=k, s=s, ignore_first_neighbours=1).fit(X[:90], Y[:90].astype(int))
    nb_tr, nb_te = _raw_neighbours(X[:90], X[90:], k)
    prior1, like1, like0 = mlknn_tables(Y[:90], nb_tr, k, s)
    np.testing.assert_allclose(prior1, ref._prior_prob_true, rtol=1e-12)
    np.testing.assert_allclose(like1, ref._cond_prob_true.toarray(), rtol=1e-12)
    np.testing.assert_allclose(like0, ref._cond_prob_false.toarray(), rtol=1e-12)
    ref.ignore_first_neighbours = 0  # test points are not training points: keep all k neighbours
    expected = ref.predict(X[90:]).toarray()
    got = mlknn_posteriors(Y[:90], nb_tr, nb_te, k, s)
    np.testing.assert_array_equal((got >= 0.5).astype(int), expected)


def _split(X, Y, n_train, Y_train=None):
    tr, te = np.arange(n_train), np.arange(n_train, len(X))
    return MultilabelSplit(X[tr], Y[tr] if Y_train is None else Y_train, X[te], tr, te)


def test_mlknn_run_uses_standardised_knn_and_handles_unknown_labels():
    X, Y = _data(n=150)
    X[:, 0] *= 100.0  # standardisation must undo this
    ctx = Context.for_arrays(X)
    p = MLkNN().run(_split(X, Y, 110), MLkNNParams(k=7), ctx)
    Z = (X - X[:110].mean(0)) / X[:110].std(0)  # the training rows' statistics: test rows never move the scale
    nb_tr, nb_te = _raw_neighbours(Z[:110], Z[110:], 7)
    np.testing.assert_allclose(p.scores, mlknn_posteriors(Y[:110], nb_tr, nb_te, 7, 1.0), rtol=1e-12)
    # unknown labels: the label's statistics come from the known rows only
    Yn = Y[:110].copy()
    Yn[np.random.default_rng(1).random(Yn.shape) < 0.3] = np.nan
    q = MLkNN().run(_split(X, Y, 110, Yn), MLkNNParams(k=7), ctx)
    assert np.all(np.isfinite(q.scores)) and np.all((q.scores > 0) & (q.scores < 1))
    prior1, _, _ = mlknn_tables(Yn, nb_tr, 7, 1.0)
    np.testing.assert_allclose(prior1, (1 + np.nansum(Yn, 0)) / (2 + (~np.isnan(Yn)).sum(0)))


def test_iblr_features_and_regressions_match_brute_force():
    X, Y = _data(n=140, seed=5)
    ctx = Context.for_arrays(X)
    k = 6
    p = IBLR().run(_split(X, Y, 100), IBLRParams(k=k, C=2.0, select="none"), ctx)
    Z = (X - X[:100].mean(0)) / X[:100].std(0)
    nb_tr, nb_te = _raw_neighbours(Z[:100], Z[100:], k)
    F_tr = np.array([[Y[nb, l].mean() for l in range(Y.shape[1])] for nb in nb_tr])
    F_te = np.array([[Y[nb, l].mean() for l in range(Y.shape[1])] for nb in nb_te])
    np.testing.assert_allclose(neighbour_label_rates(Y[:100], nb_tr), F_tr)
    for l in range(Y.shape[1]):
        ref = LogisticRegression(C=2.0, max_iter=1000).fit(F_tr, Y[:100, l].astype(int))
        np.testing.assert_allclose(p.scores[:, l], ref.predict_proba(F_te)[:, 1], atol=1e-6)


def test_classifier_chain_matches_sklearn_classifier_chain():
    from sklearn.multioutput import ClassifierChain

    X, Y = _data(n=160, seed=7)
    order = np.array([2, 0, 3, 1])
    scores, labels = classifier_chain(X[:120], Y[:120], X[120:], order,
                                      lambda: LogisticRegression(max_iter=1000))
    ref = ClassifierChain(LogisticRegression(max_iter=1000), order=order).fit(X[:120], Y[:120].astype(int))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        np.testing.assert_allclose(scores, ref.predict_proba(X[120:]), atol=1e-6)
    np.testing.assert_array_equal(labels, ref.predict(X[120:]))


def test_chain_with_unknown_labels_and_the_registered_wrapper():
    X, Y = _data(n=160, seed=9)
    Yn = Y[:120].copy()
    Yn[np.random.default_rng(2).random(Yn.shape) < 0.3] = np.nan
    p = CCML().run(_split(X, Y, 120, Yn), CCMLParams(), Context.for_arrays(X, seed=4))
    assert p.scores.shape == (40, 4) and np.all(np.isfinite(p.scores))
    assert np.mean(p.labels == Y[120:]) > 0.7  # the labels are a noisy linear function of X


@pytest.mark.timeout(120)
def test_baselines_quality_bar_on_emotions():
    require_data("multilabel/emotions/emotions-train.arff")
    from malt.tasks import metrics
    from malt.datasets.catalogue import DataRoots, entry

    ds = entry("emotions").loader(DataRoots.default())
    X, Y = np.asarray(ds["X"], float), np.asarray(ds["Y"], float)
    idx = np.random.default_rng(0).permutation(len(X))
    X, Y = X[idx], Y[idx]
    ctx = Context.for_arrays(X)
    split = _split(X, Y, 475)
    # Table 4.4 reports one-error 28-32 % for MLKNN / IBLR / CCML; a broken method sits near 60 %+
    for algo, params in [(MLkNN(), MLkNNParams()), (IBLR(), IBLRParams()), (CCML(), CCMLParams())]:
        p = algo.run(split, params, ctx)
        assert metrics.one_error(Y[475:], p.scores) < 0.38, algo.name


def test_logistic_path_warm_starts_reach_the_cold_fits():
    X, Y = _data(n=150, seed=11)
    Y[:100][np.random.default_rng(0).random((100, 4)) < 0.2] = np.nan
    Cs = (10.0, 0.01, 1.0)
    path = logistic_path(X[:100], Y[:100], X[100:], Cs)
    for i, C in enumerate(Cs):
        for l in range(4):
            known = ~np.isnan(Y[:100, l])
            ref = LogisticRegression(C=C, max_iter=1000).fit(X[:100][known], Y[:100][known, l].astype(int))
            # both stop at lbfgs's gradient tolerance (1e-4) from different starts: 4e-4 apart at most here
            np.testing.assert_allclose(path[i, :, l], ref.predict_proba(X[100:])[:, 1], atol=2e-3)


def test_inner_cv_choice_of_C_is_the_brute_force_choice():
    """select_on_path + malt.selection against a hand-written inner CV: same folds (the run's rng: label-
    stratified, repeated ⌈1000 / n⌉ times), one cold logistic regression per label, fold and C, mean held-out
    log-loss weighted by fold size, and the one-standard-error rule over the per-fold losses."""
    from malt.numerics.selection import repeated_fold_ids

    X_all, Y_all = _data(n=130, d=12, seed=12)
    Y_all = np.where(np.random.default_rng(1).random(Y_all.shape) < 0.15, 1 - Y_all, Y_all)  # label noise: C matters
    X, Y = X_all[:120], Y_all[:120]
    params = MLLRParams(C_grid=(0.001, 0.01, 0.1, 1.0, 100.0))
    choice = select_on_path(params, {"C": params.C_grid}, lambda tr, va: logistic_path(X[tr], Y[tr], X[va], params.C_grid),
                            Y, np.random.default_rng(5), log_loss)
    partitions = repeated_fold_ids(120, params.inner_folds, np.random.default_rng(5), strata=Y)
    assert partitions.shape == (5, 120)  # ⌈1000 / 120⌉ = 9 partitions, capped at 5
    brute, per_fold = [], []
    for C in params.C_grid:
        total, losses = 0.0, []
        for ids in partitions:
            for f in range(params.inner_folds):
                tr, va = ids != f, ids == f
                P = np.column_stack([LogisticRegression(C=C, max_iter=1000).fit(X[tr], Y[tr, l].astype(int))
                                     .predict_proba(X[va])[:, 1] for l in range(4)])
                losses.append(log_loss(Y[va], P))
                total += losses[-1] * va.sum()
        brute.append(total / (120 * len(partitions)))
        per_fold.append(losses)
    np.testing.assert_allclose(choice.scores, brute, rtol=1e-3)
    best = int(np.argmin(brute))
    se = np.std(per_fold[best], ddof=1) / np.sqrt(len(per_fold[best]))
    one_se = next(i for i in range(len(brute)) if brute[i] <= brute[best] + se)
    assert choice.best.C == params.C_grid[one_se]
    assert choice.best.select == "none"
    # the registered run makes the same choice from its own rng and reports it
    p = MLLR().run(_split(X_all, Y_all, 120), MLLRParams(C_grid=params.C_grid, scale=False),
                   Context.for_arrays(X_all, seed=5))
    assert p.diagnostics["selected"] == {"C": choice.best.C}


def test_linear_svm_margins_minimise_the_l2_loss_primal():
    """The linear kernel's margins are the minimiser of ½‖w̃‖² + C Σ max(0, 1 − y w̃ᵀx̃)² (x̃ = (x, s)), found
    here independently by scipy's L-BFGS on that smooth objective; unknown entries left out."""
    from scipy.optimize import minimize

    from malt.algorithms.baselines import LINEAR_INTERCEPT_SCALING, svm_margins

    X, Y = _data(150, 6, 3, seed=4)
    Y[::7, 1] = np.nan
    Xt = np.random.default_rng(5).normal(size=(40, 6))
    M = svm_margins(X, Y, Xt, (0.05, 2.0), "linear")
    s = LINEAR_INTERCEPT_SCALING
    for i, C in enumerate((0.05, 2.0)):
        for j in range(3):
            known = ~np.isnan(Y[:, j])
            Xa = np.column_stack([X[known], np.full(known.sum(), s)])
            y = 2.0 * Y[known, j] - 1

            def objective(w):
                slack = np.maximum(0.0, 1 - y * (Xa @ w))
                return 0.5 * w @ w + C * slack @ slack, w - 2 * C * Xa.T @ (y * slack)

            w = minimize(objective, np.zeros(Xa.shape[1]), jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10000}).x
            np.testing.assert_allclose(M[i, :, j], np.column_stack([Xt, np.full(len(Xt), s)]) @ w, atol=1e-3)


@pytest.mark.parametrize("kernel", ["rbf"])
def test_svm_margins_with_one_shared_kernel_matrix_are_sklearns_own_svc(kernel):
    """The precomputed kernel matrix shared by every label and C gives the margins of scikit-learn's SVC
    computing its kernel itself, label by label (unknown entries left out), at every C."""
    from sklearn.svm import SVC

    from malt.algorithms.baselines import rbf_gamma, svm_candidate_margins, svm_margins, MLSVMParams

    X, Y = _data(150, 6, 3, seed=4)
    Y[::7, 1] = np.nan
    Xt = np.random.default_rng(5).normal(size=(40, 6))
    gamma = rbf_gamma(X, 2.0)
    M = svm_margins(X, Y, Xt, (0.5, 3.0), kernel, gamma)
    for i, C in enumerate((0.5, 3.0)):
        for j in range(3):
            known = ~np.isnan(Y[:, j])
            ref = SVC(C=C, kernel=kernel, gamma=gamma).fit(X[known], Y[known, j].astype(int)).decision_function(Xt)
            np.testing.assert_allclose(M[i, :, j], ref, atol=1e-6)
    options = [MLSVMParams(select="none", kernel="rbf", C=c, gamma_scale=g) for g in (2.0, 1.0) for c in (3.0, 0.5)]
    grouped = svm_candidate_margins(X, Y, Xt, options)
    for o, G in zip(options, grouped):
        np.testing.assert_allclose(G, svm_margins(X, Y, Xt, (o.C,), "rbf", rbf_gamma(X, o.gamma_scale))[0],
                                   atol=1e-12)


def test_mlsvm_halving_and_choice_are_a_hand_written_successive_halving():
    """mlsvm's default selection against one written out with scikit-learn's own SVMs (SVC computing its RBF
    kernel, LinearSVC) and ranking loss: the run's folds (its rng: label-stratified, one partition of 1000
    rows), rung 0 every candidate on 500 random rows of the first fold's 667 training rows (a third is
    under 500), the best 4 of its mean per-row loss (with the one-SE rule's candidate) on to rung 1 (all
    667), its best 2 (likewise) through every fold, the one-SE rule within the best mean's kernel; a
    150-row training part (repeated partitions) is not halved: the same scores as inner_halving=1."""
    from sklearn.metrics import label_ranking_loss
    from sklearn.svm import SVC, LinearSVC

    from malt.algorithms.baselines import LINEAR_INTERCEPT_SCALING, MLSVM, MLSVMParams
    from malt.numerics.selection import repeated_fold_ids

    X_all, Y_all = _data(n=1050, d=5, L=3, seed=21)
    Y_all = np.where(np.random.default_rng(2).random(Y_all.shape) < 0.15, 1 - Y_all, Y_all)
    X, Y = X_all[:1000], Y_all[:1000]
    params = MLSVMParams(scale=False)
    cands = [("linear", C, None) for C in params.linear_C_grid]
    cands += [("rbf", C, g) for C in params.C_grid for g in params.gamma_scale_grid]  # C outer (grid order)

    def margins(c, tr, va):
        kernel, C, g = c
        M = np.empty((va.size, Y.shape[1]))
        for j in range(Y.shape[1]):
            if kernel == "linear":
                model = LinearSVC(C=C, dual=False, intercept_scaling=LINEAR_INTERCEPT_SCALING, tol=1e-6)
            else:
                model = SVC(C=C, kernel="rbf", gamma=g / (X.shape[1] * X[tr].var()))
            M[:, j] = model.fit(X[tr], Y[tr, j].astype(int)).decision_function(X[va])
        return M

    def loss(c, tr, va):
        return label_ranking_loss(Y[va].astype(int), margins(c, tr, va))

    rng = np.random.default_rng(7)
    ids = repeated_fold_ids(1000, params.inner_folds, rng, strata=Y)
    assert len(ids) == 1  # 1000 rows: one partition, halved (a smaller part's repeated ones are not)
    tr = np.flatnonzero(ids[0] != 0)
    firsts = [(np.sort(rng.choice(tr, 500, replace=False)), tr, np.flatnonzero(ids[0] == 0))]  # 667 / 3 < 500

    def rung(which, keep, step):  # per-row losses on the first fold; the one-SE choice kept
        t, v = firsts[0][step], firsts[0][2]
        rows = np.array([[label_ranking_loss(Y[[r]].astype(int), M[[k]]) for k, r in enumerate(v)]
                         for i in which for M in [margins(cands[i], t, v)]])

        mean = rows.mean(1)
        order = list(np.argsort(mean, kind="stable")[:keep])
        se = rows[order[0]].std(ddof=1) / np.sqrt(rows.shape[1])
        one_se = next(i for i in range(len(which)) if mean[i] <= mean[order[0]] + se
                      and cands[which[i]][0] == cands[which[order[0]]][0])
        order[-1] = order[-1] if one_se in order else one_se
        return sorted(which[i] for i in order)

    rung1 = rung(rung(list(range(12)), 4, 0), 2, 1)
    folds = [(np.flatnonzero(p != f), np.flatnonzero(p == f)) for p in ids for f in range(3)]
    per_fold = np.array([[loss(cands[i], t, v) for t, v in folds] for i in rung1])
    mean = (per_fold * [v.size for _, v in folds]).sum(1) / sum(v.size for _, v in folds)
    best = int(np.argmin(mean))
    se = per_fold[best].std(ddof=1) / np.sqrt(len(folds))
    pick = next(i for i in range(2) if cands[rung1[i]][0] == cands[rung1[best]][0] and mean[i] <= mean[best] + se)
    kernel, C, g = cands[rung1[pick]]

    p = MLSVM().run(_split(X_all, Y_all, 1000), params, Context.for_arrays(X_all, seed=7))
    assert p.diagnostics["inner_cv_screened"] == 10
    assert p.diagnostics["selected"] == {"C": C, "kernel": kernel, "gamma_scale": 1.0 if g is None else g}
    np.testing.assert_allclose(p.diagnostics["inner_cv_score"], mean.min(), rtol=1e-9)
    small = [MLSVM().run(_split(X_all[:200], Y_all[:200], 150), MLSVMParams(scale=False, inner_halving=h),
                         Context.for_arrays(X_all[:200], seed=7)) for h in (3, 1)]
    assert small[0].diagnostics["inner_cv_screened"] == 0  # 150 rows: repeated partitions, every candidate
    np.testing.assert_array_equal(small[0].scores, small[1].scores)
