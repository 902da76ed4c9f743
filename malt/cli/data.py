"""`malt datasets`, `malt algorithms`, `malt tasks` and `malt cache`: what malt knows and keeps."""
from __future__ import annotations

import re
import time
from pathlib import Path

import click

from malt.cli.options import open_repo, print_table, repo_option
from malt.errors import InvalidParameterError, MaltError


def register(main: click.Group) -> None:
    @main.group(invoke_without_command=True)
    @repo_option
    @click.pass_context
    def datasets(ctx, repo_path):
        """List named datasets (or use a subcommand: show, import, fetch).

        \b
        Examples:
          MALT_DATA=/path/to/datasets malt datasets
          malt datasets show emotions
        """
        if ctx.invoked_subcommand is not None:
            return
        from malt.datasets.catalogue import DataRoots, available, catalogue

        roots = DataRoots.default(repo_path)
        rows = [(e.name, e.group, e.shape, "yes" if available(e, roots) else "no (malt datasets fetch)"
                 if e.remotes else "no", e.description) for e in catalogue().values()]
        repo = open_repo(repo_path)
        if repo.exists:
            rows += [(n, "imported", "", "yes", f"imported into {repo_path}") for n in repo.imported()]
        print_table(["name", "group", "shape", "available", "description"], rows)
        if not roots.roots or not any(r.exists() for r in roots.roots):
            click.echo("\nMALT_DATA is not set: only bundled and synthetic datasets are available. "
                       "Point MALT_DATA at a folder laid out like shared/datasets, or `malt datasets fetch NAME`.")

    @datasets.command("show")
    @click.argument("name")
    @repo_option
    def datasets_show(name, repo_path):
        """Components, shapes, label cardinality, content hash, source and citation of a dataset.

        \b
        Example:
          malt datasets show synthetic-multilabel
        """
        from malt.datasets.open import catalogue_info
        from malt.datasets.sources import open_source

        repo = open_repo(repo_path)
        dataset, source = open_source(name, repo)
        lines = dict(dataset.describe())
        for key in ("label_names", "class_names"):
            if dataset.meta.get(key):
                lines[key] = ", ".join(map(str, dataset.meta[key]))[:200]
        if source["kind"] == "catalogue":
            for key, value in (catalogue_info(source["name"], repo) or {}).items():
                lines.setdefault(key, value)  # the dataset's own 'source' line already says where it came from
        for key, value in lines.items():
            click.echo(f"{key:>20}: {value}")
        if source["kind"] == "imported":
            pointer = repo.datasets.pointer(name) or {}
            origin = pointer.get("source", {})
            click.echo(f"{'imported from':>20}: {origin.get('path', origin)}")
        elif source["kind"] != "catalogue":
            click.echo(f"{'file':>20}: {source.get('path')}")

    @datasets.command("import")
    @click.argument("name")
    @click.argument("file", type=click.Path(path_type=Path))
    @click.option("--labels", help="MULAN XML file, N (last N columns are labels), 'last' or a column name.")
    @click.option("--test", "test_file", type=click.Path(path_type=Path),
                  help="The dataset's test file (MULAN's NAME-test.arff beside FILE = NAME-train.arff): the two are "
                       "stored as one dataset with their split recorded, so `malt cv --split given` uses it.")
    @click.option("--impute", type=click.Choice(["none", "mean"]), default="none", show_default=True,
                  help="How to fill missing feature values.")
    @click.option("--force", is_flag=True, help="Point an existing name at the new content (experiments on the "
                                               "old content keep it).")
    @repo_option
    def datasets_import(name, file, labels, test_file, impute, force, repo_path):
        """Import a user's ARFF or CSV file (and, with --test, its test file) into the repository under NAME.

        \b
        Examples:
          malt datasets import mydata my.arff --labels my.xml
          malt datasets import mydata my-train.arff --test my-test.arff --labels my.xml   # --split given
          malt datasets import plants plants.csv --labels last --impute mean
        """
        from malt.datasets.open import load_file, load_file_pair
        from malt.datasets.catalogue import resolve
        from malt.repository.files import validate_name

        validate_name("dataset", name)
        if resolve(name) is not None:
            raise MaltError(f"'{name}' is a named dataset of malt's catalogue; choose another name.")
        for given in (file, test_file):
            if given is not None and given.is_dir():
                raise MaltError(f"{given} is a folder; give the ARFF or CSV file to import.")
        if test_file is None:
            dataset = load_file(file, labels=labels, name=name, impute=impute)
        else:
            dataset = load_file_pair(file, test_file, labels=labels, name=name, impute=impute)
        repo = open_repo(repo_path)
        repo.create()
        source = {"kind": "file", "path": str(file.resolve()), "labels": labels, "impute": impute}
        if test_file is not None:
            source["test"] = str(test_file.resolve())
        path = repo.datasets.save(dataset, source, force=force)
        split = (f", given split {dataset.meta['given_train']} train / {dataset.n_rows - dataset.meta['given_train']} "
                 "test" if test_file is not None else "")
        click.echo(f"imported {name} ({dataset.n_rows} rows{split}, hash {dataset.hash[:16]}) into {path}")

    @datasets.command("fetch")
    @click.argument("name")
    @click.option("--mirror", help="Base URL to download from instead of the canonical sources.")
    @repo_option
    def datasets_fetch(name, mirror, repo_path):
        """Download a named dataset from its public source into REPO/data/, checking sha256 sums.

        \b
        Example:
          malt datasets fetch emotions
        """
        from malt.datasets.catalogue import entry
        from malt.datasets.fetch import fetch

        item = entry(name)
        repo = open_repo(repo_path)
        repo.check_writable_target()
        made = not repo.path.exists()
        try:
            repo.path.mkdir(parents=True, exist_ok=True)
            paths = fetch(item, repo.path / "data", mirror=mirror)
        except BaseException:
            if made and repo.path.is_dir() and not any(repo.path.iterdir()):
                repo.path.rmdir()
            raise
        repo.create(filled_by_us=made)
        for path in paths:
            click.echo(f"fetched {path}")

    @main.command()
    @click.argument("name", required=False)
    @click.option("--task", "task_name", help="Only the algorithms that support this task (`malt tasks` lists them).")
    @click.option("--broken", is_flag=True, help="Show algorithm modules that failed to import.")
    def algorithms(name, task_name, broken):
        """List registered algorithms with their tasks and parameters (NAME: one algorithm).

        \b
        Examples:
          malt algorithms --task ratings
          malt algorithms mllr
        """
        from malt import registry

        if broken:
            for module, tb in registry.broken().items():
                click.echo(f"== {module}\n{tb}")
            return
        found = registry.algorithms()
        chosen = [registry.get(name)] if name else found.values()
        if task_name:
            from malt.tasks import get_task

            task_name = get_task(task_name).name  # an unknown task: one line with a "did you mean"
            chosen = [algo for algo in chosen if task_name in algo.tasks]
        for algo in chosen:
            click.echo(f"{algo.name:<14} [{', '.join(sorted(algo.tasks))}] {algo.summary()}")
            for row in algo.Params.describe():
                allowed = f" {row['allowed']}" if row["allowed"] else ""
                when = f" [used when {row['active_when']}]" if row["active_when"] else ""
                click.echo(f"    {row['name']}={row['default']!r} ({row['type']}{allowed}) {row['help']}{when}")
        if registry.broken():
            click.echo(f"\n{len(registry.broken())} algorithm module(s) failed to import: `malt algorithms --broken`.",
                       err=True)

    @main.command()
    @click.argument("name", required=False)
    def tasks(name):
        """List the cross-validation protocols: options (--NAME flags of `malt cv`), metrics, settings.

        \b
        Example:
          malt tasks missing
        """
        from malt.tasks import get_task, tasks as all_tasks

        chosen = [type(get_task(name))] if name else all_tasks().values()
        for cls in chosen:
            click.echo(f"{cls.name:<14} {cls.summary()}")
            roles = cls.option_roles()
            for row in cls.Params.describe():
                role = "" if roles[row["name"]] == "fitting" else f" [{roles[row['name']]}]"
                flag = "--" + row["name"].replace("_", "-")
                click.echo(f"    {flag} {row['default']!r} ({row['type']} {row['allowed']}){role} {row['help']}")
            click.echo("  metrics:")
            for m in cls.metrics:
                unit = " %" if m.percent else ""
                click.echo(f"    {m.name}: {m.label}{unit}, {m.better} is better"
                           + (f"; {m.conventions}" if m.conventions else ""))
            if cls.settings:
                click.echo("  swept settings: " + ", ".join(f"{s.name} ({s.axis_label()})" for s in cls.settings))

    @main.group(invoke_without_command=True)
    @repo_option
    @click.pass_context
    def cache(ctx, repo_path):
        """List cached artifacts (or `malt cache clear`).

        \b
        Example:
          malt cache --repo results
        """
        if ctx.invoked_subcommand is not None:
            return

        repo = open_repo(repo_path).check_readable()
        entries = repo.cache.entries()
        users = artifact_users(repo)
        rows = [(e.key[:12], e.name, e.producer, _size(e.nbytes), time.strftime("%Y-%m-%d %H:%M",
                                                                                time.localtime(e.last_used)),
                 ", ".join(sorted(users.get(e.key, ()))) or "(unused)") for e in entries]
        print_table(["key", "name", "producer", "size", "last used", "used by"], rows)
        click.echo(f"{len(entries)} artifact(s), {_size(sum(e.nbytes for e in entries))}", err=True)

    @cache.command("clear")
    @click.option("--unused", is_flag=True, help="Only artifacts no stored unit used.")
    @click.option("--older-than", "older_than", help="Only artifacts not used for this long (30d, 12h, 90m).")
    @repo_option
    def cache_clear(unused, older_than, repo_path):
        """Delete cached artifacts (safe at any time: a later run recomputes what it needs).

        \b
        Example:
          malt cache clear --older-than 30d
        """

        repo = open_repo(repo_path).check_readable()
        age = _duration(older_than) if older_than else None
        users = artifact_users(repo) if unused else {}
        removed = freed = 0
        now = time.time()
        for entry in repo.cache.entries():
            if unused and users.get(entry.key):
                continue
            if age is not None and now - entry.last_used < age:
                continue
            if repo.cache.remove(entry.key):
                removed += 1
                freed += entry.nbytes
        swept = repo.cache.sweep()  # temporary files of writers killed mid-write
        click.echo(f"removed {removed} artifact(s), {_size(freed)}"
                   + (f", and {len(swept)} temporary file(s) of interrupted writes" if swept else ""))


def artifact_users(repo) -> dict[str, set[str]]:
    """Cache key -> experiments whose stored units used it."""
    users: dict[str, set[str]] = {}
    for exp in repo.experiments():
        try:
            units, _, _ = repo.experiment(exp).read_log()
        except MaltError:
            continue
        for record in units.values():
            for key in record.get("artifacts", ()):
                users.setdefault(key, set()).add(exp)
    return users


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _duration(text: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dhms])\s*", text)
    if not match:
        raise InvalidParameterError(f"--older-than expects a number and a unit (30d, 12h, 90m, 45s), got {text!r}.")
    return float(match.group(1)) * {"d": 86400, "h": 3600, "m": 60, "s": 1}[match.group(2)]
