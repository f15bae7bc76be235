"""Patch files: real git format-patch output parses; unsafe or broken patches are refused."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backport.config.patchfiles import (
    parse_patch,
    read_diff,
    read_patch,
    unquote_git_path,
)
from backport.errors import ConfigError
from tests.helpers.config_samples import make_patch

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
    patch = parse_patch(text.encode("utf-8", "surrogateescape"), Path(display), display)
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


def test_the_shipped_put_metric_patch() -> None:
    patch = (
        Path(__file__).parents[3]
        / "patches"
        / "put_metric"
        / "0001-test-add-put_metric-coverage.patch"
    )
    if not patch.exists():
        pytest.skip("patches/put_metric is not in this checkout")
    info = read_patch(patch)
    assert info.subjects == ("test: add put_metric coverage",)
    assert info.paths == ("test/distributed/elastic/metrics/test_metrics_api.py",)


def _diff(path_a: str, path_b: str | None = None, extra: str = "", plus: str = "+x\n") -> str:
    path_b = path_b or path_a
    return (
        f"diff --git a/{path_a} b/{path_b}\n{extra}"
        f"--- a/{path_a}\n+++ b/{path_b}\n@@ -1 +1,2 @@\n y\n{plus}"
    )


def _symlink(path: str, target: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1111111\n"
        f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


BAD = [
    (
        "no-from-line",
        "Subject: x\n\ndiff --git a/x b/x\n",
        1,
        "does not start with a 'From <sha>' line",
    ),
    (
        "no-author",
        make_patch().replace("From: A U Thor <author@example.com>\n", ""),
        1,
        "has no 'From:' header",
    ),
    (
        "no-subject",
        make_patch().replace("Subject: [PATCH] test: add put_metric coverage\n", ""),
        1,
        "no 'Subject:'",
    ),
    ("no-diff", make_patch(body="\n"), 1, "contains no diff (a cover letter or an empty commit?)"),
    (
        "absolute",
        make_patch(body=_diff("/etc/passwd".lstrip("/")).replace("a/etc", "a//etc")),
        10,
        "is absolute",
    ),
    ("dotdot", make_patch(body=_diff("x/../../y")), 10, "leaves the repository"),
    (
        "dotgit",
        make_patch(body=_diff(".git/hooks/post-checkout")),
        10,
        "lies inside a .git directory",
    ),
    (
        "dotgit-nested",
        make_patch(body=_diff("sub/.GIT/config")),
        10,
        "lies inside a .git directory",
    ),
    (
        "rename-to-dotgit",
        make_patch(
            body=(
                "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to .git/config\n"
            )
        ),
        13,
        "touches '.git/config'",
    ),
    (
        "plusplus-only",
        make_patch(body=_diff("ok.py").replace("+++ b/ok.py", "+++ b/../ok.py")),
        12,
        "touches '../ok.py'",
    ),
    (
        "symlink-absolute",
        make_patch(body=_symlink("lnk", "/etc/shadow")),
        16,
        "absolute path '/etc/shadow'",
    ),
    (
        "symlink-escape",
        make_patch(body=_symlink("a/lnk", "../../up")),
        16,
        "point outside the repository",
    ),
    ("symlink-dotgit", make_patch(body=_symlink("a/lnk", "../.git/config")), 16, "point into .git"),
    (
        "truncated-hunk",
        make_patch(body=_diff("f.py").replace(" y\n+x\n", " y\n")).split("-- \n")[0],
        14,
        "ends inside a hunk",
    ),
    (
        "hunk-too-short",
        make_patch(body=_diff("f.py").replace("@@ -1 +1,2 @@", "@@ -1,3 +1,4 @@")),
        17,
        "ends before its header's line count",
    ),
    (
        "bad-hunk-header",
        make_patch(body=_diff("f.py").replace("@@ -1 +1,2 @@", "@@ -x +1 @@")),
        13,
        "malformed hunk header",
    ),
    (
        "no-prefix",
        make_patch(body="diff --git x.py x.py\n--- x.py\n+++ x.py\n@@ -1 +1 @@\n-a\n+b\n"),
        10,
        "lacks the 'a/' prefix",
    ),
    ("bad-quote", make_patch(body='diff --git "a/x\\q" "b/x"\n'), 10, "bad escape"),
    (
        "unterminated-quote",
        make_patch(body='diff --git "a/x b/x\n'),
        10,
        "unterminated quoted path",
    ),
]


@pytest.mark.parametrize(("text", "line", "part"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_patches(text: str, line: int, part: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_patch_text(text, "0001-x.patch")
    message = str(info.value)
    assert message.startswith(f"0001-x.patch:{line}: "), message
    assert part in message, message


def test_safe_relative_symlink_is_accepted() -> None:
    _subjects, paths = parse_patch_text(make_patch(body=_symlink("a/b/lnk", "../c")))
    assert paths == ("a/b/lnk",)


def test_empty_and_huge_files(tmp_path: Path) -> None:
    empty = tmp_path / "0001-empty.patch"
    empty.write_text("\n\n")
    with pytest.raises(ConfigError, match="0001-empty.patch is empty"):
        read_patch(empty)
    huge = tmp_path / "0002-huge.patch"
    with huge.open("wb") as fh:
        fh.truncate((16 << 20) + 10)
    with pytest.raises(ConfigError, match="larger than 16 MiB"):
        read_patch(huge)


def test_crlf_patch() -> None:
    subjects, paths = parse_patch_text(make_patch().replace("\n", "\r\n"))
    assert paths == ("test/distributed/elastic/metrics/test_metrics_api.py",)


@pytest.mark.parametrize(
    ("quoted", "expected"),
    [('"a/t\\303\\251st"', "a/tést"), ('"a\\"b\\\\c\\tq"', 'a"b\\c\tq'), ('"x" tail', "x")],
)
def test_unquote(quoted: str, expected: str) -> None:
    assert unquote_git_path(quoted)[0] == expected


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
    assert info.data == patch.read_bytes() and info.commits == 1


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


def test_a_damaged_diff_gives_what_it_could_read(tmp_path: Path) -> None:
    diff = tmp_path / "patch"
    diff.write_text("diff --git a/x.py b/x.py\nindex 1234567..89abcde 100644\n--- a/x.py\n"
                    "+++ b/x.py\n@@ -1,5 +1,5 @@\n-a\n+b\n")
    assert read_diff(diff.read_text()).paths == ("x.py",)
