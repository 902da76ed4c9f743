"""Repositories written by malt's first store format still open: read as they are, migrated in place
(crash-safe) by the first write, and salvaged record by record when their HDF5 container is damaged.

The fixture (tests/fixtures/format1) holds unit records written by malt 623b6d6; the HDF5 container
is rebuilt here exactly as that version's ``Repository.compact`` wrote it: dataset ``units`` of
variable-length strings (``h5py.string_dtype()``), attribute ``format = 1``.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from malt.cli import main
from malt.repository.store import Repository
from malt.results import ResultSet
from tests.helpers import snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "format1"
OLD_ML = "synthetic-multilabel-multilabel-efcd7812"
OLD_MISSING = "synthetic-multilabel-missing-a5eda267"


def legacy_repository(path: Path, journal: bool = False) -> Path:
    path.mkdir(parents=True)
    shutil.copy(FIXTURE / "malt-repository.json", path / "malt-repository.json")
    for folder in sorted((FIXTURE / "experiments").iterdir()):
        target = path / "experiments" / folder.name
        target.mkdir(parents=True)
        shutil.copy(folder / "spec.json", target / "spec.json")
        texts = json.loads((folder / "results.json").read_text())
        if journal:  # an interrupted format-1 run: the newest unit still in the journal, not compacted
            (target / "journal").mkdir()
            record = json.loads(json.loads(texts[-1])["record"])
            (target / "journal" / f"{record['unit']}-1.json").write_text(texts.pop())
        with h5py.File(target / "results.h5", "w") as f:
            f.create_dataset("units", data=np.array(texts, dtype=object), dtype=h5py.string_dtype())
            f.attrs["format"] = 1
    return path


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _old_values(experiment: str) -> dict:
    texts = json.loads((FIXTURE / "experiments" / experiment / "results.json").read_text())
    records = [json.loads(json.loads(t)["record"]) for t in texts]
    return {(r["display"], r["fold"], m): v for r in records for m, v in r["metrics"].items()}


@pytest.mark.timeout(120)
def test_a_format_one_repository_is_read_as_it_is(tmp_path):
    repo = legacy_repository(tmp_path / "repo", journal=True)
    before = snapshot(repo)
    listing = invoke("results", "--repo", repo)
    assert listing.exit_code == 0 and "6/6" in listing.output and "2/2" in listing.output
    shown = invoke("show", OLD_MISSING, "--repo", repo, "--format", "csv", "--raw")
    assert shown.exit_code == 0
    rs = ResultSet.from_repository(Repository(repo), [OLD_MISSING])
    got = {(d, f, m): v for d, f, m, v in zip(rs.frame.display, rs.frame.fold, rs.frame.metric, rs.frame.value)}
    assert got == _old_values(OLD_MISSING)
    ml = ResultSet.from_repository(Repository(repo), [OLD_ML])
    # one-error, average precision and both F1 measures changed definition since: those values stay out
    assert ml.rescore_stale == 6 * 4 and set(ml.frame.metric) >= {"ranking_loss", "coverage", "hamming_loss"}
    assert snapshot(repo) == before  # reading changes nothing


@pytest.mark.timeout(180)
def test_the_first_write_migrates_in_place_and_keeps_every_result(tmp_path):
    repo = legacy_repository(tmp_path / "repo", journal=True)
    result = invoke("cv", "--algo", "column-mean", "--dataset", "synthetic-multilabel", "--task", "missing",
                    "--folds", "2", "--repo", repo)
    assert result.exit_code == 0, result.output
    assert "0 unit(s) run, 2 already stored" in result.output  # the migrated units are the same units
    new_id = result.output.strip().splitlines()[-1]
    ids = json.loads((repo / "legacy" / "ids.json").read_text())
    assert ids[OLD_MISSING] == new_id
    assert (repo / "legacy" / "experiments" / OLD_MISSING / "results.h5").exists()  # kept, never deleted
    assert Repository(repo).format == 2
    rs = ResultSet.from_repository(Repository(repo), [new_id])
    got = {(d, f, m): v for d, f, m, v in zip(rs.frame.display, rs.frame.fold, rs.frame.metric, rs.frame.value)}
    assert got == _old_values(OLD_MISSING)
    unknown = invoke("show", OLD_MISSING, "--repo", repo)
    assert unknown.exit_code == 2 and "Unknown experiment" in unknown.output


@pytest.mark.timeout(180)
def test_migration_interrupted_after_the_new_folder_is_completed_on_the_next_write(tmp_path):
    from malt.engine.migrate import _convert

    repo = legacy_repository(tmp_path / "repo")
    store = Repository(repo)
    new_id = _convert(store, OLD_ML, lambda line: None)  # as if killed right after this experiment
    assert (repo / "experiments" / new_id / "units.log").exists() and store.format == 1
    (repo / "legacy" / "experiments" / OLD_ML).rename(repo / "experiments" / OLD_ML)  # not yet moved aside
    assert invoke("rerun", "--repo", repo, "--quiet").exit_code == 0
    assert store.format == 2 and not (repo / "experiments" / OLD_ML).exists()
    assert sorted(store.experiments()) == sorted(json.loads((repo / "legacy" / "ids.json").read_text()).values())


@pytest.mark.timeout(120)
def test_a_flipped_bit_in_the_container_costs_no_intact_record(tmp_path):
    """One bit in the HDF5 superblock makes results.h5 unreadable to h5py; every record is still
    recovered from the file's bytes, each verified by its own checksum."""
    repo = legacy_repository(tmp_path / "repo")
    results = repo / "experiments" / OLD_ML / "results.h5"
    data = bytearray(results.read_bytes())
    data[9] ^= 0x04  # inside the superblock signature and version bytes
    results.write_bytes(bytes(data))
    with pytest.raises(OSError):
        h5py.File(results, "r")
    problems: list[str] = []
    units, _, _ = Repository(repo).experiment(OLD_ML).read_log(problems)
    assert len(units) == 6 and "6 intact record(s) recovered" in problems[0]
    repaired = invoke("repair", "--repo", repo)
    assert repaired.exit_code == 0, repaired.output
    assert "6/6" in invoke("results", "--repo", repo).output
