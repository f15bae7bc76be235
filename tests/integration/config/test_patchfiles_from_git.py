"""Patch files git itself writes (format-patch, a plain diff, a series on stdout) parse as
`git am` reads them; a symlink out of the tree is refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backport.config.patchfiles import (
    parse_patch,
    read_diff,
    read_patch,
)
from backport.errors import ConfigError

GIT_ENV = {
    **os.environ,
    "LANG": "C",
    "LC_ALL": "C",
    "GIT_AUTHOR_NAME": "A",
    "GIT_AUTHOR_EMAIL": "a@example.com",
    "GIT_COMMITTER_NAME": "A",
    "GIT_COMMITTER_EMAIL": "a@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def parse_patch_text(text: str, display: str = "<patch>") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(subjects, touched paths) of a patch's text, parsed as the loader parses a file."""
    patch = parse_patch(text.encode("utf-8", "surrogateescape"), Path(display))
    return patch.subjects, patch.paths


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "f.txt").write_text("a\nb\n")
    (repo / "d").mkdir()
    (repo / "d" / "old.txt").write_text("x\n")
    (repo / "bin.dat").write_bytes(b"\x00\x01bin")
    (repo / "sp ace.txt").write_text("q\n")
    (repo / "run.sh").write_text("true\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    return repo


def format_patches(repo: Path, out: Path, count: int = 1) -> list[Path]:
    git(repo, "format-patch", "-q", f"-{count}", "-o", str(out))
    return sorted(out.iterdir())


def test_real_format_patch_output(repo: Path, tmp_path: Path) -> None:
    (repo / "f.txt").write_text("a\nb\nc\n")
    git(repo, "mv", "--", "d/old.txt", "d/new.txt")
    (repo / "bin.dat").write_bytes(b"\x00\x02bin2")
    (repo / "sp ace.txt").write_text("w\n")
    (repo / 'tést "q".txt').write_text("u\n")
    (repo / "d" / "link").symlink_to("../f.txt")
    (repo / "run.sh").chmod(0o755)
    (repo / "empty").write_text("")
    (repo / "nonl").write_text("no newline")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "second\n\nbody line\n-- \nnot a signature")
    git(repo, "rm", "-q", "--", "f.txt")
    git(repo, "commit", "-qm", "third")
    first, second = format_patches(repo, tmp_path / "out", 2)
    info = read_patch(first)
    assert info.subjects == ("second",)
    assert info.paths == (
        "bin.dat", "d/link", "d/new.txt", "d/old.txt", "empty", "f.txt", "nonl", "run.sh",
        "sp ace.txt", 'tést "q".txt',
    )  # fmt: skip
    assert read_patch(second).paths == ("f.txt",)


def test_stdout_series_in_one_file(repo: Path, tmp_path: Path) -> None:
    for name in ("one", "two"):
        (repo / f"{name}.py").write_text(name)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"add {name}")
    text = git(repo, "format-patch", "--stdout", "-2")
    subjects, paths = parse_patch_text(text)
    assert subjects == ("add one", "add two")
    assert paths == ("one.py", "two.py")


def test_real_symlink_outside_is_refused(repo: Path, tmp_path: Path) -> None:
    (repo / "d" / "evil").symlink_to("/etc/passwd")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "evil")
    (patch,) = format_patches(repo, tmp_path / "out")
    with pytest.raises(ConfigError) as info:
        read_patch(patch)
    assert "0001-evil.patch:" in str(info.value)
    assert "symbolic link 'd/evil' point to the absolute path '/etc/passwd'" in str(info.value)


def test_what_git_am_needs_from_a_format_patch_file(repo: Path, tmp_path: Path) -> None:
    # One parser serves the loader and git/apply: paths in order, pre-image blobs, the author.
    (repo / "f.txt").write_text("a\nb\nc\n")
    (repo / "d" / "added.txt").write_text("new\n")
    (repo / "sp ace.txt").write_text("w\n")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=Lg Xxx", "-c", "user.email=lg@example.com", "commit", "-qm",
        "change", "--author", "Lg Xxx <lg@example.com>")
    patch = format_patches(repo, tmp_path / "out")[0]
    info = read_patch(patch)
    assert info.paths == ("d/added.txt", "f.txt", "sp ace.txt")
    blob = git(repo, "rev-parse", "HEAD~1:f.txt").strip()
    assert set(info.preimages) == {"f.txt", "sp ace.txt"}  # a new file has no pre-image
    assert blob.startswith(info.preimages["f.txt"])
    assert info.author == ("Lg Xxx", "lg@example.com")
    assert [d.new for d in info.files if d.created] == ["d/added.txt"]
    assert info.data == patch.read_bytes() and len(info.subjects) == 1


def test_a_plain_diff_is_read_too(repo: Path, tmp_path: Path) -> None:
    # git am keeps the diff it stopped on as .git/rebase-apply/patch: no mail headers.
    (repo / "f.txt").write_text("a\nB\n")
    diff = tmp_path / "patch"
    diff.write_text(git(repo, "diff"))
    info = read_diff(diff.read_text())
    assert info.paths == ("f.txt",)
    assert list(info.preimages) == ["f.txt"]
    with pytest.raises(ConfigError, match="does not start with a 'From <sha>' line"):
        read_patch(diff)  # no mail headers, no author: not a patch file of a set
