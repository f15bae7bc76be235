"""What a long audit is doing, for a person at a terminal: the phase, a count and the seconds
since the start, on one line of stderr redrawn every second; nothing where stderr is not a
terminal (a pipe, a log file, CI), which gets only warnings."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

EVERY = 1.0  # seconds between two redraws of the line


class Progress:
    """The line of one run. ``stream`` None: silent (every method still counts)."""

    def __init__(self, stream: TextIO | None = None, *, every: float = EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream, self.every, self.clock = stream, every, clock
        self.started = clock()
        self.name, self.done, self.total = "", 0, 0
        self._lock = threading.Lock()
        self._out = threading.Lock()  # one write at a time: the ticker's or a new phase's
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def to(cls, stream: TextIO) -> Progress:
        """Shown on ``stream`` when it is a terminal, else silent."""
        try:
            shown = stream.isatty()
        except (AttributeError, ValueError):  # closed, or no file behind it
            shown = False
        return cls(stream if shown else None)

    def phase(self, name: str, total: int = 0) -> None:
        """A new phase: ``total`` things to do in it (0: not counted)."""
        with self._lock:
            self.name, self.done, self.total = name, 0, total
        self._draw()

    def add(self, count: int = 1) -> None:
        with self._lock:
            self.done += count

    def line(self) -> str:
        """``audit: <phase> <done>/<total>, <seconds> s``."""
        with self._lock:
            name, done, total = self.name, self.done, self.total
        counted = f" {done:,}/{total:,}" if total else ""
        return f"audit: {name}{counted}, {self.clock() - self.started:.0f} s"

    def __enter__(self) -> Progress:
        if self.stream is not None:
            self._thread = threading.Thread(target=self._tick, name="audit-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every)
        self._write("\r\x1b[K")  # the line goes: what follows starts on a clean one

    def _tick(self) -> None:
        while not self._stop.wait(self.every):
            self._draw()

    def _draw(self) -> None:
        if not self._stop.is_set():
            self._write(f"\r{self.line()}\x1b[K")

    def _write(self, text: str) -> None:
        with self._out:
            if self.stream is None:
                return
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # the terminal went away: the run goes on
                self.stream = None
