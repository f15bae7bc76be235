"""`source:` and `wrapper:` run for real through `apply`, and COMMAND says exactly what ran.

A patch set adds a test that passes only when it sees the variable a sourced script exports;
the wrapper stands for the seed's ``run_api_python_version.sh <version> <test> -v`` and execs
the torch venv's interpreter. The recorded COMMAND is then pasted into bash in the worktree
and must give the same result. Each way to start is one environment of its own target branch,
all three in one `apply` run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.helpers.project import TORCH_PYTHON, edit_config, git, needs_torch, run_cli

pytestmark = needs_torch

TEST_FILE = "test/test_launch.py"
TEST_TEXT = '''\
import os
import unittest


class LaunchTest(unittest.TestCase):
    def test_sees_the_sourced_variable(self):
        print("wrapped by:", os.environ.get("BACKPORT_WRAPPED", "nothing"))
        with open("/proc/%d/cmdline" % os.getppid(), "rb") as parent:
            print("parent:", parent.read().replace(b"\\0", b" ").decode())
        self.assertEqual(os.environ.get("BACKPORT_SOURCED"), "yes")


if __name__ == "__main__":
    unittest.main()
'''
PATCH_YAML = f"""\
api: torch.launch_check
issue: 3216
title: "test: launch check"
tests:
  - path: {TEST_FILE}
    args: ["-v"]
device: none
branches: [v2.7.1, v2.11.0, v2.12.0]
"""
VARS = "PYTHONDONTWRITEBYTECODE=1 TORCH_DEVICE_BACKEND_AUTOLOAD=0"


def _add_patch_set(sandbox, tmp_path: Path) -> None:
    """patches/launch/: one commit adding TEST_FILE, made with git format-patch."""
    work = tmp_path / "work"
    git(tmp_path, "clone", "-q", "--branch", "v2.7.1", str(sandbox.upstream), str(work))
    (work / TEST_FILE).write_text(TEST_TEXT, encoding="utf-8")
    git(work, "add", TEST_FILE)
    git(work, "commit", "-q", "-m", "test: launch check")
    out = sandbox.project / "patches" / "launch"
    out.mkdir(parents=True)
    git(work, "format-patch", "-q", "-1", "-o", str(out))
    (out / "patch.yaml").write_text(PATCH_YAML, encoding="utf-8")


def _home_scripts(home: Path) -> None:
    """~/Ascend/set_env.sh (chatty on stdout, like CANN's) and the per-version wrapper."""
    source = home / "Ascend" / "set_env.sh"
    source.parent.mkdir(parents=True)
    source.write_text('echo "setting up the toolkit"\nexport BACKPORT_SOURCED=yes\n')
    wrapper = home / "bin" / "run_api_python_version.sh"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case "$1" in 2.13.0) py="{TORCH_PYTHON}" ;; *) echo "no python $1" >&2; exit 2 ;; esac\n'
        'shift\nBACKPORT_WRAPPED=2.13.0 exec "$py" "$@"\n'
    )
    wrapper.chmod(0o755)


CASES = {  # target: (its environment's keys, COMMAND, whether the test passes, what it prints)
    "v2.7.1": (  # source
        {"source": "~/Ascend/set_env.sh"},
        f"source ~/Ascend/set_env.sh && {VARS} python {TEST_FILE} -v",
        True, "wrapped by: nothing",
    ),
    "v2.11.0": (  # source+wrapper
        {"source": "~/Ascend/set_env.sh",
         "wrapper": ["~/bin/run_api_python_version.sh", "2.13.0"]},
        f"source ~/Ascend/set_env.sh && {VARS} ~/bin/run_api_python_version.sh 2.13.0 "
        f"{TEST_FILE} -v",
        True, "wrapped by: 2.13.0",
    ),
    "v2.12.0": (  # wrapper-only: nothing sources the script: the test fails, and says why
        {"wrapper": ["~/bin/run_api_python_version.sh", "2.13.0"]},
        f"{VARS} ~/bin/run_api_python_version.sh 2.13.0 {TEST_FILE} -v",
        False, "wrapped by: 2.13.0",
    ),
}


def test_source_and_wrapper_run_and_command_is_what_ran(sandbox, tmp_path: Path):
    home = tmp_path / "home"
    _home_scripts(home)
    _add_patch_set(sandbox, tmp_path)

    def launch(data: dict) -> None:
        (shared,) = data["environments"].values()
        for n, (target, (keys, _, _, _)) in enumerate(CASES.items()):
            data["environments"][f"launch-{n}"] = {
                **shared, "env": {"PYTHONDONTWRITEBYTECODE": "1"}, **keys}
            data["branches"][target]["env"] = f"launch-{n}"
    edit_config(sandbox, launch)

    result = run_cli(sandbox.project, "apply", "--api", "launch", "--no-push", "--json",
                     env={"HOME": str(home)})
    by_target = {b["target"]: b for b in result.json()["branches"]}
    assert sorted(by_target) == sorted(CASES), result.out + result.err
    run_dir = sandbox.project / ".backport" / "runs" / "launch"
    journal = json.loads((run_dir / "journal.json").read_text(encoding="utf-8"))
    for target, (keys, command, passes, printed) in CASES.items():
        branch = by_target[target]
        test = branch["test"]
        assert test["command"] == command, target
        assert test["ok"] is passes, result.out
        assert branch["status"] == ("tested" if passes else "test-failed")
        runner = "isolated" if "wrapper" in keys else "warm"
        record = journal["branches"][target]
        log = (run_dir / "logs" / f"{target}.log").read_text()
        # the warm worker speaks JSON on stdout: the chatty script must not break it
        assert printed in log and record["test"]["runner"] == runner, log
        if runner == "warm":  # a fork of the run's worker, started through the source script
            (parent,) = [line for line in log.splitlines() if line.startswith("parent: ")]
            assert "warm_worker.py" in parent, parent

        # A reviewer pastes COMMAND in a checkout, with `python` being the branch's interpreter.
        checkout = tmp_path / f"checkout-{target}"
        git(tmp_path, "clone", "-q", "--branch", target, str(sandbox.upstream), str(checkout))
        (checkout / TEST_FILE).write_text(TEST_TEXT, encoding="utf-8")
        pasted = subprocess.run(
            ["bash", "-c", command], cwd=checkout, capture_output=True, text=True, timeout=300,
            env={**os.environ, "HOME": str(home),
                 "PATH": f"{Path(TORCH_PYTHON or '').parent}:{os.environ['PATH']}"},
        )
        assert (pasted.returncode == 0) is passes, (target, pasted.stderr)
        assert printed in pasted.stdout + pasted.stderr
