"""Delimited text files (CSV, TSV, semicolon- or whitespace-separated) as datasets, read by
pandas' C parser.

* The file may be gzip-compressed, UTF-8 (with or without a byte-order mark) or Latin-1, with CRLF
  line ends (`datasets.textfile`); whole-line comments start with ``#`` or ``%``; values may be
  quoted with ``"``. Missing values: empty, ``?``, ``NA``, ``N/A``, ``nan``, ``null`` (`MISSING_TOKENS`).
* The delimiter is the one of ``, \\t ; |`` that splits every sampled line into the same number of
  fields (whitespace otherwise). Every row must have as many fields as the first.
* A header row is declared (``header='yes'/'no'``) or detected: a first row with no number in it
  whose cells head numeric columns or never reappear as values below.
* Numeric columns are floats; ``true``/``false`` columns 0/1; a text feature column is one-hot
  encoded (one column ``name=value`` per category, recorded in ``meta['notes']``) — never an
  ordinal code — and refused when it looks like an identifier (distinct in every row) or mixes
  numbers with text.
* Labels: one class column (text or integer codes -> ``y``), or label columns (0/1, true/false,
  yes/no -> ``Y``), chosen by ``labels`` (see `load_delimited`).

`read_table`, `encode_column` and `impute_mean` are the small helpers the UCI loaders share.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from malt.errors import DataError

from .arff import binary_meaning
from .dataset import Dataset, check_labels, validate_name
from .textfile import looks_binary, read_bytes, read_text

MISSING_TOKENS = {"", "?", "na", "nan", "NA", "NaN", "N/A", "n/a", "null", "NULL"}
DELIMITERS = (",", "\t", ";", "|")
MAX_CATEGORIES = 100
"""A text feature with more categories than this is refused rather than one-hot encoded."""


# ---- shared helpers (also used by the UCI loaders) ---------------------------------------------
def read_table(path: Path, delimiter: str | None = None) -> tuple[list[str] | None, list[list[str]]]:
    """Rows of string cells, and the header if the first row is not numeric-looking."""
    text = read_text(path, "data")
    lines = [line.strip() for line in text.split("\n") if line.strip() and not line.startswith(("#", "%"))]
    if not lines:
        raise DataError(f"{path} is empty.")
    if delimiter is None:
        sample = lines[0]
        delimiter = "," if "," in sample else "\t" if "\t" in sample else None
    rows = [next(csv.reader([line], delimiter=delimiter)) if delimiter else line.split() for line in lines]
    rows = [[cell.strip() for cell in row] for row in rows]
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        bad = next(i for i, r in enumerate(rows) if len(r) != len(rows[0]))
        raise DataError(f"{path}, line {bad + 1}: expected {len(rows[0])} fields, found {len(rows[bad])}.")
    header = None
    if not any(_is_number(c) for c in rows[0]) and any(_is_number(c) for c in rows[min(1, len(rows) - 1)]):
        header, rows = rows[0], rows[1:]
    return header, rows


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def encode_column(cells: list[str]) -> tuple[np.ndarray, list[str] | None]:
    """Numeric column -> floats (NaN for missing); otherwise category codes and their names."""
    values = [c for c in cells if c not in MISSING_TOKENS]
    if all(_is_number(c) for c in values):
        return np.array([float(c) if c not in MISSING_TOKENS else np.nan for c in cells]), None
    names = sorted(set(values))
    index = {v: i for i, v in enumerate(names)}
    return np.array([index[c] if c in index else np.nan for c in cells], dtype=float), names


def impute_mean(X: np.ndarray) -> tuple[np.ndarray, int]:
    """Replace NaN by the column mean (0 for an all-missing column); returns (X, number replaced)."""
    missing = np.isnan(X)
    if not missing.any():
        return X, 0
    means = np.where(missing.all(0), 0.0, np.nanmean(np.where(missing.all(0), 0.0, X), axis=0))
    return np.where(missing, means, X), int(missing.sum())


# ---- reading ----------------------------------------------------------------------------------
def _data_lines(text: str) -> tuple[list[str], "list[int] | range"]:
    """Non-blank, non-comment lines and their 1-based line numbers in the file."""
    lines = text.split("\n")
    kept, numbers = [], []
    for k, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped and stripped[0] not in "#%":
            kept.append(line)
            numbers.append(k)
    return kept, numbers


def _fields(line: str, sep: str | None) -> list[str]:
    if sep is None:
        return line.split()
    if '"' in line:
        return next(csv.reader([line], delimiter=sep))
    return line.split(sep)


def sniff_delimiter(lines: list[str]) -> str | None:
    """The delimiter that splits the first line into more than one field and the most of the first
    20 lines into as many (ties: the order of `DELIMITERS`); None (whitespace) when none splits it."""
    sample = lines[:20]
    best, best_share = None, 0.0
    for sep in DELIMITERS:
        try:
            width = len(_fields(sample[0], sep))
            share = sum(len(_fields(line, sep)) == width for line in sample) / len(sample)
        except csv.Error:
            continue
        if width > 1 and share > best_share:
            best, best_share = sep, share
    return best


def _detect_header(rows: list[list[str]]) -> bool:
    first, rest = rows[0], rows[1:201]
    words = [c.strip() for c in first if c.strip() not in MISSING_TOKENS]
    if not words or any(_is_number(c) for c in words):
        return False
    if not rest:
        return True
    for j, name in enumerate(first):
        column = [r[j].strip() for r in rest if j < len(r)]
        known = [c for c in column if c not in MISSING_TOKENS]
        if known and all(_is_number(c) for c in known):
            return True  # a word above numbers
    return all(name.strip() not in {r[j].strip() for r in rest if j < len(r)} for j, name in enumerate(first))


def read_frame(path: Path, header: str = "auto", delimiter: str | None = None) -> tuple[pd.DataFrame, bool]:
    """The file as a DataFrame (numeric columns float64, text columns object with NaN for missing)
    with column names from the header or 0..d-1; and whether a header row was read.

    A plain file (no comments, quotes or blank lines) goes to pandas as it is; only the first 201
    lines are split in Python (delimiter and header detection)."""
    path = Path(path)
    if header not in ("auto", "yes", "no"):
        raise DataError(f"header must be 'auto', 'yes' or 'no', got {header!r}.")
    raw = read_bytes(path)
    if raw.isascii() and b"\r" not in raw and not looks_binary(raw) and not raw.startswith(b"\n"):
        blob = raw  # ASCII: the bytes are the text, no decoding round trip (nor a copy)
    else:
        blob = read_text(path, "CSV").strip("\n").encode()
    if not blob.strip():
        raise DataError(f"{path} has no data rows (it is empty or blank).")
    # blank lines make the separator count below disagree, which sends the file to the line path
    plain = bool(blob) and not any(c in blob for c in (b"#", b"%", b'"'))
    if plain:
        lines, numbers = blob[: 1 << 20].decode().split("\n", 201)[:201], range(1, 202)
        if len(lines) < 201:
            lines = blob.decode().split("\n", 201)[:201]
        while lines and not lines[-1]:
            lines.pop()
        trailing = len(blob) - next(k for k in range(len(blob), 0, -1) if blob[k - 1] != 10)
        n_rows = blob.count(b"\n") + 1 - trailing
    else:
        lines, numbers = _data_lines(blob.decode())
        n_rows = len(lines)
    if not lines:
        raise DataError(f"{path} has no data rows (it is empty or holds only comments).")
    sep = delimiter if delimiter is not None else sniff_delimiter(lines)
    first_rows = [_fields(line, sep) for line in lines[:201]]
    has_header = header == "yes" or (header == "auto" and _detect_header(first_rows))
    width = len(first_rows[0])
    if plain and (sep is None or blob.count(sep.encode()) != n_rows * (width - 1)):
        lines, numbers = _data_lines(blob.decode())
        plain = False
    if not plain:
        _check_widths(path, lines, numbers, sep, width)
    if has_header and n_rows == 1:
        raise DataError(f"{path} has a header row but no data rows.")
    names = [c.strip() for c in first_rows[0]] if has_header else list(range(width))
    if has_header:
        names = [n or f"column{j}" for j, n in enumerate(names)]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise DataError(f"{path}: the header names the column {dup!r} twice; column names must differ.")
    body = blob if plain else "\n".join(lines).encode()  # pandas parses bytes faster than str
    try:
        frame = pd.read_csv(io.BytesIO(body), sep=sep if sep is not None else r"\s+", header=None,
                            skiprows=1 if has_header else 0, names=range(width), na_values=sorted(MISSING_TOKENS),
                            keep_default_na=False, skipinitialspace=True, engine="c", quotechar='"',
                            true_values=["true", "True", "TRUE"], false_values=["false", "False", "FALSE"],
                            skip_blank_lines=True, low_memory=False)
    except (ValueError, pd.errors.ParserError, csv.Error) as err:
        if plain:
            lines, numbers = _data_lines(blob.decode())
        _check_widths(path, lines, numbers, sep, width, exact=True)
        raise DataError(f"{path}: cannot read it as delimited text ({str(err).strip().splitlines()[-1]}).") from None
    frame.columns = names
    return frame, has_header


def _check_widths(path: Path, lines: list[str], numbers, sep: str | None, width: int, exact: bool = False) -> None:
    """Every row has ``width`` fields (pandas would pad a short row with NaN without a word).

    Without quotes, the separator count of the whole text settles it: pandas refuses any row longer
    than the first, so with the right total no row is shorter either (``exact`` checks row by row)."""
    if sep is not None and not any('"' in line for line in lines):
        if not exact and "\n".join(lines).count(sep) == len(lines) * (width - 1):
            return
        counts = np.fromiter((line.count(sep) for line in lines), dtype=np.int64, count=len(lines)) + 1
    else:
        counts = np.array([len(_fields(line, sep)) for line in lines])
    bad = np.flatnonzero(counts != width)
    if bad.size:
        k = int(bad[0])
        raise DataError(f"{path}, line {numbers[k]}: expected {width} fields like the first row, found "
                        f"{counts[k]}.")


# ---- columns to matrices -------------------------------------------------------------------------
def _label_for(name) -> str:
    return f"'{name}'" if isinstance(name, str) else f"{name}"


def _text_values(column: pd.Series) -> pd.Series:
    return column.dropna().astype(str).str.strip()


def _numeric_or_refuse(path: Path, column: pd.Series, name) -> np.ndarray | None:
    """A numeric view of the column, or None when it is text; refuses columns mixing both."""
    if column.dtype == bool:
        return column.to_numpy(dtype=float)
    if column.dtype.kind in "fiu":
        return column.to_numpy(dtype=float)
    values = _text_values(column)
    lowered = values.str.lower()
    if lowered.isin(["true", "false"]).all() and len(values):
        return np.where(column.isna(), np.nan, column.astype(str).str.strip().str.lower().eq("true").astype(float))
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().any() and numbers.isna().any():
        row = numbers.index[numbers.isna()][0]
        raise DataError(f"{path}: column {_label_for(name)} holds numbers but also {values[row]!r} (data row "
                        f"{row + 1}); fix that value or mark it missing with '?'.")
    return None


def feature_block(path: Path, column: pd.Series, name) -> tuple[np.ndarray, list[str], str | None]:
    """One feature column as (n, k) floats, its k names, and a note when it was one-hot encoded."""
    numeric = _numeric_or_refuse(path, column, name)
    if numeric is not None:
        return numeric[:, None], [str(name)], None
    values = _text_values(column)
    categories = sorted(values.unique())
    if len(categories) > MAX_CATEGORIES or (len(categories) == len(values) and len(values) >= 10):
        raise DataError(f"{path}: column {_label_for(name)} is text with {len(categories)} distinct values "
                        f"in {len(values)} rows (an identifier or free text?); remove that column, or pass its "
                        "index to drop.")
    cells = column.astype(str).str.strip().where(column.notna())
    onehot = np.column_stack([(cells == c).to_numpy(dtype=float) for c in categories])
    onehot[column.isna().to_numpy()] = np.nan
    return onehot, [f"{name}={c}" for c in categories], \
        f"text column {_label_for(name)} one-hot encoded into {len(categories)} columns ({', '.join(categories[:5])}" \
        + (", …)" if len(categories) > 5 else ")")


def label_column(path: Path, column: pd.Series, name) -> np.ndarray:
    """One multi-label column as 0/1 with NaN for unknown: numbers 0/1, true/false, or two text values
    with a clear meaning (yes/no, ...). Anything else is refused."""
    numeric = _numeric_or_refuse(path, column, name)
    if numeric is not None:
        bad = ~np.isnan(numeric) & (numeric != 0) & (numeric != 1)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(f"{path}: label column {_label_for(name)} has the value {numeric[row]:g} (data row "
                            f"{row + 1}); labels must be 0, 1 or missing (unknown).")
        return numeric
    values = _text_values(column)
    categories = sorted(values.unique(), key=str.lower)
    meaning = binary_meaning(tuple(categories)) if len(categories) == 2 else None
    if meaning is None:
        raise DataError(f"{path}: label column {_label_for(name)} holds the text values "
                        f"{{{', '.join(categories[:5])}{', …' if len(categories) > 5 else ''}}}; a label must be 0/1 "
                        "(or yes/no, true/false): recode it.")
    lookup = dict(zip(categories, meaning))
    return column.astype(str).str.strip().map(lookup).where(column.notna()).to_numpy(dtype=float)


def class_column(path: Path, column: pd.Series, name) -> tuple[np.ndarray, list[str]]:
    """A class column as ids 0..C-1 (sorted order: numerically for integer codes) and class names."""
    if column.isna().any():
        row = int(np.flatnonzero(column.isna().to_numpy())[0])
        raise DataError(f"{path}: the class column {_label_for(name)} is missing in data row {row + 1}; remove "
                        "rows without a class first.")
    numeric = _numeric_or_refuse(path, column, name)
    if numeric is not None:
        if not np.all(numeric == np.round(numeric)):
            value = numeric[np.flatnonzero(numeric != np.round(numeric))[0]]
            raise DataError(f"{path}: the class column {_label_for(name)} holds {value:g}, not an integer class "
                            "code; a class column holds categories (use another column with --labels, or "
                            "--labels N for 0/1 label columns).")
        codes, y = np.unique(numeric, return_inverse=True)
        return y.astype(np.int64), [f"{c:g}" for c in codes]
    cells = column.astype(str).str.strip()
    names, y = np.unique(cells.to_numpy(dtype=str), return_inverse=True)
    return y.astype(np.int64), names.tolist()


# ---- the dataset ---------------------------------------------------------------------------------
def impute_features(X: np.ndarray, impute: str, meta: dict, path: Path, names=None) -> np.ndarray:
    """Refuse a feature column with no value at all; with impute='mean' fill the other gaps by the
    column mean (the count recorded in ``meta['imputed']``)."""
    if impute not in ("none", "mean"):
        raise DataError(f"impute must be 'none' or 'mean', got {impute!r}.")
    empty = np.flatnonzero(np.isnan(X).all(axis=0))
    if empty.size:
        j = int(empty[0])
        shown = _label_for(names[j]) if names and j < len(names) else str(j)
        raise DataError(f"{path}: feature column {shown} has no values at all; remove it from the file.")
    if impute == "mean":
        X, count = impute_mean(X)
        meta["imputed"] = f"{count} missing feature values replaced by column means"
    return X


def _choose_labels(path: Path, labels: str | None, names: list, keep: list[int], has_header: bool):
    """(label column indices, multi-label?) from the ``labels`` argument."""
    spec = labels.strip() if labels is not None else None
    if spec in (None, "", "last"):
        return [keep[-1]], False
    if spec == "first":
        return [keep[0]], False
    if spec.isdigit():
        n = int(spec)
        if not 1 <= n <= len(keep) - 1:
            raise DataError(f"--labels {n}: the number of label columns must be between 1 and {len(keep) - 1} "
                            f"({path} has {len(keep)} columns, and at least one must be a feature).")
        return keep[-n:], True
    if has_header:
        wanted = [part.strip() for part in spec.split(",")]
        if all(w in names for w in wanted):
            cols = [names.index(w) for w in wanted]
            if len(set(cols)) != len(cols):
                raise DataError(f"--labels {labels}: a column is named twice.")
            return cols, len(cols) > 1
    where = f"the header of {path} has no such column" if has_header else f"{path} has no header row"
    raise DataError(f"--labels {labels!r}: not 'last', 'first', a number of label columns or a column name ({where}).")


def load_delimited(path: Path, name: str, labels: str | None = None, impute: str = "none",
                   drop: tuple[int, ...] = (), header: str = "auto") -> Dataset:
    """A delimited file as a Dataset.

    labels : None or 'last' (class in the last column -> y), 'first', an integer string N (the last
             N columns are 0/1 labels -> Y), a header name (class column -> y), or several header
             names separated by commas (0/1 label columns -> Y)
    impute : 'none' (a missing feature value is an error) or 'mean' (column mean; a column with no
             value at all is still an error)
    drop : column indices to ignore (ids)
    header : 'auto' (detect), 'yes' or 'no'
    """
    path = Path(path)
    validate_name("dataset", name)
    frame, has_header = read_frame(path, header)
    if len(frame) < 2:
        raise DataError(f"{path} has {len(frame)} data row; a dataset needs at least 2 (and at least as many as "
                        "cross-validation folds).")
    names = list(frame.columns)
    keep = [j for j in range(len(names)) if j not in set(drop)]
    if len(keep) < 2:
        raise DataError(f"{path} has {len(keep)} column(s) to use; a dataset needs at least one feature column and "
                        "a label column (is the delimiter a comma, tab, semicolon or '|'?).")
    label_cols, multi = _choose_labels(path, labels, names, keep, has_header)
    feature_cols = [j for j in keep if j not in label_cols]
    blocks, feature_names, notes = [], [], []
    for j in feature_cols:
        block, block_names, note = feature_block(path, frame.iloc[:, j], names[j])
        blocks.append(block)
        feature_names += block_names
        if note:
            notes.append(note)
    X = np.hstack(blocks)
    meta = {"source_files": [str(path)], "feature_names": feature_names if has_header or notes else []}
    if notes:
        meta["notes"] = notes
    X = impute_features(X, impute, meta, path, feature_names)
    if multi:
        Y = np.column_stack([label_column(path, frame.iloc[:, j], names[j]) for j in label_cols])
        meta["label_names"] = [str(names[j]) for j in label_cols]
        dataset = Dataset(name, {"X": X, "Y": Y}, meta)
        check_labels(dataset)
        return dataset
    y, class_names = class_column(path, frame.iloc[:, label_cols[0]], names[label_cols[0]])
    if len(class_names) < 2:
        raise DataError(f"{path}: the class column {_label_for(names[label_cols[0]])} has a single value "
                        f"({class_names[0]!r}); classification needs at least two classes.")
    meta["class_names"] = class_names
    return Dataset(name, {"X": X, "y": y}, meta)
