"""An upstream of the four real put_metric pre-states, one single-commit branch each.

A fork's CI sees each release branch as one tree, not its history: this builds a bare
repository whose branches ``v2.7.1 v2.11.0 v2.12.0 master`` are each one parentless commit of
the real Ascend/pytorch tree just before put_metric landed there. The trees come from a local
copy of Ascend/pytorch (``BACKPORT_REAL_REPO``); a blob that copy lacks (it stores none above
4 MiB) is replaced by a two-byte placeholder, which no put_metric test reads.

    python bench/real_trees.py OUT.git      # reads BACKPORT_REAL_REPO
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# The parents of the real put_metric commits on each branch (the pre-states).
PRE_STATES = {"v2.7.1": "82ea54ed3", "v2.11.0": "d5bd55141", "v2.12.0": "8c57daccf",
              "master": "c6b207c55"}
PLACEHOLDER = b"{}\n"
DATE = "@1700000000 +0000"


def _git(args: list[str], cwd: Path, data: bytes | None = None, **env: str) -> bytes:
    full = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
            "GIT_AUTHOR_DATE": DATE, "GIT_COMMITTER_DATE": DATE, **env}
    return subprocess.run(["git", *args], cwd=cwd, input=data, env=full, check=True,
                          capture_output=True).stdout


def real_repo() -> Path:
    """The local copy of Ascend/pytorch named by ``BACKPORT_REAL_REPO``; SystemExit without it."""
    value = os.environ.get("BACKPORT_REAL_REPO")
    if not value:
        raise SystemExit("error: --real needs BACKPORT_REAL_REPO (a local copy of "
                         "Ascend/pytorch with the put_metric pre-states)")
    path = Path(value).expanduser()
    if not path.exists():
        raise SystemExit(f"error: BACKPORT_REAL_REPO={value} does not exist")
    return path


def build(out: Path, source: Path) -> dict[str, object]:
    """Write the single-commit upstream at ``out``; statistics of what was done."""
    started = time.monotonic()
    subprocess.run(["git", "init", "--quiet", "--bare", str(out)], check=True)
    alternates = out / "objects" / "info" / "alternates"
    alternates.write_text(str((source / "objects").resolve()) + "\n", encoding="utf-8")
    placeholder = _git(["hash-object", "-w", "--stdin"], out, PLACEHOLDER).decode().strip()
    replaced: set[str] = set()
    for branch, commit in PRE_STATES.items():
        listing = _git(["ls-tree", "-r", "-z", commit], out).decode()
        entries = [line.split("\t", 1) for line in listing.split("\0") if line]
        blobs = [(meta.split()[2], path) for meta, path in entries if meta.split()[1] == "blob"]
        check = _git(["cat-file", "--batch-check=%(objectname) %(objecttype)"], out,
                     "".join(f"{sha}\n" for sha, _ in blobs).encode()).decode().splitlines()
        missing = [path for (_, path), line in zip(blobs, check, strict=True)
                   if line.endswith(" missing")]
        index = out / f"index-{branch}"
        _git(["read-tree", commit], out, GIT_INDEX_FILE=str(index))
        for path in missing:
            _git(["update-index", "--cacheinfo", f"100644,{placeholder},{path}"], out,
                 GIT_INDEX_FILE=str(index))
            replaced.add(path)
        tree = _git(["write-tree"], out, GIT_INDEX_FILE=str(index)).decode().strip()
        index.unlink()
        head = _git(["commit-tree", tree, "-m", f"{branch} before put_metric ({commit})"],
                    out).decode().strip()
        _git(["update-ref", f"refs/heads/{branch}", head], out)
    # Copy what the branches need, then stand alone (no link to the source copy).
    _git(["repack", "-a", "-d", "-q"], out)
    alternates.unlink()
    _git(["prune"], out)
    _git(["config", "uploadpack.allowFilter", "true"], out)
    _git(["config", "uploadpack.allowAnySHA1InWant", "true"], out)
    return {"path": out, "seconds": round(time.monotonic() - started, 1),
            "placeholders": sorted(replaced)}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    stats = build(Path(sys.argv[1]), real_repo())
    print(f"{stats['path']}: built in {stats['seconds']}s; placeholders for "
          f"{', '.join(stats['placeholders']) or 'nothing'}")  # type: ignore[arg-type]
