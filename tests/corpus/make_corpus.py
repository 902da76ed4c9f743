"""Writes the malformed and degenerate input files of tests/test_fuzz.py into this folder.

The files are committed; run `python tests/corpus/make_corpus.py` after changing this script. Every
file is small and deterministic (random bytes from a fixed seed)."""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
rng = np.random.default_rng(22)


def rows(n: int, labels: int = 2, d: int = 3) -> list[list[str]]:
    """n rows of d features and `labels` 0/1 labels, every label positive and negative somewhere."""
    out = []
    for i in range(n):
        features = [f"{v:.3f}" for v in rng.standard_normal(d)]
        out.append(features + [str((i + k) % 2) for k in range(labels)])
    return out


def arff(attrs: list[str], data: list[str], relation: str = "r") -> str:
    return f"@relation {relation}\n" + "".join(f"@attribute {a}\n" for a in attrs) + "@data\n" + "".join(
        f"{r}\n" for r in data)


NUM3 = ["f1 numeric", "f2 numeric", "f3 numeric"]
L2 = ["l1 {0,1}", "l2 {0,1}"]
GOOD = [",".join(r) for r in rows(12)]
XML = ('<?xml version="1.0" encoding="utf-8"?>\n<labels xmlns="http://mulan.sourceforge.net/labels">\n'
       '{}</labels>\n')


def xml(*names: str) -> str:
    return XML.format("".join(f'<label name="{n}"></label>\n' for n in names))


FILES: dict[str, str | bytes] = {
    # ---- ARFF that must load --------------------------------------------------------------------
    "good.arff": arff(NUM3 + L2, GOOD),
    "good.xml": xml("l1", "l2"),
    "birds.arff": arff(["'f 1' numeric", "\"f2\" REAL", "f3 integer", "'Swainson\\'s Thrush' {0,1}",
                        "'Hermit \"Thrush\"' {0,1}"], GOOD, "'birds \\'2013\\''"),
    "birds.xml": xml("Swainson's Thrush", "Hermit &quot;Thrush&quot;"),
    "sparse.arff": arff(NUM3 + L2, ["{" + ",".join(f"{j} {v}" for j, v in enumerate(r.split(",")) if float(v))
                                    + "}" for r in GOOD]),
    "crlf-bom.arff": b"\xef\xbb\xbf" + arff(NUM3 + L2, GOOD).replace("\n", "\r\n").encode(),
    "gzipped.arff.gz": gzip.compress(arff(NUM3 + L2, GOOD).encode(), mtime=0),
    "comments.arff": "% header comment\n" + arff(NUM3 + L2, [g + " % trailing" for g in GOOD]),
    "nominal-features.arff": arff(["c {red,green,blue}", "m {YES,NO}", "f numeric"] + L2,
                                  [f"{['red', 'green', 'blue'][i % 3]},{['YES', 'NO'][i % 2]},{i},{i % 2},"
                                   f"{(i + 1) % 2}" for i in range(12)]),
    "yes-no-labels.arff": arff(NUM3 + ["l1 {no,yes}", "l2 {false,true}"],
                               [",".join(r[:3] + [["no", "yes"][int(r[3])], ["false", "true"][int(r[4])]])
                                for r in rows(12)]),
    "unknown-labels.arff": arff(NUM3 + L2, [g.rsplit(",", 1)[0] + (",?" if i % 3 == 0 else "," + g[-1])
                                            for i, g in enumerate(GOOD)]),
    "date-feature.arff": arff(["d date 'yyyy-MM-dd'", "f numeric"] + L2,
                              [f"2001-01-{i + 1:02d},{i},{i % 2},{(i + 1) % 2}" for i in range(12)]),
    # ---- ARFF that must be refused --------------------------------------------------------------
    "label-2.arff": arff(NUM3 + ["l1 numeric", "l2 numeric"], GOOD[:-1] + [GOOD[-1][:-1] + "2"]),
    "label-minus1.arff": arff(NUM3 + ["l1 numeric", "l2 numeric"], GOOD[:-1] + [GOOD[-1][:-1] + "-1"]),
    "label-half.arff": arff(NUM3 + ["l1 numeric", "l2 numeric"], GOOD[:-1] + [GOOD[-1][:-1] + "0.5"]),
    "label-nominal-7.arff": arff(NUM3 + L2, GOOD[:-1] + [GOOD[-1][:-1] + "7"]),
    "label-text-3.arff": arff(NUM3 + ["l1 {0,1}", "l2 {a,b,c}"],
                              [g[:-1] + "abc"[i % 3] for i, g in enumerate(GOOD)]),
    "label-text-2.arff": arff(NUM3 + ["l1 {0,1}", "l2 {a,b}"], [g[:-1] + "ab"[i % 2] for i, g in enumerate(GOOD)]),
    "labels-all-unknown.arff": arff(NUM3 + L2, [g[: g.rindex(",", 0, g.rindex(","))] + ",?,?" for g in GOOD]),
    "labels-all-zero.arff": arff(NUM3 + L2, [g[: g.rindex(",", 0, g.rindex(","))] + ",0,0" for g in GOOD]),
    "label-never-positive.arff": arff(NUM3 + L2, [g[:-1] + "0" for g in GOOD]),
    "label-always-positive.arff": arff(NUM3 + L2, [g[:-1] + "1" for g in GOOD]),
    "one-row.arff": arff(NUM3 + L2, GOOD[:1]),
    "no-data.arff": arff(NUM3 + L2, []),
    "no-data-section.arff": "@relation r\n@attribute a numeric\n",
    "header-only-attrs.arff": "@relation r\n@data\n1,2\n",
    "wrong-count.arff": arff(NUM3 + L2, GOOD[:5] + ["1,2,3"] + GOOD[5:]),
    "bad-number.arff": arff(NUM3 + L2, GOOD[:5] + ["1,abc,3,0,1"] + GOOD[5:]),
    "underscore-number.arff": arff(NUM3 + L2, GOOD[:5] + ["1,1_000,3,0,1"] + GOOD[5:]),
    "unterminated-quote.arff": arff(["'f1 numeric"] + NUM3[1:] + L2, GOOD),
    "duplicate-attribute.arff": arff(["f1 numeric", "f1 numeric", "f3 numeric"] + L2, GOOD),
    "relational.arff": arff(["bag relational", "a numeric"] + L2, ["1,0,1"]),
    "unknown-type.arff": arff(["f1 complex"] + NUM3[1:] + L2, GOOD),
    "string-feature.arff": arff(["s string", "f2 numeric", "f3 numeric"] + L2,
                                ["'word'," + g.split(",", 1)[1] for g in GOOD]),
    "sparse-out-of-range.arff": arff(NUM3 + L2, ["{0 1,9 1}"] + GOOD),
    "sparse-duplicate-index.arff": arff(NUM3 + L2, ["{0 1,0 2,3 1}"] + GOOD),
    "sparse-unclosed.arff": arff(NUM3 + L2, ["{0 1,3 1"] + GOOD),
    "instance-weight.arff": arff(NUM3 + L2, [g + ",{2}" for g in GOOD]),
    "features-all-missing.arff": arff(NUM3 + L2, ["?,?,?," + g.split(",", 3)[3] for g in GOOD]),
    "feature-col-missing.arff": arff(NUM3 + L2, [g.split(",", 1)[0] + ",?," + g.split(",", 2)[2] for g in GOOD]),
    "feature-nan-some.arff": arff(NUM3 + L2, ["?" + g[g.index(","):] if i == 3 else g for i, g in enumerate(GOOD)]),
    "inf-feature.arff": arff(NUM3 + L2, ["1e999" + g[g.index(","):] if i == 3 else g for i, g in enumerate(GOOD)]),
    "all-labels.arff": arff(["l1 {0,1}", "l2 {0,1}"], [f"{i % 2},{(i + 1) % 2}" for i in range(12)]),
    "not-gzip.arff.gz": arff(NUM3 + L2, GOOD),
    "truncated.arff.gz": (lambda z: z[: len(z) // 2])(gzip.compress(arff(NUM3 + L2, GOOD * 20).encode(), mtime=0)),
    "random-bytes.arff": rng.bytes(4096),
    "empty.arff": "",
    "csv-named-arff.arff": "a,b,c\n1,2,3\n",
    "dup-labels.xml": xml("l1", "l1"),
    "missing-label.xml": xml("l1", "nosuch"),
    "escaped-label-mismatch.xml": xml("Swainson\\'s Thrush", "Hermit &quot;Thrush&quot;"),
    "broken.xml": "<labels><label name='l1'>",
    "no-labels.xml": XML.format(""),
    "random-bytes.xml": rng.bytes(512),
    "mismatch-train.arff": arff(NUM3 + L2, GOOD[:6]),
    "mismatch-test.arff": arff(["g1 numeric", "f2 numeric", "f3 numeric"] + L2, GOOD[6:]),
    # ---- CSV that must load ---------------------------------------------------------------------
    "class.csv": "a,b,c,label\n" + "".join(f"{r[0]},{r[1]},{r[2]},{'xyz'[i % 3]}\n" for i, r in enumerate(rows(12))),
    "class-noheader.csv": "".join(f"{r[0]},{r[1]},{r[2]},{i % 3}\n" for i, r in enumerate(rows(12))),
    "multilabel.csv": "a,b,c,l1,l2\n" + "".join(",".join(r) + "\n" for r in rows(12)),
    "semicolon.csv": "a;b;c;label\n" + "".join(f"{r[0]};{r[1]};{r[2]};{i % 2}\n" for i, r in enumerate(rows(12))),
    "tabs.tsv": "a\tb\tc\tlabel\n" + "".join(f"{r[0]}\t{r[1]}\t{r[2]}\t{i % 2}\n" for i, r in enumerate(rows(12))),
    "whitespace.txt": "".join(f"{r[0]}  {r[1]} {r[2]}   {i % 2}\n" for i, r in enumerate(rows(12))),
    "quoted.csv": 'a,"b, quoted",label\n' + "".join(f'"{r[0]}",{r[1]},"{"yes" if i % 2 else "no"}"\n'
                                                    for i, r in enumerate(rows(12))),
    "crlf-bom.csv": b"\xef\xbb\xbf" + ("a,b,label\r\n" + "".join(f"{r[0]},{r[1]},{i % 2}\r\n"
                                                                  for i, r in enumerate(rows(12)))).encode(),
    "latin1.csv": ("caf\xe9,b,label\n" + "".join(f"{r[0]},{r[1]},{i % 2}\n" for i, r in enumerate(rows(12))))
    .encode("latin-1"),
    "gzipped.csv.gz": gzip.compress(("a,b,label\n" + "".join(f"{r[0]},{r[1]},{i % 2}\n"
                                                            for i, r in enumerate(rows(12)))).encode(), mtime=0),
    "comments.csv": "# exported\na,b,label\n" + "".join(f"{r[0]},{r[1]},{i % 2}\n% note\n"
                                                        for i, r in enumerate(rows(12))),
    "colour.csv": "x,colour,label\n" + "".join(f"{i},{['red', 'green', 'blue'][i % 3]},{i % 2}\n" for i in range(12)),
    "missing-values.csv": "a,b,label\n" + "".join(f"{'?' if i == 2 else i},{'' if i == 5 else i * 2},{i % 2}\n"
                                                  for i in range(12)),
    "bool-labels.csv": "a,b,l1,l2\n" + "".join(f"{i},{i * i},{'true' if i % 2 else 'false'},"
                                               f"{'yes' if i % 3 else 'no'}\n" for i in range(12)),
    "two-rows.csv": "a,b,label\n1,2,0\n3,4,1\n",
    "three-rows.csv": "a,b,label\n1,2,0\n3,4,1\n5,6,0\n",
    "four-col.csv": "a,b,c,d\n" + "".join(f"{i},{i + 1},{i % 2},{(i + 1) % 2}\n" for i in range(12)),
    # ---- CSV that must be refused ---------------------------------------------------------------
    "header-only.csv": "a,b,c,label\n",
    "empty.csv": "",
    "blank-lines.csv": "\n\n   \n",
    "comments-only.csv": "# nothing\n% here\n",
    "one-row.csv": "a,b,label\n1,2,0\n",
    "one-column.csv": "a\n1\n2\n3\n",
    "ragged-short.csv": "a,b,label\n1,2,0\n3,4\n5,6,1\n",
    "ragged-long.csv": "a,b,label\n1,2,0\n3,4,1,9\n5,6,1\n",
    "mixed-types.csv": "a,b,label\n1,2,0\n3,abc,1\n5,6,1\n7,8,0\n",
    "identifier.csv": "id,b,label\n" + "".join(f"user{i},{i},{i % 2}\n" for i in range(20)),
    "text-label-012.csv": "a,b,l1,l2\n" + "".join(f"{i},{i},{i % 2},{['zero', 'one', 'two'][i % 3]}\n"
                                                  for i in range(12)),
    "label-2.csv": "a,b,l1,l2\n" + "".join(f"{i},{i},{i % 2},{i % 3}\n" for i in range(12)),
    "label-half.csv": "a,b,l1,l2\n" + "".join(f"{i},{i},{i % 2},{(i % 2) / 2}\n" for i in range(12)),
    "class-float.csv": "a,b,label\n" + "".join(f"{i},{i},{i / 7:.3f}\n" for i in range(12)),
    "single-class.csv": "a,b,label\n" + "".join(f"{i},{i},same\n" for i in range(12)),
    "class-missing.csv": "a,b,label\n" + "".join(f"{i},{i},{'' if i == 4 else i % 2}\n" for i in range(12)),
    "labels-all-zero.csv": "a,b,l1,l2\n" + "".join(f"{i},{i},0,0\n" for i in range(12)),
    "labels-all-unknown.csv": "a,b,l1,l2\n" + "".join(f"{i},{i},?,?\n" for i in range(12)),
    "label-never-positive.csv": "a,b,l1,l2\n" + "".join(f"{i},{i},{i % 2},0\n" for i in range(12)),
    "feature-all-missing.csv": "a,b,label\n" + "".join(f"{i},?,{i % 2}\n" for i in range(12)),
    "nan-feature.csv": "a,b,label\n" + "".join(f"{i},{'?' if i == 3 else i},{i % 2}\n" for i in range(12)),
    "inf-feature.csv": "a,b,label\n" + "".join(f"{i},{'inf' if i == 3 else i},{i % 2}\n" for i in range(12)),
    "duplicate-header.csv": "a,a,label\n" + "".join(f"{i},{i},{i % 2}\n" for i in range(12)),
    "not-gzip.csv.gz": "a,b,label\n1,2,0\n3,4,1\n",
    "truncated.csv.gz": (lambda z: z[: len(z) // 2])(gzip.compress(("a,b,label\n" + "".join(
        f"{i},{i * i},{i % 2}\n" for i in range(200))).encode(), mtime=0)),
    "random-bytes.csv": rng.bytes(4096),
    "binary-nul.csv": b"a,b,label\n1,2,0\x00\x00\x00\n",
    "unclosed-quote.csv": 'a,b,label\n"1,2,0\n3,4,1\n',
}

# ---- issue 35: all-NaN label columns, malformed MULAN XML, malformed experiment files (TOML) ------------
_LABEL_FREE = [g[: g.rindex(",")] for g in GOOD]  # three features and l1
FILES.update({
    "label-col-all-unknown.arff": arff(NUM3 + L2, [f + ",?" for f in _LABEL_FREE]),
    "label-col-all-unknown-sparse.arff": arff(NUM3 + L2, ["{" + ",".join(f"{j} {v}" for j, v in
                                                                           enumerate(f.split(","))) + ",4 ?}"
                                                          for f in _LABEL_FREE]),
    "label-col-all-nan.csv": "a,b,l1,l2\n" + "".join(f"{i},{i * i},{i % 2},nan\n" for i in range(12)),
    "label-col-all-empty.csv": "a,b,l1,l2\n" + "".join(f"{i},{i * i},{i % 2},\n" for i in range(12)),
    "label-col-all-question.csv": "a,b,l1,l2\n" + "".join(f"{i},{i * i},?,{i % 2}\n" for i in range(12)),
    "class-all-nan.csv": "a,b,label\n" + "".join(f"{i},{i * i},nan\n" for i in range(12)),
    # MULAN label files
    "label-no-name.xml": XML.format('<label name="l1"></label>\n<label></label>\n'),
    "label-empty-name.xml": xml("l1", ""),
    "wrong-root.xml": '<?xml version="1.0"?>\n<attributes><attribute name="l1"/></attributes>\n',
    "empty.xml": "",
    "truncated.xml": xml("l1", "l2")[:60],
    "hierarchical.xml": XML.format('<label name="l1"><label name="l2"></label></label>\n'),
    "hierarchical-dup.xml": XML.format('<label name="l1"><label name="l1"></label></label>\n'),
    "internal-entity.xml": ('<?xml version="1.0"?>\n<!DOCTYPE labels [<!ENTITY b "l2">]>\n'
                            '<labels><label name="l1"/><label name="&b;"/></labels>\n'),
    "external-entity.xml": ('<?xml version="1.0"?>\n<!DOCTYPE labels [<!ENTITY x SYSTEM "file:///etc/hostname">]>\n'
                            '<labels><label name="l1"/><label name="&x;"/></labels>\n'),
    "billion-laughs.xml": ('<?xml version="1.0"?>\n<!DOCTYPE labels [<!ENTITY a0 "lol">'
                           + "".join(f'<!ENTITY a{k} "{("&a" + str(k - 1) + ";") * 10}">' for k in range(1, 10))
                           + ']>\n<labels><label name="&a9;"/></labels>\n'),
    "deep-nesting.xml": '<?xml version="1.0"?>\n<labels>' + "<label name=\"x\">" * 0 + "<g>" * 5000
                        + '<label name="l1"/>' + "</g>" * 5000 + "</labels>\n",
    "every-attribute-a-label.xml": xml("f1", "f2", "f3", "l1", "l2"),
    "feature-as-label.xml": xml("f1", "l2"),
    "latin1-label.xml": ('<?xml version="1.0" encoding="iso-8859-1"?>\n<labels><label name="l\xe9"/></labels>\n'
                         ).encode("latin-1"),
    "utf16.xml": xml("l1", "l2").replace("utf-8", "utf-16").encode("utf-16"),
    "nul-bytes.xml": xml("l1", "l2").encode()[:50] + b"\x00\x00" + xml("l1", "l2").encode()[50:],
    "one-label.xml": xml("l1"),
    "unclosed-attribute.xml": XML.format('<label name="l1></label>\n'),
    "two-roots.xml": xml("l1") + xml("l2"),
    # experiment files (malt run)
    "good.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["test-counting"]\n'
                 'task = "missing"\noptions = { folds = 2 }\n',
    "empty.toml": "",
    "syntax-error.toml": "[[experiment]\ndatasets = [\n",
    "duplicate-key.toml": '[[experiment]]\ndatasets = ["a"]\ndatasets = ["b"]\nalgorithms = ["mllr"]\n',
    "not-utf8.toml": b'[[experiment]]\ndatasets = ["caf\xe9"]\n',
    "experiment-table.toml": '[experiment]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n',
    "experiment-number.toml": "experiment = 3\n",
    "experiment-list-of-numbers.toml": "experiment = [1, 2]\n",
    "unknown-key.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\nfold = 2\n',
    "no-algorithms.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\n',
    "empty-datasets.toml": '[[experiment]]\ndatasets = []\nalgorithms = ["mllr"]\n',
    "datasets-number.toml": '[[experiment]]\ndatasets = 3\nalgorithms = ["mllr"]\n',
    "datasets-nested.toml": '[[experiment]]\ndatasets = [["synthetic-multilabel"]]\nalgorithms = ["mllr"]\n',
    "algorithms-number.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = 7\n',
    "algorithms-table.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = { a = 1 }\n',
    "options-number.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                           "options = 3\n",
    "options-unknown.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                            "options = { nosuch = 1 }\n",
    "options-empty-sweep.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                                "options = { missing = [] }\n",
    "options-bad-value.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                              "options = { missing = 1.5 }\n",
    "params-list.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                        "params = [1, 2]\n",
    "params-unknown.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                           "params = { nosuch = 1 }\n",
    "params-nested-table.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                                "params = { C = { x = 1 } }\n",
    "params-empty-sweep.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                               "params = { C = [] }\n",
    "task-number.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\ntask = 5\n',
    "task-unknown.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                         'task = "nosuch"\n',
    "labels-number.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\nlabels = 2\n',
    "repo-empty.toml": 'repo = ""\n[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n',
    "repo-number.toml": 'repo = 3\n[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n',
    "unknown-dataset.toml": '[[experiment]]\ndatasets = ["no-such-dataset"]\nalgorithms = ["mllr"]\n',
    "unknown-algorithm.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["nosuch"]\n',
    "second-block-bad.toml": '[[experiment]]\ndatasets = ["synthetic-multilabel"]\nalgorithms = ["mllr"]\n'
                             'options = { folds = 2 }\n[[experiment]]\ndatasets = ["synthetic-multilabel"]\n'
                             'algorithms = ["nosuch"]\n',
    "random-bytes.toml": np.random.default_rng(35).bytes(256),
    "toml-date.toml": '[[experiment]]\ndatasets = [1979-05-27]\nalgorithms = ["mllr"]\n',
})


def main() -> None:
    for name, content in FILES.items():
        (HERE / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    (HERE / "a-folder.csv").mkdir(exist_ok=True)
    (HERE / "a-folder.csv" / "README").write_text("a folder named like a CSV file\n")


if __name__ == "__main__":
    main()
