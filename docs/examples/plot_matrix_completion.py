"""
Completing a matrix whose rows and columns are correlated
=========================================================

Probabilistic Matrix Addition (Agovic et al. 2011) models a matrix as the sum of a Gaussian process
over its rows and one over its columns. Here its MAP completion (:class:`malt.estimators.PMAImputer`)
fills hidden entries of a matrix drawn from the PMA model, beside the column-mean baseline and
scikit-learn's ``KNNImputer``, as more and more entries are hidden.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.impute import KNNImputer

import malt
from malt.estimators import PMAImputer

M = malt.dataset("synthetic-pma-50x50")["M"]  # 50 × 50, drawn from the PMA model (Figure 5.2's data)
rng = np.random.default_rng(0)
fractions = [0.1, 0.2, 0.3, 0.4, 0.5]
errors = {"PMA (MAP)": [], "KNNImputer (k=5)": [], "column mean": []}
for fraction in fractions:
    hidden = rng.random(M.shape) < fraction
    X = np.where(hidden, np.nan, M)
    completions = {"PMA (MAP)": PMAImputer().fit_transform(X),
                   "KNNImputer (k=5)": KNNImputer(n_neighbors=5).fit_transform(X),
                   "column mean": np.where(hidden, np.nanmean(X, axis=0), X)}
    for name, completed in completions.items():
        errors[name].append(np.sqrt(np.mean((completed[hidden] - M[hidden]) ** 2)))

for name, values in errors.items():
    print(f"{name:>18}: " + "  ".join(f"{v:.3f}" for v in values))

# %%
# The column mean is the reference every completion must beat; PMA uses both covariances.
fig, ax = plt.subplots(figsize=(4.5, 3))
for name, values in errors.items():
    style = {"linestyle": "--", "color": "grey"} if name == "column mean" else {"marker": "o"}
    ax.plot([100 * f for f in fractions], values, label=name, **style)
ax.set_xlabel("Hidden entries (%)")
ax.set_ylabel("RMSE on hidden entries, lower is better")
ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
fig.tight_layout()
