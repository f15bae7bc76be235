"""The forge client goes through the proxy the environment names (read once per client)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from backport.errors import BackportError
from backport.forge.http import ApiClient


class _Proxy(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.seen.append(self.path)
        body = b'{"login": "via-proxy"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_every_call_goes_through_the_environments_proxy_unless_no_proxy_names_the_host(
        proxy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _Proxy.seen = []
    monkeypatch.setenv("HTTP_PROXY", proxy)
    monkeypatch.setenv("NO_PROXY", "elsewhere.invalid")
    client = ApiClient("http://gitcode.invalid/api/v5", "secret-token-123", max_attempts=1)
    for _ in range(2):
        assert client.request("GET", "/user") == {"login": "via-proxy"}
    assert _Proxy.seen == ["http://gitcode.invalid/api/v5/user"] * 2
    monkeypatch.setenv("NO_PROXY", "gitcode.invalid")
    direct = ApiClient("http://gitcode.invalid/api/v5", "secret-token-123", max_attempts=1)
    with pytest.raises(BackportError):  # not through the proxy: the made-up host is not found
        direct.request("GET", "/user")
    assert len(_Proxy.seen) == 2
