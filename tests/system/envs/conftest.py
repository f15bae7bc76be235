"""Fixtures of the envs tests (the sandbox's among them): the real torch interpreter
(BACKPORT_TEST_PYTHON), its probe read once a run, a plain environment, a host that refuses
namespaces, files; and the sandbox tests' hostile worktrees, killed drivers and writers."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import backport
from backport.codec import decode, encode
from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs import sandbox
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.probe import LOAD_CHECK_TIMEOUT, probe
from backport.envs.runner import TestRunner as Runner
from backport.envs.worker import EarlyWorker
from tests.helpers.gitrepos import commit_files, git, make_repo
from tests.helpers.processes import wait_gone, wait_none_with, with_marker
from tests.helpers.session_builds import session_root

TORCH_PINS = {"torch-npu": "2.13.0", "torch": "2.13.0"}  # as the map pins one

# One probe per environment for the whole test run: a torch environment's probe runs the
# torch_npu load check in a process that imports torch (a second or two), and no test changes
# what it reads, so the tests share it (a frozen record), and so do the pytest-xdist processes
# of one run (stored in a folder they share, as a run stores its probe).
_LOCK = threading.Lock()
_PROBES: dict[str, Probe] = {}


def shared_folder(factory: pytest.TempPathFactory) -> Path:
    """The run's stored torch probes: a folder every pytest-xdist process sees."""
    folder = session_root(factory) / "shared-probes"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def probed_once(env: Environment, shared: Path) -> Probe:
    """``probe(env)``, run once per environment in this run: the first process probes and
    stores it in ``shared``, the others read it; its text is a frozen record with dict fields."""
    key = repr(env)
    with _LOCK:
        if key not in _PROBES:
            stored = shared / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"
            with open(shared / "lock", "a") as lock:  # one process probes, the others wait
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not stored.exists():
                    stored.write_text(json.dumps(encode(probe(env))), encoding="utf-8")
                _PROBES[key] = decode(Probe, json.loads(stored.read_text(encoding="utf-8")))
        return _PROBES[key]


@pytest.fixture(scope="session")
def torch_python() -> Path:
    """The torch 2.13.0 CPU + torch_npu (no CANN) interpreter; skip when not configured."""
    value = os.environ.get("BACKPORT_TEST_PYTHON")
    if not value:
        pytest.skip("BACKPORT_TEST_PYTHON is not set (path of a python with torch 2.13.0+cpu)")
    path = Path(value).expanduser()
    if not path.exists():
        pytest.skip(f"BACKPORT_TEST_PYTHON={value} does not exist")
    return path


@pytest.fixture(scope="session")
def torch_env(torch_python: Path) -> Environment:
    """The torch environment, pinned as the map pins one (the probe reads the pinned names)."""
    return Environment(name="torch-2.13.0", python=torch_python, timeout=120.0,
                       expect=dict(TORCH_PINS))


Probed = Callable[[Environment], Probe]


@pytest.fixture(scope="session")
def probed(tmp_path_factory: pytest.TempPathFactory) -> Probed:
    """``probe(env)``, run once per environment for the whole run (``probed_once``).

    The probe is a child process that imports torch (a second or two); the runner only reads
    its verdict, which no test here changes, so one probe per environment serves every test.
    """
    shared = shared_folder(tmp_path_factory)
    return lambda env: probed_once(env, shared)


@pytest.fixture(scope="session")
def torch_probe(torch_env: Environment, tmp_path_factory: pytest.TempPathFactory) -> Probe:
    """The torch interpreter's probe, read once (its torch_npu load check imports torch): the
    facts of one interpreter hold for the session (``probed_once``)."""
    return probed_once(torch_env, shared_folder(tmp_path_factory))


@pytest.fixture
def plain_env() -> Environment:
    """An environment whose interpreter is the one running the tests (no torch)."""
    return Environment(name="plain", python=Path(sys.executable), timeout=60.0)


@pytest.fixture
def refusing_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The host refuses namespaces (the probe's own test switch), probed afresh."""
    monkeypatch.setenv("BACKPORT_SANDBOX_REFUSE", "1")
    sandbox.forget()
    yield
    monkeypatch.delenv("BACKPORT_SANDBOX_REFUSE")
    sandbox.forget()


def needs_namespaces() -> None:
    """Skip where this host itself refuses namespaces (the sandbox cannot be shown here)."""
    sandbox.forget()
    found = sandbox.isolation()
    if not found.isolated:
        pytest.skip(f"this host refuses PID namespaces: {found.why}")


def folded_probe(env: Environment) -> tuple[Probe, EarlyWorker]:
    """``env``'s probe, its torch_npu load check run by the warm worker started for the run
    (as ``Environments.prewarm`` does: one import of torch for both), and that worker, for the
    test's runner to adopt (``TestRunner(..., early=)``) or discard."""
    early = EarlyWorker(env, {AUTOLOAD: "0"}, load_check=LOAD_CHECK_TIMEOUT)
    return probe(env, load_check=early.load_check_result), early


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# A run's worktrees as the sandbox sees them: two linked worktrees of one cache repository in
# a project's state folder, a patch's test that tries to keep something of its run (a repository
# planted in the temporary folder, files in every temporary folder and every other worktree, its
# own ``.git`` and git folders rewritten), and a snapshot of every file to show it kept nothing.
# argv: the marker its files are named with, a canary file of the host's /tmp. Prints what it
# could do; exits 0 once it has tried everything (the caller judges the outcome).
HOSTILE = """
import os, sys, tempfile
marker, canary = sys.argv[1], sys.argv[2]
here = os.getcwd()


def attempt(what, path, text="planted by a test\\n"):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        print("DID %s %s" % (what, path))
    except OSError as exc:
        print("REFUSED %s %s: %s" % (what, path, exc.strerror))


pointer = open(".git").read().split("gitdir:", 1)[1].strip()
admin = os.path.join(here, pointer)
common = os.path.join(admin, open(os.path.join(admin, "commondir")).read().strip())
attempt("own", os.path.join(here, "mine-" + marker))
tmp = tempfile.gettempdir()
attempt("plant", os.path.join(tmp, ".git", "HEAD"), "ref: refs/heads/main\\n")
for name in ("objects", "refs"):
    os.makedirs(os.path.join(tmp, ".git", name), exist_ok=True)
attempt("plant", os.path.join(tmp, ".git", "config"),
        "[protocol \\"ext\\"]\\n\\tallow = always\\n[core]\\n\\thooksPath = /nowhere\\n")
for folder in sorted({tmp, "/tmp", "/var/tmp", "/dev/shm"}):
    attempt("temp", os.path.join(folder, "backport-" + marker))
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        if marker in name:  # only this test's own canaries: the host's /tmp is shared
            attempt("replace", os.path.join(folder, name))
attempt("replace", canary)
for level in (os.path.dirname(here), os.path.dirname(os.path.dirname(here))):
    for name in sorted(os.listdir(level)):
        target = os.path.join(level, name)
        if os.path.isdir(target) and target not in (here, os.path.dirname(here)):
            attempt("sibling", os.path.join(target, "planted-" + marker))
attempt("admin", os.path.join(admin, "planted-" + marker))
attempt("admin", os.path.join(admin, "gitdir"), "/elsewhere/.git\\n")
attempt("common", os.path.join(common, "hooks", "post-checkout"), "#!/bin/sh\\n")
attempt("pointer", os.path.join(here, ".git"), "gitdir: /elsewhere\\n")
print("TRIED ALL")
"""


def two_worktrees(project: Path) -> tuple[Path, Path, Path]:
    """The cache repository (in ``project``) and two linked worktrees of it in the project's
    state folder, one patch set's branches as a run lays them out."""
    cache = make_repo(project / "cache" / "repo")
    commit_files(cache, {"README.md": "base\n", "test/__init__.py": ""}, "base")
    root = project / ".backport" / "worktrees" / "put_metric"
    own, other = root / "v2.12.0", root / "master"
    for path in (own, other):
        git(cache, "worktree", "add", "--quiet", "--detach", str(path))
    (own / "test" / "test_hostile.py").write_text(HOSTILE, encoding="utf-8")
    return cache, own, other


def snapshot(top: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every file and folder under ``top`` (but ``skip``) with a digest of its content."""
    found: dict[str, str] = {}
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if Path(root, d) not in skip]
        for name in dirs:
            found[os.path.join(root, name)] = "folder"
        for name in files:
            path = Path(root, name)
            if path not in skip:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


# A run's process killed with SIGKILL mid-test: the driver (the runner's parent, as
# `backport apply` is) and a test that lingers, with a child in a session of its own, until the
# driver is killed; then nothing the test started may be left running, nor the warm worker.
# The test: a child in a session of its own (out of the test's process group), then a long
# wait; the marker (argv[1]) is in both command lines, so they can be found from outside.
LINGER = """
import subprocess, sys, time
marker = sys.argv[1]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker],
                 start_new_session=True)
open(marker + ".started", "w").close()
time.sleep(600)
"""

# The runner's parent: the tests it is given first (each one's result noted in a file), then
# the lingering one, until it is killed. It is given the interpreter's probe (read once for the
# test session), or probes it; and the worktree folder its run allows writes in, if any.
DRIVER = """
import json, sys
from pathlib import Path
from backport.codec import decode
from backport.config.model import Environment, TestSpec
from backport.envs import sandbox
from backport.envs.model import Probe
from backport.envs.probe import probe
from backport.envs.runner import TestRunner
python, worktree, mode, marker, stored, first, allow, results = sys.argv[1:9]
if allow:
    sandbox.allow_writes([Path(allow)])
env = Environment(name="e", python=Path(python), timeout=600.0)
found = decode(Probe, json.loads(stored)) if stored else probe(env)
runner = TestRunner(env, found, device="none", isolated=mode == "isolated")
done = []
for step in json.loads(first):
    run = runner.run(Path(step["worktree"]), TestSpec(step["path"], tuple(step["args"])),
                     Path(step["log"]))
    done.append({"runner": run.runner, "isolation": run.isolation,
                 "exit_code": run.exit_code, "log": run.log})
worker = runner._worker.pid if runner._worker else None
Path(results).write_text(json.dumps({"done": done, "worker": worker}))
runner.run(Path(worktree), TestSpec("test/test_linger.py", (marker,)),
           Path(worktree).parent / "linger.log")
"""


def sigkill_when_lingering(proc: subprocess.Popen, marker: str, what: str) -> None:
    """Once the lingering test of ``marker`` and its child (in a session of its own) run,
    SIGKILL ``proc`` (``what`` names it) and assert that both end; what a failure leaves
    running is killed."""
    try:
        deadline = time.monotonic() + 240  # a warm worker imports torch first
        while not Path(marker + ".started").exists():
            assert proc.poll() is None, f"{what} ended before its test started"
            assert time.monotonic() < deadline, "the test never started"
            time.sleep(0.05)
        while len(with_marker(marker)) < 2:  # the test and its child in its own session
            assert time.monotonic() < deadline, f"found only {with_marker(marker)}"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert wait_none_with(marker, limit=60.0), f"still running: {with_marker(marker)}"
    finally:
        for pid in with_marker(marker):  # what a failure left behind
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def kill_driver_and_watch(python: Path, tmp_path: Path, mode: str,
                          found: Probe | None = None, first: list[dict] | None = None,
                          allow: Path | None = None) -> list[dict]:
    """Run the driver (``mode``: isolated or warm), kill it with SIGKILL once its lingering
    test and that test's child run, and assert that both end, and its warm worker too;
    returns the results of the ``first`` tests (``worktree``, ``path``, ``args``, ``log``
    each) it ran before (``runner``, ``isolation``, ``exit_code``, ``log`` each)."""
    worktree = tmp_path / "wt"
    (worktree / "test").mkdir(parents=True)
    (worktree / "test" / "test_linger.py").write_text(LINGER, encoding="utf-8")
    marker = str(worktree / f"linger-{uuid.uuid4().hex}")  # the test writes only its worktree
    stored = json.dumps(encode(found)) if found is not None else ""
    results = tmp_path / "first-results.json"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(python), str(worktree), mode,
                               marker, stored, json.dumps(first or []), str(allow or ""),
                               str(results)])
    sigkill_when_lingering(driver, marker, "the driver")
    noted = json.loads(results.read_text(encoding="utf-8"))
    if noted["worker"] is not None:  # the worker (its sandbox's launcher) ends with the run
        assert wait_gone(int(noted["worker"])), f"warm worker {noted['worker']} outlived the run"
    return list(noted["done"])


# What the read-only sandbox tests share: a test that tries to undo the mounts and write
# outside its worktree, the files it tries, and a project folder outside the temporary ones.
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
