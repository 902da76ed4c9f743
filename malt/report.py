"""`malt report`: one markdown and one HTML page with every table and figure of a result set.

For each experiment family the page shows the task options and the algorithm settings and versions
that produced it, its tables, its figures, and, where an experiment reproduces a published table
(``malt/published/published.csv``), the published numbers beside ours.
"""
from __future__ import annotations

import functools
import html
import os
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from malt.plotting import _fmt_value, families, metric_info, metric_scale, option_matches, plot_all
from malt.tables import all_tables, dataset_tables, format_mean_std

PUBLISHED_COLUMNS = ["source", "dataset", "task", "setting", "algorithm", "printed", "metric", "mean", "std",
                     "params"]


def published() -> pd.DataFrame:
    """The reference numbers, exactly as printed (percent metrics in percent), one row per cell.

    Every ``malt/published/*.csv`` is read (one file per paper or family, same columns)."""
    folder = resources.files("malt") / "published"
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
                values = group["value"].to_numpy(dtype=float) * metric_scale(ref["metric"])
                std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
                rows.append({"source": ref["source"], "dataset": ref["dataset"], "setting": ref["setting"],
                             "printed": ref["printed"], "display": display, "metric": ref["metric"],
                             "ours": format_mean_std(float(values.mean()), std, metric_info(ref["metric"]).percent),
                             "published": f"{ref['mean']} ± {ref['std']}" if ref["std"] else ref["mean"],
                             "difference": f"{values.mean() - float(ref['mean']):+.1f}", "folds": len(values)})
    return pd.DataFrame(rows, columns=["source", "dataset", "setting", "printed", "display", "metric", "ours",
                                       "published", "difference", "folds"])


# ---- page assembly -------------------------------------------------------------------------------
def _versions(rs, experiments) -> pd.DataFrame:
    frame = rs.frame[rs.frame["experiment"].isin(experiments)]
    params = [c for c in frame.columns if c.startswith("param.")]
    rows = []
    for display, group in frame.groupby("display", sort=True):
        first = group.iloc[0]
        values = ", ".join(f"{c[6:]}={_fmt_value(first[c])}" for c in params
                           if not (isinstance(first[c], float) and first[c] != first[c]))
        rows.append([first["algorithm"], first["version"] if "version" in group else "", values or "defaults",
                     str(group["fold"].nunique())])
    return pd.DataFrame(rows, columns=["algorithm", "version", "parameters", "folds"])


def write_report(rs, out: str | Path = "report", *, source: str = "", error: str = "std",
                 metrics: list[str] | None = None) -> tuple[Path, Path]:
    """Write ``out/report.md``, ``out/report.html`` and the figures in ``out/figures``; return both page paths."""

    out = Path(out)
    figures_dir = out / "figures"
    outputs = plot_all(rs, figures_dir, error=error, metrics=metrics, formats=("png", "pdf"))
    figures_by_family: dict[str, list] = {}
    for item in outputs:
        figures_by_family.setdefault(item.family.slug(), []).append(item)
    tables = {family.slug(): group for family, group in all_tables(rs, metrics)}
    version = _malt_version()
    blocks: list[tuple] = [("h", 1, "malt report" + (f": {source}" if source else "")),
                           ("p", f"Generated by malt {version} from {len(rs.specs)} experiment(s). Error bars: "
                                 + ("standard deviation over folds." if error == "std"
                                    else "95 % Student-t interval of the mean over folds."))]
    reference = published()
    for family in families(rs):
        slug = family.slug()
        heading = family.title() + (f" — by {family.setting}" if family.swept else "")
        blocks.append(("h", 2, heading))
        options = ", ".join(f"{k}={_fmt_value(v)}" for k, v in sorted(family.fixed.items()))
        blocks.append(("p", f"Task options: {options or 'defaults'}."
                            + (f" Swept: {family.setting} = " + ", ".join(_fmt_value(v) for v in family.experiments.values())
                               + "." if family.swept else "")
                            + " Experiments: " + ", ".join(f"`{e}`" for e in family.experiments) + "."))
        blocks.append(("simple", "Algorithm settings and versions", _versions(rs, family.experiments)))
        for table in tables.get(slug, []):
            blocks.append(("table", table))
        for item in figures_by_family.get(slug, []):
            png = item.paths[0]
            blocks.append(("img", os.path.relpath(png, out), f"{heading}: {metric_info(item.metric).label}"))
        compared = comparison(rs, set(family.experiments), reference)
        if not compared.empty:
            for src, group in compared.groupby("source", sort=True):
                view = group.drop(columns=["source", "dataset"]).copy()
                view["metric"] = [metric_info(m).label + (" (%)" if metric_info(m).percent else "")
                                  for m in view["metric"]]
                blocks.append(("simple", f"Published numbers beside ours — {src} ({family.dataset}); "
                                         "'printed' is the paper's name, 'display' ours", view))
    across = dataset_tables(rs, metrics)
    if across:
        blocks.append(("h", 2, "Across datasets"))
        blocks.extend(("table", table) for table in across)
    if not rs.failed.empty:
        blocks.append(("h", 2, "Failed units"))
        view = rs.failed[["experiment", "display", "fold", "error"]].copy()
        blocks.append(("simple", f"{len(view)} unit(s) failed; `malt rerun` retries them", view))
    out.mkdir(parents=True, exist_ok=True)
    md_path, html_path = out / "report.md", out / "report.html"
    md_path.write_text(_markdown(blocks))
    html_path.write_text(_html(blocks, "malt report"))
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


def _markdown(blocks) -> str:
    parts = []
    for block in blocks:
        kind = block[0]
        if kind == "h":
            parts.append("#" * block[1] + " " + block[2] + "\n")
        elif kind == "p":
            parts.append(block[1] + "\n")
        elif kind == "table":
            parts.append(block[1].to_markdown())
        elif kind == "simple":
            parts.append(_md_simple(block[1], block[2]))
        elif kind == "img":
            parts.append(f"![{block[2]}]({block[1]})\n")
    return "\n".join(parts)


def _html(blocks, title: str) -> str:
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}"
             "td,th{border-bottom:1px solid #ccc;padding:0.2em 0.6em;text-align:right}"
             "th:first-child{text-align:left}caption{caption-side:top;text-align:left;font-size:0.9em;"
             "padding-bottom:0.3em}img{width:3.5in;margin:0.3em}")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{style}</style></head><body>"]
    for block in blocks:
        kind = block[0]
        if kind == "h":
            parts.append(f"<h{block[1]}>{html.escape(block[2])}</h{block[1]}>")
        elif kind == "p":
            parts.append(f"<p>{html.escape(block[1]).replace('`', '')}</p>")
        elif kind == "table":
            parts.append(block[1].to_html())
        elif kind == "simple":
            frame = block[2]
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
            body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                           for row in frame.itertuples(index=False))
            parts.append(f"<table><caption>{html.escape(block[1])}</caption><thead><tr>{head}</tr></thead>"
                         f"<tbody>{body}</tbody></table>")
        elif kind == "img":
            parts.append(f"<img src='{html.escape(block[1])}' alt='{html.escape(block[2])}'>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
