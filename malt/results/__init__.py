"""Results: the tidy table of stored units and everything drawn from it.

* ``result_set`` — `ResultSet`, one row per unit × metric, with summaries;
* ``describe`` — what the presentation needs from the task declarations (labels, directions, folds);
* ``tables``, ``plotting``, ``cd_diagram``, ``report`` — LaTeX/markdown/HTML tables, figures,
  critical-difference diagrams, the one-page HTML report;
* ``stats``, ``ranks`` — fold-aware tests, Friedman/Nemenyi/Holm over datasets;
* ``formatting``, ``style``, ``outputs`` — one convention for numbers, figure style, safe writes;
* ``published`` — the papers' numbers our reproductions are set beside.

May import: `malt.repository` (to read stored units), `malt.tasks` (the declarations) and the
vocabulary. Never an algorithm, the registry, the engine, the command line or `malt.api`.
"""
from malt.results.result_set import ResultSet

__all__ = ["ResultSet"]


def __getattr__(name):  # names the old flat module `malt.results` had (one release)
    from malt import moved

    return moved.moved_attribute("malt.results", name)
