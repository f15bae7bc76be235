"""Many blobs read in one git process (``git cat-file --batch``), for a caller that would
otherwise start one ``git cat-file`` per file."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from backport.git.run import git


def read_blobs(repo: Path, names: Iterable[str]) -> dict[str, bytes]:
    """name -> bytes of each of ``names`` (a blob id or ``<commit>:<path>``) that names a blob
    in ``repo``; one that does not (missing, a tree, a name with a line break) is left out."""
    wanted = [n for n in dict.fromkeys(names) if n and "\n" not in n]
    if not wanted:
        return {}
    out = git(["cat-file", "--batch"], cwd=repo, check=False, timeout=3600,
              stdin="".join(f"{n}\n" for n in wanted).encode("utf-8", "surrogateescape"))
    raw, pos, found = out.raw, 0, {}
    for name in wanted:
        end = raw.find(b"\n", pos)
        if end < 0:
            break
        header = raw[pos:end].split()
        pos = end + 1
        if len(header) != 3 or not header[2].isdigit():
            continue  # "<name> missing" / "ambiguous": no content follows
        size = int(header[2])
        if header[1] == b"blob":
            found[name] = raw[pos:pos + size]
        pos += size + 1  # the content and its closing line break
    return found
