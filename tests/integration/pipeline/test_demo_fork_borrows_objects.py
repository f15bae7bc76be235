"""The demo's fork, like a fork on the forge, borrows the upstream's objects: a push stores only
what is new."""

from __future__ import annotations

from pathlib import Path

from backport.demo.sandbox import Sandbox
from tests.helpers.project import git, rev
from tests.helpers.runs import apply


def own_objects(repo: Path) -> set[str]:
    """The objects in ``repo``'s own store (loose and packed), not the ones it borrows."""
    objects = repo / "objects"
    found = {d.name + f.name for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()}
    for index in (objects / "pack").glob("*.idx"):
        found |= {line.split()[0] for line in git(repo, "verify-pack", "-v", str(index)).splitlines()
                  if len(line.split()[0]) == 40}
    return found


def test_a_push_to_the_demo_fork_stores_only_the_new_objects(sandbox: Sandbox) -> None:
    assert own_objects(sandbox.fork) == set()
    apply(sandbox, skip_tests=True, no_pr=True, branches=("v2.7.1",))
    pushed = rev(sandbox.fork, "refs/heads/test-put-metric-v2.7.1")
    base = rev(sandbox.upstream, "v2.7.1")
    assert pushed and base and git(sandbox.fork, "rev-parse", f"{pushed}^") == base
    new = {line.split()[0] for line in
           git(sandbox.fork, "rev-list", "--objects", pushed, "--not", base).splitlines()}
    assert pushed in new
    assert own_objects(sandbox.fork) == new  # the base's history stays in the upstream's store
    assert git(sandbox.fork, "for-each-ref", "--format=%(refname)") == (
        "refs/heads/test-put-metric-v2.7.1")
