"""malt: experiments on matrices whose rows and columns depend on each other.

    import malt
    run = malt.cv(["bmr", "mlknn"], dataset="emotions", missing=0.3, repo="results")
    malt.load("results").summary(by="algorithm")

See `malt.api` (cv, rerun, rescore, forget, load, dataset, split) and `malt.estimators` (scikit-learn estimators).

The package is laid out by the parts of the design; each folder's docstring says its job and what
it may import (checked by the import-linter contracts in pyproject.toml):

* ``malt.cli`` — the command line, a thin layer over ``malt.api`` (the Python entry points);
* ``malt.engine`` — units, the run context, provenance, migration and repair of stores;
* ``malt.tasks`` — the CV protocols, their metrics and declarations;
* ``malt.numerics`` — the numeric building blocks every model family shares;
* ``malt.results`` — the tidy result table, summaries, tables, figures, statistics, report;
* ``malt.algorithms``, ``malt.datasets``, ``malt.repository`` — models, data, the on-disk store;
* ``malt.params``, ``malt.registry``, ``malt.splits``, ``malt.errors`` — the vocabulary a plugin
  algorithm imports.
"""
from malt import moved

__version__ = "0.1.0"

__all__ = ["cv", "rerun", "rescore", "forget", "load", "dataset", "split", "__version__"]

moved.install()


def __getattr__(name):  # the API is imported on first use, so `import malt` stays light
    if name in ("cv", "rerun", "rescore", "forget", "load", "dataset", "split"):
        from malt import api

        return getattr(api, name)
    raise AttributeError(f"module 'malt' has no attribute {name!r}")
