"""Named rating datasets for the `ratings` task (Koyejo, Lee & Ghosh 2014 §5 used MovieLens, OMIM
and Medline; the last two are not public, so trust-network and drug–target sets stand in).

Components: ``ratings`` COO (n_rows, n_cols) (zeros are not ratings), optional ``row_graph`` /
``col_graph`` sparse symmetric side graphs.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset

ML = "matrix/movielens-100k/"
JESTER = "matrix/jester/jester-data-1.csv.gz"
JESTER_SHIFT = 11.0
"""Added to Jester's ratings (in [-10, 10], 0 a rating) so that none is 0, the sparse "not rated"."""


def knn_graph(X: np.ndarray, k: int) -> sp.csr_matrix:
    """Symmetrised (union) unweighted k-nearest-neighbour graph (Euclidean) over the rows of X
    (malt's one kNN builder)."""
    from malt.numerics import graphs

    return graphs.knn_graph(X, graphs.GraphSpec(k=k, metric="euclidean", weight="binary", symmetrize="max"))


def _index(ids):
    u, inv = np.unique(ids, return_inverse=True)
    return u, inv


def load_movielens(roots) -> Dataset:
    d = np.loadtxt(roots.path(ML + "u.data"), dtype=np.int64)
    R = sp.coo_matrix((d[:, 2].astype(float), (d[:, 0] - 1, d[:, 1] - 1)), shape=(943, 1682))
    users = [line.split("|") for line in roots.path(ML + "u.user").read_text(encoding="latin-1").splitlines() if line]
    age = np.array([float(u[1]) for u in users])
    occ = sorted({u[3] for u in users})
    Xu = np.column_stack([(age - age.mean()) / age.std(), np.array([u[2] == "M" for u in users], float),
                          np.array([[u[3] == o for o in occ] for u in users], float)])
    items = [line.split("|") for line in roots.path(ML + "u.item").read_text(encoding="latin-1").splitlines() if line]
    Xi = np.array([[float(g) for g in it[-19:]] for it in items])
    return Dataset("movielens-100k", {"ratings": R, "row_graph": knn_graph(Xu, 10), "col_graph": knn_graph(Xi, 10)},
                   {"row_graph": "10-NN of users on (age, gender, occupation)", "col_graph": "10-NN of items on genres"})


def _trust(name, folder):
    def load(roots) -> Dataset:
        r = np.loadtxt(roots.path(f"matrix/{folder}/ratings.txt"))
        t = np.loadtxt(roots.path(f"matrix/{folder}/trust.txt"))
        uid, ui = _index(np.concatenate([r[:, 0], t[:, 0], t[:, 1]]))
        rows, tr_a, tr_b = ui[:len(r)], ui[len(r):len(r) + len(t)], ui[len(r) + len(t):]
        iid, ci = _index(r[:, 1])
        R = sp.coo_matrix((r[:, 2], (rows, ci)), shape=(uid.size, iid.size))
        R.sum_duplicates()
        G = sp.coo_matrix((np.ones(len(t)), (tr_a, tr_b)), shape=(uid.size, uid.size)).tocsr()
        G = ((G + G.T) > 0).astype(float)
        G.setdiag(0)
        G.eliminate_zeros()
        return Dataset(name, {"ratings": R, "row_graph": G}, {"row_graph": "undirected trust network"})
    return load


def load_jester(roots) -> Dataset:
    """Jester dataset 1, part 1 (Goldberg et al. 2001): column 0 the user's number of ratings, columns 1-100
    the jokes' ratings in [-10, 10], 99 = not rated. Dense-ish (72 % observed): every pair of users co-rates
    jokes, so a user × user moment kernel has no sparse structure (`MomentKernel` recomputes it by blocks).
    Stored shifted by ``JESTER_SHIFT`` (to [1.05, 21]): 5,383 ratings are exactly 0, which a sparse rating
    matrix would read as "not rated"; RMSE and MAE do not change under the shift."""
    import pandas as pd

    table = pd.read_csv(roots.path(JESTER), header=None, compression="gzip").to_numpy(float)
    values = table[:, 1:]
    if not np.array_equal((values != 99).sum(axis=1), table[:, 0]):
        raise ValueError("jester-data-1.csv: column 0 does not count the rated jokes of its row")
    rows, cols = np.nonzero(values != 99)
    R = sp.coo_matrix((values[rows, cols] + JESTER_SHIFT, (rows, cols)), shape=values.shape)
    return Dataset("jester", {"ratings": R}, {"values": f"ratings in [-10, 10] + {JESTER_SHIFT:g}", "rows": "users",
                                              "cols": "jokes"})


register_dataset(DatasetEntry(
    "movielens-100k", load_movielens, "MovieLens 100K ratings with user-attribute and item-genre kNN graphs",
    "943 users × 1682 items, 100,000 ratings 1–5", "GroupLens (Harper & Konstan 2015)",
    files=(ML + "u.data", ML + "u.user", ML + "u.item"), tasks=("ratings",), group="ratings"))
register_dataset(DatasetEntry(
    "filmtrust", _trust("filmtrust", "filmtrust"), "FilmTrust ratings (0.5–4) with the user trust network",
    "users × films, ratings 0.5–4", "Guo, Zhang & Yorke-Smith, IJCAI 2013",
    files=("matrix/filmtrust/ratings.txt", "matrix/filmtrust/trust.txt"), tasks=("ratings",), group="ratings"))
register_dataset(DatasetEntry(
    "jester", load_jester, "Jester jokes: dataset 1 part 1, continuous ratings, no side information",
    "24,983 users × 100 jokes, 1,810,455 ratings in [-10, 10] (stored + 11)", "Goldberg, Roeder, Gupta & Perkins, Inf. Retr. 2001",
    files=(JESTER,), tasks=("ratings",), group="ratings"))
