"""`apply` with `forge: gitcode` against the fake GitCode v5 server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.gitcode import Fault
from tests.helpers.project import TOKEN, git, rev, run_app

TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]


def run(sandbox, *args: str, token: str = TOKEN):
    # GitCode's stand-in shows a push at once: a short wait between checks is enough.
    return run_app(sandbox.project, *args,
                   env={"GITCODE_TOKEN": token, "BACKPORT_GITCODE_SETTLE": "0.1"})


def all_written_text(root: Path) -> str:
    chunks = []
    for path in root.rglob("*"):
        if path.is_file() and ".git" not in path.parts and "cache" not in path.parts:
            chunks.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(chunks)


def test_four_prs_linked_to_the_issue_then_nothing_new_then_force_updates(sandbox, gitcode):
    """Also: merging one of them does not close the issue they share."""
    first = run(sandbox, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert first.code == 0, first.err
    prs = gitcode.open_prs()
    assert sorted((p.head_ref, p.base_ref) for p in prs) == sorted(
        (f"test-put-metric-{t}", t) for t in TARGETS)
    for pr in prs:
        assert pr.head_repo == "lgxxx/pytorch"
        assert pr.title == "test: add put_metric coverage"
        assert 3216 in pr.issues
        assert "Closes #" not in pr.body and "Fixes #" not in pr.body
    writes = len(gitcode.writes())

    again = run(sandbox, "apply", "--api", "put_metric", "--skip-tests")
    assert again.code == 0, again.err
    assert len(gitcode.open_prs()) == 4
    assert len(gitcode.writes()) == writes  # a plain re-run writes nothing

    # A maintainer edits one body outside the generated regions; --force keeps the edit.
    target_pr = next(p for p in prs if p.base_ref == "v2.7.1")
    target_pr.body = target_pr.body + "\n\nReviewer note: please check on 910B too.\n"
    forced = run(sandbox, "apply", "--api", "put_metric", "--skip-tests", "--force")
    assert forced.code == 0, forced.err
    assert len(gitcode.open_prs()) == 4
    body = next(p for p in gitcode.open_prs() if p.base_ref == "v2.7.1").body
    assert "Reviewer note: please check on 910B too." in body
    assert body.count("<!-- api-validation-evidence:start -->") == 1

    # Every PR says merging it must not close the shared issue (the siblings stay open).
    creates = [r for r in gitcode.requests if r.method == "POST" and r.path.endswith("/pulls")]
    assert len(creates) == len(TARGETS) and all(r.body["close_related_issue"] is False
                                                for r in creates)
    assert gitcode.merge(gitcode.open_prs()[0].number) == set()
    assert 3216 not in gitcode.closed_issues


def test_502_on_first_create_and_429_on_first_lists_still_four_prs(sandbox, gitcode):
    # Both 429s name their wait: a 429 without Retry-After waits out the whole 60 s window,
    # which tests/integration/forge/test_gitcode_strict.py covers on an injected clock.
    gitcode.add_fault("GET", r"/pulls$", Fault(status=429, headers={"Retry-After": "0"}),
                      Fault(status=429, headers={"Retry-After": "1"}))
    gitcode.add_fault("POST", r"/pulls$", Fault(status=502, after=True))
    result = run(sandbox, "apply", "--api", "put_metric", "--skip-tests", "--json")
    assert result.code == 0, result.err
    assert len(gitcode.open_prs()) == 4
    assert len(gitcode.prs) == 4


def test_wrong_token_stops_before_anything_is_pushed(sandbox, gitcode):
    result = run(sandbox, "apply", "--api", "put_metric", "--skip-tests", token="wrong-token-123")
    assert result.code != 0
    assert "401" in result.err
    assert "Traceback" not in result.err
    assert git(sandbox.fork, "for-each-ref") == ""
    assert not gitcode.prs


def test_token_appears_in_no_output_and_no_file(sandbox, gitcode):
    gitcode.add_fault("POST", r"/pulls$", Fault(status=500, body={"message": f"echo {TOKEN}"}))
    result = run(sandbox, "apply", "--api", "put_metric", "--skip-tests", "--json")
    status = run(sandbox, "status", "--json")
    for text in (result.out, result.err, status.out, status.err,
                 all_written_text(sandbox.project)):
        assert TOKEN not in text
    assert all(TOKEN not in r.path for r in gitcode.requests)
    assert rev(sandbox.fork, "refs/heads/test-put-metric-v2.7.1")
