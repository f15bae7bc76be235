"""A PR of the sandbox's upstream merged as GitCode squash-merges (for the summary comment and
`trigger` tests): the put_metric test landed on the base with a message naming ``!N``, and the
PR on the GitCode stand-in."""

from __future__ import annotations

from backport.demo.sandbox import Sandbox
from tests.helpers.fake_gitcode import FakeGitCode, FakePR
from tests.helpers.project import PATCHES, git

API = "torch.distributed.elastic.metrics.put_metric"


def merged_pr(sandbox: Sandbox, gitcode: FakeGitCode, *, base: str = "master",
              issues: tuple[int, ...] = (3216,), state: str = "merged") -> FakePR:
    """Open PR ``!N`` (the next number of ``gitcode``) of the put_metric test into ``base``;
    with ``state="merged"`` it is squash-merged onto ``base`` in the sandbox's upstream."""
    pr = gitcode.add_pr(head_repo="lgxxx-other/pytorch", head="test-put-metric", base=base,
                        title="test: add put_metric coverage",
                        body=f"test: add put_metric coverage\n\n```text\nAPI={API}\n```\n",
                        state=state, author="lgxxx")
    pr.issues = list(issues)
    work = sandbox.root / f"work-{pr.number}"
    git(sandbox.root, "clone", "--quiet", "--branch", base, str(sandbox.upstream), str(work))
    git(work, "config", "user.name", "lgxxx")
    git(work, "config", "user.email", "lgxxx@example.invalid")
    git(work, "am", "--quiet", str(next(PATCHES.glob("0001-*.patch"))))
    pr.head_sha = git(work, "rev-parse", "HEAD")
    if state == "merged":
        git(work, "commit", "--quiet", "--amend", "-m",
            f"test: add put_metric coverage\n\n!{pr.number} merge {pr.head_ref} into {base}\n\n"
            f"See merge request: {gitcode.upstream}!{pr.number}")
        git(work, "push", "--quiet", "origin", f"HEAD:{base}")
    else:
        git(work, "push", "--quiet", "--force", "origin",
            f"HEAD:refs/merge-requests/{pr.number}/head")
    return pr
