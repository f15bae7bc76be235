"""A git smart-HTTP server on 127.0.0.1 (git's own `git http-backend`) that, like GitCode for a
private repository, answers 401 to a request without the token: ``Authorization: Basic`` of
``<any user>:<token>`` (git's askpass sends ``oauth2:<token>``), or ``Bearer <token>``.

Serves every bare repository under ``root`` as ``/<owner>/<name>.git``; ``requests`` records
the path of each request and whether it carried the token (the header, never the URL).
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit


class GitHttp:
    def __init__(self, root: Path, token: str,
                 refused: Callable[[str], None] | None = None) -> None:
        self.root, self.token = root, token
        self.refused = refused  # told of each request refused, before git hears the 401
        self.requests: list[tuple[str, bool]] = []  # (path, authorised)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> GitHttp:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def authorised(self, header: str | None) -> bool:
        if not header:
            return False
        kind, _, value = header.partition(" ")
        if kind.lower() == "bearer":
            return value.strip() == self.token
        if kind.lower() == "basic":
            try:
                _user, _, secret = base64.b64decode(value.strip()).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                return False
            return secret == self.token
        return False


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence stderr
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._cgi()

    def do_POST(self) -> None:  # noqa: N802
        self._cgi()

    def _cgi(self) -> None:
        owner: GitHttp = self.server.owner  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        ok = owner.authorised(self.headers.get("Authorization"))
        owner.requests.append((parts.path, ok))
        if not ok:
            if owner.refused is not None:
                owner.refused(parts.path)
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        env = {**os.environ, "GIT_PROJECT_ROOT": str(owner.root), "GIT_HTTP_EXPORT_ALL": "1",
               "PATH_INFO": parts.path, "QUERY_STRING": parts.query,
               "REQUEST_METHOD": self.command, "REMOTE_USER": "ci",
               "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)),
               "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                             check=False).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
