"""Dataset loading: the ARFF parser, real MULAN files, and `malt datasets fetch` against a real HTTP
server on 127.0.0.1 serving the shared data folder."""
from __future__ import annotations

import functools
import hashlib
import http.server
import threading

import numpy as np
import pytest
from click.testing import CliRunner

from malt.cli import main
from malt.datasets.arff import read_arff
from malt.datasets.catalogue import DataRoots, entry
from malt.errors import DataError
from tests.conftest import require_data


def test_dense_sparse_nominal_and_quoted_rows(tmp_path):
    path = tmp_path / "x.arff"
    path.write_text("% comment\n@RELATION 'r'\n@attribute 'f one' numeric\n@attribute f2 {a,b}\n"
                    "@attribute lab {0,1}\n@data\n1.5,b,1\n?,'a',0\n{0 2.5,2 1}\n")
    arff = read_arff(path)
    assert arff.relation == "r" and arff.names == ["f one", "f2", "lab"]
    np.testing.assert_array_equal(arff.data, [[1.5, 1, 1], [np.nan, 0, 0], [2.5, 0, 1]])


@pytest.mark.parametrize("body,problem", [
    ("@relation r\n@attribute a numeric\n@data\n1\nfoo\n", "line 5"),
    ("@relation r\n@attribute a numeric\n", "no @data"),
    ("@relation r\n@attribute a strung\n@data\n", "line 2"),
    ("@relation r\n@attribute a numeric\n@data\n{3 1}\n", "line 4"),
])
def test_malformed_files_name_file_and_line(tmp_path, body, problem):
    path = tmp_path / "bad.arff"
    path.write_text(body)
    with pytest.raises(DataError, match=problem) as info:
        read_arff(path)
    assert str(path) in str(info.value)


def test_mulan_sets_match_their_published_statistics():
    require_data("multilabel/emotions/emotions-train.arff", "multilabel/scene/scene-train.arff")
    roots = DataRoots.default()
    # cardinality / density from MULAN's own table (shared/datasets/multilabel/*/SOURCE.md)
    for name, shape, cardinality in [("emotions", (593, 72, 6), 1.869), ("scene", (2407, 294, 6), 1.074)]:
        ds = entry(name).loader(roots)
        assert (ds["X"].shape[0], ds["X"].shape[1], ds["Y"].shape[1]) == shape
        assert ds["Y"].sum() / ds["Y"].shape[0] == pytest.approx(cardinality, abs=2e-3)


@pytest.fixture
def http_root(tmp_path):
    """Serve a folder on 127.0.0.1; yields (folder, base URL)."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _serve_emotions(data, folder):
    for remote in entry("emotions").remotes:
        target = folder / remote.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((data / remote.path).read_bytes())


def test_fetch_downloads_and_verifies_checksums(http_root, tmp_path, monkeypatch):
    data = require_data("multilabel/emotions/emotions-train.arff")
    folder, url = http_root
    _serve_emotions(data, folder)
    monkeypatch.delenv("MALT_DATA")
    repo = tmp_path / "repo"
    result = CliRunner().invoke(main, ["datasets", "fetch", "emotions", "--mirror", url, "--repo", str(repo)])
    assert result.exit_code == 0, result.output
    for remote in entry("emotions").remotes:
        assert hashlib.sha256((repo / "data" / remote.path).read_bytes()).hexdigest() == remote.sha256
    shown = CliRunner().invoke(main, ["datasets", "show", "emotions", "--repo", str(repo)])
    assert "593×72" in shown.output


def test_fetch_refuses_a_file_with_the_wrong_checksum(http_root, tmp_path):
    data = require_data("multilabel/emotions/emotions-train.arff")
    folder, url = http_root
    _serve_emotions(data, folder)
    damaged = folder / entry("emotions").remotes[0].path
    damaged.write_bytes(damaged.read_bytes()[:-10])
    repo = tmp_path / "repo"
    result = CliRunner().invoke(main, ["datasets", "fetch", "emotions", "--mirror", url, "--repo", str(repo)])
    assert result.exit_code == 2 and "checksum mismatch" in result.output
    assert not (repo / "data" / entry("emotions").remotes[0].path).exists()
