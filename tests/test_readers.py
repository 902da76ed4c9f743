"""The ARFF, MULAN and CSV readers against the formats' definitions (Weka's ARFF page, MULAN's
XML label files, RFC 4180 CSV), against reference readers (liac-arff for every shipped ARFF,
pandas.read_csv for CSV values), and under property-based fuzzing: every input is read correctly
or refused with a DataError — no other exception."""
from __future__ import annotations

import gzip
import string
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from malt.datasets.open import load_file, open_dataset
from malt.datasets.arff import read_arff
from malt.datasets.catalogue import describe_entry, entry, resolve, validate_name
from malt.datasets.dataset import Dataset, check_labels
from malt.datasets.delimited import load_delimited
from malt.datasets.mulan import load_mulan, read_label_names
from malt.errors import DataError, InvalidParameterError
from tests.conftest import require_data, require_reference


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# ---- ARFF -------------------------------------------------------------------------------------------
BIRDS = """% MULAN writes names with Weka's quoting
@relation 'birds: a \\'test\\''
@attribute f1 numeric
@attribute "f 2" REAL
@attribute 'Swainson\\'s Thrush' {0,1}
@attribute 'back\\\\slash' {0,1}
@data
1.5, 2, 1, 0
7, -3e2, ?, 1   % a trailing comment
{0 4,3 1}
"""
BIRDS_XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="Swainson's Thrush"></label><label name="back\\slash"></label>
</labels>"""


def test_quoted_and_escaped_names_match_mulan_xml(tmp_path):
    arff = read_arff(write(tmp_path / "b.arff", BIRDS))
    assert arff.relation == "birds: a 'test'"
    assert arff.names == ["f1", "f 2", "Swainson's Thrush", "back\\slash"]
    np.testing.assert_array_equal(arff.data, [[1.5, 2, 1, 0], [7, -300, np.nan, 1], [4, 0, 0, 1]])
    ds = load_mulan("birds", [tmp_path / "b.arff"], write(tmp_path / "b.xml", BIRDS_XML))
    assert ds.meta["label_names"] == ["Swainson's Thrush", "back\\slash"]
    np.testing.assert_array_equal(ds["Y"], [[1, 0], [np.nan, 1], [0, 1]])
    np.testing.assert_array_equal(ds["X"], [[1.5, 2], [7, -300], [4, 0]])


def test_crlf_bom_and_gzip_read_the_same(tmp_path):
    plain = read_arff(write(tmp_path / "p.arff", BIRDS)).data
    crlf = BIRDS.replace("\n", "\r\n").encode()
    for name, raw in [("bom.arff", b"\xef\xbb\xbf" + crlf), ("z.arff.gz", gzip.compress(crlf)),
                      ("named-plain.arff", gzip.compress(BIRDS.encode()))]:  # gzip recognised by content
        np.testing.assert_array_equal(read_arff(write(tmp_path / name, raw)).data, plain)


def test_nominal_string_and_date_attributes(tmp_path):
    text = ("@relation r\n@attribute colour {red, 'dark blue', green}\n@attribute s string\n"
            "@attribute d date 'yyyy-MM-dd HH:mm:ss'\n@attribute yn {YES,NO}\n@attribute l {no,yes}\n@data\n"
            "red,'it''s',\"2001-01-01 00:00:00\",YES,yes\n'dark blue',\"a \\\"b\\\"\",?,NO,no\n"
            "{0 green,1 plain,4 yes}\n")
    arff = read_arff(write(tmp_path / "t.arff", text.replace("'it''s'", "'it\\'s'")))
    assert [a.kind for a in arff.attributes] == ["nominal", "string", "date", "nominal", "nominal"]
    assert arff.strings[1] == ["it's", 'a "b"', "plain"]
    # 2001-01-01T00:00:00Z is POSIX second 978307200; an omitted sparse nominal is its first value
    np.testing.assert_array_equal(arff.data[:, [0, 2, 3, 4]], [[0, 978307200, 0, 1], [1, np.nan, 1, 0],
                                                               [2, 0, 0, 1]])
    with pytest.raises(DataError, match="string attribute"):
        load_file(tmp_path / "t.arff", labels="1")


def test_nominal_features_are_one_hot_and_yes_no_is_one_zero(tmp_path):
    write(tmp_path / "f.arff", "@relation r\n@attribute c {a,b,c}\n@attribute m {YES,NO}\n@attribute l {0,1}\n"
                               "@data\na,NO,1\nc,YES,0\n?,YES,1\nb,NO,0\n")
    ds = load_file(tmp_path / "f.arff", labels="1", impute="mean")
    assert ds.meta["feature_names"] == ["c=a", "c=b", "c=c", "m"]
    np.testing.assert_array_equal(ds["X"][[0, 1, 3]], [[1, 0, 0, 0], [0, 0, 1, 1], [0, 1, 0, 0]])
    np.testing.assert_allclose(ds["X"][2], [1 / 3, 1 / 3, 1 / 3, 1])  # '?' imputed by the column means


@pytest.mark.parametrize("body,problem", [
    ("@attribute a numeric\n@attribute l {0,1}\n@data\n1,7\n", r"line 5: '7' is not one of the declared"),
    ("@attribute a numeric\n@attribute l {0,1}\n@data\n1_0,1\n", "line 5: '1_0' is not a number"),
    ("@attribute a numeric\n@attribute l {0,1}\n@data\n'1,1\n", "line 5: unterminated"),
    ("@attribute a numeric\n@attribute l {0,1}\n@data\n{0 1,0 2}\n", "line 5: sparse index 0 given twice"),
    ("@attribute a numeric\n@attribute l {0,1}\n@data\n1,1,{2}\n", "line 5: instance weights"),
    ("@attribute a numeric\n@attribute a {0,1}\n@data\n1,1\n", "line 3: attribute 'a' is declared twice"),
    ("@attribute a relational\n@end a\n@data\n1\n", "line 2: attribute 'a' is relational"),
    ("@attribute a {x,x}\n@data\nx\n", "declares the value 'x' twice"),
])
def test_format_errors_name_the_line(tmp_path, body, problem):
    path = write(tmp_path / "bad.arff", "@relation r\n" + body)
    with pytest.raises(DataError, match=problem):
        read_arff(path)


@pytest.mark.parametrize("raw,problem", [
    (b"not gzip at all", "not gzip-compressed"),
    (gzip.compress(BIRDS.encode(), mtime=0)[:40], "truncated gzip"),  # mtime=0: the same bytes in every worker
    (b"\x1f\x8b" + bytes(range(256)) * 4, "damaged gzip"),
], ids=["not-gzip", "truncated", "damaged"])
def test_broken_gzip_is_one_clear_error(tmp_path, raw, problem):
    with pytest.raises(DataError, match=problem):
        read_arff(write(tmp_path / "x.arff.gz", raw))


@pytest.mark.parametrize("label_decl,value,problem", [
    ("numeric", "2", "has the value 2"),
    ("numeric", "-1", "has the value -1"),
    ("numeric", "0.5", "has the value 0.5"),
    ("{a,b,c}", "c", "a label must be binary"),
    ("{x,y}", "x", "a label must be binary"),
])
def test_labels_must_be_zero_one(tmp_path, label_decl, value, problem):
    first, second = ("1", "0") if label_decl == "numeric" else (value, value)
    write(tmp_path / "l.arff", f"@relation r\n@attribute a numeric\n@attribute l {label_decl}\n@data\n"
                               f"1,{first}\n2,{second}\n3,{value}\n")
    with pytest.raises(DataError, match=problem):
        load_file(tmp_path / "l.arff", labels="1")


def test_mulan_xml_duplicates_and_missing_names_are_refused(tmp_path):
    write(tmp_path / "b.arff", BIRDS)
    dup = BIRDS_XML.replace('<label name="back\\slash">', '<label name="Swainson\'s Thrush">')
    with pytest.raises(DataError, match="listed twice"):
        read_label_names(write(tmp_path / "dup.xml", dup))
    other = BIRDS_XML.replace("Swainson's", "Swainson\\'s")
    with pytest.raises(DataError, match="not an attribute"):
        load_mulan("b", [tmp_path / "b.arff"], write(tmp_path / "o.xml", other))
    with pytest.raises(DataError, match="XML error"):
        read_label_names(write(tmp_path / "x.xml", "<labels><label name='a'>"))


@pytest.mark.timeout(600)
def test_every_shipped_arff_matches_liac_arff():
    """Same attribute names and the same value in every cell as the reference reader."""
    root = require_data("multilabel/emotions/emotions.arff")
    liac = require_reference("arff")
    paths = sorted((root / "multilabel").glob("*/*.arff*"))
    assert len(paths) >= 16
    for path in paths:
        ours = read_arff(path)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as handle:
            ref = liac.load(handle)
        assert ours.names == [a[0] for a in ref["attributes"]], path
        cells = np.array(ref["data"], dtype=object)
        assert cells.shape == ours.data.shape, path
        for j, attribute in enumerate(ours.attributes):
            column = ours.data[:, j]
            if attribute.kind == "nominal":
                names = np.array([*attribute.values, None], dtype=object)
                mine = names[np.where(np.isnan(column), -1, np.nan_to_num(column)).astype(int)]
                assert (mine == cells[:, j]).all(), (path, attribute.name)
            else:
                expected = np.array([np.nan if v is None else float(v) for v in cells[:, j]])
                np.testing.assert_array_equal(column, expected, err_msg=f"{path} {attribute.name}")


# ARFF round trip: whatever a well-formed writer produces is read back exactly
name_text = st.text(alphabet=string.ascii_letters + string.digits + " '\"\\%,{}-_.", min_size=1, max_size=8)


def quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@settings(max_examples=60, deadline=None)
@given(names=st.lists(name_text, min_size=1, max_size=5, unique=True),
       levels=st.lists(name_text, min_size=2, max_size=3, unique=True),
       rows=st.lists(st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)), min_size=5, max_size=5),
                     min_size=1, max_size=6),
       sparse=st.booleans(), gz=st.booleans())
def test_arff_round_trip(tmp_path_factory, names, levels, rows, sparse, gz):
    n = len(names)
    lines = ["@relation " + quote("r"), *[f"@attribute {quote(x)} numeric" for x in names],
             f"@attribute {quote('nominal')} {{{', '.join(quote(v) for v in levels)}}}", "@data"]
    if "nominal" in names:
        return
    expected = []
    for r, row in enumerate(rows):
        values = row[:n]
        level = r % len(levels)
        expected.append([np.nan if v is None else v for v in values] + [level])
        cells = ["?" if v is None else repr(v) for v in values] + [quote(levels[level])]
        if sparse:
            lines.append("{" + ", ".join(f"{j} {c}" for j, c in enumerate(cells) if c != "0.0") + "}")
        else:
            lines.append(",".join(cells))
    raw = ("\n".join(lines) + "\n").encode()
    path = tmp_path_factory.mktemp("rt") / "x.arff"
    path.write_bytes(gzip.compress(raw) if gz else raw)
    arff = read_arff(path)
    assert arff.names == [*names, "nominal"] and arff.attributes[-1].values == tuple(levels)
    np.testing.assert_array_equal(arff.data, np.array(expected, dtype=float).reshape(len(rows), n + 1))


arff_junk = st.lists(st.one_of(
    st.sampled_from(["@relation r", "@attribute a numeric", "@attribute 'b c' {0,1}", "@attribute s string",
                     "@attribute d date", "@data", "% c", "@ATTRIBUTE e integer", "{0 1}", "{1 '?'}", "{", "}"]),
    st.text(alphabet="01?,'\"{} \t\\%.-e", max_size=12)), max_size=10).map("\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=arff_junk)
def test_malformed_arff_is_read_or_refused(tmp_path, text):
    path = write(tmp_path / "j.arff", text)
    try:
        arff = read_arff(path)
    except DataError as err:
        assert "\n" not in str(err)
        return
    assert arff.data.shape == (arff.data.shape[0], len(arff.attributes))


# ---- CSV --------------------------------------------------------------------------------------------------
def test_csv_values_match_pandas(tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.standard_normal((200, 6)).round(6), columns=list("abcdef"))
    frame.loc[[3, 7], "b"] = np.nan
    frame["label"] = rng.integers(0, 3, 200)
    frame.to_csv(tmp_path / "x.csv", index=False)
    ds = load_delimited(tmp_path / "x.csv", "x", impute="mean")
    ref = pd.read_csv(tmp_path / "x.csv")
    expected = ref[list("abcdef")].fillna(ref[list("abcdef")].mean()).to_numpy()
    np.testing.assert_allclose(ds["X"], expected, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(ds["y"], ref["label"].to_numpy())
    assert ds.meta["feature_names"] == list("abcdef")


@pytest.mark.parametrize("text,labels,X,y_or_Y", [
    ("a,b,label\n1,2,x\n3,4,y\n", None, [[1, 2], [3, 4]], [0, 1]),                       # header over numbers
    ("1;2;x\r\n3;4;y\r\n", None, [[1, 2], [3, 4]], [0, 1]),                               # ';', CRLF, no header
    ("\ufeffa\tb\tl\n1\t2\t1\n3\t4\t0\n", "1", [[1, 2], [3, 4]], [[1], [0]]),            # BOM, tab, --labels 1
    ('a,b,c\n"1",2,yes\n"3",4,no\n', "c", [[1, 2], [3, 4]], [1, 0]),                      # quoted numbers
    ("# comment\na b l\n1 ? 1\n3 4 0\n% more\n5 6 1\n", "1", [[1, np.nan], [3, 4], [5, 6]], [[1], [0], [1]]),
    ("x,ok,l1,l2\n1,true,yes,0\n2,false,no,1\n", "l1,l2", [[1, 1], [2, 0]], [[1, 0], [0, 1]]),
])
def test_csv_dialects(tmp_path, text, labels, X, y_or_Y):
    path = write(tmp_path / "d.csv", text)
    try:
        ds = load_delimited(path, "d", labels=labels)
    except DataError as err:
        assert "missing" in str(err) or "NaN" in str(err)  # the ? in the comment case is refused without impute
        ds = load_delimited(path, "d", labels=labels, impute="mean")
        X = np.where(np.isnan(X), np.nanmean(np.array(X, dtype=float), axis=0), X)
    np.testing.assert_array_equal(ds["X"], X)
    np.testing.assert_array_equal(ds["Y"] if "Y" in ds else ds["y"], y_or_Y)


def test_latin1_and_gzip_csv(tmp_path):
    raw = "caf\xe9,b,l\n1,2,0\n3,4,1\n".encode("latin-1")
    ds = load_delimited(write(tmp_path / "l.csv.gz", gzip.compress(raw)), "l")
    assert ds.meta["feature_names"] == ["caf\xe9", "b"]


def test_text_features_are_one_hot_never_ordinal(tmp_path):
    ds = load_delimited(write(tmp_path / "c.csv", "x,colour,l\n1,red,0\n2,green,1\n3,blue,0\n4,red,1\n"), "c")
    assert ds.meta["feature_names"] == ["x", "colour=blue", "colour=green", "colour=red"]
    np.testing.assert_array_equal(ds["X"][:, 1:], [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 1]])
    assert "one-hot" in ds.meta["notes"][0] and "one-hot" in ds.describe()["notes"]


@pytest.mark.parametrize("text,kwargs,problem", [
    ("a,b,c,d\n1,2,3,0\n4,5,6,1\n", {"labels": "0"}, "between 1 and 3"),
    ("a,b,c,d\n1,2,3,0\n4,5,6,1\n", {"labels": "9"}, "between 1 and 3"),
    ("a,b,l\n1,2,0\n3,4,2\n5,6,1\n", {"labels": "1"}, "has the value 2"),
    ("a,b,l\n1,2,x\n3,4,y\n5,6,z\n", {"labels": "1"}, "text values"),
    ("a,b,l\n1,2,0.5\n3,4,1.5\n", {}, "not an integer class"),
    ("a,b,l\n1,2,x\n3,4,x\n", {}, "single value"),
    ("a,b,l\n1,2,0\n3,4,0\n", {"labels": "1"}, "no label is positive"),
    ("a,b,l,m\n1,2,0,1\n3,4,0,0\n", {"labels": "2"}, "'l' has no positive example"),
    ("a,b,c,l\n", {}, "header row but no data"),
    ("a,b,l\n1,2,0\n3,4\n", {}, "line 3: expected 3 fields"),
    ("a,b,l\n1,2,0\n3,4,1,5\n", {}, "line 3: expected 3 fields"),
    ("a,b,l\n1,x,0\n3,4,1\n", {}, "holds numbers but also 'x'"),
    ("a,b,l\n1,?,0\n3,?,1\n", {"impute": "mean"}, "no values at all"),
    ("a,b,l\n1,?,0\n3,4,1\n", {}, "NaN"),
    ("id,b,l\n" + "".join(f"u{k},{k},{k % 2}\n" for k in range(12)), {}, "identifier"),
    ("a,a,l\n1,2,0\n3,4,1\n", {}, "twice"),
    ("1\n2\n3\n", {}, "1 column"),
    ("", {}, "no data rows"),
    ("a,b,l\n1,2,0\n", {}, "1 data row"),
])
def test_csv_refusals(tmp_path, text, kwargs, problem):
    with pytest.raises(DataError, match=problem):
        load_delimited(write(tmp_path / "bad.csv", text), "bad", **kwargs)


def test_random_bytes_and_folders_are_refused(tmp_path):
    rng = np.random.default_rng(1)
    for suffix in (".csv", ".arff", ".csv.gz"):
        with pytest.raises(DataError, match="not a text|not gzip|damaged gzip|binary"):
            load_file(write(tmp_path / f"r{suffix}", rng.bytes(4096)), labels="1")
    with pytest.raises(DataError, match="folder"):
        load_file(tmp_path, labels="1")


csv_cell = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-3, 3).map(str),
                     st.sampled_from(["?", "", "a", '"x,y"', "yes", "no", "true", "nan", "1e999", '"', " "]))
csv_junk = st.lists(st.lists(csv_cell, min_size=0, max_size=5).map(",".join), max_size=8).map("\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=csv_junk, labels=st.sampled_from([None, "first", "1", "2", "0", "a"]),
       impute=st.sampled_from(["none", "mean"]))
def test_malformed_csv_is_read_or_refused(tmp_path, text, labels, impute):
    path = write(tmp_path / "j.csv", text)
    try:
        ds = load_file(path, labels=labels, impute=impute)
    except DataError as err:
        assert "\n" not in str(err)
        return
    assert np.isfinite(ds["X"]).all() and ds.n_rows >= 2


# ---- dataset boundary and names ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["", " ", "a/b", "../x", "..", "/abs", "a\\b", "x" * 101, "-dash", ".hidden",
                                  "sp ace", "tab\t", "nul\0", "é"])
def test_bad_names_are_refused(name):
    with pytest.raises(InvalidParameterError):
        validate_name("dataset", name)


@pytest.mark.parametrize("name", ["a", "my-data", "CAL500", "x.v2", "a_b+c", "9" * 100])
def test_good_names_pass(name):
    assert validate_name("dataset", name) == name


@pytest.mark.parametrize("components,problem", [
    ({"X": np.ones((1, 2)), "y": np.array([0])}, "1 row"),
    ({"X": np.ones((3, 0)), "y": np.array([0, 1, 0])}, "no feature columns"),
    ({"X": np.ones((3, 2)), "y": np.array([0, 2, 0])}, "class id 1 has no example"),
    ({"X": np.ones((3, 2)), "y": np.array([1, 1, 1])}, "same class"),
    ({"X": np.ones((3, 2)), "y": np.array([0.0, 1.0, 0.0])}, "integers"),
    ({"X": np.c_[np.ones(3), np.full(3, np.nan)], "y": np.array([0, 1, 0])}, "column 1 .* no values at all"),
    ({"M": np.full((3, 2), np.nan)}, "no observed entry"),
    ({"X": np.ones((3, 2)), "Y": np.ones((2, 2))}, "disagree"),
])
def test_dataset_boundary(components, problem):
    with pytest.raises(DataError, match=problem):
        Dataset("d", components)


@pytest.mark.parametrize("Y,problem", [
    ([[0, 2], [1, 0]], "value 2"),
    ([[np.nan, np.nan], [np.nan, np.nan]], "every label value is unknown"),
    ([[0, 0], [0, 0]], "no label is positive"),
    ([[1, np.nan], [0, np.nan]], "unknown \\(NaN\\) in every row"),
    ([[1, 0], [0, 0]], "column 1 has no positive example"),
    ([[1, 1], [0, 1]], "column 1 is positive in every row"),
])
def test_label_checks(Y, problem):
    with pytest.raises(DataError, match=problem):
        check_labels(Dataset("d", {"X": np.ones((2, 1)), "Y": np.array(Y, dtype=float)}))


def test_catalogue_names_match_ignoring_case():
    assert resolve("SYNTHETIC-MultiLabel") == "synthetic-multilabel"
    assert resolve("foo", ["Foo", "FOO"]) is None and resolve("Foo", ["Foo", "FOO"]) == "Foo"
    assert open_dataset("Synthetic-Multilabel").name == "synthetic-multilabel"
    with pytest.raises(DataError, match="empty"):
        open_dataset("")


def test_catalogue_entries_carry_their_source():
    info = describe_entry(entry("CAL500"))
    assert "MULAN" in info["source"] and "tsoumakas/mulan" in info["download"]
    assert open_dataset("synthetic-multilabel").describe()["source"] == "malt synthetic generator (seed 0)"
