"""Paths the hand-written ``body.md`` names, and the targets that lack them (for `check`).

A backticked ``dir/file.ext`` in the body is taken as a path of the target repository when at
least one target has it (or the series changes it); a path no target has is another project's
(PyTorch's own tests, say) and is left alone. Only trees are read: no blob is fetched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from backport.config.model import PatchSet
from backport.git.run import git

_CODE = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"^[\w.-]+(?:/[\w.-]+)+$")


def named_paths(body: str) -> list[tuple[str, int]]:
    """Each path the body names in backticks with the line of its first mention (1-based)."""
    found: dict[str, int] = {}
    for number, line in enumerate(body.splitlines(), start=1):
        for span in _CODE.findall(line):
            if _PATH.match(span) and "." in span.rsplit("/", 1)[-1]:
                found.setdefault(span, number)
    return list(found.items())


def _present(repo: Path, base: str, paths: list[str]) -> set[str]:
    out = git(["ls-tree", "-r", "--name-only", base, "--", *paths], cwd=repo)
    return set(out.stdout.splitlines())


def absent_named_paths(repo: Path, ps: PatchSet, bases: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(target, sentence)`` for each target of ``ps`` in ``bases`` that lacks a path of the
    target repository named in ``body.md``."""
    named = named_paths(ps.body or "")
    if not named:
        return []
    paths = [path for path, _ in named]
    targets = [t for t in ps.branches if t in bases]
    present = {t: _present(repo, bases[t], paths) | set(ps.touched_paths.get(t, ()))
               | {p for patch in ps.series_for(t) for p in patch.paths} for t in targets}
    ours = {path for path in paths if any(path in present[t] for t in targets)}
    return [(t, f"patches/{ps.name}/body.md line {line} names {path}, which is not on branch {t}")
            for t in targets for path, line in named if path in ours and path not in present[t]]
