"""
A first experiment: models beside a reference baseline
======================================================

Cross-validate two multi-label models and the trivial ``label-prior`` reference (every label decided
by its training majority) on synthetic correlated labels, with and without 30 % of the training
labels hidden. This is what ``malt cv`` does from the command line; the experiment is stored unit by
unit in a repository, and everything below is read back from it.
"""
import tempfile
from pathlib import Path

import malt

repo = Path(tempfile.mkdtemp()) / "results"
for missing in (0.0, 0.3):
    run = malt.cv(["mllr", "mlknn", "label-prior"], dataset="synthetic-multilabel", missing=missing, folds=3,
                  repo=repo, quiet=True)
    print(run.experiment, f"{run.ran} units run")

# %%
# Mean ± std per setting, in each metric's unit
# ----------------------------------------------
# ``summary()`` reports every metric in the unit it declares — percent metrics ×100, with a ``unit``
# column saying so — exactly as ``malt show`` and ``malt table`` print them.
results = malt.load(repo)
summary = results.summary(by=["algorithm", "metric"])
print(summary[summary["metric"].isin(["one_error", "coverage"])].round(2).to_string(index=False))

# %%
# The tables of ``malt table``
# ----------------------------
# One table per metric for a swept setting: the best mean in bold, ties with the best marked.
print(results.table(metrics=["one_error"]))

# %%
# The figures of ``malt plot``
# ----------------------------
# The reference baseline is a dashed line; far from the models, it stays off the scale and its value
# goes into the legend, so the models' differences keep the whole axis.
from malt.results.plotting import plot_all  # noqa: E402

figures = plot_all(results, Path(tempfile.mkdtemp()), metrics=["one_error", "hamming_loss"], formats=("png",),
                   keep=True)
print([item.paths[0].name for item in figures])
