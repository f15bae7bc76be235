"""`apply` against the GitCode stand-in where the service's documentation is silent: a lagging
read, refused links and comments, the request budget of one patch set, pacing, prerequisites."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.project import TOKEN, edit_config, run_app

UPSTREAM = "Ascend/pytorch"
TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
FAST = {"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.05"}


def apply(sandbox, *extra: str, env: dict[str, str] | None = None):
    return run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", *extra,
                   env={**FAST, **(env or {})})


def set_pr(sandbox, **options) -> None:
    def change(data: dict) -> None:
        data.setdefault("pr", {}).update(options)
    edit_config(sandbox, change)


def records(sandbox) -> dict[str, dict]:
    doc = run_app(sandbox.project, "status", "--json", env=FAST).json()
    return {b["target"]: b for b in doc["branches"]}


def posts(server, suffix: str) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path.endswith(suffix)]


def test_prs_whose_head_sha_lags_at_first_read_stay_open_and_a_rerun_opens_none(sandbox, gitcode):
    gitcode.head_sha_lag = 1  # the first read of a new PR shows the base's SHA as head.sha
    assert apply(sandbox).code == 0
    assert len(gitcode.open_prs()) == 4 and len(gitcode.prs) == 4
    assert not [r for r in gitcode.requests if r.method == "PATCH"
                and r.body.get("state") == "closed"]
    assert apply(sandbox, "--force").code == 0
    assert len(gitcode.prs) == 4 and len(posts(gitcode, "/pulls")) == 4


def test_a_wrong_pr_is_closed_once_and_the_next_run_stops_with_one_sentence(sandbox, gitcode):
    gitcode.head_forms = set()  # the service takes the head from the upstream branch
    gitcode.add_branch(UPSTREAM, "v2.7.1")
    gitcode.add_branch(UPSTREAM, "test-put-metric-v2.7.1")
    first = apply(sandbox, "--branch", "v2.7.1")
    assert first.code == 1 and len(gitcode.prs) == 1 and gitcode.open_prs() == []
    (closed,) = gitcode.prs
    assert records(sandbox)["v2.7.1"]["closed_prs"] == [closed]
    second = apply(sandbox, "--branch", "v2.7.1")
    assert second.code == 1 and len(gitcode.prs) == 1  # no second PR opened, none closed
    message = records(sandbox)["v2.7.1"]["message"]
    assert message.startswith(f"backport closed PR !{closed} for test-put-metric-v2.7.1 in an "
                              "earlier run")
    assert message.count(". ") == 0 and message.endswith(".")


def test_a_refused_issue_link_is_a_warning_and_not_tried_again(sandbox, gitcode):
    gitcode.issues = {1}  # issue 3216 is unknown to the service: the link is refused (404)
    result = apply(sandbox, "--branch", "v2.7.1")
    assert result.code == 0, result.err
    rec = records(sandbox)["v2.7.1"]
    assert rec["status"] == "done" and rec["pr"]["linked"] is False
    assert rec["pr"]["refused"] == ["link"]
    (warning,) = rec["warnings"]
    assert warning.startswith("issue #3216 not linked to PR !1 (the PR is open without the link; "
                              "not tried again): ")
    assert "answered 404: issue not found" in warning
    tried = len(posts(gitcode, "/issues"))
    assert apply(sandbox, "--branch", "v2.7.1", "--force").code == 0
    assert len(posts(gitcode, "/issues")) == tried == 1
    assert records(sandbox)["v2.7.1"]["warnings"] == [warning]


def test_a_refused_ci_comment_is_not_posted_again_after_a_push(sandbox, gitcode, tmp_path: Path):
    from tests.helpers.upstream import advance
    gitcode.comments_forbidden = True
    set_pr(sandbox, comment="compile", comment_on_push=True)
    assert apply(sandbox, "--branch", "v2.7.1").code == 0
    assert len(posts(gitcode, "/comments")) == 1
    assert records(sandbox)["v2.7.1"]["pr"]["refused"] == ["comment"]
    advance(sandbox, "v2.7.1", tmp_path)
    assert apply(sandbox, "--branch", "v2.7.1", "--force").code == 0  # force-pushes the branch
    assert len(posts(gitcode, "/comments")) == 1


def test_a_batch_is_paced_before_any_429_and_the_waits_are_shown(sandbox, gitcode):
    # A scaled-down minute: 12 requests per 0.5 s on both sides.
    gitcode.per_minute, gitcode.rate_window = 12, 0.5
    result = apply(sandbox, env={"BACKPORT_GITCODE_RATE": "12/0.5", "NO_COLOR": "1"})
    assert result.code == 0, result.err
    assert gitcode.rate_limited == 0 and len(gitcode.open_prs()) == 4
    assert len(gitcode.requests) > 12


def test_a_long_wait_is_a_progress_line_with_seconds_left(sandbox, gitcode):
    # 3 requests per 2 s: the 4th waits most of a window, a long wait at this scale.
    gitcode.per_minute, gitcode.rate_window = 3, 2.0
    result = apply(sandbox, "--branch", "v2.7.1",
                   env={"BACKPORT_GITCODE_RATE": "3/2", "NO_COLOR": "1"})
    assert result.code == 0, result.err
    text = " ".join(result.err.split())
    assert "[forge] rate limit: GitCode API: waiting " in text
    assert "(3 requests in the last 2 s; the limit is 3 per 2 s)" in text
    assert "[forge] rate limit: GitCode API: waited " in text
    assert gitcode.rate_limited == 0


def test_everything_missing_is_said_at_once_before_any_work(sandbox, gitcode):
    def unbuilt(data: dict) -> None:
        for env in data["environments"].values():
            env["python"] = "/nonexistent/venv/bin/python"
    edit_config(sandbox, unbuilt)
    result = run_app(sandbox.project, "apply", "--api", "put_metric",
                     env={"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "", "HOME": str(sandbox.project),
                          "GIT_CONFIG_NOSYSTEM": "1"})
    assert result.code == 2
    lines = [line for line in result.err.splitlines() if line.strip()]
    text = " ".join(lines)
    assert "2 things are missing before the run can start: the test environment" in text
    assert "; and no GitCode token for " in text and "run `backport env setup`" in text
    assert "Traceback" not in result.err and gitcode.requests == []


def test_dry_run_says_how_many_requests_and_how_long(sandbox, gitcode, monkeypatch):
    """Then the real run: one set of four costs at most five requests per new PR."""
    monkeypatch.delenv("BACKPORT_GITCODE_RATE")  # GitCode's own limits, not the tests' window
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                     "--dry-run", env=FAST)
    assert result.code == 0, result.err
    (line,) = [line for line in result.out.splitlines() if "GitCode API requests" in line]
    assert line.startswith("The real run: about ")
    total = int(line.split("about ", 1)[1].split(" ", 1)[0])
    assert "for 4 new PR(s) in 1 patch set(s)" in line
    assert line.endswith("under the limit of 50 per minute and 4000 per hour, that needs no wait.")
    with gitcode.lock:
        gitcode.requests.clear()  # the dry run only read; what follows is the real run's
    # the estimate is what the real run then spends (give or take the sibling refresh's reads)
    assert apply(sandbox).code == 0
    spent = len(gitcode.requests)
    assert abs(spent - total) <= 4, (spent, total, json.dumps(gitcode.counts()))
    # A first run: once per run the token, both repositories and the listing for the finds
    # (open and locked PRs); then per PR the open PRs into its base read afresh, the create,
    # its read-back and the link; once all four PRs exist, the set's PRs listed afresh and
    # the bodies of all but the last rewritten (one PATCH each: the listing shows each as
    # created, so none is read again; the draft state did not change, so none is sent or read
    # back), and the set's issue read once (is it still open?).
    counts = gitcode.counts()
    once_per_run = 3 + 2 + 2
    new_prs = len(gitcode.open_prs())
    assert new_prs == 4
    per_new_pr = (sum(counts.values()) - once_per_run) / new_prs
    assert per_new_pr <= 5, (per_new_pr, counts)
    assert counts["GET /repos/Ascend/pytorch/issues/{n}"] == 1
    listings = [r for r in gitcode.requests if r.method == "GET" and r.path.endswith("/pulls")]
    assert [(r.query["state"], r.query.get("base")) for r in listings[:2]] == [
        ("open", None), ("locked", None)]  # the finds' listing, kept
    assert sorted((r.query["state"], r.query.get("base", "")) for r in listings[2:6]) == sorted(
        ("open", b) for b in ("v2.7.1", "v2.11.0", "v2.12.0", "master"))  # one before each create
    assert [(r.query["state"], r.query.get("base")) for r in listings[6:]] == [
        ("open", None), ("locked", None)]  # the sibling refresh's, afresh
    assert counts["GET /repos/Ascend/pytorch/pulls"] == 2 + 4 + 2
    assert counts["GET /repos/Ascend/pytorch/pulls/{n}"] == 4  # the read-backs only
    assert counts["PATCH /repos/Ascend/pytorch/pulls/{n}"] == 3
    assert counts["POST /repos/Ascend/pytorch/pulls"] == 4
    assert counts["POST /repos/Ascend/pytorch/pulls/{n}/issues"] == 4  # no read before a link
    assert counts["GET /user"] == 1
    assert len(gitcode.open_prs()) == 4
