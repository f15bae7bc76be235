"""Fixtures of the from-PR integration tests: the demo's sandbox, and the GitCode stand-in on
127.0.0.1 serving its source PR."""

import pytest

from backport.demo.sandbox import Sandbox
from tests.helpers.project import sandbox  # noqa: F401  (registered as a fixture here)
from tests.helpers.source_pr import source_server


@pytest.fixture
def server(sandbox: Sandbox):  # noqa: F811 - the fixture above
    """The stand-in GitCode server, serving the sandbox's upstream and its source PR."""
    with source_server(sandbox) as fake:
        yield fake
