"""A small JSON-over-HTTP client for forge REST APIs: auth header, rate limit, retries, errors.

Policy:
- the token travels only in the ``PRIVATE-TOKEN`` header, never in a URL; redirects are not
  followed (a redirect to another host would carry the header along);
- at most ``per_minute`` requests in any 60-second window and ``per_hour`` in any hour
  (GitCode's documented defaults are 50/min and 4,000/h);
- 429 is retried for every method (the server did not act), honouring ``Retry-After``; without
  one (GitCode documents none) the client waits out the per-minute window (``rate_window``,
  60 s), telling ``notify`` how long is left;
- 500/502/503/504 and connection errors are retried only for idempotent methods; a POST is
  retried only when the caller says it is safe (``retry=True``);
- every error becomes one redacted sentence in a :class:`ApiError` / :class:`ApiTransportError`.
"""

from __future__ import annotations

import collections
import email.utils
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests

from backport import __version__
from backport.errors import BackportError
from backport.redact import redact, register_secret

log = logging.getLogger(__name__)

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"})
RETRY_STATUSES = frozenset({500, 502, 503, 504})
USER_AGENT = f"backport/{__version__}"


def seg(value: str | int) -> str:
    """URL-encode one path segment (``/`` becomes ``%2F``)."""
    return quote(str(value), safe="")


class RateLimiter:
    """Sliding-window limiter: never more than ``limit`` acquisitions in any ``period`` seconds.

    Several windows may be combined (e.g. 50 per minute and 4,000 per hour). ``clock`` and
    ``sleep`` are injectable so tests need not wait.
    """

    def __init__(self, windows: tuple[tuple[int, float], ...] = ((50, 60.0), (4000, 3600.0)), *,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._windows: list[tuple[int, float, collections.deque[float]]] = [
            (limit, period, collections.deque()) for limit, period in windows if limit > 0]
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Block until a request may be sent; return the seconds waited."""
        waited = 0.0
        with self._lock:
            while True:
                now = self._clock()
                delay = 0.0
                for limit, period, stamps in self._windows:
                    while stamps and stamps[0] <= now - period:
                        stamps.popleft()
                    if len(stamps) >= limit:
                        delay = max(delay, stamps[0] + period - now)
                if delay <= 0:
                    for _, _, stamps in self._windows:
                        stamps.append(now)
                    return waited
                self._sleep(delay)
                waited += delay


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


def retry_after_seconds(value: str | None, now: Callable[[], float] = time.time) -> float | None:
    """Parse a Retry-After header: delta seconds or an HTTP date; None when absent/invalid."""
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
    return max(0.0, when.timestamp() - now())


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
                 notify: Callable[[str], None] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_attempts = max(1, max_attempts)
        self.limiter = limiter if limiter is not None else RateLimiter(sleep=sleep)
        self.service = service
        self._sleep = sleep
        self._backoff = backoff
        self._backoff_cap = backoff_cap
        self._max_retry_after = max_retry_after
        self._jitter = jitter
        self._rate_window = rate_window
        self._progress_every = progress_every
        self._notify = notify or log.warning
        register_secret(token)
        self.session = requests.Session()
        self.session.auth = _TokenAuth(token)
        self.session.headers.update({"User-Agent": USER_AGENT, "Accept": "application/json"})

    def close(self) -> None:
        self.session.close()

    def url(self, path: str) -> str:
        return self.base_url + path

    def _backoff_delay(self, attempt: int) -> float:
        base = min(self._backoff_cap, self._backoff * (2 ** (attempt - 1)))
        return base * (0.5 + 0.5 * self._jitter())

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                json: Any = None, retry: bool | None = None) -> ApiResponse:
        """Send one call (with retries as the policy allows); return the 2xx answer or raise.

        ``path`` starts with ``/`` and has its segments already encoded (see :func:`seg`).
        ``retry`` overrides whether 5xx / connection errors are retried (default: idempotent).
        """
        method = method.upper()
        retry_unsafe = (method in IDEMPOTENT) if retry is None else retry
        attempt = 0
        while True:
            attempt += 1
            self.limiter.acquire()
            started = time.monotonic()
            try:
                response = self.session.request(
                    method, self.url(path), params=params, json=json,
                    timeout=self.timeout, allow_redirects=False,
                )
            except requests.RequestException as exc:
                kind = "timed out" if isinstance(exc, requests.Timeout) else "failed"
                reason = redact(" ".join(str(exc).split()))[:200]
                log.debug("%s %s %s after %.2fs: %s", method, redact(path), kind, time.monotonic() - started, reason)
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
                delay = retry_after_seconds(response.headers.get("Retry-After"))
                if delay is None:
                    self._wait_for_window(method, path)
                    continue
                if delay <= self._max_retry_after:
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


def _decode(response: requests.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text
