"""The one process runner: stdin bytes, captured output, the whole group killed on time-out."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from backport import process
from backport.errors import BackportError
from tests.helpers.processes import alive


def _gone(pid: int) -> bool:
    """True once ``pid`` is dead (the kill is sent before this is asked; the kernel reaps it)."""
    for _ in range(100):
        if not alive(pid):
            return True
        threading.Event().wait(0.05)
    return False


def test_stdin_bytes_reach_the_child_whole_and_its_output_comes_back() -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: more than a pipe buffer holds
    out = process.run([sys.executable, "-c", "import sys; d = sys.stdin.buffer.read();"
                       "sys.stdout.buffer.write(d[::-1]); sys.stderr.write('done')"], stdin=data)
    assert out.ok and out.stdout == data[::-1] and out.err == "done"


def test_the_environment_given_is_the_whole_environment(tmp_path: Path) -> None:
    out = process.run([sys.executable, "-c", "import os; print(sorted(os.environ))"],
                      env={"ONLY": "1"}, cwd=tmp_path)
    assert out.out.strip() in ("['ONLY']", "['LC_CTYPE', 'ONLY']")


def _live_members(pgid: int) -> list[int]:
    """The processes of group ``pgid`` that are not zombies (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(stat.parent.name))
    return found


def test_a_child_out_of_time_is_killed_with_its_children(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    real = process.spawn

    def spawn(*args, **kwargs):  # type: ignore[no-untyped-def]
        proc = real(*args, **kwargs)
        started.append(proc.pid)
        return proc

    monkeypatch.setattr(process, "spawn", spawn)
    # The child starts a grandchild in its group, then waits: only the time-out ends them.
    out = process.run(["sh", "-c", "sleep 60 & sleep 60 & wait"], timeout=1.5)
    assert out.timed_out and not out.ok
    (pgid,) = started
    for _ in range(100):  # the kill is sent; the kernel takes a moment to finish them
        if not _live_members(pgid):
            break
        threading.Event().wait(0.05)
    assert _live_members(pgid) == []


def test_reap_kills_what_the_child_left_running(tmp_path: Path) -> None:
    pid_file = tmp_path / "left.pid"
    out = process.run(["sh", "-c", f"sleep 60 >/dev/null 2>&1 & echo $! > '{pid_file}'"],
                      reap=True)
    assert out.ok
    assert _gone(int(pid_file.read_text()))


def test_a_program_that_cannot_start_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(BackportError) as info:
        process.run([str(tmp_path / "python")], code="env-missing",
                    context="environment 'torch-2.7.1': ", shown="~/envs/python")
    assert info.value.code == "env-missing"
    assert info.value.message == ("environment 'torch-2.7.1': cannot run ~/envs/python: "
                                  "No such file or directory")


def test_an_interrupted_run_kills_the_children_it_waits_on(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    done: list[process.Output] = []
    waiting = threading.Thread(target=lambda: done.append(process.run(
        ["sh", "-c", f"echo $$ > '{pid_file}.tmp'; mv '{pid_file}.tmp' '{pid_file}'; exec sleep 60"])))
    waiting.start()
    while not pid_file.exists():  # the child says it is running
        threading.Event().wait(0.05)
    process.kill_running()
    waiting.join()
    assert done and not done[0].ok and done[0].returncode is not None
    assert _gone(int(pid_file.read_text()))
