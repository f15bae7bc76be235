"""The one summary comment on the source PR of `apply --from-pr`: found again by its hidden
marker and edited in place, by later runs and by runs on other hosts, against the GitCode
stand-in (real HTTP on 127.0.0.1) and the sandbox's real upstream repository."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from backport.demo.sandbox import Sandbox
from backport.report.summary import MARKER
from tests.fakes.gitcode import FakeGitCode
from tests.helpers.merged_pr import merged_pr
from tests.helpers.project import TOKEN, run_app
from tests.helpers.source_pr import NUMBER, source_server


@pytest.fixture
def gitcode(sandbox: Sandbox):
    with source_server(sandbox) as fake:
        yield fake


def run_at(project: Path, sandbox: Sandbox, *args: str):
    return run_app(project, *args,
                   env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
                        "BACKPORT_CACHE": str(sandbox.cache)})


def merged_source(sandbox: Sandbox, gitcode: FakeGitCode):
    return merged_pr(sandbox, gitcode)


def summaries(gitcode: FakeGitCode) -> list[dict]:
    return [c for c in gitcode.prs[NUMBER].comments if MARKER in c["body"]]


def ours(gitcode: FakeGitCode) -> dict[str, int]:
    return {p.base_ref: p.number for p in gitcode.open_prs() if p.head_repo == "lgxxx/pytorch"}


def second_host(sandbox: Sandbox) -> Path:
    """The same project checked out on another machine: no journal, no patch set made yet."""
    other = sandbox.root / "host-b"
    shutil.copytree(sandbox.project, other, ignore=shutil.ignore_patterns(".backport"))
    return other


def test_two_runs_leave_one_summary_edited_in_place(sandbox, gitcode):
    merged_source(sandbox, gitcode)
    first = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
                   "v2.12.0", "--skip-tests")
    assert first.code == 0, first.err
    (comment,) = summaries(gitcode)
    prs = ours(gitcode)
    assert f"!{prs['v2.12.0']}" in comment["body"]
    assert f"backport apply --from-pr {NUMBER} --branch v2.12.0" in comment["body"]
    assert "v2.7.1" in comment["body"]  # not run yet: said so, with its command

    again = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
                   "v2.11.0", "--skip-tests")
    assert again.code == 0, again.err
    (edited,) = summaries(gitcode)
    assert edited["id"] == comment["id"]  # the same comment, edited
    prs = ours(gitcode)
    for target in ("v2.12.0", "v2.11.0"):
        assert f"!{prs[target]}" in edited["body"]
    assert len(gitcode.prs[NUMBER].comments) == 1


def test_two_hosts_converge_on_one_summary(sandbox, gitcode):
    merged_source(sandbox, gitcode)
    host_b = second_host(sandbox)
    a = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
               "v2.12.0", "--skip-tests")
    assert a.code == 0, a.err
    b = run_at(host_b, sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1",
               "--skip-tests")
    assert b.code == 0, b.err
    (comment,) = summaries(gitcode)
    prs = ours(gitcode)
    assert sorted(prs) == ["v2.12.0", "v2.7.1"]
    # Host B never ran v2.12.0: it read that branch's result from its PR's evidence.
    for target, number in prs.items():
        row = next(line for line in comment["body"].splitlines()
                   if line.startswith(f"| `{target}`"))
        assert f"!{number}" in row
        assert f"--branch {target}" in row


@pytest.mark.parametrize("answer", ["404", "405"])
def test_an_edit_refused_is_a_warning_and_never_a_second_comment(sandbox, gitcode, answer):
    merged_source(sandbox, gitcode)
    first = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
                   "v2.12.0", "--skip-tests")
    assert first.code == 0, first.err
    gitcode.comment_edit = answer  # PATCH …/pulls/comments/{id}: the id not taken, or no PATCH
    again = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
                   "v2.11.0", "--skip-tests")
    assert again.code == 0, again.err
    assert "summary comment" in again.out + again.err
    assert len(summaries(gitcode)) == 1


def test_a_refused_post_is_a_warning(sandbox, gitcode):
    merged_source(sandbox, gitcode)
    gitcode.comments_forbidden = True
    result = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
                    "v2.12.0", "--skip-tests")
    assert result.code == 0, result.err
    assert "summary comment" in result.out + result.err
    assert summaries(gitcode) == []
    assert ours(gitcode).keys() == {"v2.12.0"}


def test_two_summaries_keep_the_oldest_and_delete_only_our_own(sandbox, gitcode):
    merged_source(sandbox, gitcode)
    # Another runner (the same CI account) posts its summary at the moment this one posts.
    gitcode.comment_race = (f"{MARKER}\n另一台机器的汇总", "lgxxx")
    result = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
                    "v2.12.0", "--skip-tests")
    assert result.code == 0, result.err
    (kept,) = summaries(gitcode)
    assert kept["body"] != f"{MARKER}\n另一台机器的汇总"  # the older one, edited; ours deleted
    (deleted,) = [r.path for r in gitcode.requests if r.method == "DELETE"]
    assert int(deleted.rsplit("/", 1)[-1]) > int(kept["id"])  # ours, the newer one
    assert f"!{ours(gitcode)['v2.12.0']}" in kept["body"]


def test_someone_elses_duplicate_is_left_alone(sandbox, gitcode):
    merged_source(sandbox, gitcode)
    older = gitcode.add_comment(NUMBER, f"{MARKER}\n旧的汇总", author="lgxxx")
    newer = gitcode.add_comment(NUMBER, f"{MARKER}\n另一个汇总", author="ci-bot")
    result = run_at(sandbox.project, sandbox, "apply", "--from-pr", str(NUMBER), "--branch",
                    "v2.12.0", "--skip-tests")
    assert result.code == 0, result.err
    bodies = {c["id"]: c["body"] for c in summaries(gitcode)}
    assert set(bodies) == {older["id"], newer["id"]}  # nothing deleted, nothing added
    assert f"!{ours(gitcode)['v2.12.0']}" in bodies[older["id"]]
    assert bodies[newer["id"]] == f"{MARKER}\n另一个汇总"
