#!/usr/bin/env python3
"""Replay real upstream backports and check `git am -3` reproduces what really merged.

For each case (a test the same maintainer landed on several release branches) the landed
commit is found on every branch by subject and path. The commit from one source branch is
exported with :func:`backport.git.authoring.export_patch_set`, then applied with ``git am -3``
onto every branch's pre-state (the parent of the commit that landed there) in a throw-away
sparse clone, and the resulting blobs are compared with the landed ones, byte for byte.

Needs a local mirror of Ascend/pytorch (``--mirror``, a git directory); it only reads it.
Usage: ``python scripts/verify_real_history.py --mirror /work/.mirror/Ascend+pytorch/repo``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backport.errors import BackportError  # noqa: E402
from backport.git.authoring import export_patch_set, touched_files  # noqa: E402

BRANCHES = ("v2.7.1", "v2.11.0", "v2.12.0", "master")
IDENTITY = ("backport-verify", "backport-verify@localhost")
_OFFSET = re.compile(r"succeeded at \d+ \(offset (-?\d+) lines?\)")


@dataclass(frozen=True)
class Case:
    """One real backport series: the commit subject and the path every branch's commit touches."""

    name: str
    subject: str
    path: str
    source: str  # branch whose commit is exported


CASES = (
    Case("untyped-storage", "test: add UntypedStorage cpu coverage", "test/npu/test_storage.py",
         "v2.7.1"),
    Case("untyped-storage-from-master", "test: add UntypedStorage cpu coverage",
         "test/npu/test_storage.py", "master"),
    Case("c10d-mpi (new file)", "test(distributed): add ProcessGroupMPI.create tests",
         "test/distributed/test_c10d_mpi.py", "v2.7.1"),
)


@dataclass
class BranchResult:
    """The replay of one case on one branch."""

    branch: str
    pre: str = ""
    landed: str = ""
    files: list[str] = field(default_factory=list)
    preimage: str = ""  # "same" / "differs" (vs the source's pre-state) / "new file"
    mode: str = ""  # "clean", "3-way", "conflict", "missing"
    offsets: list[str] = field(default_factory=list)  # hunks that applied at a shifted line
    identical: dict[str, bool] = field(default_factory=dict)
    note: str = ""

    @property
    def all_identical(self) -> bool:
        return bool(self.identical) and all(self.identical.values())


def _git(args: Sequence[str], *, cwd: Path | None = None, git_dir: Path | None = None,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = ["git"]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    argv += list(args)
    env = dict(os.environ, LANG="C", LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc


def landed_commit(mirror: Path, branch: str, case: Case) -> str | None:
    """The newest commit on ``branch`` with the case's subject that touches its path."""
    out = _git(["log", "--format=%H %s", branch, "--", case.path], git_dir=mirror).stdout
    for line in out.splitlines():
        sha, _, subject = line.partition(" ")
        if subject == case.subject:
            return sha
    return None


def blob(mirror: Path, commit: str, path: str) -> str | None:
    """Blob id of ``path`` at ``commit`` or None when absent."""
    proc = _git(["rev-parse", "--verify", "--quiet", f"{commit}:{path}"], git_dir=mirror,
                check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def scratch_clone(mirror: Path, dest: Path, paths: Sequence[str], commit: str) -> None:
    """A --shared sparse clone of the mirror checked out (detached) at ``commit``.

    The mirror is an incomplete partial clone (a few huge blobs are absent); declaring the
    clone a partial clone lets git accept those absent blobs outside the sparse paths.
    """
    _git(["clone", "-q", "--shared", "--no-checkout", str(mirror), str(dest)])
    for key, value in (("core.repositoryformatversion", "1"),
                       ("extensions.partialClone", "origin"),
                       ("remote.origin.promisor", "true"),
                       ("user.name", IDENTITY[0]), ("user.email", IDENTITY[1])):
        _git(["config", key, value], cwd=dest)
    _git(["sparse-checkout", "set", "--no-cone", *[f"/{p}" for p in paths]], cwd=dest)
    _git(["checkout", "-q", "--detach", commit], cwd=dest)


def replay(mirror: Path, case: Case, work: Path) -> tuple[str, list[BranchResult]]:
    """Export the source branch's commit and replay it on every branch's pre-state."""
    landed = {b: landed_commit(mirror, b, case) for b in BRANCHES}
    source = landed.get(case.source)
    if source is None:
        raise SystemExit(f"case {case.name}: no commit {case.subject!r} on {case.source}.")
    exporter = work / "export"
    if not exporter.exists():
        _git(["clone", "-q", "--shared", "--bare", str(mirror), str(exporter)])
    patch_dir = work / "patches" / case.name.replace(" ", "_")
    patches = export_patch_set(exporter, source, patch_dir, force=True)
    files = touched_files(exporter, source)
    results = []
    for branch in BRANCHES:
        res = BranchResult(branch, files=list(files))
        commit = landed[branch]
        if commit is None:
            res.mode, res.note = "missing", "no landed commit on this branch"
            results.append(res)
            continue
        res.landed = commit
        res.pre = _git(["rev-parse", f"{commit}^"], git_dir=mirror).stdout.strip()
        before = [(blob(mirror, res.pre, f), blob(mirror, f"{source}^", f)) for f in files]
        if all(a is None and b is None for a, b in before):
            res.preimage = "new file"
        else:
            res.preimage = "differs" if any(a != b for a, b in before) else "same"
        wt = work / "wt" / case.name.replace(" ", "_") / branch
        scratch_clone(mirror, wt, files, res.pre)
        check = _git(["apply", "--check", "--verbose", *map(str, patches)], cwd=wt, check=False)
        res.offsets = [m.group(1) for m in _OFFSET.finditer(check.stdout + check.stderr)]
        am = _git(["am", "-3", *map(str, patches)], cwd=wt, check=False)
        if am.returncode != 0:
            res.mode = "conflict"
            res.note = (am.stdout + am.stderr).strip().splitlines()[-1]
            _git(["am", "--abort"], cwd=wt, check=False)
        else:
            three_way = "3-way" in am.stdout + am.stderr
            res.mode = "3-way" if three_way else "clean"
            for f in files:
                res.identical[f] = blob(wt / ".git", "HEAD", f) == blob(mirror, commit, f)
        results.append(res)
    return source, results


def format_table(case: Case, source: str, results: Sequence[BranchResult]) -> str:
    """A plain-text table of one case's replay."""
    head = ("branch", "pre-state", "landed", "files", "preimage", "hunk offsets", "am",
            "identical")
    rows = [head]
    for r in results:
        rows.append((
            r.branch,
            r.pre[:9] or "-",
            r.landed[:9] or "-",
            ",".join(r.files),
            r.preimage or "-",
            ",".join(r.offsets) or "0",
            r.mode,
            ("yes" if r.all_identical else "no") + (f" ({r.note})" if r.note else ""),
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    lines = [f"case {case.name}: {case.subject!r}, exported from {case.source} ({source[:9]})"]
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every case; exit 0 when every branch reproduced the landed blobs exactly."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, required=True, help="git directory of the mirror")
    parser.add_argument("--keep", type=Path, help="work directory to keep (default: a temp dir)")
    args = parser.parse_args(argv)
    mirror = args.mirror.resolve()
    if not (mirror / "objects").is_dir():
        parser.error(f"{mirror} is not a git directory")
    ok = True
    with tempfile.TemporaryDirectory(prefix="verify-history-") as tmp:
        work = args.keep.resolve() if args.keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        for case in CASES:
            try:
                source, results = replay(mirror, case, work)
            except BackportError as exc:
                print(f"case {case.name}: {exc.code}: {exc.message}")
                ok = False
                continue
            print(format_table(case, source, results))
            print()
            ok = ok and all(r.all_identical for r in results)
    print("all branches identical" if ok else "SOME BRANCHES DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
