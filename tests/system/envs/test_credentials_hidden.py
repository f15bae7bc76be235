"""A test run by the user cannot reach the user's credentials (git's credential store and
cache, an SSH key) or a disk's blocks under the mounts. The same commands run outside the
sandbox do reach them, so each check can fail."""

from __future__ import annotations

import os
import socket as sock
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from backport import process
from backport.envs import sandbox
from backport.envs.sandbox import helper_paths
from backport.git.run import configured_helpers

from .conftest import needs_namespaces

TOKEN = "gc-credential-held-by-git-41c7"
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- not-a-real-key-9d2e"
DISK = "=== what the block device is ==="


def _block_device() -> str | None:
    """A block device of this host (a disk, a loop device), if it has one."""
    for entry in sorted(os.scandir("/dev"), key=lambda e: e.name):
        try:
            if stat.S_ISBLK(entry.stat(follow_symlinks=False).st_mode):
                return entry.path
        except OSError:
            continue
    return None


@pytest.fixture
def credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A home whose git keeps the token in the store and in a running cache daemon, and
    which holds an SSH key; the daemon is stopped afterwards."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY + "\n", encoding="utf-8")
    socket = tmp_path / "cache" / "sock"
    config = home / ".gitconfig"
    config.write_text(f"[credential]\n\thelper = store\n\thelper = cache --socket {socket}\n",
                      encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    request = "protocol=https\nhost=gitcode.com\nusername=lgxxx\n"
    subprocess.run(["git", "credential", "approve"], input=f"{request}password={TOKEN}\n\n",
                   text=True, check=True, env=os.environ)
    assert TOKEN in (home / ".git-credentials").read_text(encoding="utf-8")
    assert socket.is_socket()
    # what a run's session does: the files and sockets the configured helpers name
    sandbox.cover_also(p for helper in configured_helpers() for p in helper_paths(helper))
    yield home
    sandbox.cover_also([])
    subprocess.run(["git", "credential-cache", "exit", "--socket", str(socket)], check=False)


def _probe_commands(home: Path, device: str | None) -> list[str]:
    """Ask git's helpers (both, then the cache alone), read the store and the key, and the
    first bytes of a disk; never waits for a prompt."""
    ask = "printf 'protocol=https\\nhost=gitcode.com\\nusername=lgxxx\\n\\n' | git"
    cache = f"cache --socket {home.parent / 'cache' / 'sock'}"
    script = (
        "export GIT_TERMINAL_PROMPT=0; unset GIT_ASKPASS SSH_ASKPASS; "
        f"{ask} credential fill 2>&1; "
        f"{ask} -c credential.helper= -c 'credential.helper={cache}' credential fill 2>&1; "
        f"cat {home}/.git-credentials {home}/.ssh/id_ed25519 2>&1; "
        + (f"echo {DISK}; stat -L -c %F {device}; " if device else "")
        + "true")
    return ["sh", "-c", script]


def test_a_sandboxed_test_finds_no_credential_and_no_disk(credentials: Path) -> None:
    needs_namespaces()
    device = _block_device()
    argv = _probe_commands(credentials, device)
    outside = process.run(argv, timeout=60)
    assert TOKEN in outside.out and KEY in outside.out, outside.out  # the check can fail
    start = sandbox.sandboxed(argv)
    inside = process.run(start.argv, pass_fds=start.pass_fds, timeout=60)
    assert start.isolation == sandbox.PID_NAMESPACE
    assert TOKEN not in inside.out and KEY not in inside.out, inside.out
    assert TOKEN not in inside.err and KEY not in inside.err
    if device:  # outside, a block device; inside, the null device over it (no disk to read)
        assert outside.out.split(DISK)[1].split() == ["block", "special", "file"], outside.out
        assert inside.out.split(DISK)[1].split() == ["character", "special", "file"], inside.out


def test_a_sandboxed_test_cannot_reach_a_container_engine() -> None:
    """A socket at the container engine's place (started here where none is, and the host's
    /run can be written: as root) answers outside the sandbox, and is not there inside."""
    needs_namespaces()
    path = Path("/run/docker.sock")
    if path.exists() or not os.access(path.parent, os.W_OK):
        pytest.skip(f"{path} exists here, or {path.parent} cannot be written")
    server = sock.socket(sock.AF_UNIX, sock.SOCK_STREAM)
    try:
        server.bind(str(path))
        server.listen(4)
        server.setblocking(False)
        argv = [sys.executable, "-c", CONNECT, str(path)]
        outside = process.run(argv, timeout=60)
        assert outside.out.strip() == "connected", outside.out + outside.err
        start = sandbox.sandboxed(argv)
        inside = process.run(start.argv, pass_fds=start.pass_fds, timeout=60)
        assert inside.out.strip().startswith("refused"), inside.out + inside.err
    finally:
        server.close()
        path.unlink(missing_ok=True)


CONNECT = """
import socket, sys
client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    client.connect(sys.argv[1])
    print("connected")
except OSError as exc:
    print("refused: %s" % exc.strerror)
"""
