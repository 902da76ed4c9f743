"""Values (arrays, sparse matrices, dicts of them, string lists) <-> HDF5 files with a content digest.

Files are built in memory (an HDF5 file image) and written by `files.atomic_write`, so the HDF5
library never writes to the disk itself: a full disk is one clean error from our own write, never a
crash inside HDF5 or a file that looks whole but is not. Every file carries the BLAKE2b digest of
its content (names, dtypes, shapes and bytes of every array); `read` recomputes it, so a flipped bit
in data or metadata is detected, never used.

Dense float arrays are stored uncompressed: gzip saved 4–10 % of their size at ~1 s CPU per 44 MiB
(issue 18); integer index arrays of sparse matrices compress well and cheaply, so they keep gzip
above 64 KiB.
"""
from __future__ import annotations

import hashlib
import io
import json

import h5py
import numpy as np
import scipy.sparse as sp

from malt.errors import RepositoryError

COMPRESS_INTEGERS_ABOVE = 64 << 10


class DamagedFile(RepositoryError):
    """A stored file whose content does not match its digest, or that cannot be parsed."""


def to_bytes(value, attrs: dict | None = None) -> bytes:
    """An HDF5 file image holding ``value`` under 'value', its digest and ``attrs`` (JSON)."""
    buffer = io.BytesIO()
    digest = hashlib.blake2b(digest_size=16)
    with h5py.File(buffer, "w", libver="latest") as f:
        _write(f, "value", value, digest, "value")
        f.attrs["digest"] = digest.hexdigest()
        f.attrs["meta"] = json.dumps(attrs or {}, sort_keys=True, default=str)
    return buffer.getvalue()


def from_bytes(data: bytes, where: str):
    """(value, attrs) from an image made by `to_bytes`; DamagedFile if it does not verify."""
    try:
        with h5py.File(io.BytesIO(data), "r") as f:
            digest = hashlib.blake2b(digest_size=16)
            value = read_node(f["value"], digest, "value")
            stored = f.attrs["digest"]
            meta = json.loads(f.attrs["meta"])
    except DamagedFile:
        raise
    except Exception as err:  # any parse failure of a damaged image (OSError, KeyError, ValueError, ...)
        raise DamagedFile(f"{where} is damaged ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})") \
            from None
    if isinstance(stored, bytes):
        stored = stored.decode(errors="replace")
    if stored != digest.hexdigest():
        raise DamagedFile(f"{where} is damaged (its content does not match its digest)")
    return value, meta


def read_meta(path) -> dict:
    """Only the attributes of a file (for listings); {} if unreadable. The file is opened like every
    repository file (`files.open_file`: no link followed, nothing but a regular file)."""
    import os

    from .files import open_file

    try:
        handle = os.fdopen(open_file(path), "rb")
    except (OSError, RepositoryError):
        return {}
    try:
        with handle, h5py.File(handle, "r") as f:
            return json.loads(f.attrs["meta"])
    except Exception:
        return {}


def _update(digest, path: str, arr: np.ndarray) -> None:
    digest.update(f"{path}|{arr.dtype.str}|{arr.shape}".encode())
    digest.update(np.ascontiguousarray(arr).tobytes())


def _write(group, key: str, value, digest, path: str) -> None:
    if sp.issparse(value):
        coo = value.tocoo()
        g = group.create_group(key)
        kind = "coo" if value.format == "coo" else "csr"
        g.attrs["kind"] = kind
        g.attrs["shape"] = np.asarray(coo.shape, dtype=np.int64)
        digest.update(f"{path}|{kind}|{coo.shape}".encode())
        for name, arr in (("row", coo.row), ("col", coo.col), ("data", coo.data)):
            arr = np.ascontiguousarray(arr)
            compress = arr.dtype.kind in "iu" and arr.nbytes > COMPRESS_INTEGERS_ABOVE
            g.create_dataset(name, data=arr, compression="gzip" if compress else None)
            _update(digest, f"{path}/{name}", arr)
    elif isinstance(value, dict):
        g = group.create_group(key)
        g.attrs["kind"] = "dict"
        digest.update(f"{path}|dict|{len(value)}".encode())
        for k in sorted(value):
            _write(g, str(k), value[k], digest, f"{path}/{k}")
    elif isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.dtype == object):
        texts = [str(v) for v in value]
        ds = group.create_dataset(key, data=np.array(texts, dtype=object), dtype=h5py.string_dtype())
        ds.attrs["kind"] = "strings"
        digest.update(f"{path}|strings|{len(texts)}".encode())
        digest.update("\x00".join(texts).encode())
    else:
        arr = np.ascontiguousarray(np.asarray(value))
        ds = group.create_dataset(key, data=arr)
        ds.attrs["kind"] = "array"
        _update(digest, path, arr)


def read_node(node, digest, path: str):
    """The value stored at HDF5 ``node`` (array, sparse matrix, or dict of them), fed to ``digest``."""
    kind = node.attrs.get("kind", "array")
    if isinstance(kind, bytes):
        kind = kind.decode()
    if kind in ("coo", "csr"):
        shape = tuple(int(v) for v in node.attrs["shape"])
        digest.update(f"{path}|{kind}|{shape}".encode())
        parts = {}
        for name in ("row", "col", "data"):
            parts[name] = node[name][()]
            _update(digest, f"{path}/{name}", parts[name])
        m = sp.coo_matrix((parts["data"], (parts["row"], parts["col"])), shape=shape)
        return m if kind == "coo" else m.tocsr()
    if kind == "dict":
        digest.update(f"{path}|dict|{len(node)}".encode())
        return {k: read_node(node[k], digest, f"{path}/{k}") for k in sorted(node)}
    if kind == "strings":
        texts = list(node.asstr()[()])
        digest.update(f"{path}|strings|{len(texts)}".encode())
        digest.update("\x00".join(texts).encode())
        return texts
    arr = node[()]
    arr = np.asarray(arr)
    _update(digest, path, arr)
    return arr
