"""Helpers of the audit page's browser test."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from queue import Empty, Queue
from typing import Any

# Headless Chromium (Debian's `chromium`) driven over the DevTools protocol on a pipe
# (``--remote-debugging-pipe``: JSON messages ending in NUL on the browser's fds 3 and 4), with
# the standard library alone: open a page, evaluate JavaScript in it, see every request it made.
PACKAGE = "chromium"  # Debian's package; `apt-get install -y chromium`
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe")
WAIT = 120.0  # seconds one answer may take on a loaded machine (a bound, not a pace)


def executable() -> str | None:
    """The system browser's path, or None when the package is not installed."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One page of a headless browser: `open`, `evaluate`; ``requests`` lists every URL the
    page asked for (Network.requestWillBeSent)."""

    def __init__(self, path: str, profile: Path) -> None:
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        def fds() -> None:  # the child's fd 3 reads our messages, fd 4 writes its own
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_child, from_child)]
            for fd, want in zip(high, (3, 4), strict=True):
                os.dup2(fd, want)  # a dup2'd descriptor is inherited across exec
        self.process = subprocess.Popen(  # noqa: S603 - the test's own browser
            [path, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)  # noqa: PLW1509 - fds 3, 4 as the protocol wants
        os.close(to_child)
        os.close(from_child)
        self._next = 0
        self._answers: dict[int, Queue[dict[str, Any]]] = {}
        self._events: Queue[dict[str, Any]] = Queue()
        self.requests: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._listen, daemon=True).start()
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            self.call(f"{domain}.enable", session=self.session)

    def _listen(self) -> None:
        buffer = b""
        while chunk := os.read(self._read, 1 << 16):
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    self._answers[message["id"]].put(message)
                else:
                    if message.get("method") == "Network.requestWillBeSent":
                        self.requests.append(message["params"]["request"]["url"])
                    self._events.put(message)

    def _send(self, method: str, params: dict[str, Any] | None, session: str | None) -> int:
        with self._lock:
            self._next += 1
            ident = self._next
            self._answers[ident] = Queue()
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        return ident

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its answer (its ``result``)."""
        ident = self._send(method, params, session)
        answer = self._answers[ident].get(timeout=WAIT)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def open(self, url: str) -> None:
        """Navigate the page to ``url`` and wait for its load event."""
        while not self._events.empty():
            self._events.get_nowait()
        self.call("Page.navigate", {"url": url}, session=self.session)
        while True:
            try:
                event = self._events.get(timeout=WAIT)
            except Empty:
                raise TimeoutError(f"{url} did not load") from None
            if event.get("method") == "Page.loadEventFired":
                return

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, width: int = 1400, height: int = 900) -> None:
        """A PNG of the page as shown at ``width`` x ``height``."""
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False},
                  session=self.session)
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=self.session)
        path.write_bytes(base64.b64decode(data["data"]))

    def close(self) -> None:
        try:
            self._send("Browser.close", None, None)  # it exits rather than answers
        except OSError:
            pass
        try:
            self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)


@contextmanager
def browser(profile: Path) -> Iterator[Browser]:
    """A fresh headless browser (its own profile folder), closed after."""
    path = executable()
    assert path is not None
    profile.mkdir(parents=True, exist_ok=True)
    one = Browser(path, profile)
    try:
        yield one
    finally:
        one.close()
