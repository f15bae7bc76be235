"""Issue 48 on a small upstream made here: the same fix under a tagged title, a file moved on
the target, an assertion the target already removed, a subsystem only master has, and one fix
on three branches; each one fix, one row, named once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers.project import run_app

from .conftest import LINES, UP, Work, squash

BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
UTIL = "".join(f"def util_{n}(x):\n    return x + {n}\n\n" for n in range(12))
CHECK = "def check(x):\n" + "".join(f"    y{n} = x * {n}\n" for n in range(10)) + \
    "    assert x > 0\n" + "".join(f"    z{n} = x - {n}\n" for n in range(10)) + "    return x\n"


def edited(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("audit-fixes")
    (root / "work").mkdir()
    w = Work(root / "work")
    a = "".join(LINES)
    w.commit({"torch_npu/a.py": a, "torch_npu/utils/u.py": UTIL, "torch_npu/b.py": CHECK,
              "test/test_a.py": "def test_a():\n    pass\n"}, "root", days=400)
    for branch in BRANCHES[:-1]:
        w.run("branch", branch)
    shas: dict[str, str] = {}
    w.commit({"torch_npu/_inductor/k.py": "K = 1\n"}, "inductor on master", days=300)
    fixed_util = edited(UTIL, "return x + 7\n", "return x + 7 if x else 0\n")
    shas["tagged"] = w.commit({"torch_npu/a.py": edited(a, "value_3 = 3\n", "value_3 = 'three'\n")},
                              squash(40, "t", "master", "fix the cann check - v2.12.0"), 30)
    shas["moved"] = w.commit({"torch_npu/utils/u.py": fixed_util},
                             squash(41, "u", "master", "fix util 7"), 29)
    shas["assert"] = w.commit({"torch_npu/b.py": edited(CHECK, "    assert x > 0\n", "")},
                              squash(42, "b", "master", "drop the positive check"), 28)
    shas["inductor"] = w.commit({"torch_npu/_inductor/k.py": "K = 2\n",
                                 "test/test_k.py": "def test_k():\n    pass\n"},
                                squash(43, "k", "master", "fix inductor k"), 27)
    three = edited(a, "value_40 = 40\n", "value_40 = 'forty'\n")
    shas["three"] = w.commit({"torch_npu/a.py": three}, squash(44, "f", "master", "fix forty"), 26)
    shas["typo"] = w.commit({"torch_npu/a.py": edited(three, "value_60 = 60\n", "value_60 = 'x'\n")},
                            squash(47, "bn", "master", "【fix】batchnorm_check_fix"), 25.5)
    w.run("checkout", "-q", "v2.12.0")
    shas["three-12"] = w.commit({"torch_npu/a.py": three}, squash(
        45, "sync-pr44-master-to-v2.12.0", "v2.12.0", "[sync] PR-44: fix forty"), 25)
    w.run("checkout", "-q", "v2.11.0")
    shas["three-11"] = w.commit({"torch_npu/a.py": edited(a, "value_40 = 40\n",
                                                          "value_40 = 'forty'  # v2.11\n")},
                                squash(46, "cherry-pick-mr-44-1786698435449-auto", "v2.11.0",
                                       "fix forty"), 24)
    w.run("checkout", "-q", "v2.7.1")
    # the util file moved to another folder, the fix already in it (another title, long ago)
    (w.path / "torch_npu/utils/u.py").unlink()
    shas["moved-7"] = w.commit({"torch_npu/old_u/u.py": fixed_util}, "move utils", 200)
    # the assertion removed together with other lines
    shas["assert-7"] = w.commit({"torch_npu/b.py": edited(edited(CHECK, "    assert x > 0\n", ""),
                                                          "    z9 = x - 9\n", "    z9 = x - 99\n")},
                                "rework check", 190)
    # the same fix opened again under its title with a typo, its line adapted
    shas["typo-7"] = w.commit({"torch_npu/a.py": edited(a, "value_60 = 60\n", "value_60 = 'y'\n")},
                              squash(51, "bn7", "v2.7.1", "【fix】batcnnorm_check_fix"), 21)
    a = edited(a, "value_60 = 60\n", "value_60 = 'y'\n")
    # the same fix by hand, another line around it, under the other branch's tag
    tagged = edited(a, "value_3 = 3\n", "value_3 = 'three'\n")
    shas["tagged-7"] = w.commit({"torch_npu/a.py": edited(tagged, "value_5 = 5\n", "value_5 = 'v'\n")},
                                squash(50, "t7", "v2.7.1", "fix the cann check - v2.7.1"), 20)
    bare = root / "upstream.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(w.path), str(bare)], check=True)
    project = root / "project"
    (project / "patches").mkdir(parents=True)
    config = {"forge": "local", "upstream": UP, "fork": "lgxxx/pytorch",
              "upstream_url": str(bare), "fork_url": str(root / "fork.git"),
              "environments": {"py": {"python": sys.executable}},
              "branches": {b: {"env": "py"} for b in BRANCHES}}
    (project / "branches.yaml").write_text(yaml.safe_dump(config, sort_keys=False),
                                           encoding="utf-8")
    return {"project": project, "shas": shas, "env": {"BACKPORT_CACHE": str(root / "cache")}}


def audit(made: dict, *args: str):
    return run_app(made["project"], "audit", *args, env=made["env"])  # type: ignore[arg-type]


def on_v271(made: dict) -> dict[str, dict]:
    result = audit(made, "--json")
    assert result.code == 0, result.err
    return {c["title"]: c for c in result.json()["changes"] if c["branch"] == "master"}


def test_a_tagged_title_with_a_file_in_common_is_landed(made: dict) -> None:
    cell = on_v271(made)["fix the cann check - v2.12.0"]["on"]["v2.7.1"]
    assert cell == {"state": "landed", "commit": made["shas"]["tagged-7"],
                    "why": "same title, a file in common"}


def test_a_fix_already_in_a_moved_file_is_landed(made: dict) -> None:
    cell = on_v271(made)["fix util 7"]["on"]["v2.7.1"]
    assert cell == {"state": "landed", "commit": made["shas"]["moved-7"],
                    "why": "content already there"}


def test_an_assertion_already_removed_is_landed(made: dict) -> None:
    cell = on_v271(made)["drop the positive check"]["on"]["v2.7.1"]
    assert cell == {"state": "landed", "commit": made["shas"]["assert-7"],
                    "why": "content already there"}


def test_a_title_written_again_with_a_file_in_common_is_landed(made: dict) -> None:
    cell = on_v271(made)["【fix】batchnorm_check_fix"]["on"]["v2.7.1"]
    assert cell == {"state": "landed", "commit": made["shas"]["typo-7"],
                    "why": "similar title, a file in common"}


def test_a_subsystem_only_master_has_is_not_needed(made: dict) -> None:
    assert on_v271(made)["fix inductor k"]["on"]["v2.7.1"] == {"state": "not-needed"}


def test_a_fix_on_three_branches_is_one_row_named_once(made: dict, tmp_path: Path) -> None:
    data = audit(made, "--json").json()
    shas = made["shas"]
    keys = {c["commit"]: c["fix"] for c in data["changes"]}
    assert keys[shas["three"]] == keys[shas["three-12"]] == keys[shas["three-11"]] == shas["three"]
    args = audit(made, "--missing-on", "v2.7.1", "--format", "from-pr")
    assert args.code == 0, args.err
    assert args.out.split("\n") == ["--from-pr 46", ""]  # v2.11.0's: the nearest release branch
    summary = audit(made, "--branch", "v2.7.1", "--branch", "v2.11.0", "--branch", "v2.12.0",
                    "--branch", "master").out
    assert "Missing on v2.7.1 and applying cleanly (1):" in summary
    page = tmp_path / "audit.html"
    assert audit(made, "--html", str(page)).code == 0
    html = page.read_text(encoding="utf-8")
    rows = html.split("<tr data-text=")[1:]
    assert sum("fix forty" in row for row in rows) == 1
    assert html.count("<tr data-text=") == len(set(keys.values()))
