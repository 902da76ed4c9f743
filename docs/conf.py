"""Sphinx configuration of malt's documentation site (`make docs`; CI builds it with warnings as errors).

The CLI reference and the tasks-and-metrics page are generated from the code at build time (click's
own help of every command; every task's declarations), so they cannot drift from what `malt` does.
The gallery (``docs/examples/plot_*.py``) runs when the docs are built, on synthetic and bundled data
only, so it builds anywhere in a minute or two.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # docs/reference_pages.py
os.environ.setdefault("MPLBACKEND", "Agg")

project = "malt"
author = "the malt developers"
copyright = "2026, the malt developers"
try:
    from importlib.metadata import version as _version

    release = _version("malt")
except Exception:  # pragma: no cover - the docs build needs malt installed (make docs does)
    release = "unknown"
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints", "examples/README.rst"]
templates_path = ["_templates"]
default_role = "code"  # `name` in a docstring is code, as in the source comments

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": False}
autodoc_typehints = "none"  # the numpydoc sections say the types
numpydoc_show_class_members = False  # autosummary lists them; numpydoc would list them twice
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

intersphinx_mapping = {}  # no network at build time: references to other projects stay plain text

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "gallery",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "min_reported_time": 1,
}

html_theme = "pydata_sphinx_theme"
html_title = f"malt {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path: list[str] = []
html_show_sourcelink = False


_CODE_SPAN = re.compile(r"(``.*?``|`[^`]*`)")


def plain_bars(app, what, name, obj, options, lines):
    """Our docstrings write |x| for an absolute value or a cardinality (``|Y ∩ P|``, ``|C_grid|``);
    reStructuredText would read it as a substitution. Bars outside code spans become literal bars."""
    for i, line in enumerate(lines):
        if "|" in line and not line.lstrip().startswith(("|", "+")):
            parts = _CODE_SPAN.split(line)
            lines[i] = "".join(part if j % 2 else part.replace("|", "\\|") for j, part in enumerate(parts))


def skip_routing_methods(app, what, name, obj, skip, options):
    """scikit-learn generates ``set_fit_request`` & co. on every estimator class (metadata routing); they
    are scikit-learn's to document, and their docstrings cite scikit-learn's own glossary."""
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    from reference_pages import write_generated_pages

    app.connect("builder-inited", lambda app: write_generated_pages(HERE / "generated"))
    app.connect("autodoc-process-docstring", plain_bars, priority=100)  # before numpydoc parses sections
    app.connect("autodoc-skip-member", skip_routing_methods)
