"""The one place secrets are scrubbed from text before it reaches a log, file or message."""

from __future__ import annotations

import re
import threading

_lock = threading.Lock()
_secrets: set[str] = set()
# user:password@ in URLs, and token-looking query parameters.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@")
_TOKEN_PARAMS = re.compile(r"(?i)(access_token|private_token|token)=[^&\s]+")

MASK = "***"


def register_secret(secret: str | None) -> None:
    """Remember a secret so that every later :func:`redact` call hides it."""
    if secret and len(secret) >= 4:
        with _lock:
            _secrets.add(secret)


def strip_url_credentials(url: str) -> str:
    """``url`` without its ``user:password@`` part (a URL without one is returned as it is)."""
    return _URL_CREDENTIALS.sub(lambda m: m.group("scheme"), url)


def redact(text: str) -> str:
    """Return ``text`` with registered secrets, URL credentials and token parameters masked."""
    if not text:
        return text
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        text = text.replace(secret, MASK)
    text = _URL_CREDENTIALS.sub(lambda m: m.group("scheme") + MASK + "@", text)
    return _TOKEN_PARAMS.sub(lambda m: m.group(1) + "=" + MASK, text)


def holds_secret(text: str) -> bool:
    """True when ``text`` contains a registered secret (a child's environment never may)."""
    with _lock:
        secrets = list(_secrets)
    return any(secret in text for secret in secrets)
