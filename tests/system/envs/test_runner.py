"""TestRunner: real test files, real processes, the real torch interpreter where marked."""

from __future__ import annotations

import os
import signal
import tempfile
import threading
import time
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs.model import AUTOLOAD, Probe
from backport.envs.probe import probe
from backport.envs.runner import TestRunner as Runner
from backport.envs.worker import EarlyWorker
from backport.errors import BackportError
from tests.helpers.processes import wait_none_with

from .conftest import Probed, write

PASSING_TORCH = """
import os
import sys
import unittest

import torch


class SmallTest(unittest.TestCase):
    def test_tensor(self):
        self.assertEqual(torch.ones(3).sum().item(), 3.0)

    def test_matmul_after_fork(self):
        x = torch.randn(256, 256)
        self.assertEqual((x @ x).shape, (256, 256))

    def test_cwd_and_path(self):
        self.assertEqual(os.path.basename(os.getcwd()), "wt")
        self.assertEqual(os.path.basename(sys.path[0]), "sub")
        self.assertEqual(sys.argv[1:], ["-v"])


if __name__ == "__main__":
    unittest.main()
"""

FAILING = """
import unittest


class Failing(unittest.TestCase):
    def test_ok(self):
        pass

    def test_bad(self):
        self.assertEqual(1, 2)


if __name__ == "__main__":
    unittest.main()
"""

HANGING = """
import os
import subprocess
import sys
import time

# The marker (the pids file) in its command line finds it from outside the run's namespace.
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]])
with open(sys.argv[1], "w") as out:
    out.write("%d %d\\n" % (os.getpgid(0), child.pid))
print("started", flush=True)
time.sleep(120)
"""

PLAIN_OK = """
import unittest


class Plain(unittest.TestCase):
    def test_one(self):
        pass


if __name__ == "__main__":
    unittest.main()
"""


def gone(pid: int, *, group: bool, wait: float = 5.0) -> bool:
    """True once no process (or group) ``pid`` remains, zombies not counted."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            if group:
                os.killpg(pid, 0)
            else:
                os.kill(pid, 0)
        except ProcessLookupError:
            return True
        if not group and _zombie(pid):
            return True
        time.sleep(0.05)
    return False


def _zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    wt = tmp_path / "wt"
    write(wt / "test" / "sub" / "test_small.py", PASSING_TORCH)
    write(wt / "test" / "test_failing.py", FAILING)
    write(wt / "test" / "test_hang.py", HANGING)
    write(wt / "test" / "test_plain.py", PLAIN_OK)
    return wt


@pytest.fixture(scope="module")
def torch_probe(torch_env: Environment, probed: Probed) -> Probe:
    return probed(torch_env)


SMALL = Spec("test/sub/test_small.py", ("-v",))


# The warm tests: each worker's life is one test (a fresh worker costs an import of torch; a
# worker shared by a module was started again in each pytest-xdist process its tests went
# to). The steps that were tests of their own follow one another on it, each with all its
# assertions, on the run's own worker (``test_a_wrong_guess_is_stopped_...``).


def _warm_steps(runner: Runner, torch_env: Environment, torch_probe: Probe,
                worktree: Path) -> None:
    """What a warm runner does, whichever worker it forks from."""
    _warm_run_passes(runner, worktree)
    _harness_imports_do_not_leak(runner, worktree)
    _warm_failing_test(runner, worktree)
    _warm_timeout_kills_the_group(runner, worktree)
    _concurrent_runs_on_one_runner(runner, worktree)
    _missing_test_file_fails_the_same_warm_and_isolated(runner, torch_env, torch_probe,
                                                        worktree)
    _warm_run_of_a_test_that_raises_on_import(runner, worktree)


def _warm_run_passes(warm: Runner, worktree: Path) -> None:
    logs = worktree.parent / "logs"
    run = warm.run(worktree, SMALL, logs / "small.log")
    assert run.runner == "warm", warm.fallback
    assert (run.exit_code, run.ran, run.ok, run.timed_out) == (0, 3, True, False)
    assert run.summary[1] == "OK" and run.summary[0].startswith("Ran 3 tests in ")
    assert run.env_vars == {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    assert run.command == "TORCH_DEVICE_BACKEND_AUTOLOAD=0 python test/sub/test_small.py -v"
    log = (logs / "small.log").read_text()
    assert log.startswith("$ ") and "test_matmul_after_fork" in log
    assert "no NPU visible" in warm.note and "TORCH_DEVICE_BACKEND_AUTOLOAD=0" in warm.note


DYNAMO = """
import sys
import unittest

DYNAMO_AT_START = "torch._dynamo" in sys.modules

import torch
import torch._dynamo
from torch.testing._internal.common_utils import TestCase, run_tests


class Dynamo(TestCase):
    def test_not_imported_and_pristine(self):
        self.assertFalse(DYNAMO_AT_START, "a child kept what an earlier one imported")
        self.assertFalse(torch._dynamo.config.verbose)
        self.assertEqual(torch.get_default_dtype(), torch.float32)
        torch._dynamo.config.verbose = True
        torch.set_default_dtype(torch.float64)


if __name__ == "__main__":
    run_tests()
"""


def _harness_imports_do_not_leak(warm: Runner, worktree: Path) -> None:
    # The second run of a test that imports the harness and changes its state finds neither.
    write(worktree / "test" / "test_dynamo.py", DYNAMO)
    for n in (1, 2):
        run = warm.run(worktree, Spec("test/test_dynamo.py"), worktree.parent / f"dynamo{n}.log")
        assert (run.runner, run.ran) == ("warm", 1)
        assert run.ok, (worktree.parent / f"dynamo{n}.log").read_text()


def _warm_failing_test(warm: Runner, worktree: Path) -> None:
    run = warm.run(worktree, Spec("test/test_failing.py"), worktree.parent / "fail.log")
    assert run.runner == "warm"
    assert (run.exit_code, run.ran, run.ok) == (1, 2, False)
    assert run.summary == [run.summary[0], "FAILED (failures=1)"]


def _warm_timeout_kills_the_group(warm: Runner, worktree: Path) -> None:
    pids = worktree / "pids.txt"  # a test writes only its worktree
    spec = Spec("test/test_hang.py", (str(pids),))
    start = time.monotonic()
    run = warm.run(worktree, spec, worktree.parent / "hang.log", timeout=2.0)
    assert time.monotonic() - start < 10
    assert run.runner == "warm"
    assert run.timed_out and run.exit_code is None and not run.ok
    assert run.summary == ["timed out after 2s"]
    assert pids.read_text().strip()  # the test and its child started
    assert wait_none_with(str(pids))  # both gone (their pids are the namespace's)
    # the worker survives a timeout and keeps serving
    again = warm.run(worktree, Spec("test/test_plain.py"), worktree.parent / "after.log")
    assert (again.runner, again.ok) == ("warm", True)


def _concurrent_runs_on_one_runner(warm: Runner, worktree: Path) -> None:
    results: dict[str, object] = {}

    def go(name: str, spec: Spec) -> None:
        results[name] = warm.run(worktree, spec, worktree.parent / f"{name}.log")

    threads = [
        threading.Thread(target=go, args=("small", SMALL)),
        threading.Thread(target=go, args=("failing", Spec("test/test_failing.py"))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    small, failing = results["small"], results["failing"]
    assert (small.ran, small.ok, small.runner) == (3, True, "warm")
    assert (failing.ran, failing.ok, failing.runner) == (2, False, "warm")
    assert "test_bad" not in (worktree.parent / "small.log").read_text()
    assert "test_matmul" not in (worktree.parent / "failing.log").read_text()


def test_fallback_when_worker_cannot_start(plain_env: Environment, worktree: Path) -> None:
    # The probe claims torch, but the interpreter has none: the worker's import fails.
    claimed = Probe(
        env_name="plain", interpreter=str(plain_env.python), platform=None, python=None,
        packages={"torch": "2.13.0"}, cann=None, torch_npu_loads=None, torch_npu_error=None,
        npu_model=None, npu_count=None, visible_devices=None,
    )  # fmt: skip
    with Runner(plain_env, claimed, device="none") as runner:
        run = runner.run(worktree, Spec("test/test_plain.py"), worktree.parent / "p.log")
    assert (run.runner, run.exit_code, run.ran, run.ok) == ("isolated", 0, 1, True)
    assert runner.fallback is not None
    assert runner.fallback.startswith("warm worker could not start: ")
    assert "torch" in runner.fallback


def test_isolated_timeout_kills_the_group(plain_env: Environment, worktree: Path) -> None:
    runner = Runner(plain_env, probe(plain_env), device="none")
    pids = worktree / "pids.txt"  # a test writes only its worktree
    run = runner.run(worktree, Spec("test/test_hang.py", (str(pids),)), worktree.parent / "h.log",
                     timeout=2.0)  # fmt: skip
    assert run.runner == "isolated"
    assert run.timed_out and run.exit_code is None and not run.ok
    assert "started" in Path(run.log).read_text()
    assert pids.read_text().strip()
    assert wait_none_with(str(pids))


def test_npu_device_without_npu_is_unavailable(plain_env: Environment, worktree: Path) -> None:
    runner = Runner(plain_env, probe(plain_env), device="npu")
    assert not runner.verdict.runnable
    with pytest.raises(BackportError) as info:
        runner.run(worktree, Spec("test/test_plain.py"), worktree.parent / "n.log")
    assert info.value.code == "env-unavailable"
    assert "torch_npu not installed" in info.value.message
    assert not (worktree.parent / "n.log").exists()


def test_plain_env_runs_isolated_and_hides_tokens(
    plain_env: Environment, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITCODE_TOKEN", "secret-token-value")
    write(worktree / "test" / "test_env.py", """
        import os
        import unittest

        class Env(unittest.TestCase):
            def test_env(self):
                self.assertNotIn("GITCODE_TOKEN", os.environ)
                self.assertEqual(os.environ["MY_FLAG"], "1")

        unittest.main()
    """)  # fmt: skip
    env = Environment(name="plain", python=plain_env.python, env={"MY_FLAG": "1"})
    runner = Runner(env, probe(env), device="none")
    run = runner.run(worktree, Spec("test/test_env.py"), worktree.parent / "e.log")
    assert runner.fallback == "torch is not installed, nothing to keep warm"
    assert (run.runner, run.ok, run.ran) == ("isolated", True, 1)
    assert run.env_vars == {"MY_FLAG": "1"}


def _missing_test_file_fails_the_same_warm_and_isolated(
    warm: Runner, torch_env: Environment, torch_probe: Probe, worktree: Path
) -> None:
    spec = Spec("test/test_absent.py")
    hot = warm.run(worktree, spec, worktree.parent / "absent-warm.log")
    cold = Runner(torch_env, torch_probe, device="none", isolated=True).run(
        worktree, spec, worktree.parent / "absent-iso.log"
    )
    assert (hot.runner, cold.runner) == ("warm", "isolated")
    for run in (hot, cold):
        assert (run.exit_code, run.ok, run.ran) == (2, False, None)
        assert "can't open file" in Path(run.log).read_text()
        assert run.summary == ["can't open file 'test_absent.py': [Errno 2] No such file or directory"]


def test_loadable_torch_npu_runs_isolated(plain_env: Environment, worktree: Path) -> None:
    npu = Probe(
        env_name="plain", interpreter=str(plain_env.python), platform=None, python=None,
        packages={"torch": "2.7.1", "torch_npu": "2.7.1.post4"}, cann="8.0.RC3",
        torch_npu_loads=True, torch_npu_error=None, npu_model="Ascend910B4", npu_count=8,
        visible_devices=None,
    )  # fmt: skip
    runner = Runner(plain_env, npu, device="npu")
    assert runner.verdict.runnable and runner.kind == "isolated"
    assert runner.note == "torch_npu loaded; 8 NPUs visible (Ascend910B4)"
    run = runner.run(worktree, Spec("test/test_plain.py"), worktree.parent / "npu.log")
    assert (run.runner, run.ok) == ("isolated", True)


def test_missing_worktree_is_reported(plain_env: Environment, tmp_path: Path) -> None:
    runner = Runner(plain_env, probe(plain_env), device="none")
    with pytest.raises(BackportError) as info:
        runner.run(tmp_path / "nowhere", Spec("test/x.py"), tmp_path / "x.log")
    assert "worktree" in info.value.message and "does not exist" in info.value.message


CRASHES = {
    "test/test_numpy.py": ("import unittest\nimport numpy\n", 1,
                           "ModuleNotFoundError: No module named 'numpy'"),
    "test/test_hccl.py": ("raise ImportError('/usr/local/Ascend/lib64/libhccl.so: cannot open "
                          "shared object file')\n", 1,
                          "ImportError: libhccl.so: cannot open shared object file"),
    "test/test_quiet.py": ("import sys\nsys.exit(3)\n", 3, "no test summary; exit 3"),
}


@pytest.mark.parametrize("path", sorted(CRASHES))
def test_a_test_that_dies_before_unittest_reports_what_happened(
    plain_env: Environment, worktree: Path, path: str
) -> None:
    """An environment without numpy, a missing libhccl.so, a silent exit: never "not found"."""
    source, code, line = CRASHES[path]
    write(worktree / path, source)
    run = Runner(plain_env, probe(plain_env), device="none").run(
        worktree, Spec(path), worktree.parent / "crash.log")
    assert (run.exit_code, run.ok, run.ran) == (code, False, None)
    assert run.summary == [line]


def _warm_run_of_a_test_that_raises_on_import(warm: Runner, worktree: Path) -> None:
    write(worktree / "test" / "test_hccl.py", CRASHES["test/test_hccl.py"][0])
    run = warm.run(worktree, Spec("test/test_hccl.py"), worktree.parent / "hccl.log")
    assert run.runner == "warm"
    assert (run.exit_code, run.summary) == (1, [CRASHES["test/test_hccl.py"][2]])


@pytest.mark.torch
def test_a_wrong_guess_is_stopped_the_run_s_own_worker_runs_every_warm_test_and_falls_back(
    torch_env: Environment, torch_probe: Probe, worktree: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run's own worker, started once the guessed one was stopped, serves the warm tests
    (the adoption of a rightly guessed private worker: test_warm_learning.py)."""
    # The forked tests' scratch folders go with the run: nothing is left in tmp.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setenv("TMPDIR", str(scratch))
    # The verdict wants exactly AUTOLOAD=0: a worker with one more variable is not kept.
    early = EarlyWorker(torch_env, {AUTOLOAD: "0", "BACKPORT_GUESS": "1"})
    early._thread.join()
    assert early._worker is not None
    pid = early._worker.proc.pid
    with Runner(torch_env, torch_probe, device="none", early=early) as runner:
        first = runner.run(worktree, Spec("test/test_plain.py"), worktree.parent / "1.log")
        assert (first.runner, first.ok) == ("warm", True)
        assert gone(pid, group=False)
        worker = runner._worker
        assert worker is not None and worker.proc.pid != pid
        _warm_steps(runner, torch_env, torch_probe, worktree)
        assert runner._worker is worker
        # The run's own worker dies: the next test runs isolated, as a process of its own that
        # imports torch (what isolated runs, requested or not, do: see the missing file's).
        os.killpg(worker.proc.pid, signal.SIGKILL)
        worker.proc.wait()
        second = runner.run(worktree, SMALL, worktree.parent / "2.log")
    assert (second.runner, second.ok) == ("isolated", True)
    assert (second.exit_code, second.ran) == (0, 3)
    assert runner.fallback == "the warm worker exited"
    assert not list(scratch.glob("backport-*"))
