"""Which processes a command's CPU went to: every process it started, by kind, with its argv.

Turns on the kernel's process accounting (``acct(2)``: needs root) for the run, so every
process that ends is counted, warm workers and their forks included, and records each
``execve`` with ``strace`` to name them. Prints the CPU seconds by kind (warm worker, fork of a
warm worker, probe, pip, ``python -m venv``'s ensurepip, backport CLI, git, ...) and the
costliest processes. Accounting counts CPU in 1/100 s ticks, rounded down per process: the
many short git processes show as about zero here (``GIT_TRACE2_EVENT`` counts them).

Usage: sudo .venv/bin/python bench/process_cpu.py [--top N] -- COMMAND...
e.g.   .venv/bin/python bench/process_cpu.py -- .venv/bin/python -m pytest -q -n auto tests/system

Only the command's own descendants count (other users of the machine do not). Processes still
running when the command ends (daemons) are let go and counted with their CPU so far. Raise ``/proc/sys/kernel/pid_max`` on a long run so no
pid is used twice (this script warns when one was).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h), 64 bytes
TICKS = 100.0  # AHZ: accounting's clock ticks per second
EXECVE = re.compile(r'^(\d+)\s+execve\("[^"]*", \[(.*)\], 0x[0-9a-f]+ /\* \d+ vars \*/(.*)$')
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. execve resumed>.*\)\s+= 0$")
SUCCEEDED = re.compile(r"\)\s+= 0$")
CLONED = re.compile(r"^(\d+)\s+(?:<\.\.\. )?(?:clone3?|v?fork)\b.* = (\d+)$")
# Runs the command under strace and says its exit code on the descriptor named first: strace
# itself waits for every process it traces, daemons included, so it is told to let go once
# the command is done.
RUNNER = ("import os, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
          "os.write(int(sys.argv[1]), b'%d' % code)")
ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
KINDS = (  # first match wins; a process that never exec'd is named by its nearest exec'd parent
    ("ensurepip (python -m venv)", r"ignore::DeprecationWarning -c"),
    ("warm worker", r"warm_worker\.py"),
    ("probe", r"probe_env\.py"),
    ("sandbox init", r"sandbox_init\.py"),
    ("pip", r"(^|/)pip3?( |$)|-m pip|pip-runner|_FOREIGN_PIP|runpy\.run_module\('pip'"),
    ("backport CLI", r"(^|/)backport( |$)|-m backport"),
    ("pytest", r"pytest|exec\(eval\(sys\.stdin"),
    ("a branch's test file", r"(^| )test/\S+\.py"),
    ("git", r"(^|/)git(-[a-z-]+)?( |$)"),
)


@dataclass(frozen=True)
class Ended:
    pid: int
    ppid: int
    comm: str
    cpu: float  # user + system seconds


def comp_t(value: int) -> int:
    """A ``comp_t`` (13-bit mantissa, 3-bit base-8 exponent) as an integer."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def read_accounting(data: bytes) -> list[Ended]:
    ended = []
    for offset in range(0, len(data) - RECORD.size + 1, RECORD.size):
        fields = RECORD.unpack_from(data, offset)
        pid, ppid, utime, stime, comm = fields[6], fields[7], fields[10], fields[11], fields[18]
        cpu = (comp_t(utime) + comp_t(stime)) / TICKS
        ended.append(Ended(pid, ppid, comm.split(b"\0")[0].decode(errors="replace"), cpu))
    return ended


def read_trace(text: str) -> tuple[dict[int, str], set[int]]:
    """pid -> the command line of its last successful execve, and every pid traced (the
    command's descendants, forks that never exec'd included). strace splits a call that
    another process interrupted into an "unfinished" and a "resumed" line."""
    found, traced, pending = {}, set(), {}
    for line in text.splitlines():
        head = line.split(maxsplit=1)[:1]
        if head and head[0].isdigit():
            traced.add(int(head[0]))
        if match := EXECVE.match(line):
            argv, rest = " ".join(ARG.findall(match.group(2))), match.group(3)
            if rest.endswith("<unfinished ...>"):
                pending[int(match.group(1))] = argv
            elif SUCCEEDED.search(rest):
                found[int(match.group(1))] = argv
        elif (match := RESUMED.match(line)) and int(match.group(1)) in pending:
            found[int(match.group(1))] = pending.pop(int(match.group(1)))
        if match := CLONED.match(line):
            traced.add(int(match.group(2)))
    return found, traced


def run_traced(command: list[str], trace: Path) -> int:
    """``command`` under strace (execve and forks logged to ``trace``); strace lets go of
    what still runs (daemons) once the command has ended. Its exit code."""
    read_end, write_end = os.pipe()
    tracer = subprocess.Popen(
        ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=execve,clone,clone3,fork,vfork",
         "-s", "400", "-o", str(trace), sys.executable, "-c", RUNNER, str(write_end), *command],
        pass_fds=(write_end,))
    os.close(write_end)
    with os.fdopen(read_end, "rb") as said:
        code = said.read()  # returns when the runner wrote its code and ended, or died
    tracer.send_signal(signal.SIGKILL)  # a killed tracer detaches its tracees; they go on
    tracer.wait()
    return int(code) if code.strip() else 1


def stat_fields(text: str) -> list[str]:
    """The fields of a ``/proc/PID/stat`` line after the command name (field 3 on)."""
    return text.rpartition(")")[2].split()


def started_after(text: str, since: int) -> bool:
    """Whether the process of ``/proc/PID/stat`` text started at or after clock tick ``since``
    (field 22, ticks since boot). A pid in the trace can be one a PID namespace gave (the
    sandbox's ``clone`` returns it), which names another process here: a kernel thread, say."""
    return int(stat_fields(text)[19]) >= since


def still_running(pid: int, since: int) -> Ended | None:
    """A traced process that outlived the command (a daemon): its CPU so far, from
    ``/proc/PID/stat``, named "(running)"; None for one that started before the run."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    if not started_after(text, since):
        return None
    fields = stat_fields(text)
    ticks = os.sysconf("SC_CLK_TCK")
    return Ended(pid, int(fields[1]), "(running)", (int(fields[11]) + int(fields[12])) / ticks)


def kind_of(argv: str) -> str:
    return next((name for name, pattern in KINDS if re.search(pattern, argv)), "other")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to measure after --")
    work = Path(tempfile.mkdtemp(prefix="process-cpu-"))
    accounting, trace = work / "pacct", work / "execve.log"
    accounting.touch()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(str(accounting).encode()) != 0:
        sys.exit(f"acct: {os.strerror(ctypes.get_errno())} (process accounting needs root)")
    since = int(stat_fields(Path("/proc/self/stat").read_text())[19])
    try:
        code = run_traced(command, trace)
    finally:
        libc.acct(None)
    execs, traced = read_trace(trace.read_text(errors="replace"))
    ended = [e for e in read_accounting(accounting.read_bytes()) if e.pid in traced]
    done = {e.pid for e in ended}
    ended += [e for pid in sorted(traced - done) if (e := still_running(pid, since)) is not None]
    parents = {e.pid: e.ppid for e in ended}
    if len(parents) < len(ended):
        print("warning: pids were used twice; raise /proc/sys/kernel/pid_max", file=sys.stderr)

    def named(one: Ended) -> tuple[str, bool]:
        """The command line ``one`` ran, or its nearest exec'd ancestor's (True: forked)."""
        pid, hops = one.pid, 0
        while pid not in execs and pid in parents and hops < 8:
            pid, hops = parents[pid], hops + 1
        return (execs[pid], pid != one.pid) if pid in execs else (one.comm, False)

    by_kind: dict[str, float] = collections.defaultdict(float)
    counts: collections.Counter[str] = collections.Counter()
    rows = []
    for one in ended:
        argv, forked = named(one)
        kind = ("fork of " if forked else "") + kind_of(argv)
        by_kind[kind] += one.cpu
        counts[kind] += 1
        rows.append((one.cpu, kind, argv))
    print(f"exit {code}; {len(ended)} processes ended, {sum(by_kind.values()):.1f} CPU s")
    for kind, cpu in sorted(by_kind.items(), key=lambda item: -item[1]):
        print(f"  {cpu:7.1f}  {counts[kind]:6d}  {kind}")
    print("\ncostliest processes:")
    for spent, kind, argv in sorted(rows, reverse=True)[: args.top]:
        print(f"  {spent:6.2f}  {kind:28s} {argv[:160]}")
    print(f"\nraw records: {work}")
    return code


if __name__ == "__main__":
    sys.exit(main())
