"""`backport new`: turn one commit or an ``A..B`` range into a numbered ``git format-patch`` set."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from backport.errors import BackportError
from backport.git.run import git
from backport.redact import redact

# Settings that would make format-patch output something `git am` cannot read back.
_FORMAT_CONFIG = (
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
)
# Binary files as binary patches, renames as renames, full blob ids: what `git am -3` needs to
# reproduce the commit byte for byte whatever the user's diff configuration says.
_FORMAT_OPTIONS = ("--binary", "--full-index", "--find-renames", "--no-ext-diff", "--no-textconv")
_TEST_DIRS = ("test", "tests")
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _resolve(repo: Path, rev: str) -> str:
    """Full sha of the commit ``rev`` names; BackportError("usage") when it names none."""
    if not rev or rev.startswith("-"):
        raise BackportError("usage", redact(f"invalid revision {rev!r} for {repo}."))
    out = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
              cwd=repo, check=False)
    if not out.ok:
        shown = Path(os.path.abspath(repo))
        if not git(["rev-parse", "--git-dir"], cwd=repo, check=False).ok:
            raise BackportError("usage", redact(f"{shown} is not a git repository, so revision "
                                                f"{rev!r} cannot be read"))
        raise BackportError("usage", redact(f"revision {rev!r} is not a commit in the "
                                            f"repository {shown}"))
    return out.stdout.strip()


def _resolve_both(repo: Path, base: str, tip: str) -> tuple[str, str]:
    """Full shas of the commits ``base`` and ``tip`` name, from one git process when both are
    commits (else each asked alone, for the error that names the one that is not)."""
    for rev in (base, tip):
        if not rev or rev.startswith("-"):
            raise BackportError("usage", redact(f"invalid revision {rev!r} for {repo}."))
    # No --end-of-options: without --verify git prints it back; neither end starts with "-".
    out = git(["rev-parse", f"{base}^{{commit}}", f"{tip}^{{commit}}"], cwd=repo, check=False)
    shas = out.stdout.split()
    if out.ok and len(shas) == 2 and all(_FULL_SHA.fullmatch(sha) for sha in shas):
        return shas[0], shas[1]
    return _resolve(repo, base), _resolve(repo, tip)


def _split(repo: Path, rev: str) -> tuple[str | None, str]:
    """(base sha or None, tip sha) of a single commit or an ``A..B`` range."""
    if "..." in rev:
        raise BackportError("usage", redact(f"revision {rev!r} must be one commit or an A..B range, not A...B."))
    if ".." in rev:
        base, _, tip = rev.partition("..")
        return _resolve_both(repo, base or "HEAD", tip or "HEAD")
    return None, _resolve(repo, rev)


def commits(repo: Path, rev: str) -> list[str]:
    """The commits ``rev`` selects, oldest first; a range with no commits or with merges is refused."""
    return _selected(repo, rev, *_split(repo, rev))


def _selected(repo: Path, rev: str, base: str | None, tip: str) -> list[str]:
    """`commits` of ``rev``, its ends already resolved to ``base`` (None: one commit) and ``tip``."""
    if base is None:
        return [tip]
    out = git(["rev-list", "--reverse", "--parents", f"{base}..{tip}", "--"], cwd=repo)
    rows = [line.split() for line in out.stdout.splitlines() if line.strip()]
    if not rows:
        raise BackportError("usage", redact(f"range {rev!r} selects no commits in {repo}."))
    merges = [row[0][:12] for row in rows if len(row) > 2]
    if merges:
        raise BackportError(
            "usage", redact(f"range {rev!r} contains merge commit {merges[0]}, which format-patch cannot export."))
    return [row[0] for row in rows]


def _rev_args(repo: Path, rev: str) -> list[str]:
    return _as_args(*_split(repo, rev))


def _as_args(base: str | None, tip: str) -> list[str]:
    """The revision arguments of git log / format-patch for resolved ends (see `_split`)."""
    return ["-1", tip] if base is None else [f"{base}..{tip}"]


def export_patch_set(repo: Path, rev: str, out_dir: Path, *, force: bool) -> list[Path]:
    """Write ``rev`` (a commit or an ``A..B`` range) as ``0001-….patch`` files into ``out_dir``.

    Author, date and message are kept exactly as committed. Existing ``*.patch`` files in
    ``out_dir`` are refused unless ``force``, which removes them first so no stale patch of an
    older, longer set survives. Index lines carry full blob ids so ``git am -3`` can fetch the
    preimage on demand in a blobless clone. Returns the written files in application order.
    """
    repo = Path(repo)
    out_dir = Path(out_dir)
    ends = _split(repo, rev)  # resolved once: the commits and format-patch both take them
    selected = _selected(repo, rev, *ends)
    existing = sorted(out_dir.glob("*.patch")) if out_dir.is_dir() else []
    if existing and not force:
        raise BackportError(
            "usage", f"{out_dir} already holds {len(existing)} patch file(s); use --force to replace them.")
    if out_dir.exists() and not out_dir.is_dir():
        raise BackportError("usage", f"{out_dir} exists and is not a directory.")
    for old in existing:
        old.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = git([*_FORMAT_CONFIG, "format-patch", *_FORMAT_OPTIONS, "-o", str(out_dir.resolve()),
               *_as_args(*ends), "--"], cwd=repo)
    written = [Path(line.strip()) for line in out.stdout.splitlines() if line.strip()]
    if len(written) != len(selected):
        raise BackportError(
            "git", f"git format-patch wrote {len(written)} patch(es) for {len(selected)} commit(s) of {rev!r}.")
    return written


def left_paths(changes: Iterable[tuple[str | None, str | None]]) -> list[str]:
    """The one rule of which files a series leaves behind, from its file changes in order
    (path before, path after; None for the side of a new or a deleted file): a path a later
    change deletes or renames away is dropped, a rename's new path counts; in the order each
    was first left."""
    left: dict[str, None] = {}
    for old, new in changes:
        if old and old != new:
            left.pop(old, None)
        if new:
            left.setdefault(new)
    return list(left)


def touched_files(repo: Path, rev: str) -> list[str]:
    """Every path the commits of ``rev`` add or change as they leave them (:func:`left_paths`:
    a renamed file by its new path, a deleted one not at all), in order."""
    args = ["log", "--format=", "--name-status", "-z", "--no-renames", "--reverse",
            *_rev_args(repo, rev), "--"]
    out = git(args, cwd=Path(repo))
    fields = [f.strip("\n") for f in out.stdout.split("\0")]
    fields = [f for f in fields if f]
    changes = [(None if status.startswith("A") else path, None if status.startswith("D") else path)
               for status, path in zip(fields[::2], fields[1::2], strict=False)]
    return left_paths(changes)


def is_test_file(path: str) -> bool:
    """True for paths under a top-level ``test/`` or ``tests/`` and for ``test_*.py`` / ``*_test.py``."""
    p = PurePosixPath(path)
    if p.parts and p.parts[0] in _TEST_DIRS and len(p.parts) > 1:
        return True
    return p.suffix == ".py" and (p.name.startswith("test_") or p.stem.endswith("_test"))


def test_files(paths: Iterable[str]) -> list[str]:
    """The test files among ``paths``, in their order, without duplicates."""
    return list(dict.fromkeys(p for p in paths if is_test_file(p)))


test_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported


def first_subject(repo: Path, rev: str) -> str:
    """Subject line of the first (oldest) commit ``rev`` selects."""
    first = commits(repo, rev)[0]
    return git(["log", "-1", "--format=%s", first, "--"], cwd=Path(repo)).stdout.strip()


def file_at(repo: Path, rev: str, path: str) -> str | None:
    """The text of ``path`` after the last commit ``rev`` selects; None when it was deleted."""
    last = commits(repo, rev)[-1]
    out = git(["show", f"{last}:{path}"], cwd=Path(repo), check=False)
    return out.stdout if out.ok else None
