"""`malt.datasets.fetch` against a real HTTP server on 127.0.0.1 (http.server in a thread): a good
download, a wrong checksum, the size cap (declared and streamed), the overall deadline, a truncated
body, an HTTP error, a bad mirror URL and symbolic links in the way. After every failure no file,
no `.part` file and no folder made by the call is left behind."""
from __future__ import annotations

import hashlib
import http.server
import threading
import time

import pytest

from malt.datasets.catalogue import DatasetEntry, Remote
from malt.datasets.fetch import fetch
from malt.errors import DataError

PAYLOAD = b"@relation r\n@attribute a numeric\n@attribute l {0,1}\n@data\n1,0\n2,1\n" * 50


class Handler(http.server.BaseHTTPRequestHandler):
    """/ok: the payload; /big: a 10 MB Content-Length; /stream: 3 MB without a length; /slow: 20
    chunks 0.3 s apart; /short: a Content-Length larger than the body; anything else: 404."""

    def log_message(self, *args):
        pass

    def handle(self):
        # the client gives up on /slow, /big and /stream by design: its disconnect is not an error, and a
        # traceback printed from this thread would land in whatever test captures stderr next
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def finish(self):
        try:
            super().finish()
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        name = self.path.rsplit("/", 1)[-1]
        if name == "ok":
            self._head(len(PAYLOAD))
            self.wfile.write(PAYLOAD)
        elif name == "big":
            self._head(10_000_000)
            self.wfile.write(b"x" * 1000)
        elif name == "stream":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            for _ in range(3):
                self.wfile.write(b"x" * 1_000_000)
        elif name == "slow":
            self._head(20 * 100)
            for _ in range(20):
                self.wfile.write(b"y" * 100)
                self.wfile.flush()
                time.sleep(0.3)
        elif name == "short":
            self._head(len(PAYLOAD) + 500)
            self.wfile.write(PAYLOAD)
        else:
            self.send_error(404)

    def _head(self, length):
        self.send_response(200)
        self.send_header("Content-Length", str(length))
        self.end_headers()


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = False  # server_close() joins the handler threads: none outlives the module
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def entry(name: str, sha: str | None = None) -> DatasetEntry:
    sha = sha or hashlib.sha256(PAYLOAD).hexdigest()
    return DatasetEntry(name="fetch-test", loader=lambda roots: None, description="", shape="", source="test",
                        files=(f"t/{name}",), remotes=(Remote(f"http://unused/{name}", f"t/{name}", sha),))


def leftovers(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))  # files and folders


def test_download_verifies_and_moves_into_place(server, tmp_path):
    paths = fetch(entry("ok"), tmp_path, mirror=server)
    assert paths == [tmp_path / "t" / "ok"] and paths[0].read_bytes() == PAYLOAD
    assert fetch(entry("ok"), tmp_path, mirror=server) == paths  # verified copy: nothing downloaded
    assert leftovers(tmp_path) == ["t", "t/ok"]


@pytest.mark.parametrize("name,kwargs,message", [
    ("ok", {"sha": "0" * 64}, "checksum mismatch"),
    ("big", {"max_bytes": 1_000_000}, "limit"),
    ("stream", {"max_bytes": 1_000_000}, "limit"),
    ("short", {}, "Could not download"),
    ("missing", {}, "HTTP 404"),
])
def test_failures_leave_nothing_behind(server, tmp_path, name, kwargs, message):
    sha = kwargs.pop("sha", None)
    with pytest.raises(DataError, match=message):
        fetch(entry(name, sha), tmp_path, mirror=server, **kwargs)
    assert leftovers(tmp_path) == []


def test_overall_deadline_stops_a_trickling_download(server, tmp_path):
    start = time.monotonic()
    with pytest.raises(DataError, match="deadline"):
        fetch(entry("slow"), tmp_path, mirror=server, timeout=30, deadline=1.0)
    assert time.monotonic() - start < 3.0  # 20 chunks × 0.3 s would take 6 s
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mirror", ["notaurl", "ftp://example.org/x", "file:///etc", "http://"])
def test_mirror_must_be_an_http_url(tmp_path, mirror):
    with pytest.raises(DataError, match="not an http"):
        fetch(entry("ok"), tmp_path, mirror=mirror)


def test_symbolic_links_are_never_written_through(server, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_bytes(b"keep me")
    root = tmp_path / "data"
    (root / "t").mkdir(parents=True)
    (root / "t" / "ok").symlink_to(victim)
    with pytest.raises(DataError, match="symbolic link"):
        fetch(entry("ok"), root, mirror=server)
    (root / "t" / "ok").unlink()
    (root / "t").rmdir()
    (root / "t").symlink_to(outside)
    with pytest.raises(DataError, match="symbolic link"):
        fetch(entry("ok"), root, mirror=server)
    assert victim.read_bytes() == b"keep me" and sorted(p.name for p in outside.iterdir()) == ["victim"]


def test_a_planted_part_link_is_replaced_not_followed(server, tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    root = tmp_path / "data"
    (root / "t").mkdir(parents=True)
    (root / "t" / ".ok.part").symlink_to(victim)
    fetch(entry("ok"), root, mirror=server)
    assert victim.read_bytes() == b"keep me" and (root / "t" / "ok").read_bytes() == PAYLOAD
