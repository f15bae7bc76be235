"""The requests of one token, counted across the processes of one host.

Several runs of one user (``apply --branch`` in two terminals, a re-run while another runs)
share GitCode's per-token limit. Each client keeps its requests in a small log file in the
cache folder, named by a hash of the API URL and the token (never the token itself); an
exclusive ``flock`` guards every read-and-write, so every process on the host sees every other
one's requests, and a 429 one of them met pauses them all. Hosts do not share the file: runs
of one token on several hosts must share the limit by ``BACKPORT_GITCODE_RATE`` (see
``docs/gitcode.md``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PAUSED = "GitCode answered 429 (too many requests)"
STALE_IN_FLIGHT = 600.0  # seconds after which a request never answered counts as answered
# GitCode's documented limits: 50 requests a minute, 4,000 an hour (limit, seconds).
DEFAULT_WINDOWS: tuple[tuple[int, float], ...] = ((50, 60.0), (4000, 3600.0))


def pacing_seconds(requests_: int, windows: tuple[tuple[int, float], ...]) -> float:
    """The least time ``requests_`` requests take under the limiter's windows."""
    return max((max(0, math.ceil(requests_ / limit) - 1) * period for limit, period in windows
                if limit > 0), default=0.0)


def parse_windows(text: str) -> tuple[tuple[int, float], ...]:
    """``"50/60,4000/3600"`` (requests/seconds, comma-separated) as limiter windows; ValueError."""
    windows = []
    for part in text.split(","):
        count, sep, seconds = part.strip().partition("/")
        limit, period = int(count), float(seconds)
        if not sep or limit <= 0 or not 0 < period < math.inf:
            raise ValueError(part)
        windows.append((limit, period))
    if not windows:
        raise ValueError(text)
    return tuple(windows)


def window_delay(stamps: list[float], windows: tuple[tuple[int, float], ...],
                 now: float) -> tuple[float, str]:
    """Seconds until one more request fits every window (inf: wait for an answer), and why.

    ``stamps``: when each request was answered (``inf`` while it travels).
    """
    delay, why = 0.0, ""
    for limit, period in windows:
        inside = sorted(s for s in stamps if s > now - period)
        if len(inside) >= limit:
            wait = inside[len(inside) - limit] + period - now
            if wait > delay:
                delay = wait
                unit = period_text(period)
                why = f"{len(inside)} requests in the last {unit}; the limit is {limit} per {unit}"
    return delay, why


def period_text(seconds: float) -> str:
    if seconds == 60.0:
        return "minute"
    if seconds == 3600.0:
        return "hour"
    return f"{seconds:g} s"


class SharedPace:
    """One token's request log on this host: ``{"requests": [[id, sent, answered|null]],
    "paused_until": t}`` in wall-clock seconds (``clock``)."""

    def __init__(self, path: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.clock = clock
        self._serial = 0

    @classmethod
    def for_token(cls, folder: Path, api_url: str, token: str, *,
                  clock: Callable[[], float] = time.time) -> SharedPace:
        key = hashlib.sha256(f"{api_url.rstrip('/')}\n{token}".encode()).hexdigest()[:32]
        return cls(Path(folder) / f"pace-{key}.json", clock=clock)

    @contextlib.contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        """The log, read and written back under an exclusive lock."""
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

    def reserve(self, windows: tuple[tuple[int, float], ...],
                pause_seen: float) -> tuple[float, str, str | None, float | None]:
        """Seconds to wait, why, and the end of the 429 pause when that is the reason; or 0,
        "", the id of the request now counted as sent, and None.

        ``pause_seen``: the end of a 429 pause the caller already waited out itself.
        """
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
            paused = float(state.get("paused_until") or 0.0)
            if paused > now and paused > pause_seen:
                return paused - now, PAUSED, None, paused
            stamps = [math.inf if a is None else float(a) for _, _, a in kept]
            delay, why = window_delay(stamps, windows, now)
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

    def pause(self, until: float) -> None:
        """Every process of this token waits until ``until`` (a 429 was met)."""
        with self._state() as state:
            state["paused_until"] = max(float(state.get("paused_until") or 0.0), until)
