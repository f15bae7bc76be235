"""What one command run builds once and shares (`Session`): the forge, the cache repository,
the environments, the docs audit, the fork, who may write to the upstream (`WritePermissions`,
which the already-proposed step and `trigger` share) and `apply`'s options (`apply --from-pr`
makes its sets and runs them on one forge and cache). `RunMode`: how far a run goes
(`Effects`), whether it only plans (`--dry-run`: a dry forge, a planning `Fork`, no journal),
and what it needs first (a dry run names what it lacks at its end). One patch set's run
(`SetRun`), a branch's job in it (`BranchJob`), and `Schedule`: "wait until that branch's step
ended" (an older target's apply waits for the newer ones' where its own series conflicts; each
PR step waits for its branch's push).
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from backport.config.branch_map import cache_root
from backport.config.model import BranchMap, PatchSet, Project, newer
from backport.errors import BackportError, ErrorCode
from backport.forge import Forge, dry_run_of, make_forge
from backport.forge.base import WRITE_PERMISSIONS
from backport.git.cache import RepoCache, push_branch, remote_sha
from backport.git.run import configured_helpers
from backport.git.worktree import forget_owner
from backport.pipeline.journal import Journal, ProgressSink, Transition
from backport.records import BranchRecord
from backport.states import FAILURES

if TYPE_CHECKING:
    from backport.docs_audit import DocsEntry
    from backport.envs.environments import Environments


class Effects(Enum):
    """Where a run's effects stop."""

    LOCAL = "local"  # apply and test on this machine; nothing leaves it (--no-push)
    PUSH = "push"  # and push each fork branch (--no-pr)
    PR = "pr"  # and open or refresh each branch's PR (the default)


class Prerequisite(Enum):
    """Something a run's effects need before it starts."""

    ENVIRONMENTS = "environments"  # the test environments, built on this machine
    TOKEN = "token"  # the forge's credentials
    FORK = "fork"  # the fork's name (set, or the token's login)


@dataclass(frozen=True)
class RunMode:
    """How far one run goes and whether its effects are only planned."""

    effects: Effects = Effects.PR
    dry_run: bool = False

    @classmethod
    def of_flags(cls, *, dry_run: bool = False, no_push: bool = False,
                 no_pr: bool = False) -> RunMode:
        """``--no-push`` wins over ``--no-pr``; ``--dry-run`` keeps how far the run goes."""
        effects = Effects.LOCAL if no_push else Effects.PUSH if no_pr else Effects.PR
        return cls(effects, dry_run)

    @property
    def pushes(self) -> bool:  # (or, dry, plans the push of) each tested branch
        return self.effects is not Effects.LOCAL

    @property
    def opens_prs(self) -> bool:  # opens or refreshes (or, dry, plans) each branch's PR
        return self.effects is Effects.PR

    def prerequisites(self, *, skip_tests: bool) -> tuple[Prerequisite, ...]:
        """Environments unless tests are skipped; token and fork once anything leaves here."""
        tests = () if skip_tests else (Prerequisite.ENVIRONMENTS,)
        return (*tests, Prerequisite.TOKEN, Prerequisite.FORK) if self.pushes else tests


class Fork:
    """The fork through git; a dry run's (``plan``) is only read, each push a plan line."""

    def __init__(self, plan: Callable[[str], None] | None = None) -> None:
        self.plan = plan

    def head(self, url: str, branch: str, env: Mapping[str, str] | None) -> str | None:
        if self.plan is not None and not url:
            self.plan(f"fork branch '{branch}' not read: the fork follows the token's login, "
                      "and this dry run has no token; the plan takes it as not there yet")
            return None
        try:
            return remote_sha(url, branch, env=env)
        except BackportError as exc:
            if self.plan is None:
                raise
            self.plan(f"{exc.message.rstrip('.')}; the plan takes it as not there yet")
            return None

    def push(self, repo: Path, url: str, sha: str, branch: str, *, expect: str | None,
             env: Mapping[str, str] | None, started: Callable[[], object]) -> bool:
        """Move ``branch`` to ``sha`` if it is still at ``expect``; False: only planned."""
        if self.plan is not None:
            self.plan(f"git push --force-with-lease={branch}:{expect or ''} <fork> "
                      f"{sha[:9]}:refs/heads/{branch}")
            return False
        started()
        push_branch(repo, url, sha, branch, expect=expect, env=env)
        return True


@dataclass
class ApplyOptions:
    """What the user asked of `apply` (and of `continue`, which resumes one branch)."""

    branches: tuple[str, ...] = ()
    mode: RunMode = RunMode()  # how far the run goes, and dry or not (`RunMode.of_flags`)
    skip_tests: bool = False
    skip_cause: str = "request"  # a `records.SKIP_*`
    force: bool = False
    redo: frozenset[str] = frozenset()  # patch sets whose every step is redone, as by ``force``
    jobs: int = 0  # 0: number of CPUs
    isolated: bool = False
    pr_on_failure: bool = False
    overwrite_fork_branch: bool = False
    timeout: float | None = None
    new_pr: bool = False  # open a new PR where the recorded one was closed or merged

    def forces(self, patch_set: str) -> bool:  # every step of the set's branches redone
        return self.force or patch_set in self.redo


class WritePermissions:
    """The run's answers of ``Forge.permission`` (per login) and ``Forge.collaborators``."""

    def __init__(self) -> None:
        self._asked: dict[str, bool] = {}
        self._listed: dict[str, bool] | None = None
        self._lock = threading.Lock()  # held over the request: one request per answer

    def can_write(self, forge: Forge, login: str) -> bool:
        """Whether ``login`` may write: the listing's answer if read, else one request."""
        if not login:
            return False
        with self._lock:
            if self._listed is not None and login in self._listed:
                return self._listed[login]
            if login not in self._asked:
                self._asked[login] = forge.permission(login) in WRITE_PERMISSIONS
            return self._asked[login]

    def listed(self, forge: Forge) -> dict[str, bool]:
        """The collaborators listing, each member with whether it may write; read once."""
        with self._lock:
            if self._listed is None:
                self._listed = forge.collaborators()
            return self._listed


class ForgeAccess:
    """The forge, built when first needed: `real`, and `client` (a dry run's plans writes)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._lock = threading.RLock()
        self._real: Forge | None = None
        self._client: Forge | None = None

    def real(self) -> Forge:
        s = self.session
        with self._lock:
            if self._real is None:  # the token's request log of this host is shared (pace)
                local_dry = s.options.mode.dry_run and s.project.branch_map.forge == "local"
                self._real = make_forge(s.project.branch_map, s.project.state_dir,
                                        environ=s.environ, notify=lambda text: s.notify(text),
                                        pace_dir=cache_root(s.environ) / "pace",
                                        scratch=s.scratch() if local_dry else None)
            return self._real

    def client(self) -> Forge:
        s = self.session
        with self._lock:
            if self._client is None:
                self._client = (dry_run_of(self.real(), s.project.branch_map, s.plan, s.environ)
                                if s.options.mode.dry_run else self.real())
            return self._client

    def request_summary(self, sets: int) -> str | None:  # a dry run's requests and time
        summary = getattr(self._client, "request_summary", None)
        return summary(sets) if summary is not None else None


class Session:
    """What one command run shares; each step is handed only the parts it uses."""

    def __init__(self, project: Project, options: ApplyOptions | None = None, *,
                 environ: Mapping[str, str] | None = None,
                 plan: Callable[[str], None] | None = None) -> None:
        self.project = project
        self.options = options or ApplyOptions()
        self.environ = environ if environ is not None else os.environ
        self.plan = plan or (lambda line: None)
        self.notify: Callable[[str], None] = lambda text: None  # hears of rate-limit waits
        self.forge = ForgeAccess(self)
        self.cache = RepoCache(cache_root(self.environ), project.branch_map.upstream_url)
        self._docs: dict[str, list[DocsEntry] | None] = {}
        self.work_dir = project.state_dir
        self.fork = Fork()  # a dry run's plans its pushes (`start`)
        self.started = False
        self._envs: Environments | None = None
        self.permissions = WritePermissions()  # asked once a login (only a from-PR run asks)
        self._lock = threading.Lock()
        self._scratch: Path | None = None

    @property
    def envs(self) -> Environments:  # made when first used
        from backport.envs.environments import Environments

        with self._lock:
            if self._envs is None:
                self._envs = Environments(isolated=self.options.isolated)
            return self._envs

    def docs(self, api: str | None) -> list[DocsEntry] | None:
        """The docs audit of master for 【资料变更】, once per API; None leaves it to a human."""
        from backport.docs_audit import audit_docs

        if api is None:
            return None
        if api not in self._docs:  # a dict's reads and writes are atomic: no lock
            try:
                (sha,) = self.cache.local_heads(["master"]).values()  # raises: not fetched
                entries = audit_docs(self.cache.path, sha, api) or None
            except BackportError:
                entries = None
            self._docs[api] = entries
        return self._docs[api]

    def start(self) -> None:
        """Ready the work folder, the only place a branch's code may write; hide credentials."""
        from backport.envs.sandbox import allow_writes, cover_also, helper_paths

        if self.started:
            return
        self.started = True
        if self.options.mode.dry_run:
            self.fork = Fork(self.plan)
            self.work_dir = self.scratch()
        allow_writes([self.work_dir / "worktrees"], reads=[self.project.root])
        cover_also(p for helper in configured_helpers(self.project.root)
                  for p in helper_paths(helper))

    def scratch(self) -> Path:
        """A dry run's own folder (its worktrees, its copy of a local forge), made when first
        asked and removed by `close`."""
        with self._lock:
            if self._scratch is None:
                self._scratch = Path(tempfile.mkdtemp(prefix="backport-dry-run-"))
            return self._scratch

    def follow_token(self) -> None:
        """Name the fork where branches.yaml leaves it to the token's login (``GET /user``)."""
        bm = self.project.branch_map
        if bm.fork or not self.options.mode.pushes:
            return
        self.project = replace(self.project,
                               branch_map=bm.with_login(self.forge.client().current_user()))

    def run_dir(self, patch_set: str) -> Path:  # test logs and carried resolutions
        return self.work_dir / "runs" / patch_set

    def close(self) -> None:
        """Stop the environments; remove a dry run's folder and its worktrees' branches."""
        if self._envs is not None:
            self._envs.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            if (self.cache.path / "HEAD").is_file():
                forget_owner(self.cache.path, self._scratch)


Event = Callable[[str, str], None]  # (step, detail)


@dataclass
class BranchJob:
    """One (patch set, target branch) pair of a run: its record lives in ``journal``."""

    patch_set: PatchSet
    target: str
    fork_branch: str
    journal: Journal
    event: Event

    @property
    def record(self) -> BranchRecord:
        rec = self.journal.get(self.target)
        assert rec is not None
        return rec

    def change(self, transition: Transition) -> BranchRecord:
        return self.journal.change(self.target, transition)

    def stop(self, transition: Transition) -> None:  # and report the status and message
        rec = self.change(transition)
        self.event(rec.status.value, rec.message)


class Schedule:
    """The steps the branches of one patch set's run have ended."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._ended: dict[tuple[str, str], bool] = {}  # (target, step) -> the branch goes on
        self._finished: set[str] = set()  # targets whose thread is done with every step

    def ended(self, job: BranchJob, step: str, going: bool) -> None:
        """``job``'s ``step`` is over; ``going``: the branch goes on past it."""
        with self._changed:
            self._ended[(job.target, step)] = going
            self._changed.notify_all()

    def finished(self, job: BranchJob) -> None:
        """``job``'s thread is done: a step it did not end is over, the branch not going on."""
        with self._changed:
            self._finished.add(job.target)
            self._changed.notify_all()

    def wait(self, job: BranchJob, step: str) -> bool:
        """Block until ``job``'s ``step`` ended; True when the branch went on past it."""
        key = (job.target, step)
        with self._changed:
            while key not in self._ended and job.target not in self._finished:
                self._changed.wait()
            return self._ended.get(key, False)


@dataclass
class SetRun:
    """One patch set's run; after the run, its records."""

    patch_set: PatchSet
    journal: Journal
    targets: list[str]  # the targets the command chose, in the set's order
    jobs: list[BranchJob]  # of those, the ones with work left, in the set's order
    session: Session
    progress: ProgressSink
    rows_named_by_set: bool = False  # several sets run: a progress row is `<set>:<target>`
    bases: dict[str, str | BackportError] = field(default_factory=dict)  # target -> fetched head
    schedule: Schedule = field(default_factory=Schedule)
    earlier: list[SetRun] = field(default_factory=list)  # the batch's sets run before this one

    @property
    def ran(self) -> frozenset[str]:  # the targets this run works on
        return frozenset(job.target for job in self.jobs)

    @property
    def partial(self) -> bool:  # some of the set's branches run elsewhere
        return bool(set(self.patch_set.branches) - self.ran)

    @property
    def options(self) -> ApplyOptions:
        return self.session.options

    @property
    def branch_map(self) -> BranchMap:
        return self.session.project.branch_map

    @property
    def records(self) -> list[BranchRecord]:  # the chosen targets', in the set's order
        return self.journal.records(self.targets)

    @property
    def failed(self) -> bool:
        return any(r.status in FAILURES for r in self.records)

    def event_for(self, target: str) -> Event:
        row = f"{self.patch_set.name}:{target}" if self.rows_named_by_set else target
        return functools.partial(self.progress.event, row)

    def job_for(self, target: str) -> BranchJob:
        """The job of any target of the set (the sibling refresh reaches those not run here)."""
        return next((job for job in self.jobs if job.target == target), None) or BranchJob(
            self.patch_set, target, self.patch_set.fork_branch(self.branch_map, target),
            self.journal, self.event_for(target))

    def wait_newer(self, job: BranchJob, step: str) -> None:
        """Block until every newer target run here ended ``step`` (they start first)."""
        for other in self.jobs:
            if newer(other.target, job.target):
                self.schedule.wait(other, step)


def fetch_bases(cache: RepoCache, targets: list[str]) -> dict[str, str | BackportError]:
    """Fetch every target's head once; a branch the upstream lacks fails alone."""
    try:
        return dict(cache.fetch(targets))
    except BackportError as exc:
        if exc.code != ErrorCode.BRANCH_MISSING:
            raise
    heads = cache.remote_heads(targets)
    result: dict[str, str | BackportError] = {
        target: BackportError("branch-missing", f"target branch '{target}' does not exist in "
                                                f"{cache.upstream_url}")
        for target in targets if not heads.get(target)}
    present = [t for t in targets if heads.get(t)]
    if present:
        result.update(cache.fetch(present))
    return result
