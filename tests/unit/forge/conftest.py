"""Fixtures of the forge unit tests: the local forge (SQLite in tmp_path), an injected sleep."""

from tests.fakes.forge import local, no_token_leak, sleeps  # noqa: F401  (registered as fixtures)
