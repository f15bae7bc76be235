"""A command started in the sandbox behaves as it would outside: same user, same exit code or
signal, same signal dispositions; inside it is alone (pid 1 is its init, /proc is its own)."""

from __future__ import annotations

import os

from backport import process
from backport.envs.sandbox import sandboxed

from .conftest import needs_namespaces


def _run(argv: list[str]) -> process.Output:
    start = sandboxed(argv)
    assert start.isolation == "pid-namespace"
    return process.run(start.argv, pass_fds=start.pass_fds, timeout=60)


def test_same_user_exit_code_and_signal() -> None:
    needs_namespaces()
    assert _run(["sh", "-c", "id -u; id -g"]).out.split() == [str(os.getuid()), str(os.getgid())]
    assert _run(["sh", "-c", "exit 3"]).returncode == 3
    assert _run(["sh", "-c", "kill -TERM $$"]).returncode == -15
    missing = _run(["no-such-program-here"])
    assert missing.returncode == 127 and "cannot run no-such-program-here" in missing.err


def test_signal_dispositions_are_those_of_a_plain_start() -> None:
    needs_namespaces()
    read = ["sh", "-c", "grep -E '^Sig(Ign|Blk)' /proc/self/status"]
    assert _run(read).out == process.run(read, timeout=60).out


def test_alone_in_its_namespace() -> None:
    needs_namespaces()
    listing = _run(["sh", "-c", "echo $PPID; tr '\\0' ' ' < /proc/1/cmdline; echo; "
                    "ls /proc | grep -cE '^[0-9]+$'"])
    parent, init, count = listing.out.splitlines()
    assert parent == "1"  # its init
    assert "sandbox_init.py" in init
    assert int(count) <= 8  # the init, the shell and its pipeline: nothing of the host
