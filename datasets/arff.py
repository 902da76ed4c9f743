"""ARFF reader for MULAN multi-label data: dense and sparse rows, numeric and nominal attributes,
optionally gzip-compressed, with the label names taken from MULAN's XML header file.

scipy.io.arff reads neither sparse ARFF nor some MULAN headers, hence this small parser. Every
error names the file and line.
"""
from __future__ import annotations

import gzip
import re
import shlex
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from malt.errors import DataError

_NUMERIC = {"numeric", "real", "integer"}


@dataclass
class Attribute:
    name: str
    kind: str  # 'numeric' or 'nominal'
    values: tuple[str, ...] = ()

    def code(self, token: str) -> float:
        if token == "?":
            return np.nan
        if self.kind == "numeric":
            return float(token)
        token = token.strip("'\"")
        try:
            return float(token) if all(_is_number(v) for v in self.values) else float(self.values.index(token))
        except ValueError:
            raise ValueError(f"value {token!r} is not one of {{{', '.join(self.values)}}}") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8", errors="replace") if path.suffix == ".gz" else open(
        path, encoding="utf-8", errors="replace")


_ATTR = re.compile(r"@attribute\s+('(?:[^'\\]|\\.)*'|\"[^\"]*\"|\S+)\s+(.*)$", re.IGNORECASE)


def read_arff(path: str | Path) -> tuple[list[Attribute], np.ndarray, str]:
    """Parse an ARFF file into (attributes, data (n, n_attributes) float with NaN for '?', relation)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"ARFF file not found: {path}")
    attributes: list[Attribute] = []
    relation = ""
    rows: list[np.ndarray] = []
    in_data = False
    with _open(path) as handle:
        for lineno, raw in enumerate(handle, 1):
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            try:
                if not in_data:
                    lower = line.lower()
                    if lower.startswith("@relation"):
                        relation = line[9:].strip().strip("'\"")
                    elif lower.startswith("@attribute"):
                        attributes.append(_parse_attribute(line))
                    elif lower.startswith("@data"):
                        in_data = True
                        if not attributes:
                            raise ValueError("@data before any @attribute")
                    else:
                        raise ValueError(f"unexpected header line {line[:40]!r}")
                    continue
                rows.append(_parse_row(line, attributes))
            except ValueError as err:
                raise DataError(f"{path}, line {lineno}: malformed ARFF ({err}).") from None
    if not in_data:
        raise DataError(f"{path}: no @data section; the file is truncated or not ARFF.")
    if not rows:
        raise DataError(f"{path}: the @data section is empty.")
    return attributes, np.vstack(rows), relation


def _parse_attribute(line: str) -> Attribute:
    match = _ATTR.match(line)
    if not match:
        raise ValueError("cannot read the @attribute line")
    name, kind = match.group(1).strip("'\""), match.group(2).strip()
    if kind.lower() in _NUMERIC:
        return Attribute(name, "numeric")
    if kind.startswith("{") and kind.endswith("}"):
        values = tuple(v.strip().strip("'\"") for v in kind[1:-1].split(","))
        return Attribute(name, "nominal", values)
    raise ValueError(f"attribute type {kind!r} of {name!r} is not supported (numeric or nominal only)")


def _parse_row(line: str, attributes: list[Attribute]) -> np.ndarray:
    n = len(attributes)
    if line.startswith("{"):
        if not line.endswith("}"):
            raise ValueError("sparse row without closing '}'")
        row = np.zeros(n)
        for pair in line[1:-1].split(","):
            pair = pair.strip()
            if not pair:
                continue
            index_text, _, value = pair.partition(" ")
            index = int(index_text)
            if not 0 <= index < n:
                raise ValueError(f"sparse index {index} outside 0..{n - 1}")
            row[index] = attributes[index].code(value.strip())
        return row
    tokens = line.split(",") if "'" not in line and '"' not in line else _quoted_split(line)
    if len(tokens) != n:
        raise ValueError(f"expected {n} values, found {len(tokens)}")
    try:
        return np.array(tokens, dtype=float)
    except ValueError:
        return np.array([a.code(t.strip()) for a, t in zip(attributes, tokens)])


def _quoted_split(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True)
    lexer.whitespace = ","
    lexer.whitespace_split = True
    return list(lexer)


def read_label_names(xml_path: str | Path) -> list[str]:
    """Label names from a MULAN XML header (every <label name=...> element, document order)."""
    xml_path = Path(xml_path)
    try:
        root = ET.parse(xml_path).getroot()
    except (ET.ParseError, OSError) as err:
        raise DataError(f"{xml_path}: cannot read the MULAN label file ({err}).") from None
    names = [el.attrib["name"] for el in root.iter() if el.tag.split("}")[-1] == "label" and "name" in el.attrib]
    if not names:
        raise DataError(f"{xml_path}: no <label name=...> elements found.")
    return names


def split_features_labels(attributes: list[Attribute], data: np.ndarray, label_names: list[str], source: str):
    """Separate the label columns (by name) from the feature columns."""
    index = {a.name: i for i, a in enumerate(attributes)}
    missing = [name for name in label_names if name not in index]
    if missing:
        raise DataError(f"{source}: labels {missing[:3]} named in the XML file are not attributes of the ARFF file.")
    label_cols = [index[name] for name in label_names]
    feature_cols = [i for i in range(len(attributes)) if i not in set(label_cols)]
    X, Y = data[:, feature_cols], data[:, label_cols]
    return X, Y, [attributes[i].name for i in feature_cols]
