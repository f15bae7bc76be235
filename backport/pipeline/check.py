"""`check`: the CI dry-run of the branch map. Writes nothing to upstream, fork or forge.

The only things written are objects in the local repository cache and a temporary worktree
that is removed before returning.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from backport.config.model import Project
from backport.errors import BackportError
from backport.git.apply import already_applied, apply_series
from backport.git.worktree import Worktree, cache_branch
from backport.pipeline.session import ApplyOptions, Session


@dataclass
class Finding:
    """One line of the check report."""

    subject: str  # "branches.yaml", "branch v2.7.1", "put_metric on v2.7.1"
    check: str  # "schema", "exists upstream", "applies"
    ok: bool
    detail: str = ""
    variant: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def run_check(project: Project, names: list[str] | None, *, offline: bool,
              environ: dict[str, str] | None = None) -> list[Finding]:
    """Validate the map and, unless ``offline``, that every patch set applies everywhere."""
    bm = project.branch_map
    patch_sets = [project.patch_sets[n] for n in names] if names else list(project.patch_sets.values())
    findings = [Finding(str(bm.path.name), "schema", True,
                        f"{len(bm.targets)} target branches, {len(bm.environments)} environments")]
    for ps in patch_sets:
        variants = ", ".join(sorted(ps.variants)) or "none"
        findings.append(Finding(f"patches/{ps.name}", "schema", True,
                                f"{len(ps.patches)} patch(es), variants: {variants}"))
        for target in ps.branches:
            fork_branch = bm.fork_branch_for(ps.slug, target, ps.name, ps.api)
            findings.append(Finding(f"{ps.name} on {target}", "fork branch name", True, fork_branch,
                                    variant=target in ps.variants))
    if offline:
        return findings
    session = Session(project, ApplyOptions(), environ=environ)
    cache = session.cache
    targets = sorted({t for ps in patch_sets for t in ps.branches} or bm.targets)
    try:
        cache.ensure()
        heads = cache.remote_heads(targets)
    except BackportError as exc:
        findings.append(Finding(bm.upstream_url, "reachable", False, exc.message))
        return findings
    present = []
    for target in targets:
        ok = bool(heads.get(target))
        findings.append(Finding(f"branch {target}", "exists upstream", ok,
                                (heads[target] or "")[:9] if ok else
                                f"target branch '{target}' does not exist in {bm.upstream_url}"))
        if ok:
            present.append(target)
    if not present:
        return findings
    bases = cache.fetch(present)
    with tempfile.TemporaryDirectory(prefix="backport-check-") as tmp:
        for ps in patch_sets:
            for target in ps.branches:
                if target in bases:
                    findings.append(_check_applies(session, ps, target, bases[target], Path(tmp)))
    return findings


def _check_applies(session: Session, ps, target: str, base: str, tmp: Path) -> Finding:
    subject = f"{ps.name} on {target}"
    series = ps.series_for(target)
    variant = target in ps.variants
    if already_applied(session.cache, base, series):
        return Finding(subject, "applies", True, "already applied upstream (no PR needed)", variant)
    path = tmp / f"{ps.name}-{target}".replace("/", "_")
    worktree = Worktree.create(session.cache, path, cache_branch(tmp, f"check/{ps.slug}/{target}"),
                               base,
                               ps.paths_for(target))
    try:
        result = apply_series(worktree, series)
    finally:
        worktree.remove()
    if result.status == "conflict":
        return Finding(subject, "applies", False,
                       f"{result.message} (files: {', '.join(result.conflicts) or 'unknown'})",
                       variant)
    detail = "cleanly with git am -3" if result.status == "applied" else "already applied"
    return Finding(subject, "applies", True, detail, variant)
