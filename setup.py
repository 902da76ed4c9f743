"""Package list for the layout of DESIGN.md: three top-level folders installed inside `malt`.

pyproject.toml maps `malt.algorithms` -> algorithms/ (and likewise datasets/, repository/);
this file only enumerates their sub-packages, which a static pyproject list cannot do. Data-only
folders (malt/results/published) are listed too, as namespace packages, so setuptools does not warn
that an importable folder is missing from `packages`.
"""
import warnings

from setuptools import find_namespace_packages, setup
from setuptools.warnings import InformationOnly

MAPPED = {"malt.algorithms": "algorithms", "malt.datasets": "datasets", "malt.repository": "repository"}

# The editable install of a mapped layout always tells the user to beware of folders named like the
# package: here they *are* the package (DESIGN.md, "Layout"), so the notice only hides malt's first
# screen. Nothing else is silenced.
warnings.filterwarnings("ignore", message="Editable installation", category=InformationOnly)


def packages():
    def found(folder):
        return [p for p in find_namespace_packages(folder) if "__pycache__" not in p.split(".")]

    names = ["malt"] + [f"malt.{p}" for p in found("malt")]
    for name, folder in MAPPED.items():
        names += [name] + [f"{name}.{p}" for p in found(folder)]
    return names


setup(packages=packages())
