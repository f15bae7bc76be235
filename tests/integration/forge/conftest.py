"""Fixtures of the forge tests: the stand-in GitCode server, forges bound to it, the local forge."""

from tests.fakes.forge import (  # noqa: F401  (registered as fixtures here)
    gitcode,
    local,
    no_token_leak,
    server,
    sleeps,
)
