"""The unit layer's guard: a process, git or a socket fails the test that reaches for it."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.unit.conftest import REACHED, LayerViolation


@pytest.fixture(autouse=True)
def _reached_on_purpose(request: pytest.FixtureRequest):
    """These tests reach outside on purpose: what the guard noted is cleared after each."""
    yield
    request.node.stash[REACHED].clear()


def test_a_subprocess_is_refused() -> None:
    with pytest.raises(LayerViolation, match="subprocess.Popen"):
        subprocess.run([sys.executable, "-c", "pass"], check=False)


def test_a_spawn_is_refused() -> None:
    with pytest.raises(LayerViolation, match="os.posix_spawn"):
        os.posix_spawn(sys.executable, [sys.executable, "-c", "pass"], dict(os.environ))


def test_git_through_the_runner_is_refused(tmp_path) -> None:
    from backport.git.run import git

    with pytest.raises(LayerViolation, match="subprocess.Popen"):
        git(["--version"], cwd=tmp_path)


def test_a_socket_connect_and_bind_are_refused() -> None:
    with socket.socket() as sock:
        with pytest.raises(LayerViolation, match="socket.connect"):
            sock.connect(("127.0.0.1", 9))
        with pytest.raises(LayerViolation, match="socket.bind"):
            sock.bind(("127.0.0.1", 0))


def test_the_refusal_is_not_an_exception_code_can_swallow(request: pytest.FixtureRequest) -> None:
    assert not issubclass(LayerViolation, Exception)
    try:
        subprocess.run(["git", "--version"], check=False)
    except LayerViolation:
        pass
    assert request.node.stash[REACHED] == ["subprocess.Popen"]  # noted: the test fails after
