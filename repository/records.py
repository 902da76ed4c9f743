"""Append-only logs of self-delimiting, checksummed records.

One record on disk::

    MAGIC (8 bytes) | header length (u32 LE) | payload length (u64 LE) | digest (16 bytes) | header | payload

The header is ASCII JSON, the payload raw bytes (empty for unit records, array bytes for stored
predictions); the digest is BLAKE2b-128 over both lengths, the header and the payload. A reader
walks from record to record; where a record fails its digest (a flipped bit, a torn write) it
searches forward for the next MAGIC and resynchronises, so damage costs only the records it hits —
no container metadata can take the others with it. A record cut short at the very end of a log is
a write that never completed (a writer killed mid-append): it was never committed, readers ignore it
silently and the next writer truncates it before appending.

Appends are single ``write`` calls on an O_APPEND descriptor; a failed or short write truncates the
log back to where it was, so a full disk never leaves half a record in the middle. ``sync`` (fdatasync)
makes appended records durable against power loss; records are safe against kill -9 as soon as
``append`` returns.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from malt.errors import RepositoryError

from .files import check_no_links, fsync_dir, read_bytes, write_all, write_error

MAGIC = b"\x89MALTr\r\n"
FIXED = struct.Struct("<8sIQ16s")  # magic, header length, payload length, digest
MAX_HEADER = 64 << 20


def _digest(lengths: bytes, header: bytes, payload: bytes | memoryview) -> bytes:
    h = hashlib.blake2b(lengths, digest_size=16)
    h.update(header)
    h.update(payload)
    return h.digest()


def encode(header: dict, payload: bytes = b"") -> bytes:
    """The bytes of one record (header: a JSON-serialisable dict)."""
    head = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True).encode()
    lengths = struct.pack("<IQ", len(head), len(payload))
    return FIXED.pack(MAGIC, len(head), len(payload), _digest(lengths, head, payload)) + head + payload


@dataclass
class Record:
    header: dict
    offset: int
    payload_offset: int
    payload_length: int


@dataclass
class Scan:
    records: list[Record]
    damaged: list[int]  # offsets where a damaged stretch starts
    end: int  # offset after the last complete record (a torn tail begins here)
    size: int

    @property
    def torn_tail(self) -> bool:
        return self.end < self.size and not any(d >= self.end for d in self.damaged)


def scan(data: bytes) -> Scan:
    """Every intact record of a log's bytes, the offsets of damaged stretches, and the end of the
    last intact record (digests are verified over headers and payloads). Headers are parsed in one
    pass at the end (a single JSON array), which is what makes reading 10,000 records cheap."""
    view = memoryview(data)
    size = len(data)
    found: list[tuple[int, int, int, int]] = []  # offset, header start, payload offset, payload length
    damaged: list[int] = []
    pos = end = 0
    while pos < size:
        located, incomplete = _locate(data, view, pos)
        if located is not None:
            found.append(located)
            pos = end = located[2] + located[3]
            continue
        following = data.find(MAGIC, pos + 1)
        if following < 0:
            if not (incomplete and pos == end):  # a record cut short at the end is a torn write, not damage
                damaged.append(pos)
            break
        damaged.append(pos)
        pos = following
    headers = _headers(data, found)
    records = []
    for (offset, _, payload_offset, payload_length), header in zip(found, headers):
        if isinstance(header, dict):
            records.append(Record(header, offset, payload_offset, payload_length))
        else:
            damaged.append(offset)
    return Scan(records, sorted(damaged), end, size)


def _headers(data: bytes, found: list) -> list:
    if not found:
        return []
    try:
        return json.loads(b"[" + b",".join(data[h:p] for _, h, p, _ in found) + b"]")
    except ValueError:  # one header is not JSON although its digest matched (a writer's bug): parse one by one
        out = []
        for _, h, p, _ in found:
            try:
                out.append(json.loads(data[h:p]))
            except ValueError:
                out.append(None)
        return out


def _locate(data: bytes, view: memoryview, pos: int) -> tuple[tuple | None, bool]:
    """(offset, header start, payload offset, payload length) of the intact record at ``pos``, or
    (None, whether it merely runs past the end of the data)."""
    size = len(data)
    if size - pos < FIXED.size:
        return None, MAGIC.startswith(data[pos:pos + 8]) or data[pos:pos + 8] == MAGIC
    if data[pos:pos + 8] != MAGIC:
        return None, False
    _, hlen, plen, digest = FIXED.unpack_from(data, pos)
    start = pos + FIXED.size
    stop = start + hlen + plen
    if hlen > MAX_HEADER:
        return None, False
    if stop > size:
        return None, True
    if _digest(struct.pack("<IQ", hlen, plen), view[start:start + hlen], view[start + hlen:stop]) != digest:
        return None, False
    return (pos, start, start + hlen, plen), False


def read_log(path: Path) -> tuple[bytes, Scan]:
    """The bytes and scan of a log file (empty when it does not exist)."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        data = b""
    return data, scan(data)


def payload(data: bytes, record: Record) -> memoryview:
    return memoryview(data)[record.payload_offset:record.payload_offset + record.payload_length]


class AppendLog:
    """An open log for appending (the caller holds the lock that makes it the only writer)."""

    def __init__(self, root: Path, path: Path):
        self.path = Path(path)
        check_no_links(root, self.path)
        existed = self.path.exists()
        try:
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as err:
            raise write_error(self.path, err) from None
        if not existed:
            fsync_dir(self.path.parent)
        self._drop_torn_tail()
        self.dirty = False

    def _drop_torn_tail(self) -> None:
        data, found = read_log(self.path)
        if found.torn_tail:
            try:
                os.ftruncate(self.fd, found.end)
            except OSError as err:
                raise write_error(self.path, err) from None

    def append(self, blob: bytes) -> None:
        """Append encoded records in one write; on failure the log is left as it was."""
        size = os.fstat(self.fd).st_size
        try:
            write_all(self.fd, blob)
        except OSError as err:
            try:
                os.ftruncate(self.fd, size)
            except OSError:
                pass  # a torn tail: readers ignore it, the next writer truncates it
            raise write_error(self.path, err) from None
        self.dirty = True

    def sync(self) -> None:
        if self.dirty:
            try:
                os.fdatasync(self.fd)
            except OSError as err:
                raise write_error(self.path, err) from None
            self.dirty = False

    def close(self) -> None:
        if self.fd is not None:
            try:
                self.sync()
            finally:
                os.close(self.fd)
                self.fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def require_record(header: dict, *fields: str) -> dict:
    missing = [f for f in fields if f not in header]
    if missing:
        raise RepositoryError(f"record lacks {', '.join(missing)}")
    return header
