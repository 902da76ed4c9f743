"""`malt plot`, `malt table` and `malt report`: figures, tables and a report page from stored results."""
from __future__ import annotations

from pathlib import Path

import click

from malt.errors import MaltError


def _filters(func):
    for decorator in reversed([
        click.option("--dataset", "datasets", multiple=True, help="Only these datasets (repeatable)."),
        click.option("--task", "tasks", multiple=True, help="Only these tasks (repeatable)."),
        click.option("--algo", "algos", multiple=True, help="Only these algorithms (repeatable)."),
        click.option("--metric", "metrics", multiple=True, help="Only these metrics (repeatable)."),
        click.option("--experiment", "experiments", multiple=True,
                     help="Only these experiments: ids or their unambiguous beginnings (repeatable)."),
        click.option("--param", "params", multiple=True,
                     help="Only the settings whose parameter has this value, name=value (repeatable)."),
        click.option("--where", "where", multiple=True,
                     help="Only experiments whose task option matches, name=value (e.g. missing=0.3)."),
        click.option("--quiet", is_flag=True, help="No progress line on stderr."),
        click.option("--diagnostic", "diagnostics", multiple=True,
                     help="Draw or tabulate this recorded diagnostic instead of the metrics (fit_seconds, "
                          "fit_cpu_seconds, iterations, ...): speed and convergence from stored experiments."),
    ]):
        func = decorator(func)
    return func


def figure_progress(label: str, quiet: bool):
    """The ``progress`` of `plot_all`: a progress line over the figures (see `malt.engine.progress`)."""
    from malt.engine.progress import Counter

    return lambda total: Counter(total, label, quiet).step


def load_filtered(path, datasets=(), tasks=(), algos=(), metrics=(), experiments=(), where=(), diagnostics=(),
                  quiet=False, params=()):
    """ResultSet.load(path) restricted by the command-line filters; raises if nothing is left."""
    from malt.cli.options import assignments
    from malt.results.plotting import option_matches
    from malt.results.result_set import ResultSet

    rs = ResultSet.load(path)
    experiments = [unique_prefix(e, rs.specs) for e in experiments]
    if params:
        rs = rs.where((), assignments(params, "--param"))
    if diagnostics:
        rs = rs.diagnostic_view(list(diagnostics))
    if rs.empty:
        raise MaltError(f"No finished results in {path}; run `malt cv --repo {path} ...` first.")
    frame = rs.frame
    for column, chosen in (("dataset", datasets), ("task", tasks), ("algorithm", algos), ("metric", metrics),
                           ("experiment", experiments)):
        if chosen:
            unknown = sorted(set(chosen) - set(frame[column]))
            if unknown:
                known = ", ".join(sorted(map(str, rs.frame[column].unique())))
                raise MaltError(f"No results with {column} '{unknown[0]}' in {path}; it has: {known}.")
            frame = frame[frame[column].isin(chosen)]
    for item in where:
        name, eq, value = item.partition("=")
        if not eq or f"task.{name}" not in frame.columns:
            raise MaltError(f"--where expects a task option name=value, got {item!r}.")
        frame = frame[frame[f"task.{name}"].map(lambda v: option_matches(v, value))]
    if frame.empty:
        raise MaltError(f"No results in {path} match the filters.")
    kept = set(frame.experiment)
    return type(rs)(frame.reset_index(drop=True), {k: v for k, v in rs.specs.items() if k in kept},
                    rs.failed[rs.failed["experiment"].isin(kept)] if not rs.failed.empty else rs.failed,
                    rs.stale, rs._diagnostics,
                    rs.completeness[rs.completeness["experiment"].isin(kept)],
                    {k: v for k, v in rs.sessions.items() if k in kept}, rs.rescore_stale, rs.problems)


def unique_prefix(given: str, known) -> str:
    """The one id of ``known`` that ``given`` is or begins (else ``given``, for the caller's message)."""
    if given in known:
        return given
    matches = sorted(k for k in known if k.startswith(given))
    if len(matches) > 1:
        raise MaltError(f"'{given}' begins {len(matches)} experiment ids: {', '.join(matches[:8])}"
                        f"{', …' if len(matches) > 8 else ''}; give more of the id.")
    return matches[0] if matches else given


def register(main: click.Group) -> None:
    main.add_command(plot)
    main.add_command(table)
    main.add_command(report)


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=Path("figures"), show_default=True,
              help="Folder for the PNG and PDF files.")
@click.option("--error", type=click.Choice(["std", "ci"]), default="std", show_default=True,
              help="Error bars: std over folds, or a 95% Student-t interval of the mean.")
@click.option("--format", "formats", multiple=True, type=click.Choice(["png", "pdf", "svg"]),
              help="File formats (default: png and pdf).")
@click.option("--across-datasets", is_flag=True,
              help="Critical-difference diagrams of average ranks over datasets (Friedman test, then Nemenyi or "
                   "Holm), one per task, task options and metric run on two or more datasets.")
@click.option("--test", "posthoc", type=click.Choice(["nemenyi", "holm"]), default="nemenyi", show_default=True,
              help="With --across-datasets: post-hoc test, all pairs (Nemenyi) or against --control (Holm).")
@click.option("--control", metavar="SETTING", help="With --test holm: the control (default: the best-ranked).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="With --across-datasets: significance level.")
@_filters
def plot(path, out, error, formats, across_datasets, posthoc, control, alpha, **filters):
    """Figures of every experiment family and metric in PATH (a repository or a folder of repositories).

    A swept task option gives a line plot over it, a single experiment a bar chart (and a line
    plot over any algorithm parameter swept over three or more values). Reference baselines are
    drawn as dashed lines, so they never set the scale of the others.

    \b
    Examples:
      malt plot results/
      malt plot results/ --metric one_error --format svg --out figs
      malt plot results/ --across-datasets --test holm
    """
    from malt.results.plotting import plot_all

    rs = load_filtered(path, **filters)
    if across_datasets:
        from malt.results.cd_diagram import plot_across_datasets

        outputs = plot_across_datasets(rs, out, metrics=list(filters["metrics"]) or None,
                                       formats=tuple(formats) or ("png", "pdf"), test=posthoc, control=control,
                                       alpha=alpha)
        for item in outputs:
            click.echo(str(item.paths[0]))
        click.echo(f"{len(outputs)} critical-difference diagram(s) written to {out}", err=True)
        return
    outputs = plot_all(rs, out, error=error, formats=tuple(formats) or ("png", "pdf"),
                       progress=figure_progress(f"plot {out}", filters["quiet"]))
    for item in outputs:
        click.echo(str(item.paths[0]))
    click.echo(f"{len(outputs)} figure(s) written to {out}", err=True)


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["markdown", "latex", "csv", "html"]), default="markdown",
              show_default=True, help="Markdown, LaTeX (booktabs), tidy CSV (one line per cell) or HTML.")
@click.option("--out", type=click.Path(path_type=Path), help="Write to this file instead of stdout.")
@click.option("--across-datasets", is_flag=True,
              help="Datasets × algorithms per metric (experiments with the same task options on several datasets).")
@click.option("--combine", "combine", metavar="OPTION",
              help="Put experiments that differ only in this task option side by side (e.g. discard: Table 4.7).")
@click.option("--ranks", is_flag=True,
              help="Average rank per algorithm setting over datasets, Friedman test and Nemenyi CD in the caption.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, help="With --ranks: significance level.")
@click.option("--control", metavar="SETTING", help="With --ranks: Holm's control (default: the best-ranked).")
@_filters
def table(path, fmt, out, across_datasets, combine, ranks, alpha, control, **filters):
    """'mean ± std' tables, best mean in bold, ties with the best marked (corrected resampled t-test).

    Percent metrics are in percent; a LaTeX table with more algorithm settings than metrics is
    transposed (settings as rows) so it fits a page.

    \b
    Examples:
      malt table results/
      malt table results/ --format latex --out tables.tex
      malt table results/ --ranks
    """
    import pandas as pd

    from malt.results.tables import all_tables, combined_tables, dataset_tables, rank_tables

    metrics = list(filters["metrics"]) or None
    rs = load_filtered(path, **filters)
    if ranks:
        tables = rank_tables(rs, metrics, alpha, control)
        if not tables:
            raise MaltError("--ranks needs experiments with the same task and task options on two or more datasets, "
                            "each with at least two algorithm settings; none match.")
    elif across_datasets:
        tables = dataset_tables(rs, metrics)
        if not tables:
            raise MaltError("--across-datasets needs experiments with the same task options on two or more "
                            "datasets (and no swept setting); none match.")
    elif combine:
        tables = combined_tables(rs, combine, metrics)
        if not tables:
            raise MaltError(f"--combine {combine}: no experiments in {path} share everything but the task option "
                            f"'{combine}'.")
    else:
        tables = [t for _, group in all_tables(rs, metrics) for t in group]
    if fmt == "csv":
        text = pd.concat([t.to_frame() for t in tables], ignore_index=True).to_csv(index=False)
    else:
        text = "\n".join(t.render(fmt) for t in tables)
    if out:
        from malt.results.outputs import output_file, write

        write(output_file(out), text)
        click.echo(f"{len(tables)} table(s) written to {out}", err=True)
    else:
        click.echo(text, nl=False)


@click.command()
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=Path("report"), show_default=True,
              help="Folder for report.md, report.html and the figures.")
@click.option("--error", type=click.Choice(["std", "ci"]), default="std", show_default=True,
              help="Error bars and ±: std over folds, or a 95% Student-t interval of the mean.")
@click.option("--open", "open_page", is_flag=True, help="Open report.html in the default browser.")
@_filters
def report(path, out, error, open_page, **filters):
    """One markdown page and one self-contained HTML page (navigation, sortable tables, figures, provenance,
    published numbers, critical-difference diagrams).

    \b
    Example:
      malt report results/ --open
    """
    from malt.results.report import write_report

    rs = load_filtered(path, **filters)
    md, page = write_report(rs, out, source=str(path), error=error, metrics=list(filters["metrics"]) or None,
                            progress=figure_progress(f"report {out}: figures", filters["quiet"]))
    click.echo(str(md))
    click.echo(str(page))
    if open_page:
        import webbrowser

        webbrowser.open(page.resolve().as_uri())
