"""What Ctrl-C prints: the command that finishes what is left, and what stays running."""

from __future__ import annotations

from backport.commands.common import interrupted_message


def test_a_command_without_a_journal_says_only_that_it_was_interrupted() -> None:
    assert interrupted_message(None, None) == "interrupted"


def test_a_journaled_command_names_the_command_that_finishes_what_is_left() -> None:
    text = interrupted_message("backport apply --api put_metric", None)
    assert text.splitlines() == [
        "interrupted: every finished step is in the run's journal; this finishes what is left "
        "(a step cut off midway is done again):",
        "  backport apply --api put_metric"]


def test_kept_warm_workers_are_named_with_their_idle_time_and_how_to_stop_them() -> None:
    one = interrupted_message("backport apply --api x", (1, 600.0)).splitlines()[-1]
    assert one == ("a warm worker (Python with torch imported) stays up to 10 minutes for the "
                   "next run; `backport env stop` stops it now")
    two = interrupted_message(None, (2, 120.0)).splitlines()
    assert two == ["interrupted", "2 warm workers (Python with torch imported) stay up to 2 "
                   "minutes for the next run; `backport env stop` stops them now"]
