"""A run's worktrees as the sandbox sees them: two linked worktrees of one cache repository in
a project's state folder, a patch's test that tries to keep something of its run (a repository
planted in the temporary folder, files in every temporary folder and every other worktree, its
own ``.git`` and git folders rewritten), and a snapshot of every file to show it kept nothing."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from tests.helpers.gitrepos import commit_files, git, make_repo

# argv: the marker its files are named with, a canary file of the host's /tmp. Prints what it
# could do; exits 0 once it has tried everything (the caller judges the outcome).
HOSTILE = """
import os, sys, tempfile
marker, canary = sys.argv[1], sys.argv[2]
here = os.getcwd()


def attempt(what, path, text="planted by a test\\n"):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
        print("DID %s %s" % (what, path))
    except OSError as exc:
        print("REFUSED %s %s: %s" % (what, path, exc.strerror))


pointer = open(".git").read().split("gitdir:", 1)[1].strip()
admin = os.path.join(here, pointer)
common = os.path.join(admin, open(os.path.join(admin, "commondir")).read().strip())
attempt("own", os.path.join(here, "mine-" + marker))
tmp = tempfile.gettempdir()
attempt("plant", os.path.join(tmp, ".git", "HEAD"), "ref: refs/heads/main\\n")
for name in ("objects", "refs"):
    os.makedirs(os.path.join(tmp, ".git", name), exist_ok=True)
attempt("plant", os.path.join(tmp, ".git", "config"),
        "[protocol \\"ext\\"]\\n\\tallow = always\\n[core]\\n\\thooksPath = /nowhere\\n")
for folder in sorted({tmp, "/tmp", "/var/tmp", "/dev/shm"}):
    attempt("temp", os.path.join(folder, "backport-" + marker))
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        if marker in name:  # only this test's own canaries: the host's /tmp is shared
            attempt("replace", os.path.join(folder, name))
attempt("replace", canary)
for level in (os.path.dirname(here), os.path.dirname(os.path.dirname(here))):
    for name in sorted(os.listdir(level)):
        target = os.path.join(level, name)
        if os.path.isdir(target) and target not in (here, os.path.dirname(here)):
            attempt("sibling", os.path.join(target, "planted-" + marker))
attempt("admin", os.path.join(admin, "planted-" + marker))
attempt("admin", os.path.join(admin, "gitdir"), "/elsewhere/.git\\n")
attempt("common", os.path.join(common, "hooks", "post-checkout"), "#!/bin/sh\\n")
attempt("pointer", os.path.join(here, ".git"), "gitdir: /elsewhere\\n")
print("TRIED ALL")
"""


def two_worktrees(project: Path) -> tuple[Path, Path, Path]:
    """The cache repository (in ``project``) and two linked worktrees of it in the project's
    state folder, one patch set's branches as a run lays them out."""
    cache = make_repo(project / "cache" / "repo")
    commit_files(cache, {"README.md": "base\n", "test/__init__.py": ""}, "base")
    root = project / ".backport" / "worktrees" / "put_metric"
    own, other = root / "v2.12.0", root / "master"
    for path in (own, other):
        git(cache, "worktree", "add", "--quiet", "--detach", str(path))
    (own / "test" / "test_hostile.py").write_text(HOSTILE, encoding="utf-8")
    return cache, own, other


def snapshot(top: Path, skip: tuple[Path, ...] = ()) -> dict[str, str]:
    """Every file and folder under ``top`` (but ``skip``) with a digest of its content."""
    found: dict[str, str] = {}
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if Path(root, d) not in skip]
        for name in dirs:
            found[os.path.join(root, name)] = "folder"
        for name in files:
            path = Path(root, name)
            if path not in skip:
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found
