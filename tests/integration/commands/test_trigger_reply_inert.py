"""The reply to a `/backport` naming branches that are no targets shows the reader's words as
inert code: against the GitCode stand-in (real HTTP on 127.0.0.1) and the demo sandbox."""

from __future__ import annotations

import json
from pathlib import Path

from markdown_it import MarkdownIt

from tests.helpers.merged_pr import merged_pr
from tests.helpers.project import TOKEN, run_app, sandbox  # noqa: F401  (a fixture)
from tests.helpers.source_pr import source_server

NUMBER = 5120


def test_unknown_branch_words_are_shown_inert(sandbox, tmp_path: Path) -> None:  # noqa: F811
    with source_server(sandbox, NUMBER) as gitcode:
        gitcode.permissions = {"maintainer1": "write"}
        merged_pr(sandbox, gitcode)
        words = "x`<img src=x onerror=alert(1)>` [a](http://evil.example) @everyone !1"
        event = tmp_path / "event.json"
        event.write_text(json.dumps({"action": "created", "pull_request": {"number": NUMBER},
                                     "comment": {"id": 9, "body": f"/backport {words}",
                                                 "user": {"login": "maintainer1"}}}),
                         encoding="utf-8")
        result = run_app(sandbox.project, "trigger", "--skip-tests", "--event", str(event),
                         env={"GITCODE_TOKEN": TOKEN, "BACKPORT_CACHE": str(sandbox.cache)})
        replies = [c["body"] for c in gitcode.prs[NUMBER].comments]
    assert result.code == 0, result.err
    (reply,) = replies
    assert "不是本 PR 可回合的目标分支" in reply
    inline = [child for token in MarkdownIt("commonmark", {"html": True}).parse(reply)
              for child in token.children or ()]
    html = [c.content for c in inline if c.type == "html_inline"]
    assert all(part.startswith("<!--") for part in html)  # only the reply's own marker
    assert not [c for c in inline if c.type in ("link_open", "image")]
    codes = [c.content for c in inline if c.type == "code_inline"]
    assert "x`<img" in codes and "@everyone" in codes and "!1" in codes
