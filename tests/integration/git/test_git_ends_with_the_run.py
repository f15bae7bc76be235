"""A git call in flight ends with the run: an interrupt kills it and its children."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from backport import process
from backport.errors import BackportError
from backport.git.run import git


def test_an_interrupt_ends_a_git_call_that_waits_on_a_silent_remote(tmp_path) -> None:
    # A server that accepts the connection and never answers: git waits for it for ever.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        url = f"http://127.0.0.1:{server.getsockname()[1]}/Ascend/pytorch.git"
        ended: list[BaseException | None] = []

        def call() -> None:
            try:
                git(["ls-remote", url], cwd=tmp_path, timeout=None)
                ended.append(None)
            except BackportError as exc:
                ended.append(exc)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        conn, _ = server.accept()  # git is connected and waiting for an answer
        try:
            process.kill_running()  # waits for a child still being started to be counted
            caller.join(timeout=120)
        finally:
            conn.close()
    assert not caller.is_alive(), "git still runs after the interrupt"
    assert ended and isinstance(ended[0], BackportError)


def test_a_git_call_that_outlives_its_timeout_is_killed_and_says_so(tmp_path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        url = f"http://127.0.0.1:{server.getsockname()[1]}/x.git"
        with pytest.raises(BackportError) as caught:
            git(["ls-remote", url], cwd=tmp_path, timeout=1.0)
    assert "timed out after 1 s" in caught.value.message


def test_an_interrupted_git_call_leaves_no_lock_behind(tmp_path) -> None:
    """git removes its lock files when it is asked to stop (SIGTERM), not when it is killed:
    the run that follows the interrupt (the printed resume command) must find none."""
    repo = tmp_path / "repo"
    git(["init", "--quiet", str(repo)], cwd=tmp_path)
    (repo / "f.txt").write_text("one\n", encoding="utf-8")
    git(["add", "f.txt"], cwd=repo)
    git(["commit", "--quiet", "-m", "one"], cwd=repo)
    (repo / "f.txt").write_text("two\n", encoding="utf-8")
    hooked, release = tmp_path / "hook-started", tmp_path / "release"
    hook = repo / ".git" / "hooks" / "pre-commit"  # `commit -a` holds index.lock for it
    hook.write_text(f"#!/bin/sh\ntouch '{hooked}'\n"
                    f"while [ ! -e '{release}' ]; do sleep 0.05; done\n", encoding="utf-8")
    hook.chmod(0o755)
    ended: list[object] = []
    caller = threading.Thread(target=lambda: ended.append(
        git(["commit", "--quiet", "-a", "-m", "two"], cwd=repo, check=False, timeout=None)),
        daemon=True)
    caller.start()
    try:
        deadline = time.monotonic() + 120
        while not hooked.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert hooked.exists() and (repo / ".git" / "index.lock").exists()
        process.kill_running()
        caller.join(timeout=120)
    finally:
        release.touch()
    assert not caller.is_alive() and ended
    assert not (repo / ".git" / "index.lock").exists(), "the interrupted git left index.lock"
    hook.unlink()
    assert git(["commit", "--quiet", "-a", "-m", "two"], cwd=repo, check=False).ok
