"""What the branches of one run share: the cache, the environments, the docs audit, the forge."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from backport.config.branch_map import cache_root
from backport.config.model import Project
from backport.docs_audit import DocsEntry, audit_docs
from backport.envs.hidden import helper_paths
from backport.envs.pool import Environments
from backport.envs.sandbox import allow_writes, hide_also
from backport.errors import BackportError
from backport.forge import Forge, make_forge
from backport.git.cache import RepoCache
from backport.git.credential_helpers import configured_helpers
from backport.git.worktree import forget_owner
from backport.pipeline.mode import Fork, RunMode
from backport.pipeline.permissions import WritePermissions

DOCS_REF = "master"  # the upstream branch whose docs tree the PR body's 【资料变更】 reports


@dataclass
class ApplyOptions:
    """What the user asked of `apply` (and of `continue`, which resumes one branch)."""

    branches: tuple[str, ...] = ()
    mode: RunMode = RunMode()  # how far the run goes, and dry or not (`RunMode.of_flags`)
    skip_tests: bool = False
    skip_cause: str = "request"  # why tests are skipped (records.SKIP_ON_REQUEST / SKIP_NO_TORCH)
    force: bool = False
    redo: frozenset[str] = frozenset()  # patch sets whose every step is redone, as by ``force``
    jobs: int = 0  # 0: number of CPUs
    isolated: bool = False
    pr_on_failure: bool = False
    overwrite_fork_branch: bool = False
    timeout: float | None = None
    new_pr: bool = False  # open a new PR where the recorded one was closed or merged

    def without_tests(self, cause: str) -> ApplyOptions:
        """These options with the tests skipped for ``cause`` (a `records.SKIP_*`: a dry run
        where environments are not built)."""
        return dataclasses.replace(self, skip_tests=True, skip_cause=cause)

    def forces(self, patch_set: str) -> bool:
        """Whether every step of ``patch_set``'s branches is redone (``force`` or ``redo``)."""
        return self.force or patch_set in self.redo

    @property
    def workers(self) -> int:
        return self.jobs if self.jobs > 0 else (os.cpu_count() or 2)


def open_cache(project: Project, environ: Mapping[str, str]) -> RepoCache:
    """The repository cache of the project's upstream (what `check` and `docs` need alone)."""
    return RepoCache(cache_root(environ), project.branch_map.upstream_url)


class DocsAudit:
    """The docs audit of upstream master, once per API per run.

    Feeds the PR body's 【资料变更】; a failure only leaves that section for a human.
    """

    def __init__(self, cache: RepoCache) -> None:
        self.cache = cache
        self._lock = threading.Lock()
        self._found: dict[str, list[DocsEntry] | None] = {}

    def __call__(self, api: str | None) -> list[DocsEntry] | None:
        """The audit of ``api`` if this run's cache fetched master; else (and for a set that
        names no API) None."""
        if api is None:
            return None
        with self._lock:
            if api in self._found:
                return self._found[api]
        try:
            # raises when this cache never fetched master; the audit reads the commit it names
            (sha,) = self.cache.local_heads([DOCS_REF]).values()
            found = audit_docs(self.cache.path, sha, api)
            entries = found or None
        except BackportError:
            entries = None
        with self._lock:
            self._found[api] = entries
        return entries


class ForgeAccess:
    """The forge client of one run, built when first needed; it finds its own credentials."""

    def __init__(self, project: Project, environ: Mapping[str, str], *, mode: RunMode | None = None,
                 plan: Callable[[str], None] | None = None,
                 notify: Callable[[str], None] | None = None) -> None:
        self.project = project
        self.environ = environ
        self.mode = mode or RunMode()
        self.plan = plan or (lambda line: None)
        self.notify = notify
        self._lock = threading.Lock()
        self._forge: Forge | None = None

    def client(self) -> Forge:
        """The run's forge client (built once; it finds its own credentials in ``environ``)."""
        with self._lock:
            if self._forge is None:
                self._forge = make_forge(self.project.branch_map, self.project.state_dir,
                                         environ=self.environ, dry_run=self.mode.dry_run,
                                         plan=self.plan, notify=self.notify,
                                         pace_dir=cache_root(self.environ) / "pace")
            return self._forge

    def missing(self) -> list[str]:
        """What the real run's forge lacks (no token...); a dry forge lacks nothing, so this
        asks the forge the real run would have."""
        return make_forge(self.project.branch_map, self.project.state_dir,
                          environ=self.environ).missing()

    def request_summary(self, sets: int) -> str | None:
        """For a dry run: about how many forge requests the run would make, and how long."""
        with self._lock:
            forge = self._forge
        summary = getattr(forge, "request_summary", None) if forge is not None else None
        return summary(sets) if summary is not None else None

    def push_env(self) -> dict[str, str] | None:
        """Extra environment for `git push` to the fork, as the forge provides it."""
        return self.client().push_credentials(self.project.branch_map.fork_url)


class Session:
    """What the branches of one run share; each step is handed only the parts it uses."""

    def __init__(self, project: Project, options: ApplyOptions, *,
                 environ: Mapping[str, str] | None = None,
                 plan: Callable[[str], None] | None = None,
                 notify: Callable[[str], None] | None = None) -> None:
        self.project = project
        self.options = options
        self.environ = environ if environ is not None else os.environ
        self.plan = plan or (lambda line: None)
        self.cache = open_cache(project, self.environ)
        # Where the worktrees, test logs and carried resolutions go: the project's .backport;
        # a dry run's in a temporary folder, removed at its end (it writes nothing in the project).
        self.work_dir = (Path(tempfile.mkdtemp(prefix="backport-dry-run-"))
                         if options.mode.dry_run else project.state_dir)
        # Code from a branch writes only in its own worktree (and its private temporary
        # folders), and reads the project wherever it lies.
        allow_writes([self.work_dir / "worktrees"], reads=[project.root])
        # ... and finds none of the files git's credential helpers keep the user's secrets in.
        hide_also(p for helper in configured_helpers(project.root) for p in helper_paths(helper))
        self.envs = Environments(self.environ, cache_root(self.environ), isolated=options.isolated)
        self.docs = DocsAudit(self.cache)
        self.permissions = WritePermissions()  # who may write to the upstream, asked once a login
        self.forge = ForgeAccess(project, self.environ, mode=options.mode, plan=self.plan,
                                  notify=notify)
        self.fork = Fork(self.plan if options.mode.dry_run else None)

    def follow_token(self) -> None:
        """Name the fork where branches.yaml leaves it to the token: ``<login>/<repo>``, the
        login asked of the forge once (``GET /user``). A dry run without a token cannot ask;
        its fork stays unnamed and its plan says so."""
        bm = self.project.branch_map
        if bm.fork or not self.options.mode.pushes:
            return
        self.project = self.project.with_branch_map(
            bm.with_login(self.forge.client().current_user()))
        self.forge.project = self.project

    def run_dir(self, patch_set: str) -> Path:
        """Where the run of ``patch_set`` keeps its test logs and carried resolutions: beside
        its journal, or in a dry run's temporary folder."""
        return self.work_dir / "runs" / patch_set

    def close(self) -> None:
        """Stop the environments; a dry run's temporary folder goes, with its worktrees'
        registrations and branches in the cache repository."""
        self.envs.close()
        if self.options.mode.dry_run and self.work_dir.exists():
            shutil.rmtree(self.work_dir, ignore_errors=True)
            if (self.cache.path / "HEAD").is_file():
                forget_owner(self.cache.path, self.work_dir)
