"""What Ctrl-C prints: the command that finishes what is left, and nothing about processes
that stay (none does: a run's warm workers end with it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.commands.common import AppContext


@pytest.fixture
def left_sockets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the runtime folder of the retired kept workers held while another run's were up
    (before, every command then said they stay up to 10 minutes)."""
    for name in ("w-0123.sock", "w-4567.sock"):
        (tmp_path / name).write_text("")
    monkeypatch.setenv("BACKPORT_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("BACKPORT_KEEP_WORKERS", "1")


def test_a_command_without_a_journal_says_only_that_it_was_interrupted(left_sockets) -> None:
    # audit, status, env setup, trigger, …: no journal to resume, no worker of theirs left
    assert AppContext().interrupted_text() == "interrupted"


def test_a_journaled_command_names_the_command_that_finishes_what_is_left(left_sockets) -> None:
    app = AppContext()
    app.resumable("backport apply --api put_metric")
    assert app.interrupted_text().splitlines() == [
        "interrupted: every finished step is in the run's journal; this finishes what is left "
        "(a step cut off midway is done again):",
        "  backport apply --api put_metric"]

