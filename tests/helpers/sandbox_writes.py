"""What the read-only sandbox tests share: a test that tries to undo the mounts and write
outside its worktree, the files it tries, and a project folder outside the temporary ones."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import backport
from backport.config.model import TestSpec as Spec
from backport.envs import sandbox
from backport.envs.runner import TestRunner as Runner

# First tries what a hostile test run as root would: make the mounts writable again (a remount,
# `mount_setattr`, then the same in a user and mount namespace of its own, in a child) and, in
# that child, write every file outside; then tries to write each file named on its command line;
# says which it could; exits 0 only when exactly the first (in the worktree) could be written.
WRITER = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT_BIND, CLONE_NEWUSER_NEWNS = 32 | 4096, 0x10000000 | 0x00020000


class Attr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clr", "propagation", "userns")]


def make_writable():
    libc.mount(None, b"/", None, MS_REMOUNT_BIND, None)
    libc.syscall(442, -100, b"/", 0x8000, ctypes.byref(Attr(0, 1, 0, 0)), 32)


status = open("/proc/self/status").read().splitlines()
print("CAPABILITIES " + [line.split()[1] for line in status if line.startswith("CapEff")][0])
make_writable()
sys.stdout.flush()
child = os.fork()
if child == 0:
    if libc.unshare(CLONE_NEWUSER_NEWNS) == 0:
        make_writable()
    for path in sys.argv[2:]:
        try:
            with open(path, "a") as handle:
                handle.write("changed by a test in a namespace of its own\\n")
            print("ESCAPED " + path, flush=True)
        except OSError:
            pass
    os._exit(0)
os.waitpid(child, 0)
wrote = []
for path in sys.argv[1:]:
    try:
        with open(path, "a") as handle:
            handle.write("changed by a test\\n")
        wrote.append(path)
        print("WROTE " + path)
    except OSError as exc:
        print("REFUSED %s: %s" % (path, exc.strerror))
sys.exit(0 if wrote == sys.argv[1:2] else 1)
"""


def _writable_inside(path: Path) -> bool:
    """Whether ``path`` lies in a folder a sandbox may write (a temporary folder)."""
    return any(str(path.resolve()).startswith(root.rstrip("/") + "/")
               for root in sandbox.writable_roots())


def outside_folder() -> Path:
    """A new folder outside the temporary folders (which a sandbox may write): beside this
    file, else in the home folder; the test is skipped where neither is."""
    for parent in (Path(__file__).parent, Path.home()):
        if not _writable_inside(parent) and os.access(parent, os.W_OK):
            return Path(tempfile.mkdtemp(prefix=".backport-ro-test-", dir=parent))
    pytest.skip("no folder outside the temporary folders can be written here")


@pytest.fixture
def project() -> Iterator[Path]:
    """A project folder outside the temporary folders, with its state folder's worktrees
    allowed, as a run's session allows them."""
    base = outside_folder()
    try:
        sandbox.allow_writes([base / ".backport" / "worktrees"])
        yield base
    finally:
        sandbox.allow_writes([])
        shutil.rmtree(base, ignore_errors=True)


def _targets(project: Path) -> tuple[Path, list[Path]]:
    """The worktree and the files a test tries to change: one in its worktree, then the
    journal, a patch, a git configuration and the tool's own code."""
    worktree = project / ".backport" / "worktrees" / "put_metric" / "v2.12.0"
    (worktree / "test").mkdir(parents=True)
    (worktree / "test" / "test_write.py").write_text(WRITER, encoding="utf-8")
    journal = project / ".backport" / "runs" / "put_metric" / "journal.json"
    patch = project / "patches" / "put_metric" / "0001-test.patch"
    gitconfig = project / "home" / ".gitconfig"
    for path in (journal, patch, gitconfig):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("as the tool wrote it\n", encoding="utf-8")
    # A stand-in of the tool's installation (a copy of one of its files) outside the temporary
    # folders: protected by the same rule as the installation itself, and a sandbox that fails
    # this test damages the copy, never the checkout or venv the suite runs from.
    tool = project / "venv" / "backport" / "errors.py"
    tool.parent.mkdir(parents=True)
    tool.write_bytes(Path(backport.__file__).with_name("errors.py").read_bytes())
    return worktree, [worktree / "test" / "written.txt", journal, patch, gitconfig, tool]


def writer_test(project: Path) -> tuple[Path, Spec, list[Path], bytes]:
    """The writer's worktree and test, the files it tries, and the tool's file as it was."""
    worktree, paths = _targets(project)
    spec = Spec("test/test_write.py", tuple(str(p) for p in paths))
    return worktree, spec, paths, paths[-1].read_bytes()


def check_writer(log_path: str, exit_code: int | None, paths: list[Path],
                 tool_before: bytes) -> None:
    """The writer wrote its worktree's file and nothing else (see ``WRITER``)."""
    log = Path(log_path).read_text(encoding="utf-8")
    assert f"WROTE {paths[0]}" in log, log
    assert "CAPABILITIES 0000000000000000" in log and "ESCAPED" not in log, log
    for path in paths[1:]:
        assert f"REFUSED {path}: Read-only file system" in log, log
    assert exit_code == 0, log
    for path in paths[1:-1]:
        assert path.read_text(encoding="utf-8") == "as the tool wrote it\n"
    assert paths[-1].read_bytes() == tool_before


def run_writer(runner: Runner, project: Path, tmp_path: Path) -> str:
    """Run the writer; how it ran (isolated, warm)."""
    worktree, spec, paths, tool_before = writer_test(project)
    run = runner.run(worktree, spec, tmp_path / "write.log")
    check_writer(run.log, run.exit_code, paths, tool_before)
    return run.runner
