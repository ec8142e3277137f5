"""index.html in a real browser: headless Chromium, driven over the Chrome DevTools Protocol, loads the
report from a localhost HTTP server; the test fails on console errors, uncaught exceptions, failed
requests, images that did not decode and tables without rows.

Chromium comes from the project's set-up (``make test`` runs ``apt-get install -y chromium`` when
``chromium`` is missing). Without it these tests fail -- they are not skipped.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports import build_report, parse_spec

from .report_fixtures import extra_algorithms, tiny_spec

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-allow-origins=*",
    "--remote-debugging-port=0",
]

PAGE_FACTS = """JSON.stringify({
  title: document.title,
  images: Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth})),
  tables: Array.from(document.querySelectorAll('table')).map(t => ({
    caption: t.caption ? t.caption.textContent : '',
    rows: Array.from(t.tBodies).reduce((n, b) => n + b.rows.length, 0)})),
})"""


class Chromium:
    """A headless Chromium with a DevTools endpoint, in a fresh profile directory."""

    def __init__(self) -> None:
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if binary is None:
            pytest.fail("chromium is not installed; `make test` installs it (apt-get install -y chromium)")
        self.profile = tempfile.mkdtemp(prefix="collsim-chromium-")
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 90
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read().decode(errors="replace") if self.proc.poll() is not None else ""
                self.close()
                pytest.fail(f"chromium did not start (exit {self.proc.returncode}): {err[-2000:]}")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])

    def page_socket(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=30) as resp:
            targets = json.load(resp)
        return next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """One DevTools session on a page: navigate, collect what went wrong, evaluate JavaScript."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict[str, Any]] = []
        for method in ("Runtime.enable", "Log.enable", "Page.enable", "Network.enable"):
            self.call(method)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        my_id = self.next_id
        self.ws.send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, event: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(e["method"] == event for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {event} within {timeout} s")
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)

    def open(self, url: str) -> dict[str, Any]:
        """Load ``url``; returns the page's facts and the problems seen while loading it."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_for("Page.loadEventFired")
        self.call(
            "Runtime.evaluate",
            expression="Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null)))",
            awaitPromise=True,
        )
        facts = json.loads(self.call("Runtime.evaluate", expression=PAGE_FACTS, returnByValue=True)["result"]["value"])
        facts["problems"] = problems(self.events, facts)
        return facts

    def close(self) -> None:
        self.ws.close()


def problems(events: list[dict[str, Any]], facts: dict[str, Any]) -> list[str]:
    """Everything that makes a page broken: console errors, exceptions, failed loads, blank images,
    empty tables."""
    out = []
    for e in events:
        method, params = e["method"], e.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            out.append("console error: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            out.append(f"exception: {details.get('exception', {}).get('description', details.get('text'))}")
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            out.append(f"log error: {entry['text']}" + (f" ({entry['url']})" if entry.get("url") else ""))
        elif method == "Network.loadingFailed":
            out.append(f"request failed: {params.get('errorText')}")
    if not facts["images"]:
        out.append("no images")
    for img in facts["images"]:
        if not img["complete"] or img["width"] == 0:
            out.append(f"image not rendered: {img['alt']!r}")
    if not facts["tables"]:
        out.append("no tables")
    for table in facts["tables"]:
        if table["rows"] == 0:
            out.append(f"empty table: {table['caption']!r}")
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[Page]:
    chromium = Chromium()
    page = Page(chromium.page_socket())
    try:
        yield page
    finally:
        page.close()
        chromium.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[str, Path]]:
    """A localhost HTTP server over a directory holding a real report (under ``report/``)."""
    root = tmp_path_factory.mktemp("site")
    with extra_algorithms():
        spec = parse_spec(tiny_spec(algorithms=["ring", "test-flat"]))
        build_report(spec, root / "report", executor="serial", progress=False)
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


def test_the_report_renders_cleanly_in_chromium(browser, served):
    base, _root = served
    page = browser.open(f"{base}/report/index.html")
    assert page["problems"] == []
    assert page["title"].startswith("tiny")
    assert len(page["images"]) == 6 and all(img["width"] >= 400 for img in page["images"])
    assert len(page["tables"]) >= 5 and all(t["rows"] > 0 for t in page["tables"])


def test_the_checker_catches_a_broken_page(browser, served):
    """The same checks on a page with every fault: they must all be reported (the test can fail)."""
    base, root = served
    (root / "broken.html").write_text(
        "<!DOCTYPE html><html><head><title>broken</title></head><body>"
        '<img alt="bad data" src="data:image/png;base64,AAAA">'
        '<img alt="missing file" src="missing.png">'
        "<table><caption>nothing</caption><thead><tr><th>a</th></tr></thead><tbody></tbody></table>"
        '<script>console.error("boom")</script>'
        "<script>undefinedFunction()</script>"
        "</body></html>"
    )
    found = browser.open(f"{base}/broken.html")["problems"]
    text = "\n".join(found)
    assert "console error: boom" in text
    assert "undefinedFunction is not defined" in text
    assert "image not rendered: 'bad data'" in text and "image not rendered: 'missing file'" in text
    assert "404" in text  # the missing image's failed load, as the console reports it
    assert "empty table: 'nothing'" in text
