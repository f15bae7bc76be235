"""docs_audit against real git repositories built in tmp_path (and the real mirror when present)."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from backport.docs_audit import (
    NO,
    YES,
    SupportRow,
    audit_docs,
    render_docs_table,
)
from backport.errors import BackportError
from tests.helpers.docs_pages import API, LISTED_PLAIN

ROOT = "docs/zh/api/native_api"
# A local git copy of the real Ascend/pytorch repository, named by the environment.
MIRROR = Path(os.environ.get("BACKPORT_REAL_REPO") or "/nonexistent")


# Entities, a notes column, and the entry in a file not named after the module.
LISTED_ENTITIES = f"""# Misc

### <code><i>class</i></code> torch.distributed.elastic.metrics.MetricHandler

**原生文档**：[torch.distributed.elastic.metrics.MetricHandler](https://example.invalid/h)

| 硬件 | 是否支持 | 备注 |
| --- | --- | --- |
| <term>Board One</term> | &#10004; | |

> <font size="3">emit()</font>

**原生文档**：[torch.distributed.elastic.metrics.MetricHandler.emit](https://example.invalid/e)

| 硬件 | 是否支持 | 备注 |
| --- | --- | --- |
| <term>Board One</term> | &#10007; | &lt;not yet&gt; |

### {API}

| 硬件 | 是否支持 | 备注 |
| --- | :---: | --- |
| <term>Board&nbsp;One</term> | &#10004; | tested &amp; fine |
| <term>Board Two</term> | &#10004; | |
"""

NOT_LISTED = """# torch.distributed.elastic

### torch.distributed.elastic.metrics.configure

| 硬件 | 是否支持 |
| ---- | :----: |
| <term>Board One</term> | ✔ |
"""


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, LANG="C", LC_ALL="C", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


@pytest.fixture
def docs_repo(tmp_path: Path) -> Path:
    """A repository whose HEAD has four docs versions; returns its .git directory."""
    work = tmp_path / "work"
    files = {
        f"{ROOT}/pytorch_2-10-0/torch-distributed-elastic.md": LISTED_PLAIN,
        f"{ROOT}/pytorch_2-9-0/torch-distributed-elastic.md": NOT_LISTED,
        f"{ROOT}/pytorch_2-9-0/torch-distributed.md": "# nothing here\n",
        f"{ROOT}/pytorch_2-7-1/torch-distributed-elastic.md": NOT_LISTED,
        f"{ROOT}/pytorch_2-7-1/misc-apis.md": LISTED_ENTITIES,
        f"{ROOT}/pytorch_2-11-0/torch-distributed-elastic.md": LISTED_PLAIN,
        f"{ROOT}/private_apis.md": LISTED_PLAIN + "\nprivate\n",  # outside any version: ignored
        f"{ROOT}/pytorch_2-11-0/notes.txt": LISTED_PLAIN + "\nnotes\n",  # not markdown: ignored
    }
    for rel, text in files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    _git(work.parent, "init", "-q", "-b", "main", str(work))
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "docs")
    # Remove the 2.11.0 docs on a later commit so that ref selection matters.
    _git(work, "rm", "-q", "-r", f"{ROOT}/pytorch_2-11-0")
    _git(work, "commit", "-q", "-m", "drop 2.11.0")
    return work / ".git"


def test_versions_sorted_numerically_and_classified(docs_repo: Path) -> None:
    entries = audit_docs(docs_repo, "main~1", API)
    assert [e.version for e in entries] == ["2.7.1", "2.9.0", "2.10.0", "2.11.0"]
    assert [e.listed for e in entries] == [True, False, True, True]

    plain = entries[2]
    assert plain.path == f"{ROOT}/pytorch_2-10-0/torch-distributed-elastic.md"
    assert plain.support == [
        SupportRow("Board One", YES, ""),
        SupportRow("Board Two", YES, ""),
        SupportRow("Board Three", NO, ""),
    ]
    assert plain.summary == "是，暂不支持 Board Three"
    assert plain.limits == "only integer values were tried"


def test_entities_notes_and_fallback_file(docs_repo: Path) -> None:
    entry = audit_docs(docs_repo, "main~1", API)[0]
    assert entry.path == f"{ROOT}/pytorch_2-7-1/misc-apis.md"
    assert entry.support == [
        SupportRow("Board One", YES, "tested & fine"),
        SupportRow("Board Two", YES, ""),
    ]
    assert entry.summary == "是"


def test_not_listed_points_at_preferred_file(docs_repo: Path) -> None:
    entry = audit_docs(docs_repo, "main~1", API)[1]
    assert not entry.listed
    assert entry.support == []
    assert entry.summary == "未收录"
    assert entry.path == f"{ROOT}/pytorch_2-9-0/torch-distributed-elastic.md"


def test_ref_selects_tree(docs_repo: Path) -> None:
    assert [e.version for e in audit_docs(docs_repo, "main", API)] == ["2.7.1", "2.9.0", "2.10.0"]


def test_class_heading_and_member_entries(docs_repo: Path) -> None:
    handler = audit_docs(docs_repo, "main", "torch.distributed.elastic.metrics.MetricHandler")
    assert [(e.version, e.listed, e.summary) for e in handler] == [
        ("2.7.1", True, "是"), ("2.9.0", False, "未收录"), ("2.10.0", False, "未收录")]
    emit = audit_docs(docs_repo, "main", "torch.distributed.elastic.metrics.MetricHandler.emit")[0]
    assert emit.support == [SupportRow("Board One", NO, "<not yet>")]
    assert emit.summary == "否"


def test_unknown_ref_is_a_git_error(docs_repo: Path) -> None:
    with pytest.raises(BackportError) as info:
        audit_docs(docs_repo, "no-such-branch", API)
    assert info.value.code == "git"
    assert "no-such-branch" in info.value.message


def test_render_and_json(docs_repo: Path) -> None:
    entries = audit_docs(docs_repo, "main~1", API)
    console = Console(record=True, width=240, file=io.StringIO())
    render_docs_table(entries, console)
    text = console.export_text()
    assert all(f" {e.version} " in text for e in entries)
    for needle in ("2.7.1", "2.10.0", "Board Three", "是，暂不支持 Board Three", "未收录"):
        assert needle in text
    data = json.loads(json.dumps([e.to_dict() for e in entries], ensure_ascii=False))
    assert data[2]["support"][2] == {
        "hardware": "Board Three", "mark": "✘", "supported": False, "note": ""}
    assert data[1]["listed"] is False








@pytest.mark.skipif(not MIRROR.exists(), reason="BACKPORT_REAL_REPO does not name a copy of Ascend/pytorch")
def test_real_mirror_lists_put_metric() -> None:
    entries = audit_docs(MIRROR, "master", API)
    listed = [e.version for e in entries if e.listed]
    print("versions listing put_metric on master:", listed)
    assert {"2.7.1", "2.11.0", "2.12.0"} <= set(listed)
    for entry in entries:
        if entry.listed:
            assert entry.path.endswith("/torch-distributed-elastic.md")
            assert entry.summary == "是，暂不支持 Ascend 950DT"


def _missing(git_dir: Path, rev: str) -> set[str]:
    out = _git(git_dir, "rev-list", "--objects", "--missing=print", f"{rev}^{{tree}}")
    return {line[1:] for line in out.splitlines() if line.startswith("?")}


def test_blobless_clone_fetches_only_what_it_reads(docs_repo: Path, tmp_path: Path) -> None:
    _git(docs_repo, "config", "uploadpack.allowFilter", "true")
    _git(docs_repo, "config", "uploadpack.allowAnySHA1InWant", "true")
    cache = tmp_path / "cache.git"
    _git(tmp_path, "clone", "-q", "--bare", "--filter=blob:none",
         f"file://{docs_repo}", str(cache))
    before = _missing(cache, "main~1")
    assert before, "the clone should be blobless"

    entries = audit_docs(cache, "main~1", API)
    assert [(e.version, e.listed) for e in entries] == [
        ("2.7.1", True), ("2.9.0", False), ("2.10.0", True), ("2.11.0", True)]

    def blob(path: str) -> str:
        return _git(cache, "rev-parse", f"main~1:{path}").strip()

    after = _missing(cache, "main~1")
    # Read: the preferred files, and every file of the versions where those had no entry.
    for path in ("pytorch_2-10-0/torch-distributed-elastic.md", "pytorch_2-7-1/misc-apis.md",
                 "pytorch_2-9-0/torch-distributed.md"):
        assert blob(f"{ROOT}/{path}") not in after
    # Never read: a non-markdown file, and files outside the version directories.
    assert blob(f"{ROOT}/pytorch_2-11-0/notes.txt") in after
    assert blob(f"{ROOT}/private_apis.md") in after


def test_blobless_clone_with_unreachable_origin_is_a_git_error(
        docs_repo: Path, tmp_path: Path) -> None:
    _git(docs_repo, "config", "uploadpack.allowFilter", "true")
    cache = tmp_path / "cache.git"
    _git(tmp_path, "clone", "-q", "--bare", "--filter=blob:none",
         f"file://{docs_repo}", str(cache))
    _git(cache, "remote", "set-url", "origin", f"file://{tmp_path}/gone.git")
    with pytest.raises(BackportError) as info:
        audit_docs(cache, "main", API)
    assert info.value.code == "git"
