"""Rows of the missing-value family: pma-map and softimpute at their defaults on CAL500 with 25 % of the
label entries hidden (fold 0 of the missing task; labels as ±1 log-odds, scored by sign error %), beside
fancyimpute's SoftImpute (a published implementation, defaults) and scikit-learn's IterativeImputer
(BayesianRidge, defaults), both given the same matrix with NaN at every unseen entry.

The peer of a row is the fastest one within ``EQUAL`` percentage points of our error; when none reaches
it, the most accurate, and the note says so. Our floor: one fit at the setting our selection chose.
"""
from __future__ import annotations

import numpy as np

from tests.benchmarks.equal_accuracy.measure import Row, compare, peer_or_reason, run_once
from tests.benchmarks.equal_accuracy.ratings import _roots

EQUAL = 0.1
"""Error-rate difference (percentage points) counted as equal accuracy."""
MODELS = ("pma-map", "softimpute")


def _split():
    _roots()
    from malt.datasets.catalogue import DataRoots, entry
    from malt.tasks.missing import MissingParams, MissingTask

    data = entry("cal500").loader(DataRoots.default())
    task, tp = MissingTask(), MissingParams(missing=0.25)
    return data, task, tp, task.split(data, tp, 0)


def error_of(task, tp, data, split, values) -> float:
    from malt.splits import Prediction

    packed = task.pack(split, Prediction(values=values), tp)
    return 100.0 * task.score_packed(data, tp, split, packed)["error"]


def ours(name, data, task, tp, split, **params):
    from malt.engine.context import Context
    from malt.registry import get

    def fn():
        algo = get(name)()
        pred = algo.run(split, algo.Params(**params), Context(task.features(data), data_key=data.hash, seed=0, dataset=data))
        return error_of(task, tp, data, split, pred.values)
    return fn


def _adapt_to_current_sklearn(fancy) -> None:
    """fancyimpute 0.7.0 (its latest release) calls ``check_array(X, force_all_finite=False)``, a keyword
    scikit-learn 1.8 renamed ``ensure_all_finite``; pass it on under the new name. Nothing else of the
    peer changes."""
    import importlib

    from sklearn.utils import check_array

    def renamed(X, *args, force_all_finite=None, **kwargs):
        if force_all_finite is not None:
            kwargs.setdefault("ensure_all_finite", force_all_finite)
        return check_array(X, *args, **kwargs)

    for module in ("solver", "soft_impute"):
        mod = importlib.import_module(f"{fancy.__name__}.{module}")
        if hasattr(mod, "check_array"):
            mod.check_array = renamed


def peers(data, task, tp, split):
    """{label: fn} of the peers that import, and {label: why not} of those that do not."""
    found, missing = {}, {}
    fancy, why = peer_or_reason("fancyimpute")
    if fancy is None:
        missing["fancyimpute.SoftImpute()"] = why
    else:
        _adapt_to_current_sklearn(fancy)

        def soft():
            return error_of(task, tp, data, split, fancy.SoftImpute(verbose=False).fit_transform(split.M))
        found["fancyimpute.SoftImpute()"] = soft

    def iterative():
        from sklearn.experimental import enable_iterative_imputer  # noqa: F401
        from sklearn.impute import IterativeImputer

        return error_of(task, tp, data, split, IterativeImputer(random_state=0).fit_transform(split.M))
    found["sklearn IterativeImputer()"] = iterative
    return found, missing


def rows(quick: bool) -> list[Row]:
    from tests.benchmarks.equal_accuracy.ratings import chosen_setting

    data, task, tp, split = _split()
    found, missing = peers(data, task, tp, split)
    if quick:
        found.pop("sklearn IterativeImputer()", None)
    accuracy = {label: run_once(fn) for label, fn in found.items()}
    baseline = run_once(ours("column-mean", data, task, tp, split))[0]
    out = []
    for model in MODELS:
        fn = ours(model, data, task, tp, split)
        acc = run_once(fn)[0]
        row = Row(model, "cal500, 25 % hidden, fold 0", "error %", "lower",
                  peer_missing="; ".join(f"{k}: {v}" for k, v in missing.items()),
                  baseline="column means", baseline_acc=baseline)
        peer = None
        if accuracy:
            matching = [k for k, v in accuracy.items() if v[0] <= acc + EQUAL]
            label = (min(matching, key=lambda k: accuracy[k][1]) if matching
                     else min(accuracy, key=lambda k: accuracy[k][0]))
            if not matching:
                row.note = "no peer reached ours; the most accurate shown"
            row.peer, peer = label, found[label]
        setting = chosen_setting(model, data, task, tp, split)
        floor = ours(model, data, task, tp, split, **setting) if setting else None
        out.append(compare(row, fn, peer, floor=floor, repeats=1 if quick else 3))
        if setting:
            out[-1].extra["chosen"] = {k: v for k, v in setting.items() if k != "select"}
    return out
