"""Kills, races, someone else's push and hostile input: nothing lost, nothing duplicated."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fakes.gitcode import FakeGitCode, Fault
from tests.helpers.processes import popen_interruptible
from tests.helpers.project import (
    ROOT,
    TOKEN,
    edit_config,
    git,
    needs_torch,
    rev,
    run_app,
)

TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]


def start_apply(project: Path, *args: str) -> subprocess.Popen:
    return popen_interruptible([sys.executable, "-m", "backport", "apply", "--api", "put_metric",
                                "--skip-tests", *args], cwd=project,
                               env={**os.environ, "GITCODE_TOKEN": TOKEN},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def journal_statuses(project: Path) -> dict[str, str]:
    path = project / ".backport" / "runs" / "put_metric" / "journal.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {t: r["status"] for t, r in data["branches"].items()}


def assert_finished(sandbox, server: FakeGitCode) -> None:
    assert len(server.open_prs()) == 4
    assert len(server.prs) == 4
    for target in TARGETS:
        head = rev(sandbox.fork, f"refs/heads/test-put-metric-{target}")
        assert head and git(sandbox.fork, "rev-parse", f"{head}^") == rev(sandbox.upstream, target)


def test_three_sigkills_then_a_plain_rerun_finishes_with_four_prs(sandbox, gitcode):
    # 1. killed while branches are being applied / tested
    proc = start_apply(sandbox.project)
    wait_for(lambda: "applied" in journal_statuses(sandbox.project).values()
             or "tested" in journal_statuses(sandbox.project).values())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # 2. killed right after the first push reached the fork
    proc = start_apply(sandbox.project)
    wait_for(lambda: git(sandbox.fork, "for-each-ref") != "")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # 3. killed while the forge is creating a PR (created, reply not yet sent)
    gitcode.add_fault("POST", r"/pulls$", Fault(stall=30.0))
    proc = start_apply(sandbox.project)
    wait_for(lambda: len(gitcode.prs) >= 1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    gitcode.faults.clear()

    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     env={"GITCODE_TOKEN": TOKEN})
    assert result.code == 0, result.err
    assert_finished(sandbox, gitcode)


def test_two_runs_at_once_end_with_four_prs(sandbox, gitcode):
    first, second = start_apply(sandbox.project), start_apply(sandbox.project)
    outs = [p.communicate(timeout=300) for p in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], outs
    for _, err in outs:
        assert "Traceback" not in err
    assert_finished(sandbox, gitcode)


def test_someone_elses_push_survives_force(sandbox, tmp_path):
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests").code == 0
    branch = "test-put-metric-v2.7.1"
    work = tmp_path / "human"
    subprocess.run(["git", "clone", "--quiet", "--branch", branch, str(sandbox.fork), str(work)],
                   check=True)
    (work / "NOTE.md").write_text("a reviewer's fix\n")
    git(work, "add", "NOTE.md")
    git(work, "commit", "--quiet", "-m", "reviewer fix")
    git(work, "push", "--quiet", "origin", branch)
    human = rev(work, "HEAD")

    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--force",
                     "--json")
    assert result.code == 1
    by_target = {b["target"]: b for b in result.json()["branches"]}
    assert by_target["v2.7.1"]["status"] == "fork-diverged"
    assert "--overwrite-fork-branch" in by_target["v2.7.1"]["message"]
    assert {by_target[t]["status"] for t in TARGETS[1:]} == {"done"}
    assert rev(sandbox.fork, f"refs/heads/{branch}") == human

    replaced = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                       "--branch", "v2.7.1", "--overwrite-fork-branch")
    assert replaced.code == 0, replaced.err
    assert rev(sandbox.fork, f"refs/heads/{branch}") != human


@pytest.mark.parametrize("change, needle", [
    (lambda d: d.update(fork_url=d["upstream_url"]), "fork"),
    (lambda d: d["branches"].update({"-x": {"env": next(iter(d["environments"]))}}), "-x"),
    (lambda d: d["branches"].update({"v2..7": {"env": next(iter(d["environments"]))}}), "v2..7"),
    (lambda d: d["branches"].update({"bad name": {"env": next(iter(d["environments"]))}}), "bad name"),
    (lambda d: d.update(fork_branch="test-{slug}-{nope}"), "nope"),
    (lambda d: d["branches"]["v2.7.1"].update(env="missing-env"), "missing-env"),
    (lambda d: d.update(enviroments={}), "enviroments"),
])


def test_hostile_branch_maps_exit_2_with_one_line(sandbox, change, needle):
    edit_config(sandbox, change)
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert result.code == 2
    lines = [line for line in result.err.splitlines() if line.strip()]
    assert len(lines) == 1, result.err
    assert needle in lines[0] and "branches.yaml" in lines[0]
    assert git(sandbox.fork, "for-each-ref") == ""


def test_a_patch_touching_a_path_outside_the_repository_is_refused(sandbox):
    patch = next((sandbox.project / "patches" / "put_metric").glob("0001-*.patch"))
    patch.write_text(patch.read_text().replace(
        "a/test/distributed/elastic/metrics/test_metrics_api.py",
        "a/../outside/test_metrics_api.py", 1))
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests")
    assert result.code == 2
    assert patch.name in result.err and "Traceback" not in result.err
    assert git(sandbox.fork, "for-each-ref") == ""


def test_yaml_syntax_error_names_the_line(sandbox):
    sandbox.config.write_text("forge: local\nupstream: [unclosed\n")
    result = run_app(sandbox.project, "check", "--offline")
    assert result.code == 2
    assert re.search(r"branches\.yaml:\d+: YAML syntax error", result.err), result.err
    assert len(result.err.strip().splitlines()) == 1


@needs_torch
def test_journal_and_logs_are_private(sandbox):
    assert run_app(sandbox.project, "apply", "--api", "put_metric", "--no-push",
                   "--branch", "v2.7.1").code == 0
    logs = sandbox.project / ".backport" / "runs" / "put_metric" / "logs"
    assert (logs.stat().st_mode & 0o777) == 0o700
    assert [(p.name, p.stat().st_mode & 0o777) for p in logs.iterdir()] == [("v2.7.1.log", 0o600)]
    run_dir = sandbox.project / ".backport" / "runs" / "put_metric"
    assert (run_dir.stat().st_mode & 0o777) == 0o700
    assert ((run_dir / "journal.json").stat().st_mode & 0o777) == 0o600
    assert (sandbox.project / ".backport").stat().st_mode & 0o777 == 0o700


def test_ctrl_c_exits_130_and_a_rerun_resumes(sandbox, tmp_path):
    # The fork's hook holds the first push until the test has interrupted the run, so the
    # interrupt lands mid-run however fast or loaded the machine is.
    started, release = tmp_path / "push-started", tmp_path / "release"
    hook = sandbox.fork / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\ntouch '{started}'\n"
                    f"while [ ! -e '{release}' ]; do sleep 0.05; done\nexit 1\n",
                    encoding="utf-8")
    hook.chmod(0o755)
    proc = start_apply(sandbox.project)
    try:
        wait_for(started.exists)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        release.touch()
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    # It names the command that finishes what is left; run as printed, it does.
    lines = err.splitlines()
    said = lines.index("interrupted: every finished step is in the run's journal; this "
                       "finishes what is left (a step cut off midway is done again):")
    assert lines[said + 1] == "  backport apply --api put_metric --skip-tests", err
    hook.unlink()
    result = run_app(sandbox.project, *lines[said + 1].split()[1:])
    assert result.code == 0, result.err


def test_the_interrupted_child_hears_ctrl_c_when_the_suite_was_started_ignoring_it():
    # `nohup pytest &` starts the suite with SIGINT ignored, which children inherit: the child
    # the Ctrl-C test signals must have SIGINT back (Python then raises KeyboardInterrupt).
    probe = ("import signal, sys; "
             "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    parent = ("import signal, subprocess, sys; "
              "signal.signal(signal.SIGINT, signal.SIG_IGN); "
              "from tests.helpers.processes import popen_interruptible; "
              f"child = popen_interruptible([sys.executable, '-c', {probe!r}], "
              "stdout=subprocess.PIPE, text=True); "
              "print(child.communicate()[0].strip())")
    out = subprocess.run([sys.executable, "-c", parent], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "True"


def test_an_unreachable_fork_fails_each_branch_clearly(sandbox, tmp_path):
    missing = tmp_path / "no-such-repository.git"
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--json",
                     env={"BACKPORT_FORK_URL": str(missing)})
    assert result.code == 1
    for branch in result.json()["branches"]:
        assert branch["status"] == "failed"
        assert str(missing) in branch["message"]
    assert "Traceback" not in result.err


def test_an_unreachable_upstream_stops_the_run_in_one_sentence_naming_it(sandbox, tmp_path):
    # Nothing listens on the port of a socket that was bound and closed: a refused connection.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/Ascend/pytorch.git"
    result = run_app(sandbox.project, "apply", "--api", "put_metric",
                     env={"BACKPORT_UPSTREAM_URL": url})
    assert result.code == 1
    errors = [line for line in result.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"upstream {url}:" in errors[0], result.err
    assert "Traceback" not in result.err and result.out == ""
    # the upstream's failure, not the branches': none is recorded as failed (issue 49 item 3)
    status = run_app(sandbox.project, "status")
    assert status.code == 0 and "No runs yet" in status.out, status.out + status.err
