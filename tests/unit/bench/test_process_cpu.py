"""bench/process_cpu.py reads strace's execve log and the kernel's accounting records right."""

from __future__ import annotations

import importlib.util
import struct
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[3] / "bench" / "process_cpu.py"
spec = importlib.util.spec_from_file_location("process_cpu", SCRIPT)
assert spec and spec.loader
process_cpu = importlib.util.module_from_spec(spec)
sys.modules["process_cpu"] = process_cpu  # its dataclass looks its module up there
spec.loader.exec_module(process_cpu)

LOG = """\
100 execve("/usr/bin/python", ["python", "-m", "pytest"], 0x7ffd /* 35 vars */ <unfinished ...>
101 execve("/usr/bin/git", ["git", "version"], 0x7fae /* 39 vars */) = -1 ENOENT (No such file)
101 execve("/usr/lib/git-core/git", ["git", "version"], 0x7fae /* 39 vars */) = 0
100 <... execve resumed>)            = 0
100 <... vfork resumed>)             = 102
102 execve("/w/.venv/bin/python3", ["python3", "-m", "venv", ".v"], 0x7f /* 9 vars */) = 0
102 clone(child_stack=NULL, flags=CLONE_CHILD_SETTID|SIGCHLD) = 103
"""


def test_an_exec_split_by_another_process_counts_and_a_failed_one_does_not() -> None:
    found, traced = process_cpu.read_trace(LOG)
    assert found == {100: "python -m pytest", 101: "git version", 102: "python3 -m venv .v"}
    assert traced == {100, 101, 102, 103}  # 103 forked and never exec'd


def test_an_accounting_record_gives_pid_parent_name_and_cpu() -> None:
    # utime 250 ticks; stime 0x2001 = mantissa 1, exponent 1 -> 8 ticks
    record = struct.pack("<BBHIIIIIIf8H16s", 0, 3, 0, 0, 0, 0, 4242, 1, 0, 0.0,
                         250, 0x2001, 0, 0, 0, 0, 0, 0, b"python3\0")
    (one,) = process_cpu.read_accounting(record + b"\0" * 10)  # a torn tail is ignored
    assert (one.pid, one.ppid, one.comm, one.cpu) == (4242, 1, "python3", 2.58)


def test_kinds_follow_the_command_line() -> None:
    assert process_cpu.kind_of("python3 -W ignore::DeprecationWarning -c import runpy") \
        == "ensurepip (python -m venv)"
    assert process_cpu.kind_of("/e/bin/python /b/envs/scripts/warm_worker.py torch") \
        == "warm worker"
    assert process_cpu.kind_of("../.backport-venv/bin/backport check --json") == "backport CLI"
    assert process_cpu.kind_of("/usr/lib/git-core/git pack-objects --revs") == "git"
    assert process_cpu.kind_of("sleep 1") == "other"


def test_a_running_process_counts_only_if_it_started_with_the_run() -> None:
    """A pid from a PID namespace (the sandbox's fork) can name a kernel thread that runs
    since boot: it is not the run's."""
    kthread = "15 (rcu_preempt) I 2 0 0 0 -1 2129984 0 0 0 0 0 3137 0 0 20 0 1 0 3 0 0"
    worker = "4242 (python) S 1 4242 4242 0 -1 4194560 9 0 0 0 180 20 0 0 20 0 3 0 905100 1 2"
    assert not process_cpu.started_after(kthread, since=905000)
    assert process_cpu.started_after(worker, since=905000)
