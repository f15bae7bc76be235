"""`backport audit` in a blobless cache: whether a missing change applies reads only the blobs
its patch touches; a blob the upstream cannot give makes that cell's `applies` null with why,
and the summary warns once; `--offline` with nothing in the cache says what to run first."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers.gitrepos import commit_files, git, make_bare, make_repo
from tests.helpers.project import run_app

UP = "Ascend/pytorch"
DAY = 24 * 3600
FILES = {f"pkg/m{n:02}.py": "".join(f"v{n}_{i} = {i}\n" for i in range(20)) for n in range(30)}


def _when(days: float) -> str:
    return f"@{int(time.time() - days * DAY)} +0000"


def _edit(path: str, old: str, new: str) -> dict[str, str | None]:
    return {path: FILES[path].replace(old, new)}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """master and v2.7.1 parted at a root of 30 modules and a data file, in two upstreams: a
    whole one, and one lacking two blobs: v2.7.1's data file (master changes that file) and
    the new version of a module one master change writes."""
    root = tmp_path_factory.mktemp("audit-blobs")
    work = make_repo(root / "work")
    commit_files(work, {**FILES, "data/big.bin": "big v1\n"}, "root", date=_when(400))
    git(work, "branch", "v2.7.1")
    shas = {
        "plugin": _submodule(work, "1" * 40, "Update op_plugin commit id", _when(21)),
        "three": commit_files(work, _edit("pkg/m00.py", "v0_3 = 3", "v0_3 = 'three'"),
                              "fix: three", date=_when(20)),
        "five": commit_files(work, _edit("pkg/m01.py", "v1_5 = 5", "v1_5 = 'five'"),
                             "fix: five", date=_when(19)),
        "big": commit_files(work, {"data/big.bin": "big v2\n"}, "data: big v2", date=_when(18)),
        "lost": commit_files(work, _edit("pkg/m02.py", "v2_7 = 7", "v2_7 = 'lost'"),
                             "fix: its own blob lost", date=_when(17)),
        "test": commit_files(work, {**_edit("pkg/m03.py", "v3_9 = 9", "v3_9 = 'nine'"),
                                    "test/test_m03.py": "def test_nine():\n    pass\n"},
                             "fix: nine, with its test", date=_when(16.5)),
    }
    git(work, "checkout", "--quiet", "v2.7.1")
    shas["v-five"] = commit_files(work, _edit("pkg/m01.py", "v1_5 = 5", "v1_5 = 'FIVE'"),
                                  "v2.7.1: five", date=_when(16))
    shas["v-big"] = commit_files(work, {"data/big.bin": "big on v2.7.1\n"}, "v2.7.1: big",
                                 date=_when(15))
    lost = {git(work, "rev-parse", f"{shas['v-big']}:data/big.bin"),
            git(work, "rev-parse", f"{shas['lost']}:pkg/m02.py")}
    return {"root": root, "shas": shas, "work": work,
            "project": _project(root, "lacking", work, lost), "whole": _project(root, "whole",
                                                                             work, set())}


def _submodule(work: Path, commit: str, message: str, date: str) -> str:
    """Commit a submodule entry (its commit the upstream never has, as GitCode's op-plugin)."""
    git(work, "update-index", "--add", "--cacheinfo", f"160000,{commit},third_party/op-plugin")
    return commit_files(work, {}, message, date=date)


def _project(root: Path, name: str, work: Path, lost: set[str]) -> Path:
    """A project whose upstream holds ``work``'s branches, less the blobs ``lost``."""
    bare = make_bare(root / f"{name}.git")
    git(work, "push", "--quiet", str(bare), "master", "v2.7.1")
    kept = [line.split()[0] for line in git(bare, "rev-list", "--objects", "--all").splitlines()
            if line.split()[0] not in lost]
    git(bare, "pack-objects", "--quiet", "objects/pack/pack", input="\n".join(kept).encode())
    for old in (bare / "objects").glob("??/*"):  # the pushed objects: only the new pack stays
        old.unlink()
    for config in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        git(bare, "config", config, "true")
    project = root / name
    (project / "patches").mkdir(parents=True)
    config = {"forge": "local", "upstream": UP, "fork": "lgxxx/pytorch",
              "upstream_url": f"file://{bare}", "fork_url": str(root / "fork.git"),
              "environments": {"py": {"python": sys.executable}},
              "branches": {b: {"env": "py"} for b in ("v2.7.1", "master")}}
    (project / "branches.yaml").write_text(yaml.safe_dump(config, sort_keys=False),
                                           encoding="utf-8")
    return project


def _audit(upstream: dict, cache: Path, *args: str, project: str = "project",
           trace: Path | None = None):
    env = {"BACKPORT_CACHE": str(cache)}
    if trace is not None:  # every git process the run starts, the upstream's included
        env["GIT_TRACE2_EVENT"] = str(trace)
    return run_app(upstream[project], "audit", *args, env=env)


def _cache_repo(cache: Path) -> Path:
    return next(p for p in cache.iterdir() if (p / "objects").is_dir())


def _blobs_held(repo: Path) -> set[str]:
    out = git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)")
    return {line.split()[0] for line in out.splitlines() if line.endswith(" blob")}


def test_a_blob_that_cannot_be_read_makes_applies_null_with_why_and_one_warning(
        upstream: dict, tmp_path: Path) -> None:
    result = _audit(upstream, tmp_path / "cache", "--json")
    assert result.code == 0, result.err
    shas = upstream["shas"]
    cells = {c["commit"]: c["on"] for c in result.json()["changes"]}
    assert cells[shas["three"]]["v2.7.1"] == {"state": "missing", "applies": True}
    assert cells[shas["five"]]["v2.7.1"] == {"state": "missing", "applies": False}
    big = cells[shas["big"]]["v2.7.1"]
    assert big["state"] == "missing" and big["applies"] is None
    assert "v2.7.1's blob" in big["why"] and "data/big.bin" in big["why"]
    assert "the upstream does not have it" in big["why"]
    for own in (cells[shas["lost"]]["v2.7.1"], cells[shas["v-big"]]["master"]):
        assert own["state"] == "missing" and own["applies"] is None
        assert own["why"].startswith("its blob ") and "could not be read" in own["why"]
    unknown = sum(cell.get("applies", False) is None for on in cells.values()
                  for cell in on.values())
    warnings = [line for line in result.err.splitlines() if line]
    assert len(warnings) == 1 and warnings[0].startswith(
        f"warning: whether {unknown} missing change(s) apply is not known"), result.err


def test_deciding_whether_a_change_applies_fetches_only_the_blobs_it_touches(
        upstream: dict, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    trace = tmp_path / "trace.json"
    assert _audit(upstream, cache, "--json", project="whole", trace=trace).code == 0
    work = upstream["work"]
    touched = {"pkg/m00.py", "pkg/m01.py", "pkg/m02.py", "pkg/m03.py", "data/big.bin"}
    untouched = {git(work, "rev-parse", f"{branch}:{path}") for branch in ("master", "v2.7.1")
                 for path in FILES if path not in touched}
    held = _blobs_held(_cache_repo(cache))
    assert held and not held & untouched
    # the branches' listing and fetch, then one request for the blobs the changes' diffs
    # read (here the targets' versions of the touched paths are among them): a submodule's
    # commit asked with them would fail that request, and git would fetch each blob alone
    requests = [line for line in trace.read_text(encoding="utf-8").splitlines()
                if '"event":"start"' in line and "upload-pack" in line]
    assert len(requests) <= 3, len(requests)
    again = _audit(upstream, cache, "--json", project="whole")  # the re-run fetches nothing more
    assert again.code == 0 and _blobs_held(_cache_repo(cache)) == held


def test_offline_with_nothing_in_the_cache_says_what_to_run_first(upstream: dict,
                                                                  tmp_path: Path) -> None:
    result = _audit(upstream, tmp_path / "empty", "--offline")
    assert result.code == 2, result.out
    assert result.err == ("error: --offline: the cache holds none of v2.7.1, master; run "
                          "`backport audit` once without --offline to fetch them\n")


def test_a_blob_the_upstream_lacks_hides_no_other_file_from_the_content_rule(
        tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """v2.7.1 holds master's "fix: z" in its own commit (another title, another patch-id), and
    lacks the blob of its own a.py, which master's "fix: a" changes: the content rule reads both
    files of v2.7.1 in a blobless cache; the blob git cannot fetch must not end that read."""
    root = tmp_path_factory.mktemp("audit-content-lost")
    work = make_repo(root / "work")
    lines = "".join(f"setting_{i} = {i}\n" for i in range(20))
    commit_files(work, {"pkg/a.py": lines, "pkg/z.py": lines}, "root", date=_when(400))
    git(work, "branch", "v2.7.1")
    fixed = "setting_3 = compute_the_third_setting_from_the_environment()\n"
    fix_z = commit_files(work, {"pkg/z.py": lines.replace("setting_3 = 3\n", fixed)},
                         "fix: z", date=_when(20))
    commit_files(work, {"pkg/a.py": lines.replace("setting_5 = 5\n", "setting_5 = 'five'\n")},
                 "fix: a", date=_when(19))
    git(work, "checkout", "--quiet", "v2.7.1")
    ported = lines.replace("setting_3 = 3\n", fixed).replace("setting_18 = 18\n",
                                                             "setting_18 = 'v2.7.1 only'\n")
    commit_files(work, {"pkg/z.py": ported}, "v2.7.1: compute the third setting",
                 date=_when(18))
    own_a = commit_files(work, {"pkg/a.py": lines + "local_only = True\n"},
                         "v2.7.1: a local setting", date=_when(17))
    lost = {git(work, "rev-parse", f"{own_a}:pkg/a.py")}
    upstream = {"project": _project(root, "lacking", work, lost)}
    result = _audit(upstream, tmp_path / "cache", "--json")
    assert result.code == 0, result.err
    cell = next(c["on"]["v2.7.1"] for c in result.json()["changes"] if c["commit"] == fix_z)
    assert cell["state"] == "landed" and cell["why"] == "content already there", (cell, result.err)
