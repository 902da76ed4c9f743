"""Package list for the layout of DESIGN.md: three top-level folders installed inside `malt`.

pyproject.toml maps `malt.algorithms` -> algorithms/ (and likewise datasets/, repository/);
this file only enumerates their sub-packages, which a static pyproject list cannot do.
"""
from setuptools import find_packages, setup

MAPPED = {"malt.algorithms": "algorithms", "malt.datasets": "datasets", "malt.repository": "repository"}


def packages():
    found = ["malt"] + [f"malt.{p}" for p in find_packages("malt")]
    for name, folder in MAPPED.items():
        found += [name] + [f"{name}.{p}" for p in find_packages(folder)]
    return found


setup(packages=packages())
