"""Property-based bad input (hypothesis): malformed ARFF/CSV files, NaN/inf, empty label columns,
out-of-range parameters and random CLI argument combinations. Every case must end in a clear
one-line error (exit 2) or a valid result — never a traceback — and never touch the repository."""
from __future__ import annotations

import string
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from malt.cli import main
from tests.helpers import snapshot

CASES = {"count": 0}

cell = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-5, 5).map(str),
                 st.sampled_from(["?", "", "a", "'x,y'", "{", "}", "nan", "inf", "1e999"]))
row = st.lists(cell, min_size=0, max_size=5).map(",".join)
header_line = st.sampled_from(["@relation r", "@attribute a numeric", "@attribute b {0,1}", "@attribute c {x,y}",
                               "@attribute 'd e' real", "@attribute f string", "@data", "% note", "@ATTRIBUTE g integer"])
arff_text = st.lists(st.one_of(header_line, row), min_size=0, max_size=12).map("\n".join)
csv_text = st.lists(row, min_size=0, max_size=8).map("\n".join)


def _check(result, repo: Path, before: dict) -> None:
    CASES["count"] += 1
    assert result.exit_code in (0, 2), f"exit {result.exit_code}: {result.output}\n{result.exception!r}"
    if result.exit_code == 2:
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert lines and lines[-1].startswith(("error:", "Error:")), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=arff_text, labels=st.sampled_from(["1", "2", "0", "9"]))
def test_malformed_arff_never_crashes(text, labels):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.arff"
        path.write_text(text)
        repo = Path(tmp) / "repo"
        result = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--algo", "mllr", "--dataset", str(path),
                                           "--labels", labels, "--quiet"])
        _check(result, repo, {})


@settings(max_examples=60, deadline=None)
@given(text=csv_text, labels=st.sampled_from(["last", "first", "1", "2", "nosuch"]),
       impute=st.sampled_from(["none", "mean"]))
def test_malformed_csv_import_never_crashes(text, labels, impute):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        path.write_text(text)
        repo = Path(tmp) / "repo"
        result = CliRunner().invoke(main, ["datasets", "import", "mine", str(path), "--labels", labels,
                                           "--impute", impute, "--repo", str(repo)])
        _check(result, repo, {})


word = st.text(alphabet=string.ascii_lowercase + "-=.,0123456789", min_size=0, max_size=12)
option = st.sampled_from(["--algo", "--dataset", "--task", "--missing", "--labeled", "--folds", "--seed",
                          "--param", "--task-param", "--jobs", "--discard", "--quiet"])


@settings(max_examples=80, deadline=None)
@given(args=st.lists(st.one_of(option, word, st.sampled_from(["mllr", "column-mean", "synthetic-multilabel",
                                                               "missing", "multilabel", "C=2", "C=-1",
                                                               "missing=0.5", "0.3", "2"])), max_size=9))
def test_random_cli_arguments_never_crash(args):
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        result = CliRunner().invoke(main, ["cv", "--repo", str(repo), "--quiet", *args])
        _check(result, repo, {})


def test_report_case_count():
    print(f"fuzz cases run: {CASES['count']}")
