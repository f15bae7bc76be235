"""A PR of the sandbox's upstream as GitCode holds it (for the summary comment and `trigger`
tests): the put_metric test as the PR's own commit (its head ref), squash-merged onto the base
with a message naming ``!N`` when merged, and the PR on the GitCode stand-in."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from backport.demo.sandbox import Sandbox
from tests.helpers.fake_gitcode import FakeGitCode, FakePR, git_files
from tests.helpers.project import PATCHES, git

API = "torch.distributed.elastic.metrics.put_metric"


def merged_pr(sandbox: Sandbox, gitcode: FakeGitCode, *, base: str = "master",
              issues: tuple[int, ...] = (3216,), state: str = "merged",
              patch: Path | None = None) -> FakePR:
    """PR ``!N`` (the next number of ``gitcode``) of the put_metric test into ``base``, its
    commit at ``refs/merge-requests/N/head``; with ``state="merged"`` it is landed (:func:`land`).
    ``patch``: the commit's patch file, if not put_metric's."""
    pr = gitcode.add_pr(head_repo="lgxxx-other/pytorch", head="test-put-metric", base=base,
                        title="test: add put_metric coverage",
                        body=f"test: add put_metric coverage\n\n```text\nAPI={API}\n```\n",
                        state="open", author="lgxxx")
    pr.issues = list(issues)
    work = sandbox.root / f"work-{pr.number}"
    git(sandbox.root, "clone", "--quiet", "--branch", base, str(sandbox.upstream), str(work))
    git(work, "config", "user.name", "lgxxx")
    git(work, "config", "user.email", "lgxxx@example.invalid")
    git(work, "am", "--quiet", str(patch or next(PATCHES.glob("0001-*.patch"))))
    pr.head_sha = git(work, "rev-parse", "HEAD")
    pr.files = git_files(work / ".git", "HEAD~1", "HEAD")
    git(work, "push", "--quiet", "--force", "origin", f"HEAD:refs/merge-requests/{pr.number}/head")
    if state == "merged":
        land(sandbox, gitcode, pr)
    return pr


def land(sandbox: Sandbox, gitcode: FakeGitCode, pr: FakePR) -> str:
    """Squash-merge ``pr`` onto its base as GitCode does (message naming ``!N``); its sha."""
    work = sandbox.root / f"work-{pr.number}"
    git(work, "fetch", "--quiet", "origin", pr.base_ref)
    git(work, "checkout", "--quiet", "-B", "landing", f"origin/{pr.base_ref}")
    git(work, "cherry-pick", "--quiet", pr.head_sha)
    git(work, "commit", "--quiet", "--amend", "-m",
        f"test: add put_metric coverage\n\n!{pr.number} merge {pr.head_ref} into {pr.base_ref}"
        f"\n\nSee merge request: {gitcode.upstream}!{pr.number}")
    git(work, "push", "--quiet", "origin", f"HEAD:{pr.base_ref}")
    pr.state = "merged"
    pr.merged_at = datetime.now(UTC).isoformat(timespec="seconds")
    return git(work, "rev-parse", "HEAD")
