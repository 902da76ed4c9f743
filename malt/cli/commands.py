"""The `malt` command line: a thin layer over `malt.api`, so the CLI and Python never disagree.

Every command takes --repo (default: $MALT_REPO or ./results). A user error prints one line on
stderr and exits with status 2, leaving the repository as it was; a run in which units failed
exits with status 1 after saying which and why.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import click

from malt.cli.data import register as register_data_commands
from malt.cli.figures import register as register_figure_commands
from malt.cli.options import (assignments, checked_repo_path, duration_seconds, given_twice, open_repo, print_table,
                              repo_option, run_options, wait_option)
from malt.errors import InvalidParameterError, MaltError


class MaltGroup(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except MaltError as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("\ninterrupted: finished units are stored; `malt rerun` completes the rest.", err=True)
            sys.exit(130)
        except OSError as err:  # a file system fault outside the repository's own handling (outputs, inputs)
            from malt.repository.files import describe_os_error

            where = f"{err.filename}: " if getattr(err, "filename", None) else ""
            click.echo(f"error: {where}{describe_os_error(err)}. Nothing already committed was changed.", err=True)
            sys.exit(2)


@click.group(cls=MaltGroup)
@click.version_option(package_name="malt")
def main():
    """malt: cross-validated experiments on matrices whose rows and columns depend on each other.

    Every command takes --repo PATH (default: ./results, or $MALT_REPO); `malt COMMAND --help`
    describes one command and shows an example.

    \b
    Example (a first result):
      malt cv --algo mllr --algo mlsvm --dataset synthetic-multilabel
      malt results
      malt show EXPERIMENT
    """


# ---- cv / run / rerun / rescore ---------------------------------------------------------------------
def task_option_help(helps: dict[str, str]) -> str:
    """The help of a task option flag from each declaring task's own words (task -> help): one text
    when they agree, else each task's meaning after its name, so no task's words describe another's."""
    texts = set(helps.values())
    if len(texts) == 1:
        return f"Task option ({', '.join(sorted(helps))}): {texts.pop()}."
    return "Task option. " + "; ".join(f"{task}: {text}" for task, text in sorted(helps.items())) + "."


def task_option_flags(func):
    """One --NAME flag per option any task declares (help from the declarations; the chosen task
    parses and validates the value)."""
    from malt.tasks import tasks

    helps: dict[str, dict[str, str]] = {}
    flags: set[str] = set()
    for task in tasks().values():
        for row in task.Params.describe():
            helps.setdefault(row["name"], {})[task.name] = row["help"]
            if row["type"] == "bool":
                flags.add(row["name"])
    for name, by_task in sorted(helps.items(), reverse=True):
        flag = "--" + name.replace("_", "-")
        if name in flags:
            decorator = click.option(f"{flag}/--no-{name.replace('_', '-')}", f"opt_{name}", default=None,
                                     help=task_option_help(by_task))
        else:
            decorator = click.option(flag, f"opt_{name}", metavar="VALUE", multiple=True,
                                     help=task_option_help(by_task))
        func = decorator(func)
    return func


def _task_flags(kwargs: dict, options: dict[str, str]) -> dict[str, str]:
    """The --NAME task flags given, merged into ``options`` (from --task-param); a name given twice with
    different values is an error, never a silent last-one-wins."""
    out = dict(options)
    for key, given in kwargs.items():
        if not key.startswith("opt_") or given is None:
            continue
        name = key[4:]
        for value in given if isinstance(given, tuple) else (given,):
            value = str(value).lower() if isinstance(value, bool) else value
            if name in out and out[name] != value:
                raise InvalidParameterError(given_twice(name, out[name], value, "task"))
            out[name] = value
    return out


def _report(run, quiet: bool) -> None:
    for line in getattr(run, "refused", []):
        click.echo(f"warning: {line}", err=True)
    text = f"{run.ran} unit(s) run, {run.stored} already stored"
    if run.rescored:
        text += f", {run.rescored} scored from stored predictions"
    click.echo(text + (f", {run.failed} failed" if run.failed else ""), err=True)
    if run.failures:
        kinds = Counter(error.splitlines()[0][:300] if error else "unknown error" for _, _, error in run.failures)
        for error, count in kinds.most_common():
            where = sorted({f"{d} fold {f}" for d, f, e in run.failures if (e or "").startswith(error)})
            click.echo(f"  {count} unit(s) failed: {error} ({', '.join(where[:3])}{', …' if len(where) > 3 else ''})",
                       err=True)
        click.echo(f"  see `malt show {run.experiment} --failed`; `malt rerun` retries them", err=True)
    _echo_warnings(getattr(run, "warnings", []))
    click.echo(run.experiment)


def _echo_warnings(warnings) -> None:
    """One stderr line per kind of the warnings units stored, with how many units and where."""
    for message, where in _grouped(warnings):
        click.echo(f"warning: {len(where)} unit(s): {message} ({', '.join(where[:3])}{', …' if len(where) > 3 else ''}; "
                   f"each unit's record keeps its whole message)", err=True)


def _grouped(warnings) -> list[tuple[str, list[str]]]:
    """(a kind of message, where it was raised) for ``warnings`` ((display, fold, message) triples), the most
    frequent first. The kind is the message's first line up to its first parenthesis, where messages carry
    their unit's own numbers ("icca: the chain has not mixed after 20 sweeps (log_likelihood R̂ 1.94 …")."""
    where: dict[str, list[str]] = {}
    for display, fold, message in warnings:
        kind = str(message).splitlines()[0].split(" (")[0][:300] if message else ""
        where.setdefault(kind, []).append(f"{display} fold {fold}")
    return sorted(where.items(), key=lambda item: -len(item[1]))


@main.command()
@click.option("--algo", "algo_names", multiple=True, required=True, help="Algorithm name (repeatable).")
@click.option("--dataset", "dataset_ref", required=True, help="Named dataset, imported name or file path.")
@click.option("--task", "task_name", help="multilabel, missing, semisupervised, topics, ratings, recovery (inferred if omitted; `malt tasks` lists them).")
@click.option("--task-param", "task_params", multiple=True, help="Task option name=value (or use its --NAME flag).")
@click.option("--param", "params", multiple=True, help="Algorithm parameter name=value; a,b,c sweeps "
                                                       "(a list-valued parameter: x=1,2;3,4 sweeps two lists).")
@click.option("--labels", help="For a file path dataset: MULAN XML file or number of label columns.")
@run_options
@click.option("--no-cache", "no_cache", is_flag=True,
              help="Share no neighbour graphs or eigenbases between units, so each unit's recorded seconds are its "
                   "whole cost (timing studies).")
@task_option_flags
@repo_option
def cv(algo_names, dataset_ref, task_name, task_params, params, labels, jobs, threads, scheduler, wait, quiet,
       unit_timeout, no_cache, repo_path, **flags):
    """Cross-validate algorithms on a dataset; stored units are never recomputed.

    Prints the experiment id on stdout (progress goes to stderr). Running it again with another
    --algo adds that algorithm to the same experiment; nothing already stored reruns. Task options
    (`malt tasks` lists them) are flags: --missing 0.3, --folds 10, ...

    \b
    Examples:
      malt cv --algo mllr --algo mlsvm --dataset synthetic-multilabel
      malt cv --algo column-mean --dataset emotions --task missing --missing 0.2
      malt cv --algo mllr --dataset emotions --param select=none --param C=0.1,1,10
    """
    from malt import api

    options = _task_flags(flags, assignments(task_params, "--task-param"))
    run = api.cv(algo_names, dataset_ref, task=task_name, params=assignments(params, "--param"), repo=repo_path,
                 labels=labels, jobs=jobs, scheduler=scheduler, threads=threads, wait=wait, quiet=quiet,
                 cache=not no_cache, unit_timeout=duration_seconds(unit_timeout), **options)
    _report(run, quiet)
    if run.failed:
        sys.exit(1)


def _file_format_help(func):
    from malt.cli.experiment_files import FORMAT

    func.__doc__ = func.__doc__.replace("FORMAT", FORMAT.replace("\n", "\n    "))
    return func


@main.command("run")
@click.argument("file", type=click.Path(path_type=Path))
@run_options
@click.option("--repo", "repo_path", type=click.Path(), envvar="MALT_REPO", callback=checked_repo_path,
              help="Repository folder (default: the file's `repo`, else ./results, or $MALT_REPO).")
@_file_format_help
def run_file(file, jobs, threads, scheduler, wait, quiet, unit_timeout, repo_path):
    """Run every experiment an experiment file (TOML) describes; prints the experiment ids.

    Every block is checked before anything runs; each experiment then runs through the same engine
    as `malt cv`, so a second `malt run FILE` only computes what is missing.

    FORMAT

    \b
    Example (examples/experiments.toml in the source tree):
      malt run examples/experiments.toml
    """
    from malt.cli.experiment_files import run_experiment_file

    failed = 0
    for run in run_experiment_file(file, repo=repo_path, jobs=jobs, threads=threads, scheduler=scheduler,
                                   wait=wait, quiet=quiet, unit_timeout=duration_seconds(unit_timeout)):
        _report(run, quiet)
        failed += run.failed
    if failed:
        sys.exit(1)


@main.command()
@click.option("--experiment", "experiment_ids", multiple=True, help="Experiment id (default: all).")
@click.option("--algo", "algo_names", multiple=True, help="Recompute every unit of these algorithms.")
@run_options
@repo_option
def rerun(experiment_ids, algo_names, jobs, threads, scheduler, wait, quiet, unit_timeout, repo_path):
    """Finish what an interruption left (and retry failed units); with --algo, recompute those.

    \b
    Examples:
      malt rerun
      malt rerun --algo mllr --experiment EXPERIMENT
    """
    from malt import api

    broken = []

    def skip(exp, err):
        broken.append(exp)
        click.echo(f"error: {exp}: {err} (skipped; the other experiments continue)", err=True)

    runs = api.rerun(repo_path, experiments=experiment_ids, algorithms=algo_names, jobs=jobs, threads=threads,
                     scheduler=scheduler, wait=wait, quiet=quiet, unit_timeout=duration_seconds(unit_timeout),
                     on_error=skip)
    for run in runs:
        _report(run, quiet)
    if not runs and not broken:
        click.echo("nothing to rerun", err=True)
    if broken:
        sys.exit(2)
    if any(run.failed for run in runs):
        sys.exit(1)


@main.command()
@click.option("--experiment", "experiment_ids", multiple=True, help="Experiment id (default: all).")
@click.option("--metric", "metrics", multiple=True, help="Only these metrics (default: every declared metric).")
@wait_option
@repo_option
def rescore(experiment_ids, metrics, wait, repo_path):
    """Recompute metrics from stored predictions (no model is refit).

    \b
    Example:
      malt rescore --metric one_error
    """
    from malt import api

    broken = []

    def skip(exp, err):
        broken.append(exp)
        click.echo(f"error: {exp}: {err} (skipped)", err=True)

    for done in api.rescore(repo_path, experiments=experiment_ids, metrics=metrics, wait=wait, on_error=skip):
        for line in done.problems:
            click.echo(f"warning: {line}", err=True)
        click.echo(f"{done.experiment}: {done.rescored} unit(s) rescored")
        if done.without_predictions:
            click.echo(f"{done.experiment}: {done.without_predictions} unit(s) have no usable stored predictions "
                       f"(written by an older malt, or damaged); `malt rerun --algo NAME --experiment "
                       f"{done.experiment}` refits them", err=True)
    if broken:
        sys.exit(2)


@main.command()
@click.option("--experiment", "experiment_id", help="Only this experiment (default: the whole repository).")
@wait_option
@repo_option
def repair(experiment_id, wait, repo_path):
    """Check every stored file; drop damaged parts (then `malt rerun` recomputes what they held).

    \b
    Example:
      malt repair && malt rerun
    """
    from malt.engine.repair import repair as run_repair

    repo = open_repo(repo_path).check_readable(for_repair=True)
    lines = run_repair(repo, repo.resolve(experiment_id) if experiment_id else None, wait=wait)
    for line in lines:
        click.echo(line)
    if not lines:
        click.echo("everything verified; nothing to repair")


# ---- results -------------------------------------------------------------------------------
@main.command()
@click.argument("experiment_id")
@click.option("--algo", "algo_names", multiple=True, help="Only the settings of this algorithm (repeatable).")
@click.option("--param", "params", multiple=True,
              help="Only the settings whose parameter has this value, name=value (repeatable).")
@wait_option
@repo_option
def forget(experiment_id, algo_names, params, wait, repo_path):
    """Remove a mistaken setting, algorithm or whole experiment.

    With --algo and/or --param, the matching settings of EXPERIMENT_ID (an id or its unambiguous
    beginning) leave its plan and their units stop counting; with neither, the whole experiment moves
    to REPO/forgotten/ (move it back to undo). Recorded in the experiment's provenance; everything
    else stays as it was.

    \b
    Examples:
      malt forget emotions-multilabel-1a2b3c4d --algo mllr --param C=10
      malt forget emot --algo mlsvm
      malt forget emot
    """
    from malt import api

    done = api.forget(experiment_id, repo_path, algorithms=algo_names, params=assignments(params, "--param"),
                      wait=wait)
    click.echo(f"{done.experiment}: forgot {', '.join(done.settings)} ({done.units} unit record(s))"
               + (f"; its folder is now {done.moved_to}" if done.moved_to else ""))


@main.command()
@repo_option
def results(repo_path):
    """Experiments in the repository with their algorithms and completeness.

    \b
    Example:
      malt results --repo demo-results
    """
    from malt.results.result_set import ResultSet

    repo = open_repo(repo_path).check_readable()
    problems: list[str] = []
    rs = ResultSet.from_repository(repo, problems=problems)
    rows = []
    done = rs.completeness.groupby("experiment")[["planned", "done", "failed"]].sum() \
        if not rs.completeness.empty else None
    for exp, spec in rs.specs.items():
        algos = sorted({item["algorithm"] for item in spec.get("plan", [])})
        defaults = {}
        try:
            from malt.tasks import get_task

            defaults = get_task(spec["task"]).defaults()
        except MaltError:
            pass
        options = ",".join(f"{k}={v}" for k, v in spec.get("task_params", {}).items() if defaults.get(k) != v)
        counts = done.loc[exp] if done is not None and exp in done.index else {"planned": 0, "done": 0, "failed": 0}
        text = f"{int(counts['done'])}/{int(counts['planned'])}"
        if counts["failed"]:
            text += f" ({int(counts['failed'])} failed)"
        rows.append((exp, spec["dataset"], spec["task"], options or "defaults", " ".join(algos), text))
    print_table(["experiment", "dataset", "task", "options", "algorithms", "units done"], rows)
    for line in problems:
        click.echo(f"warning: {line}", err=True)


@main.command()
@click.argument("experiment_id")
@click.option("--algo", "algo_names", multiple=True, help="Only the settings of this algorithm (repeatable).")
@click.option("--param", "params", multiple=True,
              help="Only the settings whose parameter has this value, name=value (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True,
              help="An aligned table for reading, or CSV / JSON records for scripts.")
@click.option("--raw", is_flag=True, help="The tidy per-fold table instead of the summary.")
@click.option("--diagnostics", is_flag=True,
              help="What the runs learned about themselves (iterations, final bound, inferred dimensions, "
                   "fit seconds) instead of the metrics.")
@click.option("--failed", "show_failed", is_flag=True, help="The failed units with their errors.")
@click.option("--traceback", "tracebacks", is_flag=True, help="The failed units with their tracebacks (implies --failed).")
@click.option("--provenance", is_flag=True, help="Code revision, library versions, host and times of each run.")
@repo_option
def show(experiment_id, algo_names, params, fmt, raw, diagnostics, show_failed, tracebacks, provenance, repo_path):
    """Mean ± std per algorithm and metric of one experiment (with the folds each rests on).

    Percent metrics are shown in percent (the metric's unit says so), as everywhere in malt.
    EXPERIMENT_ID may be any unambiguous beginning of the id.

    \b
    Examples:
      malt show EXPERIMENT
      malt show emot --param C=0.1
      malt show EXPERIMENT --format csv --raw
      malt show EXPERIMENT --failed --traceback
    """
    from malt.results.result_set import ResultSet

    repo = open_repo(repo_path).check_readable()
    experiment_id = repo.resolve(experiment_id)
    problems: list[str] = []
    rs = ResultSet.from_repository(repo, [experiment_id], problems)
    if algo_names or params:
        rs = rs.where(algo_names, assignments(params, "--param"))
    for line in problems:
        click.echo(f"warning: {line}", err=True)
    if provenance:
        _show_provenance(rs, experiment_id, fmt)
        return
    if show_failed or tracebacks:
        frame = rs.failed if not rs.failed.empty else None
        if frame is None:
            click.echo("(no failed units)")
            return
        frame = frame[["display", "fold", "error", *(["traceback"] if tracebacks else [])]].sort_values(
            ["display", "fold"])
        if tracebacks and fmt == "table":
            for row in frame.itertuples():
                click.echo(f"--- {row.display} fold {row.fold}: {row.error}")
                click.echo((row.traceback or "(no traceback recorded)").rstrip())
            return
        click.echo(frame.to_csv(index=False) if fmt == "csv" else frame.to_json(orient="records") if fmt == "json"
                   else frame.to_string(index=False))
        return
    notices = rs.notices(experiment_id) if diagnostics and fmt == "table" else []
    if diagnostics:
        frame = rs.diagnostics if raw or fmt != "table" else rs.diagnostics_wide(experiment_id)
    elif raw:
        frame = rs.frame
    elif fmt == "table":
        frame = rs.wide(experiment_id)
    else:
        frame = rs.summary()
    if fmt == "csv":
        click.echo(frame.to_csv(index=raw is False and fmt == "table"))
    elif fmt == "json":
        click.echo(frame.to_json(orient="records"))
    else:
        click.echo(frame.to_string() if not frame.empty else "(no finished units)")
        for line in notices:  # values the units ran with other than the setting's (clamped to the data)
            click.echo(f"notice: {line}")
        if not diagnostics and not raw and not frame.empty:  # which decision rule produced the bipartition rows
            from malt.results.describe import decision_note  # not tables: show imports no scipy.stats
            note = decision_note(rs, rs.specs.get(experiment_id, {}).get("task"), [experiment_id],
                                 list(rs.frame["metric"].unique()))
            if note:
                click.echo(note.strip())
    incomplete = rs.completeness[rs.completeness["done"] < rs.completeness["planned"]]
    if not incomplete.empty and fmt == "table":
        click.echo(f"({len(incomplete)} setting(s) have fewer finished folds than planned; `malt rerun` "
                   "completes them)", err=True)
    if rs.stale:
        click.echo(f"({rs.stale} unit(s) of other algorithm versions left out; `malt rerun --algo NAME "
                   f"--experiment {experiment_id}` recomputes them)", err=True)
    if rs.rescore_stale:
        click.echo(f"({rs.rescore_stale} value(s) computed under an older definition of their metric left out; "
                   f"`malt rescore --experiment {experiment_id}` updates them)", err=True)
    if not rs.failed.empty and fmt == "table":
        click.echo(f"({len(rs.failed)} failed unit(s); `malt show {experiment_id} --failed` lists them)", err=True)
    if fmt == "table":  # a number from a chain that has not mixed is shown with the reason to doubt it
        _echo_warnings(rs.warnings(experiment_id))


def _show_provenance(rs, experiment_id: str, fmt: str) -> None:
    sessions = rs.provenance(experiment_id)
    if fmt == "json":
        click.echo(json.dumps(sessions, indent=1, default=str))
        return
    spec = rs.specs.get(experiment_id, {})
    click.echo(f"experiment {experiment_id}: {spec.get('dataset')} ({spec.get('dataset_hash', '')[:16]}), "
               f"task {spec.get('task')} v{spec.get('task_version')}, source {json.dumps(spec.get('source'))}")
    if not sessions:
        click.echo("(no run sessions recorded: written by an older malt)")
    import time

    for s in sessions:
        if s.get("type") == "forget":
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.get("ended", 0)))
            click.echo(f"- forget {s.get('session')}: {when} on {s.get('host')}: {', '.join(s.get('forgot', []))} "
                       f"({s.get('units', 0)} unit(s))\n  command: {s.get('command')}")
            continue
        start = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.get("started", 0)))
        end = time.strftime("%H:%M:%S", time.localtime(s["ended"])) if s.get("ended") else "unfinished"
        revision = s.get("git_revision")
        code = f"git {revision[:12]}{' (dirty)' if s.get('git_dirty') else ''}" if revision else "installed package"
        versions = ", ".join(f"{k} {v}" for k, v in s.get("versions", {}).items())
        blas = ", ".join(f"{b.get('internal_api')} {b.get('version')}" for b in s.get("blas", []))
        click.echo(f"- session {s.get('session')}: {start} – {end} on {s.get('host')} ({s.get('platform')})\n"
                   f"  code: {code}; python {s.get('python')}; {versions}\n"
                   f"  BLAS: {blas or 'unknown'}; threads {s.get('threads')}, jobs {s.get('jobs')}\n"
                   f"  command: {s.get('command')}")


register_data_commands(main)
register_figure_commands(main)
