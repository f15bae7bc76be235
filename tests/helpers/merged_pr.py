"""A PR of the sandbox's upstream as GitCode holds it (for the summary comment and `trigger`
tests): the put_metric test as the PR's own commit (its head ref), squash-merged onto the base
with a message naming ``!N`` when merged, and the PR on the GitCode stand-in."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from backport.demo.sandbox import Sandbox
from tests.fakes.gitcode import FakeGitCode, FakePR, git_files
from tests.helpers.project import PATCHES, git

API = "torch.distributed.elastic.metrics.put_metric"
# The PR's author commits its commits (as the clone of a contributor would).
AS_AUTHOR = ("-c", "user.name=lgxxx", "-c", "user.email=lgxxx@example.invalid")


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
    # A detached worktree of the upstream itself: its commits are the upstream's objects at
    # once, so its refs move without a clone, a push or a fetch (and no branch is made there).
    work = sandbox.root / f"work-{pr.number}"
    git(sandbox.upstream, "worktree", "add", "--quiet", "--detach", str(work), base)
    git(work, *AS_AUTHOR, "am", "--quiet", str(patch or next(PATCHES.glob("0001-*.patch"))))
    pr.head_sha = git(work, "rev-parse", "HEAD")
    pr.files = git_files(sandbox.upstream, f"{pr.head_sha}~1", pr.head_sha)
    git(work, "update-ref", f"refs/merge-requests/{pr.number}/head", pr.head_sha)
    if state == "merged":
        land(sandbox, gitcode, pr)
    return pr


def land(sandbox: Sandbox, gitcode: FakeGitCode, pr: FakePR) -> str:
    """Squash-merge ``pr`` onto its base as GitCode does (message naming ``!N``); its sha."""
    work = sandbox.root / f"work-{pr.number}"
    branch = f"refs/heads/{pr.base_ref}"
    old = git(work, "rev-parse", branch)
    git(work, "checkout", "--quiet", "--detach", old)
    git(work, *AS_AUTHOR, "cherry-pick", "--quiet", pr.head_sha)
    git(work, *AS_AUTHOR, "commit", "--quiet", "--amend", "-m",
        f"test: add put_metric coverage\n\n!{pr.number} merge {pr.head_ref} into {pr.base_ref}"
        f"\n\nSee merge request: {gitcode.upstream}!{pr.number}")
    sha = git(work, "rev-parse", "HEAD")
    git(work, "update-ref", branch, sha, old)  # only from where it was, as a push would
    pr.state = "merged"
    pr.merged_at = datetime.now(UTC).isoformat(timespec="seconds")
    return sha
