"""The warm worker learns what tests import, runs tests side by side, and keeps them isolated.

Real processes throughout: a throw-away venv that sees the torch environment through a ``.pth``
file, so modules can be put into *its* site-packages without touching the shared environment.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs import runner as runner_module
from backport.envs.kept import KeepPolicy, read_hello
from backport.envs.runner import TestRunner as Runner
from tests.helpers.processes import namespace_pid

from .conftest import Probed, write

pytestmark = pytest.mark.torch

GATE = ("import os\nif not os.path.exists('test/test_gate.py'):\n"
        "    with open(os.environ['BP_GATE'] + __name__[-2:], 'rb') as fifo:\n"
        "        fifo.read()\n")
SITE_MODULES = {
    "bp_site_mod.py": "VALUE = []\n",
    "bp_argv_mod.py": "import sys\nARGS = list(sys.argv[1:])\n",
    "bp_uses_argv.py": "import bp_argv_mod\n",
    # Reads sys.argv only where the worker runs, never in the test's worktree.
    "bp_sneaky.py": "import os\nimport sys\nARGS = None if os.path.exists('test/test_sneaky.py') else sys.argv[1:]\n",
    # In the worker (not in a test's worktree) their import waits for a writer of the FIFO
    # $BP_GATE_a or $BP_GATE_b: the test decides when a preload of each ends.
    "bp_gate_a.py": GATE,
    "bp_gate_b.py": GATE,
    # Notes every process that runs its top level in the file named by BP_COUNT_LOG.
    "bp_counted.py": "import os\nwith open(os.environ['BP_COUNT_LOG'], 'a') as log:\n"
                     "    log.write(f'{os.getpid()}\\n')\n",
}

# Imports what the next test checks, then changes global state everywhere it can.
TEACH = """
import os
import sys
import unittest
import wave

import torch

import bp_argv_mod
import bp_site_mod
import helper_local


class Teach(unittest.TestCase):
    def test_change_everything(self):
        bp_site_mod.VALUE.append("leaked")
        wave.LEAKED = True
        helper_local.LEAKED = True
        os.environ["BP_LEAKED"] = "1"
        torch.set_default_dtype(torch.float64)
        sys.modules["bp_fake"] = object()


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
"""

CHECK = """
import os
import sys
import unittest

AT_START = {name: name in sys.modules
            for name in ("wave", "bp_site_mod", "bp_argv_mod", "helper_local", "bp_fake")}

import wave

import torch

import bp_argv_mod
import bp_site_mod
import helper_local


class Check(unittest.TestCase):
    def test_learned_from_site_packages_and_stdlib_only(self):
        self.assertEqual(AT_START, {"wave": True, "bp_site_mod": True, "bp_argv_mod": False,
                                    "helper_local": False, "bp_fake": False})

    def test_nothing_leaked_from_the_previous_test(self):
        self.assertEqual(bp_site_mod.VALUE, [])
        self.assertFalse(hasattr(wave, "LEAKED"))
        self.assertFalse(hasattr(helper_local, "LEAKED"))
        self.assertNotIn("BP_LEAKED", os.environ)
        self.assertEqual(torch.get_default_dtype(), torch.float32)

    def test_argv_readers_see_this_run(self):
        self.assertEqual(bp_argv_mod.ARGS, sys.argv[1:])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
"""

INDIRECT = """
import sys
import unittest

AT_START = "bp_uses_argv" in sys.modules

import bp_argv_mod
import bp_uses_argv


class Indirect(unittest.TestCase):
    def test_args(self):
        self.assertEqual(bp_argv_mod.ARGS, sys.argv[1:])

    def test_importer_of_an_argv_reader_not_preloaded(self):
        self.assertFalse(AT_START)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
"""

# Two tests that each wait for the other to have started: they pass only side by side.
SNEAKY = """
import sys
import unittest

import bp_sneaky


class Sneaky(unittest.TestCase):
    def test_module_saw_no_argv_here(self):
        self.assertIsNone(bp_sneaky.ARGS)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
"""

MEET = """
import os
import sys
import time
import unittest


class Meet(unittest.TestCase):
    def test_meet(self):
        mine, other = sys.argv[1], sys.argv[2]
        open(mine, "w").close()
        deadline = time.monotonic() + 60
        while not os.path.exists(other) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(other), "the other test never ran alongside")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
"""

COUNTED = """
import sys
import unittest

import bp_counted


class Counted(unittest.TestCase):
    def test_imported(self):
        self.assertIn("bp_counted", sys.modules)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
"""

DYNAMO = """
import sys
import unittest

DYNAMO_AT_START = "torch._dynamo" in sys.modules
EXPECT_PRELOADED = {expect}

import torch
import torch._dynamo
from torch.testing._internal.common_utils import TestCase, run_tests


class Dynamo(TestCase):
    def test_preloaded_and_pristine(self):
        if EXPECT_PRELOADED:
            self.assertTrue(DYNAMO_AT_START, "the worker did not preload what the harness imports")
        self.assertFalse(torch._dynamo.config.verbose)
        self.assertEqual(torch.get_default_dtype(), torch.float32)
        torch._dynamo.config.verbose = True
        torch.set_default_dtype(torch.float64)


if __name__ == "__main__":
    run_tests()
"""


@pytest.fixture(scope="module")
def learning_env(torch_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Environment:
    """A venv of its own whose site-packages holds the test modules and sees torch via .pth."""
    root = tmp_path_factory.mktemp("learning") / "venv"
    subprocess.run([str(torch_python), "-m", "venv", "--without-pip", str(root)], check=True)
    torch_site = subprocess.run(
        [str(torch_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip()
    python = root / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True).stdout.strip())
    (site / "torch_env.pth").write_text(torch_site + "\n", encoding="utf-8")
    for name, text in SITE_MODULES.items():
        (site / name).write_text(text, encoding="utf-8")
    return Environment(name="learning", python=python, timeout=120.0)


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    wt = tmp_path / "wt"
    write(wt / "test" / "test_teach.py", TEACH)
    write(wt / "test" / "test_check.py", CHECK)
    write(wt / "test" / "helper_local.py", "NAME = \"helper\"\n")
    write(wt / "test" / "test_indirect.py", INDIRECT)
    write(wt / "test" / "test_sneaky.py", SNEAKY)
    write(wt / "test" / "test_meet.py", MEET)
    write(wt / "test" / "test_dynamo_first.py", DYNAMO.format(expect=False))
    write(wt / "test" / "test_dynamo.py", DYNAMO.format(expect=True))
    write(wt / "test" / "test_counted.py", COUNTED)
    return wt


@pytest.fixture(params=["private", "kept"])
def keep(request: pytest.FixtureRequest) -> KeepPolicy | None:
    """The run's own worker, or a worker kept between runs (in this test's folder)."""
    if request.param == "private":
        return None
    policy: KeepPolicy = request.getfixturevalue("kept")
    return policy


def test_learned_modules_are_preloaded_and_nothing_leaks(
    learning_env: Environment, worktree: Path, keep: KeepPolicy | None, probed: Probed
) -> None:
    with Runner(learning_env, probed(learning_env), device="none", keep=keep) as runner:
        teach = runner.run(worktree, Spec("test/test_teach.py", ("one",)), worktree / "1.log")
        assert (teach.runner, teach.ok) == ("warm", True), (worktree / "1.log").read_text()
        check = runner.run(worktree, Spec("test/test_check.py", ("two", "-x")),
                           worktree / "2.log")
        assert (check.runner, check.ran) == ("warm", 3)
        assert check.ok, (worktree / "2.log").read_text()


def test_importers_of_argv_readers_are_left_to_the_test(
    learning_env: Environment, worktree: Path, probed: Probed
) -> None:
    # The child imported bp_argv_mod (reads sys.argv) and then bp_uses_argv (imports it): the
    # worker preloads neither, stays in service, and each test sees its own argv.
    with Runner(learning_env, probed(learning_env), device="none") as runner:
        worker = runner._worker
        for n, args in enumerate([("a",), ("b", "c")]):
            run = runner.run(worktree, Spec("test/test_indirect.py", args), worktree / f"{n}.log")
            assert (run.runner, run.ran) == ("warm", 2)
            assert run.ok, (worktree / f"{n}.log").read_text()
            worker = worker or runner._worker
        assert runner._worker is worker and worker is not None and worker.retired is None


def test_worker_whose_import_read_argv_is_replaced(
    learning_env: Environment, worktree: Path, probed: Probed
) -> None:
    # bp_sneaky reads sys.argv only outside a worktree: the child saw nothing, the worker's own
    # import of it did. The worker retires; a plain one runs the next test.
    with Runner(learning_env, probed(learning_env), device="none") as runner:
        first = runner.run(worktree, Spec("test/test_sneaky.py"), worktree / "1.log")
        assert (first.runner, first.ok) == ("warm", True), (worktree / "1.log").read_text()
        old = runner._worker
        assert old is not None
        second = runner.run(worktree, Spec("test/test_sneaky.py", ("x",)), worktree / "2.log")
        assert (second.runner, second.ok) == ("warm", True), (worktree / "2.log").read_text()
        assert old.retired is not None and "bp_sneaky" in old.retired
        assert runner._worker is not old and runner.fallback is None


def test_warm_tests_run_side_by_side(
    learning_env: Environment, worktree: Path, keep: KeepPolicy | None, probed: Probed
) -> None:
    results = {}
    a, b = str(worktree / "a.started"), str(worktree / "b.started")
    with Runner(learning_env, probed(learning_env), device="none", keep=keep) as runner:

        def go(name: str, args: tuple[str, ...]) -> None:
            results[name] = runner.run(worktree, Spec("test/test_meet.py", args),
                                       worktree / f"{name}.log")

        threads = [threading.Thread(target=go, args=("a", (a, b))),
                   threading.Thread(target=go, args=("b", (b, a)))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert [(r.runner, r.ok) for r in results.values()] == [("warm", True), ("warm", True)]


def test_harness_imports_are_preloaded_without_leaking(
    torch_env: Environment, worktree: Path, keep: KeepPolicy | None, probed: Probed
) -> None:
    # The first test of a fresh worker imports the harness itself (and teaches the worker);
    # the next starts with it imported, and sees nothing the first changed.
    with Runner(torch_env, probed(torch_env), device="none", keep=keep) as runner:
        for n, name in ((1, "test_dynamo_first.py"), (2, "test_dynamo.py")):
            run = runner.run(worktree, Spec(f"test/{name}"), worktree / f"{n}.log")
            assert (run.runner, run.ran) == ("warm", 1)
            assert run.ok, (worktree / f"{n}.log").read_text()


def test_nothing_leaks_from_one_run_to_the_next_through_a_kept_worker(
    learning_env: Environment, worktree: Path, kept: KeepPolicy, probed: Probed
) -> None:
    # Two runs (two runners, as two `backport apply` would make) share one kept worker: the
    # second run's test starts from the worker's state, never from the first run's test.
    found = probed(learning_env)
    with Runner(learning_env, found, device="none", keep=kept) as first:
        teach = first.run(worktree, Spec("test/test_teach.py", ("one",)), worktree / "1.log")
        assert (teach.runner, teach.ok) == ("warm", True), (worktree / "1.log").read_text()
        pid = first.worker_pid
    with Runner(learning_env, found, device="none", keep=kept) as second:
        check = second.run(worktree, Spec("test/test_check.py", ("two", "-x")),
                           worktree / "2.log")
        assert second.worker_pid == pid and "kept from an earlier run" in second.kind
        assert (check.runner, check.ran) == ("warm", 3)
        assert check.ok, (worktree / "2.log").read_text()


def _counting(env: Environment, log: Path) -> Environment:
    return Environment(name=env.name, python=env.python, timeout=env.timeout,
                       env={"BP_COUNT_LOG": str(log)})


def test_a_run_imports_what_its_test_needs_once(
    learning_env: Environment, worktree: Path, probed: Probed
) -> None:
    # One test on a fresh worker of the run's own: the test imports bp_counted (as a process
    # of its own would); the worker, which forks nothing after it, never imports it too.
    log = worktree.parent / "counted.log"
    with Runner(_counting(learning_env, log), probed(learning_env), device="none") as runner:
        run = runner.run(worktree, Spec("test/test_counted.py"), worktree / "1.log")
        assert (run.runner, run.ok) == ("warm", True), (worktree / "1.log").read_text()
    assert len(log.read_text().split()) == 1


def test_a_kept_worker_learns_between_runs(
    learning_env: Environment, worktree: Path, kept: KeepPolicy, probed: Probed
) -> None:
    # The first run's test taught the kept worker; the next run's test starts with the module
    # imported (by the worker, once), so it runs nothing of it again.
    log = worktree.parent / "counted.log"
    env = _counting(learning_env, log)
    found = probed(learning_env)
    for n in (1, 2):
        with Runner(env, found, device="none", keep=kept) as runner:
            run = runner.run(worktree, Spec("test/test_counted.py"), worktree / f"{n}.log")
            assert (run.runner, run.ok) == ("warm", True), (worktree / f"{n}.log").read_text()
            worker = namespace_pid(runner.worker_pid)  # the pid the worker logs is its own
    importers = log.read_text().split()
    assert len(importers) == 2 and importers[1] == str(worker)


def _gated(learning_env: Environment, worktree: Path) -> tuple[Path, Environment]:
    """Two FIFO gates (``<gate>_a``, ``<gate>_b``) that modules ``bp_gate_a`` / ``bp_gate_b``
    wait on when imported, a test file importing both, and the environment naming the gates."""
    gate = worktree.parent / "gate"
    for end in ("_a", "_b"):
        os.mkfifo(f"{gate}{end}")
    write(worktree / "test" / "test_gate.py",
          "import unittest\nimport bp_gate_a\nimport bp_gate_b\n\n\n"
          "class Gate(unittest.TestCase):\n    def test_gate(self):\n        pass\n\n\n"
          "if __name__ == '__main__':\n    unittest.main()\n")
    return gate, Environment(name=learning_env.name, python=learning_env.python,
                             timeout=learning_env.timeout, env={"BP_GATE": str(gate)})


def test_a_client_knocking_during_a_preload_waits_for_one_import_not_all(
    learning_env: Environment, worktree: Path, kept: KeepPolicy, probed: Probed
) -> None:
    # The run taught the kept worker two modules; between runs it imports them. A client that
    # connects while the first one is importing gets its hello when that import ends, before
    # the second one starts (which here would never end before the test lets it).
    gate, env = _gated(learning_env, worktree)
    with Runner(env, probed(learning_env), device="none", keep=kept) as runner:
        run = runner.run(worktree, Spec("test/test_gate.py"), worktree / "1.log")
        assert (run.runner, run.ok) == ("warm", True), (worktree / "1.log").read_text()
    (path,) = kept.folder.glob("w-*.sock")
    with open(f"{gate}_a", "wb"):  # returns once the worker's preload waits in the first gate
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(path))
    released = threading.Thread(target=lambda: open(f"{gate}_b", "wb").close(), daemon=True)
    try:
        hello = read_hello(client, 120.0)  # fails (times out) when the worker went on importing
        assert hello["ready"] is True
    finally:
        client.close()
        released.start()  # the second gate: imported now (or before, without the fix)
        released.join(120.0)
    assert not released.is_alive()


def test_a_test_waits_for_the_preload_before_its_fork_however_long(
    learning_env: Environment, worktree: Path, probed: Probed, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second test's fork waits for the worker to import what the first one taught. That
    # import is held at the gate past the protocol's reply timeout (shortened here): the test
    # still runs forked from this worker, not isolated after giving the worker up.
    monkeypatch.setattr(runner_module, "REPLY_TIMEOUT", 0.5)
    gate, env = _gated(learning_env, worktree)
    runs: list = []
    with Runner(env, probed(learning_env), device="none") as runner:
        runs.append(runner.run(worktree, Spec("test/test_gate.py"), worktree / "1.log"))
        second = threading.Thread(target=lambda: runs.append(
            runner.run(worktree, Spec("test/test_gate.py"), worktree / "2.log")), daemon=True)
        second.start()
        with open(f"{gate}_a", "wb"):  # the worker's preload waits in the first gate
            time.sleep(2.0)  # past the shortened reply timeout (a wait the fix must survive)
        released = threading.Thread(target=lambda: open(f"{gate}_b", "wb").close(),
                                    daemon=True)
        released.start()  # the second gate, if the worker is still there to open it
        second.join(300.0)
        assert [(run.runner, run.ok) for run in runs] == [("warm", True), ("warm", True)], \
            runner.fallback
