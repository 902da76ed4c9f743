"""`malt report`: one markdown page and one self-contained HTML page with every table and figure.

For each experiment family the page shows the task options, the provenance of its results (algorithm
settings and versions, dataset hash, task version, hosts, seeds, fit time), its tables, its figures
and, where an experiment reproduces a published table (``malt/results/published/*.csv``), the published
numbers beside ours. Across datasets it shows critical-difference diagrams and average-rank tables.

``report.html`` needs no server and no network: CSS and JavaScript are inline, figures are embedded
as base64 PNG. A navigation pane groups the sections by task and dataset; every table sorts by a
click on a column header and filters its rows by text.
"""
from __future__ import annotations

import functools
import html
import os
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from malt.results.describe import metric_info, metric_label, planned_folds, provenance_columns, sessions
from malt.results.outputs import output_dir, write
from malt.results.formatting import format_mean_std, format_value
from malt.results.plotting import families, metric_scale, option_matches, plot_all
from malt.results.tables import all_tables, dataset_tables, rank_tables

PUBLISHED_COLUMNS = ["source", "dataset", "task", "setting", "algorithm", "printed", "metric", "mean", "std",
                     "params"]


def published() -> pd.DataFrame:
    """The reference numbers, exactly as printed (percent metrics in percent), one row per cell.

    Every ``malt/results/published/*.csv`` is read (one file per paper or family, same columns)."""
    folder = resources.files("malt.results") / "published"
    frames = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".csv"):
            with resources.as_file(entry) as file:
                frames.append(pd.read_csv(file, dtype=str, keep_default_na=False))  # kept as printed
    table = pd.concat(frames, ignore_index=True)
    if "params" not in table.columns:
        table["params"] = ""
    return table.fillna("")[PUBLISHED_COLUMNS]


def parse_setting(text: str) -> dict[str, str]:
    """'missing=0.3;discard=true' -> {'missing': '0.3', 'discard': 'true'}."""
    out = {}
    for part in filter(None, (p.strip() for p in str(text).split(";"))):
        name, _, value = part.partition("=")
        out[name.strip()] = value.strip()
    return out


# Task options that change how often a protocol is repeated, not what it measures.
REPETITION_OPTIONS = ("seed", "runs", "repeats")


@functools.lru_cache(maxsize=None)
def _task_defaults(task: str) -> dict:
    from malt.tasks import get_task

    return get_task(task).Params().to_dict()


def matching_experiments(rs, row) -> list[str]:
    """Experiments of the result set that reproduce one published row: same dataset and task, the
    row's setting, and every other task option at its default (a learning-curve point with
    ``labeled=50`` does not reproduce a full-data table), repetition counts and seeds aside."""
    wanted = parse_setting(row["setting"])
    found = []
    for exp, spec in rs.specs.items():
        if spec.get("dataset") != row["dataset"] or spec.get("task") != row["task"]:
            continue
        options = spec.get("task_params", {})
        if not all(k in options and option_matches(options[k], v) for k, v in wanted.items()):
            continue
        defaults = _task_defaults(spec["task"])
        if all(option_matches(value, str(defaults[k])) for k, value in options.items()
               if k in defaults and k not in wanted and k not in REPETITION_OPTIONS):
            found.append(exp)
    return sorted(found)


def comparison(rs, family_experiments=None, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Published numbers beside ours: source, setting, algorithm (as printed and ours), metric, ours, published."""
    reference = published() if reference is None else reference
    frame = rs.frame
    rows = []
    for _, ref in reference.iterrows():
        for exp in matching_experiments(rs, ref):
            if family_experiments is not None and exp not in family_experiments:
                continue
            part = frame[(frame["experiment"] == exp) & (frame["algorithm"] == ref["algorithm"])
                         & (frame["metric"] == ref["metric"])]
            for name, value in parse_setting(ref.get("params", "")).items():  # one setting of several
                column = f"param.{name}"
                if column not in part.columns:
                    part = part.iloc[0:0]
                    break
                part = part[np.array([option_matches(v, value) for v in part[column]], dtype=bool)]
            for display, group in part.groupby("display"):
                values = group["value"].to_numpy(dtype=float) * metric_scale(ref["metric"], ref["task"])
                std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
                rows.append({"source": ref["source"], "dataset": ref["dataset"], "setting": ref["setting"],
                             "printed": ref["printed"], "display": display, "metric": ref["metric"],
                             "ours": format_mean_std(float(values.mean()), std, metric_info(ref["metric"], ref["task"]).percent,
                                                     len(values)),
                             "published": f"{ref['mean']} ± {ref['std']}" if ref["std"] else ref["mean"],
                             "difference": f"{values.mean() - float(ref['mean']):+.1f}", "folds": len(values)})
    return pd.DataFrame(rows, columns=["source", "dataset", "setting", "printed", "display", "metric", "ours",
                                       "published", "difference", "folds"])


# ---- page assembly -------------------------------------------------------------------------------
def _versions(rs, experiments) -> pd.DataFrame:
    """One line per algorithm setting: algorithm, version, non-default parameters, folds, fit seconds."""
    frame = rs.frame[rs.frame["experiment"].isin(experiments)]
    params = [c for c in frame.columns if c.startswith("param.")]
    rows = []
    for display, group in frame.groupby("display", sort=True):
        first = group.iloc[0]
        values = ", ".join(f"{c[6:]}={format_value(first[c])}" for c in params
                           if not (isinstance(first[c], float) and first[c] != first[c]))
        units = group.drop_duplicates(["experiment", "fold"])
        fit = units["fit_seconds"].astype(float) if "fit_seconds" in units else pd.Series(dtype=float)
        rows.append([first["algorithm"], first["version"] if "version" in group else "", values or "defaults",
                     str(group["fold"].nunique()), f"{fit.mean():.3g}" if fit.notna().any() else ""])
    return pd.DataFrame(rows, columns=["algorithm", "version", "parameters", "folds", "fit seconds (mean)"])


def _provenance(rs, experiments) -> pd.DataFrame:
    """One line per experiment: what the spec and the stored units record about where results came from."""
    rows = []
    for exp in experiments:
        spec = rs.specs.get(exp) or {}
        units = rs.frame[rs.frame["experiment"] == exp].drop_duplicates(["display", "fold"])
        planned = planned_folds(rs, exp)
        row = {"experiment": exp, "dataset": spec.get("dataset", ""),
               "dataset hash": str(spec.get("dataset_hash", ""))[:12],
               "task version": str(spec.get("task_version", "")),
               "created (UTC)": _utc(spec.get("created")),
               "units stored": f"{len(units)}/{len(spec.get('plan', [])) * planned}" if planned and spec.get("plan")
               else str(len(units))}
        for column in provenance_columns(rs):
            if column in ("version", "seed", "timestamp", "fit_seconds"):
                continue
            row[column.replace("_", " ")] = ", ".join(sorted({str(v) for v in units[column].dropna()}))
        if "timestamp" in units and len(units):
            row["last unit (UTC)"] = _utc(units["timestamp"].max())
        rows.append(row)
    return pd.DataFrame(rows)


SESSION_COLUMNS = ["experiment", "session", "started (UTC)", "ended (UTC)", "host", "code", "python", "libraries",
                   "BLAS", "threads", "jobs", "command"]


def _sessions(rs, experiments) -> pd.DataFrame:
    """One line per run session of the experiments: when, where, which code and libraries, how run."""
    rows = []
    for exp in experiments:
        for s in sessions(rs, exp):
            revision = s.get("git_revision")
            code = (f"git {revision[:12]}{' (dirty)' if s.get('git_dirty') else ''}" if revision
                    else "installed package")
            blas = sorted({f"{b.get('internal_api')} {b.get('version')}" for b in s.get("blas", [])
                           if b.get("version")})
            rows.append([exp, str(s.get("session", "")), _utc(s.get("started")), _utc(s.get("ended")) or "unfinished",
                         f"{s.get('host', '')} ({s.get('platform', '')})", code, str(s.get("python", "")),
                         ", ".join(f"{k} {v}" for k, v in sorted((s.get("versions") or {}).items())),
                         ", ".join(blas), str(s.get("threads", "")), str(s.get("jobs", "")),
                         str(s.get("command", ""))])
    return pd.DataFrame(rows, columns=SESSION_COLUMNS)


def _natural_order(family) -> tuple:
    """Families by task, dataset and setting, then by their options with numbers in numeric order
    (seed=2 before seed=10), as the navigation lists them."""
    text = family.subtitle()
    return (family.task, family.dataset, family.setting or "",
            [(0, float(t), "") if re.fullmatch(r"\d+(\.\d+)?", t) else (1, 0.0, t) for t in re.split(r"(\d+(?:\.\d+)?)", text)])


def _stacked(tables: list, family) -> list:
    """A swept family's per-metric tables as one table (rows: metric · setting), so a page shows
    one table per family, not one per metric; a single table is returned as it is."""
    from malt.results.tables import Table

    if len(tables) < 2 or any(t.corner != tables[0].corner for t in tables):
        return tables
    rows, columns, cells = [], list(dict.fromkeys(c for t in tables for c in t.columns)), {}
    notes = {t.note for t in tables}
    for table in tables:
        found = re.search(r": (.*), (lower|higher) is better, by ", table.heading)
        metric = f"{found.group(1)} {'↓' if found.group(2) == 'lower' else '↑'}" if found else table.name
        for row in table.rows:
            rows.append(f"{metric} · {row}")
            cells.update({(rows[-1], c): cell for (r, c), cell in table.cells.items() if r == row})
    note = notes.pop() if len(notes) == 1 else ""
    sub = family.subtitle()
    heading = (f"{family.dataset}, {family.task}{' (' + sub + ')' if sub else ''}: every metric by "
               f"{family.setting} (↓/↑ as each metric's label says; best per metric and column in bold).")
    return [Table(f"{family.slug()}_all", heading + (" " + note if note else ""), f"metric · {tables[0].corner}",
                  rows, columns, cells, note=note)]


def _utc(stamp) -> str:
    import datetime

    try:
        return datetime.datetime.fromtimestamp(float(stamp), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    except (TypeError, ValueError, OverflowError, OSError):
        return ""


def _environment() -> pd.DataFrame:
    import platform

    import matplotlib
    import numpy
    import scipy

    rows = [["malt", _malt_version()], ["Python", platform.python_version()], ["numpy", numpy.__version__],
            ["scipy", scipy.__version__], ["pandas", pd.__version__], ["matplotlib", matplotlib.__version__]]
    return pd.DataFrame(rows, columns=["package", "version that wrote this report"])


class Section:
    """One navigable part of the page: ``group`` (a task) › ``subgroup`` (a dataset) › ``title``."""

    def __init__(self, anchor: str, group: str, subgroup: str, title: str):
        self.anchor, self.group, self.subgroup, self.title = anchor, group, subgroup, title
        self.blocks: list[tuple] = []

    def add(self, *block) -> None:
        self.blocks.append(block)


def _anchor(text: str, taken: set) -> str:
    import re

    base = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-").lower() or "section"
    anchor, n = base, 2
    while anchor in taken:
        anchor, n = f"{base}-{n}", n + 1
    taken.add(anchor)
    return anchor


def write_report(rs, out: str | Path = "report", *, source: str = "", error: str = "std",
                 metrics: list[str] | None = None, formats: tuple[str, ...] = ("png", "pdf"),
                 progress=None) -> tuple[Path, Path]:
    """Write ``out/report.md``, a self-contained ``out/report.html`` and the figures in ``out/figures``
    (in ``formats``; the page embeds the PNG); return both page paths. ``progress``: as `plot_all`'s,
    for the figures."""
    from malt.results.cd_diagram import plot_across_datasets
    from malt.results.ranks import comparisons

    out = Path(out)
    figures_dir = out / "figures"
    if "png" not in formats:
        raise ValueError("the report embeds PNG figures: formats must include 'png'")
    outputs = plot_all(rs, figures_dir, error=error, metrics=metrics, formats=tuple(formats), progress=progress)
    figures_by_family: dict[str, list] = {}
    for item in outputs:
        figures_by_family.setdefault(item.family.slug(), []).append(item)
    tables = {family.slug(): group for family, group in all_tables(rs, metrics)}
    taken: set[str] = set()
    about = Section(_anchor("about", taken), "About", "", "About this report")
    about.add("p", f"Generated by malt {_malt_version()} from {len(rs.specs)} experiment(s)"
                   + (f" in {source}" if source else "") + ". Error bars and ± : "
                   + ("standard deviation over folds." if error == "std"
                      else "95 % Student-t interval of the mean over folds."))
    about.add("p", "Significance marks (†) compare each setting with the best one on the same folds: Nadeau & "
                   "Bengio's corrected resampled t-test for cross-validation and random resampling (the overlap of "
                   "training sets inflates the variance by n_test/n_train), a Wilcoxon signed-rank test over "
                   "repeated runs on a fixed train/test split; no marks below 5 paired folds (6 runs). Across "
                   "datasets: average ranks, the Friedman test and the Nemenyi critical difference (Demšar 2006).")
    about.add("simple", "Software", _environment())
    sections = [about]
    reference = published()
    for family in sorted(families(rs), key=_natural_order):
        slug = family.slug()
        sub = family.subtitle()
        heading = family.title() + (f" — by {family.setting}" if family.swept else "") + (f" ({sub})" if sub else "")
        section = Section(_anchor(slug, taken), family.task, family.dataset,
                          (f"by {family.setting}" if family.swept else "single experiment") + (f" ({sub})" if sub else ""))
        section.heading = heading
        options = ", ".join(f"{k}={format_value(v)}" for k, v in sorted(family.fixed.items()))
        section.add("p", f"Task options: {options or 'defaults'}."
                         + (f" Swept: {family.setting} = " + ", ".join(format_value(v) for v in family.experiments.values())
                            + "." if family.swept else "")
                         + " Experiments: " + ", ".join(f"`{e}`" for e in family.experiments) + ".")
        for table in _stacked(tables.get(slug, []), family):
            section.add("table", table)
        for item in figures_by_family.get(slug, []):
            what = metric_label(item.metric, family.fixed, task=family.task)
            if item.parameter_sweep:
                what += f" over {item.parameter_sweep}"
            section.add("img", next(p for p in item.paths if p.suffix == ".png"), out, f"{heading}: {what}", what)
        compared = comparison(rs, set(family.experiments),
                              reference[(reference["dataset"] == family.dataset) & (reference["task"] == family.task)])
        if not compared.empty:
            for src, group in compared.groupby("source", sort=True):
                view = group.drop(columns=["source", "dataset"]).copy()
                view["metric"] = [metric_label(m, task=family.task) for m in view["metric"]]
                section.add("simple", f"Published numbers beside ours — {src} ({family.dataset}); "
                                      "'printed' is the paper's name, 'display' ours", view)
        section.add("simple", "Provenance: algorithm settings and versions", _versions(rs, family.experiments))
        section.add("simple", "Provenance: experiments", _provenance(rs, family.experiments))
        runs = _sessions(rs, family.experiments)
        if not runs.empty:
            section.add("simple", "Provenance: run sessions (code revision, library versions, host, times)", runs)
        sections.append(section)
    found = comparisons(rs, metrics)
    if found:
        cds = {o.comparison.slug(): o for o in plot_across_datasets(rs, figures_dir, metrics=metrics, captions=False)}
        ranked = {t.name: t for t in rank_tables(rs, metrics)}
        by_group: dict[tuple, list] = {}
        for c in found:
            by_group.setdefault((c.task, c.options_text()), []).append(c)
        for (task, opts), group in sorted(by_group.items()):
            section = Section(_anchor(f"{task}-across-{opts}", taken), task, "across datasets",
                              f"ranks{' (' + opts + ')' if opts else ''}")
            section.heading = f"{task} across datasets" + (f" ({opts})" if opts else "")
            for c in group:
                if c.slug() in cds:
                    section.add("img", cds[c.slug()].paths[0], out, f"Critical-difference diagram. {c.caption()}")
                if c.slug() + "_ranks" in ranked:
                    section.add("table", ranked[c.slug() + "_ranks"])
            sections.append(section)
    across = dataset_tables(rs, metrics)
    if across:
        section = Section(_anchor("across-datasets-means", taken), "Across datasets", "", "means per dataset")
        section.heading = "Across datasets: means per dataset"
        for table in across:
            section.add("table", table)
        sections.append(section)
    if not rs.failed.empty:
        section = Section(_anchor("failed", taken), "Failed units", "", "failed units")
        section.heading = "Failed units"
        view = rs.failed[["experiment", "display", "fold", "error"]].copy()
        section.add("simple", f"{len(view)} unit(s) failed; `malt rerun` retries them", view)
        sections.append(section)
    out = output_dir(out)
    md_path, html_path = out / "report.md", out / "report.html"
    title = "malt report" + (f": {source}" if source else "")
    write(md_path, _markdown(sections, title))
    write(html_path, _html(sections, title))
    return md_path, html_path


def _malt_version() -> str:
    try:
        from importlib.metadata import version

        return version("malt")
    except Exception:  # not installed (running from a source tree)
        return "(source tree)"


def _md_simple(caption: str, frame: pd.DataFrame) -> str:
    lines = [f"*{caption}*", "", "| " + " | ".join(map(str, frame.columns)) + " |",
             "|" + "|".join(["---"] * len(frame.columns)) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


def _markdown(sections: list[Section], title: str) -> str:
    parts = [f"# {title}\n"]
    for section in sections:
        parts.append(f"## {getattr(section, 'heading', section.title)}\n")
        for block in section.blocks:
            kind = block[0]
            if kind == "p":
                parts.append(block[1] + "\n")
            elif kind == "table":
                parts.append(block[1].to_markdown())
            elif kind == "simple":
                parts.append(_md_simple(block[1], block[2]))
            elif kind == "img":
                parts.append(f"![{block[3]}]({os.path.relpath(block[1], block[2])})\n")
    return "\n".join(parts)


STYLE = """
:root{--nav:17rem;--line:#d0d4da;--muted:#555;--accent:#0072B2}
*{box-sizing:border-box}
html,body{overflow-x:hidden}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#111}
nav{position:fixed;top:0;left:0;bottom:0;width:var(--nav);overflow-y:auto;padding:1rem .8rem;
    background:#f5f6f8;border-right:1px solid var(--line);font-size:.88rem}
nav h1{font-size:1.05rem;margin:0 0 .6rem;overflow-wrap:anywhere}
nav input{width:100%;padding:.3rem .4rem;margin-bottom:.6rem;border:1px solid var(--line);border-radius:4px}
nav details{margin:.2rem 0}
nav summary{cursor:pointer;font-weight:600}
nav ul{list-style:none;margin:.15rem 0 .3rem .7rem;padding:0}
nav li{margin:.1rem 0;overflow-wrap:anywhere}
nav a{color:#123;text-decoration:none}
nav a:hover,nav a.current{color:var(--accent);text-decoration:underline}
nav .dataset{color:var(--muted);font-style:italic}
main{margin-left:var(--nav);padding:1rem 2rem 4rem;max-width:calc(100vw - var(--nav));min-width:0}
@media (max-width:900px){
  nav{position:static;width:auto;max-height:40vh;border-right:0;border-bottom:1px solid var(--line)}
  main{margin-left:0;max-width:100vw;padding:1rem}
}
section{border-top:1px solid var(--line);padding-top:.6rem;margin-top:1.4rem;min-width:0}
section>details>summary{cursor:pointer;list-style-position:outside;margin-left:1rem}
section>details>summary h2{display:inline}
h2{font-size:1.2rem;margin:.2rem 0 .6rem;overflow-wrap:anywhere}
p{max-width:60rem;overflow-wrap:anywhere}
details.more{margin:.6rem 0;border:1px solid var(--line);border-radius:4px;padding:.2rem .6rem}
details.more>summary{cursor:pointer;color:var(--muted)}
.scroll{overflow-x:auto;max-width:100%;margin:.8rem 0}
table{border-collapse:collapse;font-size:.85rem}
p.caption{font-size:.85rem;color:#333;margin:.2rem 0 .35rem;max-width:60rem}
p.caption a{color:var(--muted)}
td,th{border-bottom:1px solid var(--line);padding:.2rem .55rem;text-align:right;white-space:nowrap}
tbody th,td:first-child,td.text{text-align:left}
td.text{white-space:normal;min-width:6rem;max-width:32rem;overflow-wrap:anywhere}
thead th{background:#eef0f3;cursor:pointer;user-select:none;position:relative;padding-right:1.1rem;
         white-space:normal;min-width:4.5rem;vertical-align:bottom}
thead th::after{content:"\\21C5";position:absolute;right:.25rem;color:#999;font-size:.75em}
thead th[aria-sort=ascending]::after{content:"\\25B2";color:var(--accent)}
thead th[aria-sort=descending]::after{content:"\\25BC";color:var(--accent)}
input.rows{font-size:.8rem;padding:.15rem .35rem;border:1px solid var(--line);border-radius:4px;margin:.2rem 0}
figure{display:inline-block;margin:.4rem .8rem .8rem 0;vertical-align:top;max-width:100%}
figure img{display:block;width:3.6in;max-width:100%;height:auto;border:1px solid #eee;cursor:zoom-in}
figure.wide img{width:6.5in}
figcaption{font-size:.78rem;color:var(--muted);max-width:3.6in}
figcaption a{color:var(--muted)}
figure.wide figcaption{max-width:6.5in}
#zoom{position:fixed;inset:0;background:rgba(20,20,20,.82);display:flex;align-items:center;justify-content:center;
      z-index:10;cursor:zoom-out}
#zoom[hidden]{display:none}
#zoom img{max-width:96vw;max-height:94vh;background:#fff;padding:.4rem}
ol.notes{font-size:.85rem;max-width:60rem}
code{font-size:.85em;overflow-wrap:anywhere}
"""

SCRIPT = r"""
(function () {
  "use strict";
  function sortKey(cell) {
    var v = cell.getAttribute("data-sort");
    return v === null ? cell.textContent.trim() : v;
  }
  function sortTable(table, column, header) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var direction = header.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    var keys = rows.map(function (r) { return sortKey(r.cells[column]); });
    var numeric = keys.every(function (k) { return k === "" || isFinite(Number(k)); });
    var order = rows.map(function (r, i) { return i; });
    order.sort(function (a, b) {
      var x = keys[a], y = keys[b];
      if (x === "" && y === "") return a - b;
      if (x === "") return 1;
      if (y === "") return -1;
      var c = numeric ? Number(x) - Number(y) : x.localeCompare(y, undefined, {numeric: true});
      return c === 0 ? a - b : direction * c;
    });
    order.forEach(function (i) { body.appendChild(rows[i]); });
    Array.prototype.forEach.call(header.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
  }
  var FILTER_FROM = 6;  // rows from which a table gets a filter box
  document.querySelectorAll("table.sortable").forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, column) {
      header.tabIndex = 0;
      header.title = "Sort by this column";
      header.addEventListener("click", function () { sortTable(table, column, header); });
      header.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortTable(table, column, header); }
      });
    });
    if (table.tBodies[0].rows.length < FILTER_FROM) return;
    var filter = document.createElement("input");
    filter.className = "rows";
    filter.type = "search";
    filter.placeholder = "filter rows";
    filter.setAttribute("aria-label", "Filter the rows of this table");
    filter.addEventListener("input", function () {
      var needle = filter.value.toLowerCase();
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        row.hidden = needle !== "" && row.textContent.toLowerCase().indexOf(needle) < 0;
      });
    });
    table.parentNode.insertBefore(filter, table);
  });
  var zoom = document.getElementById("zoom");
  function closeZoom() { zoom.hidden = true; zoom.textContent = ""; }
  document.querySelectorAll("main figure img").forEach(function (img) {
    img.tabIndex = 0;
    img.title = "Click to enlarge";
    function open() {
      var big = document.createElement("img");  // made on demand: the page's images are its figures only
      big.src = img.src;
      big.alt = img.alt;
      zoom.textContent = "";
      zoom.appendChild(big);
      zoom.hidden = false;
    }
    img.addEventListener("click", open);
    img.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); open(); } });
  });
  zoom.addEventListener("click", closeZoom);
  document.addEventListener("keydown", function (e) { if (e.key === "Escape") closeZoom(); });
  function reveal(id) {
    var target = document.getElementById(id);
    if (target && target.firstElementChild && target.firstElementChild.tagName === "DETAILS") {
      target.firstElementChild.open = true;
    }
  }
  document.querySelectorAll("nav a[href^='#']").forEach(function (a) {
    a.addEventListener("click", function () { reveal(a.getAttribute("href").slice(1)); });
  });
  if (location.hash) reveal(location.hash.slice(1));
  var search = document.getElementById("nav-filter");
  search.addEventListener("input", function () {
    var needle = search.value.toLowerCase();
    document.querySelectorAll("nav li[data-target]").forEach(function (item) {
      var hit = needle === "" || item.getAttribute("data-search").indexOf(needle) >= 0;
      item.hidden = !hit;
      document.getElementById(item.getAttribute("data-target")).hidden = !hit;
    });
  });
  if ("IntersectionObserver" in window) {
    var links = {};
    document.querySelectorAll("nav a[href^='#']").forEach(function (a) { links[a.getAttribute("href").slice(1)] = a; });
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        var link = links[entry.target.id];
        if (link) link.classList.toggle("current", entry.isIntersecting);
      });
    }, {rootMargin: "0px 0px -70% 0px"});
    document.querySelectorAll("main section").forEach(function (s) { observer.observe(s); });
  }
}());
"""


PAGE_IMAGE_WIDTH = 1000
"""Widest figure the page embeds, in pixels (enough to enlarge a 3.5-inch figure to twice its size);
the files in figures/ keep the full 200 dpi."""

EMBED_BUDGET = 4_000_000
"""Bytes of figures the page embeds; later figures are read from figures/ beside the page (a report
of 50 experiments stays a page a browser opens at once)."""


def _data_uri(path: Path) -> str:
    """The figure as an inline PNG for the page: at most PAGE_IMAGE_WIDTH wide and reduced to an
    adaptive 64-colour palette (figures are a few flat colours on white), under a third of the file's bytes."""
    import base64
    import io

    from PIL import Image  # Pillow: a dependency of matplotlib

    with Image.open(path) as image:
        image = image.convert("RGB")
        if image.width > PAGE_IMAGE_WIDTH:
            image = image.resize((PAGE_IMAGE_WIDTH, round(image.height * PAGE_IMAGE_WIDTH / image.width)),
                                 Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.quantize(colors=64, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
            buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _simple_html(caption: str, frame: pd.DataFrame) -> str:
    head = "".join(f"<th scope='col'>{html.escape(str(c))}</th>" for c in frame.columns)
    body = []
    for row in frame.itertuples(index=False):
        cells = []
        for value in row:
            try:
                number = float(value) if not isinstance(value, bool) and str(value).strip() != "" else None
            except (TypeError, ValueError):
                number = None
            if number is not None and np.isfinite(number):
                cells.append(f"<td data-sort='{number:.12g}'>{html.escape(str(value))}</td>")
            else:
                cells.append(f"<td class='text'>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<div class='scroll'><p class='caption'>{html.escape(caption)}</p><table class='sortable'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


def _nav(sections: list[Section], title: str) -> str:
    parts = [f"<nav aria-label='Sections'><h1>{html.escape(title)}</h1>",
             "<input id='nav-filter' type='search' placeholder='filter sections' aria-label='Filter sections'>"]
    groups: dict[str, dict[str, list[Section]]] = {}
    for section in sections:
        groups.setdefault(section.group, {}).setdefault(section.subgroup, []).append(section)
    for group, subgroups in groups.items():
        parts.append(f"<details open><summary>{html.escape(group)}</summary><ul>")
        for subgroup, members in subgroups.items():
            if subgroup:
                parts.append(f"<li class='dataset'>{html.escape(subgroup)}<ul>")
            for s in members:
                search = html.escape(f"{s.group} {s.subgroup} {s.title}".lower())
                parts.append(f"<li data-target='{s.anchor}' data-search='{search}'>"
                             f"<a href='#{s.anchor}'>{html.escape(s.title)}</a></li>")
            if subgroup:
                parts.append("</ul></li>")
        parts.append("</ul></details>")
    parts.append("</nav>")
    return "".join(parts)


SECTIONS_OPEN = 12
"""A page with at most this many sections shows them all open; a longer one opens only the first
(the navigation opens the one it jumps to), so 50 experiments stay one readable page."""


def _notes(sections: list[Section]) -> dict[str, int]:
    """Each distinct note on reading a table (fold counts, marks, tests), numbered once for the page."""
    notes: dict[str, int] = {}
    for section in sections:
        for block in section.blocks:
            if block[0] == "table" and block[1].note:
                notes.setdefault(block[1].note, len(notes) + 1)
    return notes


class _Embedder:
    """Inline data URIs for the figures until EMBED_BUDGET bytes, then relative links to the files."""

    def __init__(self, budget: int = EMBED_BUDGET):
        self.left, self.linked = budget, 0

    def src(self, path: Path, folder: Path) -> str:
        if self.left > 0:
            uri = _data_uri(path)
            self.left -= len(uri)
            return uri
        self.linked += 1
        return html.escape(os.path.relpath(path, folder))


def _block_html(block, notes: dict[str, int], embed: _Embedder) -> str:
    kind = block[0]
    if kind == "p":
        text = html.escape(block[1])
        return "<p>" + "".join(f"<code>{t}</code>" if i % 2 else t for i, t in enumerate(text.split("`"))) + "</p>"
    if kind == "table":
        table = block[1]
        ref = f" <a href='#note-{notes[table.note]}'>[note {notes[table.note]}]</a>" if table.note in notes else ""
        return (f"<div class='scroll'><p class='caption'>{html.escape(table.heading)}{ref}</p>"
                f"{table.to_html(caption=False)}</div>")
    if kind == "simple":
        return _simple_html(block[1], block[2])
    if kind == "img":
        path, folder, alt = block[1], block[2], block[3]
        caption = block[4] if len(block) > 4 else alt
        wide = " class='wide'" if str(path).endswith("_cd.png") else ""
        files = " · ".join(f"<a href='{html.escape(os.path.relpath(f, folder))}'>{f.suffix[1:].upper()}</a>"
                           for f in [Path(path), Path(path).with_name(Path(path).stem + ".pdf")] if f.exists())
        return (f"<figure{wide}><img src='{embed.src(path, folder)}' alt='{html.escape(alt)}' loading='lazy'>"
                f"<figcaption>{html.escape(caption)} ({files})</figcaption></figure>")
    raise ValueError(kind)


def _section_html(section: Section, notes: dict[str, int], open_: bool, embed: _Embedder) -> str:
    heading = html.escape(getattr(section, "heading", section.title))
    main_blocks = [b for b in section.blocks if not (b[0] == "simple" and b[1].startswith("Provenance"))]
    provenance = [b for b in section.blocks if b not in main_blocks]
    parts = [f"<section id='{section.anchor}'><details class='section'{' open' if open_ else ''}>"
             f"<summary><h2>{heading}</h2></summary>"]
    parts += [_block_html(b, notes, embed) for b in main_blocks]
    if provenance:
        parts.append(f"<details class='more'><summary>Provenance ({len(provenance)} tables: settings and versions, "
                     "experiments, run sessions)</summary>")
        parts += [_block_html(b, notes, embed) for b in provenance]
        parts.append("</details>")
    if section.anchor == "about" and notes:
        parts.append("<p>How to read the result tables (each caption names its note):</p><ol class='notes'>"
                     + "".join(f"<li id='note-{n}'>{html.escape(text)}</li>" for text, n in notes.items()) + "</ol>")
    parts.append("</details></section>")
    return "\n".join(parts)


def _html(sections: list[Section], title: str) -> str:
    notes = _notes(sections)
    parts = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             "<link rel='icon' href='data:,'>",  # no favicon request, not even to the file share
             f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
             _nav(sections, title), "<main>"]
    embed = _Embedder()
    for i, section in enumerate(sections):
        parts.append(_section_html(section, notes, open_=len(sections) <= SECTIONS_OPEN or i <= 1, embed=embed))
    if embed.linked:
        parts.append(f"<p class='caption'>{embed.linked} figure(s) past the first {EMBED_BUDGET // 1_000_000} MB are "
                     "read from the figures/ folder beside this page: keep the two together.</p>")
    parts.append("</main><div id='zoom' hidden role='dialog' aria-label='Enlarged figure (click or Escape closes)'></div>")
    parts.append(f"<script>{SCRIPT}</script></body></html>\n")
    return "\n".join(parts)
