"""Malformed and degenerate input, run through the real `malt` command line (its click entry point,
in-process, one fresh copy of a base repository per case) and property-based fuzzing the same way.

Every case must end in one of two ways:
* success (exit 0) with the result the case expects (rows imported, the dataset shown, ...), or
* exactly one line on stderr, ``error: ...`` (matching the case's pattern when it has one; click's
  own usage errors end in one ``Error: ...`` line after the usage), a non-zero exit, no traceback,
  and a repository byte-identical to before (files, folders, links).

The corpus files live in tests/corpus/ (written by tests/corpus/make_corpus.py).

`python -m tests.test_fuzz` runs the corpus and prints the tally of issue 22 (clean error /
legitimate success / wrong success / traceback / hang / repository changed).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import string
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tests.plugins.counting  # noqa: F401  (test-counting, as run_malt registers it)
from tests.helpers import ROOT

CORPUS = ROOT / "tests" / "corpus"
CASE_TIMEOUT = 90.0
"""Seconds before a case counts as a hang."""


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # {c}: the corpus folder, {r}: the case's repository, {t}: a scratch folder
    expect: str  # 'error' or 'ok'
    match: str = ""  # regex the error line (expect='error') or stdout+stderr (expect='ok') must contain
    data: bool = False  # needs MALT_DATA (the shared datasets)


def imp(name: str, file: str, *extra: str) -> tuple[str, ...]:
    return ("datasets", "import", name, f"{{c}}/{file}", *extra, "--repo", "{r}")


def cv(dataset: str, *extra: str, algo: str = "test-counting") -> tuple[str, ...]:
    return ("cv", "--algo", algo, "--dataset", dataset, "--quiet", "--repo", "{r}", *extra)


# ---- the corpus -----------------------------------------------------------------------------------------
ARFF_OK = {  # file: (labels, rows)
    "good.arff": ("{c}/good.xml", 12), "birds.arff": ("{c}/birds.xml", 12), "sparse.arff": ("2", 12),
    "crlf-bom.arff": ("2", 12), "gzipped.arff.gz": ("2", 12), "comments.arff": ("{c}/good.xml", 12),
    "nominal-features.arff": ("2", 12), "yes-no-labels.arff": ("2", 12), "unknown-labels.arff": ("2", 12),
    "date-feature.arff": ("2", 12),
}
ARFF_BAD = {  # file: (labels, error pattern)
    "label-2.arff": ("2", "has the value 2"), "label-minus1.arff": ("2", "has the value -1"),
    "label-half.arff": ("2", "has the value 0.5"), "label-nominal-7.arff": ("2", "'7' is not one of"),
    "label-text-3.arff": ("2", "must be binary"), "label-text-2.arff": ("2", "must be binary"),
    "labels-all-unknown.arff": ("2", "every label value is unknown"),
    "labels-all-zero.arff": ("2", "no label is positive"),
    "label-never-positive.arff": ("2", "no positive example"),
    "label-always-positive.arff": ("2", "positive in every row"), "one-row.arff": ("2", "1 row"),
    "no-data.arff": ("2", "@data section is empty"), "no-data-section.arff": ("1", "no @data"),
    "header-only-attrs.arff": ("1", "@data before any @attribute"), "wrong-count.arff": ("2", "expected 5 values"),
    "bad-number.arff": ("2", "'abc' is not a number"), "underscore-number.arff": ("2", "'1_000' is not a number"),
    "unterminated-quote.arff": ("2", "unterminated"), "duplicate-attribute.arff": ("2", "declared twice"),
    "relational.arff": ("2", "relational"), "unknown-type.arff": ("2", "unknown type"),
    "string-feature.arff": ("2", "string attribute"), "sparse-out-of-range.arff": ("2", "sparse index 9"),
    "sparse-duplicate-index.arff": ("2", "given twice"), "sparse-unclosed.arff": ("2", "closing"),
    "instance-weight.arff": ("2", "instance weights"), "features-all-missing.arff": ("2", "no values at all"),
    "feature-col-missing.arff": ("2", "no values at all"), "feature-nan-some.arff": ("2", "NaN"),
    "inf-feature.arff": ("2", "NaN or inf"), "all-labels.arff": ("2", "between 1 and 1"),
    "not-gzip.arff.gz": ("2", "not gzip-compressed"), "truncated.arff.gz": ("2", "truncated gzip"),
    "random-bytes.arff": ("2", "not a text ARFF"), "empty.arff": ("2", "no @data"),
    "csv-named-arff.arff": ("2", "unexpected header line"),
}
XML_BAD = {  # xml file: pattern (with good.arff / birds.arff)
    "dup-labels.xml": "listed twice", "missing-label.xml": "'nosuch' named in the XML",
    "broken.xml": "XML error", "no-labels.xml": "no <label", "random-bytes.xml": "XML error",
    "nonexistent.xml": "no such file",
}
CSV_OK = {  # file: (labels, rows)
    "class.csv": (None, 12), "class-noheader.csv": (None, 12), "multilabel.csv": ("2", 12),
    "semicolon.csv": (None, 12), "tabs.tsv": (None, 12), "whitespace.txt": (None, 12), "quoted.csv": (None, 12),
    "crlf-bom.csv": (None, 12), "latin1.csv": (None, 12), "gzipped.csv.gz": (None, 12), "comments.csv": (None, 12),
    "colour.csv": (None, 12), "bool-labels.csv": ("l1,l2", 12), "four-col.csv": ("2", 12),
}
CSV_BAD = {  # file: (labels, error pattern)
    "header-only.csv": (None, "header row but no data rows"), "empty.csv": (None, "no data rows"),
    "blank-lines.csv": (None, "no data rows"), "comments-only.csv": (None, "no data rows"),
    "one-row.csv": (None, "1 data row"), "one-column.csv": (None, "1 column"),
    "ragged-short.csv": (None, "line 3: expected 3 fields"), "ragged-long.csv": (None, "line 3: expected 3 fields"),
    "mixed-types.csv": (None, "holds numbers but also 'abc'"), "identifier.csv": (None, "identifier"),
    "text-label-012.csv": ("2", "text values"), "label-2.csv": ("2", "has the value 2"),
    "label-half.csv": ("2", "has the value 0.5"), "class-float.csv": (None, "not an integer class"),
    "single-class.csv": (None, "single value"), "class-missing.csv": (None, "class column 'label' is missing"),
    "labels-all-zero.csv": ("2", "no label is positive"), "labels-all-unknown.csv": ("2", "every label value"),
    "label-never-positive.csv": ("2", "no positive example"), "feature-all-missing.csv": (None, "no values at all"),
    "nan-feature.csv": (None, "NaN"), "inf-feature.csv": (None, "NaN or inf"), "duplicate-header.csv": (None, "twice"),
    "not-gzip.csv.gz": (None, "not gzip-compressed"), "truncated.csv.gz": (None, "truncated gzip"),
    "random-bytes.csv": (None, "not a text CSV"), "binary-nul.csv": (None, "not a text CSV"),
    "unclosed-quote.csv": (None, ""), "a-folder.csv": (None, "is a folder"), "nonexistent.csv": (None, "not found"),
}

CASES: list[Case] = []
for file, (labels, n) in ARFF_OK.items():
    CASES.append(Case(f"import-{file}", imp("mine", file, "--labels", labels), "ok", rf"imported mine \({n} rows"))
    CASES.append(Case(f"cv-{file}", cv(f"{{c}}/{file}", "--labels", labels, "--folds", "3"), "ok", r"3 unit\(s\) run"))
for file, (labels, pattern) in ARFF_BAD.items():
    CASES.append(Case(f"import-{file}", imp("mine", file, "--labels", labels), "error", pattern))
    CASES.append(Case(f"cv-{file}", cv(f"{{c}}/{file}", "--labels", labels), "error", pattern))
for xml_file, pattern in XML_BAD.items():
    CASES.append(Case(f"import-good.arff-{xml_file}", imp("mine", "good.arff", "--labels", f"{{c}}/{xml_file}"),
                      "error", pattern))
    CASES.append(Case(f"cv-good.arff-{xml_file}", cv("{c}/good.arff", "--labels", f"{{c}}/{xml_file}"), "error",
                      pattern))
CASES += [
    Case("import-birds-escaped-xml", imp("mine", "birds.arff", "--labels", "{c}/escaped-label-mismatch.xml"), "error",
         r"the ARFF has \"Swainson's Thrush\""),
    Case("import-arff-no-labels", imp("mine", "good.arff"), "error", "say which attributes are labels"),
    Case("cv-arff-no-labels", cv("{c}/good.arff"), "error", "say which attributes are labels"),
    Case("import-arff-labels-0", imp("mine", "good.arff", "--labels", "0"), "error", "between 1 and 4"),
    Case("import-arff-labels-99", imp("mine", "good.arff", "--labels", "99"), "error", "between 1 and 4"),
    Case("import-arff-labels-word", imp("mine", "good.arff", "--labels", "abc"), "error", "no such file"),
    Case("import-arff-impute-mean", ("datasets", "import", "mine", "{c}/feature-nan-some.arff",
                                                 "--labels", "2", "--impute", "mean", "--repo", "{r}"), "ok",
         r"imported mine \(12 rows"),
]
for file, (labels, n) in CSV_OK.items():
    extra = ("--labels", labels) if labels else ()
    CASES.append(Case(f"import-{file}", imp("mine", file, *extra), "ok", rf"imported mine \({n} rows"))
for file, (labels, pattern) in CSV_BAD.items():
    extra = ("--labels", labels) if labels else ()
    CASES.append(Case(f"import-{file}", imp("mine", file, *extra), "error", pattern))
    CASES.append(Case(f"cv-{file}", cv(f"{{c}}/{file}", *extra, algo="gf"), "error", pattern))
CASES += [
    Case("import-missing-values-impute", imp("mine", "missing-values.csv", "--impute", "mean"), "ok",
         r"imported mine \(12 rows"),
    Case("import-missing-values-no-impute", imp("mine", "missing-values.csv"), "error", "NaN"),
    Case("import-four-col-labels-0", imp("mine", "four-col.csv", "--labels", "0"), "error", "between 1 and 3"),
    Case("cv-four-col-labels-0", cv("{c}/four-col.csv", "--labels", "0"), "error", "between 1 and 3"),
    Case("import-four-col-labels-9", imp("mine", "four-col.csv", "--labels", "9"), "error", "between 1 and 3"),
    Case("cv-four-col-labels-9", cv("{c}/four-col.csv", "--labels", "9"), "error", "between 1 and 3"),
    Case("import-labels-unknown-name", imp("mine", "class.csv", "--labels", "nosuch"), "error", "no such column"),
    Case("import-impute-feature-all-missing", imp("mine", "feature-all-missing.csv", "--impute", "mean"), "error",
         "no values at all"),
    Case("cv-csv-semisupervised", cv("{c}/class.csv", "--labeled", "4", "--folds", "3", algo="gf"), "ok",
         r"3 unit\(s\) run"),
    Case("cv-multilabel-csv", cv("{c}/multilabel.csv", "--labels", "2", "--folds", "3"), "ok", r"3 unit\(s\) run"),
]
# names
for name, pattern in [("", "empty"), ("../escape", "path separator|'\\.\\.'"), ("/abs/name", "path separator"),
                      ("a/b", "path separator"), ("x" * 300, "longer than 100"), (".hidden", "starting with a letter"),
                      ("sp ace", "contains ' '"), ("semi;colon", "contains ';'"), ("-dash", "starting with|No such option"),
                      ("nul\x01", "contains"), ("..", "'\\.\\.'"), ("tab\tname", "contains")]:
    CASES.append(Case(f"import-name-{name[:12]!r}", ("datasets", "import", name, "{c}/class.csv", "--repo", "{r}"),
                      "error", pattern))
CASES += [
    Case("import-name-catalogue", imp("emotions", "class.csv"), "error", "named dataset of malt's catalogue"),
    Case("import-name-catalogue-other-case", imp("EMOTIONS", "class.csv"), "error", "named dataset"),
    Case("import-name-ok-dots", imp("my.data_v2+x", "class.csv"), "ok", r"imported my\.data_v2\+x \(12 rows"),
    Case("import-existing-name", imp("base", "class.csv"), "error", "--force"),
]
# cv command lines
CASES += [
    Case("cv-dataset-empty", cv(""), "error", "--dataset is empty"),
    Case("cv-dataset-space", cv(" "), "error", "--dataset is empty"),
    Case("cv-dataset-folder", cv("{c}/a-folder.csv"), "error", "is a folder"),
    Case("cv-dataset-plain-folder", cv("{t}"), "error", "is a folder"),
    Case("cv-dataset-unknown", cv("no-such-dataset"), "error", "Unknown dataset"),
    Case("cv-dataset-nonexistent-file", cv("{c}/nope.csv"), "error", "not found"),
    Case("cv-dataset-case-insensitive", cv("SYNTHETIC-MULTILABEL", "--folds", "2"), "ok", r"2 unit\(s\) run"),
    Case("cv-imported-case-insensitive", cv("BASE", "--folds", "2", "--labeled", "4", algo="gf"), "ok",
         r"already stored"),  # the base repository holds this experiment: found under its exact name
    Case("cv-imported", cv("base", "--folds", "2", "--labeled", "4", algo="gf"), "ok", r"unit\(s\) run"),
    Case("cv-folds-0", cv("synthetic-multilabel", "--folds", "0"), "error", "folds"),
    Case("cv-folds-negative", cv("synthetic-multilabel", "--folds", "-3"), "error", "folds"),
    Case("cv-folds-1", cv("synthetic-multilabel", "--folds", "1"), "error", "folds"),
    Case("cv-folds-more-than-rows", cv("{c}/three-rows.csv", "--folds", "5", "--labeled", "2", algo="gf"), "error",
         "fold"),
    Case("cv-two-rows-default-folds", cv("{c}/two-rows.csv", "--labeled", "1", algo="gf"), "error", "fold"),
    Case("cv-folds-huge", cv("{c}/class.csv", "--folds", "50", "--labeled", "2", algo="gf"), "error", "fold"),
    Case("cv-folds-with-given-split", cv("emotions", "--folds", "3", "--task-param", "split=given"), "error",
         "split=given", data=True),
    Case("cv-split-given-without-split", cv("{c}/good.arff", "--labels", "{c}/good.xml", "--task-param",
                                            "split=given"), "error", "ships no train/test split"),
    Case("cv-labeled-too-many", cv("{c}/class.csv", "--labeled", "100", algo="gf"), "error", "labeled"),
    Case("cv-labeled-zero", cv("{c}/class.csv", "--labeled", "0", algo="gf"), "error", "labeled"),
    Case("cv-missing-too-big", cv("synthetic-multilabel", "--missing", "1.5"), "error", "missing"),
    Case("cv-missing-negative", cv("synthetic-multilabel", "--missing", "-0.1"), "error", "missing"),
    Case("cv-jobs-0", cv("synthetic-multilabel", "--jobs", "0"), "error", "--jobs"),
    Case("cv-unknown-algo", cv("synthetic-multilabel", algo="nosuch"), "error", "Unknown algorithm"),
    Case("cv-unknown-task", cv("synthetic-multilabel", "--task", "nosuch"), "error", "nosuch"),
    Case("cv-wrong-task", cv("synthetic-multilabel", "--task", "semisupervised"), "error", ""),
    Case("cv-bad-param", cv("synthetic-multilabel", "--param", "nosuch=1"), "error", "nosuch"),
    Case("cv-param-no-equals", cv("synthetic-multilabel", "--param", "sleep"), "error", "name=value"),
    Case("cv-param-bad-value", cv("synthetic-multilabel", "--param", "sleep=-1"), "error", "sleep"),
    Case("cv-param-not-number", cv("synthetic-multilabel", "--param", "sleep=abc"), "error", "sleep"),
    Case("cv-task-param-unknown", cv("synthetic-multilabel", "--task-param", "nosuch=1"), "error", "nosuch"),
    Case("cv-seed-text", cv("synthetic-multilabel", "--seed", "abc"), "error", "seed"),
    Case("cv-scheduler-garbage", cv("synthetic-multilabel", "--folds", "2", "--scheduler", "garbage"), "error",
         "scheduler"),
    Case("cv-repo-is-file", ("cv", "--algo", "test-counting", "--dataset", "synthetic-multilabel", "--repo",
                             "{c}/class.csv"), "error", "is a file"),
    Case("cv-repo-under-proc", ("cv", "--algo", "test-counting", "--dataset", "synthetic-multilabel", "--folds", "2",
                                "--repo", "/proc/malt-repo"), "error", ""),
    Case("cv-labels-on-named-dataset", cv("synthetic-multilabel", "--folds", "2", "--labels", "3"), "error", "labels"),
]
# other commands
CASES += [
    Case("show-catalogue-case", ("datasets", "show", "CAL500", "--repo", "{r}"), "ok", "MULAN", data=True),
    Case("show-source", ("datasets", "show", "synthetic-multilabel", "--repo", "{r}"), "ok", "malt synthetic"),
    Case("show-imported", ("datasets", "show", "base", "--repo", "{r}"), "ok", "class_names"),
    Case("show-unknown", ("datasets", "show", "nosuch", "--repo", "{r}"), "error", "Unknown dataset"),
    Case("show-empty", ("datasets", "show", "", "--repo", "{r}"), "error", "empty"),
    Case("fetch-mirror-not-url", ("datasets", "fetch", "emotions", "--mirror", "notaurl", "--repo", "{r}"), "error",
         "not an http"),
    Case("fetch-unknown", ("datasets", "fetch", "nosuch", "--repo", "{r}"), "error", "Unknown dataset"),
    Case("fetch-no-source", ("datasets", "fetch", "synthetic-multilabel", "--repo", "{r}"), "error",
         "no download source"),
    Case("fetch-mirror-unreachable", ("datasets", "fetch", "emotions", "--mirror", "http://127.0.0.1:9", "--repo",
                                      "{r}"), "error", "Could not download"),
    Case("plot-out-file", ("plot", "{r}", "--out", "{c}/class.csv"), "error", ""),
    Case("table-out-dir", ("table", "{r}", "--out", "{t}"), "error", ""),
    Case("report-out-file", ("report", "{r}", "--out", "{c}/class.csv"), "error", ""),
    Case("results-not-a-repo", ("results", "--repo", "{t}"), "error", "No repository|not a malt"),
    Case("show-unknown-experiment", ("show", "nosuch", "--repo", "{r}"), "error", ""),
    Case("rerun-unknown-experiment", ("rerun", "--experiment", "nosuch", "--repo", "{r}"), "error", ""),
]

# ---- issue 35: all-NaN label columns, malformed MULAN XML, malformed experiment files --------------------
NAN_LABELS = {  # file: (labels, error pattern)
    "label-col-all-unknown.arff": ("2", "l2.*(no known value|every value|unknown)"),
    "label-col-all-unknown-sparse.arff": ("2", "l2.*(no known value|every value|unknown)"),
    "label-col-all-nan.csv": ("2", "l2.*(no known value|every value|unknown)"),
    "label-col-all-empty.csv": ("2", "l2.*(no known value|every value|unknown)"),
    "label-col-all-question.csv": ("2", "l1.*(no known value|every value|unknown)"),
    "class-all-nan.csv": (None, "class column 'label' is missing"),
}
for file, (labels, pattern) in NAN_LABELS.items():
    extra = ("--labels", labels) if labels else ()
    CASES.append(Case(f"import-{file}", imp("mine", file, *extra), "error", pattern))
    CASES.append(Case(f"cv-{file}", cv(f"{{c}}/{file}", *extra, algo="gf" if labels is None else "test-counting"),
                      "error", pattern))
XML_MORE = {  # xml file (with good.arff): expected rows, or None and the error pattern
    "label-no-name.xml": (None, "no name attribute"), "label-empty-name.xml": (None, "label '' named in the XML"),
    "wrong-root.xml": (None, "no <label"), "empty.xml": (None, "XML error"), "truncated.xml": (None, "XML error"),
    "hierarchical.xml": (12, ""), "hierarchical-dup.xml": (None, "listed twice"), "internal-entity.xml": (12, ""),
    "external-entity.xml": (None, "XML error"), "billion-laughs.xml": (None, "XML error"),
    "deep-nesting.xml": (12, ""), "every-attribute-a-label.xml": (None, "no features"),
    "feature-as-label.xml": (None, "f1"), "latin1-label.xml": (None, "'l\u00e9' named in the XML"),
    "utf16.xml": (12, ""), "nul-bytes.xml": (None, "XML error"), "one-label.xml": (12, ""),
    "unclosed-attribute.xml": (None, "XML error"), "two-roots.xml": (None, "XML error"),
}
for xml_file, (n, pattern) in XML_MORE.items():
    args = ("--labels", f"{{c}}/{xml_file}")
    if n:
        CASES.append(Case(f"import-good.arff-{xml_file}", imp("mine", "good.arff", *args), "ok",
                          rf"imported mine \({n} rows"))
        CASES.append(Case(f"cv-good.arff-{xml_file}", cv("{c}/good.arff", *args, "--folds", "3"), "ok",
                          r"3 unit\(s\) run"))
    else:
        CASES.append(Case(f"import-good.arff-{xml_file}", imp("mine", "good.arff", *args), "error", pattern))
        CASES.append(Case(f"cv-good.arff-{xml_file}", cv("{c}/good.arff", *args), "error", pattern))
TOML = {  # experiment file: error pattern ('' with expect ok: the runs' output)
    "empty.toml": "no \\[\\[experiment\\]\\] block", "syntax-error.toml": "not valid TOML",
    "duplicate-key.toml": "not valid TOML", "not-utf8.toml": "not valid TOML",
    "experiment-table.toml": "no \\[\\[experiment\\]\\] block", "experiment-number.toml": "no \\[\\[experiment",
    "experiment-list-of-numbers.toml": "block 1 is not a table", "unknown-key.toml": "unknown key 'fold'",
    "no-algorithms.toml": "needs datasets and algorithms", "empty-datasets.toml": "needs datasets and algorithms",
    "datasets-number.toml": "datasets must be", "datasets-nested.toml": "datasets must be",
    "algorithms-number.toml": "algorithms must be", "algorithms-table.toml": "algorithms must be",
    "options-number.toml": "options must be a table", "options-unknown.toml": "no option 'nosuch'",
    "options-empty-sweep.toml": "sweeps no value", "options-bad-value.toml": "missing",
    "params-list.toml": "params must be a table", "params-unknown.toml": "nosuch",
    "params-nested-table.toml": "C", "params-empty-sweep.toml": "sweeps no value",
    "task-number.toml": "task must be", "task-unknown.toml": "nosuch", "labels-number.toml": "labels must be",
    "repo-empty.toml": "repo must be", "repo-number.toml": "repo must be", "unknown-dataset.toml": "Unknown dataset",
    "unknown-algorithm.toml": "Unknown algorithm", "second-block-bad.toml": "Unknown algorithm",
    "random-bytes.toml": "not valid TOML", "toml-date.toml": "datasets must be",
    "nonexistent.toml": "not found", "a-folder.csv": "is a folder",
}
for file, pattern in TOML.items():
    CASES.append(Case(f"run-{file}", ("run", f"{{c}}/{file}", "--repo", "{r}"), "error", pattern))
CASES.append(Case("run-good.toml", ("run", "{c}/good.toml", "--repo", "{r}", "--quiet"), "ok", r"2 unit\(s\) run"))

# ---- running a case ------------------------------------------------------------------------------------
def tree_state(folder: Path) -> dict[str, str]:
    """Every file (sha256), folder and link under folder: what 'byte-identical' compares. The lock
    file counts by its existence only: every writer records its pid in it by design."""
    if not folder.exists():
        return {}
    state = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if rel == ".lock":
            state[rel] = "lock"
        elif path.is_symlink():
            state[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            state[rel] = "dir"
        else:
            state[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return state


@dataclass
class Outcome:
    kind: str  # 'clean error', 'legitimate success', 'wrong success', 'refused valid input', 'wrong error',
    #            'traceback', 'hang', 'repository changed'
    detail: str


def classify(case: Case, code: int | None, out: str, err: str, before: dict, after: dict) -> Outcome:
    text = f"exit {code}\nstdout: {out[-600:]}\nstderr: {err[-1500:]}"
    if code is None:
        return Outcome("hang", text)
    if "Traceback" in err or "Aborted!" in err or code not in (0, 2):
        return Outcome("traceback", text)
    if code == 0:
        if case.expect == "error":
            return Outcome("wrong success", text)
        if case.match and not re.search(case.match, out + err):
            return Outcome("wrong success", f"output lacks /{case.match}/\n{text}")
        return Outcome("legitimate success", text)
    lines = error_lines(err)
    if lines is None:
        return Outcome("traceback", f"not one error line\n{text}")
    if before != after:
        changed = sorted(set(before.items()) ^ set(after.items()))
        return Outcome("repository changed", f"{changed[:5]}\n{text}")
    if case.expect == "ok":
        return Outcome("refused valid input", text)
    if case.match and not re.search(case.match, lines[0]):
        return Outcome("wrong error", f"error lacks /{case.match}/\n{text}")
    return Outcome("clean error", text)


def error_lines(err: str) -> list[str] | None:
    """The error line of a clean failure: malt's one ``error: ...`` line, or click's usage error
    (``Usage: ...``, ``Try ...``, ``Error: ...``) for a malformed command line; None otherwise."""
    lines = [line for line in err.splitlines() if line.strip()]
    if len(lines) == 1 and lines[0].startswith(("error: ", "Error: ")):
        return lines
    if len(lines) == 3 and lines[0].startswith("Usage: ") and lines[1].startswith("Try ") and \
            lines[2].startswith("Error: "):
        return lines[2:]
    return None


def build_base(folder: Path) -> Path:
    """A repository holding one imported dataset ('base') and one finished experiment on it."""
    repo = folder / "base-repo"
    for args in (["datasets", "import", "base", str(CORPUS / "class.csv")],
                 ["cv", "--algo", "gf", "--dataset", "base", "--labeled", "4", "--folds", "2", "--quiet"]):
        result = CliRunner().invoke(_main(), [*args, "--repo", str(repo)])
        assert result.exit_code == 0, result.output
    return repo


def run_case(case: Case, base: Path, work: Path) -> Outcome:
    repo, scratch = work / "repo", work / "scratch"
    shutil.copytree(base, repo, symlinks=True)
    scratch.mkdir()
    args = [a.replace("{c}", str(CORPUS)).replace("{r}", str(repo)).replace("{t}", str(scratch)) for a in case.args]
    before = tree_state(repo)
    result = CliRunner().invoke(_main(), args)
    err = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        err += f"\nTraceback: {result.exception!r}"
    return classify(case, result.exit_code, result.stdout, err, before, tree_state(repo))


def run_all(cases: list[Case]) -> dict[str, Outcome]:
    with tempfile.TemporaryDirectory(prefix="malt-fuzz-") as tmp:
        base = build_base(Path(tmp))
        out = {}
        for k, case in enumerate(cases):
            folder = Path(tmp) / f"case{k}"
            folder.mkdir()
            out[case.id] = run_case(case, base, folder)
            shutil.rmtree(folder)
        return out


def _data_available() -> bool:
    root = os.environ.get("MALT_DATA")
    return bool(root) and (Path(root) / "multilabel/CAL500/cal500.arff").exists()


@pytest.fixture(scope="module")
def outcomes():
    if not CORPUS.joinpath("good.arff").exists():
        pytest.fail("tests/corpus is missing; run python tests/corpus/make_corpus.py")
    return run_all([c for c in CASES if not c.data or _data_available()])


def _param(case: Case):
    return pytest.param(case, id=case.id)


def test_corpus_is_large_enough():
    assert len(CASES) >= 200 and len({c.id for c in CASES}) == len(CASES)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_case(outcomes, case):
    if case.data and not _data_available():
        from tests.conftest import require_data

        require_data("multilabel/CAL500/cal500.arff")
    outcome = outcomes[case.id]
    wanted = "clean error" if case.expect == "error" else "legitimate success"
    assert outcome.kind == wanted, f"{outcome.kind}:\n{outcome.detail}"


# ---- property-based fuzzing (in-process, same assertions) -------------------------------------------------
def _main():
    from malt.cli import main

    return main


def check_invocation(result, repo_before: dict, repo: Path) -> None:
    """exit 0, or exit 2 with exactly one 'error:' line, no traceback, and an untouched repository."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2), f"exit {result.exit_code}: {result.output}"
    if result.exit_code == 2:
        assert error_lines(result.stderr) is not None, result.stderr
        assert tree_state(repo) == repo_before


@pytest.fixture(scope="module")
def small_repo(tmp_path_factory):
    """A repository with one imported dataset, made in-process (copied before every example)."""
    repo = tmp_path_factory.mktemp("fuzz") / "repo"
    result = CliRunner().invoke(_main(), ["datasets", "import", "base", str(CORPUS / "class.csv"), "--repo",
                                          str(repo)])
    assert result.exit_code == 0, result.output
    return repo


@contextlib.contextmanager
def _fresh(small_repo: Path):
    """A copy of the small repository and its state, removed afterwards even when the example fails
    (hypothesis replays failing examples many times)."""
    folder = Path(tempfile.mkdtemp(prefix="malt-fuzz-"))
    try:
        shutil.copytree(small_repo, folder / "repo")
        yield folder / "repo", tree_state(folder / "repo")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


cell = st.one_of(st.floats(allow_nan=True, allow_infinity=True).map(repr), st.integers(-5, 5).map(str),
                 st.sampled_from(["?", "", "a", "'x,y'", "\"q\"", "{", "}", "nan", "inf", "1e999", "yes", "no"]))
row = st.lists(cell, min_size=0, max_size=5).map(",".join)
header_line = st.sampled_from(["@relation r", "@attribute a numeric", "@attribute b {0,1}", "@attribute c {x,y}",
                               "@attribute 'd e' real", "@attribute f string", "@data", "% note",
                               "@ATTRIBUTE g integer", "@attribute 'h\\'i' {0,1}", "{0 1, 2 0}"])
arff_text = st.lists(st.one_of(header_line, row), min_size=0, max_size=12).map("\n".join)
csv_text = st.lists(row, min_size=0, max_size=8).map("\n".join)
binary_prefix = st.sampled_from([b"", b"\xef\xbb\xbf", b"\x1f\x8b", b"\x00"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=arff_text, prefix=binary_prefix, labels=st.sampled_from(["1", "2", "0", "9"]),
       command=st.sampled_from(["import", "cv"]))
def test_fuzzed_arff_files(small_repo, text, prefix, labels, command):
    with _fresh(small_repo) as (repo, before):
        path = repo.parent / "data.arff"
        path.write_bytes(prefix + text.encode())
        args = (["datasets", "import", "fuzzed", str(path), "--labels", labels] if command == "import" else
                ["cv", "--algo", "mllr", "--dataset", str(path), "--labels", labels, "--folds", "2", "--quiet"])
        result = CliRunner().invoke(_main(), [*args, "--repo", str(repo)])
        check_invocation(result, before, repo)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=csv_text, prefix=binary_prefix, labels=st.sampled_from(["last", "first", "1", "2", "0", "9", "nosuch"]),
       impute=st.sampled_from(["none", "mean"]))
def test_fuzzed_csv_imports(small_repo, text, prefix, labels, impute):
    with _fresh(small_repo) as (repo, before):
        path = repo.parent / "data.csv"
        path.write_bytes(prefix + text.encode())
        result = CliRunner().invoke(_main(), ["datasets", "import", "fuzzed", str(path), "--labels", labels,
                                              "--impute", impute, "--repo", str(repo)])
        check_invocation(result, before, repo)


word = st.text(alphabet=string.ascii_lowercase + "-=.,;0123456789", min_size=0, max_size=12)
option = st.sampled_from(["--algo", "--dataset", "--task", "--missing", "--labeled", "--folds", "--seed",
                          "--param", "--task-param", "--jobs", "--discard", "--labels"])
value = st.sampled_from(["mllr", "column-mean", "gf", "synthetic-multilabel", "SYNTHETIC-MULTILABEL", "base", "BASE",
                         "missing", "multilabel", "semisupervised", "C=2", "C=-1", "missing=0.5", "0.3", "2", "-1",
                         "0", "split=given", "folds=2", "labeled=4"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.lists(st.one_of(option, word, value), max_size=9))
def test_fuzzed_cv_arguments(small_repo, args):
    with _fresh(small_repo) as (repo, before):
        result = CliRunner().invoke(_main(), ["cv", "--repo", str(repo), "--quiet", "--folds", "2", *args])
        check_invocation(result, before, repo)


# ---- the tally ---------------------------------------------------------------------------------------------
def tally(results: dict[str, Outcome]) -> Counter:
    return Counter(outcome.kind for outcome in results.values())


if __name__ == "__main__":
    import sys

    pattern = sys.argv[sys.argv.index("-k") + 1] if "-k" in sys.argv else ""
    chosen = [c for c in CASES if (not c.data or _data_available()) and re.search(pattern, c.id)]
    results = run_all(chosen)
    for case in chosen:
        outcome = results[case.id]
        wanted = "clean error" if case.expect == "error" else "legitimate success"
        flag = "ok " if outcome.kind == wanted else "BAD"
        print(f"{flag} {outcome.kind:20s} {case.id}")
        if outcome.kind != wanted and "-v" in sys.argv:
            print("    " + outcome.detail.replace("\n", "\n    "))
    print(f"\n{len(chosen)} cases: " + ", ".join(f"{k} {v}" for k, v in sorted(tally(results).items())))
