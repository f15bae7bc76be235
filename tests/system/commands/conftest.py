"""Fixtures of the command system tests: the demo's sandbox."""

from tests.helpers.project import sandbox  # noqa: F401  (registered as a fixture here)
