"""The one place secrets are scrubbed from text before it reaches a log, file or message."""

from __future__ import annotations

import base64
import json
import re
import threading
import urllib.parse

_lock = threading.Lock()
_secrets: set[str] = set()
# user:password@ in URLs, and token-looking query parameters.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@")
_TOKEN_PARAMS = re.compile(r"(?i)(access_token|private_token|token)=[^&\s]+")
# The value of an authorization header, in any log of a request.
_AUTH_HEADER = re.compile(r"(?i)((?:authorization|proxy-authorization)[\"']?\s*[:=]\s*[\"']?"
                          r"(?:basic|bearer|token)\s+|private-token[\"']?\s*[:=]\s*[\"']?)"
                          r"[A-Za-z0-9+/=._~-]+")

MASK = "***"


def register_secret(secret: str | None) -> None:
    """Remember a secret so that every later `redact` hides it, also escaped (`escaped_forms`)."""
    if secret and len(secret) >= 4:
        with _lock:
            _secrets.update(form for form in {secret, *escaped_forms(secret)} if len(form) >= 4)


def escaped_forms(secret: str) -> set[str]:
    """``secret`` URL-encoded, JSON- or ``repr()``-escaped, and inside base64 (Basic auth)."""
    forms = {
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        secret.encode("unicode_escape").decode("ascii"),
    }
    raw = secret.encode()
    for shift in range(3):  # the secret's bytes at each place of a base64 group
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii").rstrip("=")
        first = -(-8 * shift // 6)  # the first character made of the secret's bits only
        last = 8 * (shift + len(raw)) // 6  # one past the last such character
        if len(middle := encoded[first:last]) >= 8:
            forms.add(middle)
            forms.add(middle.replace("+", "-").replace("/", "_"))  # URL-safe base64
    return forms - {secret}


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
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + MASK, text)
    return _TOKEN_PARAMS.sub(lambda m: m.group(1) + "=" + MASK, text)


def registered() -> tuple[str, ...]:
    with _lock:
        return tuple(_secrets)
