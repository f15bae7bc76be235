"""The audit's decision on small synthetic facts: which rule wins, and how a commit names a PR."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from backport.audit.model import Audit, Cell, Change
from backport.audit.page import from_pr_arguments
from backport.audit.rules import (
    classify,
    folders_of,
    ignored,
    is_test_path,
    lacks_all,
    same_files,
    titled_commit,
)
from backport.forge import PullRequest
from backport.git.squash_message import squash_number
from backport.pipeline.proposed import carries
from backport.pipeline.proposed import commit_carries as carried
from backport.titles import title_key

UP = "Ascend/pytorch"


def squash(number: int, head: str, base: str, title: str, body: str = "") -> str:
    """A GitCode squash message of PR ``number``."""
    return (f"{title}\n\n# message auto-generated for no-merge-commit merge:\n!{number} merge "
            f"{head} into {base}\n\n{title}\n\nDescription: {body}\n\nSee merge request: "
            f"{UP}!{number}\n")


def change(pr: int | None = 7, commit: str = "c" * 40, title: str = "fix: a thing") -> Change:
    return Change(branch="master", commit=commit, pr=pr, title=title, date="2026-01-01",
                  author="a", message=squash(pr or 0, "feat", "master", title))


@dataclass
class Fake:
    """Facts as plain values; ``asked`` records which were asked."""

    reach: bool = False
    patch: str = ""
    carrier_commit: str = ""
    ignore: bool = False
    titled: str = ""
    tests: str = ""
    pr: int | None = None
    lacks: bool = False
    asked: list[str] = field(default_factory=list)

    def reachable(self, change: Change, target: str) -> bool:
        self.asked.append("reachable")
        return self.reach

    def same_patch(self, change: Change, target: str) -> str:
        self.asked.append("same_patch")
        return self.patch

    def carrier(self, change: Change, target: str) -> str:
        self.asked.append("carrier")
        return self.carrier_commit

    def same_title(self, change: Change, target: str) -> str:
        self.asked.append("same_title")
        return self.titled

    def ignored(self, change: Change) -> bool:
        self.asked.append("ignored")
        return self.ignore

    def tests_there(self, change: Change, target: str) -> str:
        self.asked.append("tests_there")
        return self.tests

    def proposed(self, change: Change, target: str) -> int | None:
        self.asked.append("proposed")
        return self.pr

    def lacks_files(self, change: Change, target: str) -> bool:
        self.asked.append("lacks_files")
        return self.lacks


def test_landed_by_each_rule_names_the_carrying_commit() -> None:
    c = change()
    assert classify(c, "v2.7.1", Fake(reach=True)).to_json() == {
        "state": "landed", "commit": c.commit, "why": "same commit"}
    assert classify(c, "v2.7.1", Fake(patch="p" * 40)).commit == "p" * 40
    assert classify(c, "v2.7.1", Fake(carrier_commit="s" * 40)).commit == "s" * 40
    assert classify(c, "v2.7.1", Fake(titled="t" * 40)).commit == "t" * 40
    assert classify(c, "v2.7.1", Fake(tests="abc123def")).to_json() == {
        "state": "landed", "commit": "abc123def", "why": "tests already there"}


def test_the_order_decides_and_later_facts_are_not_asked() -> None:
    facts = Fake(patch="p" * 40, ignore=True, pr=9, lacks=True)
    assert classify(change(), "v2.7.1", facts).state == "landed"
    assert facts.asked == ["reachable", "same_patch"]
    facts = Fake(ignore=True, titled="t" * 40, tests="abc", pr=9)
    assert classify(change(), "v2.7.1", facts).state == "ignored"  # each branch's own bump
    assert "same_title" not in facts.asked and "tests_there" not in facts.asked
    assert classify(change(), "v2.7.1", Fake(pr=9, lacks=True)).to_json() == {
        "state": "proposed", "pr": 9}
    assert classify(change(), "v2.7.1", Fake(lacks=True)).state == "not-needed"
    missing = classify(change(), "v2.7.1", Fake())
    assert missing.state == "missing" and missing.applies is None
    assert replace(missing, applies=True).to_json() == {"state": "missing", "applies": True}


def test_a_squash_message_is_known_by_its_own_pr() -> None:
    assert squash_number(squash(45103, "v2.11.0", "v2.11.0", "Update op_plugin commit id")) == 45103
    assert squash_number("fix: no squash\n\nsee !12\n") is None
    # the PR's own text may quote another PR's trailer; GitCode writes its own last
    quoting = squash(20, "feat", "master", "t", body=f"See merge request: {UP}!19")
    assert squash_number(quoting) == 20


def test_the_sync_bot_and_cherry_pick_are_carried_and_a_mention_is_not() -> None:
    sync = squash(44833, "sync-pr43883-2.7uce-to-v2.11.0", "v2.11.0",
                  "[sync] PR-43883: fix repair addresses")
    assert carried(sync, UP, "v2.11.0") == {43883}
    short = squash(36752, "sync-pr36613-master", "master", "fix: short sync branch")
    assert carried(short, UP, "master") == {36613}
    pick = squash(44585, "cherry-pick-mr-44584-1786698435449-auto", "v2.11.0", "fix: x")
    assert carried(pick, UP, "v2.11.0") == {44584}
    # a mention in prose carries nothing (issue 47 item 6): "see also !N", "参考 !N"
    for prose in ("the same as !41 on v2.7.1", "see also !41", "参考 !41"):
        assert carried(squash(50, "fix/y", "master", "fix: y", body=prose), UP, "master") == set()
    # its own number, a longer number and another repository's !N are not carried
    other = squash(51, "fix/z", "master", "fix: z", body="see other/repo!42 and path/x!43")
    assert carried(other, UP, "master") == set()
    # the sync bot's branch for another target says nothing of this one
    wrong = squash(52, "sync-pr43-v2.7.1-to-v2.12.0", "master", "t")
    assert carried(wrong, UP, "master") == set()


def test_not_needed_means_only_files_the_target_lacks() -> None:
    files = {"torch_npu/a.py", "test/test_a.py"}
    folders = folders_of(files)
    assert folders == {"", "torch_npu", "test"}
    assert lacks_all(["torch_npu/gone.py"], [], files, folders)
    assert not lacks_all(["torch_npu/a.py", "torch_npu/gone.py"], [], files, folders)
    assert not lacks_all([], ["test/test_new.py"], files, folders)  # a new test in a folder there
    assert lacks_all([], ["third_party/new/x.py"], files, folders)
    assert not lacks_all([], [], files, folders)


def test_a_hand_port_shares_the_title_and_exactly_the_files() -> None:
    assert title_key("fix: add  cann Version judge ", []) == "fix: add cann version judge"
    assert title_key("[feat] fix: add cann version judge", []) != "fix: add cann version judge"
    assert same_files({"a.py", "b.py"}, {"b.py", "a.py"})


def test_a_hand_port_with_one_file_more_or_less_is_the_same_change() -> None:
    # the port adds a test or a test_upstream patch; or leaves out a docs file the branch lacks
    assert same_files({"a.cpp", "a.h"}, {"a.cpp", "a.h", "test/test_a.py"})
    assert same_files({"a.cpp", "a.h", "docs/a.md"}, {"a.cpp", "a.h"})
    assert same_files({"a.cpp"}, {"a.cpp", "b.cpp", "c.cpp"})


def test_same_title_but_other_files_is_not_the_same_change() -> None:
    assert not same_files({"a.cpp", "a.h"}, {"test/test_a.py"})  # disjoint: the follow-up UT
    assert not same_files({"a.cpp", "b.cpp"}, {"b.cpp", "c.cpp"})  # neither holds the other
    assert not same_files(set(), {"a.cpp"})
    assert not same_files(set(), set())


def test_the_exact_files_win_then_the_oldest_that_contains_or_is_contained() -> None:
    files = frozenset({"a.cpp", "a.h"})
    ut, wider, exact = frozenset({"test/test_a.py"}), files | {"test/test_a.py"}, files
    assert titled_commit(files, [(ut, "u" * 40), (wider, "w" * 40), (exact, "e" * 40)]) == "e" * 40
    assert titled_commit(files, [(ut, "u" * 40), (wider, "w" * 40)]) == "w" * 40
    assert titled_commit(files, [(ut, "u" * 40)]) == ""
    assert titled_commit(files, []) == ""


def test_ignore_patterns_are_searched_in_the_title() -> None:
    patterns = ("^Update (op_plugin|torchair) commit id",)
    assert ignored("Update op_plugin commit id", patterns)
    assert not ignored("fix: Update op_plugin commit id", patterns)
    assert not ignored("anything", ())


def test_from_pr_arguments_are_the_missing_ones_that_apply_and_name_a_pr() -> None:
    def one(pr: int | None, cell: Cell, date: str) -> Change:
        c = Change("master", f"{pr or 0:040d}", pr, "t", date, "a")
        c.on["v2.7.1"] = cell
        return c
    audit = Audit("2026-01-01", ("v2.7.1", "master"), (
        one(3, Cell("missing", applies=True), "2026-02-02"),
        one(2, Cell("missing", applies=True), "2026-01-02"),
        one(4, Cell("missing", applies=False), "2026-01-03"),
        one(None, Cell("missing", applies=True), "2026-01-04"),
        one(5, Cell("landed", commit="x"), "2026-01-05")))
    assert from_pr_arguments(audit, "v2.7.1") == ["--from-pr 2", "--from-pr 3"]
    assert audit.to_json()["changes"][0] == {
        "branch": "master", "commit": f"{3:040d}", "pr": 3, "title": "t", "date": "2026-02-02",
        "author": "a", "on": {"v2.7.1": {"state": "missing", "applies": True}},
        "fix": f"{3:040d}"}


def test_a_mention_carries_nothing() -> None:
    # issue 48 item 4: "see also !N" / "参考 !N" in a description never makes N landed there
    for body in ("see also !41", "参考 !41", "the same as !41 on v2.7.1", f"cf. {UP}!41"):
        mention = squash(50, "fix/y", "master", "fix: y", body=body)
        assert carried(mention, UP, "master") == set(), body
    open_pr = PullRequest(number=60, url="", title="fix: y", body="参考 !41", head="y",
                          head_repo="someone/pytorch", base="v2.7.1", state="open")
    assert carries(open_pr, 41, UP, "v2.7.1") is None
    synced = PullRequest(number=61, url="", title="[sync] PR-41: fix: y", body="", head="y",
                         head_repo=UP, base="v2.7.1", state="open")
    assert carries(synced, 41, UP, "v2.7.1") is not None


def test_not_needed_judges_the_code_not_the_tests_it_adds() -> None:
    # issue 48 item 3: a fix of a subsystem only master has, its new test in a folder the
    # target has, is not needed there
    files = {"torch_npu/a.py", "test/test_a.py"}
    folders = folders_of(files)
    assert lacks_all(["torch_npu/_inductor/k.py"], ["test/test_k.py"], files, folders)
    assert lacks_all(["torch_npu/_inductor/k.py", "test/test_a.py"], [], files, folders)
    assert not lacks_all(["torch_npu/a.py"], ["test/test_k.py"], files, folders)
    assert not lacks_all([], ["torch_npu/new.py", "test/test_new.py"], files, folders)
    # a change of tests only is judged by its tests
    assert not lacks_all(["test/test_a.py"], [], files, folders)
    assert lacks_all(["test/_inductor/test_k.py"], [], files, folders)
    assert is_test_path("test/x/helpers.py") and is_test_path("torch_npu/test_utils.py")
    assert not is_test_path("torch_npu/testing_tools.py")


def test_a_tagged_title_with_a_file_in_common_is_the_same_fix() -> None:
    # issue 48 item 2: the same fix opened by hand on each branch under a tagged title
    branches = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
    pairs = [("fix the cann check - v2.12.0", "fix the cann check - v2.7.1"),
             ("[feat][v2.12.0]add npu graph", "[feat]add npu graph"),
             ("fix benchmark README issue master", "fix benchmark README issue v2.11"),
             ("[master] fix dump_v2.11", "fix dump")]
    for one, other in pairs:
        assert title_key(one, branches) == title_key(other, branches), (one, other)
    assert title_key("fix a", branches) != title_key("fix b", branches)
    files = frozenset({"a.cpp", "b.cpp"})
    assert titled_commit(files, [(frozenset({"b.cpp", "c.cpp"}), "o" * 40)]) == "o" * 40
    assert titled_commit(files, [(frozenset({"test/test_a.py"}), "u" * 40)]) == ""
