"""`apply --from-pr N --from-pr M`: several PRs in one run, each its own patches/pr-N/ and
journal; one that cannot be made into a set is named and the others go on."""

from __future__ import annotations

from backport.demo.sandbox import Sandbox
from tests.helpers.project import git
from tests.helpers.source_pr import (
    NUMBER,
    land,
    run,
    source_pr,
    squash_message,
    work_clone,
)

OTHER = NUMBER + 7
OTHER_TEST = "test/batch/test_other.py"


def land_other(sandbox: Sandbox, server) -> None:
    """PR !OTHER, squash-merged onto master: a test file of its own, no API, no issue."""
    work = work_clone(sandbox, "master")
    path = work / OTHER_TEST
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("import unittest\n\n\nclass T(unittest.TestCase):\n"
                    "    def test_other(self):\n        pass\n", encoding="utf-8")
    git(work, "add", OTHER_TEST)
    git(work, "commit", "--quiet", "-m", squash_message(OTHER, "other", "master"))
    git(work, "push", "--quiet", "origin", "HEAD:master")
    pr = server.add_pr(head_repo="lgxxx-other/pytorch", head="other", base="master",
                       title="test: other coverage", body="no API here\n", state="merged",
                       author="lgxxx")
    assert pr.number == OTHER, pr.number
    pr.files = [(None, OTHER_TEST)]


def test_two_prs_in_one_run_each_get_their_set_and_journal(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    for number in range(NUMBER + 1, OTHER):  # numbers the stand-in hands out in between
        server.add_pr(head_repo="x/pytorch", head=f"h{number}", base="master", state="closed")
    land_other(sandbox, server)
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--from-pr", str(OTHER),
                 "--branch", "v2.7.1", "--no-push", "--skip-tests", "--json")
    assert result.code == 0, result.err
    runs = {r["patch_set"]: r for r in result.json()["runs"]}
    assert sorted(runs) == [f"pr-{NUMBER}", f"pr-{OTHER}"]
    for name, data in runs.items():
        (branch,) = data["branches"]
        assert branch["target"] == "v2.7.1" and branch["commit"], branch
        assert (sandbox.project / ".backport" / "runs" / name / "journal.json").is_file()
    assert runs[f"pr-{OTHER}"]["api"] is None
    assert f"pr-{NUMBER}: made from Ascend/pytorch!{NUMBER}" in result.err
    assert f"pr-{OTHER}: made from Ascend/pytorch!{OTHER}" in result.err


def test_a_pr_that_cannot_be_a_set_is_named_and_the_others_go_on(sandbox, server):
    pr = source_pr(server, state="merged", issues=[3216])
    land(sandbox, NUMBER, pr.head_ref)
    closed = server.add_pr(head_repo="x/pytorch", head="gone", base="master", state="closed")
    result = run(sandbox, "apply", "--from-pr", str(closed.number), "--from-pr", str(NUMBER),
                 "--branch", "v2.7.1", "--no-push", "--skip-tests")
    assert result.code == 2, result.err
    assert (f"error: PR !{closed.number} is not backported: PR !{closed.number} of "
            f"Ascend/pytorch was closed without being merged") in result.err
    assert f"pr-{NUMBER}: made from" in result.out
    assert (sandbox.project / ".backport" / "runs" / f"pr-{NUMBER}" / "journal.json").is_file()
    assert not (sandbox.project / "patches" / f"pr-{closed.number}").exists()
