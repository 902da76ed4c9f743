"""Read a user's data file as text: plain or gzip-compressed (recognised by its magic bytes, not
its name), UTF-8 with or without a byte-order mark (Latin-1 when it is not UTF-8), CRLF or LF line
ends. Binary files, directories, broken or truncated gzip streams end in one DataError that says
what the file is and what to do; nothing here ever returns a half-read file.
"""
from __future__ import annotations

import zlib
from pathlib import Path

from malt.errors import DataError

GZIP_MAGIC = b"\x1f\x8b"
MAX_BYTES = 4 << 30
"""Largest uncompressed file read into memory (4 GiB): beyond it the file is refused, not swapped."""


def read_bytes(path: str | Path) -> bytes:
    """The file's bytes, decompressed when it is gzip (whatever its name says)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"File not found: {path}")
    if path.is_dir():
        raise DataError(f"{path} is a folder; pass a data file (ARFF, CSV/TSV, optionally .gz).")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise DataError(f"Cannot read {path} ({err.strerror or err}).") from None
    if raw[:2] == GZIP_MAGIC:
        return _gunzip(raw, path)
    if path.suffix.lower() == ".gz":
        raise DataError(f"{path} ends in .gz but is not gzip-compressed; rename it without .gz if it is plain text, "
                        "or compress it with gzip.")
    return raw


def _gunzip(raw: bytes, path: Path) -> bytes:
    out = bytearray()
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = raw
        while data:  # concatenated gzip members are one file (gzip(1) semantics)
            out += decompressor.decompress(data, MAX_BYTES + 1 - len(out))
            if len(out) > MAX_BYTES:
                raise DataError(f"{path} decompresses to more than {MAX_BYTES >> 30} GiB; split it or load it "
                                "another way.")
            if decompressor.unconsumed_tail:
                data = decompressor.unconsumed_tail
                continue
            if not decompressor.eof:
                raise DataError(f"{path} is a truncated gzip file (the stream ends early); download or copy it "
                                "again.")
            data = decompressor.unused_data.lstrip(b"\x00")
            decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS) if data else decompressor
    except zlib.error as err:
        raise DataError(f"{path} is a damaged gzip file ({err}); download or copy it again.") from None
    return bytes(out)


def read_text(path: str | Path, what: str = "data") -> str:
    """The file decoded to str with LF line ends (see the module docstring); ``what`` names the format
    in error messages ('ARFF', 'CSV')."""
    path = Path(path)
    raw = read_bytes(path)
    if looks_binary(raw):
        raise DataError(f"{path} is not a text {what} file (it holds binary bytes); pass the {what} file itself.")
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    elif raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return _newlines(raw.decode("utf-16"))
        except UnicodeDecodeError:
            raise DataError(f"{path} starts with a UTF-16 byte-order mark but is not UTF-16 text.") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")  # every byte is a Latin-1 character; numbers read the same either way
    return _newlines(text)


def looks_binary(raw: bytes) -> bool:
    """NUL bytes, or more than 1% control characters other than tab/CR/LF/FF in the first 64 KiB."""
    head = raw[: 1 << 16]
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    controls = sum(head.count(bytes([c])) for c in range(32) if c not in (9, 10, 12, 13))
    return controls > 0.01 * max(len(head), 1)


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
