"""The engine: runs an experiment's units and commits each one to the store as it finishes.

* ``runner`` — unit keys, the plan of an experiment, running units in process, in local workers or
  on a Dask cluster, scoring, committing;
* ``context`` — the run context an algorithm receives (cached kernels and kNN graphs, the unit's
  rng, progress);
* ``progress`` — units done, ETA; ``provenance`` — code, libraries and machine of each session;
* ``migrate`` / ``repair`` — bring an old store to the current format; keep every intact record;
* ``forget`` — take a mistaken setting, algorithm or experiment out, crash-safe and logged;
* ``memory`` — each unit's own peak resident memory.

May import: `malt.registry` (to find algorithms by name), `malt.tasks`, `malt.repository`,
`malt.datasets`, `malt.numerics` and the vocabulary (params, splits, errors). Never the command
line, `malt.api` or `malt.results`; no algorithm imports the engine (they get a context).
"""


def __getattr__(name):  # `from malt.engine import Plan` as when the engine was one module (one release)
    from malt import moved

    return moved.moved_attribute("malt.engine", name)
