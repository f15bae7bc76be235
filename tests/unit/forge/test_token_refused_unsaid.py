"""A token holding a control character is refused (exit 2) in a sentence that does not hold it."""

from __future__ import annotations

import pytest

from backport.errors import EXIT_CODES, BackportError
from backport.forge.token import resolve_token
from backport.redact import redact

API = "https://api.gitcode.com/api/v5"


@pytest.mark.parametrize("token", ["abcd\nefgh1234", "abcd\refgh1234", "abcd\x00efgh1234",
                                   "abcd\x1befgh1234", "abcd\x7fefgh", "abcd\u2028efgh"])
@pytest.mark.parametrize("variable", ["GITCODE_TOKEN", "BACKPORT_TOKEN"])
def test_a_token_with_a_control_character_is_refused_unsaid(token: str, variable: str) -> None:
    with pytest.raises(BackportError) as info:
        resolve_token(API, {variable: token})
    message = str(info.value)
    assert EXIT_CODES[info.value.code] == 2
    assert message.startswith(f"{variable} holds a control character at position 5 of")
    assert "(the token is not shown)" in message
    for part in token.splitlines() + [token]:
        assert part not in message
    assert redact(f"seen: {token}") == "seen: ***"


def test_a_plain_token_is_taken_as_it_is() -> None:
    assert resolve_token(API, {"GITCODE_TOKEN": "  plainTOKEN123\n"}) == "plainTOKEN123"
