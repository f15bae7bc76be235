"""Waiting on processes by event, never by a fixed sleep."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def popen_interruptible(argv: Sequence[str], **kwargs: Any) -> subprocess.Popen:
    """``Popen`` of a child that Ctrl-C (SIGINT) interrupts even when this process was started
    with SIGINT ignored (``nohup … &``), which a child would otherwise inherit."""
    return subprocess.Popen(list(argv), preexec_fn=_default_sigint, **kwargs)


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie waiting for its parent counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = f"/proc/{pid}/status"
    try:
        with open(status) as handle:
            return "\nState:\tZ" not in handle.read()
    except OSError:
        return False


def wait_gone(pid: int, limit: float = 60.0) -> bool:
    """True once process ``pid`` no longer runs (a bounded wait for an event, not a timing)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True  # ended; its parent has yet to reap it
        except OSError:
            return True
        time.sleep(0.05)
    return False


def with_marker(marker: str) -> list[int]:
    """The running processes (zombies not counted) whose command line holds ``marker``: how a
    test finds, from outside, processes whose own pids are those of a PID namespace."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        if marker in cmdline and alive(int(name)):
            found.append(int(name))
    return found


def wait_none_with(marker: str, limit: float = 60.0) -> bool:
    """True once no process holds ``marker`` in its command line (a bounded wait for an event)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not with_marker(marker):
            return True
        time.sleep(0.05)
    return False


def namespace_pid(pid: int) -> int:
    """Process ``pid``'s pid in its own (innermost) PID namespace: the last ``NSpid`` entry of
    its status; ``pid`` itself where it runs in this process's namespace."""
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return pid
