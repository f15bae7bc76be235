"""`apply --from-pr N`: a PR carrying `!N` stops a target only when it counts. A PR whose body
says "cf. !N" carries nothing (no request is made for it) and the source PR's summary does not
name it; a reader's PR in a carrier form whose own commits carry the change (its patch-id)
blocks. Permissions are asked once per login, and only for PRs that carry `!N` (GitCode
stand-in, the sandbox's real upstream repository)."""

from __future__ import annotations

import json

from tests.helpers.project import git
from tests.helpers.source_pr import (
    NUMBER,
    land,
    pr_commit,
    push_mr_head,
    run,
    source_pr,
    work_clone,
)

OURS = "lgxxx/pytorch"
PERMISSION = "GET /repos/Ascend/pytorch/collaborators/{login}/permission"


def _branches(result) -> dict[str, dict]:
    return {b["target"]: b for b in json.loads(result.out)["branches"]}


def _asked(server, login: str) -> int:
    return server.counts().get(PERMISSION.replace("{login}", login), 0)


def test_a_readers_pr_saying_cf_never_blocks_and_the_summary_does_not_name_it(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    cf = server.add_pr(head_repo="reader/pytorch", head="docs-note", base="v2.7.1",
                       title="docs: a note", body=f"cf. !{NUMBER}", author="reader")
    also = server.add_pr(head_repo="reader/pytorch", head="other-note", base="v2.11.0",
                         title="docs: another", body=f"see !{NUMBER}", author="reader")
    unrelated = server.add_pr(head_repo="writer/pytorch", head="x", base="v2.12.0",
                              title="fix: x", body="nothing to do with it", author="writer")
    server.permissions["writer"] = "write"
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json")
    assert result.code == 0, result.err
    branches = _branches(result)
    assert {t: b["status"] for t, b in branches.items()} == {
        "v2.7.1": "done", "v2.11.0": "done", "v2.12.0": "done"}
    assert all(b["proposed"] is None for b in branches.values())
    ours = {p.base_ref for p in server.prs.values() if p.head_repo == OURS}
    assert ours == {"v2.7.1", "v2.11.0", "v2.12.0"}
    assert _asked(server, "reader") == 0  # a mention carries nothing: no request for it
    assert _asked(server, "writer") == 0  # a PR that does not carry !N costs nothing
    summary = "\n".join(c["body"] for c in server.prs[NUMBER].comments)
    assert summary, "the source PR has its summary"
    for other in (cf, also, unrelated):
        assert f"!{other.number}" not in summary


def test_a_readers_pr_whose_commits_carry_the_change_blocks(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    picked = server.add_pr(head_repo="reader/pytorch", head="pick", base="v2.12.0",
                           title=f"[sync] PR-{NUMBER}: put_metric on 2.12", body="",
                           author="reader")
    push_mr_head(sandbox, picked.number, pr_commit(sandbox, "v2.12.0"), "v2.12.0")
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json")
    assert result.code == 0, result.err
    branch = _branches(result)["v2.12.0"]
    assert branch["status"] == "already-proposed"
    assert branch["proposed"]["number"] == picked.number
    assert "its commits carry the change" in branch["message"]
    assert _asked(server, "reader") == 1


def test_a_readers_pr_with_another_change_does_not_block(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    other = server.add_pr(head_repo="reader/pytorch", head="pick", base="v2.12.0",
                          title=f"[sync] PR-{NUMBER}: not it", body="", author="reader")
    work = work_clone(sandbox, "v2.12.0")
    (work / "NOTES.md").write_text("a note\n", encoding="utf-8")
    git(work, "add", "NOTES.md")
    git(work, "commit", "--quiet", "-m", "docs: a note")
    push_mr_head(sandbox, other.number, git(work, "rev-parse", "HEAD"), "v2.12.0")
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json",
                 "--branch", "v2.12.0")
    assert result.code == 0, result.err
    assert _branches(result)["v2.12.0"]["status"] == "done"


def test_a_readers_pr_with_thousands_of_digits_stops_nothing(sandbox, server):
    """A reader's PR into the target whose body holds `!` and 5,000 digits crashed every
    `apply --from-pr` into that target (`ValueError: Exceeds the limit (4300 digits)`)."""
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    server.add_pr(head_repo="reader/pytorch", head="digits", base="v2.12.0",
                  title=f"[sync] PR-{'9' * 5000}: x", body="!" + "9" * 5000, author="reader")
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json",
                 "--branch", "v2.12.0")
    assert result.code == 0, result.err
    assert _branches(result)["v2.12.0"]["status"] == "done"
    assert _asked(server, "reader") == 0
