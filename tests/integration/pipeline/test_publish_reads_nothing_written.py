"""The step that holds the token reads nothing a test could have written in the temp folder:
a repository planted there is never discovered by its git processes, and the askpass program
git runs is no file of the temp folder (issue 47, findings 1 and 2). The attacker is simulated
directly: the files are planted where a test's code could write them."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from backport.envs import sandbox as sandbox_module
from backport.forge import token as token_module
from tests.fakes.git_http import GitHttp
from tests.helpers.project import TOKEN, git, rev, run_app

TARGET = "v2.7.1"
FORK_BRANCH = f"test-put-metric-{TARGET}"
PUBLISH = ("apply", "--api", "put_metric", "--branch", TARGET, "--skip-tests")


@pytest.fixture
def temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The run's temp folder ($TMPDIR), as a test running under it sees it too."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    # a fresh process would make its askpass anew (the old code kept one per process)
    monkeypatch.setattr(token_module, "_askpass_path", None, raising=False)
    return folder


def plant_repository(folder: Path) -> Path:
    """``folder/.git`` whose config turns every URL into ``ext::folder/x.sh``; x.sh writes its
    environment to the file returned when it runs."""
    ran = folder.parent / "x.ran"
    script = folder / "x.sh"
    script.write_text(f"#!/bin/sh\nenv > '{ran}'\nexit 1\n", encoding="utf-8")
    script.chmod(0o755)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, capture_output=True)
    config = str(folder / ".git" / "config")
    subprocess.run(["git", "config", "--file", config, "protocol.ext.allow", "always"],
                   check=True)
    for prefix in ("/", "file://", "http://", "https://"):
        subprocess.run(["git", "config", "--file", config, "--add",
                        f"url.ext::{script} .insteadOf", prefix], check=True)
    return ran


def written_text(root: Path) -> str:
    """Every file under ``root`` as text (the bare repositories' objects left out)."""
    chunks = []
    for path in root.rglob("*"):
        if path.is_file() and "objects" not in path.parts:
            chunks.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(chunks)


@pytest.mark.parametrize("split", [False, True], ids=["one-host", "pipeline-split"])
def test_a_repository_planted_in_the_temp_folder_never_runs(sandbox, temp_folder: Path,
                                                            split: bool) -> None:
    if split:  # the pipeline's test step without the token, then its publish step
        tested = run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", TARGET,
                         "--no-push", "--skip-tests")
        assert tested.code == 0, tested.err
    ran = plant_repository(temp_folder)
    result = run_app(sandbox.project, *PUBLISH)
    assert not ran.exists(), "the planted repository's ext:: command ran"
    assert result.code == 0, result.err
    assert rev(sandbox.fork, f"refs/heads/{FORK_BRANCH}") is not None


@pytest.mark.parametrize("planted", [False, True], ids=["swap", "swap-and-planted-git"])
def test_an_https_fork_the_askpass_is_no_file_a_test_can_swap(sandbox, gitcode,
                                                              temp_folder: Path,
                                                              tmp_path: Path,
                                                              planted: bool) -> None:
    """The fork over HTTP with the token through askpass: a swap of every program under the
    temp folder the moment the server asks for credentials (when git is about to run its
    askpass), and a planted repository, leave the token in no file; the push goes through."""
    ran = plant_repository(temp_folder) if planted else tmp_path / "x.ran"
    leak = tmp_path / "leak"
    swapped: list[Path] = []

    def swap(_path: str) -> None:
        for found in temp_folder.rglob("*"):
            if found.is_file() and found.name not in ("x.sh", "config") and os.access(found, os.X_OK):
                found.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$BACKPORT_ASKPASS_TOKEN\" >> '{leak}'"
                                 "\nprintf '%s\\n' \"$BACKPORT_ASKPASS_TOKEN\"\n", encoding="utf-8")
                swapped.append(found)

    with GitHttp(sandbox.root, TOKEN, refused=swap) as http:
        result = run_app(sandbox.project, *PUBLISH,
                         env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
                              "BACKPORT_FORK_URL": f"{http.url}/{sandbox.fork.name}"})
        authorised = [path for path, ok in http.requests if ok]
    assert not ran.exists(), "the planted repository's ext:: command ran"
    assert not leak.exists(), f"a swapped askpass ({swapped}) was run"
    assert result.code == 0, result.err
    assert any(path.endswith("/git-receive-pack") for path in authorised)
    assert git(sandbox.fork, "rev-parse", f"refs/heads/{FORK_BRANCH}")
    assert TOKEN not in written_text(tmp_path)


def test_the_askpass_program_is_a_read_only_file_of_the_package_outside_every_temp_folder(
        temp_folder: Path) -> None:
    program = Path(token_module.askpass_env("a-token-1234", "lgxxx")["GIT_ASKPASS"])
    package = Path(token_module.__file__).resolve().parents[1]
    assert program.resolve().is_relative_to(package)
    temps = {temp_folder, Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp"),
             Path("/dev/shm"), Path(os.environ.get("TMPDIR", "/tmp"))}
    # not written into a temporary folder: only where the package itself lies there (a clone
    # under /tmp), and then every test sees it bound back read-only (`sandbox.test_view`)
    assert not any(program.resolve().is_relative_to(t.resolve())
                   and not package.is_relative_to(t.resolve()) for t in temps)
    assert str(package.parent) in sandbox_module.test_view(temp_folder)
    assert os.access(program, os.X_OK)
    assert "a-token-1234" not in program.read_text(encoding="utf-8")


def test_the_publish_step_pushes_the_recorded_commit_and_reads_nothing_of_the_worktree(
        sandbox, temp_folder: Path) -> None:
    """The branch's code rewrote its worktree after the test step (its ``.git`` pointer, HEAD
    and files): the publish step pushes the commit recorded before the test, keeps nothing the
    worktree says, removes the worktree, and a re-run does nothing."""
    tested = run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", TARGET,
                     "--no-push", "--skip-tests", "--json")
    assert tested.code == 0, tested.err
    (branch,) = tested.json()["branches"]
    recorded, worktree = branch["commit"], Path(branch["worktree"])
    elsewhere = temp_folder / "elsewhere"
    subprocess.run(["git", "init", "-q", "--bare", str(elsewhere)], check=True)
    (worktree / ".git").write_text(f"gitdir: {elsewhere}\n", encoding="utf-8")
    (worktree / "planted.txt").write_text("not in the series\n", encoding="utf-8")
    (worktree / "locked").mkdir()
    (worktree / "locked" / "file").write_text("x", encoding="utf-8")
    (worktree / "locked").chmod(0o500)

    published = run_app(sandbox.project, *PUBLISH, "--json")
    assert published.code == 0, published.err
    (branch,) = published.json()["branches"]
    assert branch["status"] == "done", branch["message"]
    assert rev(sandbox.fork, f"refs/heads/{FORK_BRANCH}") == recorded
    assert not worktree.exists()
    again = run_app(sandbox.project, *PUBLISH, "--json")
    assert again.code == 0 and again.json()["branches"][0]["status"] == "done", again.err
