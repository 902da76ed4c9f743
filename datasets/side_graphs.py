"""Rating / interaction matrices with side graphs on rows and columns, for the `ratings` task and the
matrix-variate GP family (Koyejo, Lee & Ghosh 2014 used MovieLens, OMIM gene–disease and Medline;
OMIM/Medline are not public, so these stand in):

* ``ciaodvd``: CiaoDVD movie ratings (1–5) with the undirected user trust graph (Guo et al. 2014);
  17,615 users × 16,121 movies, 72,345 distinct (user, movie) ratings (320 repeated pairs are
  averaged).
* ``ciaodvd-trust``: the deterministic core used for the experiments: users that appear in the trust
  network, movies rated by at least 3 of them (2,390 × 3,205, 22,424 distinct ratings); no random subsampling.
* ``yamanishi-nr|gpcr|ic|e``: Yamanishi et al. (2008) drug–target interactions, rows = targets,
  columns = drugs, every entry observed: value 2 = known interaction, 1 = none (the ratings task
  treats zeros as unobserved; use ``--task-param relevant=1.5`` so relevant = interaction). Row
  graph: symmetrised 5-NN graph of the target sequence similarity (weights = similarity); column
  graph: the same for the drug chemical similarity ((S + Sᵀ)/2). The enzyme set has no target
  similarity file, so ``yamanishi-e`` has no row graph (identity row covariance) — an
  implicit-feedback stand-in for the paper's gene–disease (OMIM) setting.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.sparse as sp

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset

CIAO = "matrix/ciaodvd/"
DTI = "matrix/yamanishi-dti/"


def similarity_knn_graph(S: np.ndarray, k: int = 5) -> sp.csr_matrix:
    """Symmetrised (union) k-nearest-neighbour graph of a similarity matrix, weighted by the similarity
    (malt's one kNN builder, metric 'similarity')."""
    from malt.numerics import graphs

    n = np.asarray(S).shape[0]
    spec = graphs.GraphSpec(k=min(k, n - 1), metric="similarity", weight="similarity", symmetrize="max")
    return graphs.knn_graph(np.asarray(S, float), spec)


def _read_ciao(roots):
    r = pd.read_csv(roots.path(CIAO + "ciao_ratings.txt"), header=None, usecols=[0, 1, 4]).to_numpy(np.int64)
    t = pd.read_csv(roots.path(CIAO + "ciao_trusts.txt"), header=None, usecols=[0, 1]).to_numpy(np.int64)
    return r, t


def _ciao_dataset(name, r, t, meta):
    users, ui = np.unique(r[:, 0], return_inverse=True)
    items, ci = np.unique(r[:, 1], return_inverse=True)
    R = sp.coo_matrix((r[:, 2].astype(float), (ui, ci)), shape=(users.size, items.size)).tocsr()
    C = sp.coo_matrix((np.ones(len(r)), (ui, ci)), shape=R.shape).tocsr()
    R.data /= C.data                                   # average the 320 repeated (user, movie) pairs
    keep = np.isin(t[:, 0], users) & np.isin(t[:, 1], users)
    a, b = np.searchsorted(users, t[keep, 0]), np.searchsorted(users, t[keep, 1])
    G = sp.coo_matrix((np.ones(a.size), (a, b)), shape=(users.size, users.size)).tocsr()
    G = ((G + G.T) > 0).astype(float).tocsr()
    G.setdiag(0)
    G.eliminate_zeros()
    return Dataset(name, {"ratings": R.tocoo(), "row_graph": G},
                   {"row_graph": "undirected CiaoDVD trust network", **meta})


def load_ciaodvd(roots) -> Dataset:
    r, t = _read_ciao(roots)
    return _ciao_dataset("ciaodvd", r, t, {})


def load_ciaodvd_trust(roots) -> Dataset:
    r, t = _read_ciao(roots)
    r = r[np.isin(r[:, 0], np.unique(t))]
    items, cnt = np.unique(r[:, 1], return_counts=True)
    r = r[np.isin(r[:, 1], items[cnt >= 3])]
    return _ciao_dataset("ciaodvd-trust", r, t, {"subset": "users in the trust network; movies rated by >= 3 of "
                                                           "them (deterministic, no random sampling)"})


def _read_labelled(path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    df = pd.read_csv(path, sep="\t", index_col=0)
    return df.to_numpy(float), df.index.to_numpy(str), df.columns.to_numpy(str)


def _dti(code):
    def load(roots) -> Dataset:
        A, targets, drugs = _read_labelled(roots.path(f"{DTI}{code}_admat_dgc.txt"))
        Sd, _, dcols = _read_labelled(roots.path(f"{DTI}{code}_simmat_dc.txt"))
        if not np.array_equal(dcols, drugs):
            raise ValueError(f"drug order of {code}_simmat_dc.txt differs from {code}_admat_dgc.txt")
        r, c = np.indices(A.shape).reshape(2, -1)
        comps = {"ratings": sp.coo_matrix((1.0 + A.ravel(), (r, c)), shape=A.shape),
                 "col_graph": similarity_knn_graph(Sd, 5)}
        meta = {"values": "2 = known interaction, 1 = none (all entries observed)",
                "col_graph": "5-NN of drug chemical similarity", "rows": "targets", "cols": "drugs"}
        if code != "e":
            St, trows, _ = _read_labelled(roots.path(f"{DTI}{code}_simmat_dg.txt"))
            if not np.array_equal(trows, targets):
                raise ValueError(f"target order of {code}_simmat_dg.txt differs from {code}_admat_dgc.txt")
            comps["row_graph"] = similarity_knn_graph(St, 5)
            meta["row_graph"] = "5-NN of target sequence similarity"
        return Dataset(f"yamanishi-{code}", comps, meta)
    return load


register_dataset(DatasetEntry(
    "ciaodvd", load_ciaodvd, "CiaoDVD movie ratings (1-5) with the user trust graph",
    "17,615 users × 16,121 movies, 72,345 ratings", "Guo, Zhang, Thalmann & Yorke-Smith, ASONAM 2014",
    files=(CIAO + "ciao_ratings.txt", CIAO + "ciao_trusts.txt"), tasks=("ratings",), group="ratings"))
register_dataset(DatasetEntry(
    "ciaodvd-trust", load_ciaodvd_trust, "CiaoDVD core: trust-network users, movies rated by >= 3 of them",
    "2,390 users × 3,205 movies, 22,424 ratings", "Guo, Zhang, Thalmann & Yorke-Smith, ASONAM 2014",
    files=(CIAO + "ciao_ratings.txt", CIAO + "ciao_trusts.txt"), tasks=("ratings",), group="ratings"))
for _code, _shape, _full in (("nr", "26 × 54", "nuclear receptors"), ("gpcr", "95 × 223", "GPCRs"),
                             ("ic", "204 × 210", "ion channels"), ("e", "664 × 445", "enzymes (no target graph)")):
    _files = (DTI + f"{_code}_admat_dgc.txt", DTI + f"{_code}_simmat_dc.txt") + (
        () if _code == "e" else (DTI + f"{_code}_simmat_dg.txt",))
    register_dataset(DatasetEntry(
        f"yamanishi-{_code}", _dti(_code), f"Yamanishi drug-target interactions, {_full}; target/drug similarity 5-NN graphs",
        f"{_shape} targets × drugs, all entries (2 = interaction, 1 = none)", "Yamanishi et al., Bioinformatics 2008",
        files=_files, tasks=("ratings",), group="ratings"))
