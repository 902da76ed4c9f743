"""The numeric building blocks every model family shares — one implementation of each.

* ``eigenbasis`` — the Kronecker-sum eigenbasis: Sylvester/Stein solves, preconditioning, exact
  sampling (PMA, matrix-variate GPs, PCSA, BMR);
* ``graphs`` — the one kNN-graph builder, Laplacians, normalised adjacencies;
* ``linalg`` — the one standardiser, distances, RBF kernels, jitter, batched triangular solves;
* ``selection`` — the one inner-CV model selector behind every ``select='inner-cv'``;
* ``threads`` — the BLAS threads a computation runs with.

May import: numpy, scipy, scikit-learn, threadpoolctl and malt's vocabulary (params, errors). Never
the engine, the store, tasks, results, datasets, the registry or any algorithm: everything here
works on plain arrays.
"""
