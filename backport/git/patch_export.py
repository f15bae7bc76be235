"""Export one commit or an ``A..B`` range as a numbered ``git format-patch`` set (``new``, a
from-PR set, a sibling's result), and the files the commits touch. Author, date and message are
kept; binary changes, renames and full blob ids are written (``git am -3`` fetches a pre-image
in a blobless clone) whatever the user's diff configuration says.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from backport.errors import BackportError
from backport.git.python_tests import left_paths
from backport.git.run import git, read_blob
from backport.redact import redact

_FORMAT_CONFIG = ("-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false")
_FORMAT_OPTIONS = ("--binary", "--full-index", "--find-renames", "--no-ext-diff", "--no-textconv")
_FULL_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _resolve(repo: Path, rev: str) -> str:
    """Full sha of the commit ``rev`` names; BackportError("usage") when it names none."""
    out = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
              cwd=repo, check=False)
    if out.ok:
        return out.stdout.strip()
    shown = Path(os.path.abspath(repo))
    if not git(["rev-parse", "--git-dir"], cwd=repo, check=False).ok:
        raise BackportError("usage", redact(f"{shown} is not a git repository, so revision "
                                            f"{rev!r} cannot be read"))
    raise BackportError("usage", redact(f"revision {rev!r} is not a commit in the repository "
                                        f"{shown}"))


def _split(repo: Path, rev: str) -> tuple[str | None, str]:
    """(base sha or None, tip sha) of one commit or an ``A..B`` range (one process for both)."""
    if "..." in rev:
        raise BackportError("usage", redact(f"revision {rev!r} must be one commit or an A..B "
                                            "range, not A...B."))
    base, dots, tip = rev.partition("..")
    ends = [base or "HEAD", tip or "HEAD"] if dots else [rev]
    for end in ends:
        if not end or end.startswith("-"):
            raise BackportError("usage", redact(f"invalid revision {end!r} for {repo}."))
    if not dots:
        return None, _resolve(repo, rev)
    # No --end-of-options: without --verify git prints it back; neither end starts with "-".
    out = git(["rev-parse", *(f"{end}^{{commit}}" for end in ends)], cwd=repo, check=False)
    shas = out.stdout.split()
    if out.ok and len(shas) == 2 and all(_FULL_SHA.fullmatch(sha) for sha in shas):
        return shas[0], shas[1]
    return _resolve(repo, ends[0]), _resolve(repo, ends[1])


def _selected(repo: Path, rev: str, base: str | None, tip: str) -> list[str]:
    """The commits of ``rev``, oldest first; a range without commits or with merges is refused."""
    if base is None:
        return [tip]
    out = git(["rev-list", "--reverse", "--parents", f"{base}..{tip}", "--"], cwd=repo)
    rows = [line.split() for line in out.stdout.splitlines() if line.strip()]
    if not rows:
        raise BackportError("usage", redact(f"range {rev!r} selects no commits in {repo}."))
    merges = [row[0][:12] for row in rows if len(row) > 2]
    if merges:
        raise BackportError("usage", redact(f"range {rev!r} contains merge commit {merges[0]}, "
                                            "which format-patch cannot export."))
    return [row[0] for row in rows]


def commits(repo: Path, rev: str) -> list[str]:
    """The commits ``rev`` selects, oldest first."""
    return _selected(repo, rev, *_split(repo, rev))


def _rev_args(base: str | None, tip: str) -> list[str]:
    return ["-1", tip] if base is None else [f"{base}..{tip}"]


def export_patch_set(repo: Path, rev: str, out_dir: Path, *, force: bool) -> list[Path]:
    """Write ``rev`` as ``0001-….patch`` files into ``out_dir`` (old ones replaced: ``force``)."""
    ends = _split(repo, rev)
    selected = _selected(repo, rev, *ends)
    existing = sorted(out_dir.glob("*.patch")) if out_dir.is_dir() else []
    if existing and not force:
        raise BackportError("usage", f"{out_dir} already holds {len(existing)} patch file(s); "
                                     "use --force to replace them.")
    if out_dir.exists() and not out_dir.is_dir():
        raise BackportError("usage", f"{out_dir} exists and is not a directory.")
    for old in existing:
        old.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    out = git([*_FORMAT_CONFIG, "format-patch", *_FORMAT_OPTIONS, "-o", str(out_dir.resolve()),
               *_rev_args(*ends), "--"], cwd=repo)
    written = [Path(line.strip()) for line in out.stdout.splitlines() if line.strip()]
    if len(written) != len(selected):
        raise BackportError("git", f"git format-patch wrote {len(written)} patch(es) for "
                                   f"{len(selected)} commit(s) of {rev!r}.")
    return written


def touched_files(repo: Path, rev: str) -> list[str]:
    """Every path the commits of ``rev`` leave added or changed (:func:`left_paths`), in order."""
    out = git(["log", "--format=", "--name-status", "-z", "--no-renames", "--reverse",
               *_rev_args(*_split(repo, rev)), "--"], cwd=Path(repo))
    fields = [f for f in (f.strip("\n") for f in out.stdout.split("\0")) if f]
    return left_paths((None if status.startswith("A") else path,
                       None if status.startswith("D") else path)
                      for status, path in zip(fields[::2], fields[1::2], strict=False))


def test_files(paths: Iterable[str]) -> list[str]:
    """The paths under a top-level ``test/`` or ``tests/``, and the ``test_*.py`` / ``*_test.py``
    files, in their order, without duplicates."""
    found = ((path, PurePosixPath(path)) for path in paths)
    return list(dict.fromkeys(path for path, p in found if (
        len(p.parts) > 1 and p.parts[0] in ("test", "tests")) or (
        p.suffix == ".py" and (p.name.startswith("test_") or p.stem.endswith("_test")))))


test_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test when imported


def first_subject(repo: Path, rev: str) -> str:
    """Subject line of the first (oldest) commit ``rev`` selects."""
    first = commits(repo, rev)[0]
    return git(["log", "-1", "--format=%s", first, "--"], cwd=Path(repo)).stdout.strip()


def file_at(repo: Path, rev: str, path: str) -> str | None:
    """The text of ``path`` after the last commit ``rev`` selects; None when it was deleted."""
    data = read_blob(Path(repo), f"{commits(repo, rev)[-1]}:{path}")
    return None if data is None else data.decode("utf-8", "surrogateescape")
