"""`new --from-pr` / `apply --from-pr`: a PR of the upstream, read from the GitCode stand-in
(real HTTP on 127.0.0.1) and fetched from the sandbox's real upstream repository."""

from __future__ import annotations

import re

import yaml

from backport.demo.sandbox import Sandbox
from tests.helpers.project import git, run_app
from tests.helpers.source_pr import (
    API,
    NUMBER,
    OTHERS,
    land,
    pr_commit,
    push_mr_head,
    run,
    source_pr,
    squash_message,
    work_clone,
)

DECOY_TEST = "test/decoy/test_decoy.py"


def land_decoy(sandbox: Sandbox) -> str:
    """A later squash merge of PR !<NUMBER>0 onto master, touching another test file."""
    work = work_clone(sandbox, "master")
    path = work / DECOY_TEST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("import unittest\n\n\nclass T(unittest.TestCase):\n"
                    "    def test_decoy(self):\n        pass\n", encoding="utf-8")
    git(work, "add", DECOY_TEST)
    git(work, "commit", "--quiet", "-m", squash_message(NUMBER * 10, "decoy", "master"))
    git(work, "push", "--quiet", "origin", "HEAD:master")
    return git(work, "rev-parse", "HEAD")


def spec(sandbox: Sandbox, name: str) -> dict:
    return yaml.safe_load((sandbox.project / "patches" / name / "patch.yaml").read_text("utf-8"))


def test_a_merged_pr_without_merge_sha_is_found_by_its_squash_message(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    assert pr.number == NUMBER
    pr.head_sha = pr_commit(sandbox)  # the PR's own head: never pushed upstream, unreachable
    squash = land(sandbox, NUMBER, pr.head_ref)
    land_decoy(sandbox)  # newer, and names !42810

    result = run(sandbox, "new", "from_pr", "--from-pr", str(NUMBER))
    assert result.code == 0, result.err
    data = spec(sandbox, "from_pr")
    assert data["source_pr"] == NUMBER and data["source_base"] == "master"
    assert data["source_commit"] == squash
    assert data["source_merged"] is True
    assert data["source_found_by"] == "squash message"
    assert data["branches"] == OTHERS
    assert data["title"] == "test: add put_metric coverage"
    assert data["issue"] == 3216 and data["api"] == API
    assert [t["path"] for t in data["tests"]] == ["test/distributed/elastic/metrics/test_metrics_api.py"]
    assert f"merged into master as {squash[:12]} (found by the squash message" in result.out
    (patch,) = (sandbox.project / "patches" / "from_pr").glob("*.patch")
    text = patch.read_text("utf-8")
    # the landed commit (not the PR's head), with the change's own message: the PR's title,
    # the source PR and git's cherry-pick line, none of GitCode's squash block
    assert f"(cherry picked from commit {squash})" in text
    assert f"\nSubject: [PATCH] {data['title']}\n" in text
    assert f"Backport of Ascend/pytorch!{NUMBER}." in text
    for generated in ("# message auto-generated", "See merge request", "Merged-by:"):
        assert generated not in text
    assert DECOY_TEST not in text
    author, date = git(sandbox.upstream, "log", "-1", "--format=%an <%ae>%n%aD",
                       squash).splitlines()
    assert f"\nFrom: {author}\nDate: {date}\n" in text  # author and date kept


def test_a_merge_commit_sha_on_the_base_is_used_and_one_off_it_is_not(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    squash = land(sandbox, NUMBER, pr.head_ref)
    pr.merge_commit_sha = squash
    result = run(sandbox, "new", "by_sha", "--from-pr", str(NUMBER))
    assert result.code == 0, result.err
    assert spec(sandbox, "by_sha")["source_found_by"] == "merge_commit_sha"
    pr.merge_commit_sha = pr_commit(sandbox, "v2.7.1")  # a commit the base does not hold
    push_mr_head(sandbox, 999, pr.merge_commit_sha, "v2.7.1")
    result = run(sandbox, "new", "off_base", "--from-pr", str(NUMBER))
    assert result.code == 0, result.err
    data = spec(sandbox, "off_base")
    assert data["source_found_by"] == "squash message" and data["source_commit"] == squash


def test_an_open_pr_uses_its_head_ref_and_says_it_is_not_merged(sandbox, server):
    pr = source_pr(server, state="open", issues=[3216])
    head = pr_commit(sandbox)
    push_mr_head(sandbox, NUMBER, head)
    pr.head_sha = head
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests", "--json")
    assert result.code == 0, result.err
    assert "not merged" in result.err  # the plan, beside the JSON
    data = spec(sandbox, f"pr-{NUMBER}")
    assert data["source_found_by"] == "head ref" and data["source_merged"] is False
    assert data["source_commit"] == head
    by_name = run(sandbox, "apply", "--api", f"pr-{NUMBER}", "--skip-tests")
    assert by_name.code == 0, by_name.err
    assert f"pr-{NUMBER}: from Ascend/pytorch!{NUMBER} not merged: its own commits up to " \
        f"{head[:12]}" in by_name.out
    opened = {p.base_ref: p for p in server.open_prs() if p.head_repo == "lgxxx/pytorch"}
    assert sorted(opened) == sorted(OTHERS)
    for p in opened.values():
        assert f"[Ascend/pytorch!{NUMBER}]" in p.body and "尚未合入 `master`" in p.body
        assert f"SOURCE=Ascend/pytorch!{NUMBER}@{head}" in p.body
        assert 3216 in p.issues


def test_a_changed_pr_makes_the_set_again_and_an_unchanged_one_keeps_it(sandbox, server):
    pr = source_pr(server, state="open", issues=[3216])
    head = pr_commit(sandbox)
    push_mr_head(sandbox, NUMBER, head)
    first = run(sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1", "--no-push",
                "--skip-tests")
    assert first.code == 0, first.err
    assert f"pr-{NUMBER}: made from Ascend/pytorch!{NUMBER} not merged" in first.out
    again = run(sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1", "--no-push",
                "--skip-tests")
    assert again.code == 0, again.err
    assert f"pr-{NUMBER}: kept" in again.out and "unchanged" in again.out

    work = work_clone(sandbox, "master")
    git(work, "checkout", "--quiet", head)
    (work / "NOTES.md").write_text("review fix\n", encoding="utf-8")
    git(work, "add", "NOTES.md")
    git(work, "commit", "--quiet", "-m", "review: a note")
    newer = git(work, "rev-parse", "HEAD")
    push_mr_head(sandbox, NUMBER, newer)
    moved = run(sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1", "--no-push",
                "--skip-tests", "--json")
    assert moved.code == 0, moved.err
    assert f"made again, PR !{NUMBER} has changed since: new commits" in moved.err
    (applied,) = [b["commit"] for b in moved.json()["branches"]]
    (cache,) = [p.parent for p in sandbox.cache.glob("*/HEAD")]
    assert git(cache, "log", "-1", "--format=%s", applied) == "review: a note"  # applied anew
    assert spec(sandbox, f"pr-{NUMBER}")["source_commit"] == newer

    squash = land(sandbox, NUMBER, pr.head_ref)
    server.merge(NUMBER)
    merged = run(sandbox, "apply", "--from-pr", str(NUMBER), "--branch", "v2.7.1", "--no-push",
                "--skip-tests", "--json")
    assert merged.code == 0, merged.err
    assert "has changed since: now merged; every branch is done again" in merged.err
    (applied,) = [b["commit"] for b in merged.json()["branches"]]
    assert git(cache, "log", "-1", "--format=%B", applied).endswith(
        f"Backport of Ascend/pytorch!{NUMBER}.\n(cherry picked from commit {squash})")
    data = spec(sandbox, f"pr-{NUMBER}")
    assert data["source_commit"] == squash and data["source_found_by"] == "squash message"


def test_several_linked_issues_are_all_taken_unless_issue_names_one(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216, 3217])
    land(sandbox, NUMBER, pr.head_ref)
    several = run(sandbox, "new", "x", "--from-pr", str(NUMBER))
    assert several.code == 0, several.err
    assert f"PR !{NUMBER} links #3216, #3217: every backport links them" in several.out
    assert spec(sandbox, "x")["issue"] == [3216, 3217]
    chosen = run(sandbox, "new", "x", "--from-pr", str(NUMBER), "--issue", "3217", "--force")
    assert chosen.code == 0, chosen.err
    assert spec(sandbox, "x")["issue"] == 3217


def test_a_closed_pr_and_a_pr_the_base_never_took_are_one_sentence(sandbox, server):
    closed = source_pr(server, state="closed", issues=[3216])
    result = run(sandbox, "new", "x", "--from-pr", str(closed.number))
    assert result.code == 2
    assert result.err.strip() == (f"error: PR !{closed.number} of Ascend/pytorch was closed "
                                  "without being merged, so it carries no change to backport")
    merged = source_pr(server, state="merged", issues=[3216])
    result = run(sandbox, "new", "x", "--from-pr", str(merged.number))
    assert result.code == 1  # the upstream proves no change (source-unproven), not a usage error
    assert f"PR !{merged.number} is merged at {merged.merged_at} with 1 file " in result.err
    assert "but no commit on 'master' of " in result.err
    assert f"no commit names it in a squash message ('!{merged.number} merge" in result.err
    assert result.err.count("\n") == 1
    assert not (sandbox.project / "patches" / "x").exists()


def test_patch_yaml_source_keys_are_checked_in_one_place(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    assert run(sandbox, "new", "x", "--from-pr", str(NUMBER)).code == 0
    path = sandbox.project / "patches" / "x" / "patch.yaml"
    text = path.read_text("utf-8")
    path.write_text(re.sub(r"source_commit: \S+", "source_commit: 1292bcfa1", text), "utf-8")
    check = run(sandbox, "apply", "--api", "x", "--no-push")
    assert check.code == 2, check.out
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("source_commit"))
    assert f"patch.yaml:{line}" in check.err and "source_commit" in check.err
    assert "is not a full 40-hex commit sha" in check.err
    path.write_text(re.sub(r"source_found_by: .*\n", "", text), "utf-8")
    missing = run(sandbox, "apply", "--api", "x", "--no-push")
    assert missing.code == 2
    assert "needs source_found_by too" in missing.err



def test_from_and_from_pr_are_one_or_the_other(sandbox, server):
    both = run(sandbox, "new", "x", "--from", "HEAD", "--from-pr", str(NUMBER))
    neither = run(sandbox, "new", "x")
    with_repo = run(sandbox, "new", "x", "--from-pr", str(NUMBER), "--repo", str(sandbox.root))
    for result in (both, neither):
        assert result.code == 2
        assert result.err.strip() == "error: pass one of --from REV and --from-pr N"
    assert with_repo.code == 2
    assert with_repo.err.count("\n") == 1 and "--repo names the clone --from reads" in with_repo.err
    assert not server.requests  # refused before anything was read


def test_a_pr_folder_not_made_from_the_pr_or_broken_is_left_alone(sandbox, server):
    source_pr(server, state="merged", issues=[3216])
    folder = sandbox.project / "patches" / f"pr-{NUMBER}"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine\n", encoding="utf-8")
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--no-push")
    assert result.code == 2
    assert result.err.strip() == (f"error: {folder} exists but is not a set made from a PR "
                                  f"(patches/pr-{NUMBER}/patch.yaml not found); move it away to "
                                  f"make one from PR !{NUMBER}")
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert not server.requests  # refused before PR !N was read
    by_hand = sandbox.project / "patches" / "put_metric"
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()
    by_hand.rename(folder)  # a set made by hand, named like one made from the PR
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--no-push")
    assert result.code == 2
    assert "is not a set made from a PR (it names no source_pr)" in result.err


def test_without_a_token_the_pr_is_not_read_and_the_sentence_says_how(sandbox, server):
    source_pr(server, state="merged", issues=[3216])
    result = run_app(sandbox.project, "new", "x", "--from-pr", str(NUMBER),
                     env={"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "",
                          "BACKPORT_CACHE": str(sandbox.cache)})
    assert result.code != 0
    assert result.err.startswith(f"error: PR !{NUMBER} cannot be read: no GitCode token for "
                                 f"{server.url}: set GITCODE_TOKEN"), result.err
    assert result.err.count("\n") == 1
    assert not server.requests


def test_apply_from_a_pr_keeps_the_issue_its_set_was_made_with(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216, 3217])
    land(sandbox, NUMBER, pr.head_ref)
    made = run(sandbox, "new", f"pr-{NUMBER}", "--from-pr", str(NUMBER), "--issue", "3217")
    assert made.code == 0, made.err
    again = run(sandbox, "apply", "--from-pr", str(NUMBER), "--no-push", "--skip-tests")
    assert again.code == 0, again.err
    assert f"pr-{NUMBER}: kept" in again.out
    assert spec(sandbox, f"pr-{NUMBER}")["issue"] == 3217
