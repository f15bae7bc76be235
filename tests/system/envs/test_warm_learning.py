"""Children of the warm worker start from the same warm state, run side by side, and keep
nothing of one another: a module one child imported is not in the next child's process.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs.runner import TestRunner as Runner
from tests.helpers.processes import wait_gone

from .conftest import folded_probe, write

pytestmark = pytest.mark.torch

# Imports what the next test checks, then changes global state everywhere it can.
TEACH = """
import os
import sys
import unittest
import wave

import torch

import helper_local


class Teach(unittest.TestCase):
    def test_change_everything(self):
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

AT_START = {name: name in sys.modules for name in ("wave", "helper_local", "bp_fake")}

import wave

import torch

import helper_local


class Check(unittest.TestCase):
    def test_nothing_the_previous_test_imported(self):
        self.assertEqual(AT_START, {"wave": False, "helper_local": False, "bp_fake": False})

    def test_nothing_leaked_from_the_previous_test(self):
        self.assertFalse(hasattr(wave, "LEAKED"))
        self.assertFalse(hasattr(helper_local, "LEAKED"))
        self.assertNotIn("BP_LEAKED", os.environ)
        self.assertEqual(torch.get_default_dtype(), torch.float32)

    def test_own_argv(self):
        self.assertEqual(sys.argv[1:], ["two", "-x"])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
"""

# Two tests that each wait for the other to have started: they pass only side by side.
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


@pytest.fixture
def worktree(tmp_path: Path) -> Path:
    wt = tmp_path / "wt"
    write(wt / "test" / "test_teach.py", TEACH)
    write(wt / "test" / "test_check.py", CHECK)
    write(wt / "test" / "helper_local.py", "NAME = \"helper\"\n")
    write(wt / "test" / "test_meet.py", MEET)
    return wt


def _teach_then_check(runner: Runner, worktree: Path, tag: str) -> None:
    """A test that imports modules and changes global state, then one that finds neither."""
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


def test_the_adopted_worker_s_children_start_alike_and_run_side_by_side(
    torch_env: Environment, worktree: Path
) -> None:
    found, early = folded_probe(torch_env)
    assert early._worker is not None
    adopted = early._worker.pid
    with Runner(torch_env, found, device="none", early=early) as runner:
        _teach_then_check(runner, worktree, "teach")
        # The worker started before the probe ended serves the run's tests.
        assert runner._worker is not None and runner._worker.pid == adopted
        _side_by_side(runner, worktree, "meet")
    assert wait_gone(adopted, limit=5.0)  # the adopted worker ends with its run
