"""A merged or open source PR on the GitCode stand-in, landed in the demo sandbox's real
upstream as GitCode squash-merges it: shared by the from-PR command tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from backport.config.patchfiles import read_patch
from backport.demo.sandbox import Sandbox
from tests.fakes.gitcode import FakeGitCode, FakePR, git_branch_checker
from tests.helpers.project import PATCHES, TOKEN, edit_config, git, run_app

NUMBER = 4281  # a later PR numbered !42810 must never be taken for it
OTHERS = ["v2.7.1", "v2.11.0", "v2.12.0"]
API = "torch.distributed.elastic.metrics.put_metric"
BODY = f"test: add put_metric coverage\n\n```text\nAPI={API}\n```\n"


@contextmanager
def source_server(sandbox: Sandbox, first_number: int = NUMBER) -> Iterator[FakeGitCode]:
    """The GitCode stand-in numbering from ``first_number``, knowing the sandbox's fork;
    branches.yaml points at it."""
    fake = FakeGitCode(tokens={TOKEN}, upstream="Ascend/pytorch", fork="lgxxx/pytorch",
                       first_number=first_number,
                       branch_exists=git_branch_checker({"lgxxx/pytorch": sandbox.fork}))
    fake.start()

    def to_gitcode(data: dict) -> None:
        data["forge"] = "gitcode"
        data["api_url"] = fake.url
    edit_config(sandbox, to_gitcode)
    try:
        yield fake
    finally:
        fake.stop()


def run(sandbox: Sandbox, *args: str):
    return run_app(sandbox.project, *args,
                   env={"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1",
                        "BACKPORT_CACHE": str(sandbox.cache)})


def work_clone(sandbox: Sandbox, base: str) -> Path:
    """A clone of the sandbox's upstream with ``base`` checked out at its upstream head."""
    work = sandbox.root / f"work-{base}"
    if not work.exists():
        git(sandbox.root, "clone", "--quiet", str(sandbox.upstream), str(work))
        git(work, "config", "user.name", "lgxxx")
        git(work, "config", "user.email", "lgxxx@example.invalid")
    git(work, "fetch", "--quiet", "origin")
    git(work, "checkout", "--quiet", "-B", base, f"origin/{base}")
    return work


def pr_commit(sandbox: Sandbox, base: str = "master") -> str:
    """The PR's own commit (the put_metric test) on ``base``, in a clone only."""
    work = work_clone(sandbox, base)
    git(work, "am", "--quiet", str(next(PATCHES.glob("0001-*.patch"))))
    return git(work, "rev-parse", "HEAD")


def squash_message(number: int, head: str, base: str) -> str:
    return (f"test: add put_metric coverage\n\n# message auto-generated for no-merge-commit "
            f"merge:\n!{number} merge {head} into {base}\n\ntest: add put_metric coverage\n\n"
            f"Created-by: lgxxx\nMerged-by: ascend-robot\n\nSee merge request: "
            f"Ascend/pytorch!{number}")


def land(sandbox: Sandbox, number: int, head: str, base: str = "master") -> str:
    """Squash-merge the put_metric test onto ``base`` upstream as GitCode does; its sha."""
    work = work_clone(sandbox, base)
    git(work, "am", "--quiet", str(next(PATCHES.glob("0001-*.patch"))))
    git(work, "commit", "--quiet", "--amend", "-m", squash_message(number, head, base))
    git(work, "push", "--quiet", "origin", f"HEAD:{base}")
    return git(work, "rev-parse", "HEAD")


def code_only_pr(sandbox: Sandbox, server: FakeGitCode, path: str, title: str) -> FakePR:
    """A merged PR into master changing only ``path`` (no test file), squash-merged upstream
    as GitCode does, on the stand-in with its file listed."""
    pr = server.add_pr(head_repo="lgxxx-other/pytorch", head="fix-code-master", base="master",
                       title=title, body="修复一个问题。\n", state="merged", author="lgxxx")
    pr.issues, pr.files = [], [(None, path)]
    work = work_clone(sandbox, "master")
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text("def foo():\n    return 1\n", encoding="utf-8")
    git(work, "add", path)
    git(work, "commit", "--quiet", "-m", squash_message(pr.number, pr.head_ref, "master"))
    git(work, "push", "--quiet", "origin", "HEAD:master")
    return pr


def push_mr_head(sandbox: Sandbox, number: int, sha: str, work_base: str = "master") -> None:
    work = work_clone(sandbox, work_base)
    git(work, "push", "--quiet", "--force", "origin", f"{sha}:refs/merge-requests/{number}/head")


def put_metric_files() -> list[tuple[str | None, str | None]]:
    """The files of the put_metric change, as GitCode lists a PR's (``FakePR.files``)."""
    return [(d.old, d.new) for d in read_patch(next(PATCHES.glob("0001-*.patch"))).files]


def source_pr(server: FakeGitCode, *, state: str, issues: list[int]) -> FakePR:
    """The put_metric PR into master on the stand-in (its files listed as GitCode does)."""
    pr = server.add_pr(head_repo="lgxxx-other/pytorch", head="test-put-metric-master",
                       base="master", title="test: add put_metric coverage", body=BODY,
                       state=state, author="lgxxx")
    pr.issues = issues
    pr.files = put_metric_files()
    return pr
