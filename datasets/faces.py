"""Face image matrices for image completion (PCSA paper §4.2): Frey faces and ORL (AT&T) faces.

Component ``M`` is images × pixels (float, grey levels 0..255); for ORL also a 3-way ``T``
person × image × pixel. The paper's protocol (nf fully observed images, half the pixels of the
others hidden) is the ``missing`` task with ``--task-param complete_rows=nf --missing 0.5``.
"""
from __future__ import annotations

import tarfile

import numpy as np

from .catalogue import DatasetEntry, register_dataset
from .dataset import Dataset

FREY = "matrix/frey-faces/frey_rawface.mat"
ORL = "matrix/orl-faces/att_faces.tar.gz"


def load_frey(roots) -> Dataset:
    from scipy.io import loadmat
    ff = loadmat(str(roots.path(FREY)))["ff"]                 # 560 × 1965 uint8, one image per column
    M = np.ascontiguousarray(ff.T, dtype=float)               # 1965 images × 560 pixels (28 × 20 row-major)
    return Dataset("frey-faces", {"M": M}, {"image_shape": (28, 20)})


def read_pgm(data: bytes) -> np.ndarray:
    """Binary PGM (P5, 8-bit) → (rows, cols) uint8 array."""
    import re
    m = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)   # exactly one whitespace byte before pixels
    if m is None:
        raise ValueError("not a binary PGM file")
    w, h, maxval = (int(g) for g in m.groups())
    if maxval > 255:
        raise ValueError("16-bit PGM is not supported")
    return np.frombuffer(data[m.end(): m.end() + w * h], np.uint8).reshape(h, w)


def load_orl(roots) -> Dataset:
    T = np.zeros((40, 10, 112 * 92))
    with tarfile.open(str(roots.path(ORL)), "r:gz") as tar:
        for member in tar.getmembers():
            if not member.name.endswith(".pgm"):
                continue
            subject, image = member.name.split("/")[-2:]
            img = read_pgm(tar.extractfile(member).read())
            T[int(subject[1:]) - 1, int(image.split(".")[0]) - 1] = img.ravel()
    return Dataset("orl-faces", {"M": T.reshape(400, -1), "T": T}, {"image_shape": (112, 92)})


register_dataset(DatasetEntry(
    "frey-faces", load_frey, "Brendan Frey's face video frames (image completion, PCSA §4.2)",
    "1965 images × 560 pixels (28 × 20)", "Roweis' data page; Frey, Colmenarez & Huang, CVPR 1998",
    files=(FREY,), tasks=("missing",), group="images"))
register_dataset(DatasetEntry(
    "orl-faces", load_orl, "ORL / AT&T faces, 40 people × 10 images (image completion, PCSA §4.2); T is person × image × pixel",
    "400 images × 10304 pixels (112 × 92); T 40 × 10 × 10304", "Samaria & Harter, IEEE WACV 1994",
    files=(ORL,), tasks=("missing",), group="images"))
