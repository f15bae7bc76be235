"""`apply` against the strict GitCode stand-in: what a run leaves on the service."""

from __future__ import annotations

from tests.helpers.project import TOKEN, edit_config, run_app
from tests.helpers.upstream import advance

UPSTREAM = "Ascend/pytorch"
TARGETS = ["v2.7.1", "master"]  # two branches show the per-branch outcome; four cost more time


def run(sandbox, *args: str):
    # GitCode's stand-in shows a push at once: a short wait between checks is enough.
    return run_app(sandbox.project, *args,
                   env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1"})


def apply(sandbox, *extra: str):
    branches = [] if "--branch" in extra else [f"--branch={t}" for t in TARGETS]
    return run(sandbox, "apply", "--api", "put_metric", "--skip-tests", *branches, *extra)


def set_pr(sandbox, **options) -> None:
    def change(data: dict) -> None:
        data.setdefault("pr", {}).update(options)
    edit_config(sandbox, change)


def branch_records(sandbox) -> dict[str, dict]:
    doc = run(sandbox, "status", "--json").json()
    return {b["target"]: b for b in doc["branches"]}


def test_missing_fork_branch_leaves_no_pr_and_one_sentence(sandbox, gitcode):
    # GitCode's fork does not hold what was pushed (e.g. fork_url points elsewhere), and the
    # upstream has branches of the same names: the legacy head forms would open PRs from those.
    gitcode.branch_exists = lambda repo, branch: None
    for target in TARGETS:
        gitcode.add_branch(UPSTREAM, target)
        gitcode.add_branch(UPSTREAM, f"test-put-metric-{target}")
    result = apply(sandbox)
    assert result.code != 0
    assert gitcode.prs == {}
    records = branch_records(sandbox)
    for target in TARGETS:
        message = records[target]["message"]
        assert records[target]["status"] == "failed"
        assert message.startswith(f"The fork branch lgxxx/pytorch:test-put-metric-{target} "
                                  "does not exist on GitCode")
        assert message.count(". ") == 0 and message.endswith(".")


def test_head_resolved_to_upstream_is_closed_at_once_and_said_once(sandbox, gitcode):
    gitcode.head_forms = set()  # the service mis-resolves every head form
    for target in TARGETS:
        gitcode.add_branch(UPSTREAM, target)
        gitcode.add_branch(UPSTREAM, f"test-put-metric-{target}")
    result = apply(sandbox)
    assert result.code != 0
    assert gitcode.open_prs() == [] and len(gitcode.prs) == len(TARGETS)
    records = branch_records(sandbox)
    for target in TARGETS:
        message = records[target]["message"]
        assert f"from the upstream branch {UPSTREAM}:test-put-metric-{target}" in message
        assert message.endswith("backport closed it at once, so no wrong PR stays open.")
        assert message.count(". ") == 0


def test_a_draft_clears_once_the_draft_reason_is_gone(sandbox, gitcode):
    set_pr(sandbox, draft=True)
    assert apply(sandbox, "--branch", "v2.7.1").code == 0
    (pr,) = gitcode.open_prs()
    assert pr.draft and pr.title == "[WIP] test: add put_metric coverage"
    set_pr(sandbox, draft=False)
    assert apply(sandbox, "--branch", "v2.7.1", "--force").code == 0
    assert (pr.draft, pr.title) == (False, "test: add put_metric coverage")


def test_refused_decorations_are_warnings_and_not_repeated(sandbox, gitcode):
    gitcode.comments_forbidden = True
    set_pr(sandbox, labels=["backport"], reviewers=["alice"], testers=["tom"], comment="compile")
    result = apply(sandbox)
    assert result.code == 0, result.err
    assert len(gitcode.open_prs()) == len(TARGETS)
    records = branch_records(sandbox)
    for target in TARGETS:
        assert records[target]["status"] == "done"
        warnings = records[target]["warnings"]
        assert [w.split(" ", 1)[0] for w in warnings] == ["labels", "reviewers", "testers",
                                                          "comment"]
        assert all("answered 403" in w for w in warnings)
    table = run(sandbox, "status")
    assert "warning: labels backport not added to PR" in " ".join(table.out.split())
    decorations = len([r for r in gitcode.requests if r.method == "POST"
                       and r.path.endswith(("/labels", "/reviewers", "/testers", "/comments"))])
    assert decorations == 4 * len(TARGETS)
    assert apply(sandbox, "--force").code == 0
    assert len([r for r in gitcode.requests if r.method == "POST"
                and r.path.endswith(("/labels", "/reviewers", "/testers", "/comments"))]) == decorations
    assert branch_records(sandbox)["v2.7.1"]["warnings"] == records["v2.7.1"]["warnings"]


def test_ci_comment_again_after_a_force_push_only_when_asked(sandbox, gitcode, tmp_path):
    set_pr(sandbox, comment="compile")
    assert apply(sandbox, "--branch", "v2.7.1").code == 0
    (pr,) = gitcode.open_prs()
    assert [c["body"] for c in pr.comments] == ["compile"]
    advance(sandbox, "v2.7.1", tmp_path)
    assert apply(sandbox, "--branch", "v2.7.1", "--force").code == 0  # force-pushes the branch
    assert [c["body"] for c in pr.comments] == ["compile"]
    set_pr(sandbox, comment_on_push=True)
    advance(sandbox, "v2.7.1", tmp_path)
    assert apply(sandbox, "--branch", "v2.7.1", "--force").code == 0
    assert [c["body"] for c in pr.comments] == ["compile", "compile"]
    assert apply(sandbox, "--branch", "v2.7.1", "--force").code == 0  # nothing pushed: no comment
    assert [c["body"] for c in pr.comments] == ["compile", "compile"]
