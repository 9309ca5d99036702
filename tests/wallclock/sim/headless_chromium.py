"""Headless Chromium driven over the Chrome DevTools Protocol, for tests that check a page
as a browser lays it out.

Chromium is started with ``--remote-debugging-port=0`` (it picks a free port) and a
profile directory of the test's own; it writes the port and the browser's websocket path
to ``DevToolsActivePort`` in that directory. One websocket to the browser carries
everything: a page target is created and attached in flat mode, so its commands and
events travel on the same connection with the target's session id.

The client is ``websocket-client``: synchronous (a test sends a command and reads until
its answer), pure Python, and already installed with karpenter-core (the ``kubernetes``
client depends on it).
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import websocket

CHROMIUM_ENV = "KARPENTER_CHROMIUM"
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
START_TIMEOUT = 60.0
COMMAND_TIMEOUT = 60.0


def find_chromium() -> str | None:
    """The browser to run: ``$KARPENTER_CHROMIUM``, else the first of the usual names on
    the PATH."""
    given = os.environ.get(CHROMIUM_ENV)
    if given:
        return shutil.which(given) or (given if Path(given).is_file() else None)
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


class ProtocolError(Exception):
    """Chromium answered a command with an error, or did not answer in time."""


class Browser:
    """One headless Chromium process and the websocket to it."""

    def __init__(self, executable: str, profile: Path) -> None:
        self.profile = profile
        self.log = profile / "chromium.log"
        args = [
            executable,
            "--headless",
            "--disable-gpu",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--mute-audio",
            "about:blank",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with it
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log)
        try:
            port, path = self._active_port()
            self.ws = websocket.create_connection(
                f"ws://127.0.0.1:{port}{path}", timeout=COMMAND_TIMEOUT, suppress_origin=True
            )
        except BaseException:
            self._stop()
            raise
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def _active_port(self) -> tuple[int, str]:
        marker = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ProtocolError(
                    f"chromium exited with {self.proc.returncode}: {self._log_tail()}"
                )
            with contextlib.suppress(FileNotFoundError):
                lines = marker.read_text().splitlines()
                if len(lines) >= 2:
                    return int(lines[0]), lines[1]
            time.sleep(0.05)
        raise ProtocolError(
            f"chromium wrote no DevToolsActivePort in {START_TIMEOUT:.0f}s: {self._log_tail()}"
        )

    def _log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log.read_text(errors="replace")[-2000:]
        return ""

    def call(self, method: str, params: dict[str, Any] | None = None, session: str = "") -> Any:
        """Send one command and return its result; events read meanwhile are kept."""
        msg_id = next(self._ids)
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = self._receive()
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise ProtocolError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def _receive(self) -> dict[str, Any]:
        try:
            data = self.ws.recv()
        except websocket.WebSocketTimeoutException:
            raise ProtocolError(f"no answer from chromium in {COMMAND_TIMEOUT:.0f}s") from None
        return dict(json.loads(data))

    def wait_for(self, method: str, session: str, timeout: float = COMMAND_TIMEOUT) -> None:
        """Until the event ``method`` of ``session`` arrives (or has arrived)."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for ev in self.events[seen:]:
                if ev.get("method") == method and ev.get("sessionId") == session:
                    return
            seen = len(self.events)
            if time.monotonic() > deadline:
                raise ProtocolError(f"no {method} event in {timeout:.0f}s")
            self.events.append(self._receive())

    def new_page(self, width: int, height: int) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        page.resize(width, height)
        return page

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close")
        with contextlib.suppress(Exception):
            self.ws.close()
        self._stop()

    def _stop(self) -> None:
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


class Page:
    """A tab: navigate, evaluate JavaScript, take screenshots, and collect what the page
    reported as an error."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return self.browser.call(method, params, self.session)

    def resize(self, width: int, height: int) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    def open(self, url: str) -> None:
        result = self.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise ProtocolError(f"navigating to {url}: {result['errorText']}")
        self.browser.wait_for("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise ProtocolError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries of this page."""
        out = []
        for ev in self.browser.events:
            if ev.get("sessionId") != self.session:
                continue
            params = ev.get("params", {})
            method = ev.get("method")
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in (
                "error",
                "assert",
            ):
                out.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                entry = params["entry"]
                out.append(f"log: {entry.get('text')} ({entry.get('url', '')})")
        return out

    def requests(self) -> list[str]:
        """The URL of every request the page made (itself included)."""
        return [
            str(ev["params"]["request"]["url"])
            for ev in self.browser.events
            if ev.get("sessionId") == self.session
            and ev.get("method") == "Network.requestWillBeSent"
        ]

    def screenshot(self) -> bytes:
        """The whole page (not just the viewport) as PNG."""
        size = self.call("Page.getLayoutMetrics")["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.call(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": clip},
        )["data"]
        return base64.b64decode(data)


@contextlib.contextmanager
def chromium(executable: str, profile: Path) -> Iterator[Browser]:
    browser = Browser(executable, profile)
    try:
        yield browser
    finally:
        browser.close()
