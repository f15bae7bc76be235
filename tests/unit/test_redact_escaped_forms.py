"""A registered secret is hidden also where it reads escaped: URL-encoded, JSON- or repr()-
escaped, inside the base64 of a Basic authorization, and as an authorization header's value."""

from __future__ import annotations

import base64
import json
import urllib.parse

import pytest

from backport.redact import redact, register_secret

SECRET = 'tok/en+with"quote\\and%pct ü-7f3c9a'


@pytest.fixture(autouse=True)
def _registered() -> None:
    register_secret(SECRET)


@pytest.mark.parametrize("shown", [
    urllib.parse.quote(SECRET, safe=""),
    urllib.parse.quote_plus(SECRET),
    json.dumps({"token": SECRET})[11:-2],
    json.dumps(SECRET, ensure_ascii=False)[1:-1],
    repr(SECRET)[1:-1],
    SECRET.encode("unicode_escape").decode(),
])
def test_an_escaped_form_is_hidden(shown: str) -> None:
    assert shown != SECRET
    assert redact(f"before {shown} after") == "before *** after"


@pytest.mark.parametrize("user", ["oauth2", "lgxxx", "ab", "x"])
def test_the_base64_of_user_and_token_shows_no_part_of_the_token(user: str) -> None:
    blob = base64.b64encode(f"{user}:{SECRET}".encode()).decode()
    shown = redact(f"sent {blob} once")
    assert blob not in shown and "***" in shown
    # At most a few characters at each end of the token's bits stay: never a run of the token.
    kept = shown.removeprefix("sent ").removesuffix(" once").replace("***", " ")
    assert all(len(piece) <= 12 for piece in kept.split())


@pytest.mark.parametrize(("line", "said"), [
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic ***"),
    ("{'Authorization': 'Bearer abc.def-ghi'}", "{'Authorization': 'Bearer ***'}"),
    ('"PRIVATE-TOKEN": "zzzzzzzz"', '"PRIVATE-TOKEN": "***"'),
])
def test_an_authorization_header_value_is_hidden(line: str, said: str) -> None:
    assert redact(line) == said
