"""A minimal W3C WebDriver client (standard library only) driving headless Chromium via chromedriver.

Enough for the report test: open a page, run JavaScript, click, read the browser console, take
screenshots. Chromium and chromedriver come from Debian's packages (``.ci/run`` installs them).
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                 # every host name fails to resolve: a page that tries the network logs an error
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1400,900"]


def find_browser() -> tuple[str, str] | None:
    """(chromium, chromedriver) executables, or None when either is missing."""
    browser = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriverError(RuntimeError):
    pass


class Browser:
    """``with Browser() as b: b.open(path); b.script('return 1')`` — one fresh headless Chromium."""

    def __init__(self, browser: str, driver: str, timeout: float = 20.0):
        self.browser, self.driver, self.timeout = browser, driver, timeout
        self.port = _free_port()
        self.profile = tempfile.mkdtemp(prefix="malt-chromium-")
        self.process = None
        self.session = None

    # ---- protocol --------------------------------------------------------------------------------
    def _call(self, method: str, path: str, payload=None):
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            body = json.loads(exc.read() or b"{}")
            raise WebDriverError(f"{method} {path}: {body.get('value', body)}") from None
        return body.get("value")

    def _session(self, method: str, path: str, payload=None):
        return self._call(method, f"/session/{self.session}{path}", payload)

    # ---- life cycle ------------------------------------------------------------------------------
    def __enter__(self) -> "Browser":
        self.process = subprocess.Popen([self.driver, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if self._call("GET", "/status").get("ready"):
                    break
            except (urllib.error.URLError, ConnectionError, WebDriverError):
                pass
            if time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.1)
        options = {"binary": self.browser, "args": CHROMIUM_ARGS + [f"--user-data-dir={self.profile}"]}
        capabilities = {"browserName": "chrome", "goog:chromeOptions": options,
                        "goog:loggingPrefs": {"browser": "ALL"}}
        self.session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})["sessionId"]
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.session:
                self._call("DELETE", f"/session/{self.session}")
        except (WebDriverError, urllib.error.URLError, ConnectionError, OSError):
            pass
        finally:
            if self.process is not None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
            shutil.rmtree(self.profile, ignore_errors=True)

    # ---- commands --------------------------------------------------------------------------------
    def open(self, path: str | os.PathLike) -> None:
        self._session("POST", "/url", {"url": Path(path).resolve().as_uri()})

    def script(self, source: str, *args):
        return self._session("POST", "/execute/sync", {"script": source, "args": list(args)})

    def find(self, css: str) -> str:
        return self._session("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css: str) -> None:
        self._session("POST", f"/element/{self.find(css)}/click", {})

    def console(self) -> list[dict]:
        """Browser console entries since the last call (level, message)."""
        return self._session("POST", "/se/log", {"type": "browser"})

    def resize(self, width: int, height: int) -> None:
        """The window's outer size in CSS pixels (the viewport is what the page reports as innerWidth)."""
        self._session("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self, path: str | os.PathLike | None = None) -> bytes:
        png = base64.b64decode(self._session("GET", "/screenshot"))
        if path is not None:
            Path(path).write_bytes(png)
        return png
