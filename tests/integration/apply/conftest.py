"""Fixtures of the apply tests: the demo's sandbox and the stand-in GitCode server."""

from tests.helpers.project import gitcode, sandbox  # noqa: F401  (registered as fixtures here)
