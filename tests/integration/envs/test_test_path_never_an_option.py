"""A test path starting with '-' reaches the interpreter as a file to run, never as an option:
a real interpreter runs a real file named like ``-c…`` (the map's check refuses such a path;
this is the run's own guard)."""

from __future__ import annotations

import sys
from pathlib import Path

from backport.config.model import Environment
from backport.config.model import TestSpec as Spec
from backport.envs.probe import probe
from backport.envs.runner import TestRunner as Runner

OPTION_LIKE = "-cimport pathlib;pathlib.Path('pwned').write_text('ran as -c')"


def test_a_dash_path_runs_as_the_file_of_that_name(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / OPTION_LIKE).write_text(
        "import pathlib\npathlib.Path('ran-as-file').write_text('ok')\n", encoding="utf-8")
    env = Environment(name="plain", python=Path(sys.executable), timeout=60.0)
    with Runner(env, probe(env), device="none", isolated=True) as runner:
        test = Spec(path=OPTION_LIKE)
        result = runner.run(worktree, test, tmp_path / "test.log")
        shown = runner.command(test)
    assert not (worktree / "pwned").exists()
    assert (worktree / "ran-as-file").read_text() == "ok"
    assert result.exit_code == 0
    assert shown.startswith("python './-cimport")  # the evidence's COMMAND shows what ran
