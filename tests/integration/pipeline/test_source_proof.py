"""`new --from-pr N` on a merged PR: its change is the oldest commit on the base after the merge
whose files are exactly the PR's (the GitCode stand-in lists them, real git holds the commits);
a commit by anyone else quoting `!N` is named by sha and never taken, and a PR's tests are its
files as it leaves them (renamed: the new path; deleted: none)."""

from __future__ import annotations

import yaml

from backport.demo.sandbox import Sandbox
from tests.fakes.gitcode import git_files
from tests.helpers.project import git
from tests.helpers.source_pr import NUMBER, land, run, source_pr, work_clone

TEST_FILE = "test/distributed/elastic/metrics/test_metrics_api.py"
EVIL = "test/test_evil.py"


def spoof(sandbox: Sandbox, number: int, base: str = "master") -> str:
    """Someone else's later commit on ``base`` whose message quotes PR ``number``'s squash line
    (no trailer of its own) and that adds a test of theirs; its sha."""
    work = work_clone(sandbox, base)
    (work / EVIL).write_text("import os\n\n\ndef test_evil():\n    os.environ\n", "utf-8")
    git(work, "add", EVIL)
    git(work, "-c", "user.name=mallory", "-c", "user.email=mallory@example.invalid", "commit",
        "--quiet", "-m", f"chore: tidy\n\n!{number} merge test-put-metric-master into {base}\n")
    git(work, "push", "--quiet", "origin", f"HEAD:{base}")
    return git(work, "rev-parse", "HEAD")


def spec(sandbox: Sandbox, name: str) -> dict:
    return yaml.safe_load((sandbox.project / "patches" / name / "patch.yaml").read_text("utf-8"))


def test_a_later_commit_quoting_the_pr_is_named_by_sha_and_never_taken(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    squash = land(sandbox, NUMBER, pr.head_ref)
    evil = spoof(sandbox, NUMBER)
    result = run(sandbox, "new", "x", "--from-pr", str(NUMBER))
    assert result.code == 0, result.err
    data = spec(sandbox, "x")
    assert data["source_commit"] == squash
    assert [t["path"] for t in data["tests"]] == [TEST_FILE]
    assert f"not taken as PR !{NUMBER}'s change although their message names it: " \
        f"{evil[:12]} (its files are not the PR's)" in result.out
    assert not any(EVIL in p.read_text("utf-8")
                   for p in (sandbox.project / "patches" / "x").glob("*.patch"))


def test_with_only_a_spoof_on_the_base_no_set_is_written(sandbox, server):
    source_pr(server, state="merged", issues=[3216])
    evil = spoof(sandbox, NUMBER)
    result = run(sandbox, "new", "x", "--from-pr", str(NUMBER))
    assert result.code == 1, result.out
    assert result.err.count("\n") == 1
    assert f"1 commit names it but none is its change: {evil[:12]} (its files are not the " \
        "PR's)" in result.err
    assert f"with 1 file ({TEST_FILE})" in result.err
    assert not (sandbox.project / "patches" / "x").exists()

    again = run(sandbox, "apply", "--from-pr", str(NUMBER), "--no-push", "--skip-tests")
    assert again.code == 1 and evil[:12] in again.err
    assert not (sandbox.project / "patches" / f"pr-{NUMBER}").exists()


def test_a_merge_commit_sha_changing_other_files_is_not_taken(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    squash = land(sandbox, NUMBER, pr.head_ref)
    pr.merge_commit_sha = spoof(sandbox, NUMBER * 10)  # on the base, but another change
    result = run(sandbox, "new", "x", "--from-pr", str(NUMBER))
    assert result.code == 0, result.err
    data = spec(sandbox, "x")
    assert (data["source_commit"], data["source_found_by"]) == (squash, "squash message")


def _rename_test(sandbox: Sandbox, number: int) -> str:
    """An old test landed on master, then PR ``number`` squash-merged on top: the put_metric
    test file renamed (and changed), the old test deleted; the PR's sha."""
    work = work_clone(sandbox, "master")
    doomed = "test/old/test_gone.py"
    (work / doomed).parent.mkdir(parents=True)
    (work / doomed).write_text("def test_gone():\n    pass\n", "utf-8")
    git(work, "add", doomed)
    git(work, "commit", "--quiet", "-m", "test: an old test")
    renamed = TEST_FILE.replace("test_metrics_api.py", "test_metrics_put.py")
    git(work, "mv", TEST_FILE, renamed)
    with (work / renamed).open("a", encoding="utf-8") as fh:
        fh.write("\n# renamed\n")
    git(work, "rm", "--quiet", doomed)
    git(work, "commit", "--quiet", "-a", "-m",
        f"test: rename\n\n!{number} merge rename into master\n\nSee merge request: "
        f"Ascend/pytorch!{number}")
    git(work, "push", "--quiet", "origin", "HEAD:master")
    return git(work, "rev-parse", "HEAD")


def test_a_renamed_test_is_its_new_path_and_a_deleted_one_is_no_test(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    sha = _rename_test(sandbox, NUMBER)
    pr.files = git_files(sandbox.upstream, f"{sha}~1", sha)
    assert any(old and new and old != new for old, new in pr.files)  # listed as a rename
    result = run(sandbox, "new", "x", "--from-pr", str(NUMBER), "--api", "torch.x.y")
    assert result.code == 0, result.err
    assert [t["path"] for t in spec(sandbox, "x")["tests"]] == [
        TEST_FILE.replace("test_metrics_api.py", "test_metrics_put.py")]
