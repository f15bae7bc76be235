"""Fixtures of the pipeline tests: the GitCode stand-in on 127.0.0.1 serving the sandbox's source
PR (the sandbox and the fake GitCode server are the root conftest's)."""

import pytest

from backport.demo.sandbox import Sandbox
from tests.helpers.source_pr import source_server


@pytest.fixture
def server(sandbox: Sandbox):
    """The stand-in GitCode server, serving the sandbox's upstream and its source PR."""
    with source_server(sandbox) as fake:
        yield fake
