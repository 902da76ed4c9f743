"""Trials of issue 35 ("the store's last holes"), with their counts: ``make trials-store``.

Each family runs the real `malt` command line (its click entry point, in process; a hang is cut by an
alarm and counted) on real files — planted symbolic links, FIFOs, sockets, device files, hard links
and folders, flipped bytes and bits, a real tmpfs filled up — and counts every outcome. A ✗ is:

* refusals: a command that follows a planted entry or opens one that is not a regular file — the
  file outside the repository changed, the command hung, printed a traceback, or went on (exit 0)
  where it needed the entry — or whose refusal is not one line naming the entry;
* crafted format-1 repository: anything outside it deleted or changed;
* marker damage: a command that does not say to run `malt repair`, or a repair that does not give
  every unit back (a lock-out);
* last-record flips: a committed record lost with no word from the reader and `malt repair`;
  torn tails: a dropped tail `malt repair` does not name;
* read-only and no-op commands: any change of the repository's names, sizes, mtimes or contents;
* disk full (tmpfs of each size; needs root): a traceback, more than one error line, a unit lost
  beside a failed optional cache write, or different numbers after freeing space.

``python -m tests.trials.store_trials [--quick] [--family NAME ...]`` prints one table; the tests in
tests/test_store_holes.py run small slices of the same trials.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

import tests.plugins.counting  # noqa: F401  (test-counting)

CV = ["cv", "--algo", "test-counting", "--dataset", "synthetic-multilabel", "--task", "missing", "--quiet"]
KERNEL = ["--param", "kernel_size=40", "--param", "kernel_seconds=0.05"]
HANG_SECONDS = 30


# ---- running malt ----------------------------------------------------------------------------------------
class Hang(Exception):
    pass


@dataclass
class Result:
    code: int | None  # None: hung
    out: str
    err: str
    traceback: bool


def malt(*args, timeout: int = HANG_SECONDS) -> Result:
    """One `malt` command in process; a command still running after ``timeout`` seconds is a hang."""
    from malt.cli import main

    def alarm(signum, frame):
        raise Hang()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(timeout)
    try:
        result = CliRunner().invoke(main, [str(a) for a in args])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    if isinstance(result.exception, Hang):
        return Result(None, result.stdout, result.stderr, False)
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    return Result(result.exit_code, result.stdout, result.stderr, crashed or "Traceback" in result.stderr)


def one_error_line(result: Result) -> str | None:
    lines = [line for line in result.err.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    return errors[0] if len(errors) == 1 and len(lines) - len(errors) <= 1 else None  # a progress line may precede


def tree(folder: Path) -> dict:
    """Every entry under ``folder`` with its kind, size, mtime (ns) and content hash: what "unchanged" means."""
    state = {}
    if not os.path.lexists(folder):
        return state
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = Path(root) / name
            info = os.lstat(path)
            rel = str(path.relative_to(folder))
            if stat.S_ISREG(info.st_mode):
                state[rel] = ("file", info.st_size, info.st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
            elif stat.S_ISLNK(info.st_mode):
                state[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                state[rel] = ("dir",)
            else:
                state[rel] = ("other", stat.S_IFMT(info.st_mode))
    return state


# ---- fixtures -------------------------------------------------------------------------------------------
def pristine(folder: Path) -> tuple[Path, str]:
    """A current-format repository: an imported dataset, one experiment with a cached artifact,
    stored predictions and its logs."""
    folder.mkdir(parents=True, exist_ok=True)
    repo = folder / "pristine"
    csv = folder / "mine.csv"
    csv.write_text("f1,f2,f3,l1,l2\n" + "".join(f"{i * 0.37 % 1:.3f},{i * 0.71 % 1:.3f},{i % 5},{i % 2},"
                                                 f"{int(i % 3 == 0)}\n" for i in range(30)))
    assert malt("datasets", "import", "mine", csv, "--labels", "2", "--repo", repo).code == 0
    made = malt(*CV, *KERNEL, "--repo", repo)
    assert made.code == 0, made.err
    return repo, made.out.strip().splitlines()[-1]


def format_one(folder: Path) -> Path:
    """A repository of the first store format (tests/fixtures/format1), with an old cache entry."""
    import h5py

    from tests.test_legacy import legacy_repository

    repo = legacy_repository(folder / "format1", journal=True)
    (repo / "cache").mkdir()
    with h5py.File(repo / "cache" / "0123456789abcdef.h5", "w") as f:
        f["value"] = [1.0, 2.0]
    (repo / "datasets").mkdir()
    with h5py.File(repo / "datasets" / "old.h5", "w") as f:  # an import of the earlier layout
        f.create_group("components")["X"] = [[1.0, 2.0], [3.0, 4.0]]
        f.attrs["meta"] = "{}"
    return repo


def victim(folder: Path) -> Path:
    """A user's files outside every repository: what no trial may change."""
    import h5py

    place = folder / "victim"
    place.mkdir()
    with h5py.File(place / "model.h5", "w") as f:
        f["weights"] = [1.0, 2.0, 3.0]
    (place / "precious.txt").write_text("keep me\n")
    (place / "precious.json").write_text('{"format": 2}\n')
    (place / "0123456789abcdef0123.h5").write_bytes((place / "model.h5").read_bytes())
    (place / "sub").mkdir()
    return place


# ---- planting --------------------------------------------------------------------------------------------
KINDS = ("symlink", "fifo", "socket", "device", "folder", "hardlink")


def plant(path: Path, kind: str, outside: Path) -> bool:
    """Put an entry of ``kind`` at ``path`` (whatever was there is removed); False if the machine
    cannot make one (a device file needs root)."""
    if os.path.lexists(path):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        path.symlink_to(outside)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        here = os.getcwd()
        with socket.socket(socket.AF_UNIX) as sock:
            try:
                os.chdir(path.parent)  # a relative name: socket paths are limited to 107 bytes
                sock.bind(path.name)
            except OSError:
                return False
            finally:
                os.chdir(here)
    elif kind == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
        except (PermissionError, OSError):
            return False
    elif kind == "folder":
        path.mkdir()
    elif kind == "hardlink":
        os.link(outside, path)
    return True


@dataclass
class Attempt:
    path: str  # code path: the command and what it does
    entry: str  # the planted entry, relative to the repository
    kind: str
    args: tuple  # {r}: the repository, {c}: the corpus
    refuse: bool = True  # the command needs the entry: it must refuse it (else: must not touch it)
    legacy: bool = False  # on the format-1 repository
    outside: str = "precious.txt"  # what a link points to (a file or a folder of the victim)


def attempts(exp: str) -> list[Attempt]:
    """Every code path × every entry it opens × every kind of planted entry."""
    out: list[Attempt] = []
    folder = f"experiments/{exp}"
    readers = {"show": ("show", exp, "--repo", "{r}"), "results": ("results", "--repo", "{r}")}
    writers = {"cv (new units)": (*CV, "--param", "sleep=0.001", "--repo", "{r}"),
               "rerun --algo": ("rerun", "--algo", "test-counting", "--repo", "{r}"),
               "rescore": ("rescore", "--repo", "{r}"), "repair": ("repair", "--repo", "{r}")}
    file_kinds = ("symlink", "fifo", "socket", "device", "folder")
    for entry in ("spec.json", "units.log"):
        for name, args in {**readers, **writers}.items():
            for kind in file_kinds:
                out.append(Attempt(name, f"{folder}/{entry}", kind, args))
    for name, args in writers.items():
        for kind in file_kinds:
            out.append(Attempt(name, f"{folder}/predictions.log", kind, args, refuse=True))
            out.append(Attempt(name, f"{folder}/.lock", kind, args))
            out.append(Attempt(name, ".lock", kind, args))
        for entry in (f"{folder}/units.log", f"{folder}/predictions.log", f"{folder}/.lock", ".lock"):
            out.append(Attempt(name, entry, "hardlink", args))
    for name, args in readers.items():  # readers never open these: nothing may happen to them either
        for entry in (f"{folder}/predictions.log", f"{folder}/.lock", ".lock"):
            for kind in ("symlink", "fifo", "hardlink"):
                out.append(Attempt(name, entry, kind, args, refuse=False))
    every = {**readers, **writers, "cache list": ("cache", "--repo", "{r}"),
             "cache clear": ("cache", "clear", "--repo", "{r}"), "datasets list": ("datasets", "--repo", "{r}")}
    for name, args in every.items():
        for kind in file_kinds:  # `malt datasets` lists names only: it never opens the marker
            out.append(Attempt(name, "malt-repository.json", kind, args, refuse=name != "datasets list"))
    cache_users = {"cv (cache)": (*CV, *KERNEL, "--param", "sleep=0.001", "--repo", "{r}"),
                   "cache list": ("cache", "--repo", "{r}"), "cache clear": ("cache", "clear", "--repo", "{r}"),
                   "repair": ("repair", "--repo", "{r}")}
    for name, args in cache_users.items():
        out.append(Attempt(name, "cache", "symlink", args, outside="."))
        out.append(Attempt(name, "cache", "fifo", args))
        for kind in file_kinds:
            out.append(Attempt(name, "cache/{key}", kind, args, outside="model.h5"))
    importers = {"datasets import": ("datasets", "import", "other", "{c}/class.csv", "--repo", "{r}"),
                 "datasets import --force": ("datasets", "import", "mine", "{c}/multilabel.csv", "--labels", "2",
                                             "--force", "--repo", "{r}"),
                 "cv on an imported dataset": ("cv", "--algo", "test-counting", "--dataset", "mine", "--task",
                                               "missing", "--quiet", "--repo", "{r}")}
    for name, args in importers.items():
        out.append(Attempt(name, "datasets", "symlink", args, outside="."))
        out.append(Attempt(name, "datasets/objects", "symlink", args, outside="."))
        for kind in file_kinds:
            out.append(Attempt(name, "datasets/mine.json", kind, args, refuse=name != "datasets import",
                               outside="precious.json"))
        out.append(Attempt(name, "datasets/.lock", "symlink", args, refuse=name != "cv on an imported dataset"))
        out.append(Attempt(name, "datasets/.lock", "hardlink", args, refuse=name != "cv on an imported dataset"))
    for kind in file_kinds:
        out.append(Attempt("cv on an imported dataset", "datasets/objects/{object}", kind, importers[
            "cv on an imported dataset"], outside="model.h5"))
        out.append(Attempt("repair", "datasets/objects/{object}", kind, writers["repair"], outside="model.h5"))
    for kind in ("symlink",):
        for name, args in writers.items():
            for shared in ("experiments", "legacy", "data"):
                out.append(Attempt(name, shared, kind, args, outside="."))
        out.append(Attempt("show", f"{folder}", kind, readers["show"], outside="sub"))
    # migration of a format-1 repository: rerun (nothing to do), cv and repair all migrate first
    old = "experiments/synthetic-multilabel-missing-a5eda267"
    migrators = {"rerun (migrates)": ("rerun", "--repo", "{r}"),
                 "cv (migrates)": ("cv", "--algo", "column-mean", "--dataset", "synthetic-multilabel", "--task",
                                   "missing", "--folds", "2", "--quiet", "--repo", "{r}"),
                 "repair (migrates)": ("repair", "--repo", "{r}")}
    for name, args in migrators.items():
        out.append(Attempt(name, "cache", "symlink", args, legacy=True, outside="."))
        out.append(Attempt(name, "datasets", "symlink", args, legacy=True, outside="."))
        out.append(Attempt(name, "legacy", "symlink", args, legacy=True, outside="."))
        out.append(Attempt(name, "legacy/ids.json", "symlink", args, legacy=True, outside="precious.json"))
        out.append(Attempt(name, f"{old}/journal", "symlink", args, legacy=True, outside="."))
        out.append(Attempt(name, "experiments/.migrating-x", "symlink", args, legacy=True, outside="sub"))
        for kind in file_kinds:
            out.append(Attempt(name, "cache/0123456789abcdef.h5", kind, args, legacy=True, outside="model.h5"))
            out.append(Attempt(name, "datasets/old.h5", kind, args, legacy=True, outside="model.h5"))
            out.append(Attempt(name, f"{old}/results.h5", kind, args, legacy=True, outside="model.h5"))
            out.append(Attempt(name, f"{old}/spec.json", kind, args, legacy=True, outside="precious.json"))
            out.append(Attempt(name, f"{old}/journal/x.json", kind, args, legacy=True))
            out.append(Attempt(name, "malt-repository.json", kind, args, legacy=True, outside="precious.json"))
    for name, args in {"show (format 1)": ("show", "synthetic-multilabel-missing-a5eda267", "--repo", "{r}"),
                       "results (format 1)": ("results", "--repo", "{r}")}.items():
        for kind in file_kinds:
            out.append(Attempt(name, f"{old}/results.h5", kind, args, legacy=True, outside="model.h5"))
            out.append(Attempt(name, f"{old}/journal/x.json", kind, args, legacy=True))
    return out


@dataclass
class Outcome:
    verdict: str  # 'refused', 'untouched', or a ✗: 'FOLLOWED', 'HANG', 'TRACEBACK', 'NOT REFUSED', 'UNNAMED'
    detail: str = ""


def run_attempt(attempt: Attempt, base: Path, legacy_base: Path, outside: Path, work: Path) -> Outcome:
    repo = work / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(legacy_base if attempt.legacy else base, repo, symlinks=True)
    entry = attempt.entry
    if "{key}" in entry:
        entry = entry.replace("{key}", next(p.name for p in (repo / "cache").glob("*.h5")))
    if "{object}" in entry:
        entry = entry.replace("{object}", next(p.name for p in (repo / "datasets" / "objects").glob("*.h5")))
    target = repo / entry
    link_to = outside / attempt.outside
    if attempt.kind == "hardlink":
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(b"")
        shutil.copyfile(target, outside / "linked")
        os.utime(outside / "linked", ns=(1, 1))
        link_to = outside / "linked"
    if not plant(target, attempt.kind, link_to):
        return Outcome("skipped", "cannot make this kind of entry here")
    before = tree(outside)
    args = [str(a).replace("{r}", str(repo)).replace("{c}", str(CORPUS)) for a in attempt.args]
    result = malt(*args)
    after = tree(outside)
    shown = f"{attempt.path} / {attempt.kind} at {entry}: exit {result.code}\n{result.err[-800:]}"
    if before != after:
        return Outcome("FOLLOWED", f"{shown}\nchanged outside: {sorted(set(before.items()) ^ set(after.items()))[:4]}")
    if result.code is None:
        return Outcome("HANG", shown)
    if result.traceback or result.code not in (0, 1, 2):
        return Outcome("TRACEBACK", shown)
    if result.code == 0:
        return Outcome("NOT REFUSED", shown) if attempt.refuse else Outcome("untouched")
    line = one_error_line(result)
    name = Path(entry).name
    if line is None or (name not in line and attempt.entry.split("/")[0] not in line):
        return Outcome("UNNAMED", shown)
    return Outcome("refused")


CORPUS = Path(__file__).resolve().parent.parent / "corpus"


def refusal_trials(work: Path, only: list[Attempt] | None = None) -> Counter:
    base, exp = pristine(work)
    legacy_base = format_one(work)
    outside = victim(work)
    tally: Counter = Counter()
    failures = []
    for attempt in only if only is not None else attempts(exp):
        outcome = run_attempt(attempt, base, legacy_base, outside, work / "attempt")
        tally[(attempt.path, attempt.kind, outcome.verdict)] += 1
        if outcome.verdict.isupper():
            failures.append(outcome.detail)
    return tally, failures


# ---- the crafted format-1 repository of the issue ---------------------------------------------------------
def crafted_trial(work: Path) -> tuple[Counter, list]:
    """The issue's reproduction, run by every command that opens a repository."""
    tally, failures = Counter(), []
    commands = [("rerun",), ("cv", "--algo", "column-mean", "--dataset", "synthetic-multilabel", "--task",
                             "missing", "--folds", "2", "--quiet"), ("repair",), ("rescore",), ("results",),
                ("cache",), ("cache", "clear"), ("datasets", "import", "x", str(CORPUS / "class.csv"))]
    for k, command in enumerate(commands):
        place = work / f"crafted{k}"
        place.mkdir()
        outside = victim(place)
        repo = place / "crafted"
        repo.mkdir()
        (repo / "malt-repository.json").write_text('{"format": 1}\n')
        (repo / "cache").symlink_to(outside)
        before = tree(outside)
        result = malt(*command, "--repo", repo)
        ok = tree(outside) == before and not result.traceback and result.code is not None
        tally["victim intact" if ok else "DELETED OR CHANGED"] += 1
        if not ok:
            failures.append(f"{command}: exit {result.code}\n{result.err[-500:]}")
    return tally, failures


# ---- marker damage ---------------------------------------------------------------------------------------
def marker_trials(work: Path, step: int = 1) -> tuple[Counter, list]:
    """Every byte of the marker changed (one flipped bit, and the byte replaced by another value)."""
    base, exp = pristine(work)
    original = (base / "malt-repository.json").read_bytes()
    tally, failures = Counter(), []
    for at in range(0, len(original), step):
        for how in ("bit", "byte"):
            repo = work / "marker"
            if repo.exists():
                shutil.rmtree(repo)
            shutil.copytree(base, repo)
            data = bytearray(original)
            data[at] = data[at] ^ (1 << (at % 8)) if how == "bit" else (data[at] + 1 + at * 37 % 254) % 256
            (repo / "malt-repository.json").write_bytes(bytes(data))
            first = malt("results", "--repo", repo)
            said = first.code == 2 and "malt repair" in (one_error_line(first) or "")
            repaired = malt("repair", "--repo", repo)
            after = malt("results", "--repo", repo)
            back = after.code == 0 and " 5/5" in after.out and repaired.code == 0
            verdict = ("repair named, rebuilt" if said and back else "no effect" if first.code == 0 and back
                       else "LOCKED OUT")
            tally[verdict] += 1
            if verdict == "LOCKED OUT":
                failures.append(f"byte {at} ({how}): {first.err[-300:]} | {repaired.out[-300:]}{repaired.err[-300:]}")
    return tally, failures


# ---- last-record flips and torn tails -----------------------------------------------------------------------
def _last_unit_log(base: Path, exp: str) -> None:
    """Cut units.log after its last unit record (as a run killed right after committing it leaves it)."""
    from malt.repository.records import read_log

    path = base / "experiments" / exp / "units.log"
    data, found = read_log(path)
    last = [r for r in found.records if r.header.get("type") == "unit"][-1]
    path.write_bytes(data[:last.end])


def to_framing_one(path: Path) -> None:
    """Rewrite a log's records as malt wrote them before framing 2 (no check of the lengths)."""
    from malt.repository.records import FIXED_1, LENGTHS, MAGIC_1, _digest, read_log

    data, found = read_log(path)
    old = b""
    for record in found.records:
        head, body = data[record.header_offset:record.payload_offset], data[record.payload_offset:record.end]
        old += FIXED_1.pack(MAGIC_1, len(head), len(body), _digest(LENGTHS.pack(len(head), len(body)), head, body))
        old += head + body
    path.write_bytes(old)


def _losses(repo: Path, exp: str, reference: dict[str, set]) -> tuple[bool, bool, bool]:
    """(a record was lost, the reader named damage, `malt repair` named it)."""
    from malt.repository.store import Repository

    files = Repository(repo).experiment(exp)
    problems: list[str] = []
    units, _, _ = files.read_log(problems)
    ids = {k: r["predictions"] for k, r in units.items() if r.get("predictions")}
    predictions = files.read_predictions(ids, problems)
    lost = set(units) != reference["units"] or set(predictions) != reference["predictions"]
    repaired = malt("repair", "--repo", repo)
    named = any(name in repaired.out for name in ("units.log", "predictions.log"))
    return lost, bool(problems), named


def last_record_trials(work: Path, extra_random: int = 64) -> tuple[Counter, list]:
    """Every bit of the fixed part (magic, lengths, their CRC, digest) of the last record of units.log
    and of predictions.log, plus bits anywhere in those records; for logs of today (framing 2) and
    for logs whose last record an earlier malt wrote (framing 1)."""
    import random

    from malt.repository.records import FIXED, FIXED_1, MAGIC_1, read_log
    from malt.repository.store import Repository

    tally, failures = Counter(), []
    rng = random.Random(35)
    for framing in (2, 1):
        base, exp = pristine(work / f"framing{framing}")
        _last_unit_log(base, exp)
        if framing == 1:
            for log in ("units.log", "predictions.log"):
                to_framing_one(base / "experiments" / exp / log)
        files = Repository(base).experiment(exp)
        units, _, _ = files.read_log()
        reference = {"units": set(units), "predictions": set(files.read_predictions(
            {k: r["predictions"] for k, r in units.items() if r.get("predictions")}))}
        for log in ("units.log", "predictions.log"):
            data, found = read_log(base / "experiments" / exp / log)
            last = found.records[-1]
            fixed = FIXED_1.size if data[last.offset:last.offset + 8] == MAGIC_1 else FIXED.size
            spots = [(last.offset + byte, bit) for byte in range(fixed) for bit in range(8)]
            spots += [(rng.randrange(last.offset + fixed, last.end), rng.randrange(8)) for _ in range(extra_random)]
            for at, bit in spots:
                repo = work / "flip"
                if repo.exists():
                    shutil.rmtree(repo)
                shutil.copytree(base, repo)
                path = repo / "experiments" / exp / log
                damaged = bytearray(path.read_bytes())
                damaged[at] ^= 1 << bit
                path.write_bytes(bytes(damaged))
                lost, read_named, repair_named = _losses(repo, exp, reference)
                where = "fixed part" if at < last.offset + fixed else "header/payload"
                verdict = ("no loss" if not lost else "named by reader and repair" if read_named and repair_named
                           else "SILENT LOSS")
                tally[(f"framing {framing}", log, where, verdict)] += 1
                if verdict == "SILENT LOSS":
                    failures.append(f"framing {framing} {log} byte {at - last.offset} bit {bit}: reader named "
                                    f"{read_named}, repair named {repair_named}")
    return tally, failures


def torn_tail_trials(work: Path, step: int = 1, payload_step: int = 64) -> tuple[Counter, list]:
    """The last record of each log cut at every length of its fixed part and header (every
    ``payload_step``-th of its payload): the writer that drops the tail (a resumed `malt cv`) and
    `malt repair` both name it."""
    from malt.repository.records import read_log

    base, exp = pristine(work)
    _last_unit_log(base, exp)
    tally, failures = Counter(), []
    for log in ("units.log", "predictions.log"):
        data, found = read_log(base / "experiments" / exp / log)
        last = found.records[-1]
        cuts = [*range(last.offset + 1, last.payload_offset, step), *range(last.payload_offset, last.end, payload_step)]
        for cut in cuts:
            for dropper in ("repair", "cv"):
                repo = work / "torn"
                if repo.exists():
                    shutil.rmtree(repo)
                shutil.copytree(base, repo)
                path = repo / "experiments" / exp / log
                path.write_bytes(path.read_bytes()[:cut])
                result = (malt("repair", "--repo", repo) if dropper == "repair" else
                          malt(*CV, *KERNEL, "--param", "sleep=0.001", "--repo", repo))
                named = "dropped an incomplete record" in result.out + result.err and log in result.out + result.err
                verdict = f"named by {dropper}" if named and result.code == 0 else "UNNAMED"
                tally[(log, verdict)] += 1
                if verdict == "UNNAMED":
                    failures.append(f"{log} cut at {cut - last.offset}/{last.end - last.offset} ({dropper}): "
                                    f"{result.out[-200:]} {result.err[-300:]}")
    return tally, failures


# ---- read-only and no-op commands --------------------------------------------------------------------------
def readonly_commands(exp: str, out: Path) -> dict[str, tuple]:
    return {
        "show": ("show", exp), "show --raw csv": ("show", exp, "--raw", "--format", "csv"),
        "show --failed": ("show", exp, "--failed"), "show --provenance": ("show", exp, "--provenance"),
        "show --diagnostics": ("show", exp, "--diagnostics"), "results": ("results",),
        "plot": ("plot", "{r}", "--out", out / "plots"), "table": ("table", "{r}", "--out", out / "table.md"),
        "report": ("report", "{r}", "--out", out / "report"), "cache list": ("cache",),
        "datasets list": ("datasets",), "datasets show": ("datasets", "show", "mine"),
        "rerun (nothing to do)": ("rerun",), "rerun --experiment (nothing to do)": ("rerun", "--experiment", exp),
        "cv (nothing to do)": (*CV, *KERNEL), "rescore (no score changes)": ("rescore",),
        "repair (nothing to repair)": ("repair",),
        "failing: cv bad parameter": (*CV, "--param", "sleep=-1"), "failing: cv unknown algorithm": (
            "cv", "--algo", "nosuch", "--dataset", "synthetic-multilabel"),
        "failing: show unknown": ("show", "nosuch"), "failing: rerun unknown experiment": (
            "rerun", "--experiment", "nosuch"),
        "failing: rerun unknown algorithm": ("rerun", "--algo", "nosuch"),
        "failing: import existing name": ("datasets", "import", "mine", CORPUS / "class.csv"),
        "failing: import bad file": ("datasets", "import", "other", CORPUS / "label-2.csv", "--labels", "2"),
        "failing: cv scheduler unreachable": (*CV, "--param", "sleep=0.002", "--scheduler", "tcp://127.0.0.1:9"),
        "failing: plot filter matches nothing": ("plot", "{r}", "--algo", "nosuch", "--out", out / "p2"),
        "failing: cache clear bad age": ("cache", "clear", "--older-than", "soon"),
        "failing: repair unknown experiment": ("repair", "--experiment", "nosuch"),
    }


def readonly_trials(work: Path) -> tuple[Counter, list]:
    base, exp = pristine(work)
    outputs = work / "outputs"
    tally, failures = Counter(), []
    for name, command in readonly_commands(exp, outputs).items():
        before = tree(base)
        time.sleep(0.01)  # a write would now change an mtime
        args = [str(a).replace("{r}", str(base)) for a in command]
        result = malt(*args, *([] if "{r}" in map(str, command) else ["--repo", base]))
        after = tree(base)
        failing = name.startswith("failing")
        ok = before == after and not result.traceback and (result.code == 2 if failing else result.code == 0)
        tally["unchanged" if ok else "CHANGED OR WRONG EXIT"] += 1
        if not ok:
            changed = sorted(set(before.items()) ^ set(after.items()))[:4]
            failures.append(f"{name}: exit {result.code} {result.err[-300:]} changed: {changed}")
    return tally, failures


# ---- a full disk -----------------------------------------------------------------------------------------
@contextlib.contextmanager
def tmpfs(path: Path, size_kib: int):
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k", "tmpfs", str(path)],
                          capture_output=True)
    if done.returncode != 0:
        raise PermissionError("cannot mount a tmpfs here (needs root)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def can_mount(work: Path) -> bool:
    try:
        with tmpfs(work / "probe", 64):
            return True
    except PermissionError:
        return False


def disk_full_report_trials(work: Path, sizes=range(4, 200, 4)) -> tuple[Counter, list]:
    base, exp = pristine(work)
    tally, failures = Counter(), []
    for size in sizes:
        with tmpfs(work / "small", size) as small:
            result = malt("report", base, "--out", small / "report")
            if result.code == 0:
                verdict = "written"
            elif result.code == 2 and one_error_line(result) and not result.traceback:
                verdict = "one line" if not list(small.rglob(".*.tmp*")) else "TEMPORARY LEFT"
            else:
                verdict = "TRACEBACK OR NOT ONE LINE"
        tally[verdict] += 1
        if verdict.isupper():
            failures.append(f"{size} KiB: exit {result.code}\n{result.err[-600:]}")
    return tally, failures


def disk_full_cache_trials(work: Path, sizes=range(16, 1400, 48)) -> tuple[Counter, list]:
    """A run whose cached artifact (1 MiB) does or does not fit: the units are kept either way. Each
    run is its own process (in process, the artifact would come from the previous run's memory)."""
    from tests.helpers import ROOT, malt_cmd

    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def run(repo: Path) -> Result:
        done = subprocess.run(malt_cmd(*args, "--repo", str(repo)), capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=300)
        return Result(done.returncode, done.stdout, done.stderr, "Traceback" in done.stderr)

    args = [*CV, "--param", "kernel_size=360", "--param", "kernel_seconds=0.05"]
    reference = work / "reference"
    assert run(reference).code == 0
    expected = _values(reference)
    tally, failures = Counter(), []
    for size in sizes:
        freed = work / "freed"
        if freed.exists():
            shutil.rmtree(freed)
        with tmpfs(work / "small", size) as small:
            repo = small / "repo"
            result = run(repo)
            skipped = result.err.count("could not store the cached artifact")
            line = one_error_line(result) or ""
            if result.traceback or result.code not in (0, 2) or skipped > 1:
                verdict = "TRACEBACK OR REPEATED WARNING"
            elif result.code == 2:
                verdict = ("NOT ONE LINE" if not line else "STOPPED BY THE CACHE" if "/cache/" in line
                           else "stopped: the logs do not fit either")
            elif skipped:
                verdict = "cache skipped, every unit kept" if _values(repo) == expected else "UNITS LOST"
            else:
                verdict = "everything fit" if _values(repo) == expected else "WRONG NUMBERS"
            if repo.exists():
                shutil.copytree(repo, freed, symlinks=True)
        if freed.exists() and (run(freed).code != 0 or _values(freed) != expected):  # space freed: finish the run
            verdict = "WRONG AFTER FREEING SPACE"
        tally[verdict] += 1
        if verdict.isupper():
            failures.append(f"{size} KiB: exit {result.code}\n{result.err[-600:]}")
    return tally, failures


def _values(repo: Path) -> list:
    from malt.repository.store import Repository
    from malt.results import ResultSet

    frame = ResultSet.from_repository(Repository(repo)).frame.sort_values(["display", "fold", "metric"])
    return list(zip(frame["display"], frame["fold"], frame["metric"], frame["value"]))


# ---- cache temporaries -------------------------------------------------------------------------------------
def temporaries_trials(work: Path) -> tuple[Counter, list]:
    """Temporary files of killed writers in the cache: stale ones of our own pattern are removed by the
    next run (and every one by `malt repair`); links, FIFOs, folders and other names are never touched."""
    base, exp = pristine(work)
    outside = victim(work)
    tally, failures = Counter(), []
    old = time.time() - 7200
    for dropper, command in (("cv", (*CV, *KERNEL, "--param", "sleep=0.001")), ("repair", ("repair",)),
                             ("cache clear", ("cache", "clear"))):
        repo = work / "temps"
        if repo.exists():
            shutil.rmtree(repo)
        shutil.copytree(base, repo)
        key = next((repo / "cache").glob("*.h5")).name
        planted = {
            f".{key}.4194301.0badc0de.tmp": ("stale", "file"),  # a dead pid, two hours old
            f".{key}.{os.getpid()}.1badc0de.tmp": ("fresh", "file"),  # a live writer's, just written
            f".{key}.4194302.2badc0de.tmp": ("link", "symlink"),
            f".{key}.4194303.3badc0de.tmp": ("fifo", "fifo"),
            f".{key}.4194304.4badc0de.tmp": ("folder", "folder"),
            "notes.tmp": ("other name", "file"),
        }
        for name, (_, kind) in planted.items():
            path = repo / "cache" / name
            if kind == "file":
                path.write_bytes(b"half an entry")
            else:
                plant(path, kind, outside / "precious.txt")
            if name.endswith("0badc0de.tmp") or kind != "file":
                os.utime(path, (old, old), follow_symlinks=False)
        before = tree(outside)
        result = malt(*command, "--repo", repo)
        for name, (what, _) in planted.items():
            gone = not os.path.lexists(repo / "cache" / name)
            should_go = what == "stale" or (what == "fresh" and dropper == "repair")
            verdict = f"{what}: {'removed' if gone else 'kept'}"
            if gone != should_go:
                verdict = verdict.upper()
                failures.append(f"{dropper}: {name} {'removed' if gone else 'kept'} (exit {result.code} "
                                f"{result.err[-200:]})")
            tally[(dropper, verdict)] += 1
        if tree(outside) != before or result.code != 0:
            tally[(dropper, "FOLLOWED OR FAILED")] += 1
            failures.append(f"{dropper}: exit {result.code} {result.err[-300:]}")
    return tally, failures


# ---- the fuzz corpus ---------------------------------------------------------------------------------------
def fuzz_trials(work: Path) -> tuple[Counter, list]:
    from tests.test_fuzz import CASES, _data_available, run_all

    chosen = [c for c in CASES if not c.data or _data_available()]
    results = run_all(chosen)
    tally, failures = Counter(), []
    for case in chosen:
        outcome = results[case.id]
        wanted = "clean error" if case.expect == "error" else "legitimate success"
        kind = outcome.kind if outcome.kind == wanted else outcome.kind.upper()
        tally[kind] += 1
        if outcome.kind != wanted:
            failures.append(f"{case.id}: {outcome.kind}\n{outcome.detail[-500:]}")
    return tally, failures


# ---- a lost Dask scheduler ---------------------------------------------------------------------------------
def dask_trials(work: Path, runs: int = 2) -> tuple[Counter, list]:
    """kill -9 of the scheduler mid-run: the run ends in exactly one error line (after its progress
    line), and the units it finished are stored."""
    from tests.helpers import ROOT, malt_cmd

    tally, failures = Counter(), []
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    dask = Path(sys.executable).parent / "dask"
    for k in range(runs):
        port = 8780 + k
        sched = subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
                                  "--preload", "tests.plugins.counting"], cwd=ROOT, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        worker = subprocess.Popen([str(dask), "worker", f"tcp://127.0.0.1:{port}", "--nworkers", "1", "--nthreads",
                                   "1", "--no-dashboard", "--preload", "tests.plugins.counting"], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and socket.socket().connect_ex(("127.0.0.1", port)) != 0:
                time.sleep(0.1)
            repo = work / f"dask{k}"
            run = subprocess.Popen(malt_cmd(*CV, "--param", "sleep=0.3,0.4,0.5,0.6", "--scheduler",
                                            f"tcp://127.0.0.1:{port}", "--repo", str(repo)), cwd=ROOT, env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            while time.monotonic() < deadline + 60 and run.poll() is None and b'"type":"unit"' not in _units(repo):
                time.sleep(0.1)  # kill once the run has committed a unit
            time.sleep(0.3 * k)
            sched.kill()
            out, err = run.communicate(timeout=120)
        finally:
            for proc in (sched, worker):
                proc.kill()
                proc.wait()
        lines = [line for line in err.splitlines() if line.strip() and not line.startswith("[")]
        stored = _units(repo).count(b'"type":"unit"')
        ok = run.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: The Dask cluster") and stored
        tally["one error line, finished units stored" if ok else "TRACEBACK, MORE LINES OR NOTHING STORED"] += 1
        if not ok:
            failures.append(f"exit {run.returncode}\n{err[-1500:]}")
    return tally, failures


def _units(repo: Path) -> bytes:
    try:
        return b"".join(p.read_bytes() for p in (repo / "experiments").glob("*/units.log"))
    except OSError:
        return b""


FAMILIES = {
    "refusals": refusal_trials, "crafted": crafted_trial, "marker": marker_trials,
    "last-record": last_record_trials, "torn-tail": torn_tail_trials, "read-only": readonly_trials,
    "temporaries": temporaries_trials, "disk-full-report": disk_full_report_trials,
    "disk-full-cache": disk_full_cache_trials, "fuzz": fuzz_trials, "dask": dask_trials,
}
QUICK = {"marker": {"step": 7}, "torn-tail": {"step": 9, "payload_step": 512}, "last-record": {"extra_random": 8},
         "disk-full-report": {"sizes": range(8, 120, 16)}, "disk-full-cache": {"sizes": range(16, 1400, 160)},
         "dask": {"runs": 1}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", action="append", choices=sorted(FAMILIES), help="only these (repeatable)")
    parser.add_argument("--quick", action="store_true", help="fewer trials per family")
    parser.add_argument("-v", action="store_true", help="print every ✗ in full")
    options = parser.parse_args()
    bad_total = 0
    for name in options.family or list(FAMILIES):
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"malt-trials-{name}-") as tmp:
            work = Path(tmp)
            if name.startswith("disk-full") and not can_mount(work):
                print(f"== {name}: skipped (mounting a tmpfs needs root)")
                continue
            if name == "dask":
                try:
                    import dask.distributed  # noqa: F401
                except ImportError:
                    print("== dask: skipped (the optional extra malt[distributed] is not installed)")
                    continue
            kwargs = QUICK.get(name, {}) if options.quick else {}
            tally, failures = FAMILIES[name](work, **kwargs)
        total = sum(tally.values())
        bad = sum(n for key, n in tally.items() if any(str(k).isupper() for k in (key if isinstance(key, tuple)
                                                                                   else (key,))))
        bad_total += bad
        print(f"== {name}: {total} trials, ✗ {bad}  ({time.monotonic() - started:.0f} s)")
        for key, n in sorted(tally.items(), key=lambda kv: str(kv[0])):
            print(f"   {n:5d}  {' / '.join(map(str, key)) if isinstance(key, tuple) else key}")
        for line in failures[: None if options.v else 5]:
            print("   ✗ " + line.replace("\n", "\n     "))
        sys.stdout.flush()
    print(f"\nall families: ✗ {bad_total}")
    return 1 if bad_total else 0


if __name__ == "__main__":
    sys.exit(main())
