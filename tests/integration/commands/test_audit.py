"""`backport audit` on a local upstream with the sync bot's and GitCode cherry-pick's merges,
the local forge holding an open backport PR: every state, the JSON, the page, the re-run."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from backport.forge.local import LocalForge
from tests.helpers.project import run_app, run_cli

from .conftest import LINES, TEST, UP, Work, squash


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("audit")
    (root / "work").mkdir()
    w = Work(root / "work")
    shas: dict[str, str] = {}
    w.commit({"torch_npu/a.py": "".join(LINES), "test/test_a.py": TEST}, "root", days=400)
    w.run("branch", "v2.7.1")
    w.commit({"torch_npu/only_master.py": "x = 1\n"}, "master only file", days=300)
    shas["m1"] = w.commit(w.line(1, "value_1 = 'one'\n"), squash(10, "feat-a", "master", "feat: one"), 30)
    shas["m2"] = w.commit(w.line(9, "value_9 = 'three'\n"), squash(12, "feat-b", "master", "feat: three"), 29)
    shas["m3"] = w.commit(w.line(17, "value_17 = 'five'\n"), squash(14, "feat-c", "master", "feat: five"), 28)
    m4_test = TEST + "\n    def test_two(self):\n        self.assertEqual(2, 2)\n"
    shas["m4"] = w.commit({"test/test_a.py": m4_test}, squash(15, "t2", "master", "test: two"), 27)
    shas["m5"] = w.commit({"torch_npu/only_master.py": "x = 2\n"}, squash(16, "om", "master", "fix: only master"), 26)
    shas["m6"] = w.commit({"torch_npu/a.py": (w.path / "torch_npu/a.py").read_text() + "# bump\n"},
                          squash(17, "master", "master", "Update op_plugin commit id"), 25)
    shas["m7"] = w.commit(w.line(25, "value_25 = 'seven'\n"), squash(18, "feat-d", "master", "feat: seven"), 24)
    shas["m8"] = w.commit(w.line(33, "value_33 = 'nine'\n"), squash(19, "feat-e", "master", "feat: nine"), 23)
    shas["m9"] = w.commit(w.line(41, "value_41 = 'eleven'\n"), squash(20, "feat-f", "master", "feat: eleven"), 22)
    shas["m10"] = w.commit(w.line(49, "value_49 = 'forty-nine'\n"),
                           squash(21, "fix-g", "master", "fix: by hand on both"), 21)
    w.run("checkout", "-q", "v2.7.1")
    # the sync bot's PR for !10 (its change written again: another patch-id)
    shas["v1"] = w.commit(w.line(1, "value_1 = 'one'  # synced\n"),
                          squash(11, "sync-pr10-master-to-v2.7.1", "v2.7.1", "[sync] PR-10: feat: one"), 20)
    shas["v2"] = w.commit(w.line(9, "value_9 = 'three'  # picked\n"),
                          squash(13, "cherry-pick-mr-12-1786698435449-auto", "v2.7.1", "feat: three"), 19)
    shas["v3"] = w.commit(w.line(17, "value_17 = 'five'\n"), "feat: five, by hand", 18)  # same patch
    shas["v4"] = w.commit({"test/test_a.py": TEST + "\n    def test_two(self):\n        pass\n"},
                          squash(31, "t2", "v2.7.1", "test: two, written here"), 17)
    shas["v5"] = w.commit(w.line(33, "value_33 = 'NINE'\n"), squash(32, "nine", "v2.7.1", "fix: nine here"), 16)
    shas["v6"] = w.commit(w.line(57, "value_57 = 'twenty'\n"), squash(33, "tw", "v2.7.1", "fix: twenty"), 15)
    # the same fix opened by hand on this branch: its title and file, other lines around it
    shas["v7"] = w.commit(w.line(49, "value_49 = 'forty-nine'  # here\n"),
                          squash(34, "fix-g2", "v2.7.1", "fix: by hand on both"), 14)
    bare = root / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(w.path), str(bare)], check=True)
    subprocess.run(["git", "--git-dir", str(bare), "config", "uploadpack.allowFilter", "true"],
                   check=True)
    project = root / "project"
    (project / "patches").mkdir(parents=True)
    config = {"forge": "local", "upstream": UP, "fork": "lgxxx/pytorch",
              "upstream_url": str(bare), "fork_url": str(root / "fork.git"),
              "environments": {"py": {"python": sys.executable}},
              "branches": {b: {"env": "py"} for b in ("v2.7.1", "v2.12.0", "master")},
              "audit": {"ignore": ["^Update op_plugin commit id"]}}
    (project / "branches.yaml").write_text(yaml.safe_dump(config, sort_keys=False),
                                           encoding="utf-8")
    forge = LocalForge(project / ".backport" / "forge.sqlite", upstream=UP, fork="lgxxx/pytorch")
    # this tool's backport PR: its evidence's source line carries !20 (a mention would not)
    forge.create_pr("backport-eleven", "v2.7.1", "feat: eleven (v2.7.1)",
                    f"Backport of {UP}!20 to v2.7.1.\n\n```text\nSOURCE={UP}!20@{'0' * 40}\n```\n")
    # a mention carries nothing (issue 48 item 4)
    forge.create_pr("see-also", "v2.7.1", "feat: seven, differently", f"参考 {UP}!18, see also !18")
    return {"project": project, "shas": shas, "env": {"BACKPORT_CACHE": str(root / "cache")}}


def audit(upstream: dict, *args: str):
    return run_app(upstream["project"], "audit", *args, env=upstream["env"])  # type: ignore[arg-type]


def by_title(data: dict, branch: str) -> dict[str, dict]:
    return {c["title"]: c for c in data["changes"] if c["branch"] == branch}


def test_every_state_with_its_commit_pr_and_applies(upstream: dict) -> None:
    result = audit(upstream, "--json")
    assert result.code == 0, result.err
    data = result.json()
    shas = upstream["shas"]
    assert data["since"] == (datetime.now(UTC).date() - timedelta(days=90)).isoformat()
    assert data["branches"] == ["v2.7.1", "v2.12.0", "master"]
    changes = by_title(data, "master")
    on = {title: c["on"]["v2.7.1"] for title, c in changes.items()}
    carrier, patch = "carries the change", "same patch-id"
    assert on["feat: one"] == {"state": "landed", "commit": shas["v1"], "why": carrier}  # sync bot
    assert on["feat: three"] == {"state": "landed", "commit": shas["v2"], "why": carrier}  # pick
    assert on["feat: five"] == {"state": "landed", "commit": shas["v3"], "why": patch}
    assert on["test: two"]["state"] == "landed"  # its test already there
    assert shas["v4"].startswith(on["test: two"]["commit"])
    assert on["fix: by hand on both"] == {"state": "landed", "commit": shas["v7"],
                                          "why": "same title, a file in common"}
    assert on["fix: only master"] == {"state": "not-needed"}
    assert on["Update op_plugin commit id"] == {"state": "ignored"}
    assert on["feat: seven"] == {"state": "missing", "applies": True}
    assert on["feat: nine"] == {"state": "missing", "applies": False}
    assert on["feat: eleven"]["state"] == "proposed" and on["feat: eleven"]["pr"] >= 1
    m1 = changes["feat: one"]
    assert (m1["branch"], m1["commit"], m1["pr"], m1["author"]) == ("master", shas["m1"], 10, "Li")
    assert m1["on"]["v2.12.0"] == {"state": "branch-missing"}
    # the other way: the sync bot's change is master's !10, landed there
    older = by_title(data, "v2.7.1")
    synced = older["[sync] PR-10: feat: one"]
    assert synced["on"]["master"] == {"state": "landed", "commit": shas["m1"], "why": carrier}
    assert synced["fix"] == m1["fix"] == shas["m1"]  # one fix, started on master
    assert older["fix: twenty"]["on"]["master"] == {"state": "missing", "applies": True}
    assert "root" not in changes  # older than --since


def test_the_rerun_reads_the_store_and_answers_the_same(upstream: dict) -> None:
    first = audit(upstream, "--json")
    store = next((Path(upstream["env"]["BACKPORT_CACHE"]) / "audit").glob("*.json"))
    kept = json.loads(store.read_text(encoding="utf-8"))
    assert upstream["shas"]["m1"] in kept["patch_ids"]
    assert audit(upstream, "--json").json() == first.json()


def test_offline_reads_no_pr_and_says_so(upstream: dict) -> None:
    audit(upstream, "--json")  # the cache has the branches
    result = audit(upstream, "--offline")
    assert result.code == 0, result.err
    assert "offline: the open PRs were not read" in result.out
    assert "v2.12.0: not in the cache" in result.out
    data = audit(upstream, "--offline", "--json").json()
    assert by_title(data, "master")["feat: eleven"]["on"]["v2.7.1"] == {"state": "missing", "applies": True}


def test_the_summary_and_the_from_pr_arguments(upstream: dict) -> None:
    result = audit(upstream, "--branch", "v2.7.1", "--branch", "master")
    assert result.code == 0, result.err
    assert "  master -> v2.7.1: 5 landed, 1 proposed, 2 missing, 1 not-needed, 1 ignored" in result.out
    assert "Missing on v2.7.1 and applying cleanly (1):" in result.out
    args = audit(upstream, "--missing-on", "v2.7.1", "--format", "from-pr")
    assert args.code == 0 and args.out.split("\n") == ["--from-pr 18", ""]
    assert audit(upstream, "--missing-on", "master", "--format", "from-pr").out.split() == [
        "--from-pr", "33"]


class Rows(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows = 0
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr" and ("data-text", None) not in attrs and any(k == "data-text" for k, _ in attrs):
            self.rows += 1
        if tag == "a":
            self.hrefs.append(dict(attrs).get("href") or "")


def test_the_page_is_written(upstream: dict, tmp_path: Path) -> None:
    page = tmp_path / "audit.html"
    result = audit(upstream, "--html", str(page))
    assert result.code == 0, result.err
    rows = Rows()
    rows.feed(page.read_text(encoding="utf-8"))
    data = audit(upstream, "--json").json()
    assert rows.rows == len({c["fix"] for c in data["changes"]}) < len(data["changes"])
    assert f"https://gitcode.com/{UP}/commit/{upstream['shas']['v1']}" in rows.hrefs


@pytest.mark.parametrize(("args", "said"), [
    (("--since", "last week"), "--since 'last week' is not a date; give it as YYYY-MM-DD"),
    (("--since", "2999-01-01"), "--since 2999-01-01 lies in the future"),
    (("--branch", "v2.7.2"), "--branch v2.7.2 is not a branch of branches.yaml (v2.7.1, v2.12.0, "
                             "master) (did you mean 'v2.7.1'?)"),
    (("--format", "from-pr"), "--format from-pr needs --missing-on B"),
])
def test_bad_input_is_one_sentence_and_exit_2(upstream: dict, args: tuple[str, ...],
                                              said: str) -> None:
    result = audit(upstream, *args)
    assert result.code == 2
    assert result.err.startswith(f"error: {said}") and result.err.count("\n") == 1, result.err


def test_the_command_end_to_end_in_its_own_process(upstream: dict) -> None:
    result = run_cli(upstream["project"], "audit", "--branch", "master", "--branch", "v2.7.1",
                     env=upstream["env"])  # type: ignore[arg-type]
    assert result.code == 0, result.err
    assert result.out.startswith(f"Changes since {(datetime.now(UTC).date() - timedelta(days=90)).isoformat()} on v2.7.1, master:")
