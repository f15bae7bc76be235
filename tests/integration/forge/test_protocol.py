"""The Forge protocol, run against the local forge and the GitCode client (fake server)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from backport.errors import BackportError
from backport.forge.base import Forge
from backport.forge.local import LocalForge
from tests.fakes.forge import BASE, BRANCH, FORK, UPSTREAM, make_gitcode, set_state
from tests.fakes.gitcode import FakeGitCode


@dataclass
class Backend:
    """A forge plus the back-door operations only its storage can do."""

    forge: Forge
    make: Any  # () -> a second, independent Forge instance on the same storage
    close: Any  # (number) -> None
    comments: Any  # (number) -> list[str]
    decorations: Any  # (number) -> dict[str, list[str]]
    add_foreign: Any  # (head, base) -> None: a PR from another fork, same branch name
    count_open: Any  # () -> int


def _local_decorations(db: Path, number: int) -> dict[str, list[str]]:
    """What the local forge's table of labels and people holds for PR ``number``."""
    found: dict[str, list[str]] = {"labels": [], "assignees": [], "reviewers": [], "testers": []}
    with contextlib.closing(sqlite3.connect(db)) as conn:
        for role, name in conn.execute("SELECT role, name FROM pr_people WHERE pr = ? "
                                       "ORDER BY role, name", (number,)):
            found[role + "s"].append(name)
    return found


def _local_backend(tmp_path: Path) -> Backend:
    db = tmp_path / "state" / "forge.sqlite"

    def make() -> LocalForge:
        return LocalForge(db, upstream=UPSTREAM, fork=FORK)

    forge = make()

    def add_foreign(head: str, base: str) -> None:
        LocalForge(db, upstream=UPSTREAM, fork="someone/pytorch").create_pr(head, base, "x", "y")

    return Backend(
        forge=forge, make=make,
        close=lambda n: set_state(forge, n, "closed"),
        comments=lambda n: [c.body for c in forge.list_comments(n)],
        decorations=lambda n: _local_decorations(db, n),
        add_foreign=add_foreign,
        count_open=lambda: len([p for p in forge.list_prs("open") if p.head_repo == FORK]),
    )


def _gitcode_backend(server: FakeGitCode, sleeps) -> Backend:
    server.members.add(server.login)  # the contract is for a user allowed to label and assign
    forge = make_gitcode(server, sleeps)

    def close(n: int) -> None:
        server.prs[n].state = "closed"

    def decorations(n: int) -> dict[str, list[str]]:
        pr = server.prs[n]
        return {"labels": pr.labels, "assignees": pr.assignees, "reviewers": pr.reviewers,
                "testers": pr.testers}

    return Backend(
        forge=forge, make=lambda: make_gitcode(server, sleeps), close=close,
        comments=lambda n: [c["body"] for c in server.prs[n].comments],
        decorations=decorations,
        add_foreign=lambda head, base: server.add_pr(head_repo="someone/pytorch", head=head, base=base),
        count_open=lambda: len([p for p in server.open_prs() if p.head_repo == FORK]),
    )


@pytest.fixture(params=["local", "gitcode"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "local":
        return _local_backend(tmp_path)
    server = request.getfixturevalue("server")
    return _gitcode_backend(server, request.getfixturevalue("sleeps"))


def test_create_find_get_list(backend: Backend) -> None:
    forge = backend.forge
    forge.preflight()
    assert forge.find_open_pr(BRANCH, BASE) is None
    pr = forge.create_pr(BRANCH, BASE, "test: add put_metric coverage", "body 1")
    assert pr.number > 0
    assert (pr.head, pr.head_repo, pr.base, pr.state) == (BRANCH, FORK, BASE, "open")
    assert (pr.title, pr.body, pr.draft) == ("test: add put_metric coverage", "body 1", False)
    assert pr.url
    assert forge.find_open_pr(BRANCH, BASE) == pr
    assert forge.get_pr(pr.number) == pr
    assert [p.number for p in forge.list_prs("open")] == [pr.number]
    assert forge.find_open_pr(BRANCH, "v2.11.0") is None
    assert forge.find_open_pr("other", BASE) is None


def test_create_hands_over_the_new_number_and_verify_keeps_the_pr(backend: Backend) -> None:
    numbers: list[int] = []
    pr = backend.forge.create_pr(BRANCH, BASE, "t", "b", on_number=numbers.append)
    assert numbers == [pr.number]
    again = backend.forge.create_pr(BRANCH, BASE, "t", "b", on_number=numbers.append)
    assert again.number == pr.number and numbers == [pr.number]  # found, not opened
    judged = backend.forge.verify_pr(pr.number, BRANCH, BASE)
    assert (judged.number, judged.head, judged.head_repo) == (pr.number, BRANCH, FORK)


def test_repeated_create_returns_the_same_pr(backend: Backend) -> None:
    first = backend.forge.create_pr(BRANCH, BASE, "t", "b")
    second = backend.forge.create_pr(BRANCH, BASE, "t2", "b2")
    third = backend.make().create_pr(BRANCH, BASE, "t3", "b3")
    assert first.number == second.number == third.number
    assert backend.count_open() == 1


def test_update_replaces_title_and_body(backend: Backend) -> None:
    pr = backend.forge.create_pr(BRANCH, BASE, "old", "old body")
    updated = backend.forge.update_pr(pr.number, title="new", body="new body\n<!-- x -->")
    assert (updated.number, updated.title, updated.body) == (pr.number, "new", "new body\n<!-- x -->")
    assert backend.forge.get_pr(pr.number).body == "new body\n<!-- x -->"
    drafted = backend.forge.update_pr(pr.number, title="new", body="b", draft=True)
    assert drafted.draft is True


def test_link_issue_is_idempotent(backend: Backend) -> None:
    pr = backend.forge.create_pr(BRANCH, BASE, "t", "b")
    assert backend.forge.linked_issues(pr.number) == []
    backend.forge.link_issues(pr.number, [3216])
    backend.forge.link_issues(pr.number, [3216])
    assert backend.forge.linked_issues(pr.number) == [3216]


def test_comment_and_decorate_add_without_removing(backend: Backend) -> None:
    pr = backend.forge.create_pr(BRANCH, BASE, "t", "b")
    backend.forge.add_comment(pr.number, "/ci-pytorch")
    assert backend.comments(pr.number) == ["/ci-pytorch"]
    backend.forge.decorate(pr.number, labels=("backport",), reviewers=("alice",), testers=("tom",),
                           assignees=("ann",))
    backend.forge.decorate(pr.number, labels=("tests",), reviewers=("bob",), testers=("tim",))
    deco = backend.decorations(pr.number)
    assert sorted(deco["labels"]) == ["backport", "tests"]
    assert sorted(deco["reviewers"]) == ["alice", "bob"]
    assert sorted(deco["testers"]) == ["tim", "tom"]
    assert deco["assignees"] == ["ann"]


def test_closed_pr_is_not_reused(backend: Backend) -> None:
    pr = backend.forge.create_pr(BRANCH, BASE, "t", "b")
    backend.close(pr.number)
    assert backend.forge.find_open_pr(BRANCH, BASE) is None
    assert backend.forge.get_pr(pr.number).state == "closed"
    again = backend.forge.create_pr(BRANCH, BASE, "t", "b")
    assert again.number != pr.number
    assert {p.number for p in backend.forge.list_prs("all")} >= {pr.number, again.number}
    assert [p.number for p in backend.forge.list_prs("open")] == [again.number]


def test_pr_from_another_fork_with_the_same_branch_is_not_ours(backend: Backend) -> None:
    backend.add_foreign(BRANCH, BASE)
    assert backend.forge.find_open_pr(BRANCH, BASE) is None
    ours = backend.forge.create_pr(BRANCH, BASE, "t", "b")
    assert ours.head_repo == FORK
    assert backend.forge.find_open_pr(BRANCH, BASE) == ours


def test_missing_pr_is_a_forge_error(backend: Backend) -> None:
    backend.forge.create_pr(BRANCH, BASE, "t", "b")
    with pytest.raises(BackportError) as info:
        backend.forge.get_pr(999)
    assert info.value.code == "forge"
    assert "999" in info.value.message


def test_threads_racing_create_open_one_pr(backend: Backend) -> None:
    forges = [backend.make() for _ in range(4)]
    barrier = threading.Barrier(len(forges))
    results: list[int] = []
    errors: list[BaseException] = []

    def run(forge: Forge) -> None:
        try:
            barrier.wait()
            results.append(forge.create_pr(BRANCH, BASE, "t", "b").number)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f,)) for f in forges]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert len(set(results)) == 1 and len(results) == len(forges)
    assert backend.count_open() == 1
