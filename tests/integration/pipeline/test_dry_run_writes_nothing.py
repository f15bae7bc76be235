"""A dry run writes nothing in the project (issue 49 item 5): no patch set, no journal, no lock,
no worktree; `--from-pr N --dry-run` makes its set in a temporary place and says where the real
run writes it. Each test compares the project tree, byte for byte, before and after."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from backport.config import load_project
from backport.demo.sandbox import SOURCE_HEAD, Sandbox, land_merged_pr
from backport.forge.base import PrFile
from backport.forge.local import LocalForge
from tests.helpers.project import PATCHES, git, run_app
from tests.helpers.source_pr import BODY, put_metric_files

DRY = ("apply", "--api", "put_metric", "--skip-tests", "--dry-run")


def tree(root: Path) -> dict[str, str]:
    """Every folder, file and link under ``root``: a file by a digest of its bytes."""
    found = {}
    for path in root.rglob("*"):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[name] = "folder"
        else:
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _cache_refs(cache: Path) -> str:
    repos = [p for p in cache.iterdir() if (p / "HEAD").is_file()]
    return "".join(git(repo, "for-each-ref", "refs/heads/") for repo in repos)


def test_a_dry_run_writes_nothing_in_the_project(sandbox: Sandbox) -> None:
    before = tree(sandbox.project)
    dry = run_app(sandbox.project, *DRY)
    assert dry.code == 0, dry.out + dry.err
    assert dry.out.count("planned") >= 4, dry.out
    assert tree(sandbox.project) == before
    # and leaves no branch of its worktrees in the cache repository
    assert _cache_refs(Path(os.environ["BACKPORT_CACHE"])) == ""


def test_a_dry_run_after_a_run_leaves_its_journal_and_worktrees_alone(sandbox: Sandbox) -> None:
    real = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--no-push")
    assert real.code == 0, real.out + real.err
    before = tree(sandbox.project)
    refs = _cache_refs(Path(os.environ["BACKPORT_CACHE"]))
    dry = run_app(sandbox.project, *DRY, "--force")
    assert dry.code == 0, dry.out + dry.err
    assert tree(sandbox.project) == before
    assert _cache_refs(Path(os.environ["BACKPORT_CACHE"])) == refs


def _merged_pr_on_the_local_forge(sandbox: Sandbox) -> int:
    project = load_project(sandbox.config, None, {})
    forge = LocalForge(project.state_dir / "forge.sqlite", upstream=project.branch_map.upstream,
                       fork=project.branch_map.fork)
    number = forge.add_source_pr(head=SOURCE_HEAD, base="master", title="test: put_metric",
                                 body=BODY, author="lgxxx", issues=(3216,),
                                 files=tuple(PrFile(old, new) for old, new in put_metric_files()))
    land_merged_pr(sandbox, number, PATCHES)
    return number


def test_a_from_pr_dry_run_makes_its_set_elsewhere_and_says_where(sandbox: Sandbox) -> None:
    number = _merged_pr_on_the_local_forge(sandbox)
    before = tree(sandbox.project)
    dry = run_app(sandbox.project, "apply", "--from-pr", str(number), "--skip-tests", "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert dry.out.count("planned") >= 3, dry.out
    assert tree(sandbox.project) == before
    dest = sandbox.project / "patches" / f"pr-{number}"
    text = " ".join((dry.out + dry.err).split())
    assert "dry run: the set is made in a temporary folder (" in text
    assert f"removed at the end); the real run writes it to {dest}" in text, text
    real = run_app(sandbox.project, "apply", "--from-pr", str(number), "--skip-tests",
                   "--no-push")
    assert real.code == 0, real.out + real.err
    assert (dest / "patch.yaml").is_file()


def test_a_from_pr_dry_run_of_a_pr_only_the_history_knows_leaves_the_local_forge_alone(
        sandbox: Sandbox) -> None:
    """The local forge learns a PR it lacks from its squash commit; a dry run learns it for the
    run only, and the real run after it records it."""
    land_merged_pr(sandbox, 77, PATCHES)
    before = tree(sandbox.project)
    dry = run_app(sandbox.project, "apply", "--from-pr", "77", "--skip-tests", "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert dry.out.count("planned") >= 3, dry.out
    assert tree(sandbox.project) == before
    real = run_app(sandbox.project, "apply", "--from-pr", "77", "--skip-tests", "--no-push")
    assert real.code == 0, real.out + real.err
    project = load_project(sandbox.config, None, {})
    forge = LocalForge(project.state_dir / "forge.sqlite", upstream=project.branch_map.upstream,
                       fork=project.branch_map.fork)
    assert forge.has_pr(77)
