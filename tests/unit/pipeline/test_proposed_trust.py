"""`counts`: a PR that names source PR !N stops the branch only as a bot's branch in the
upstream, by an author with write permission, or with the change's own commits; each check is
made only when the cheaper ones did not hold, and anyone else's PR never counts."""

from __future__ import annotations

from backport.forge import PullRequest
from backport.pipeline.proposed import (
    BACKPORT,
    BOT_BRANCH,
    CHERRY_PICK,
    SAME_CHANGE,
    SYNC,
    WRITER,
    bot_branch,
    carries,
    counts,
)

N, UP, TARGET = 42810, "Ascend/pytorch", "v2.7.1"
SOURCE_LINE = f"```text\nSOURCE={UP}!{N}@{'a' * 40}\n```"  # a backport PR's evidence line


def pr(*, head_repo: str = "reader/pytorch", head: str = "topic", title: str = "t",
       body: str = "", author: str = "reader") -> PullRequest:
    return PullRequest(number=50001, url="https://gitcode.com/Ascend/pytorch/pull/50001",
                       title=title, body=body, head=head, head_repo=head_repo, base=TARGET,
                       state="open", author=author)


class Asked:
    """Records which checks ran, answering as told."""

    def __init__(self, *, writers: frozenset[str] = frozenset(), change: bool = False) -> None:
        self.writers, self.change = writers, change
        self.logins: list[str] = []
        self.changes = 0

    def can_write(self, login: str) -> bool:
        self.logins.append(login)
        return login in self.writers

    def has_change(self) -> bool:
        self.changes += 1
        return self.change


def judge(made: PullRequest, asked: Asked) -> str | None:
    kind = carries(made, N, UP, TARGET)
    assert kind is not None
    return counts(made, kind, upstream=UP, can_write=asked.can_write,
                  has_change=asked.has_change)


def test_a_readers_cf_carries_nothing_and_a_readers_backport_counts_for_nothing() -> None:
    assert carries(pr(body=f"cf. !{N}"), N, UP, TARGET) is None  # a mention is no carrier
    asked = Asked()
    assert judge(pr(body=SOURCE_LINE), asked) is None
    assert asked.logins == ["reader"] and asked.changes == 1


def test_a_writers_pr_counts_without_reading_its_commits() -> None:
    asked = Asked(writers=frozenset({"maint"}))
    assert judge(pr(body=SOURCE_LINE, author="maint"), asked) == WRITER
    assert asked.changes == 0


def test_a_readers_pr_with_the_change_counts() -> None:
    asked = Asked(change=True)
    assert judge(pr(body=SOURCE_LINE), asked) == SAME_CHANGE


def test_a_bot_branch_in_the_upstream_counts_without_a_request() -> None:
    asked = Asked()
    sync = pr(head_repo=UP, head=f"sync-pr{N}-topic-to-{TARGET}", author="ascend-ds-bot")
    picked = pr(head_repo="ascend/PyTorch", head=f"cherry-pick-mr-{N}-1733000000-auto")
    assert judge(sync, asked) == BOT_BRANCH and judge(picked, asked) == BOT_BRANCH
    assert asked.logins == [] and asked.changes == 0


def test_a_bot_title_or_branch_from_a_readers_fork_is_checked_like_any_pr() -> None:
    asked = Asked()
    fake_sync = pr(title=f"[sync] PR-{N}: not really")
    assert carries(fake_sync, N, UP, TARGET) == SYNC and not bot_branch(fake_sync, SYNC, UP)
    assert judge(fake_sync, asked) is None
    fake_pick = pr(head=f"cherry-pick-mr-{N}-1-auto")
    assert not bot_branch(fake_pick, CHERRY_PICK, UP) and judge(fake_pick, asked) is None
    assert not bot_branch(pr(head_repo=UP, body=SOURCE_LINE), BACKPORT, UP)  # no bot form
