"""Result tables: 'mean ± std' cells, the best mean in bold, ties with the best marked.

A single experiment gives one table (metrics × algorithm settings, the orientation of the
dissertation's Tables 4.2–4.5); a family sweeping a setting gives one table per metric (algorithm
settings × setting values, as Tables 4.6 and 5.1). In each row (single) or column (sweep) the best
mean is bold, respecting whether lower or higher is better, and every other method whose per-fold
values are not significantly different from the best's is marked with a dagger. The test is one
valid for CV results (``malt.results.stats``: Nadeau & Bengio's corrected resampled t-test, or a Wilcoxon
signed-rank test over runs on a fixed split); below its minimum number of folds no mark is drawn and
the caption says so. A cell with fewer folds than its experiment plans shows 'n/N'; a single fold
shows no ±.

``rank_tables`` gives the across-datasets view: average rank per algorithm setting over datasets,
with the Friedman test in the caption (Demšar 2006).
"""
from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from malt.results.describe import (decision_note, known_metrics, metric_info, metric_label, planned_folds,
                                   test_train_ratio)
from malt.errors import MaltError
from malt.results.formatting import format_mean_std, format_value
from malt.results.plotting import (Family, display_order, families, legend_labels,
                           metric_scale, setting_label)
from malt.results.stats import ALPHA, FoldTestPolicy

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
    planned: int | None = None  # folds the experiment plans; fewer shows 'n/N'
    test: str = ""  # the paired test behind p_value ('' when no mark was drawn)
    label: str | None = None  # text of a cell that is not a mean ± std (a rank)

    def text(self) -> str:
        if self.label is not None:
            return self.label
        text = format_mean_std(self.mean, self.std, self.percent, self.folds)
        if self.planned is not None and self.folds < self.planned:
            text += f" ({self.folds}/{self.planned})"
        return text


@dataclass
class Table:
    name: str  # file-name friendly identifier
    caption: str
    corner: str  # header of the row-label column
    rows: list[str]
    columns: list[str]
    cells: dict = field(default_factory=dict)  # (row, column) -> Cell
    column_title: str | None = None  # what the columns are ('algorithm'), when the table may be transposed
    note: str = ""  # the end of the caption that says how to read the cells (a page with many tables says it once)

    @property
    def heading(self) -> str:
        """The caption without its ``note``: what this table shows."""
        return self.caption[:-len(self.note)].rstrip() if self.note and self.caption.endswith(self.note) \
            else self.caption

    def transposed(self) -> "Table":
        """Columns as rows: ``column_title`` becomes the corner and the old corner's items the columns."""
        return Table(self.name, self.caption, self.column_title or "", list(self.columns), list(self.rows),
                     {(c, r): cell for (r, c), cell in self.cells.items()}, self.corner, self.note)

    def fits_page(self) -> "Table":
        """This table, transposed when it has more columns than rows and may be (more algorithm
        settings than metrics, say): a LaTeX page holds many rows but few columns."""
        return self.transposed() if self.column_title and len(self.columns) > len(self.rows) else self

    # ---- renderers ---------------------------------------------------------------------------
    def to_markdown(self) -> str:
        lines = [f"**{self.caption}**", "", "| " + " | ".join([self.corner, *self.columns]) + " |",
                 "|" + "|".join([":---"] + ["---:"] * len(self.columns)) + "|"]
        for row in self.rows:
            cells = [_md_cell(self.cells.get((row, col))) for col in self.columns]
            lines.append("| " + " | ".join([row, *cells]) + " |")
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        """A booktabs table (transposed when that fits a page better, see `fits_page`)."""
        if self.fits_page() is not self:
            return self.fits_page().to_latex()
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

    def to_html(self, table_id: str | None = None, caption: bool = True) -> str:
        """A table whose columns a page can sort: every cell carries its number in ``data-sort``."""
        head = "".join(f"<th scope='col'>{html.escape(c)}</th>" for c in [self.corner, *self.columns])
        body = []
        for row in self.rows:
            cells = "".join(_html_td(self.cells.get((row, col))) for col in self.columns)
            body.append(f"<tr><th scope='row'>{html.escape(row)}</th>{cells}</tr>")
        ident = f" id='{html.escape(table_id)}'" if table_id else ""
        text = f"<caption>{html.escape(self.caption)}</caption>" if caption else ""
        return (f"<table class='results sortable'{ident}>{text}"
                f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>\n")

    def to_frame(self) -> pd.DataFrame:
        """Tidy: one line per cell with mean, std, folds, best, tied and the t-test's p-value."""
        rows = [{"table": self.name, "row": r, "column": c, "mean": cell.mean, "std": cell.std,
                 "folds": cell.folds, "planned": cell.planned, "best": cell.best, "tied_with_best": cell.tied,
                 "p_value": cell.p_value, "test": cell.test}
                for (r, c), cell in ((k, self.cells[k]) for k in
                                     [(r, c) for r in self.rows for c in self.columns if (r, c) in self.cells])]
        return pd.DataFrame(rows, columns=["table", "row", "column", "mean", "std", "folds", "planned", "best",
                                           "tied_with_best", "p_value", "test"])

    def to_csv(self) -> str:
        buffer = io.StringIO()
        self.to_frame().to_csv(buffer, index=False)
        return buffer.getvalue()

    def render(self, fmt: str) -> str:
        renderers = {"markdown": self.to_markdown, "latex": self.to_latex, "csv": self.to_csv, "html": self.to_html}
        if fmt not in renderers:
            raise MaltError(f"Unknown table format '{fmt}'; use one of {', '.join(renderers)}.")
        return renderers[fmt]()


def _md_cell(cell: Cell | None) -> str:
    if cell is None:
        return "–"
    text = cell.text()
    return f"**{text}**" if cell.best else f"{text} {DAGGER}" if cell.tied else text


def _tex(text: str) -> str:
    for a, b in [("\\", "\\textbackslash{}"), ("&", "\\&"), ("%", "\\%"), ("_", "\\_"), ("#", "\\#"),
                 ("$", "\\$"), ("{", "\\{"), ("}", "\\}"), ("±", "$\\pm$"), (DAGGER, "$^\\dagger$"),
                 ("·", "$\\cdot$"), ("≥", "$\\geq$"), ("×", "$\\times$"), ("χ²\\_F", "$\\chi^2_F$"),
                 ("F\\_F", "$F_F$"), ("α", "$\\alpha$"), ("∞", "$\\infty$"), ("ρ", "$\\rho$"), ("–", "--"),
                 ("↓", "$\\downarrow$"), ("↑", "$\\uparrow$"), ("Š", "\\v{S}"), ("š", "\\v{s}")]:
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


def _html_td(cell: Cell | None) -> str:
    if cell is None or not math.isfinite(cell.mean):
        return f"<td data-sort=''>{_html_cell(cell)}</td>"
    return f"<td data-sort='{cell.mean:.12g}'>{_html_cell(cell)}</td>"


# ---- statistics ----------------------------------------------------------------------------------
def fold_policy(rs, experiment: str) -> FoldTestPolicy:
    """The paired test an experiment's protocol admits (malt.results.stats.FoldTestPolicy)."""
    spec = rs.specs.get(experiment) or {}
    return FoldTestPolicy.for_protocol(test_train_ratio(spec.get("task", ""), spec.get("task_params") or {}))


@dataclass
class Marks:
    """What the significance marks of one table rest on, for its caption."""

    policy: FoldTestPolicy | None = None
    drawn: int = 0  # groups (rows or columns) where marks were drawn
    skipped: int = 0  # groups with too few folds
    fewest: int | None = None  # fewest paired folds in a skipped group

    def add(self, other: "Marks") -> None:
        self.policy = self.policy or other.policy
        self.drawn += other.drawn
        self.skipped += other.skipped
        if other.fewest is not None:
            self.fewest = other.fewest if self.fewest is None else min(self.fewest, other.fewest)


def mark_best(cells: dict, per_fold: dict, better: str, policy: FoldTestPolicy) -> Marks:
    """Bold the best mean among ``cells`` (key -> Cell) and mark the ones the policy's paired test
    does not separate from it (p ≥ ALPHA) — only when every compared pair shares at least
    ``policy.min_folds`` folds; otherwise no mark at all in this group."""
    finite = {k: c for k, c in cells.items() if math.isfinite(c.mean)}
    if not finite:
        return Marks(policy)
    pick = min if better == "lower" else max
    best_key = pick(finite, key=lambda k: finite[k].mean)
    best_mean = finite[best_key].mean
    others = []
    for key, cell in finite.items():
        if math.isclose(cell.mean, best_mean, rel_tol=1e-12, abs_tol=1e-15):
            cell.best = True
        else:
            others.append(key)
    if not others:
        return Marks(policy)
    shared = [len(per_fold[best_key].index.intersection(per_fold[k].index)) for k in others]
    if min(shared) < policy.min_folds:
        return Marks(policy, skipped=1, fewest=min(shared))
    for key in others:
        result = policy.compare(per_fold[best_key], per_fold[key])
        finite[key].p_value = result.p_value
        finite[key].test = result.test
        finite[key].tied = bool(result.p_value >= ALPHA)
    return Marks(policy, drawn=1)


def _per_fold(frame: pd.DataFrame, scale: float) -> pd.Series:
    return frame.groupby("fold")["value"].mean() * scale


def _cell(values: pd.Series, percent: bool = False, planned: int | None = None) -> Cell:
    v = values.to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    mean = float(v.mean()) if len(v) else float("nan")
    std = float(v.std(ddof=1)) if len(v) > 1 else 0.0
    return Cell(mean, std, len(v), percent=percent, planned=planned)


# ---- building ------------------------------------------------------------------------------------
def _caption_tail(folds: set[int], marks: Marks, incomplete: bool = False) -> str:
    n = "/".join(str(f) for f in sorted(folds)) if folds else "0"
    text = f"Mean ± std over {n} folds{' (one fold: no ±)' if 1 in folds else ''}. Bold: best mean"
    policy = marks.policy
    if marks.drawn and policy is not None:
        text += (f"; {DAGGER}: not significantly different from the best ({policy.describe()}; two-sided "
                 f"p ≥ {ALPHA:g}, each pair tested alone)")
        if marks.skipped:
            text += f"; no marks where fewer than {policy.min_folds} folds are paired"
    elif marks.skipped and policy is not None:
        text += (f". No significance marks: {marks.fewest} paired fold{'s' if marks.fewest != 1 else ''}, "
                 f"fewer than the {policy.min_folds} the {policy.test} test needs here")
    text += "."
    if incomplete:
        text += " n/N: only n of the N planned folds are stored."
    return text


def experiment_table(rs, family: Family, metrics: list[str] | None = None,
                     columns: dict[str, str] | None = None) -> Table:
    """Metrics × algorithm settings for one experiment; best per metric (row).

    ``columns`` (experiment -> label suffix) puts several experiments side by side instead, e.g. the
    dissertation's Table 4.7 (BMR beside the '-D' variants trained on fully labelled rows only).
    """
    columns = columns or {next(iter(family.experiments)): ""}
    frame = rs.frame[rs.frame["experiment"].isin(columns)]
    displays = display_order(rs, frame["display"].unique())
    labels = legend_labels(rs, displays)
    keys = [(exp, d) for exp in columns for d in displays
            if not frame[(frame.experiment == exp) & (frame.display == d)].empty]
    names = {(exp, d): labels[d] + columns[exp] for exp, d in keys}
    chosen = [m for m in known_metrics(frame["metric"].unique()) if metrics is None or m in metrics]
    policy = fold_policy(rs, next(iter(columns)))
    rows, cells, folds, marks = [], {}, set(), Marks(policy)
    for metric in chosen:
        info = metric_info(metric, family.task)
        scale = metric_scale(metric, family.task)
        row = f"{metric_label(metric, family.fixed, task=family.task)} {'↓' if info.better == 'lower' else '↑'}"
        rows.append(row)
        mine, per_fold = {}, {}
        for exp, display in keys:
            part = frame[(frame["experiment"] == exp) & (frame["display"] == display) & (frame["metric"] == metric)]
            if part.empty:
                continue
            per_fold[(exp, display)] = _per_fold(part, scale)
            mine[(exp, display)] = _cell(per_fold[(exp, display)], info.percent, planned_folds(rs, exp, display))
            folds.add(mine[(exp, display)].folds)
        marks.add(mark_best(mine, per_fold, info.better, policy))
        cells.update({(row, names[k]): c for k, c in mine.items()})
    sub = family.subtitle()
    note = _caption_tail(folds, marks, _incomplete(cells)) + decision_note(rs, family.task, list(columns), chosen)
    caption = f"{family.dataset}, {family.task}{' (' + sub + ')' if sub else ''}. ↓/↑: lower/higher is better. " + note
    return Table(family.slug(), caption, "metric", rows, list(dict.fromkeys(names[k] for k in keys)), cells,
                 column_title="algorithm", note=note)


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
                      else f" ({option}={format_value(value)})")
            columns[next(iter(family.experiments))] = suffix
        shared = Family(members[0].dataset, members[0].task, None,
                        {k: v for k, v in members[0].fixed.items() if k != option}, dict.fromkeys(columns))
        table = experiment_table(rs, shared, metrics, columns)
        table.caption = table.caption.replace(". ↓/↑", f"; columns by {option}. ↓/↑", 1)
        out.append(table)
    return out


def _experiment_cells(rs, frame, exp, displays, metric, info, scale, folds: set, marks: Marks) -> dict:
    """display -> cell of one experiment's metric, the best marked among them (into ``marks``, tested on
    that experiment's folds) and their fold counts added to ``folds``."""
    mine, per_fold = {}, {}
    for display in displays:
        part = frame[(frame["experiment"] == exp) & (frame["display"] == display) & (frame["metric"] == metric)]
        if part.empty:
            continue
        per_fold[display] = _per_fold(part, scale)
        mine[display] = _cell(per_fold[display], info.percent, planned_folds(rs, exp, display))
        folds.add(mine[display].folds)
    marks.add(mark_best(mine, per_fold, info.better, fold_policy(rs, exp)))
    return mine


def sweep_tables(rs, family: Family, metrics: list[str] | None = None) -> list[Table]:
    """One table per metric: algorithm settings × values of the swept setting; best per column."""
    frame = rs.frame[rs.frame["experiment"].isin(family.experiments)]
    displays = display_order(rs, frame["display"].unique())
    labels = legend_labels(rs, displays)
    xlabel, xscale = setting_label(family.setting, family.task)
    columns = {exp: format_value(round(float(v) * xscale, 6)) for exp, v in family.experiments.items()}
    out = []
    for metric in [m for m in known_metrics(frame["metric"].unique()) if metrics is None or m in metrics]:
        info = metric_info(metric, family.task)
        scale = metric_scale(metric, family.task)
        cells, folds, marks = {}, set(), Marks()
        for exp, column in columns.items():
            mine = _experiment_cells(rs, frame, exp, displays, metric, info, scale, folds, marks)
            cells.update({(labels[d], column): c for d, c in mine.items()})
        sub = family.subtitle()
        note = _caption_tail(folds, marks, _incomplete(cells))
        caption = (f"{family.dataset}, {family.task}{' (' + sub + ')' if sub else ''}: "
                   f"{metric_label(metric, family.fixed, task=family.task)}, {info.better} is better, by {xlabel.lower()}. "
                   + note)
        out.append(Table(f"{family.slug()}_{metric}", caption, "algorithm", [labels[d] for d in displays],
                         list(dict.fromkeys(columns.values())), cells, note=note))
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
        displays = display_order(rs, frame["display"].unique())
        labels = legend_labels(rs, displays)
        for metric in [m for m in known_metrics(frame["metric"].unique()) if metrics is None or m in metrics]:
            info = metric_info(metric, task)
            scale = metric_scale(metric, task)
            cells, folds, rows, marks = {}, set(), [], Marks()
            for exp, dataset in sorted(exps.items(), key=lambda kv: kv[1]):
                rows.append(dataset)
                mine = _experiment_cells(rs, frame, exp, displays, metric, info, scale, folds, marks)
                cells.update({(dataset, labels[d]): c for d, c in mine.items()})
            sub = members[0].subtitle()
            note = _caption_tail(folds, marks, _incomplete(cells))
            caption = (f"{task}{' (' + sub + ')' if sub else ''}: {metric_label(metric, members[0].fixed, task=task)}, "
                       f"{info.better} is better, per dataset. " + note)
            name = f"{task}_across-datasets_{metric}" + (f"_{members[0].slug().split('_', 2)[-1]}" if sub else "")
            out.append(Table(name, caption, "dataset", rows, [labels[d] for d in displays], cells,
                             column_title="algorithm", note=note))
    return out


def _incomplete(cells: dict) -> bool:
    return any(c.planned is not None and c.folds < c.planned for c in cells.values())


def rank_tables(rs, metrics: list[str] | None = None, alpha: float = ALPHA, control: str | None = None) -> list[Table]:
    """Average rank per algorithm setting over datasets, one table per task, option set and metric.

    Rows: the settings, best average rank first; columns: each dataset's rank (and the mean over
    folds it comes from), the average rank, and Holm's adjusted p-value against the best-ranked
    setting (or ``control``). The caption carries the Friedman test (χ²_F, Iman–Davenport F_F, exact p
    where enumerable) and the Nemenyi critical difference (Demšar 2006, §3.2.2)."""
    from malt.results.ranks import comparisons

    out = []
    for comparison in comparisons(rs, metrics, alpha):
        f = comparison.friedman
        info = metric_info(comparison.metric, comparison.task)
        scale = metric_scale(comparison.metric, comparison.task)
        if control is not None and control not in f.average_ranks.index:
            raise MaltError(f"--control {control}: not among the compared settings of {comparison.title()} "
                            f"({', '.join(f.average_ranks.index)}).")
        chosen = control
        best = chosen or f.average_ranks.index[0]
        holm = f.holm_against(best).set_index("algorithm")
        columns = list(comparison.datasets) + ["average rank", f"Holm p vs {best}"]
        cells = {}
        for algo in f.average_ranks.index:
            for dataset in comparison.datasets:
                rank = float(f.ranks.loc[dataset, algo])
                value = float(f.scores.loc[dataset, algo]) * scale
                text = f"{format_value(rank)} ({format_mean_std(value, 0.0, info.percent, 1)})"
                cells[(algo, dataset)] = Cell(rank, 0.0, 1, best=rank == float(f.ranks.loc[dataset].min()), label=text)
            mean_rank = float(f.average_ranks[algo])
            cells[(algo, "average rank")] = Cell(mean_rank, 0.0, f.n_datasets, best=algo == best,
                                                 label=f"{mean_rank:.2f}")
            if algo == best:
                cells[(algo, columns[-1])] = Cell(float("nan"), 0.0, 0, label="control")
            else:
                p = float(holm.loc[algo, "adjusted_p"])
                rejected = bool(holm.loc[algo, "rejected"]) and f.rejects
                cells[(algo, columns[-1])] = Cell(p, 0.0, 0, p_value=p,
                                                  label=f"{p:.3f}" + (" *" if rejected else ""))
        caption = (f"{comparison.title()}: rank per dataset (mean over folds in parentheses) and average rank. "
                   + comparison.caption()
                   + f" Holm: adjusted p-values of the step-down procedure against {best}"
                   + ("" if chosen else " (the best-ranked setting: a control picked after seeing the ranks makes "
                                        "these p-values optimistic; name one in advance for a confirmatory test)")
                   + f"; * rejects equal ranks at α = {alpha:g} (only when the Friedman test rejects). Bold: best rank.")
        out.append(Table(comparison.slug() + "_ranks", caption, "algorithm", list(f.average_ranks.index), columns,
                         cells))
    return out
