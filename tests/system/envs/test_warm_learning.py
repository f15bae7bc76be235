"""The warm worker learns what tests import, runs tests side by side, and keeps them isolated.

Real processes throughout: a throw-away venv that sees the torch environment through a ``.pth``
file, so modules can be put into *its* site-packages without touching the shared environment.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs import runner as runner_module
from backport.envs.runner import TestRunner as Runner
from tests.helpers.processes import wait_gone

from .conftest import folded_probe, write

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
    write(wt / "test" / "test_counted.py", COUNTED)
    return wt


# Each test below is one worker's life (a fresh worker costs an import of torch): the steps
# that used to be tests of their own follow one another on it, each with all its assertions.


def _teach_then_check(runner: Runner, worktree: Path, tag: str) -> None:
    """A test that imports modules and changes global state, then one that checks what it
    finds: the learned modules preloaded, nothing the first test changed."""
    teach = runner.run(worktree, Spec("test/test_teach.py", ("one",)), worktree / f"{tag}1.log")
    assert (teach.runner, teach.ok) == ("warm", True), (worktree / f"{tag}1.log").read_text()
    check = runner.run(worktree, Spec("test/test_check.py", ("two", "-x")),
                       worktree / f"{tag}2.log")
    assert (check.runner, check.ran) == ("warm", 3)
    assert check.ok, (worktree / f"{tag}2.log").read_text()


def _side_by_side(runner: Runner, worktree: Path, tag: str) -> None:
    """Two tests that each wait for the other to have started: they pass only side by side."""
    results = {}
    a, b = str(worktree / f"{tag}a.started"), str(worktree / f"{tag}b.started")

    def go(name: str, args: tuple[str, ...]) -> None:
        results[name] = runner.run(worktree, Spec("test/test_meet.py", args),
                                   worktree / f"{tag}{name}.log")

    threads = [threading.Thread(target=go, args=("a", (a, b))),
               threading.Thread(target=go, args=("b", (b, a)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [(r.runner, r.ok) for r in results.values()] == [("warm", True), ("warm", True)]


def test_a_private_worker_learns_runs_side_by_side_and_retires_on_an_argv_reader(
    learning_env: Environment, worktree: Path
) -> None:
    found, early = folded_probe(learning_env)
    assert early._worker is not None
    adopted = early._worker.pid
    with Runner(learning_env, found, device="none", early=early) as runner:
        # The learned modules are preloaded and nothing leaks from one test to the next.
        _teach_then_check(runner, worktree, "learn")
        worker = runner._worker
        # The worker started before the probe ended serves the run's tests.
        assert worker is not None and runner.worker_pid == adopted
        # The child imported bp_argv_mod (reads sys.argv) and then bp_uses_argv (imports it):
        # the worker preloads neither, stays in service, and each test sees its own argv.
        for n, args in enumerate([("a",), ("b", "c")]):
            run = runner.run(worktree, Spec("test/test_indirect.py", args), worktree / f"i{n}.log")
            assert (run.runner, run.ran) == ("warm", 2)
            assert run.ok, (worktree / f"i{n}.log").read_text()
        assert runner._worker is worker and worker.retired is None
        _side_by_side(runner, worktree, "meet")
        # bp_sneaky reads sys.argv only outside a worktree: the child saw nothing, the worker's
        # own import of it did. The worker retires; a plain one runs the next test.
        first = runner.run(worktree, Spec("test/test_sneaky.py"), worktree / "s1.log")
        assert (first.runner, first.ok) == ("warm", True), (worktree / "s1.log").read_text()
        old = runner._worker
        assert old is worker
        second = runner.run(worktree, Spec("test/test_sneaky.py", ("x",)), worktree / "s2.log")
        assert (second.runner, second.ok) == ("warm", True), (worktree / "s2.log").read_text()
        assert old.retired is not None and "bp_sneaky" in old.retired
        assert runner._worker is not old and runner.fallback is None
    assert wait_gone(adopted, limit=5.0)  # the adopted worker ends with its run


def _gated(learning_env: Environment, worktree: Path) -> tuple[Path, Path, Environment]:
    """Two FIFO gates (``<gate>_a``, ``<gate>_b``) that modules ``bp_gate_a`` / ``bp_gate_b``
    wait on when imported, a test file importing both, the log ``bp_counted`` notes each
    importing process in, and the environment naming them."""
    gate, log = worktree / "gate", worktree / "counted.log"  # a test writes only its worktree
    for end in ("_a", "_b"):
        os.mkfifo(f"{gate}{end}")
    write(worktree / "test" / "test_gate.py",
          "import unittest\nimport bp_gate_a\nimport bp_gate_b\n\n\n"
          "class Gate(unittest.TestCase):\n    def test_gate(self):\n        pass\n\n\n"
          "if __name__ == '__main__':\n    unittest.main()\n")
    return gate, log, Environment(name=learning_env.name, python=learning_env.python,
                                  timeout=learning_env.timeout,
                                  env={"BP_GATE": str(gate), "BP_COUNT_LOG": str(log)})


@contextlib.contextmanager
def _released_on_failure(gate: Path) -> Iterator[None]:
    """Should the test fail before it lets the worker through its gates, open both, so the
    worker does not wait in one for ever."""
    try:
        yield
    except BaseException:
        for end in ("_a", "_b"):
            threading.Thread(target=lambda e=end: open(f"{gate}{e}", "wb").close(),
                             daemon=True).start()
        raise


def test_a_private_worker_waits_for_its_preload_and_imports_nothing_no_test_needs(
    learning_env: Environment, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second test's fork waits for the worker to import what the first one taught. That
    # import is held at the gate past the protocol's reply timeout (shortened here): the test
    # still runs forked from this worker, not isolated after giving the worker up.
    monkeypatch.setattr(runner_module, "REPLY_TIMEOUT", 0.5)
    gate, log, env = _gated(learning_env, worktree)
    runs: list = []
    found, early = folded_probe(env)
    with _released_on_failure(gate), Runner(env, found, device="none", early=early) as runner:
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
        # The run's last test imports bp_counted (as a process of its own would); the worker,
        # which forks nothing after it, never imports it too.
        run = runner.run(worktree, Spec("test/test_counted.py"), worktree / "3.log")
        assert (run.runner, run.ok) == ("warm", True), (worktree / "3.log").read_text()
    assert len(log.read_text().split()) == 1
