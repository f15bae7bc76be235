"""JSON over HTTP for the GitCode API: the token header, the rate limit, retries, errors.

The token travels only in the ``PRIVATE-TOKEN`` header, never in a URL; redirects are not
followed (they would carry the header along). Every attempt waits its turn of the
:class:`~backport.forge.pace.RateLimiter`. Retries are urllib3's ``Retry`` through a requests
``HTTPAdapter`` (:class:`_Retry`): 5xx and dropped connections for idempotent methods (a POST
only with ``retry=True``), a 429 for every method, with exponential back-off and jitter. A 429
pauses every thread and process of the token for its ``Retry-After`` (read against the reply's
``Date``; over 5 minutes: not waited) or, without one, the shortest window; an unreachable host
is not retried. Every error is one redacted sentence naming the URL: :class:`ApiError` (an
answer) or :class:`ApiTransportError` (none).
"""

from __future__ import annotations

import contextlib
import email.utils
import hashlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError, ResponseError
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.util.retry import Retry

from backport import __version__
from backport.errors import BackportError
from backport.forge.pace import DEFAULT_WINDOWS, RateLimiter, RequestLog
from backport.redact import redact, register_secret

log = logging.getLogger(__name__)

IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"})
SERVICE = "GitCode API"
MAX_RETRY_AFTER = 300.0  # seconds: a 429 asking a longer wait is not waited


def seg(value: str | int) -> str:
    """URL-encode one path segment (``/`` becomes ``%2F``)."""
    return quote(str(value), safe="")


class ApiError(BackportError):
    """The server answered with an error status."""

    def __init__(self, code: str, message: str, *, status: int, server_message: str) -> None:
        super().__init__(code, message, details={"status": status})
        self.status = status
        self.server_message = server_message

    @property
    def not_found(self) -> bool:
        """404, or the 400/403 GitCode uses for "project/branch not found"."""
        text = self.server_message.lower()
        return self.status == 404 or self.status in (400, 403) and (
            "not found" in text or "not exist" in text or "不存在" in text)


class ApiTransportError(BackportError):
    """No usable answer (a timeout, a reset): the server may have acted nevertheless."""

    def __init__(self, message: str) -> None:
        super().__init__("forge", message)


def retry_after_seconds(value: str | None, now: Callable[[], float] = time.time,
                        date: str | None = None) -> float | None:
    """A Retry-After header's seconds (a delta, or an HTTP date read against the reply's own
    ``Date`` where it has one: the clocks may differ); None if none."""
    value = (value or "").strip()
    with contextlib.suppress(ValueError):
        return max(0.0, float(value)) if value else None
    when, sent = (_http_date(text) for text in (value, date))
    return None if when is None else max(0.0, when - (sent if sent is not None else now()))


def _http_date(value: str | None) -> float | None:
    with contextlib.suppress(TypeError, ValueError, IndexError):
        return email.utils.parsedate_to_datetime((value or "").strip()).timestamp()
    return None


class _Retry(Retry):
    """urllib3's retry policy with this client's hooks (carried to every copy ``new`` makes)."""

    client: ApiClient | None = None

    def new(self, **kw: Any) -> _Retry:
        retry = super().new(**kw)
        retry.client = self.client
        return retry

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if status_code == 429:
            return bool(self.total)
        return super().is_retry(method, status_code, has_retry_after)

    def get_retry_after(self, response: Any) -> float | None:
        return retry_after_seconds(response.headers.get("Retry-After"),
                                   date=response.headers.get("Date"))

    def increment(self, method: str | None = None, url: str | None = None, response: Any = None,
                  error: Exception | None = None, _pool: Any = None,
                  _stacktrace: Any = None) -> _Retry:
        assert self.client is not None
        self.client._answered()
        if error is not None and _unreachable(error):
            raise MaxRetryError(_pool, url or "", error) from error
        if response is not None and response.status == 429 and \
                (self.get_retry_after(response) or 0.0) > MAX_RETRY_AFTER:
            raise MaxRetryError(_pool, url or "", ResponseError("Retry-After too long"))
        return super().increment(method, url, response, error, _pool, _stacktrace)

    def sleep(self, response: Any = None) -> None:
        assert self.client is not None
        self.client._between_attempts(self, response)


class ApiClient:
    """JSON REST client bound to one base URL and one token. ``pace_dir``: where the token's
    request log shared by this host's processes lives (None: this client's own)."""

    def __init__(self, base_url: str, token: str | None, *, timeout: float = 30.0,
                 max_attempts: int = 5, limiter: RateLimiter | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 notify: Callable[[str], None] | None = None,
                 windows: tuple[tuple[int, float], ...] = DEFAULT_WINDOWS,
                 pace_dir: Path | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        shared = None
        if pace_dir and token:  # named by a hash of API URL and token, never the token
            key = hashlib.sha256(f"{self.base_url}\n{token}".encode()).hexdigest()[:32]
            shared = RequestLog(pace_dir / f"pace-{key}.json")
        self.limiter = limiter if limiter is not None else RateLimiter(
            windows, sleep=sleep, notify=notify or log.warning, shared=shared)
        self.sent = 0  # requests sent, retries included
        self._count_lock = threading.Lock()
        self._attempt = threading.local()  # this thread's request: .slot, .count
        self._sleep = sleep
        # a 429 without Retry-After waits out the shortest window (GitCode's minute by default)
        self._rate_window = min((period for _, period in windows), default=60.0)
        register_secret(token)
        self._token = token  # sent in the PRIVATE-TOKEN header alone
        self.session = requests.Session()
        self.session.headers.update({"User-Agent": f"backport/{__version__}",
                                     "Accept": "application/json"})
        # The environment's proxies and CA bundle for the one host, read once.
        settings = self.session.merge_environment_settings(self.base_url, {}, None, None, None)
        self._proxies, self._verify = settings["proxies"], settings["verify"] or True
        self.session.trust_env = False
        self._adapters: dict[bool, HTTPAdapter] = {}
        for unsafe in (False, True):  # by whether a POST may be sent again
            retry = _Retry(total=max(1, max_attempts) - 1,
                           allowed_methods=IDEMPOTENT | ({"POST"} if unsafe else set()),
                           status_forcelist=(500, 502, 503, 504), backoff_factor=1.0,
                           backoff_max=30.0, backoff_jitter=1.0, raise_on_status=False,
                           raise_on_redirect=False, respect_retry_after_header=False)
            retry.client = self
            self._adapters[unsafe] = HTTPAdapter(max_retries=retry)

    def request(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
                json: Any = None, data: Mapping[str, str] | None = None,
                retry: bool | None = None) -> Any:
        """One call, retried as the policy allows; the 2xx answer decoded (JSON, else the text,
        None when empty), else raises. ``retry``: whether 5xx and lost connections are retried
        (default: for idempotent methods)."""
        again = (method in IDEMPOTENT) if retry is None else retry
        prepared = self.session.prepare_request(requests.Request(
            method, self.base_url + path, params=params, json=json, data=data))
        if self._token:
            prepared.headers["PRIVATE-TOKEN"] = self._token
        started = time.monotonic()
        self._attempt.count = 0
        try:
            self._next_attempt()
            response = self._adapters[again].send(prepared, timeout=self.timeout,
                                                  proxies=self._proxies, verify=self._verify)
            response.content  # noqa: B018  (the whole answer, inside its place in the limiter)
        except requests.RequestException as exc:
            raise self._transport_error(method, path, exc) from None
        finally:
            self._answered()
        log.debug("%s %s -> %s in %.2fs", method, redact(path), response.status_code,
                  time.monotonic() - started)
        if 200 <= response.status_code < 300:
            return _decode(response)
        raise self._error(method, path, response)

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self.request("GET", path, params=params)

    def _next_attempt(self) -> None:
        stack = contextlib.ExitStack()
        stack.enter_context(self.limiter.slot())
        self._attempt.slot = stack
        self._attempt.count += 1
        with self._count_lock:
            self.sent += 1

    def _answered(self) -> None:
        """The attempt in flight got its answer (or none): its place counts from now."""
        stack = getattr(self._attempt, "slot", None)
        self._attempt.slot = None
        if stack is not None:
            stack.close()

    def _between_attempts(self, retry: Retry, response: Any) -> None:
        """Wait as a 429 asks or back off, then take the next attempt's place."""
        if response is not None and response.status == 429:
            delay = retry.get_retry_after(response)
            self.limiter.pause(self._rate_window if delay is None else delay)
            if delay is None:
                self.limiter.sleep_out(self._rate_window, "rate limit (429, no Retry-After); "
                                       f"waiting {self._rate_window:.0f}s for the per-minute "
                                       "window to pass")
            else:
                log.info("%s rate limit (429); waiting %.1fs", SERVICE, delay)
                self._sleep(delay)
        else:
            self._sleep(retry.get_backoff_time())
        self._next_attempt()

    def _transport_error(self, method: str, path: str,
                         exc: requests.RequestException) -> ApiTransportError:
        unreachable = _unreachable(exc)
        if unreachable:
            host = urlsplit(self.base_url).netloc
            return ApiTransportError(
                redact(f"{SERVICE} at {host} could not be reached ({unreachable}); check "
                       "the network connection, any proxy (HTTPS_PROXY) and api_url in "
                       "branches.yaml."))
        if any(isinstance(c, (requests.Timeout, Urllib3Timeout)) for c in _causes(exc)):
            what = f"timed out after {self.timeout:g}s"
        else:
            what = f"failed ({redact(' '.join(str(exc).split()))[:200]})"
        count = int(getattr(self._attempt, "count", 1))
        return ApiTransportError(
            redact(f"{SERVICE} {method} {self.base_url}{path} {what}"
                   f"{'' if count <= 1 else f' ({count} attempts)'}."))

    def _error(self, method: str, path: str, response: requests.Response) -> ApiError:
        """The error of a non-2xx answer: the server's message and trace id, whatever the body."""
        status, data = response.status_code, _decode(response) or ""
        shown = data if isinstance(data, dict) else {}
        trace_id = shown.get("trace_id") or shown.get("traceId")
        if 300 <= status < 400:
            where = redact(response.headers.get("Location", "elsewhere"))
            server_message = f"redirect to {where} (not followed)"
        else:
            server_message = " ".join(str(next((shown[k] for k in (
                "error_message", "message", "error", "msg") if shown.get(k)), data)).split())
            if len(server_message) > 300:
                server_message = server_message[:297] + "..."
            server_message = redact(server_message) or (response.reason or "no message")
        code = "auth" if status == 401 or status == 403 and path.rstrip("/") == "/user" else "forge"
        trace = f" (trace id {trace_id})" if trace_id else ""
        message = redact(f"{SERVICE} {method} {self.base_url}{path} answered {status}: "
                         f"{server_message}{trace}.")
        return ApiError(code, message, status=status, server_message=server_message)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception behind it."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        todo.extend(nxt for nxt in (getattr(item, "reason", None), item.__cause__,
                                    item.__context__, *getattr(item, "args", ()))
                    if isinstance(nxt, BaseException))


def _unreachable(exc: BaseException) -> str:
    """Why no connection could be made at all ("" when it was made or may have been)."""
    for item in _causes(exc):
        if isinstance(item, socket.gaierror) or type(item).__name__ == "NameResolutionError":
            return "its name does not resolve"
        if isinstance(item, ConnectionRefusedError):
            return "the connection was refused"
    return ""


def _decode(response: requests.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text
