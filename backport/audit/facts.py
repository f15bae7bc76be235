"""What each target's history says of a change, read once per run: the `rules.Facts` the
decision asks (reachable, same patch-id, a carrier, the same title, its tests there, an open PR
naming it, files the target lacks) and whether a missing change applies to the target's head
(true or false, kept in the `Store` by commit and head; unknown with why where a blob it needs
cannot be read, asked again on the next run)."""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field

from backport.audit import blobs, history
from backport.audit.history import Store
from backport.audit.model import Change
from backport.audit.rules import ignored, lacks_all, titled_commit
from backport.forge import PullRequest
from backport.git.cache import RepoCache
from backport.git.run import read_blobs
from backport.pipeline.proposed import carries
from backport.pipeline.proposed import commit_carries as carried
from backport.report.progress import PhaseProgress
from backport.titles import title_key


@dataclass
class Target:
    """What one target branch's history holds, read once."""

    name: str
    head: str
    commits: list[history.Commit]
    reachable: set[str]
    entries: dict[str, tuple[str, str]]  # path -> (mode, blob) of every file of its head
    folders: set[str]
    by_patch: dict[str, str] = field(default_factory=dict)  # patch-id -> oldest commit
    carrying: dict[int, str] = field(default_factory=dict)  # PR it carries -> oldest commit
    own: dict[int, str] = field(default_factory=dict)  # its own squash PR -> commit
    # title words -> (files, commit) of each commit with that title, oldest first
    titled: dict[str, list[tuple[frozenset[str], str]]] = field(default_factory=dict)
    open_prs: list[PullRequest] = field(default_factory=list)


class Facts:
    """`rules.Facts` over the targets read, the store and the run's ignore list."""

    def __init__(self, repo: RepoCache, targets: Mapping[str, Target], store: Store,
                 upstream: str, ignore: Sequence[str]) -> None:
        self.repo, self.targets, self.store = repo, targets, store
        self.upstream, self.ignore = upstream, ignore
        self._carried: dict[str, set[int]] = {}
        self.trees: dict[str, dict[str, ast.Module | None]] = {}  # target -> its files parsed
        self.files: dict[str, dict[str, bytes]] = {}  # target -> "<head>:<path>" -> bytes
        self._asked: dict[str, set[str]] = {}  # target -> the paths read (found or not)
        self.unreadable: dict[str, str] = {}  # blob -> why it could not be read (this run)
        self.unknown: dict[tuple[str, str], str] = {}  # (commit, target) -> why not known

    def reachable(self, change: Change, target: str) -> bool:
        return change.commit in self.targets[target].reachable

    def same_patch(self, change: Change, target: str) -> str:
        pid = self.store.patch_ids.get(change.commit, "")
        found = self.targets[target].by_patch.get(pid, "") if pid else ""
        return found if found != change.commit else ""

    def carrier(self, change: Change, target: str) -> str:
        t = self.targets[target]
        if change.pr is not None and change.pr in t.carrying:
            return t.carrying[change.pr]
        if change.commit not in self._carried:  # the change is itself a backport of PR M
            self._carried[change.commit] = carried(change.message, self.upstream, change.branch)
        return next((t.own[n] for n in sorted(self._carried[change.commit]) if n in t.own), "")

    def same_title(self, change: Change, target: str) -> str:
        found = self.targets[target].titled.get(title_key(change.title, self.targets), [])
        return titled_commit(frozenset(self.store.paths(change.commit)), found)

    def ignored(self, change: Change) -> bool:
        return ignored(change.title, self.ignore)

    def tests_there(self, change: Change, target: str) -> str:
        tests = self.store.added.get(change.commit, [])
        head = self.targets[target].head
        key = f"{change.commit}:{head}"
        if tests and key not in self.store.present:
            self.read_files(target, [node.split("::", 1)[0] for node in tests])
            self.store.present[key] = history.tests_there(
                self.repo.path, tests, head, self.trees.setdefault(target, {}), self.files[target])
        return self.store.present.get(key, "")

    def read_files(self, target: str, paths: Iterable[str]) -> None:
        """Read those of ``paths`` not read yet from the target's head (one git process)."""
        asked = self._asked.setdefault(target, set())
        todo = [p for p in dict.fromkeys(paths) if p not in asked]
        if todo:
            head = self.targets[target].head
            found = read_blobs(self.repo.path, [f"{head}:{p}" for p in self.readable(target, todo)])
            self.files.setdefault(target, {}).update(found)
            asked.update(todo)

    def readable(self, target: str, paths: Iterable[str]) -> list[str]:
        """Those of ``paths`` on ``target``'s head whose blobs can be read, fetched first in one
        request (an unreadable one would end the whole `git cat-file --batch`)."""
        entries = self.targets[target].entries
        files = [p for p in dict.fromkeys(paths) if p in entries
                 and entries[p][0] != blobs.GITLINK]
        blobs.read_or_why(self.repo, {entries[p][1] for p in files}, self.unreadable)
        return [p for p in files if entries[p][1] not in self.unreadable]

    def proposed(self, change: Change, target: str) -> int | None:
        if change.pr is None:
            return None
        return next((pr.number for pr in self.targets[target].open_prs
                     if carries(pr, change.pr, self.upstream, target) is not None), None)

    def lacks_files(self, change: Change, target: str) -> bool:
        t = self.targets[target]
        modified, added = self.store.files.get(change.commit, [[], []])
        return lacks_all(modified, added, t.entries, t.folders)

    def check(self, pairs: Sequence[tuple[Change, str]], progress: PhaseProgress,
              workers: int) -> None:
        """Whether each missing (change, target) not in the store applies on the target's head
        (blobs fetched first, checks on ``workers`` threads); why in ``unknown`` where unread."""
        wanted: dict[str, list[str]] = {}
        for change, target in pairs:
            if f"{change.commit}:{self.targets[target].head}" not in self.store.applies:
                wanted.setdefault(change.commit, []).append(target)
        progress.phase("checking whether missing changes apply",
                       sum(len(t) for t in wanted.values()))
        if not wanted:
            return
        cannot = blobs.unreadable_commits(self.repo, list(wanted), self.unreadable)
        for commit, why in cannot.items():
            for target in wanted.pop(commit):
                self.unknown[(commit, target)] = why
        self._targets_blobs(wanted)
        stop = threading.Event()
        with pool(workers, stop) as threads:
            pending: list[tuple[str, Future[dict[str, bool | str]]]] = []
            for target, items in self._patches(wanted):
                pending.append((target, threads.submit(blobs.applies, self.repo.path,
                                                    self.targets[target].entries, items, stop)))
                while len(pending) > 4 * max(1, workers):  # bounds the patches held
                    self._keep(*pending.pop(0), progress)
            for each in pending:
                self._keep(*each, progress)

    def _touched(self, commit: str, target: str) -> list[str]:
        return [p for p in self.store.paths(commit) if p in self.targets[target].entries]

    def _targets_blobs(self, wanted: dict[str, list[str]]) -> None:
        """Fetch the targets' blobs at the paths the ``wanted`` patches touch (one request);
        a (commit, target) one of whose blobs cannot be read moves to ``unknown``."""
        oids = {self.targets[t].entries[p][1] for c, ts in wanted.items() for t in ts
                for p in self._touched(c, t) if self.targets[t].entries[p][0] != blobs.GITLINK}
        blobs.read_or_why(self.repo, oids, self.unreadable)
        for commit, targets in wanted.items():
            for target in list(targets):
                entries = self.targets[target].entries
                bad = [p for p in self._touched(commit, target)
                       if entries[p][1] in self.unreadable]
                if bad:
                    oid = entries[bad[0]][1]
                    self.unknown[(commit, target)] = (
                        f"{target}'s blob {oid[:9]} of {bad[0]} could not be read: "
                        f"{self.unreadable[oid]}")
                    targets.remove(target)

    def _patches(self, wanted: dict[str, list[str]]
                 ) -> Iterator[tuple[str, list[tuple[str, list[str], bytes]]]]:
        """(target, a part of its (commit, touched paths, patch)) for every wanted pair; a commit
        git cannot show goes to ``unknown``."""
        per: dict[str, list[tuple[str, list[str], bytes]]] = {}
        shown: set[str] = set()
        for commit, email in history.patches_of(self.repo.path, [c for c, t in wanted.items()
                                                                  if t]):
            shown.add(commit)
            for target in wanted[commit]:
                items = per.setdefault(target, [])
                items.append((commit, self._touched(commit, target), email))
                if len(items) >= history.CHUNK // 4:
                    yield target, per.pop(target)
        yield from per.items()
        for commit, targets in wanted.items():
            if commit not in shown:
                for target in targets:
                    self.unknown[(commit, target)] = "git could not show its patch"

    def _keep(self, target: str, check: Future[dict[str, bool | str]],
              progress: PhaseProgress) -> None:
        """Keep what ``check`` says: true or false in the store, a blob unread in ``unknown``."""
        head = self.targets[target].head
        for commit, ok in check.result().items():
            if isinstance(ok, str):
                self.unknown[(commit, target)] = ok
            else:
                self.store.applies[f"{commit}:{head}"] = ok
            progress.add()


@contextmanager
def pool(workers: int, stop: threading.Event) -> Iterator[ThreadPoolExecutor]:
    """Threads not waited for when the run stops: ``stop`` is set so they start no new git, and
    the git they run ends with the run (`process.kill_running`)."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        yield pool
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
