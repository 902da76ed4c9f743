"""The `malt` command line.

Every command takes --repo (default: $MALT_REPO or ./results). A user error prints one line on
stderr and exits with status 2, leaving the repository as it was.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from malt.errors import MaltError, InvalidParameterError


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


repo_option = click.option("--repo", "repo_path", type=click.Path(path_type=Path), envvar="MALT_REPO",
                           default=Path("results"), show_default=True, help="Repository folder (or $MALT_REPO).")


def _repo(path: Path):
    from malt.repository.store import Repository

    return Repository(path)


def _assignments(items: tuple[str, ...], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise InvalidParameterError(f"{flag} expects name=value, got {item!r}.")
        out[name.strip()] = value.strip()
    return out


@click.group(cls=MaltGroup)
@click.version_option(package_name="malt")
def main():
    """malt: cross-validated experiments on matrices whose rows and columns depend on each other."""


# ---- datasets ------------------------------------------------------------------------------
@main.group(invoke_without_command=True)
@repo_option
@click.pass_context
def datasets(ctx, repo_path):
    """List named datasets (or use a subcommand: show, import, fetch)."""
    if ctx.invoked_subcommand is not None:
        return
    from malt.datasets.catalogue import DataRoots, available, catalogue

    roots = DataRoots.default(repo_path)
    rows = [(e.name, e.group, e.shape, "yes" if available(e, roots) else "no (malt datasets fetch)"
             if e.remotes else "no", e.description) for e in catalogue().values()]
    repo = _repo(repo_path)
    if repo.exists:
        rows += [(n, "imported", "", "yes", f"imported into {repo_path}") for n in repo.imported()]
    _print_table(["name", "group", "shape", "available", "description"], rows)
    if not roots.roots or not any(r.exists() for r in roots.roots):
        click.echo("\nMALT_DATA is not set: only bundled and synthetic datasets are available. "
                   "Point MALT_DATA at a folder laid out like shared/datasets, or `malt datasets fetch NAME`.")


@datasets.command("show")
@click.argument("name")
@repo_option
def datasets_show(name, repo_path):
    """Components, shapes, label cardinality and content hash of a dataset."""
    from malt.data import open_dataset

    dataset = open_dataset(name, _repo(repo_path))
    for key, value in dataset.describe().items():
        click.echo(f"{key:>20}: {value}")
    for key in ("label_names", "class_names"):
        if dataset.meta.get(key):
            click.echo(f"{key:>20}: {', '.join(map(str, dataset.meta[key]))[:200]}")


@datasets.command("import")
@click.argument("name")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--labels", help="MULAN XML file, N (last N columns are labels), 'last' or a column name.")
@click.option("--impute", type=click.Choice(["none", "mean"]), default="none", show_default=True,
              help="How to fill missing feature values.")
@repo_option
def datasets_import(name, file, labels, impute, repo_path):
    """Import a user's ARFF or CSV file into the repository under NAME."""
    from malt.data import load_file
    from malt.datasets.catalogue import catalogue

    if name in catalogue():
        raise MaltError(f"'{name}' is a named dataset of malt's catalogue; choose another name.")
    if impute == "mean" and ".arff" not in file.name.lower():
        from malt.datasets.delimited import load_delimited

        dataset = load_delimited(file, name=name, labels=labels, impute="mean")
    else:
        dataset = load_file(file, labels=labels, name=name)
    repo = _repo(repo_path)
    repo.lock()
    with repo:
        path = repo.save_dataset(dataset)
    click.echo(f"imported {name} ({dataset.n_rows} rows, hash {dataset.hash[:16]}) into {path}")


@datasets.command("fetch")
@click.argument("name")
@click.option("--mirror", help="Base URL to download from instead of the canonical sources.")
@repo_option
def datasets_fetch(name, mirror, repo_path):
    """Download a named dataset from its public source into REPO/data/, checking sha256 sums."""
    from malt.datasets.catalogue import entry
    from malt.datasets.fetch import fetch

    item = entry(name)
    repo = _repo(repo_path)
    repo.lock()
    with repo:
        for path in fetch(item, repo.path / "data", mirror=mirror):
            click.echo(f"fetched {path}")


# ---- algorithms ----------------------------------------------------------------------------
@main.command()
@click.argument("name", required=False)
@click.option("--broken", is_flag=True, help="Show algorithm modules that failed to import.")
def algorithms(name, broken):
    """List registered algorithms with their tasks and parameters."""
    from malt import registry

    if broken:
        for module, tb in registry.broken().items():
            click.echo(f"== {module}\n{tb}")
        return
    found = registry.algorithms()
    chosen = [registry.get(name)] if name else found.values()
    for algo in chosen:
        click.echo(f"{algo.name:<14} [{', '.join(sorted(algo.tasks))}] {algo.summary()}")
        for row in algo.Params.describe():
            allowed = f" {row['allowed']}" if row["allowed"] else ""
            click.echo(f"    {row['name']}={row['default']!r} ({row['type']}{allowed}) {row['help']}")
    if registry.broken():
        click.echo(f"\n{len(registry.broken())} algorithm module(s) failed to import: `malt algorithms --broken`.",
                   err=True)


@main.command()
def tasks():
    """List the cross-validation protocols and their options."""
    from malt.tasks import tasks as all_tasks

    for name, cls in all_tasks().items():
        click.echo(f"{name:<14} {(cls.__doc__ or '').strip().splitlines()[0] if cls.__doc__ else ''}")
        for row in cls.Params.describe():
            click.echo(f"    {row['name']}={row['default']!r} ({row['type']} {row['allowed']}) {row['help']}")


# ---- cv / rerun ------------------------------------------------------------------------------
def _default_task(algos, dataset) -> str:
    common = set.intersection(*(set(a.tasks) for a in algos))
    if len(common) == 1:
        return next(iter(common))
    for component, task in (("Y", "multilabel"), ("y", "semisupervised"), ("docs", "topics"),
                            ("ratings", "ratings"), ("M", "missing")):
        if component in dataset and task in common:
            return task
    raise MaltError(f"Cannot tell which task to run; pass --task (one of {', '.join(sorted(common)) or 'none'}).")


def _task_params(task, options: dict[str, str]):
    names = set(task.Params.names())
    unknown = [k for k in options if k not in names]
    if unknown:
        raise InvalidParameterError(f"The {task.name} task has no option '{unknown[0]}'; its options are: "
                                    f"{', '.join(sorted(names))}. See `malt tasks`.")
    return task.Params.from_strings(options)


def _algo_grid(algos, assignments: dict[str, str]):
    from malt.params import grid

    used = set()
    entries = []
    for algo in algos:
        mine = {k: v for k, v in assignments.items() if k in algo.Params.names()}
        used |= set(mine)
        entries += [(algo, p) for p in grid(algo.Params, mine)]
    unused = set(assignments) - used
    if unused:
        name = sorted(unused)[0]
        raise InvalidParameterError(f"No chosen algorithm has a parameter '{name}' "
                                    f"({', '.join(a.name for a in algos)}); see `malt algorithms NAME`.")
    return entries


@main.command()
@click.option("--algo", "algo_names", multiple=True, required=True, help="Algorithm name (repeatable).")
@click.option("--dataset", "dataset_ref", required=True, help="Named dataset, imported name or file path.")
@click.option("--task", "task_name", help="multilabel, missing, semisupervised, topics, ratings (inferred if omitted).")
@click.option("--missing", type=float, help="Task option: fraction of entries hidden.")
@click.option("--labeled", type=int, help="Task option: number of labelled training points.")
@click.option("--discard", is_flag=True, default=None, help="Task option: drop partially labelled rows.")
@click.option("--folds", type=int, help="Task option: number of folds.")
@click.option("--seed", type=int, help="Task option: seed of folds and hidden entries.")
@click.option("--task-param", "task_params", multiple=True, help="Other task option, name=value.")
@click.option("--param", "params", multiple=True, help="Algorithm parameter name=value; a,b,c sweeps.")
@click.option("--labels", help="For a file path dataset: MULAN XML file or number of label columns.")
@click.option("--jobs", type=int, default=1, show_default=True, help="Local worker processes.")
@click.option("--scheduler", help="Dask scheduler address tcp://HOST:PORT.")
@click.option("--wait", is_flag=True, help="Wait for a repository lock instead of failing.")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
@repo_option
def cv(algo_names, dataset_ref, task_name, missing, labeled, discard, folds, seed, task_params, params, labels,
       jobs, scheduler, wait, quiet, repo_path):
    """Cross-validate algorithms on a dataset; stored units are never recomputed."""
    from malt import engine, registry
    from malt.data import open_dataset
    from malt.tasks import get_task

    if jobs < 1:
        raise InvalidParameterError(f"--jobs must be at least 1, got {jobs}.")
    repo = _repo(repo_path)
    repo.check_writable_target()
    algos = [registry.get(n) for n in dict.fromkeys(algo_names)]
    dataset = open_dataset(dataset_ref, repo, labels=labels)
    task = get_task(task_name) if task_name else get_task(_default_task(algos, dataset))
    for algo in algos:
        registry.check_task(algo, task.name)
    options = _assignments(task_params, "--task-param")
    for flag, value in (("missing", missing), ("labeled", labeled), ("discard", discard), ("folds", folds),
                        ("seed", seed)):
        if value is not None:
            if flag not in task.Params.names():
                raise InvalidParameterError(f"--{flag} is not an option of the {task.name} task.")
            options[flag] = str(value)
    tparams = _task_params(task, options)
    task.check(dataset, tparams)
    entries = _algo_grid(algos, _assignments(params, "--param"))
    exp = engine.experiment_id(dataset.name, dataset.hash, task, tparams)
    plan = engine.Plan(exp, dataset, dataset_ref, task, tparams, entries)
    repo.lock(wait=wait)
    with repo:
        counts = engine.execute(repo, plan, jobs=jobs, scheduler=scheduler, quiet=quiet)
    _report(counts, exp)


def _report(counts, exp):
    click.echo(f"{counts['ran']} unit(s) run, {counts['stored']} already stored"
               + (f", {counts['failed']} failed (see `malt show {exp}`; `malt rerun` retries)" if counts["failed"]
                  else ""), err=True)
    click.echo(exp)


@main.command()
@click.option("--experiment", "experiment_ids", multiple=True, help="Experiment id (default: all).")
@click.option("--algo", "algo_names", multiple=True, help="Recompute every unit of these algorithms.")
@click.option("--jobs", type=int, default=1, show_default=True)
@click.option("--scheduler", help="Dask scheduler address tcp://HOST:PORT.")
@click.option("--wait", is_flag=True, help="Wait for a repository lock instead of failing.")
@click.option("--quiet", is_flag=True)
@repo_option
def rerun(experiment_ids, algo_names, jobs, scheduler, wait, quiet, repo_path):
    """Finish what an interruption left (and retry failed units); with --algo, recompute those."""
    from malt import engine, registry
    from malt.data import open_dataset
    from malt.errors import DataError
    from malt.tasks import get_task

    repo = _repo(repo_path).check_readable()
    chosen = list(experiment_ids) or repo.experiments()
    specs = {exp: repo.read_spec(exp) for exp in chosen}
    for name in algo_names:
        registry.get(name)
    plans = []
    for exp, spec in specs.items():
        dataset = open_dataset(spec["dataset_ref"], repo)
        if dataset.hash != spec["dataset_hash"]:
            raise DataError(f"Dataset '{spec['dataset_ref']}' changed since experiment {exp} was run; its results "
                            "belong to the old data. Start a new experiment with `malt cv`.")
        task = get_task(spec["task"])
        tparams = task.Params.from_dict(spec["task_params"])
        entries = []
        for item in spec["plan"]:
            if algo_names and item["algorithm"] not in algo_names:
                continue
            algo = registry.get(item["algorithm"])
            entries.append((algo, algo.Params.from_dict(item["params"])))
        if entries:
            plans.append(engine.Plan(exp, dataset, spec["dataset_ref"], task, tparams, entries))
    repo.lock(wait=wait)
    with repo:
        for plan in plans:
            counts = engine.execute(repo, plan, force=set(algo_names), jobs=jobs, scheduler=scheduler, quiet=quiet)
            _report(counts, plan.experiment)
    if not plans:
        click.echo("nothing to rerun", err=True)


@main.command()
@click.option("--experiment", "experiment_id", required=True)
@repo_option
def repair(experiment_id, repo_path):
    """Drop the damaged parts of an experiment's results (then `malt rerun` recomputes them)."""
    repo = _repo(repo_path).check_readable()
    repo.read_spec(experiment_id)
    repo.lock()
    with repo:
        problems = repo.repair(experiment_id)
    for line in problems:
        click.echo(f"dropped: {line}")
    click.echo(f"{experiment_id}: {len(problems)} damaged part(s) dropped; `malt rerun` recomputes missing units.")


# ---- results -------------------------------------------------------------------------------
@main.command()
@repo_option
def results(repo_path):
    """Experiments in the repository with their algorithms and completeness."""
    from malt import registry

    repo = _repo(repo_path).check_readable()
    rows = []
    for exp in repo.experiments():
        spec = repo.read_spec(exp)
        units = repo.units(exp)
        ok = sum(1 for r in units.values() if r["status"] == "ok")
        failed = sum(1 for r in units.values() if r["status"] != "ok")
        folds = _fold_count(spec)
        planned = len(spec["plan"]) * folds
        algos = sorted({item["algorithm"] for item in spec["plan"]})
        options = ",".join(f"{k}={v}" for k, v in spec["task_params"].items())
        rows.append((exp, spec["dataset"], spec["task"], options, " ".join(algos),
                     f"{ok}/{planned}" + (f" ({failed} failed)" if failed else "")))
    _print_table(["experiment", "dataset", "task", "options", "algorithms", "units done"], rows)


def _fold_count(spec) -> int:
    if "n_folds" in spec:  # recorded from the task since specs carry it
        return int(spec["n_folds"])
    params = spec["task_params"]
    if params.get("split") == "given":
        return int(params.get("repeats", 1))
    return int(params.get("folds", params.get("runs", 1)))


@main.command()
@click.argument("experiment_id")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option("--raw", is_flag=True, help="The tidy per-fold table instead of the summary.")
@click.option("--diagnostics", is_flag=True,
              help="What the runs learned about themselves (iterations, final bound, inferred dimensions, "
                   "fit seconds) instead of the metrics.")
@repo_option
def show(experiment_id, fmt, raw, diagnostics, repo_path):
    """Mean ± std per algorithm and metric of one experiment."""
    from malt.results import ResultSet

    repo = _repo(repo_path).check_readable()
    repo.read_spec(experiment_id)
    problems: list[str] = []
    rs = ResultSet.from_repository(repo, [experiment_id], problems)
    for line in problems:
        click.echo(f"warning: {line}", err=True)
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
    if rs.stale:
        click.echo(f"({rs.stale} unit(s) of older algorithm versions left out; `malt rerun --algo NAME "
                   f"--experiment {experiment_id}` recomputes them)", err=True)
    if not rs.failed.empty and fmt == "table":
        click.echo(f"\n{len(rs.failed)} failed unit(s):", err=True)
        for _, row in rs.failed.iterrows():
            click.echo(f"  {row['display']} fold {row['fold']}: {row['error']}", err=True)


def _print_table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip())
    for row in rows:
        click.echo("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())


from malt.cli_figures import register as _register_figure_commands  # noqa: E402  (plot, table, report)

_register_figure_commands(main)

if __name__ == "__main__":
    main()
