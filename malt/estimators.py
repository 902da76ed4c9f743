"""scikit-learn estimators over malt's algorithms: the same registered numeric cores, in pipelines.

    from malt.estimators import BMRClassifier, MLkNNClassifier, PMAImputer, LabelPropagationGF
    clf = BMRClassifier(ridge=10.0).fit(X, Y)          # Y: (n, L) 0/1, NaN = unknown entry
    clf.predict(X_new); clf.predict_proba(X_new)         # (m, L) decisions and per-label scores
    PMAImputer().fit_transform(M_with_nans)             # like scikit-learn's imputers
    LabelPropagationGF().fit(X, y).transduction_         # like LabelSpreading: -1 marks unlabelled points

Each estimator's constructor parameters are its algorithm's declared parameters (same names,
defaults and validation; `get_params`/`set_params`/`clone` work, so do `Pipeline` and
`GridSearchCV`). An algorithm that splits into `fit` and `predict` (BMR, ML-kNN) fits once in `fit`;
the others fit and predict in one call of their `run` when asked to predict. `make(name)` gives an
estimator class for any registered algorithm of the multilabel, missing or semisupervised task.
"""
from __future__ import annotations

import inspect

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from malt import registry
from malt.engine.context import Context
from malt.errors import InvalidParameterError
from malt.splits import MissingSplit, MultilabelSplit, SemiSupervisedSplit


class _MaltEstimator(BaseEstimator):
    """Either a generic wrapper (constructor ``algorithm``, ``params``, ``random_state``; the
    algorithm is checked against the registered ones of ``task`` when fitting) or, through
    `_with_params`, one algorithm's estimator whose constructor parameters are its Params fields."""

    task: str = ""  # the malt task whose algorithms the wrapper accepts
    check_exemptions: dict[str, str] = {}  # scikit-learn check name -> why it cannot pass (see the docstring)

    def _algo(self):
        choices = [n for n, a in registry.algorithms().items() if self.task in a.tasks]
        if not isinstance(self.algorithm, str) or self.algorithm not in choices:
            raise ValueError(f"The 'algorithm' parameter of {type(self).__name__} must be one of "
                             f"{', '.join(choices)}. Got {self.algorithm!r} instead.")
        return registry.get(self.algorithm)

    def _param_values(self, algo) -> dict:
        values = dict(self.params or {})
        unknown = sorted(set(values) - set(algo.Params.names()))
        if unknown:
            raise ValueError(f"The 'params' of {type(self).__name__} name no parameter of '{algo.name}': "
                             f"{', '.join(unknown)}; its parameters are {', '.join(algo.Params.names())}.")
        return values

    def _malt_params(self):
        algo = self._algo()
        try:
            return algo.Params(**self._param_values(algo))
        except InvalidParameterError as err:
            raise ValueError(str(err)) from None

    def _context(self, X):
        seed = getattr(self, "random_state", None)
        algo = self._algo()
        return Context(X, seed=0 if seed is None else int(seed), producer=f"{algo.name}@{algo.version}")


def _with_params(cls, algorithm: str):
    """Give ``cls`` an explicit __init__ whose keyword parameters are the algorithm's (what
    scikit-learn's get_params reads), plus random_state for the algorithm's seeded randomness."""
    fields = registry.get(algorithm).Params.describe()
    names = [f["name"] for f in fields] + ["random_state"]
    defaults = {f["name"]: f["default"] for f in fields}
    defaults["random_state"] = None

    def __init__(self, **kwargs):
        unknown = set(kwargs) - set(names)
        if unknown:
            raise TypeError(f"{type(self).__name__} got unexpected parameter(s) {', '.join(sorted(unknown))}")
        for name in names:
            setattr(self, name, kwargs.get(name, defaults[name]))

    def _algo(self):
        return registry.get(algorithm)

    def _param_values(self, algo) -> dict:
        return {name: getattr(self, name) for name in algo.Params.names()}

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=defaults[n]) for n in names])
    cls.__init__, cls._algo, cls._param_values = __init__, _algo, _param_values
    cls.algorithm = algorithm
    return cls


def expected_failed_checks(estimator) -> dict[str, str]:
    """The scikit-learn estimator checks ``estimator`` is exempt from, with the reason (each is also
    in its class docstring): what `check_estimator`/`parametrize_with_checks` take as
    ``expected_failed_checks``."""
    return dict(type(estimator).check_exemptions)


def _document_exemptions(cls):
    """Append the class's check exemptions, each named with its reason, to its docstring."""
    if cls.check_exemptions:
        lines = "\n".join(f"    * ``{name}``: {why}" for name, why in cls.check_exemptions.items())
        cls.__doc__ = (f"{(cls.__doc__ or '').rstrip()}\n\n    Exempt from scikit-learn's estimator checks "
                       f"(`expected_failed_checks`):\n\n{lines}\n")
    return cls


def _check_X(X, name="X"):
    from sklearn.utils.validation import check_array

    return check_array(X, accept_sparse="csr", dtype=float, ensure_all_finite=True, input_name=name)


class MultilabelEstimator(ClassifierMixin, _MaltEstimator):
    """A multi-label classifier: ``fit(X, Y)`` with Y (n, L) of 0/1 (NaN for an unknown entry);
    ``predict`` gives 0/1 decisions, ``predict_proba`` per-label probabilities. A 1-d ``y`` (binary or
    multi-class) is fit as one label per class and predicted as the most probable class.

    ``predict`` returns the algorithm's decisions (the Hamming-family ones of `malt.numerics.decisions`) and
    ``predict_proba`` its probabilities: those it reports (BMR's calibration map, centred on its
    thresholds), else its scores when they are probabilities already (ML-kNN's posteriors), else their
    logistic function.

    ``algorithm`` is any registered algorithm of the multilabel task (default ML-kNN, a standard
    multi-label baseline); ``params`` a dict of its parameters (its defaults when None). The named
    classes below (`BMRClassifier`, `MLkNNClassifier`, those of `make`) take the parameters directly."""

    task = "multilabel"

    def __init__(self, algorithm="mlknn", params=None, random_state=None):
        self.algorithm = algorithm
        self.params = params
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y):
        from sklearn.utils.multiclass import check_classification_targets

        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        X = _check_X(X)
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
        if y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1 and not np.issubdtype(y.dtype, np.floating)):
            y = y.ravel()
            check_classification_targets(y)
            self.classes_ = np.unique(y)
            if self.classes_.size < 2:
                raise ValueError("y has 1 class; a classifier needs at least two")
            Y = (y[:, None] == self.classes_[None, :]).astype(float)
            Y = Y[:, 1:] if self.classes_.size == 2 else Y
            self.multilabel_ = False
        else:
            Y = np.asarray(y, dtype=float)
            if Y.ndim != 2:
                raise ValueError("y must be 1-d class labels or a 2-d (n_samples, n_labels) array of 0/1 labels")
            known = Y[~np.isnan(Y)]
            if known.size == 0 or not np.isin(known, (0.0, 1.0)).all():
                raise ValueError("Unknown label type: a 2-d y must hold 0/1 labels (NaN for unknown entries)")
            self.classes_ = np.array([0, 1])  # of every label (scikit-learn's multilabel convention)
            self.multilabel_ = True
        self.X_train_, self.Y_train_ = X, Y
        self.n_features_in_ = X.shape[1]
        algo = self._algo()
        self.model_ = None
        if hasattr(algo, "fit_model"):
            split = MultilabelSplit(X, Y, X[:0], np.arange(X.shape[0]), np.arange(0), 0)
            self.model_ = algo().fit_model(split, self._malt_params(), self._context(X))
        return self

    def _prediction(self, X):
        check_is_fitted(self, "Y_train_")
        X = _check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        algo = self._algo()
        n = self.X_train_.shape[0]
        dense = [A.toarray() if hasattr(A, "toarray") else A for A in (self.X_train_, X)]
        split = MultilabelSplit(self.X_train_, self.Y_train_, X, np.arange(n), np.arange(n, n + X.shape[0]), 0)
        ctx = self._context(np.vstack(dense))
        if self.model_ is not None:
            return algo().predict_model(self.model_, split, self._malt_params(), ctx)
        return algo().run(split, self._malt_params(), ctx)

    def predict_proba(self, X):
        prediction = self._prediction(X)
        P = np.asarray(prediction.extras.get("probabilities", prediction.scores), dtype=float)
        if P.min(initial=0.0) < 0 or P.max(initial=1.0) > 1:
            P = 1.0 / (1.0 + np.exp(-P))
        if self.multilabel_:
            return P
        if len(self.classes_) == 2:
            return np.column_stack([1.0 - P[:, 0], P[:, 0]])
        return P / np.where(P.sum(axis=1, keepdims=True) > 0, P.sum(axis=1, keepdims=True), 1.0)

    def predict(self, X):
        """The algorithm's label decisions (the Hamming-family ones of `malt.numerics.decisions`, learned on the
        training rows)."""
        check_is_fitted(self, "Y_train_")
        if self.multilabel_:
            return np.asarray(self._prediction(X).labels).astype(int)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class ImputerEstimator(TransformerMixin, _MaltEstimator):
    """Impute the NaN entries of a matrix (transductive, like scikit-learn's KNNImputer: rows seen in
    ``fit`` help complete new rows). ``row_features`` (n, d), when given to ``fit``/``transform``,
    is the side information the row kernel is built from.

    ``algorithm`` is any registered algorithm of the missing task (default PMA's MAP estimate,
    `PMAImputer`); ``params`` a dict of its parameters (its defaults when None)."""

    task = "missing"

    def __init__(self, algorithm="pma-map", params=None, random_state=None):
        self.algorithm = algorithm
        self.params = params
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def fit(self, X, y=None, row_features=None):
        from sklearn.utils.validation import check_array

        self.X_fit_ = check_array(X, dtype=float, ensure_all_finite="allow-nan")
        self.row_features_ = None if row_features is None else check_array(row_features, dtype=float)
        self.n_features_in_ = self.X_fit_.shape[1]
        return self

    def transform(self, X, row_features=None):
        from sklearn.utils.validation import check_array

        check_is_fitted(self, "X_fit_")
        X = check_array(X, dtype=float, ensure_all_finite="allow-nan")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        same = X.shape == self.X_fit_.shape and np.array_equal(X, self.X_fit_, equal_nan=True)
        M = X if same else np.vstack([self.X_fit_, X])
        features = self.row_features_ if same else (
            None if self.row_features_ is None or row_features is None
            else np.vstack([self.row_features_, check_array(row_features, dtype=float)]))
        hidden = np.isnan(M)
        if not hidden.any():
            return X.copy()
        split = MissingSplit(M, hidden, features, np.arange(M.shape[0]), "real", 0)
        values = np.asarray(self._algo()().run(split, self._malt_params(), self._context(features)).values)
        out = np.where(hidden, values, M)
        return out if same else out[self.X_fit_.shape[0]:]


class TransductiveClassifier(ClassifierMixin, _MaltEstimator):
    """Graph-based semi-supervised classification like scikit-learn's LabelSpreading: ``fit(X, y)``
    with y = -1 for unlabelled points sets ``transduction_`` (a label for every point) and
    ``label_distributions_``. New points are labelled by the induction formula of Delalleau, Bengio &
    Le Roux (2005) — the graph-weighted average of their k nearest training points' label
    distributions, with the algorithm's own graph weighting and width — as LabelSpreading.predict
    does, so one point's label never depends on the other points predicted with it.

    A kNN graph over fewer points than k + 1 links every point to all the others (k is capped at
    n − 1 for that fit, as ML-kNN caps it on a small training part). ``algorithm`` is any registered
    algorithm of the semisupervised task (default the Gaussian fields of `LabelPropagationGF`);
    ``params`` a dict of its parameters (its defaults when None)."""

    task = "semisupervised"
    check_exemptions = {
        "check_classifiers_classes": "its last case fits the labels {-1, 1}, and -1 marks an unlabelled point "
                                     "(as in LabelSpreading, which this check gives other labels by name), "
                                     "leaving one class to propagate",
    }

    def __init__(self, algorithm="gf", params=None, random_state=None):
        self.algorithm = algorithm
        self.params = params
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y):
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import check_X_y

        X, y = check_X_y(X, y, accept_sparse="csr", dtype=float)
        labelled = y != -1
        if not labelled.any():
            raise ValueError("no labelled point: y must hold class labels (and -1 for unlabelled points)")
        check_classification_targets(y[labelled])
        self.classes_ = np.unique(y[labelled])
        if self.classes_.size < 2:
            raise ValueError("y has 1 class among the labelled points; label propagation needs labelled points of "
                             "at least two classes")
        codes = np.full(len(y), -1, dtype=np.int64)
        codes[labelled] = np.searchsorted(self.classes_, y[labelled])
        self.X_ = X
        self.n_features_in_ = X.shape[1]
        split = SemiSupervisedSplit(X, codes, len(self.classes_), np.flatnonzero(codes < 0), 0)
        prediction = self._algo()().run(split, _capped_k(self._malt_params(), X.shape[0]), self._context(X))
        F = (np.asarray(prediction.scores, dtype=float) if prediction.scores is not None
             else np.eye(len(self.classes_))[np.asarray(prediction.labels, dtype=int)])
        self.label_distributions_ = _normalise(F)
        self.transduction_ = self.classes_[np.argmax(F, axis=1)]
        return self

    def predict_proba(self, X):
        from malt.numerics import graphs

        check_is_fitted(self, "transduction_")
        X = _check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        spec = self._malt_params().graph_spec()
        n = self.X_.shape[0]
        k = min(spec.k, n)
        stacked = (sp_vstack([self.X_, X]) if hasattr(self.X_, "toarray") or hasattr(X, "toarray")
                   else np.vstack([self.X_, X]))
        train_idx, train_dist = graphs.neighbours(self.X_, min(spec.k, n - 1), spec.metric, scale=spec.scale)
        width = graphs.median_width(train_dist) if spec.width == "median" else spec.width
        idx, dist = graphs.neighbours(stacked, k, spec.metric, scale=spec.scale,
                                      query=np.arange(n, n + X.shape[0]), among=np.arange(n), exclude_self=False)
        weights = graphs.edge_weights(dist, graphs.GraphSpec(**{**spec.to_dict(), "width": width}))
        F = np.einsum("mk,mkc->mc", weights, self.label_distributions_[idx])
        return _normalise(F)

    def predict(self, X):
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


def _capped_k(params, n: int):
    """``params`` with its neighbour count(s) capped at the n − 1 other points (unchanged when they fit)."""
    names = type(params).names()
    changes = {}
    if n >= 2 and "k" in names and params.k > n - 1:
        changes["k"] = n - 1
    if n >= 2 and "k_grid" in names and max(params.k_grid, default=0) > n - 1:
        changes["k_grid"] = tuple(dict.fromkeys(min(k, n - 1) for k in params.k_grid))
    return params.derived(**changes) if changes else params


def sp_vstack(blocks):
    import scipy.sparse as sp

    return sp.vstack([sp.csr_matrix(b) for b in blocks]).tocsr()


def _normalise(F: np.ndarray) -> np.ndarray:
    F = np.clip(F, 0.0, None)
    total = F.sum(axis=1, keepdims=True)
    return np.where(total > 0, F / np.where(total > 0, total, 1.0), 1.0 / F.shape[1])


_BASES = {"multilabel": MultilabelEstimator, "missing": ImputerEstimator, "semisupervised": TransductiveClassifier}


def make(algorithm: str, task: str | None = None) -> type:
    """An estimator class for a registered algorithm (multilabel, missing or semisupervised task)."""
    algo = registry.get(algorithm)
    choices = [t for t in ("multilabel", "missing", "semisupervised") if t in algo.tasks]
    task = task or (choices[0] if choices else None)
    if task not in _BASES or task not in algo.tasks:
        raise InvalidParameterError(f"No estimator for '{algorithm}' on task {task!r}; it supports "
                                    f"{', '.join(sorted(algo.tasks))}.")
    name = "".join(part.capitalize() for part in algorithm.replace("-", " ").split()) + "Estimator"
    cls = type(name, (_BASES[task],), {"__doc__": f"{algo.summary()}\n\n{_BASES[task].__doc__}",
                                       "__module__": __name__})
    return _with_params(cls, algorithm)  # the base's docstring, exemptions included


class BMRClassifier(MultilabelEstimator):
    """Bayesian Multivariate Regression (Agovic 2011, §4.3): correlated logistic labels, variational EM."""


class MLkNNClassifier(MultilabelEstimator):
    """ML-kNN (Zhang & Zhou 2007): Bayes rule on the label counts of the k nearest neighbours."""


class PMAImputer(ImputerEstimator):
    """Probabilistic Matrix Addition, MAP (Agovic 2011, ch. 5): completes a matrix whose rows and
    columns are both correlated (row kernel from ``row_features`` when given)."""


class LabelPropagationGF(TransductiveClassifier):
    """Gaussian fields / harmonic functions on a kNN graph (Zhu et al. 2003; Agovic 2011, eq. 3.8)."""


_with_params(BMRClassifier, "bmr")
_with_params(MLkNNClassifier, "mlknn")
_with_params(PMAImputer, "pma-map")
_with_params(LabelPropagationGF, "gf")
for _public in (MultilabelEstimator, ImputerEstimator, TransductiveClassifier, BMRClassifier, MLkNNClassifier,
                PMAImputer, LabelPropagationGF):
    _document_exemptions(_public)
del _public
