"""The unit layer runs pure Python: a test here that starts a process, runs git or opens a
socket fails loudly (``LayerViolation``), whatever the code under test catches.
Below the guard: the parsed source trees the architecture tests read."""

from __future__ import annotations

import ast
import functools
import gc
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

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


# Syntax trees of Python files, parsed and walked once per test process.
#
# The unit layer's source scans (the import rule and the other rules of ``test_architecture``,
# the error codes of ``test_errors``, the import cycles of ``test_import_cycles``) read the same
# files of the package, and two of them every file of the tests: each file is parsed here once
# and its nodes listed once per kind of node a scan asks for.
#
# A file is parsed with the cyclic garbage collector paused: a syntax tree holds no reference
# cycle (a node refers only to its children), so a collection during a parse frees nothing, yet
# each one walked every tree parsed before it; that was more than half of the parsing time.
# A tree is cached by its path: a scan of a file a test writes reads it after writing it.
@functools.cache
def tree(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once per test process."""
    text = path.read_text(encoding="utf-8")
    paused = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(text, filename=str(path))
    finally:
        if paused:
            gc.enable()


@functools.cache
def walked(path: Path) -> tuple[ast.AST, ...]:
    """Every node of ``path``'s tree, in ``ast.walk`` order."""
    return tuple(ast.walk(tree(path)))


@functools.cache
def nodes(path: Path, *kinds: type[ast.AST]) -> tuple[ast.AST, ...]:
    """The nodes of ``path``'s tree that are of one of ``kinds`` (every node when none is
    named), in ``ast.walk`` order: a scan looks at only the kinds it reads."""
    every = walked(path)
    return tuple(node for node in every if isinstance(node, kinds)) if kinds else every
