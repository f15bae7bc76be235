"""GitCode's squash message names PR !N exactly: never !N0, never a PR a revert quotes."""

from __future__ import annotations

from backport.git.squash_message import squash_names

SQUASH = ("test: add put_metric coverage\n\n# message auto-generated for no-merge-commit merge:\n"
          "!42810 merge test-put-metric-master into master\n\ntest: add put_metric coverage\n\n"
          "Merged-by: ascend-robot\n\nSee merge request: Ascend/pytorch!42810")


def test_the_exact_number_by_its_merge_line_or_its_last_trailer() -> None:
    assert squash_names(SQUASH, 42810)
    assert not squash_names(SQUASH, 4281)
    assert not squash_names(SQUASH, 428100)
    trailer_only = "fix\n\nSee merge request: Ascend/pytorch!42810\n"
    assert squash_names(trailer_only, 42810) and not squash_names(trailer_only, 4281)


def test_a_later_squash_that_quotes_it_names_only_itself() -> None:
    quoted = SQUASH.replace("!42810 merge", "> !42810 merge")  # quoted in a revert's body
    revert = (f"Revert \"test: add put_metric coverage\"\n\n{quoted}\n\n"
              "See merge request: Ascend/pytorch!43001")
    assert not squash_names(revert, 42810)
    assert squash_names(revert, 43001)


def test_a_mention_in_prose_is_not_a_squash_message() -> None:
    assert not squash_names("docs: follow-up to !42810 (see the review)\n", 42810)
