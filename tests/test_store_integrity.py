"""The store never serves a wrong number and never deletes finished work (issue 16).

Real files and real processes: a full disk (a small tmpfs where the machine lets us mount one,
otherwise a file-size limit), a results log that cannot be opened, single-byte and single-bit damage
in every kind of file the store keeps, symbolic links and path traversal planted in a repository,
two `malt cv` writing one repository at once, readers racing a compaction, and `malt rerun` of an
experiment on a user's own file from another folder. Each damage trial must end "detected and named"
or "no effect" — never silently wrong.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tests.plugins.counting  # noqa: F401  (test-counting)
from malt.cli import main
from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import ROOT, malt_cmd, run_malt, snapshot

CV = ["cv", "--algo", "test-counting", "--dataset", "synthetic-multilabel", "--task", "missing", "--quiet"]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def values(repo: Path, experiment: str | None = None) -> list:
    rs = ResultSet.from_repository(Repository(repo), [experiment] if experiment else None)
    frame = rs.frame.sort_values(["experiment", "display", "fold", "metric"])
    return list(zip(frame["experiment"], frame["display"], frame["fold"], frame["metric"], frame["value"]))


# ---- a full disk ----------------------------------------------------------------------------------
def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def _umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.mark.timeout(240)
def test_a_full_disk_never_poisons_the_cache_or_loses_committed_units(tmp_path):
    """The cached artifact (1 MiB) does not fit. The cache is optional: the run warns once and keeps
    every unit it computes (all five, with the reference's numbers); where even the logs do not fit
    it stops with one line, and what it left is either absent or intact — after freeing space the
    numbers equal a run on an ample disk."""
    args = [*CV, "--param", "kernel_size=360", "--param", "kernel_seconds=0.05"]
    reference = tmp_path / "reference"
    run_malt(*args, "--repo", reference)
    expected = values(reference)
    mount = tmp_path / "small"
    mounted = _tmpfs(mount, "64k")
    outcomes = []
    try:
        for level, free in enumerate((64, 400, 900) if mounted else (16_000, 80_000, 400_000)):
            repo = mount / f"repo{level}"
            if mounted:
                _umount(mount)
                assert _tmpfs(mount, f"{free}k")
                preexec = None
            else:
                def preexec(limit=free):
                    import resource

                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
            result = subprocess.run(malt_cmd(*args, "--repo", str(repo)), capture_output=True, text=True,
                                    env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT, preexec_fn=preexec,
                                    timeout=120)
            assert result.returncode in (0, 2), result.stderr  # never a crash (139) or a traceback
            assert "Traceback" not in result.stderr
            if result.returncode == 2:
                assert len(result.stderr.strip().splitlines()) == 1 and "Could not write" in result.stderr
            skipped = result.stderr.count("could not store the cached artifact")
            assert skipped <= 1  # said once, not once per unit
            if result.returncode == 0 and skipped:
                assert values(repo) == expected  # the units computed beside the failed cache write are kept
            outcomes.append("stopped" if result.returncode == 2 else "cache skipped" if skipped else "fit")
            freed = tmp_path / f"freed{level}"  # "free space": continue the same repository on a big disk
            if repo.exists():
                shutil.copytree(repo, freed, symlinks=True)
            run_malt(*args, "--repo", freed)
            assert values(freed) == expected, f"level {free}: wrong numbers after the disk filled up"
    finally:
        if mounted:
            _umount(mount)
    assert "cache skipped" in outcomes  # the disk really filled at some level


# ---- a file that cannot be read is never treated as empty -------------------------------------------
@pytest.mark.timeout(120)
def test_an_unreadable_results_log_fails_closed(tmp_path):
    repo = tmp_path / "repo"
    exp = invoke(*CV, "--repo", repo).output.strip().splitlines()[-1]
    log = repo / "experiments" / exp / "units.log"
    saved = log.read_bytes()
    log.unlink()
    log.mkdir()  # opening it now fails (EISDIR), as a file held by another user or a dead mount would
    before = snapshot(repo)
    for args in ([*CV, "--param", "sleep=0.001", "--repo", repo], ["show", exp, "--repo", repo],
                 ["rerun", "--repo", repo], ["rescore", "--repo", repo]):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.output)
        assert "units.log" in result.output and "Traceback" not in result.output
    assert snapshot(repo) == before
    log.rmdir()
    log.write_bytes(saved)
    assert "5/5" in invoke("results", "--repo", repo).output  # nothing was replaced or lost


# ---- single-byte and single-bit damage in every kind of file -----------------------------------------
def _pristine(tmp_path) -> tuple[Path, str, dict]:
    repo = tmp_path / "pristine"
    csv = tmp_path / "mine.csv"
    rng = np.random.default_rng(0)
    rows = ["f1,f2,f3,l1,l2"] + [f"{a:.3f},{b:.3f},{c:.3f},{int(a > 0)},{int(b + c > 0)}"
                                 for a, b, c in rng.normal(size=(40, 3))]
    csv.write_text("\n".join(rows) + "\n")
    assert invoke("datasets", "import", "mine", csv, "--labels", "2", "--repo", repo).exit_code == 0
    exp = invoke(*CV, "--param", "kernel_size=40", "--param", "kernel_seconds=0.05", "--repo", repo) \
        .output.strip().splitlines()[-1]
    mine = invoke("cv", "--algo", "column-mean", "--dataset", "mine", "--task", "missing", "--quiet", "--repo",
                  repo).output.strip().splitlines()[-1]
    reference = {"results": values(repo)}
    scratch = tmp_path / "scratch"
    shutil.copytree(repo, scratch)
    invoke(*CV, "--param", "kernel_size=40", "--param", "kernel_seconds=0.05", "--param", "sleep=0.001",
           "--repo", scratch)
    reference["cache-probe"] = values(scratch, exp)
    shutil.copytree(repo, tmp_path / "scratch2")
    invoke("cv", "--algo", "test-counting", "--dataset", "mine", "--task", "missing", "--quiet", "--repo",
           tmp_path / "scratch2")
    reference["dataset-probe"] = values(tmp_path / "scratch2", mine)
    return repo, exp, reference


def _kinds(repo: Path, exp: str) -> dict[str, Path]:
    folder = repo / "experiments" / exp
    return {"spec": folder / "spec.json", "units": folder / "units.log", "predictions": folder / "predictions.log",
            "cache": next((repo / "cache").glob("*.h5")), "dataset": next((repo / "datasets" / "objects").glob("*.h5")),
            "pointer": repo / "datasets" / "mine.json", "marker": repo / "malt-repository.json"}


def _probe(kind: str, repo: Path, exp: str, mine: str, reference: dict) -> str:
    """'detected', 'no effect' or 'SILENT' (a wrong number with no word of damage)."""
    if kind in ("spec", "units", "predictions", "marker"):
        runs = [invoke("rescore", "--repo", repo)] if kind == "predictions" else []
        runs.append(invoke("results", "--repo", repo))
        said = any(r.exit_code != 0 or "damaged" in r.output or "warning" in r.output for r in runs)
        try:
            got = values(repo)
        except Exception:
            return "detected" if said else "SILENT"
        if got == reference["results"]:
            return "detected" if said else "no effect"
        return "detected" if said else "SILENT"
    if kind == "cache":
        result = invoke(*CV, "--param", "kernel_size=40", "--param", "kernel_seconds=0.05", "--param", "sleep=0.001",
                        "--repo", repo)
        said = result.exit_code != 0 or "damaged" in result.output
        ok = result.exit_code == 0 and values(repo, exp) == reference["cache-probe"]
        return "no effect" if ok and not said else "detected" if said and (ok or result.exit_code) else "SILENT"
    result = invoke("cv", "--algo", "test-counting", "--dataset", "mine", "--task", "missing", "--quiet", "--repo",
                    repo)
    said = result.exit_code != 0 or "damaged" in result.output
    if said:
        return "detected"
    return "no effect" if values(repo, mine) == reference["dataset-probe"] else "SILENT"


@pytest.mark.timeout(600)
def test_single_byte_and_bit_damage_is_detected_or_harmless_never_silent(tmp_path):
    pristine, exp, reference = _pristine(tmp_path)
    mine = next(e for e in Repository(pristine).experiments() if e.startswith("mine-"))
    rng = random.Random(16)
    tally: dict[str, dict[str, int]] = {}
    trials = int(os.environ.get("MALT_DAMAGE_TRIALS", "6"))
    for kind in ("spec", "units", "predictions", "cache", "dataset", "pointer", "marker"):
        for trial in range(trials):
            repo = tmp_path / f"{kind}-{trial}"
            shutil.copytree(pristine, repo)
            path = _kinds(repo, exp)[kind]
            data = bytearray(path.read_bytes())
            at = rng.randrange(len(data))
            if trial % 2:
                data[at] ^= 1 << rng.randrange(8)  # one flipped bit
            else:
                data[at] = (data[at] + rng.randrange(1, 256)) % 256  # one changed byte (non-UTF-8 included)
            path.write_bytes(bytes(data))
            outcome = _probe(kind, repo, exp, mine, reference)
            tally.setdefault(kind, {}).setdefault(outcome, 0)
            tally[kind][outcome] += 1
            assert outcome != "SILENT", f"{kind}: byte {at} of {path.name} changed a number silently"
            shutil.rmtree(repo)
    print("damage trials:", tally)


@pytest.mark.timeout(120)
def test_repair_restores_a_damaged_spec_from_the_log_and_keeps_every_intact_record(tmp_path):
    repo = tmp_path / "repo"
    exp = invoke(*CV, "--repo", repo).output.strip().splitlines()[-1]
    spec = repo / "experiments" / exp / "spec.json"
    text = spec.read_text()
    spec.write_text(text.replace('"missing": 0.2', '"missing": 0.3'))  # parses, but relabels the experiment
    shown = invoke("show", exp, "--repo", repo)
    assert shown.exit_code == 2 and "spec.json is damaged" in shown.output
    assert "restored spec.json" in invoke("repair", "--repo", repo).output
    assert spec.read_text() == text and "5/5" in invoke("results", "--repo", repo).output


# ---- a repository is data, not instructions --------------------------------------------------------
@pytest.mark.timeout(180)
def test_links_and_traversal_inside_a_repository_are_refused(tmp_path):
    repo = tmp_path / "repo"
    exp = invoke(*CV, "--repo", repo).output.strip().splitlines()[-1]
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.json").write_text("{}")
    (victim / "precious.txt").write_text("keep me")
    guarded = snapshot(victim)
    attempts = 0

    def refused(args, where):
        nonlocal attempts
        attempts += 1
        result = invoke(*args)
        assert result.exit_code == 2, (where, result.output)
        assert "error:" in result.output and "Traceback" not in result.output, (where, result.output)
        assert snapshot(victim) == guarded, where

    folder = repo / "experiments" / exp
    for name in (".lock", "units.log", "predictions.log", "spec.json"):
        target = folder / name
        saved = target.read_bytes()
        target.unlink()
        target.symlink_to(victim / "precious.txt")
        refused([*CV, "--param", "sleep=0.001", "--repo", repo], f"symlinked {name}")
        refused(["rerun", "--algo", "test-counting", "--repo", repo], f"rerun with symlinked {name}")
        target.unlink()
        target.write_bytes(saved)
    (repo / ".lock").unlink()
    (repo / ".lock").symlink_to(victim / "precious.txt")
    refused([*CV, "--param", "sleep=0.002", "--repo", repo], "symlinked repository lock")
    (repo / ".lock").unlink()
    moved = tmp_path / "moved-experiment"
    folder.rename(moved)
    folder.symlink_to(moved)
    refused([*CV, "--repo", repo], "symlinked experiment folder")
    folder.unlink()
    moved.rename(folder)
    shutil.rmtree(repo / "cache", ignore_errors=True)
    (repo / "cache").symlink_to(victim)
    refused([*CV, "--param", "kernel_seconds=0.05", "--param", "kernel_size=7", "--repo", repo], "symlinked cache")
    (repo / "cache").unlink()
    for args in (["repair", "--experiment", "../../victim", "--repo", repo],
                 ["show", "../victim", "--repo", repo],
                 ["rescore", "--experiment", "/etc", "--repo", repo],
                 ["datasets", "import", str(victim / "x"), str(victim / "precious.txt"), "--repo", repo],
                 ["datasets", "import", "../x", str(victim / "precious.txt"), "--repo", repo]):
        refused(args, " ".join(map(str, args)))
    assert attempts >= 15
    assert "5/5" in invoke("results", "--repo", repo).output


# ---- concurrent writers -----------------------------------------------------------------------------
@pytest.mark.timeout(240)
def test_two_experiments_of_one_repository_run_at_the_same_time(tmp_path):
    shared = tmp_path / "shared"
    a = [*CV, "--param", "sleep=0.15"]
    b = [*CV, "--missing", "0.3", "--param", "sleep=0.15"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen(malt_cmd(*args, "--repo", str(shared)), env=env, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for args in (a, b)]
    outs = [p.communicate(timeout=200) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    for args in (a, b):
        run_malt(*args, "--repo", tmp_path / "serial")
    assert values(shared) == values(tmp_path / "serial")
    # the same experiment twice: the second refuses with one line (or queues with --wait)
    slow = [*CV, "--param", "sleep=1.5"]  # the same experiment as `a`, new units that take a while
    first = subprocess.Popen(malt_cmd(*slow, "--repo", str(shared)), env=env, cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock = shared / "experiments" / outs[0][0].strip() / ".lock"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and f"pid {first.pid} ".encode() not in lock.read_bytes():
        time.sleep(0.05)
    second = run_malt(*slow, "--repo", shared, check=False)
    waited = run_malt(*slow, "--wait", "--repo", shared, check=False)
    first.communicate(timeout=120)
    assert second.returncode == 2 and "in use by malt pid" in second.stderr and "--wait" in second.stderr
    assert waited.returncode == 0 and "0 unit(s) run, 5 already stored" in waited.stderr


@pytest.mark.timeout(180)
def test_readers_never_see_false_damage_while_a_writer_compacts(tmp_path):
    repo = tmp_path / "repo"
    exp = invoke(*CV, "--param", "sleep=0,0.001,0.002,0.003", "--repo", repo).output.strip().splitlines()[-1]
    script = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from malt.repository.store import Repository\n"
              f"files = Repository({str(repo)!r}).experiment({exp!r})\n"
              "for _ in range(40):\n"
              "    with files.writer(wait=True) as w:\n"
              "        units, _, _ = files.read_log()\n"
              "        for record in units.values():\n"
              "            w.commit(dict(record), None)\n"
              "        w.compact(force=True)\n")
    writer = subprocess.Popen([sys.executable, "-c", script])
    reads = 0
    while writer.poll() is None or reads < 20:
        problems: list[str] = []
        units, _, _ = Repository(repo).experiment(exp).read_log(problems)
        assert problems == [] and len(units) == 20
        reads += 1
    assert writer.returncode == 0 and reads >= 20


# ---- experiments on a user's own files -------------------------------------------------------------
@pytest.mark.timeout(180)
def test_rerun_reopens_a_user_file_from_anywhere_and_names_a_changed_one(tmp_path):
    data = tmp_path / "work" / "ml.csv"
    data.parent.mkdir()
    rows = ["f1,f2,l1,l2"] + [f"{i},{(i * 7) % 5},{i % 2},{int(i % 3 == 0)}" for i in range(30)]
    data.write_text("\n".join(rows) + "\n")
    repo = tmp_path / "repo"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    made = subprocess.run(malt_cmd("cv", "--algo", "mllr", "--dataset", "ml.csv", "--labels", "2", "--quiet",
                                   "--repo", str(repo)), cwd=data.parent, env=env, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    other = run_malt(*CV, "--repo", repo).stdout.strip()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rerun = subprocess.run(malt_cmd("rerun", "--algo", "mllr", "--repo", str(repo)), cwd=elsewhere, env=env,
                           capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert "5 unit(s) run" in rerun.stderr
    data.write_text(data.read_text().replace("\n3,", "\n4,", 1))
    broken = subprocess.run(malt_cmd("rerun", "--repo", str(repo)), cwd=elsewhere, env=env, capture_output=True,
                            text=True)
    assert broken.returncode == 2 and f"file {data}" in broken.stderr and "changed" in broken.stderr
    assert other in broken.stdout  # the other experiment was still rerun


@pytest.mark.timeout(120)
def test_files_follow_the_umask(tmp_path):
    previous = os.umask(0o027)
    try:
        repo = tmp_path / "repo"
        exp = invoke(*CV, "--repo", repo).output.strip().splitlines()[-1]
    finally:
        os.umask(previous)
    for path in (repo / "malt-repository.json", repo / "experiments" / exp / "spec.json",
                 repo / "experiments" / exp / "units.log"):
        assert path.stat().st_mode & 0o777 == 0o640, path


@pytest.mark.timeout(60)
def test_a_lock_note_lives_only_while_the_lock_is_held(tmp_path):
    """The holder note ("malt pid N since T", for the "in use by" line) is cleared on release, so a
    command that refuses its input leaves the lock file as it found it however long it ran (it used
    to keep the refusing command's timestamp: the snapshot test above failed whenever a second
    boundary fell inside it)."""
    from malt.repository.locks import FileLock

    path = tmp_path / ".lock"
    lock = FileLock(tmp_path, path, "the experiment").acquire()
    assert path.read_text().startswith(f"malt pid {os.getpid()} since ")
    with pytest.raises(Exception, match="in use by malt pid"):
        FileLock(tmp_path, path, "the experiment").acquire()  # a second holder is told who holds it
    lock.release()
    assert path.read_bytes() == b""
    shared = FileLock(tmp_path, path, "the repository").acquire(exclusive=False)
    shared.release()
    assert path.read_bytes() == b""


def test_prediction_arrays_come_back_with_their_shapes_including_scalars():
    """What a task packs is what it reads back (the engine scores a unit on the round trip): a 0-d
    array stays 0-d, a Fortran-ordered one keeps its shape and values."""
    import numpy as np

    from malt.repository.experiments import pack_arrays, unpack_arrays

    arrays = {"scalar": np.array(-12.5), "matrix": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
              "ids": np.arange(4, dtype=np.int32)}
    meta, blob = pack_arrays(arrays)
    back = unpack_arrays(meta, memoryview(blob))
    for name, arr in arrays.items():
        assert back[name].shape == arr.shape and back[name].dtype == arr.dtype
        assert np.array_equal(back[name], arr)
