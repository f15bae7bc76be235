"""`--from-pr N` offline: with `forge: local`, PR N is learned from the upstream's squash commit
whose own line names it (`!N merge <head> into <base>`), with the commit's date as its merge time;
the sandbox's real git, no server."""

from __future__ import annotations

import os
import subprocess

import yaml

from backport.demo.sandbox import Sandbox
from backport.forge.local import LocalForge
from tests.helpers.project import PATCHES, git
from tests.helpers.source_pr import OTHERS, run, work_clone

NUMBER = 42893
MERGED_AT = "2026-01-02T03:04:05+08:00"  # long before this run: the real history's dates


def squash_merge(sandbox: Sandbox, number: int, title: str, base: str = "master") -> str:
    """The put_metric change squash-merged upstream as GitCode writes it, committed at
    MERGED_AT; its sha."""
    work = work_clone(sandbox, base)
    git(work, "am", "--quiet", str(next(PATCHES.glob("0001-*.patch"))))
    message = (f"{title}\n\n# message auto-generated for no-merge-commit merge:\n"
               f"!{number} merge is-conj-master into {base}\n\n{title}\n\nCreated-by: someone\n"
               f"Merged-by: ascend-robot\nDescription: 为 put_metric 增加测试。\n\n"
               f"See merge request: Ascend/pytorch!{number}")
    subprocess.run(["git", "commit", "--quiet", "--amend", "-m", message], cwd=work, check=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": MERGED_AT})
    git(work, "push", "--quiet", "origin", f"HEAD:{base}")
    return git(work, "rev-parse", "HEAD")


def forge_of(sandbox: Sandbox) -> LocalForge:
    return LocalForge(sandbox.project / ".backport" / "forge.sqlite", upstream="Ascend/pytorch",
                      fork="lgxxx/pytorch")


def test_a_real_squash_merge_is_backported_without_a_forge(sandbox):
    sha = squash_merge(sandbox, NUMBER, "[master] test: add put_metric coverage")
    result = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests")
    assert result.code == 0, result.err
    spec = yaml.safe_load((sandbox.project / "patches" / f"pr-{NUMBER}" / "patch.yaml")
                          .read_text("utf-8"))
    assert (spec["source_pr"], spec["source_base"], spec["source_commit"], spec["source_merged"],
            spec["source_found_by"]) == (NUMBER, "master", sha, True, "squash message")
    forge = forge_of(sandbox)
    info = forge.get_source_pr(NUMBER)
    assert (info.state, info.merged_at, info.head, info.author, info.title) == (
        "merged", MERGED_AT, "is-conj-master", "someone",
        "[master] test: add put_metric coverage")
    assert info.body == "为 put_metric 增加测试。"
    opened = {p.base: p for p in forge.list_prs("open")}
    assert sorted(opened) == sorted(OTHERS)
    assert {p.title for p in opened.values()} == {"test: add put_metric coverage"}
    assert all(p.number > NUMBER for p in opened.values())
    again = run(sandbox, "apply", "--from-pr", str(NUMBER), "--skip-tests")
    assert again.code == 0, again.err
    assert f"pr-{NUMBER}: kept" in again.out + again.err


def test_a_pr_no_squash_merge_names_is_one_sentence(sandbox):
    squash_merge(sandbox, NUMBER, "test: add put_metric coverage")
    result = run(sandbox, "apply", "--from-pr", "4289", "--skip-tests")
    assert result.code == 1, result.err
    (line,) = result.err.strip().splitlines()
    assert line.startswith("error: PR !4289 is not in the local forge ")
    assert "no commit on v2.7.1, v2.11.0, v2.12.0 or master of " in line
    assert "'!4289 merge <head> into <base>'" in line
    assert not (sandbox.project / "patches" / "pr-4289").exists()
