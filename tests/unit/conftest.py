"""The unit layer runs pure Python: a test here that starts a process, runs git or opens a
socket fails loudly (``LayerViolation``), whatever the code under test catches."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator

import pytest
import urllib3  # noqa: F401 - its import binds a socket (the IPv6 probe): done before any guard


class LayerViolation(BaseException):
    """Raised where a unit test reaches outside Python; a BaseException, so no ``except
    Exception`` in the code under test can swallow it."""


REACHED = pytest.StashKey[list[str]]()  # what this test reached (tests of the guard clear it)
_PROCESS = ("posix_spawn", "posix_spawnp", "execv", "execve", "execvp", "execvpe", "execl",
            "execle", "execlp", "execlpe", "fork", "forkpty", "system", "popen")


@pytest.fixture(autouse=True)
def _pure_python_only(monkeypatch: pytest.MonkeyPatch,
                      request: pytest.FixtureRequest) -> Iterator[None]:
    """Refuse subprocesses, exec, fork and socket connect/bind for this test;
    fail it afterwards even when the refusal was caught (a thread, a broad ``except``)."""
    reached: list[str] = []

    def refuse(what: str):
        def refused(*args: object, **kwargs: object) -> None:
            reached.append(what)
            raise LayerViolation(f"{request.node.nodeid} reached {what}: a unit test runs no "
                                 "process, git or socket (move it to tests/integration or "
                                 "tests/system)")
        return refused

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("subprocess.Popen"))
    for name in _PROCESS:
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse(f"os.{name}"))
    for name in ("connect", "connect_ex", "bind"):
        monkeypatch.setattr(socket.socket, name, refuse(f"socket.{name}"))
    request.node.stash[REACHED] = reached
    yield
    assert not reached, f"{request.node.nodeid} reached {', '.join(sorted(set(reached)))}"
