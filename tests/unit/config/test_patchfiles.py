"""Patch files parsed from their text: unsafe or broken patches are refused, the shipped one reads."""

from __future__ import annotations

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


def parse_patch_text(text: str, display: str = "<patch>") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(subjects, touched paths) of a patch's text, parsed as the loader parses a file."""
    patch = parse_patch(text.encode("utf-8", "surrogateescape"), Path(display))
    return patch.subjects, patch.paths














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






def test_a_damaged_diff_gives_what_it_could_read(tmp_path: Path) -> None:
    diff = tmp_path / "patch"
    diff.write_text("diff --git a/x.py b/x.py\nindex 1234567..89abcde 100644\n--- a/x.py\n"
                    "+++ b/x.py\n@@ -1,5 +1,5 @@\n-a\n+b\n")
    assert read_diff(diff.read_text()).paths == ("x.py",)


def test_encoded_and_folded_headers_read_as_git_am_reads_them() -> None:
    """git format-patch writes a non-ASCII subject or name RFC 2047-encoded and folds a long
    subject: both read back as the plain text (and the name as the author's)."""
    text = make_patch().replace(
        "From: A U Thor <author@example.com>",
        "From: =?UTF-8?q?Zo=C3=AB_Thor?= <zoe@example.com>",
    ).replace("Subject: [PATCH] test: add put_metric coverage",
              "Subject: [PATCH] =?UTF-8?q?t=C3=A9st:_add?=\n =?UTF-8?q?_coverage?=")
    patch = parse_patch(text.encode(), Path("0001-x.patch"))
    assert patch.subjects == ("tést: add coverage",)
    assert patch.author == ("Zoë Thor", "zoe@example.com")
