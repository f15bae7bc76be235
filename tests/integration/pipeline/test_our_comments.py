"""The summary comment on a source PR is ours: found by its marker AND its author (the token's
user), so a reader's comment holding the marker is never edited, read as rows, or counted
(GitCode stand-in on 127.0.0.1, the sandbox's real upstream)."""

from __future__ import annotations

import pytest

from backport.demo.sandbox import Sandbox
from backport.report.summary import MARKER
from tests.helpers.merged_pr import merged_pr
from tests.helpers.project import TOKEN, run_app
from tests.helpers.source_pr import NUMBER, source_server

FAKE_ROW = "| `v2.7.1` | 已完成 | [!999](https://example.invalid/evil) | 通过 | `rm -rf /` |"


@pytest.fixture
def gitcode(sandbox: Sandbox):
    with source_server(sandbox) as fake:
        yield fake


def test_a_readers_marked_comment_is_never_edited_read_or_counted(sandbox, gitcode):
    merged_pr(sandbox, gitcode)
    planted = gitcode.add_comment(NUMBER, f"{MARKER}\n{FAKE_ROW}\n", author="reader1")
    result = run_app(sandbox.project, "apply", "--from-pr", str(NUMBER), "--branch", "v2.12.0",
                     "--skip-tests", env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
                                          "BACKPORT_CACHE": str(sandbox.cache)})
    assert result.code == 0, result.err
    assert "summary comment" not in result.out + result.err  # no warning: nothing refused
    assert [r for r in gitcode.requests if "/comments/" in r.path and r.method != "GET"] == []
    comments = gitcode.prs[NUMBER].comments
    assert comments[0] == planted and comments[0]["body"] == f"{MARKER}\n{FAKE_ROW}\n"
    (ours,) = [c for c in comments if MARKER in c["body"] and c["user"]["login"] == "lgxxx"]
    assert "!999" not in ours["body"] and "example.invalid" not in ours["body"]
    row = next(line for line in ours["body"].splitlines() if line.startswith("| `v2.7.1`"))
    assert "已完成" not in row  # v2.7.1 has not run: the reader's row was not carried
    assert sum(1 for r in gitcode.requests if r.method == "GET" and r.path == "/user") == 1
