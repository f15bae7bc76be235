"""What the PR step leaves in the journal when the run dies in the middle of it, and what an
internal error writes there (GitCode stand-in, real HTTP; the run is a real process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from tests.helpers.project import TOKEN, edit_config, run_app

FAST = {"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.05"}


def _set_comment(sandbox) -> None:
    def change(data: dict) -> None:
        data.setdefault("pr", {}).update(comment="compile")
    edit_config(sandbox, change)


def _comment_posts(server) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/comments")]


def test_a_run_killed_right_after_the_ci_comment_does_not_post_it_again(sandbox, gitcode):
    _set_comment(sandbox)
    proc = subprocess.Popen(
        [sys.executable, "-m", "backport", "apply", "--api", "put_metric", "--skip-tests",
         "--branch", "v2.7.1"], cwd=sandbox.project, env={**os.environ, **FAST},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    served = gitcode.handle

    def handle(method: str, path: str, *args: Any, **kwargs: Any):
        answer = served(method, path, *args, **kwargs)
        if method == "POST" and path.endswith("/comments"):
            os.kill(proc.pid, signal.SIGKILL)  # the service took the comment; the run dies
        return answer

    gitcode.handle = handle
    assert proc.wait() == -signal.SIGKILL
    gitcode.handle = served
    (pr,) = gitcode.prs.values()
    assert [c["body"] for c in pr.comments] == ["compile"]
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     "--branch", "v2.7.1", env=FAST)
    assert result.code == 0, result.err
    assert [c["body"] for c in pr.comments] == ["compile"]
    assert len(_comment_posts(gitcode)) == 1
