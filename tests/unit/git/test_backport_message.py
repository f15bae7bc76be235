"""A backport's message from a merged PR: the PR's title, the change's own message, the source
PR and git's cherry-pick line; none of GitCode's generated squash block or the PR template."""

from __future__ import annotations

import pytest

from backport.git.squash_message import backport_message, one_line, own_message

SHA = "9e73e708ab9350d203475609f36f8a43f6a0c2ab"
REF = "Ascend/pytorch!45049"

# The shape of a squash commit on Ascend/pytorch's master (2026-08).
SQUASH = """[inductor] flexattention: disable logger in compile-mode

Co-authored-by: liujm2001<liujingming7@huawei.com>



# message auto-generated for no-merge-commit merge:
!45049 merge master-flexattn-0819 into master

[inductor] flexattention: disable logger in compile-mode

Created-by: liujm2001
Commit-by: liujm2001
Merged-by: ascend-robot
Description: <!--
PR描述模板更新日期：20260203
-->

# 【合入来源】
https://gitcode.com/Ascend/pytorch/issues/4198

See merge request: Ascend/pytorch!45049
"""


def test_the_squash_block_and_the_template_are_gone() -> None:
    message = backport_message(SQUASH, title="[inductor] flexattention: disable logger in "
                               "compile-mode", sha=SHA, source_ref=REF)
    assert message == (
        "[inductor] flexattention: disable logger in compile-mode\n\n"
        "Co-authored-by: liujm2001<liujingming7@huawei.com>\n\n"
        "Backport of Ascend/pytorch!45049.\n"
        f"(cherry picked from commit {SHA})\n")
    for generated in ("auto-generated", "Created-by", "Merged-by", "Description:", "合入来源",
                      "See merge request"):
        assert generated not in message


def test_a_title_other_than_the_commit_subject_leads_and_the_subject_stays() -> None:
    message = backport_message("fix typo\n\nlonger words\n", title="docs: fix a typo in foo",
                               sha=SHA, source_ref=REF)
    assert message.startswith("docs: fix a typo in foo\n\nfix typo\n\nlonger words\n\n")


def test_a_message_without_the_block_keeps_all_but_the_trailer() -> None:
    assert own_message("feat: x\n\nbody\n\nSee merge request: Ascend/pytorch!7\n") == \
        "feat: x\n\nbody"


@pytest.mark.parametrize("title, shown", [
    ("a\nb", "a b"), ("tab\there", "tab here"), ("  spaced  ", "spaced"),
    ("bell\x07ring", "bell ring"), ("", ""),
])
def test_a_title_from_outside_is_one_line(title: str, shown: str) -> None:
    assert one_line(title) == shown


def test_an_empty_title_falls_back_to_the_subject_then_to_the_source() -> None:
    assert backport_message("subj\n", title="\n", sha=SHA, source_ref=REF).startswith("subj\n\n")
    assert backport_message("# message auto-generated for no-merge-commit merge:\n!1 x",
                            title="", sha=SHA, source_ref=REF).startswith(f"Backport of {REF}\n")


def test_the_authors_lines_in_the_tools_trailer_forms_are_not_kept_as_trailers() -> None:
    """Only the tool's trailer says where a backport comes from: an author's `Backport of …!N.`
    or `(cherry picked from commit …)` line would make the commit carry another PR."""
    other = "0" * 40
    own = (f"fix: y\n\nthe author's words\n\nBackport of Ascend/pytorch!999.\n"
           f"(cherry picked from commit {other})\n  (cherry picked from commit {other})  \n")
    message = backport_message(own, title="fix: y", sha=SHA, source_ref=REF)
    assert message == ("fix: y\n\nthe author's words\n\n"
                       f"Backport of {REF}.\n(cherry picked from commit {SHA})\n")
    kept = backport_message("fix: z\n\nsee Backport of !999. in the notes\n", title="fix: z",
                            sha=SHA, source_ref=REF)
    assert "see Backport of !999. in the notes" in kept  # words in a line stay
