"""A small JSON-over-HTTP client for forge REST APIs: auth header, rate limit, retries, errors.

Policy:
- the token travels only in the ``PRIVATE-TOKEN`` header, never in a URL; redirects are not
  followed (a redirect to another host would carry the header along);
- at most N requests in any window of each of ``windows`` (GitCode's documented 50 a minute and
  4,000 an hour), a request counted until its answer arrived; long waits told to ``notify``;
- 429 is retried for every method (the server did not act), honouring ``Retry-After``; without
  one (GitCode documents none) the client waits out the per-minute window (``rate_window``,
  60 s), telling ``notify`` how long is left;
- 500/502/503/504 and connection errors are retried only for idempotent methods; a POST is
  retried only when the caller says it is safe (``retry=True``); a host that cannot be reached
  at all is one sentence naming it, at once;
- every error becomes one redacted sentence in a :class:`ApiError` / :class:`ApiTransportError`.
"""

from __future__ import annotations

import contextlib
import email.utils
import logging
import math
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from backport import __version__
from backport.errors import BackportError
from backport.forge.pace import DEFAULT_WINDOWS, PAUSED, SharedPace, window_delay
from backport.redact import redact, register_secret

log = logging.getLogger(__name__)

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"})
RETRY_STATUSES = frozenset({500, 502, 503, 504})
USER_AGENT = f"backport/{__version__}"


def seg(value: str | int) -> str:
    """URL-encode one path segment (``/`` becomes ``%2F``)."""
    return quote(str(value), safe="")


class RateLimiter:
    """Sliding-window limiter: never more than ``limit`` requests in any ``period`` seconds.

    Several windows may be combined (e.g. 50 per minute and 4,000 per hour). A request counts
    from when it is sent until its answer arrived, and then from the time it arrived: the server
    saw it no later than that, so however long requests travel, the server's window never holds
    more than ``limit``. With ``shared`` the count is the token's across every process of the
    host (:class:`~backport.forge.pace.SharedPace`, whose clock is then used). A 429 met by one
    thread (:meth:`pause`) holds back every other thread, and with ``shared`` every process.
    A wait of ``notify_over`` seconds or more (or a tenth of the shortest window) is announced
    to ``notify`` (seconds left and why), again every ``progress_every`` seconds, and its end
    too. ``clock`` and ``sleep`` are injectable so tests need not wait.
    """

    def __init__(self, windows: tuple[tuple[int, float], ...] = DEFAULT_WINDOWS, *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 notify: Callable[[str], None] | None = None, notify_over: float = 5.0,
                 progress_every: float = 15.0, service: str = "GitCode API",
                 shared: SharedPace | None = None) -> None:
        self.windows = tuple((limit, period) for limit, period in windows if limit > 0)
        self._stamps: list[list[float]] = []  # [sent-or-answered time]; inf while in flight
        self._longest = max((period for _, period in self.windows), default=0.0)
        self._shortest = min((period for _, period in self.windows), default=0.0)
        self.shared = shared
        self._clock = shared.clock if shared is not None else clock
        self._sleep = sleep
        self._notify = notify
        self._notify_over = notify_over
        self._progress_every = progress_every
        self._service = service
        self._turn = threading.Lock()  # one waiter at a time, in arrival order
        self._state = threading.Condition()
        self._paused_until = -math.inf
        self._seen = threading.local()  # .until: the end of the last pause this thread waited

    def _pause_seen(self) -> float:
        return float(getattr(self._seen, "until", -math.inf))

    def pause(self, seconds: float) -> None:
        """A 429: no thread (and with ``shared`` no process) sends for ``seconds``; the calling
        thread waits them out itself."""
        with self._state:
            until = self._clock() + seconds
            self._paused_until = max(self._paused_until, until)
            self._seen.until = self._paused_until
        if self.shared is not None:
            self.shared.pause(until)

    def _delay(self, now: float) -> tuple[float, str, float | None]:
        """Seconds until one more request fits every window (inf: wait for an answer), why,
        and the end of the 429 pause when that is the reason."""
        if self._paused_until > now and self._paused_until > self._pause_seen():
            return self._paused_until - now, PAUSED, self._paused_until
        self._stamps = [s for s in self._stamps if s[0] > now - self._longest]
        return (*window_delay([s[0] for s in self._stamps], self.windows, now), None)

    def _sleep_out(self, seconds: float, announced: bool) -> float:
        left = seconds
        while left > 0:
            step = min(left, self._progress_every) if announced else left
            self._sleep(step)
            left -= step
            if left > 0 and self._notify is not None:
                self._notify(f"{self._service}: waiting {left:.0f}s")
        return seconds

    @contextlib.contextmanager
    def slot(self) -> Iterator[float]:
        """Wait for room, hold one place while the request travels; yields the seconds waited."""
        stamp = [math.inf]
        ident: str | None = None
        waited = 0.0
        with self._turn:
            announced = False
            while True:
                with self._state:
                    now = self._clock()
                    delay, why, pause_end = self._delay(now)
                    if delay <= 0 and self.shared is not None:
                        delay, why, ident, pause_end = self.shared.reserve(
                            self.windows, max(self._pause_seen(), self._paused_until))
                    if delay <= 0:
                        self._stamps.append(stamp)
                        break
                    if math.isinf(delay):  # every place is held by a request in flight
                        if self.shared is None:
                            self._state.wait(1.0)
                            continue
                        delay = 0.25  # another process's request: look again shortly
                if self._notify is not None and (announced or delay >= self._notify_over
                                                 or delay >= self._shortest / 10):
                    self._notify(f"{self._service}: waiting {delay:.0f}s"
                                 + ("" if announced else f" ({why})"))
                    announced = True
                if pause_end is not None:  # sleep it out whole: then it is over for this thread
                    waited += self._sleep_out(delay, announced)
                    self._seen.until = pause_end
                    continue
                step = min(delay, self._progress_every) if announced else delay
                self._sleep(step)
                waited += step
            if announced and self._notify is not None:
                self._notify(f"{self._service}: waited {waited:.0f}s; sending again")
        try:
            yield waited
        finally:
            with self._state:
                stamp[0] = self._clock()
                self._state.notify_all()
            if ident is not None and self.shared is not None:
                self.shared.answered(ident)


@dataclass(frozen=True)
class ApiResponse:
    """A decoded 2xx answer."""

    status: int
    data: Any  # parsed JSON, or the text when the body is not JSON, or None when empty
    headers: Mapping[str, str]


class ApiError(BackportError):
    """The server answered with an error status."""

    def __init__(self, code: str, message: str, *, method: str, path: str, status: int,
                 server_message: str, trace_id: str | None = None) -> None:
        super().__init__(code, message, details={"status": status, "method": method, "path": path})
        self.method = method
        self.path = path
        self.status = status
        self.server_message = server_message
        self.trace_id = trace_id

    @property
    def not_found(self) -> bool:
        """404, or the 400/403 GitCode uses for "project/branch not found"."""
        if self.status == 404:
            return True
        text = self.server_message.lower()
        return self.status in (400, 403) and (
            "not found" in text or "not exist" in text or "不存在" in self.server_message
        )


class ApiTransportError(BackportError):
    """No usable answer: timeout, connection reset, or a reply that never came.

    The request may nevertheless have been carried out by the server.
    """

    def __init__(self, message: str, *, method: str, path: str) -> None:
        super().__init__("forge", message, details={"method": method, "path": path})
        self.method = method
        self.path = path


def error_text(response: requests.Response) -> tuple[str, str | None]:
    """The server's error message and trace id, whatever the body shape."""
    trace_id = None
    message = ""
    try:
        data = response.json()
    except ValueError:
        data = None
    if isinstance(data, dict):
        for key in ("error_message", "message", "error", "msg"):
            value = data.get(key)
            if value:
                message = value if isinstance(value, str) else str(value)
                break
        trace = data.get("trace_id") or data.get("traceId")
        trace_id = str(trace) if trace else None
        if not message:
            message = str(data)
    elif data is not None:
        message = str(data)
    else:
        message = response.text or ""
    message = " ".join(message.split())
    if len(message) > 300:
        message = message[:297] + "..."
    return redact(message) or (response.reason or "no message"), trace_id


def retry_after_seconds(value: str | None, now: Callable[[], float] = time.time,
                        date: str | None = None) -> float | None:
    """Parse a Retry-After header: delta seconds or an HTTP date; None when absent/invalid.

    A date is read against the reply's own ``Date`` header when it has one (the server's
    clock, which may differ from this host's), else against ``now``.
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    sent = _http_date(date)
    return max(0.0, when.timestamp() - (sent if sent is not None else now()))


def _http_date(value: str | None) -> float | None:
    """An HTTP date as a timestamp, or None."""
    if not value:
        return None
    try:
        return email.utils.parsedate_to_datetime(value.strip()).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


class _TokenAuth(requests.auth.AuthBase):
    """Adds the PRIVATE-TOKEN header; also keeps requests from consulting ~/.netrc."""

    def __init__(self, token: str | None) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self._token:
            request.headers["PRIVATE-TOKEN"] = self._token
        return request

    def __repr__(self) -> str:
        return "_TokenAuth(***)"


class ApiClient:
    """JSON REST client bound to one base URL and one token."""

    def __init__(self, base_url: str, token: str | None, *, timeout: float = 30.0,
                 max_attempts: int = 5, limiter: RateLimiter | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 backoff: float = 1.0, backoff_cap: float = 30.0, max_retry_after: float = 300.0,
                 jitter: Callable[[], float] = random.random, service: str = "GitCode API",
                 rate_window: float = 60.0, progress_every: float = 15.0,
                 notify: Callable[[str], None] | None = None,
                 windows: tuple[tuple[int, float], ...] = DEFAULT_WINDOWS,
                 pace_dir: Path | None = None) -> None:
        """``pace_dir``: where the token's request log shared by this host's processes lives
        (None: this client counts only its own requests)."""
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        shared = SharedPace.for_token(pace_dir, base_url, token) if pace_dir and token else None
        self.limiter = limiter if limiter is not None else RateLimiter(
            windows, sleep=sleep, notify=notify or log.warning, progress_every=progress_every,
            service=service, shared=shared)
        self.sent = 0  # requests sent, retries included
        self._count_lock = threading.Lock()
        self.service = service
        self._sleep = sleep
        self._backoff = backoff
        self._backoff_cap = backoff_cap
        self._max_retry_after = max_retry_after
        self._jitter = jitter
        # a 429 without Retry-After waits out the shortest window (GitCode's minute by default)
        self._rate_window = rate_window if windows == DEFAULT_WINDOWS else min(
            (period for _, period in windows), default=rate_window)
        self._progress_every = progress_every
        self._notify = notify or log.warning
        register_secret(token)
        self.session = requests.Session()
        self.session.auth = _TokenAuth(token)
        self.session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})
        # The environment's proxies (HTTPS_PROXY, NO_PROXY) and CA bundle for the one host every
        # call goes to (redirects are not followed), read once here instead of on each call.
        settings = self.session.merge_environment_settings(self.base_url, {}, None, None, None)
        self._proxies, self._verify = settings["proxies"], settings["verify"]
        self.session.trust_env = False

    def close(self) -> None:
        self.session.close()

    def url(self, path: str) -> str:
        return self.base_url + path

    def _backoff_delay(self, attempt: int) -> float:
        base = min(self._backoff_cap, self._backoff * (2 ** (attempt - 1)))
        return base * (0.5 + 0.5 * self._jitter())

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                json: Any = None, data: Mapping[str, str] | None = None,
                retry: bool | None = None) -> ApiResponse:
        """Send one call (with retries as the policy allows); return the 2xx answer or raise.

        ``path`` starts with ``/`` and has its segments already encoded (see :func:`seg`).
        ``json`` is sent as a JSON body, ``data`` form-encoded. ``retry`` overrides whether
        5xx / connection errors are retried (default: idempotent). A host that cannot be reached
        at all (no such name, connection refused) is not retried.
        """
        method = method.upper()
        retry_unsafe = (method in IDEMPOTENT) if retry is None else retry
        attempt = 0
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                with self.limiter.slot():
                    with self._count_lock:
                        self.sent += 1
                    response = self.session.request(
                        method, self.url(path), params=params, json=json, data=data,
                        timeout=self.timeout, allow_redirects=False, proxies=self._proxies,
                        verify=self._verify,
                    )
            except requests.RequestException as exc:
                kind = "timed out" if isinstance(exc, requests.Timeout) else "failed"
                reason = redact(" ".join(str(exc).split()))[:200]
                log.debug("%s %s %s after %.2fs: %s", method, redact(path), kind, time.monotonic() - started, reason)
                unreachable = _unreachable(exc)
                if unreachable:
                    host = urlsplit(self.base_url).netloc
                    raise ApiTransportError(
                        redact(f"{self.service} at {host} could not be reached ({unreachable}); "
                               f"check the network connection, any proxy (HTTPS_PROXY) and "
                               f"api_url in branches.yaml."),
                        method=method, path=path) from None
                if retry_unsafe and attempt < self.max_attempts:
                    self._sleep(self._backoff_delay(attempt))
                    continue
                what = f"timed out after {self.timeout:g}s" if kind == "timed out" else f"failed ({reason})"
                raise ApiTransportError(
                    redact(f"{self.service} {method} {self.url(path)} {what}"
                           f"{'' if attempt == 1 else f' ({attempt} attempts)'}."),
                    method=method, path=path) from None
            log.debug("%s %s -> %s in %.2fs", method, redact(path), response.status_code,
                      time.monotonic() - started)
            status = response.status_code
            if 200 <= status < 300:
                return ApiResponse(status, _decode(response), response.headers)
            if status == 429 and attempt < self.max_attempts:
                delay = retry_after_seconds(response.headers.get("Retry-After"),
                                            date=response.headers.get("Date"))
                if delay is None:
                    self.limiter.pause(self._rate_window)  # every thread waits too
                    self._wait_for_window(method, path)
                    continue
                if delay <= self._max_retry_after:
                    self.limiter.pause(delay)
                    log.info("%s rate limit (429) on %s %s; waiting %.1fs", self.service, method,
                             redact(path), delay)
                    self._sleep(delay)
                    continue
            if status in RETRY_STATUSES and retry_unsafe and attempt < self.max_attempts:
                self._sleep(self._backoff_delay(attempt))
                continue
            raise self._error(method, path, response)

    def _wait_for_window(self, method: str, path: str) -> None:
        """Sleep out a 429 that gave no Retry-After: the whole per-minute window, with progress."""
        left = self._rate_window
        self._notify(f"{self.service} rate limit (429, no Retry-After) on {method} {redact(path)}; "
                     f"waiting {left:.0f}s for the per-minute window to pass")
        while left > 0:
            step = min(self._progress_every, left)
            self._sleep(step)
            left -= step
            if left > 0:
                self._notify(f"{self.service} rate limit: {left:.0f}s left")

    def _error(self, method: str, path: str, response: requests.Response) -> ApiError:
        status = response.status_code
        trace_id = None
        if 300 <= status < 400:
            where = redact(response.headers.get("Location", "elsewhere"))
            server_message = f"redirect to {where} (not followed)"
        else:
            server_message, trace_id = error_text(response)
        code = "auth" if status == 401 or (status == 403 and path.rstrip("/") == "/user") else "forge"
        trace = f" (trace id {trace_id})" if trace_id else ""
        message = redact(f"{self.service} {method} {self.url(path)} answered {status}: "
                         f"{server_message}{trace}.")
        return ApiError(code, message, method=method, path=path, status=status,
                        server_message=server_message, trace_id=trace_id)

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.request("GET", path, params=params).data


def _unreachable(exc: BaseException) -> str:
    """Why no connection could be made at all ("" when it was made or may have been)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, socket.gaierror) or type(item).__name__ == "NameResolutionError":
            return "its name does not resolve"
        if isinstance(item, ConnectionRefusedError):
            return "the connection was refused"
        for nxt in (getattr(item, "reason", None), item.__cause__, item.__context__,
                    *(a for a in getattr(item, "args", ()) if isinstance(a, BaseException))):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return ""


def _decode(response: requests.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text
