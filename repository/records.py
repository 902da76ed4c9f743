"""Append-only logs of self-delimiting, checksummed records.

One record on disk (framing 2, written since issue 35)::

    MAGIC (8 bytes) | header length (u32 LE) | payload length (u64 LE) | CRC-32 of both lengths (u32 LE)
    | digest (16 bytes) | header | payload

The header is ASCII JSON, the payload raw bytes (empty for unit records, array bytes for stored
predictions); the digest is BLAKE2b-128 over both lengths, the header and the payload. The lengths
carry their own check because they decide what a reader makes of a record that runs past the end of
the log: only a record whose lengths verify and whose bytes stop short at the end of the log is a
write that never completed (a writer killed mid-append) — a *torn tail*, never committed. Anything
else that fails a check is *damage* and is named: a flipped bit in a committed record's lengths can
no longer make it pass for a torn write and vanish. (CRC-32 detects every error of up to 32
consecutive bits in the 16 bytes it covers, so every single-bit and single-byte flip.)

Framing 1 (``\x89MALTr\r\n``, the same fields without the length check) is still read; new
records are always written in framing 2, and a compaction (or `malt repair`) rewrites every record
it keeps in framing 2. Since no writer of today appends framing 1, a log that ends in an incomplete
framing-1 record is named by its readers (`experiments.legacy_tail`): framing 1 cannot tell a torn
write from damaged lengths, and no live append can be in flight there.

A reader walks from record to record; where a record fails a check (a flipped bit) it searches
forward for the next MAGIC and resynchronises, so damage costs only the records it hits — no
container metadata can take the others with it. Readers ignore a torn tail (a live writer's append
may be in flight); the writer that next opens the log truncates it and says so (`AppendLog.notes`),
and `malt repair` names it.

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
import zlib
from dataclasses import dataclass
from pathlib import Path

from malt.errors import RepositoryError

from .files import check_no_links, fsync_dir, open_file, read_bytes, write_all, write_error

MAGIC = b"\x89MALTs\r\n"
FIXED = struct.Struct("<8sIQI16s")  # magic, header length, payload length, CRC-32 of the lengths, digest
MAGIC_1 = b"\x89MALTr\r\n"
FIXED_1 = struct.Struct("<8sIQ16s")  # framing 1: magic, header length, payload length, digest
PREFIX = b"\x89MALT"  # what both magics start with
LENGTHS = struct.Struct("<IQ")
MAX_HEADER = 64 << 20


def _digest(lengths: bytes, header: bytes, payload: bytes | memoryview) -> bytes:
    h = hashlib.blake2b(lengths, digest_size=16)
    h.update(header)
    h.update(payload)
    return h.digest()


def encode(header: dict, payload: bytes = b"") -> bytes:
    """The bytes of one record (header: a JSON-serialisable dict)."""
    head = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=True).encode()
    return frame(head, payload)


def frame(head: bytes | memoryview, payload: bytes | memoryview = b"") -> bytes:
    """One record in framing 2 from its header bytes and payload."""
    lengths = LENGTHS.pack(len(head), len(payload))
    return (FIXED.pack(MAGIC, len(head), len(payload), zlib.crc32(lengths), _digest(lengths, head, payload))
            + bytes(head) + bytes(payload))


@dataclass
class Record:
    header: dict
    offset: int
    payload_offset: int
    payload_length: int
    header_offset: int = 0

    @property
    def end(self) -> int:
        return self.payload_offset + self.payload_length


@dataclass
class Scan:
    records: list[Record]
    damaged: list[int]  # offsets where a damaged stretch starts
    end: int  # offset after the last complete record (a torn tail begins here)
    size: int

    @property
    def torn_tail(self) -> bool:
        return self.end < self.size and not any(d >= self.end for d in self.damaged)

    @property
    def torn_bytes(self) -> int:
        return self.size - self.end if self.torn_tail else 0


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
        following = _next_magic(data, pos + 1)
        if following < 0:
            if not (incomplete and pos == end):  # a record cut short at the end is a torn write, not damage
                damaged.append(pos)
            break
        damaged.append(pos)
        pos = following
    headers = _headers(data, found)
    records = []
    for (offset, header_start, payload_offset, payload_length), header in zip(found, headers):
        if isinstance(header, dict):
            records.append(Record(header, offset, payload_offset, payload_length, header_start))
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


def _next_magic(data: bytes, start: int) -> int:
    """Offset of the next record start (either framing) at or after ``start``, or -1."""
    while True:
        at = data.find(PREFIX, start)
        if at < 0 or data[at:at + 8] in (MAGIC, MAGIC_1):
            return at
        start = at + 1


def _locate(data: bytes, view: memoryview, pos: int) -> tuple[tuple | None, bool]:
    """(offset, header start, payload offset, payload length) of the intact record at ``pos``, or
    (None, whether it is a write cut short at the end of the data)."""
    size = len(data)
    magic = data[pos:pos + 8]
    if magic == MAGIC_1:
        return _locate_1(data, view, pos)
    if size - pos < FIXED.size:  # the fixed part itself is cut short: only a torn write ends like that
        return None, magic == MAGIC or (size - pos < 8 and (MAGIC.startswith(magic) or MAGIC_1.startswith(magic)))
    if magic != MAGIC:
        return None, False
    _, hlen, plen, crc, digest = FIXED.unpack_from(data, pos)
    lengths = LENGTHS.pack(hlen, plen)
    if zlib.crc32(lengths) != crc or hlen > MAX_HEADER:
        return None, False  # damaged lengths: never taken for a torn write
    start = pos + FIXED.size
    stop = start + hlen + plen
    if stop > size:
        return None, True
    if _digest(lengths, view[start:start + hlen], view[start + hlen:stop]) != digest:
        return None, False
    return (pos, start, start + hlen, plen), False


def _locate_1(data: bytes, view: memoryview, pos: int) -> tuple[tuple | None, bool]:
    """A record of framing 1 (its lengths carry no check of their own)."""
    size = len(data)
    if size - pos < FIXED_1.size:
        return None, True
    _, hlen, plen, digest = FIXED_1.unpack_from(data, pos)
    start = pos + FIXED_1.size
    stop = start + hlen + plen
    if hlen > MAX_HEADER:
        return None, False
    if stop > size:
        return None, True
    if _digest(LENGTHS.pack(hlen, plen), view[start:start + hlen], view[start + hlen:stop]) != digest:
        return None, False
    return (pos, start, start + hlen, plen), False


def reframed(data: bytes, record: Record) -> bytes:
    """The bytes of an intact record in framing 2 (a copy of its bytes if it already is)."""
    if data[record.offset:record.offset + 8] == MAGIC:
        return data[record.offset:record.end]
    return frame(memoryview(data)[record.header_offset:record.payload_offset], payload(data, record))


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
    """An open log for appending (the caller holds the lock that makes it the only writer).

    ``notes``: what opening it did that a user should hear of (a torn tail dropped)."""

    def __init__(self, root: Path, path: Path):
        self.path = Path(path)
        self.notes: list[str] = []
        check_no_links(root, self.path)
        existed = os.path.lexists(self.path)
        try:
            self.fd = open_file(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, single_link=True)
        except OSError as err:
            raise write_error(self.path, err) from None
        try:
            if not existed:
                fsync_dir(self.path.parent)
            self._drop_torn_tail()
        except BaseException:
            os.close(self.fd)
            raise
        self.dirty = False

    def _drop_torn_tail(self) -> None:
        data, found = read_log(self.path)
        if found.torn_tail:
            try:
                os.ftruncate(self.fd, found.end)
            except OSError as err:
                raise write_error(self.path, err) from None
            self.notes.append(torn_tail_note(self.path, found))

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


def torn_tail_note(path: Path, found: Scan) -> str:
    return (f"{path}: dropped an incomplete record at its end ({found.torn_bytes} bytes from offset {found.end}): a "
            "write cut short (a run killed or a disk full while appending), so it was never committed; "
            "`malt rerun` recomputes whatever it held")


def require_record(header: dict, *fields: str) -> dict:
    missing = [f for f in fields if f not in header]
    if missing:
        raise RepositoryError(f"record lacks {', '.join(missing)}")
    return header
