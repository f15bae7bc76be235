"""The pace of one token's requests: GitCode's rate windows, kept by every thread and process.

GitCode allows a token 50 requests a minute and 4,000 an hour (``BACKPORT_GITCODE_RATE`` sets
other windows). :class:`RateLimiter` holds each request back until it fits every window; a
request counts while it travels and from its answer on, so the server's window never holds
more than the limit. The count lives in a :class:`RequestLog`: this process's, or a file of the
token's in the cache folder (named by a hash of API URL and token, under an exclusive
``flock``) that the host's processes share, so a 429 one of them met pauses them all.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

STALE_IN_FLIGHT = 600.0  # seconds after which a request never answered counts as answered
DEFAULT_WINDOWS: tuple[tuple[int, float], ...] = ((50, 60.0), (4000, 3600.0))
Windows = tuple[tuple[int, float], ...]


def pacing_seconds(requests_: int, windows: Windows) -> float:
    """The least time ``requests_`` requests take under ``windows``."""
    return max((max(0, math.ceil(requests_ / limit) - 1) * period for limit, period in windows
                if limit > 0), default=0.0)


def parse_windows(text: str) -> Windows:
    """``"50/60,4000/3600"`` (requests/seconds, comma-separated) as limiter windows; ValueError."""
    windows = []
    for part in text.split(","):
        count, sep, seconds = part.strip().partition("/")
        limit, period = int(count), float(seconds)
        if not sep or limit <= 0 or not 0 < period < math.inf:
            raise ValueError(part)
        windows.append((limit, period))
    return tuple(windows)


def period_text(seconds: float) -> str:
    return {60.0: "minute", 3600.0: "hour"}.get(seconds, f"{seconds:g} s")


class RequestLog:
    """One token's requests, ``{"requests": [[id, sent, answered|null]], "paused_until": t}``
    in ``clock`` seconds: in memory (``path`` None) or in a file the host's processes share."""

    def __init__(self, path: Path | None = None, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self._serial = 0
        self._memory: dict[str, Any] = {"requests": []}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        """The log, read and written back under an exclusive lock."""
        if self.path is None:
            with self._lock:
                yield self._memory
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        with os.fdopen(fd, "r+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                state = json.loads(handle.read() or "{}")
            except ValueError:
                state = {}  # a log cut short by a crash: start afresh
            if not isinstance(state, dict) or not isinstance(state.get("requests"), list):
                state = {"requests": []}
            yield state
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(state))
            handle.flush()

    def reserve(self, windows: Windows,
                pause_seen: float) -> tuple[float, str, str | None, float | None]:
        """Seconds to wait, why, and the end of the 429 pause that is the reason; or 0, "",
        the id of the request now counted as sent, None. ``pause_seen``: a pause already
        waited out."""
        longest = max((period for _, period in windows), default=0.0)
        with self._state() as state:
            now = self.clock()
            kept = []
            for entry in state["requests"]:
                try:
                    ident, sent, answered = str(entry[0]), float(entry[1]), entry[2]
                except (IndexError, TypeError, ValueError):
                    continue
                if now - sent > STALE_IN_FLIGHT and answered is None:
                    answered = sent + STALE_IN_FLIGHT  # its process died before the answer
                if answered is None or float(answered) > now - longest:
                    kept.append([ident, sent, answered])
            state["requests"] = kept
            paused = float(state.get("paused_until") or -math.inf)
            if paused > now and paused > pause_seen:
                return paused - now, "GitCode answered 429 (too many requests)", None, paused
            stamps = [math.inf if a is None else float(a) for _, _, a in kept]  # inf: travels
            delay, why = 0.0, ""
            for limit, period in windows:
                inside = sorted(s for s in stamps if s > now - period)
                if len(inside) >= limit and inside[len(inside) - limit] + period - now > delay:
                    delay, unit = inside[len(inside) - limit] + period - now, period_text(period)
                    why = f"{len(inside)} requests in the last {unit}; the limit is {limit} per " \
                          f"{unit}"
            if delay > 0:
                return delay, why, None, None
            self._serial += 1
            ident = f"{os.getpid()}-{id(self):x}-{self._serial}"
            kept.append([ident, now, None])
            return 0.0, "", ident, None

    def answered(self, ident: str) -> None:
        """The request ``ident`` got its answer now."""
        with self._state() as state:
            now = self.clock()
            for entry in state["requests"]:
                if entry and entry[0] == ident:
                    entry[2] = now

    def pause(self, until: float) -> float:
        """Nobody sends until ``until`` (a 429 was met); the end of the pause now."""
        with self._state() as state:
            state["paused_until"] = max(float(state.get("paused_until") or -math.inf), until)
            return float(state["paused_until"])


class RateLimiter:
    """Holds each request back until it fits every window of ``shared`` (else this process's
    log). A wait of ``notify_over`` seconds (or a tenth of the shortest window) is told to
    ``notify``, again every ``progress_every`` seconds, and its end too."""

    def __init__(self, windows: Windows = DEFAULT_WINDOWS, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 notify: Callable[[str], None] | None = None, notify_over: float = 5.0,
                 progress_every: float = 15.0, shared: RequestLog | None = None) -> None:
        self.windows = tuple((limit, period) for limit, period in windows if limit > 0)
        self.log = shared if shared is not None else RequestLog(clock=clock)
        self._shortest = min((period for _, period in self.windows), default=0.0)
        self._sleep = sleep
        self._notify = notify
        self._notify_over = notify_over
        self._progress_every = progress_every
        self._turn = threading.Lock()  # one waiter at a time, in arrival order
        self._answers = threading.Condition()
        self._seen = threading.local()  # .until: the end of the last pause this thread waited

    def pause(self, seconds: float) -> None:
        """A 429: nobody sends for ``seconds``; the calling thread waits them out itself."""
        self._seen.until = self.log.pause(self.log.clock() + seconds)

    def sleep_out(self, seconds: float, note: str = "") -> float:
        """Sleep ``seconds``, telling ``note`` and what is left every ``progress_every`` seconds."""
        if note:
            self._tell(note)
        left = seconds
        while left > 0:
            step = min(left, self._progress_every)
            self._sleep(step)
            left -= step
            if left > 0:
                self._tell(f"{left:.0f}s left")
        return seconds

    def _tell(self, text: str) -> None:
        if self._notify is not None:
            self._notify(f"GitCode API: {text}")

    @contextlib.contextmanager
    def slot(self) -> Iterator[float]:
        """Wait for room, hold one place while the request travels; yields the seconds waited."""
        waited, announced = 0.0, False
        with self._turn:
            while True:
                delay, why, ident, pause_end = self.log.reserve(
                    self.windows, getattr(self._seen, "until", -math.inf))
                if ident is not None:
                    break
                if math.isinf(delay):  # every place is held by a request in flight
                    with self._answers:
                        self._answers.wait(0.25)
                    continue
                if announced or delay >= self._notify_over or delay >= self._shortest / 10:
                    self._tell(f"waiting {delay:.0f}s" + ("" if announced else f" ({why})"))
                    announced = announced or self._notify is not None
                if pause_end is not None:  # slept out whole: then it is over for this thread
                    waited += self.sleep_out(delay)
                    self._seen.until = pause_end
                    continue
                step = min(delay, self._progress_every) if announced else delay
                self._sleep(step)
                waited += step
            if announced:
                self._tell(f"waited {waited:.0f}s; sending again")
        try:
            yield waited
        finally:
            self.log.answered(ident)
            with self._answers:
                self._answers.notify_all()
