"""ARFF, Weka's Attribute-Relation File Format, read as the format defines it
(waikato.github.io/weka-wiki/formats_and_processing/arff_stable/):

* header: ``@relation``, ``@attribute NAME TYPE`` and ``@data`` in any letter case; names and values
  quoted with ``'`` or ``"`` and backslash escapes inside quotes (``'Swainson\\'s Thrush'``, as
  MULAN/Weka write them); ``%`` starts a comment line;
* types: ``numeric``/``real``/``integer``, nominal ``{a, 'b c', ...}``, ``string`` and
  ``date ["java date format"]``; ``relational`` is refused;
* data: dense rows ``v1, v2, ...`` and sparse rows ``{index value, ...}`` (omitted values are 0, for
  a nominal attribute its first declared value); ``?`` is a missing value; instance weights
  (``{w}`` after a row) are refused.

The file may be gzip-compressed, UTF-8 with a byte-order mark, with CRLF line ends
(`datasets.textfile`). Every error names the file and line.

Cost: rows without quotes or braces go through pandas' C parser (O(file size)); other rows through
a per-line tokenizer.
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from malt.errors import DataError

from .textfile import read_text

_NUMERIC = {"numeric", "real", "integer"}
_DEFAULT_DATE = "yyyy-MM-dd'T'HH:mm:ss"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "%": "%", "0": "\0"}


@dataclass(frozen=True)
class Attribute:
    name: str
    kind: str  # 'numeric', 'nominal', 'string' or 'date'
    values: tuple[str, ...] = ()  # nominal values in declaration order
    date_format: str = ""

    def describe(self) -> str:
        return "{" + ",".join(self.values) + "}" if self.kind == "nominal" else self.kind


@dataclass
class Arff:
    """A parsed ARFF file.

    data : (n, n_attributes) float — numeric values, nominal value *indices* into
           ``attributes[j].values``, dates as POSIX seconds (UTC), NaN for ``?`` and for string attributes
    strings : column index -> the n values of each string attribute (None for ``?``)
    """

    relation: str
    attributes: list[Attribute]
    data: np.ndarray
    strings: dict[int, list[str | None]] = field(default_factory=dict)
    path: str = ""

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.attributes]


class _LineError(ValueError):
    """A problem in one line; read_arff adds the file name and line number."""


# ---- tokenizing -----------------------------------------------------------------------------
def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The quoted token starting at text[start] (a quote char): (unescaped body, index after it)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == quote:
            return _unescape(text[start + 1:i]), i + 1
        i += 1
    raise _LineError(f"unterminated {quote}quote{quote}")


def split_values(text: str) -> list[tuple[str, bool]]:
    """Comma-separated tokens of a data row or a nominal list: [(value, was_quoted)], whitespace
    around unquoted tokens stripped."""
    tokens: list[tuple[str, bool]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] in "'\"":
            value, i = _quoted(text, i)
            while i < n and text[i] in " \t":
                i += 1
            if i < n and text[i] != ",":
                raise _LineError(f"unexpected {text[i]!r} after the quoted value {value!r}")
            tokens.append((value, True))
        else:
            end = text.find(",", i)
            end = n if end < 0 else end
            value = text[i:end].strip()
            if any(q in value for q in "'\""):
                raise _LineError(f"a quote inside the unquoted value {value!r}; quote the whole value")
            tokens.append((value, False))
            i = end
        if i >= n:
            return tokens
        i += 1  # the comma


def _name_and_rest(text: str) -> tuple[str, str]:
    """A (possibly quoted) name at the start of text, and what follows it."""
    text = text.lstrip()
    if not text:
        raise _LineError("a name is missing")
    if text[0] in "'\"":
        name, end = _quoted(text, 0)
        return name, text[end:].strip()
    parts = text.split(None, 1)
    return parts[0], parts[1].strip() if len(parts) > 1 else ""


def _strip_comment(line: str) -> str:
    """Drop a trailing %-comment outside quotes (Weka's tokenizer treats % as a comment anywhere)."""
    if "%" not in line:
        return line
    i = 0
    while i < len(line):
        ch = line[i]
        if ch in "'\"":
            _, i = _quoted(line, i)
            continue
        if ch == "%":
            return line[:i].rstrip()
        i += 1
    return line


# ---- header ---------------------------------------------------------------------------------
def parse_attribute(line: str) -> Attribute:
    """One ``@attribute NAME TYPE`` line."""
    name, kind = _name_and_rest(line[len("@attribute"):])
    if not kind:
        raise _LineError(f"attribute {name!r} has no type")
    lower = kind.lower()
    if lower in _NUMERIC:
        return Attribute(name, "numeric")
    if lower == "string":
        return Attribute(name, "string")
    if lower.startswith("date"):
        fmt = kind[4:].strip()
        if fmt and fmt[0] in "'\"":
            fmt, end = _quoted(fmt, 0)
        return Attribute(name, "date", date_format=fmt or _DEFAULT_DATE)
    if kind.startswith("{"):
        if not kind.endswith("}"):
            raise _LineError(f"the value list of {name!r} has no closing '}}'")
        body = kind[1:-1]
        values = tuple(v for v, _ in split_values(body)) if body.strip() else ()
        if not values or any(v == "" for v in values):
            raise _LineError(f"nominal attribute {name!r} has an empty value in {kind[:60]!r}")
        if len(set(values)) != len(values):
            dup = next(v for v in values if values.count(v) > 1)
            raise _LineError(f"nominal attribute {name!r} declares the value {dup!r} twice")
        return Attribute(name, "nominal", values)
    if lower.startswith("relational"):
        raise _LineError(f"attribute {name!r} is relational (multi-instance ARFF), which malt does not read")
    raise _LineError(f"attribute {name!r} has the unknown type {kind[:40]!r} "
                     "(numeric, real, integer, {nominal values}, string or date)")


# ---- dates ----------------------------------------------------------------------------------
_JAVA_DATE = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
              ("ss", "%S"), ("SSS", "%f"), ("Z", "%z"), ("X", "%z")]


def _strptime_format(java: str) -> str:
    """Java SimpleDateFormat -> strptime, for the fields ARFF files use; others are refused."""
    out, i = [], 0
    while i < len(java):
        if java[i] == "'":
            end = java.find("'", i + 1)
            if end < 0:
                raise _LineError(f"unterminated quote in date format {java!r}")
            out.append(java[i + 1:end].replace("%", "%%") or "'")
            i = end + 1
            continue
        for pattern, directive in _JAVA_DATE:
            if java.startswith(pattern, i):
                out.append(directive)
                i += len(pattern)
                break
        else:
            if java[i].isalpha():
                raise _LineError(f"date format {java!r}: the field {java[i]!r} is not supported "
                                 "(yyyy yy MM dd HH mm ss SSS Z)")
            out.append(java[i].replace("%", "%%"))
            i += 1
    return "".join(out)


def _date_seconds(value: str, fmt: str) -> float:
    try:
        moment = _dt.datetime.strptime(value, fmt)
    except ValueError:
        raise _LineError(f"{value!r} is not a date in the declared format") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    return moment.timestamp()


# ---- data -----------------------------------------------------------------------------------
class _Columns:
    """Turns tokens into the float codes of `Arff.data`, attribute by attribute."""

    def __init__(self, attributes: list[Attribute]):
        self.attributes = attributes
        self.index = [{v: float(k) for k, v in enumerate(a.values)} for a in attributes]
        self.formats = [_strptime_format(a.date_format) if a.kind == "date" else "" for a in attributes]

    def code(self, j: int, value: str, quoted: bool) -> float:
        if value == "?" and not quoted:
            return np.nan
        attribute = self.attributes[j]
        if attribute.kind == "numeric":
            try:
                number = float(value)
            except ValueError:
                raise _LineError(f"{value!r} is not a number (attribute {attribute.name!r})") from None
            if "_" in value:
                raise _LineError(f"{value!r} is not a number (attribute {attribute.name!r})")
            return number
        if attribute.kind == "nominal":
            code = self.index[j].get(value)
            if code is None:
                shown = ",".join(attribute.values)
                raise _LineError(f"{value!r} is not one of the declared values {{{shown[:80]}}} of "
                                 f"attribute {attribute.name!r}")
            return code
        if attribute.kind == "date":
            return _date_seconds(value, self.formats[j])
        return np.nan  # string: kept in Arff.strings


def _parse_rows(lines: list[tuple[int, str]], attributes: list[Attribute]):
    """Per-line parser (quotes, sparse rows, strings, dates): (data, strings)."""
    n_attr = len(attributes)
    columns = _Columns(attributes)
    string_cols = [j for j, a in enumerate(attributes) if a.kind == "string"]
    data = np.zeros((len(lines), n_attr))
    strings: dict[int, list[str | None]] = {j: [None] * len(lines) for j in string_cols}
    for r, (lineno, line) in enumerate(lines):
        try:
            line = _strip_comment(line)
            if line.startswith("{"):
                if not line.endswith("}"):
                    if "}" in line:
                        raise _LineError("instance weights ({w} after a row) are not supported")
                    raise _LineError("sparse row without its closing '}'")
                body = line[1:-1].strip()
                for j in string_cols:
                    strings[j][r] = attributes[j].values[0] if attributes[j].values else ""
                seen = set()
                for index_text, value, quoted in _sparse_pairs(body):
                    try:
                        j = int(index_text)
                    except ValueError:
                        raise _LineError(f"sparse entry {index_text!r} is not an attribute index") from None
                    if not 0 <= j < n_attr:
                        raise _LineError(f"sparse index {j} outside 0..{n_attr - 1}")
                    if j in seen:
                        raise _LineError(f"sparse index {j} given twice")
                    seen.add(j)
                    data[r, j] = columns.code(j, value, quoted)
                    if j in strings:
                        strings[j][r] = None if value == "?" and not quoted else value
                continue
            tokens = split_values(line)
            if len(tokens) == n_attr + 1 and tokens[-1][0].startswith("{") and not tokens[-1][1]:
                raise _LineError("instance weights ({w} after a row) are not supported")
            if len(tokens) != n_attr:
                raise _LineError(f"expected {n_attr} values, found {len(tokens)}")
            for j, (value, quoted) in enumerate(tokens):
                data[r, j] = columns.code(j, value, quoted)
                if j in strings:
                    strings[j][r] = None if value == "?" and not quoted else value
        except _LineError as err:
            raise _LineError(f"line {lineno}: {err}") from None
    return data, strings


_SPARSE_INDEX = re.compile(r"\s*([^\s,]+)\s+")


def _sparse_pairs(body: str) -> list[tuple[str, str, bool]]:
    """Entries of a sparse row's body: [(index text, value, quoted)]."""
    pairs, i, n = [], 0, len(body)
    while i < n and body[i] in " \t":
        i += 1
    while i < n:
        match = _SPARSE_INDEX.match(body, i)
        if not match:
            raise _LineError(f"cannot read the sparse entry {body[i:i + 30]!r}")
        index_text, i = match.group(1), match.end()
        if i < n and body[i] in "'\"":
            value, i = _quoted(body, i)
            quoted = True
        else:
            end = body.find(",", i)
            end = n if end < 0 else end
            value, quoted, i = body[i:end].strip(), False, end
            if any(q in value for q in "'\"") or not value:
                raise _LineError(f"cannot read the sparse entry {body[match.start():end].strip()!r}")
        pairs.append((index_text, value, quoted))
        while i < n and body[i] in " \t":
            i += 1
        if i < n:
            if body[i] != ",":
                raise _LineError(f"unexpected {body[i]!r} in a sparse row")
            i += 1
    return pairs


def _fast_dense(lines: list[tuple[int, str]], attributes: list[Attribute]) -> np.ndarray | None:
    """Dense rows of numeric and unquoted nominal values, converted column block by column block in
    numpy; None when the block needs the per-line parser (quotes, braces, comments, strings, dates, a
    wrong field count, a bad value — the per-line parser then names the line)."""
    if any(a.kind in ("string", "date") for a in attributes):
        return None
    block = ",".join(line for _, line in lines)
    if any(ch in block for ch in "'\"{}%_"):  # '_': Python's float() reads 1_0 as 10, ARFF does not
        return None
    n, n_attr = len(lines), len(attributes)
    tokens = block.split(",")
    if len(tokens) != n * n_attr:
        return None
    simple = all(a.kind == "numeric" or a.values == ("0", "1") for a in attributes)
    if simple:  # codes equal values: one conversion for the whole block
        try:
            data = np.array(tokens, dtype=float).reshape(n, n_attr)
        except ValueError:
            data = None
        binary = [j for j, a in enumerate(attributes) if a.kind == "nominal"]
        if data is not None and all(set(tokens[j::n_attr]) <= {"0", "1"} for j in binary):
            return data
    cells = np.array(tokens, dtype=str).reshape(n, n_attr)
    if " " in block or "\t" in block:
        cells = np.char.strip(cells)
    missing = cells == "?"
    data = np.empty((n, n_attr))
    numeric = [j for j, a in enumerate(attributes) if a.kind == "numeric"]
    if numeric:
        block_cells = np.where(missing[:, numeric], "nan", cells[:, numeric])
        try:
            data[:, numeric] = block_cells.astype(float)
        except ValueError:
            return None
    groups: dict[tuple[str, ...], list[int]] = {}
    for j, a in enumerate(attributes):
        if a.kind == "nominal":
            groups.setdefault(a.values, []).append(j)
    for values, cols in groups.items():
        unique, inverse = np.unique(cells[:, cols], return_inverse=True)
        lookup = {v: float(k) for k, v in enumerate(values)}
        lookup["?"] = np.nan
        codes = np.array([lookup.get(u, -1.0) for u in unique.tolist()])
        if (codes < 0).any():
            return None
        data[:, cols] = codes[inverse.reshape(n, len(cols))]
    return data


def read_arff(path: str | Path) -> Arff:
    """Parse an ARFF file (see the module docstring)."""
    path = Path(path)
    text = read_text(path, "ARFF")
    attributes: list[Attribute] = []
    declared: set[str] = set()
    relation = None
    data_lines: list[tuple[int, str]] = []
    lines = text.split("\n")
    data_start = None
    try:
        for lineno, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            lower = line.lower()
            try:
                if lower.startswith("@relation"):
                    if relation is not None:
                        raise _LineError("a second @relation line")
                    relation, _ = _name_and_rest(_strip_comment(line)[len("@relation"):] or "''")
                elif lower.startswith("@attribute"):
                    attribute = parse_attribute(_strip_comment(line))
                    if attribute.name in declared:
                        raise _LineError(f"attribute {attribute.name!r} is declared twice")
                    declared.add(attribute.name)
                    attributes.append(attribute)
                elif lower.startswith("@data"):
                    if not attributes:
                        raise _LineError("@data before any @attribute")
                    data_start = lineno
                    break
                elif lower.startswith("@end"):
                    raise _LineError("@end outside a relational attribute")
                else:
                    raise _LineError(f"unexpected header line {line[:40]!r} (is this an ARFF file?)")
            except _LineError as err:
                raise _LineError(f"line {lineno}: {err}") from None
        if data_start is None:
            raise DataError(f"{path}: no @data section; the file is truncated or not ARFF.")
        for lineno in range(data_start + 1, len(lines) + 1):
            line = lines[lineno - 1].strip()
            if line and not line.startswith("%"):
                data_lines.append((lineno, line))
        if not data_lines:
            raise DataError(f"{path}: the @data section is empty.")
        strings: dict[int, list[str | None]] = {}
        data = None
        if not data_lines[0][1].startswith("{"):
            data = _fast_dense(data_lines, attributes)
        elif all(line.startswith("{") for _, line in data_lines):
            data = _fast_sparse(data_lines, attributes)
        if data is None:
            data, strings = _parse_rows(data_lines, attributes)
    except _LineError as err:
        raise DataError(f"{path}, {err} (malformed ARFF).") from None
    return Arff(relation if relation is not None else "", attributes, data, strings, str(path))


def _fast_sparse(lines: list[tuple[int, str]], attributes: list[Attribute]) -> np.ndarray | None:
    """Sparse rows of unquoted values with numeric or numeric-valued nominal attributes; None otherwise."""
    if any(a.kind in ("string", "date") for a in attributes):
        return None
    n_attr = len(attributes)
    rows, cols, tokens = [], [], []
    for r, (_, line) in enumerate(lines):
        if not line.endswith("}") or any(ch in line for ch in "'\"%"):
            return None
        body = line[1:-1]
        if not body.strip():
            continue
        for pair in body.split(","):
            index_text, _, value = pair.strip().partition(" ")
            if not index_text.isdigit():
                return None
            rows.append(r)
            cols.append(int(index_text))
            tokens.append(value.strip())
    data = np.zeros((len(lines), n_attr))
    if not tokens:
        return data
    cols_a = np.asarray(cols)
    rows_a = np.asarray(rows)
    if cols_a.max() >= n_attr:
        return None
    if len(np.unique(rows_a * n_attr + cols_a)) != len(cols_a):
        return None  # an index given twice: the per-line parser says where
    codes = np.empty(len(tokens))
    columns = _Columns(attributes)
    numeric = np.array([a.kind == "numeric" for a in attributes])
    for k, (j, value) in enumerate(zip(cols, tokens)):
        if value == "?":
            codes[k] = np.nan
        elif numeric[j]:
            try:
                codes[k] = float(value)
            except ValueError:
                return None
        else:
            code = columns.index[j].get(value)
            if code is None:
                return None
            codes[k] = code
    data[rows_a, cols_a] = codes
    return data


# ---- features and labels ---------------------------------------------------------------------
_BINARY = [("0", "1"), ("-1", "1"), ("-1", "+1"), ("no", "yes"), ("false", "true"), ("n", "y"), ("f", "t")]
"""Two-value sets whose meaning is clear: (negative, positive), compared case-insensitively."""


def binary_meaning(values: tuple[str, ...]) -> tuple[float, float] | None:
    """For a two-value nominal set in declaration order, the 0/1 meaning of each value, or None when
    the set is not one of the recognised (negative, positive) pairs."""
    if len(values) != 2:
        return None
    lowered = tuple(v.strip().lower() for v in values)
    for negative, positive in _BINARY:
        if lowered == (negative, positive):
            return 0.0, 1.0
        if lowered == (positive, negative):
            return 1.0, 0.0
    return None


def label_matrix(arff: Arff, columns: list[int]) -> np.ndarray:
    """The label columns as a 0/1 matrix with NaN for unknown ('?').

    A label attribute must be numeric with values 0/1, or nominal with two values of a clear
    meaning ({0,1}, {no,yes}, {false,true}, {-1,1}; either order)."""
    Y = np.empty((arff.data.shape[0], len(columns)))
    for k, j in enumerate(columns):
        attribute = arff.attributes[j]
        column = arff.data[:, j]
        where = f"{arff.path}: label {attribute.name!r}"
        if attribute.kind == "numeric":
            bad = ~np.isnan(column) & (column != 0) & (column != 1)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DataError(f"{where} has the value {column[row]:g} (data row {row + 1}); labels must be 0, 1 "
                                "or ? (unknown).")
            Y[:, k] = column
        elif attribute.kind == "nominal":
            meaning = binary_meaning(attribute.values)
            if meaning is None:
                raise DataError(f"{where} is nominal {attribute.describe()[:60]}; a label must be binary with "
                                "values {0,1} (or {no,yes}, {false,true}, {-1,1}): recode it in the file.")
            lookup = np.asarray(meaning)
            codes = np.nan_to_num(column, nan=0).astype(np.intp)
            Y[:, k] = np.where(np.isnan(column), np.nan, lookup[codes])
        else:
            raise DataError(f"{where} is a {attribute.kind} attribute; a label must be numeric 0/1 or nominal {{0,1}}.")
    return Y


def feature_matrix(arff: Arff, columns: list[int]) -> tuple[np.ndarray, list[str]]:
    """The feature columns as floats, with their names.

    numeric and date attributes: their values; nominal with two values: 0/1 (by meaning for the
    sets `binary_meaning` knows, else the first declared value is 0); nominal with more values:
    one-hot, one column ``name=value`` per declared value (never an ordinal code); string
    attributes are refused."""
    blocks, names = [], []
    for j in columns:
        attribute = arff.attributes[j]
        column = arff.data[:, j]
        if attribute.kind in ("numeric", "date"):
            blocks.append(column[:, None])
            names.append(attribute.name)
        elif attribute.kind == "nominal" and len(attribute.values) <= 2:
            meaning = binary_meaning(attribute.values)
            lookup = np.asarray(meaning if meaning is not None else (0.0, 1.0)[: len(attribute.values)])
            codes = np.nan_to_num(column, nan=0).astype(np.intp)
            blocks.append(np.where(np.isnan(column), np.nan, lookup[codes])[:, None])
            names.append(attribute.name)
        elif attribute.kind == "nominal":
            onehot = (column[:, None] == np.arange(len(attribute.values))[None, :]).astype(float)
            onehot[np.isnan(column)] = np.nan
            blocks.append(onehot)
            names += [f"{attribute.name}={v}" for v in attribute.values]
        else:
            raise DataError(f"{arff.path}: attribute {attribute.name!r} is a string attribute; malt cannot use "
                            "free text as a feature: remove it from the file (or make it nominal).")
    X = np.hstack(blocks) if blocks else np.zeros((arff.data.shape[0], 0))
    return X, names
