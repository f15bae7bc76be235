"""Fixtures of the pipeline system tests: the demo's sandbox and the fake GitCode server."""

from tests.helpers.project import gitcode, sandbox  # noqa: F401  (registered as fixtures here)
