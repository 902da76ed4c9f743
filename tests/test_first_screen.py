"""What a newcomer sees first (issue 48): `malt datasets show` says each thing once, and `malt show`
and the report round every cell by the one rule of malt.results.formatting."""
from __future__ import annotations

import re

import numpy as np
import pytest
from click.testing import CliRunner

from malt.cli import main
from malt.results import ResultSet
from malt.results.formatting import format_mean_std
from tests.conftest import require_data


@pytest.mark.parametrize("name", ["synthetic-multilabel", "sklearn-iris"])
def test_datasets_show_prints_each_line_once(name, tmp_path):
    out = CliRunner().invoke(main, ["datasets", "show", name, "--repo", str(tmp_path / "r")])
    assert out.exit_code == 0, out.output
    keys = [line.split(":", 1)[0].strip() for line in out.output.splitlines() if ":" in line]
    assert "source" in keys and len(keys) == len(set(keys)), keys


def test_datasets_show_of_a_catalogue_dataset_prints_its_source_once(tmp_path):
    require_data("multilabel/emotions/emotions-train.arff")
    out = CliRunner().invoke(main, ["datasets", "show", "emotions"])
    assert out.exit_code == 0, out.output
    assert out.output.count("source:") == 1 and "MULAN" in out.output and "download:" in out.output


def test_the_rule_rounds_mean_and_std_to_the_same_decimals():
    assert format_mean_std(6.7507, 1.7433, percent=True) == "6.8 ± 1.7"  # the papers' one decimal for %
    assert format_mean_std(6.7507, 1.7433) == "6.75 ± 1.74"
    assert format_mean_std(0.21349, 0.0111) == "0.213 ± 0.011"
    assert format_mean_std(26.71, 0.84, True, folds=1) == "26.7" == format_mean_std(26.71, float("nan"), True)
    assert format_mean_std(float("nan"), 1.0) == "n/a"


@pytest.mark.timeout(120)
def test_malt_show_and_the_report_render_every_cell_identically(tmp_path):
    from malt.results.report import write_report

    repo = str(tmp_path / "r")
    run = CliRunner().invoke(main, ["cv", "--repo", repo, "--algo", "mllr", "--dataset", "synthetic-multilabel",
                                    "--quiet"])
    assert run.exit_code == 0, run.output
    experiment = run.output.strip().splitlines()[-1]
    shown = CliRunner().invoke(main, ["show", "--repo", repo, experiment])
    assert shown.exit_code == 0, shown.output
    show_cells = {re.split(r"\s{2,}", line.strip())[0].split(" (")[0]: re.split(r"\s{2,}", line.strip())[-1]
                  for line in shown.output.splitlines()[1:] if "±" in line}

    md, _ = write_report(ResultSet.load(repo), tmp_path / "report", formats=("png",))
    report_cells = [row.split("|")[2].strip().strip("*") for row in md.read_text().splitlines()
                    if row.startswith("| ") and "±" in row]
    assert len(show_cells) == 13 and list(show_cells.values()) == report_cells

    # the ranking loss cell from the stored per-fold values, by hand: percent, one decimal
    frame = ResultSet.load(repo).frame
    folds = frame[frame["metric"] == "ranking_loss"].sort_values("fold")["value"].to_numpy() * 100
    assert len(folds) == 5
    assert show_cells["ranking_loss"] == f"{folds.mean():.1f} ± {np.std(folds, ddof=1):.1f}"
