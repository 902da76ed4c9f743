"""malt: experiments on matrices whose rows and columns depend on each other.

    import malt
    run = malt.cv(["bmr", "mlknn"], dataset="emotions", missing=0.3, repo="results")
    malt.load("results").summary(by="algorithm")

See `malt.api` (cv, rerun, rescore, load, dataset) and `malt.estimators` (scikit-learn estimators).
"""
__version__ = "0.1.0"

__all__ = ["cv", "rerun", "rescore", "load", "dataset", "__version__"]


def __getattr__(name):  # the API is imported on first use, so `import malt` stays light
    if name in ("cv", "rerun", "rescore", "load", "dataset"):
        from malt import api

        return getattr(api, name)
    raise AttributeError(f"module 'malt' has no attribute {name!r}")
