"""A real headless Chromium for the report's tests: a fresh profile under a temp dir (removed
after), and every request it tries sent to a proxy this helper listens on, on 127.0.0.1, which
answers nothing and counts what arrived. Debian's chromium is installed by scripts/setup.sh; a
missing browser fails the test (it is not a skip)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

BROWSER = shutil.which("chromium")
QUIET = [
    "--no-first-run", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--disable-extensions", "--disable-default-apps",
    "--disable-domain-reliability", "--no-pings", "--disable-gpu", "--no-sandbox",
    "--disable-features=OptimizationHints,OptimizationGuideModelDownloading,Translate,MediaRouter",
]  # fmt: skip


@dataclass
class Proxy:
    """Accepts connections, records the first line of each, closes them."""

    sock: socket.socket = field(default_factory=socket.socket)
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        self.handlers: list[threading.Thread] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            # One thread each: a preconnected socket that sends nothing must not hold up the
            # next connection's first line.
            t = threading.Thread(target=self._first_line, args=(conn,), daemon=True)
            t.start()
            self.handlers.append(t)

    def _first_line(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(2.0)
            try:
                first = conn.recv(4096).split(b"\r\n", 1)[0]
            except OSError:
                return
            if first:
                self.requests.append(first.decode("latin-1"))

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for t in self.handlers:
            t.join()
        self.sock.close()


@dataclass
class Rendered:
    dom: str
    requests: list[str]
    """Every request the page tried (its own file excluded), as the browser reported it."""
    proxied: list[str]
    """What reached the proxy: the browser's own background traffic (update checks, sign-in
    preconnects) lands here too, which is why the page's requests are taken from DevTools."""
    blocked: list[str]
    """Requests the page tried that the browser refused (reason, url), e.g. ("csp", ...)."""


class _Pipe:
    """Chrome DevTools Protocol over --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-separated
    JSON), so no websocket library and no open debugging port."""

    def __init__(self, w: int, r: int) -> None:
        self.w, self.r = w, r
        self.buf = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            reply = self._read(60.0)
            if reply is None:
                raise TimeoutError(f"no reply to {method}")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def _read(self, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                return None
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self.buf += chunk
        raw, _, self.buf = self.buf.partition(b"\0")
        return dict(json.loads(raw))

    def drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            ev = self._read(left)
            if ev is not None:
                self.events.append(ev)

    def wait_for(self, method: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            left = deadline - time.monotonic()
            ev = self._read(left) if left > 0 else None
            if ev is None:
                raise TimeoutError(f"no {method}")
            self.events.append(ev)


def render(
    url: str, screenshot: Path | None = None, size: tuple[int, int] = (1200, 900)
) -> Rendered:
    """Open `url` and let its scripts run (plus a second for anything they scheduled); the DOM
    then, every request the page tried, and a PNG screenshot if asked."""
    if BROWSER is None:
        pytest.fail("chromium is not installed: run scripts/setup.sh")
    proxy = Proxy()
    profile = Path(tempfile.mkdtemp(prefix="assay-test-chromium-"))
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    proc: subprocess.Popen[bytes] | None = None
    try:
        argv = [
            BROWSER, "--headless", f"--user-data-dir={profile}", "--remote-debugging-pipe",
            f"--proxy-server=127.0.0.1:{proxy.port}", "--proxy-bypass-list=<-loopback>",
            *QUIET, "about:blank",
        ]  # fmt: skip

        def fds() -> None:  # the pipe protocol's fixed descriptors
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        proc = subprocess.Popen(
            argv, preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=False,
        )  # fmt: skip
        os.close(to_browser_r)
        os.close(from_browser_w)
        cdp = _Pipe(to_browser_w, from_browser_r)
        targets = cdp.send("Target.getTargets")["targetInfos"]
        page_id = next(t["targetId"] for t in targets if t["type"] == "page")
        sid = cdp.send("Target.attachToTarget", targetId=page_id, flatten=True)["sessionId"]
        for domain in ("Network", "Page", "Runtime"):
            cdp.send(f"{domain}.enable", sid)
        cdp.send("Emulation.setDeviceMetricsOverride", sid, width=size[0], height=size[1],
                 deviceScaleFactor=1, mobile=False)  # fmt: skip
        cdp.send("Page.navigate", sid, url=url)
        cdp.wait_for("Page.loadEventFired", 120.0)
        cdp.drain(1.0)
        dom = cdp.send("Runtime.evaluate", sid, expression="document.documentElement.outerHTML",
                       returnByValue=True)["result"]["value"]  # fmt: skip
        if screenshot is not None:
            shot = cdp.send("Page.captureScreenshot", sid, format="png")["data"]
            screenshot.write_bytes(base64.b64decode(shot))
        own = url.split("#", 1)[0]
        requests = [
            e["params"]["request"]["url"]
            for e in cdp.events
            if e.get("method") == "Network.requestWillBeSent"
            and e["params"]["request"]["url"].split("#", 1)[0] != own
        ]
        urls = {
            e["params"]["requestId"]: e["params"]["request"]["url"]
            for e in cdp.events
            if e.get("method") == "Network.requestWillBeSent"
        }
        blocked = [
            f"{e['params']['blockedReason']} {urls.get(e['params']['requestId'], '?')}"
            for e in cdp.events
            if e.get("method") == "Network.loadingFailed" and e["params"].get("blockedReason")
        ]
        with contextlib.suppress(Exception):
            cdp.send("Browser.close")
        proc.wait(timeout=30)
        return Rendered("<!DOCTYPE html>" + str(dom), requests, list(proxy.requests), blocked)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for fd in (to_browser_w, from_browser_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        proxy.close()
        shutil.rmtree(profile, ignore_errors=True)


BROWSER_OWN = re.compile(
    r"^(CONNECT |[A-Z]+ https?://)[a-z0-9.-]+\.(google\.com|googleapis\.com)[:/]"
)
"""Chromium's own calls at start (clock, component updates, sign-in preconnect, optimization
hints), made whatever the page: the page's requests are judged from DevTools, this only keeps
the proxy check from counting them."""


def foreign(proxied: list[str]) -> list[str]:
    """Proxy traffic that is not the browser's own start-up calls."""
    return [r for r in proxied if not BROWSER_OWN.match(r)]


class Elements(HTMLParser):
    """Every element of a dumped DOM as (tag, attributes), and the <title> text."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []
        self.title = ""
        self._in_title = False
        self.feed(dom)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data

    def with_id(self, ident: str) -> list[str]:
        return [tag for tag, attrs in self.found if attrs.get("id") == ident]

    def root(self) -> dict[str, str | None]:
        return next(attrs for tag, attrs in self.found if tag == "html")


def assert_inert(dom: str, view: str) -> Elements:
    """The checks that no script of a candidate's ran, on the DOM after the page's own script
    ran: the payloads (tests/test_report_*.py) set the title to PWNED and add `#pwned`."""
    found = Elements(dom)
    assert found.root().get("data-rendered") == view  # our own script ran to the end
    assert found.title == "assay report"
    assert found.with_id("pwned") == []
    assert not any(tag in ("img", "textarea") for tag, _ in found.found)
    scripts = [a for tag, a in found.found if tag == "script"]
    assert len(scripts) == 2  # the data and the page's own script, nothing else
    return found
