"""Topic models (dissertation ch. 6): CTM and GPTM variational EM, kernels, the topics task."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from malt.algorithms.topics import ctm, gptm, kernels
from malt.algorithms.topics.models import CTM, GPTM
from malt.engine.context import Context
from malt.numerics.eigenbasis import KroneckerEigenbasis
from malt.datasets.synthetic_topics import synthetic_ctm
from malt.tasks.topics import TopicsTask


@pytest.fixture(scope="module")
def corpus():
    return synthetic_ctm(n_docs=150, vocab_size=60, doc_length=60, seed=1)


def _ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma):
    M = np.broadcast_to(mu, lam.shape)
    return ctm.document_bounds(C, lam, nu2, zeta, beta, M, np.linalg.inv(Sigma), np.linalg.slogdet(Sigma)[1]).sum()


def _nondecreasing(trace):
    t = np.asarray(trace)
    return np.all(np.diff(t) >= -1e-8 * np.abs(t[:-1]))


def test_ctm_every_coordinate_update_raises_the_bound(corpus):
    C, K = corpus["docs"], 3
    rng = np.random.default_rng(0)
    beta = ctm.init_topics(C, K, rng)
    mu, Sigma = np.zeros(K), np.eye(K)
    lam, nu2 = rng.standard_normal((C.shape[0], K)), np.ones((C.shape[0], K))
    zeta = ctm.optimal_zeta(lam, nu2) * 2.0  # deliberately not optimal
    trace = [_ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma)]
    for _ in range(4):
        Sinv = np.linalg.inv(Sigma)
        M = np.broadcast_to(mu, lam.shape)
        zeta = ctm.optimal_zeta(lam, nu2); trace.append(_ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma))
        lam = ctm.update_lambda(C, lam, nu2, zeta, beta, M, Sinv); trace.append(_ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma))
        nu2 = ctm.update_nu2(C, lam, nu2, zeta, Sinv); trace.append(_ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma))
        beta = ctm.update_beta(C, lam, beta); trace.append(_ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma))
        mu = lam.mean(axis=0); trace.append(_ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma))
        Sigma = ctm.update_sigma(lam, nu2, np.broadcast_to(mu, lam.shape), reg=0.0)
        trace.append(_ctm_bound(C, lam, nu2, zeta, beta, mu, Sigma))
    assert _nondecreasing(trace), np.diff(trace)
    assert trace[-1] > trace[0] + 100


@pytest.mark.parametrize("learn_sigma,kernel", [(True, "knn"), (False, "knn"), (True, "identity"), (False, "mustlink")])
def test_gptm_bound_is_monotone(corpus, learn_sigma, kernel):
    C = corpus["docs"]
    Kmat = {"knn": lambda: kernels.knn_kernel(C, 10),
            "identity": lambda: np.eye(C.shape[0]),
            "mustlink": lambda: kernels.mustlink_kernel(corpus["y"], 0.1)}[kernel]()
    fit = gptm.fit_gptm(C, Kmat, 3, np.random.default_rng(0), learn_sigma=learn_sigma, iters=8, e_iters=2, tol=0)
    assert _nondecreasing(fit["bounds"]), np.diff(fit["bounds"])
    # the F and Σ blocks separately: each is the exact maximiser given the rest
    K_eig = fit["K_eig"]
    b0 = gptm.gptm_bound(C, fit["lam"], fit["nu2"], fit["zeta"], fit["beta"], fit["F"], fit["Sigma"], K_eig)
    F_off = fit["F"] + 0.05 * np.random.default_rng(1).standard_normal(fit["F"].shape)
    assert gptm.gptm_bound(C, fit["lam"], fit["nu2"], fit["zeta"], fit["beta"], F_off, fit["Sigma"], K_eig) < b0


def test_sylvester_solution_residual_and_scipy():
    rng = np.random.default_rng(0)
    K, D = 4, 30
    A = rng.standard_normal((K, K)); Sigma = A @ A.T + 0.1 * np.eye(K)
    X = rng.standard_normal((D, 5)); Kmat = kernels.knn_kernel(sp.csr_matrix(np.abs(X)), 5)
    L = rng.standard_normal((K, D))
    F = gptm.solve_F(KroneckerEigenbasis(Sigma, Kmat), L)
    assert np.allclose(Sigma @ F + F @ Kmat, L @ Kmat, atol=1e-9)
    assert np.allclose(F, scipy.linalg.solve_sylvester(Sigma, Kmat, L @ Kmat), atol=1e-9)
    # F is the minimiser of (6.13): the gradient Σ⁻¹(F − L) + F 𝒦⁻¹ vanishes
    assert np.allclose(np.linalg.solve(Sigma, F - L) + F @ np.linalg.inv(Kmat), 0, atol=1e-8)


def test_new_document_F_solves_the_conditional_sylvester(corpus):
    C = corpus["docs"]
    Kall = kernels.knn_kernel(C, 8)
    tr, te = np.arange(120), np.arange(120, 150)
    fit = gptm.fit_gptm(C[tr], Kall[np.ix_(tr, tr)], 3, np.random.default_rng(0), iters=5)
    Fbar, Kbar = gptm.gp_conditional(fit["F"], Kall[np.ix_(tr, tr)], Kall[np.ix_(te, tr)], Kall[np.ix_(te, te)])
    # 6.16/6.17 against the joint Gaussian: F̄ᵀ rows equal the conditional mean of each topic row
    direct = fit["F"] @ np.linalg.inv(Kall[np.ix_(tr, tr)]) @ Kall[np.ix_(tr, te)]
    assert np.allclose(Fbar, direct, atol=1e-6)
    Fs, lam, cond, joint = gptm.infer_new(C[te], fit["beta"], fit["Sigma"], Fbar, Kbar, iters=3)
    S = fit["Sigma"]
    # first-order condition of (6.19): Σ F_* + F_* 𝒦̄ = L_* 𝒦̄ + Σ F̄
    assert np.allclose(S @ Fs + Fs @ Kbar, lam.T @ Kbar + S @ Fbar, atol=1e-8)

    def obj(F):  # (6.19), minimised by F_*
        R, G = lam.T - F, F - Fbar
        return np.trace(R.T @ np.linalg.solve(S, R)) + np.trace(G @ np.linalg.solve(Kbar, G.T))

    F_off = Fs + 0.01 * np.random.default_rng(0).standard_normal(Fs.shape)
    assert obj(Fs) < obj(F_off)
    assert np.all(np.isfinite(cond)) and np.isfinite(joint)


def test_bound_below_exact_likelihood_by_quadrature():
    """K = 2: θ depends on η₁ − η₂ only, so log p(w | μ, Σ, β) is a 1-d Gauss–Hermite integral."""
    rng = np.random.default_rng(3)
    V = 6
    beta = rng.dirichlet(np.ones(V), size=2)
    mu, Sigma = np.array([0.3, -0.2]), np.array([[1.0, 0.4], [0.4, 0.8]])
    n = np.array([[3, 0, 1, 2, 0, 1.0]])
    *_, b = ctm.infer_documents(sp.csr_matrix(n), beta, mu[None], Sigma, iters=100)
    x, w = np.polynomial.hermite_e.hermegauss(200)
    t = mu[0] - mu[1] + np.sqrt(Sigma[0, 0] + Sigma[1, 1] - 2 * Sigma[0, 1]) * x
    th = 1 / (1 + np.exp(-t))
    P = th[:, None] * beta[0] + (1 - th[:, None]) * beta[1]
    exact = np.log(np.sum(w * np.exp(np.log(P) @ n[0])) / np.sqrt(2 * np.pi))
    assert b[0] <= exact
    assert exact - b[0] < 2.0  # the variational gap on a 7-word document is small


def _matched_corr(true, est):
    from scipy.optimize import linear_sum_assignment

    Cm = np.corrcoef(true, est)[: len(true), len(true):]
    r, c = linear_sum_assignment(-Cm)
    return Cm[r, c]


def test_ctm_recovers_simulated_topics():
    ds = synthetic_ctm(n_docs=300, vocab_size=100, doc_length=100, seed=2)
    fit = ctm.fit_ctm(ds["docs"], 3, np.random.default_rng(0), iters=40)
    assert _matched_corr(ds["beta"], fit["beta"]).min() > 0.95


def _run(algo, params, ds, fold=0):
    task = TopicsTask()
    tp = task.Params()
    split = task.split(ds, tp, fold)
    pred = algo.run(split, params, Context.for_arrays(ds["X"], seed=0))
    return task.score(ds, tp, split, pred), pred


def test_topics_task_end_to_end(corpus):
    V = corpus["docs"].shape[1]
    s_ctm, p = _run(CTM(), CTM.Params(iters=15, test_iters=10), corpus)
    assert s_ctm["perplexity"] == pytest.approx(s_ctm["perplexity_conditional"])
    # far better than the unigram-uniform model and than the corpus unigram model
    assert s_ctm["perplexity"] < 0.8 * V
    assert s_ctm["embedding_error"] < 0.3
    assert len(p.diagnostics["top_words"]) == 3
    s_gp, _ = _run(GPTM(), GPTM.Params(iters=15, test_iters=10, kernel="knn"), corpus)
    assert s_gp["perplexity_conditional"] < 0.8 * V
    assert np.isfinite(s_gp["perplexity"]) and s_gp["embedding_error"] < 0.3


def test_kernels_positive_definite_and_structured():
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.poisson(0.5, size=(40, 30)).astype(float))
    from sklearn.metrics.pairwise import cosine_distances as skcos

    # 𝒦_NN (6.21) by brute force on untied data: γ exp(−d/2σ²) on the union of each row's 5 nearest
    Xd = sp.csr_matrix(rng.poisson(3.0, size=(40, 30)).astype(float))
    D = skcos(Xd)
    np.fill_diagonal(D, np.inf)
    A = np.zeros(D.shape, dtype=bool)
    A[np.repeat(np.arange(40), 5), np.argsort(D, axis=1)[:, :5].ravel()] = True
    A |= A.T
    Kd = kernels.knn_kernel(Xd, 5, gamma=2.0, sigma2=0.5)
    off = ~np.eye(40, dtype=bool)
    assert np.allclose(Kd[off], np.where(A, 2.0 * np.exp(-D / (2 * 0.5)), 0.0)[off], atol=1e-12)
    K = kernels.knn_kernel(X, 5, gamma=2.0, sigma2=0.5)
    assert np.allclose(K, K.T) and np.linalg.eigvalsh(K)[0] > 0
    assert ((K > 0).sum(axis=1) - 1 >= 5).all()  # at least k neighbours after symmetrising
    y = np.array([0, 0, 1, 1, 1, -1])
    M = kernels.mustlink_kernel(y, gamma=1.0, c=0.5)
    assert np.linalg.eigvalsh(M)[0] > 0
    assert M[0, 1] == 1.0 and M[0, 2] == 0.0 and M[2, 4] == 1.0 and (M[5, :5] == 0).all()


def test_ctm_heldout_perplexity_matches_true_model_marginal():
    """Held-out perplexity of the fitted CTM vs the true model's marginal perplexity by Monte Carlo
    over η (true β, Gaussian prior with the simulated η's moments). The variational bound makes
    malt's value an upper estimate; it should be within a few per cent."""
    from scipy.special import logsumexp

    ds = synthetic_ctm(n_docs=300, vocab_size=100, doc_length=80, seed=4)
    s, _ = _run(CTM(), CTM.Params(iters=60, smoothing=1e-3), ds)
    split = TopicsTask().split(ds, TopicsTask.Params(), 0)
    C = split.docs_test.toarray()
    rng = np.random.default_rng(0)
    E = rng.multivariate_normal(ds["eta"].mean(0), np.cov(ds["eta"].T), size=4000)
    T = np.exp(E - E.max(1, keepdims=True))
    T /= T.sum(1, keepdims=True)
    ll = logsumexp(C @ np.log(T @ ds["beta"]).T, axis=1) - np.log(len(E))
    oracle = np.exp(-ll.sum() / C.sum())
    print("malt ctm", s["perplexity"], "true-model marginal", oracle)
    assert 0.97 * oracle < s["perplexity"] < 1.05 * oracle, (s["perplexity"], oracle)


def test_real_corpus_ctm_beats_unigram_model():
    """Quality bar on Different100 (20 Newsgroups): the held-out CTM perplexity is below that of the
    smoothed unigram model fitted to the same training documents (computed here in closed form)."""
    from datasets.text import NEWS_ARCHIVE
    from tests.conftest import require_data

    require_data(NEWS_ARCHIVE)
    from malt.datasets.open import open_dataset

    ds = open_dataset("different100")
    s, p = _run(CTM(), CTM.Params(iters=12, test_iters=10), ds)
    split = TopicsTask().split(ds, TopicsTask.Params(), 0)
    q = np.asarray(split.docs_train.sum(axis=0)).ravel() + 0.01
    q /= q.sum()
    unigram = np.exp(-(split.docs_test @ np.log(q)).sum() / split.docs_test.sum())
    assert s["perplexity"] < unigram, (s["perplexity"], unigram)
    assert all(len(t.split()) == 10 for t in p.diagnostics["top_words"])


def test_gplvm_gradients_match_finite_differences():
    import scipy.optimize

    from malt.algorithms.topics import gplvm

    rng = np.random.default_rng(0)
    D, V, q = 25, 8, 2
    Y = rng.standard_normal((D, V))
    th = np.concatenate([rng.standard_normal(D * q), [0.1, 0.2, -1.0]])
    f = lambda t: gplvm.gplvm_objective(t, Y @ Y.T, V, q)  # noqa: E731
    g_fd = scipy.optimize.approx_fprime(th, lambda t: f(t)[0], 1e-6)
    assert np.allclose(f(th)[1], g_fd, rtol=1e-4, atol=1e-4 * np.abs(g_fd).max())
    fit = gplvm.fit_gplvm(Y, q, 50)
    Yn = rng.standard_normal((4, V))
    B, C = Yn @ Y.T @ fit["Kinv"], fit["Kinv"] @ Y @ Y.T @ fit["Kinv"]
    x = rng.standard_normal(4 * q)
    h = lambda z: gplvm.new_point_objective(z, fit, B, C, (Yn ** 2).sum(1), V)  # noqa: E731
    g_fd = scipy.optimize.approx_fprime(x, lambda z: h(z)[0], 1e-6)
    assert np.allclose(h(x)[1], g_fd, rtol=1e-4, atol=1e-4 * np.abs(g_fd).max())


def test_gplvm_embedding_separates_simulated_classes(corpus):
    from malt.algorithms.topics.gplvm import GPLVM

    s, _ = _run(GPLVM(), GPLVM.Params(iters=40), corpus)
    assert set(s) == {"embedding_error"} and s["embedding_error"] < 0.35


def _halves(C):
    """Document completion (Wallach et al. 2009): alternate tokens of each document go to an observed
    and an evaluated half; returns both as count matrices and the observed halves as word-id lists."""
    rows = [np.repeat(r.indices, r.data.astype(int)) for r in C]
    obs, ev = [w[0::2] for w in rows], [w[1::2] for w in rows]

    def counts(parts):
        r = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
        return sp.csr_matrix((np.ones(r.size), (r, np.concatenate(parts))), shape=C.shape)

    return counts(obs), counts(ev), obs


def _completion_perplexity(theta, beta, ev):
    e = ev.tocoo()
    return float(np.exp(-np.sum(e.data * np.log((theta @ beta)[e.row, e.col])) / e.data.sum()))


def test_ctm_matches_tomotopy_ctm_on_document_completion():
    """malt's CTM against tomotopy's CTModel (Gibbs sampling, Mimno et al. 2008) on the same training
    documents, K = 3, scored by the same rule: each model infers θ for the observed half of every
    held-out document by its own inference (malt: variational posterior mean of softmax(η); tomotopy:
    `infer`), and the perplexity of the other half under θβ is compared. Words unseen in training are
    dropped for both (tomotopy has no β for them). tomotopy's ll_per_word is not used: it scores the
    sampled assignments jointly (log p(w, z, η)), not log p(w). The true model (simulated β and η
    moments, θ's posterior mean by importance sampling from the prior) bounds what either can reach."""
    from tests.conftest import require_reference

    tp = require_reference("tomotopy")

    ds = synthetic_ctm(n_docs=300, vocab_size=200, doc_length=80, seed=4)
    split = TopicsTask().split(ds, TopicsTask.Params(), 0)
    seen = np.asarray(split.docs_train.sum(axis=0)).ravel() > 0
    train, test = split.docs_train[:, seen].tocsr(), split.docs_test[:, seen].tocsr()
    obs, ev, obs_words = _halves(test)
    K = 3

    fit = ctm.fit_ctm(train, K, np.random.default_rng(0), iters=100, smoothing=0.01)
    lam, nu2, _, _ = ctm.infer_documents(obs, fit["beta"], np.broadcast_to(fit["mu"], (obs.shape[0], K)),
                                         fit["Sigma"], 30)
    eta = lam[:, None] + np.sqrt(nu2)[:, None] * np.random.default_rng(0).standard_normal((lam.shape[0], 500, K))
    th = np.exp(eta - eta.max(-1, keepdims=True))
    theta_malt = (th / th.sum(-1, keepdims=True)).mean(axis=1)
    ours = _completion_perplexity(theta_malt, fit["beta"], ev)

    mdl = tp.CTModel(k=K, eta=0.01, seed=1)
    for r in train:
        mdl.add_doc([str(w) for w in np.repeat(r.indices, r.data.astype(int))])
    mdl.train(500, workers=1)
    col = {w: i for i, w in enumerate(mdl.used_vocabs)}
    order = [col[str(j)] for j in range(train.shape[1])]
    beta_tp = np.array([mdl.get_topic_word_dist(k) for k in range(K)])[:, order]
    theta_tp = np.array(mdl.infer([mdl.make_doc([str(w) for w in o]) for o in obs_words], iterations=100,
                                  workers=1)[0])
    reference = _completion_perplexity(theta_tp, beta_tp, ev)

    true_beta = ds["beta"][:, seen] / ds["beta"][:, seen].sum(axis=1, keepdims=True)
    E = np.random.default_rng(1).multivariate_normal(ds["eta"].mean(0), np.cov(ds["eta"].T), size=4000)
    T = np.exp(E - E.max(1, keepdims=True))
    T /= T.sum(1, keepdims=True)
    lw = obs @ np.log(T @ true_beta).T
    W = np.exp(lw - lw.max(1, keepdims=True))
    oracle = _completion_perplexity((W / W.sum(1, keepdims=True)) @ T, true_beta, ev)
    print(f"document completion perplexity: malt {ours:.2f}, tomotopy {reference:.2f}, true model {oracle:.2f}")
    assert abs(ours / reference - 1) < 0.05, (ours, reference)
    assert 0.99 * oracle < ours < 1.03 * oracle, (ours, oracle)


def test_mustlink_labels_draw_exact_counts_one_per_class_first():
    from malt.algorithms.topics.models import mustlink_labels

    y = np.repeat([0, 1, 2], 20)
    for n in (3, 10, 60):
        out = mustlink_labels(y, GPTM.Params(kernel="mustlink", n_labelled=n), np.random.default_rng(n))
        known = out >= 0
        assert known.sum() == n and np.all(out[known] == y[known]) and set(out[known]) == {0, 1, 2}
    frac = mustlink_labels(y, GPTM.Params(kernel="mustlink", labelled=0.5), np.random.default_rng(0))
    assert 15 < (frac >= 0).sum() < 45


def test_mustlink_kernel_with_every_label_separates_the_classes(corpus):
    """Figure 6.4's claim, transductive as in the thesis (every document in the fit): with every label
    in 𝒦_ML (within-class prior variance c = 0.1) a linear SVM trained on a third of the documents' F
    classifies the rest almost perfectly, better than with no must-link pairs at all."""
    from sklearn.svm import LinearSVC

    y, docs = np.asarray(corpus["y"]), corpus["docs"]
    lab = np.arange(len(y)) % 3 == 0

    def error(labels):
        F = gptm.fit_gptm(docs, kernels.mustlink_kernel(labels, gamma=1.0, c=0.1), 3, np.random.default_rng(0),
                          iters=15)["F"].T
        Z = (F - F.mean(0)) / F.std(0)
        return np.mean(LinearSVC(C=1.0).fit(Z[lab], y[lab]).predict(Z[~lab]) != y[~lab])

    e_all, e_none = error(y), error(np.full_like(y, -1))
    assert e_all < 0.05 and e_all <= e_none, (e_all, e_none)


def test_inner_cv_chooses_the_kernel_strength_and_reports_it(corpus):
    """select=inner-cv through malt/numerics/selection.py: the chosen (γ, c) come from the grids, are reported,
    and the final fit with them equals a run with those values given (same seed after selection aside,
    the perplexities are finite and the selection is deterministic)."""
    p = GPTM.Params(kernel="knn", select="inner-cv", inner_folds=2, gamma_grid=(1.0, 0.01), c_grid=(0.1,),
                    iters=6, test_iters=4)
    s1, pred = _run(GPTM(), p, corpus)
    s2, pred2 = _run(GPTM(), p, corpus)
    d = pred.diagnostics
    assert d["selected"]["gamma"] in (1.0, 0.01) and d["c"] == 0.1 and d["inner_cv_candidates"] == 2
    assert d["selected"] == pred2.diagnostics["selected"] and s1 == s2
    assert np.isfinite(s1["perplexity_conditional"])


def test_top_words_script_reads_what_malt_cv_stored(tmp_path):
    """Tables 6.3-6.5 come from a `malt cv` run: the script lists each topic's words from the stored
    diagnostics, and fails with one line on a folder that is not a repository."""
    from click.testing import CliRunner

    from malt.cli import main
    from tests.helpers import figure_script

    repo = tmp_path / "repo"
    result = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--algo", "ctm", "--param", "iters=3",
                                       "--param", "test_iters=3", "--param", "top_n=4", "--dataset",
                                       "synthetic-ctm", "--task", "topics", "--folds", "2", "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    script = figure_script("topics_top_words")
    text = script.top_word_tables(repo, "synthetic-ctm", fold=1)
    assert "### ctm" in text and "| Topic 1 | Topic 2 | Topic 3 |" in text
    rows = [line for line in text.splitlines() if line.startswith("| w")]
    assert len(rows) == 4 and all(len(r.split("|")) == 5 for r in rows)
    assert script.main([str(tmp_path / "nothing-here"), "--dataset", "x"]) == 2


def test_gptm_bound_has_no_floor_on_sigma_when_F_follows_lambda(corpus):
    """Why a learned Σ collapses in GPTM (measured in figures.d/ch6-topics.md): with F e_d = λ_d and
    Σ = diag(ν²_d) = s I, the Gaussian terms of Table 6.1 and the entropy cancel exactly
    (−½ log|Σ| − ½ tr(diag ν² Σ⁻¹) + ½ Σ log ν² − K/2 log 2π + K/2 (log 2π + 1) = 0), so with ζ at
    (6.10) each document's bound is word_ll − N log Σ_i exp(λ_i + s/2): closed form, and increasing as
    s → 0. MAP over F leaves nothing that keeps Σ away from 0 once F can follow λ."""
    C = corpus["docs"]
    rng = np.random.default_rng(3)
    K = 3
    lam = rng.normal(size=(C.shape[0], K))
    beta = rng.dirichlet(np.ones(C.shape[1]), size=K)
    N = np.asarray(C.sum(axis=1)).ravel()
    word_ll = ctm.expected_counts(C, lam, beta)[2]
    bounds = []
    for s in (1.0, 0.1, 0.01, 1e-4):
        nu2 = np.full_like(lam, s)
        zeta = ctm.optimal_zeta(lam, nu2)
        b = ctm.document_bounds(C, lam, nu2, zeta, beta, lam, np.eye(K) / s, K * np.log(s))
        closed = word_ll - N * np.log(np.exp(lam + s / 2).sum(axis=1))
        assert np.allclose(b, closed, rtol=1e-12, atol=1e-9)
        bounds.append(b.sum())
    assert np.all(np.diff(bounds) > 0)


@pytest.mark.parametrize("scale, collapses", [(10.0, True), (0.01, False)])
def test_gptm_learned_sigma_collapses_only_under_a_wide_kernel(corpus, scale, collapses):
    """𝒦 = scale·I: when the kernel's variance dwarfs the spread of λ, F takes all of λ and the
    learned Σ shrinks towards 0 (the fixed point of 6.12/6.14 above); with a narrow kernel F stays
    near 0 and Σ keeps λ's spread, as CTM's does."""
    C = corpus["docs"]
    fit = gptm.fit_gptm(C, scale * np.eye(C.shape[0]), 3, np.random.default_rng(0), iters=25, smoothing=0.01)
    trace = np.trace(fit["Sigma"])
    spread = float(np.sum(np.var(fit["lam"], axis=0)))
    assert (trace < 0.05 * spread) if collapses else (trace > 0.5 * spread), (trace, spread)


def test_unigram_baseline_by_hand():
    """``unigram``: q_w ∝ training count + smoothing; a held-out document scores Σ_w n_dw log q_w."""
    from malt.algorithms.topics.models import Unigram
    from malt.splits import TopicsSplit

    train = sp.csr_matrix(np.array([[2, 0, 1], [0, 1, 1]], dtype=float))
    test = sp.csr_matrix(np.array([[1, 1, 0], [0, 0, 3]], dtype=float))
    split = TopicsSplit(train, test, ["a", "b", "c"], None, None, np.arange(2), np.arange(2, 4), 0)
    pred = Unigram().run(split, Unigram.Params(smoothing=0.5), Context.for_arrays(np.zeros((4, 1)), seed=0))
    q = np.array([2.5, 1.5, 2.5]) / 6.5
    assert np.allclose(pred.extras["loglik"], [np.log(q[0]) + np.log(q[1]), 3 * np.log(q[2])], rtol=1e-12)


def test_diagnostics_script_pairs_folds_against_the_reference(tmp_path):
    """The ch6 diagnostics come from what `malt cv` stored: per configuration the tr Σ of each fold's
    fit and the per-fold metric difference to ctm on the same folds."""
    from click.testing import CliRunner

    from malt.cli import main
    from tests.helpers import figure_script
    from malt.repository.store import Repository

    repo = tmp_path / "repo"
    base = ["cv", "--repo", str(repo), "--dataset", "synthetic-ctm", "--task", "topics", "--folds", "2", "--quiet",
            "--param", "iters=3", "--param", "test_iters=3"]
    for algo in (["--algo", "ctm", "--param", "restarts=1"],
                 ["--algo", "gptm", "--param", "kernel=identity", "--param", "restarts=1"]):
        result = CliRunner().invoke(main, base + algo, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    script = figure_script("topics_diagnostics")
    runs = script.collect(repo)["synthetic-ctm"]
    assert set(runs) == {"ctm", "gptm kernel=identity sigma=learned"}
    store = Repository(repo).check_readable()
    units = {}
    for exp in store.experiments():
        units.update(store.experiment(exp).read_log()[0])
    metric = {(r["algorithm"], r["fold"]): r["metrics"]["perplexity_conditional"] for r in units.values()
              if r.get("status") == "ok" and "fold" in r}
    diffs = np.array([metric["gptm", f] - metric["ctm", f] for f in (0, 1)])
    row = next(line for line in script.report(script.collect(repo)).splitlines() if line.startswith("| gptm"))
    size = max(abs(diffs.mean()), diffs.std(ddof=1))
    assert f"{script.number(diffs.mean(), '+', size)} ± {script.number(diffs.std(ddof=1), '', size)}" in row and f"{int(np.sum(diffs < 0))}/2" in row
    # Tables 6.2/6.6 cells: ours (mean ± sample std over the stored folds, n/5 when partial) / thesis
    fake = {"different100": {"ctm": {0: {"metrics": {"perplexity_conditional": 1000.0}},
                                     1: {"metrics": {"perplexity_conditional": 1100.0}}}}}
    table = script.thesis_tables(fake)
    assert "| different100 | – / – | 1050 ± 71 (2/5) / 1231 ± 32 | – / 1195 ± 49 | – / 1183 ± 36 |" in table
    # best-of-2 CTM units in the same repository never mix with the single-start ones
    result = CliRunner().invoke(main, base + ["--algo", "ctm", "--param", "restarts=2"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    single, best = script.collect(repo, restarts=1)["synthetic-ctm"], script.collect(repo)["synthetic-ctm"]
    assert single["ctm"] == runs["ctm"] and set(best) == {"ctm"}
    assert {r["params"].get("restarts") for r in best["ctm"].values()} == {2}


def test_coherence_ctm_recovers_planted_topic_words_unigram_does_not():
    """Three topics on disjoint word sets (10 words each), every document drawn from one of them. The
    planted topics' top-10 words are their supports; NPMI is a mean over word pairs, so a model whose
    topics recover the supports scores exactly the planted coherence on the same held-out documents,
    and the unigram baseline's one word list (mixing topics, pairs that never co-occur) scores below.
    The reference documents are the training fold."""
    from malt.algorithms.topics.models import Unigram
    from malt.tasks.metrics import npmi_coherence

    rng = np.random.default_rng(0)
    n_docs, K, W = 150, 3, 10
    topic = rng.integers(0, K, n_docs)
    counts = np.zeros((n_docs, K * W))
    for d, t in enumerate(topic):
        counts[d, t * W:(t + 1) * W] = rng.multinomial(20, np.full(W, 1 / W))
    ds = {"docs": sp.csr_matrix(counts), "X": counts, "y": topic, "vocab": [f"w{j}" for j in range(K * W)]}
    task = TopicsTask()
    split = task.split(ds, task.Params(), 0)
    planted = npmi_coherence(np.arange(K * W).reshape(K, W), split.docs_train)
    s_ctm, _ = _run(CTM(), CTM.Params(iters=20, test_iters=10), ds)
    s_uni, _ = _run(Unigram(), Unigram.Params(), ds)
    assert planted > 0.5
    assert s_ctm["coherence"] == pytest.approx(planted, abs=1e-12)
    assert s_uni["coherence"] < planted - 0.5


def test_rescore_of_a_topics_experiment_gives_the_scores_of_the_run(tmp_path):
    """`malt rescore` recomputes every topics metric from the stored predictions: the joint bound is a
    scalar, and the store gives it back as one (it once came back with shape (1,), and rescore
    crashed with a traceback)."""
    from click.testing import CliRunner

    import malt
    from malt.cli import main

    repo = tmp_path / "repo"
    args = ["cv", "--repo", str(repo), "--algo", "ctm", "--algo", "unigram", "--param", "iters=3",
            "--param", "test_iters=3", "--dataset", "synthetic-ctm", "--task", "topics", "--folds", "2", "--quiet"]
    assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    before = malt.load(repo).frame.sort_values(["algorithm", "fold", "metric"])["value"].to_numpy()
    result = CliRunner().invoke(main, ["rescore", "--repo", str(repo)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    after = malt.load(repo).frame.sort_values(["algorithm", "fold", "metric"])["value"].to_numpy()
    assert before.size == after.size > 0
    assert np.array_equal(before, after, equal_nan=True)


@pytest.mark.parametrize("algo, params", [
    (CTM(), CTM.Params(iters=5, test_iters=5, restarts=1)),
    (GPTM(), GPTM.Params(iters=5, test_iters=5, kernel="knn", restarts=1)),
])
def test_restarts_keep_the_start_with_the_highest_training_bound(corpus, algo, params):
    """restarts=3: the kept fit is the start whose final training bound is highest (checked against
    the three starts' bounds), start 1 is the single fit of restarts=1 under the same seed, and the
    starts differ (else the test could not tell a kept start from any other)."""
    _, single = _run(algo, params, corpus)
    scores, pred = _run(algo, dataclasses.replace(params, restarts=3), corpus)
    d = pred.diagnostics
    assert len(d["restart_bounds"]) == 3 and len(set(d["restart_bounds"])) > 1
    assert d["restart_bounds"][0] == single.diagnostics["final_bound"]
    assert d["final_bound"] == max(d["restart_bounds"]) == d["restart_bounds"][d["restart_kept"]]
    assert "restart_bounds" not in single.diagnostics and np.isfinite(scores["perplexity_conditional"])


@pytest.mark.parametrize("algo", [CTM(), GPTM()])
def test_ctm_and_gptm_keep_the_best_of_five_starts_by_default(corpus, algo):
    """The defaults (ctm v2, gptm v3) fit five starts and keep the one with the highest training bound:
    with one start GPTM's default sat level with CTM's on Different100 (figures.d/ch6-topics.md,
    'Defaults'), with five it is below it."""
    assert algo.Params().restarts == 5
    _, pred = _run(algo, algo.Params(iters=3, test_iters=3), corpus)
    d = pred.diagnostics
    assert len(d["restart_bounds"]) == 5 and len(set(d["restart_bounds"])) > 1
    assert d["final_bound"] == max(d["restart_bounds"]) == d["restart_bounds"][d["restart_kept"]]
