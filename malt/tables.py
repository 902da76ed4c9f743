"""Result tables: 'mean ± std' cells, the best mean in bold, ties with the best marked.

A single experiment gives one table (metrics × algorithm settings, the orientation of the
dissertation's Tables 4.2–4.5); a family sweeping a setting gives one table per metric (algorithm
settings × setting values, as Tables 4.6 and 5.1). In each row (single) or column (sweep) the best
mean is bold, respecting whether lower or higher is better, and every other method whose per-fold
values are not significantly different from the best's (paired t-test over folds, p ≥ 0.05) is
marked with a dagger.
"""
from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from malt.errors import MaltError
from malt.plotting import (Family, _fmt_value, _metric_order, families, legend_labels, metric_info,
                           metric_scale, setting_label)

ALPHA = 0.05
DAGGER = "†"


@dataclass
class Cell:
    mean: float
    std: float
    folds: int
    best: bool = False
    tied: bool = False  # not significantly different from the best (p >= ALPHA)
    p_value: float = float("nan")
    percent: bool = False

    def text(self) -> str:
        return format_mean_std(self.mean, self.std, self.percent)


@dataclass
class Table:
    name: str  # file-name friendly identifier
    caption: str
    corner: str  # header of the row-label column
    rows: list[str]
    columns: list[str]
    cells: dict = field(default_factory=dict)  # (row, column) -> Cell

    # ---- renderers ---------------------------------------------------------------------------
    def to_markdown(self) -> str:
        lines = [f"**{self.caption}**", "", "| " + " | ".join([self.corner, *self.columns]) + " |",
                 "|" + "|".join([":---"] + ["---:"] * len(self.columns)) + "|"]
        for row in self.rows:
            cells = [_md_cell(self.cells.get((row, col))) for col in self.columns]
            lines.append("| " + " | ".join([row, *cells]) + " |")
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        spec = "l" + "r" * len(self.columns)
        out = ["\\begin{table}[t]", "\\centering", "\\small",
               f"\\caption{{{_tex(self.caption)}}}", f"\\label{{tab:{self.name}}}",
               f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
               " & ".join(_tex(c) for c in [self.corner, *self.columns]) + " \\\\", "\\midrule"]
        for row in self.rows:
            cells = [_tex_cell(self.cells.get((row, col))) for col in self.columns]
            out.append(" & ".join([_tex(row), *cells]) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}", "\\end{table}"]
        return "\n".join(out) + "\n"

    def to_html(self) -> str:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in [self.corner, *self.columns])
        body = []
        for row in self.rows:
            cells = "".join(f"<td>{_html_cell(self.cells.get((row, col)))}</td>" for col in self.columns)
            body.append(f"<tr><th>{html.escape(row)}</th>{cells}</tr>")
        return (f"<table><caption>{html.escape(self.caption)}</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{''.join(body)}</tbody></table>\n")

    def to_frame(self) -> pd.DataFrame:
        """Tidy: one line per cell with mean, std, folds, best, tied and the t-test's p-value."""
        rows = [{"table": self.name, "row": r, "column": c, "mean": cell.mean, "std": cell.std,
                 "folds": cell.folds, "best": cell.best, "tied_with_best": cell.tied, "p_value": cell.p_value}
                for (r, c), cell in ((k, self.cells[k]) for k in
                                     [(r, c) for r in self.rows for c in self.columns if (r, c) in self.cells])]
        return pd.DataFrame(rows, columns=["table", "row", "column", "mean", "std", "folds", "best",
                                           "tied_with_best", "p_value"])

    def to_csv(self) -> str:
        buffer = io.StringIO()
        self.to_frame().to_csv(buffer, index=False)
        return buffer.getvalue()

    def render(self, fmt: str) -> str:
        renderers = {"markdown": self.to_markdown, "latex": self.to_latex, "csv": self.to_csv, "html": self.to_html}
        if fmt not in renderers:
            raise MaltError(f"Unknown table format '{fmt}'; use one of {', '.join(renderers)}.")
        return renderers[fmt]()


def format_mean_std(mean: float, std: float, percent: bool = False) -> str:
    """'26.7 ± 0.8': one decimal for percentages (as the papers print them), else 3 significant digits."""
    if not math.isfinite(mean):
        return "n/a"
    digits = 1 if percent or abs(mean) >= 10 else 2 if abs(mean) >= 1 else 3
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def _md_cell(cell: Cell | None) -> str:
    if cell is None:
        return "–"
    text = cell.text()
    return f"**{text}**" if cell.best else f"{text} {DAGGER}" if cell.tied else text


def _tex(text: str) -> str:
    for a, b in [("\\", "\\textbackslash{}"), ("&", "\\&"), ("%", "\\%"), ("_", "\\_"), ("#", "\\#"),
                 ("$", "\\$"), ("{", "\\{"), ("}", "\\}"), ("±", "$\\pm$"), (DAGGER, "$^\\dagger$"),
                 ("·", "$\\cdot$"), ("≥", "$\\geq$"), ("×", "$\\times$")]:
        text = text.replace(a, b)
    return text


def _tex_cell(cell: Cell | None) -> str:
    if cell is None:
        return "--"
    text = _tex(cell.text())
    return f"\\textbf{{{text}}}" if cell.best else f"{text}$^\\dagger$" if cell.tied else text


def _html_cell(cell: Cell | None) -> str:
    if cell is None:
        return "–"
    text = html.escape(cell.text())
    return f"<b>{text}</b>" if cell.best else f"{text} {DAGGER}" if cell.tied else text


# ---- statistics ----------------------------------------------------------------------------------
def paired_p_value(a: pd.Series, b: pd.Series) -> float:
    """Two-sided paired t-test p-value over the folds both series (indexed by fold) have."""
    from scipy import stats

    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1).dropna()
    if len(joined) < 2:
        return float("nan")
    diff = (joined["a"] - joined["b"]).to_numpy(dtype=float)
    if np.allclose(diff, diff[0], rtol=0, atol=1e-12):  # zero variance: identical, or always apart
        return 1.0 if abs(diff[0]) <= 1e-12 else 0.0
    return float(stats.ttest_rel(joined["a"], joined["b"]).pvalue)


def mark_best(cells: dict, per_fold: dict, better: str) -> None:
    """Bold the best mean among ``cells`` (key -> Cell) and mark the ones tied with it."""
    finite = {k: c for k, c in cells.items() if math.isfinite(c.mean)}
    if not finite:
        return
    pick = min if better == "lower" else max
    best_key = pick(finite, key=lambda k: finite[k].mean)
    best_mean = finite[best_key].mean
    for key, cell in finite.items():
        if math.isclose(cell.mean, best_mean, rel_tol=1e-12, abs_tol=1e-15):
            cell.best = True
            continue
        cell.p_value = paired_p_value(per_fold[best_key], per_fold[key])
        cell.tied = bool(cell.p_value >= ALPHA)


def _per_fold(frame: pd.DataFrame, scale: float) -> pd.Series:
    return frame.groupby("fold")["value"].mean() * scale


def _cell(values: pd.Series, percent: bool = False) -> Cell:
    v = values.to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    mean = float(v.mean()) if len(v) else float("nan")
    std = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    return Cell(mean, std, len(v), percent=percent)


# ---- building ------------------------------------------------------------------------------------
def _caption_tail(folds: set[int]) -> str:
    n = "/".join(str(f) for f in sorted(folds)) if folds else "0"
    return (f"Mean ± std over {n} folds. Bold: best mean; {DAGGER}: not significantly different from "
            f"the best (paired t-test over folds, p ≥ {ALPHA:g}).")


def experiment_table(rs, family: Family, metrics: list[str] | None = None,
                     columns: dict[str, str] | None = None) -> Table:
    """Metrics × algorithm settings for one experiment; best per metric (row).

    ``columns`` (experiment -> label suffix) puts several experiments side by side instead, e.g. the
    dissertation's Table 4.7 (BMR beside the '-D' variants trained on fully labelled rows only).
    """
    columns = columns or {next(iter(family.experiments)): ""}
    frame = rs.frame[rs.frame["experiment"].isin(columns)]
    displays = sorted(frame["display"].unique(), key=lambda d: (frame.loc[frame.display == d, "algorithm"].iloc[0], d))
    labels = legend_labels(rs, displays)
    keys = [(exp, d) for exp in columns for d in displays
            if not frame[(frame.experiment == exp) & (frame.display == d)].empty]
    names = {(exp, d): labels[d] + columns[exp] for exp, d in keys}
    chosen = [m for m in _metric_order(frame["metric"].unique()) if metrics is None or m in metrics]
    rows, cells, folds = [], {}, set()
    for metric in chosen:
        info = metric_info(metric)
        scale = metric_scale(metric)
        row = f"{info.label}{' (%)' if info.percent else ''} {'↓' if info.better == 'lower' else '↑'}"
        rows.append(row)
        mine, per_fold = {}, {}
        for exp, display in keys:
            part = frame[(frame["experiment"] == exp) & (frame["display"] == display) & (frame["metric"] == metric)]
            if part.empty:
                continue
            per_fold[(exp, display)] = _per_fold(part, scale)
            mine[(exp, display)] = _cell(per_fold[(exp, display)], info.percent)
            folds.add(mine[(exp, display)].folds)
        mark_best(mine, per_fold, info.better)
        cells.update({(row, names[k]): c for k, c in mine.items()})
    sub = family.subtitle()
    caption = f"{family.dataset}, {family.task}{' (' + sub + ')' if sub else ''}. ↓/↑: lower/higher is better. " \
              + _caption_tail(folds)
    return Table(family.slug(), caption, "metric", rows, list(dict.fromkeys(names[k] for k in keys)), cells)


def combined_tables(rs, option: str, metrics: list[str] | None = None) -> list[Table]:
    """Experiments that differ only in task option ``option`` side by side, one table per group.

    Columns are the algorithm settings, suffixed with the option's value ('-D' style for booleans:
    ``mllr (discard)`` for discard=True). Folds are paired across the experiments, which is valid
    when the option leaves the fold assignment alone (as ``discard`` does).
    """
    groups: dict[tuple, list[Family]] = {}
    for family in families(rs):  # every experiment as its own one-member family
        for exp, value in family.experiments.items():
            fixed = dict(family.fixed, **({family.setting: value} if family.swept else {}))
            if option not in fixed:
                continue
            rest = repr(sorted((k, repr(v)) for k, v in fixed.items() if k != option))
            members = groups.setdefault((family.dataset, family.task, rest), [])
            if all(exp not in m.experiments for m in members):
                members.append(Family(family.dataset, family.task, None, fixed, {exp: None}))
    out = []
    for _, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        members.sort(key=lambda f: repr(f.fixed[option]))
        columns = {}
        for family in members:
            value = family.fixed[option]
            suffix = ("" if value is False else f" ({option})" if value is True
                      else f" ({option}={_fmt_value(value)})")
            columns[next(iter(family.experiments))] = suffix
        shared = Family(members[0].dataset, members[0].task, None,
                        {k: v for k, v in members[0].fixed.items() if k != option}, dict.fromkeys(columns))
        table = experiment_table(rs, shared, metrics, columns)
        table.caption = table.caption.replace(". ↓/↑", f"; columns by {option}. ↓/↑", 1)
        out.append(table)
    return out


def sweep_tables(rs, family: Family, metrics: list[str] | None = None) -> list[Table]:
    """One table per metric: algorithm settings × values of the swept setting; best per column."""
    frame = rs.frame[rs.frame["experiment"].isin(family.experiments)]
    displays = sorted(frame["display"].unique(), key=lambda d: (frame.loc[frame.display == d, "algorithm"].iloc[0], d))
    labels = legend_labels(rs, displays)
    xlabel, xscale = setting_label(family.setting)
    columns = {exp: _fmt_value(round(float(v) * xscale, 6)) for exp, v in family.experiments.items()}
    out = []
    for metric in [m for m in _metric_order(frame["metric"].unique()) if metrics is None or m in metrics]:
        info = metric_info(metric)
        scale = metric_scale(metric)
        cells, folds = {}, set()
        for exp, column in columns.items():
            mine, per_fold = {}, {}
            for display in displays:
                part = frame[(frame["experiment"] == exp) & (frame["display"] == display) & (frame["metric"] == metric)]
                if part.empty:
                    continue
                per_fold[display] = _per_fold(part, scale)
                mine[display] = _cell(per_fold[display], info.percent)
                folds.add(mine[display].folds)
            mark_best(mine, per_fold, info.better)
            cells.update({(labels[d], column): c for d, c in mine.items()})
        sub = family.subtitle()
        caption = (f"{family.dataset}, {family.task}{' (' + sub + ')' if sub else ''}: "
                   f"{info.label}{' (%)' if info.percent else ''}, {info.better} is better, by {xlabel.lower()}. "
                   + _caption_tail(folds))
        out.append(Table(f"{family.slug()}_{metric}", caption, "algorithm", [labels[d] for d in displays],
                         list(dict.fromkeys(columns.values())), cells))
    return out


def all_tables(rs, metrics: list[str] | None = None) -> list[tuple[Family, list[Table]]]:
    if rs.empty:
        raise MaltError("No finished results to tabulate; run `malt cv` first (or check the filters).")
    out = []
    for family in families(rs):
        tables = sweep_tables(rs, family, metrics) if family.swept else [experiment_table(rs, family, metrics)]
        out.append((family, [t for t in tables if t.rows]))
    return out


def dataset_tables(rs, metrics: list[str] | None = None) -> list[Table]:
    """Datasets × algorithm settings, one table per metric and (task, options) shared by several datasets.

    The layout of the dissertation's Figures 3.4/3.5: single experiments (no swept setting) with the
    same task options on different datasets; the best mean per dataset (row) is bold.
    """
    groups: dict[tuple, list[Family]] = {}
    for family in families(rs):
        if not family.swept:
            key = (family.task, repr(sorted((k, repr(v)) for k, v in family.fixed.items())))
            groups.setdefault(key, []).append(family)
    out = []
    for (task, _), members in sorted(groups.items()):
        if len({f.dataset for f in members}) < 2 or len({f.dataset for f in members}) != len(members):
            continue
        exps = {next(iter(f.experiments)): f.dataset for f in members}
        frame = rs.frame[rs.frame["experiment"].isin(exps)]
        displays = sorted(frame["display"].unique(),
                          key=lambda d: (frame.loc[frame.display == d, "algorithm"].iloc[0], d))
        labels = legend_labels(rs, displays)
        for metric in [m for m in _metric_order(frame["metric"].unique()) if metrics is None or m in metrics]:
            info = metric_info(metric)
            scale = metric_scale(metric)
            cells, folds, rows = {}, set(), []
            for exp, dataset in sorted(exps.items(), key=lambda kv: kv[1]):
                rows.append(dataset)
                mine, per_fold = {}, {}
                for display in displays:
                    part = frame[(frame["experiment"] == exp) & (frame["display"] == display)
                                 & (frame["metric"] == metric)]
                    if part.empty:
                        continue
                    per_fold[display] = _per_fold(part, scale)
                    mine[display] = _cell(per_fold[display], info.percent)
                    folds.add(mine[display].folds)
                mark_best(mine, per_fold, info.better)
                cells.update({(dataset, labels[d]): c for d, c in mine.items()})
            sub = members[0].subtitle()
            caption = (f"{task}{' (' + sub + ')' if sub else ''}: {info.label}{' (%)' if info.percent else ''}, "
                       f"{info.better} is better, per dataset. " + _caption_tail(folds))
            name = f"{task}_across-datasets_{metric}" + (f"_{members[0].slug().split('_', 2)[-1]}" if sub else "")
            out.append(Table(name, caption, "dataset", rows, [labels[d] for d in displays], cells))
    return out
