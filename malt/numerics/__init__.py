"""The numeric building blocks every model family shares — one implementation of each.

* ``eigenbasis`` — the Kronecker-sum eigenbasis: Sylvester/Stein solves, preconditioning, exact
  sampling (PMA, matrix-variate GPs, PCSA, BMR);
* ``kron_observed`` — the Kronecker-sum posterior restricted to observed entries, by conjugate
  gradients in low-rank eigenbases (PMA's and the matrix-variate GPs' large rating matrices);
* ``graphs`` — the one kNN-graph builder, Laplacians, normalised adjacencies;
* ``linalg`` — the one standardiser, distances, RBF kernels, jitter, batched triangular solves;
* ``selection`` — the one inner-CV model selector behind every ``select='inner-cv'``;
* ``threads`` — the BLAS threads a computation runs with;
* ``decisions`` / ``stratify`` — multi-label thresholds learned on out-of-fold scores; iteratively
  stratified folds.

May import: numpy, scipy, scikit-learn, threadpoolctl and malt's vocabulary (params, errors). Never
the engine, the store, tasks, results, datasets, the registry or any algorithm: everything here
works on plain arrays.
"""
