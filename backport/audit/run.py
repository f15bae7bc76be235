"""The audit's run: read each branch once, then decide every change on every other branch.

Per target: its first-parent commits since the start less ``LOOKBACK`` (a change may have
landed there before it landed on its own branch), indexed by patch-id, by the PRs they carry
and by their own PR; what its history reaches; its tree's files; its open PRs (one listing of
the forge for the run). Patch-ids and files are kept by commit, whether a change applies by
commit and head (`store.Store`); whether it applies is true, false or, where a blob it needs
cannot be read, unknown with why (`blobs.py`; not kept: asked again on the next run).
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice

from backport.audit import blobs, content, history, similar
from backport.audit.model import BRANCH_MISSING, MISSING, Audit, Cell, Change
from backport.audit.progress import Progress
from backport.audit.rules import (
    carried,
    classify,
    folders_of,
    ignored,
    lacks_all,
    names,
    title_key,
    titled_commit,
)
from backport.audit.store import Store
from backport.branch_order import newest_first
from backport.errors import BackportError
from backport.forge import PullRequest
from backport.git.cache import TRACKING, RepoCache
from backport.git.python_tests import is_python_test
from backport.git.squash_message import squash_number
from backport.redact import redact

LOOKBACK = 180 * 24 * 3600  # seconds before the start a target's carriers are looked for


@dataclass
class Target:
    """What one target branch's history holds, read once."""

    name: str
    head: str
    commits: list[history.Commit]
    reachable: set[str]
    files: set[str]
    entries: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (mode, blob)
    folders: set[str] = field(default_factory=set)
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
        modified, added = self._paths(change)
        found = self.targets[target].titled.get(title_key(change.title, self.targets), [])
        return titled_commit(frozenset([*modified, *added]), found)

    def ignored(self, change: Change) -> bool:
        return ignored(change.title, self.ignore)

    def _paths(self, change: Change) -> tuple[list[str], list[str]]:
        modified, added = self.store.files.get(change.commit, [[], []])
        return modified, added

    def tests_there(self, change: Change, target: str) -> str:
        tests = self.store.added.get(change.commit, [])
        if not tests:
            return ""
        head = self.targets[target].head
        key = f"{change.commit}:{head}"
        if key not in self.store.present:
            self.read_files(target, [node.split("::", 1)[0] for node in tests])
            trees = self.trees.setdefault(target, {})
            self.store.present[key] = history.tests_there(self.repo.path, tests, head, trees,
                                                          self.files[target])
        return self.store.present[key]

    def read_files(self, target: str, paths: Iterable[str]) -> None:
        """Read those of ``paths`` not read yet from the target's head (one git process)."""
        asked = self._asked.setdefault(target, set())
        todo = [p for p in dict.fromkeys(paths) if p not in asked]
        if todo:
            found = history.head_files(self.repo.path, self.targets[target].head,
                                       self.readable(target, todo))
            self.files.setdefault(target, {}).update(found)
            asked.update(todo)

    def readable(self, target: str, paths: Iterable[str]) -> list[str]:
        """Those of ``paths`` on ``target``'s head whose blobs can be read, fetched first in
        one request in a blobless cache: a blob git would fetch by itself, one at a time, and
        one the upstream cannot give would end the whole read (`git cat-file --batch`)."""
        entries = self.targets[target].entries
        files = [p for p in dict.fromkeys(paths) if p in entries
                 and entries[p][0] != blobs.GITLINK]
        oids = {entries[p][1] for p in files}
        if self.repo.blobless:
            self.unreadable.update(blobs.fetch(self.repo.path, oids - set(self.unreadable),
                                               self.repo.env))
        held = blobs.present(self.repo.path, oids)
        return [p for p in files if entries[p][1] in held]

    def proposed(self, change: Change, target: str) -> int | None:
        if change.pr is None:
            return None
        return next((pr.number for pr in self.targets[target].open_prs
                     if names(pr, change.pr, self.upstream, target)), None)

    def lacks_files(self, change: Change, target: str) -> bool:
        t = self.targets[target]
        modified, added = self._paths(change)
        return lacks_all(modified, added, t.files, t.folders)

    def check(self, pairs: Sequence[tuple[Change, str]], progress: Progress,
              workers: int, stop: threading.Event) -> None:
        """Whether each missing (change, target) applies to the target's head, where the store
        does not know it for that head: the blobs the patches touch fetched first (one request
        each for the changes' and the targets'), then each target's patches checked on
        ``workers`` threads; a cell whose blob cannot be read gets why in ``unknown``."""
        wanted: dict[str, list[str]] = {}
        for change, target in pairs:
            if f"{change.commit}:{self.targets[target].head}" not in self.store.applies:
                wanted.setdefault(change.commit, []).append(target)
        progress.phase("checking whether missing changes apply",
                       sum(len(t) for t in wanted.values()))
        if not wanted:
            return
        cannot = blobs.unreadable_commits(self.repo.path, list(wanted), self.repo.env,
                                          known=self.unreadable, fetching=self.repo.blobless)
        for commit, why in cannot.items():
            for target in wanted.pop(commit):
                self.unknown[(commit, target)] = why
        self._targets_blobs(wanted)
        with _pool(workers, stop) as pool:
            pending: list[tuple[str, Future[dict[str, bool | str]]]] = []
            for target, items in self._patches(wanted):
                pending.append((target, pool.submit(blobs.applies, self.repo.path,
                                                    self.targets[target].entries, items, stop)))
                while len(pending) > 4 * max(1, workers):  # bounds the patches held
                    self._keep(*pending.pop(0), progress)
            for each in pending:
                self._keep(*each, progress)

    def _touched(self, commit: str, target: str) -> list[str]:
        modified, added = self._paths_of(commit)
        entries = self.targets[target].entries
        return [p for p in [*modified, *added] if p in entries]

    def _paths_of(self, commit: str) -> tuple[list[str], list[str]]:
        modified, added = self.store.files.get(commit, [[], []])
        return modified, added

    def _targets_blobs(self, wanted: dict[str, list[str]]) -> None:
        """Fetch the targets' blobs at the paths the ``wanted`` patches touch (one request);
        a (commit, target) one of whose blobs cannot be read leaves ``wanted`` for
        ``unknown``."""
        oids = {self.targets[t].entries[p][1] for c, ts in wanted.items() for t in ts
                for p in self._touched(c, t) if self.targets[t].entries[p][0] != blobs.GITLINK}
        if self.repo.blobless:
            self.unreadable.update(blobs.fetch(self.repo.path, oids - set(self.unreadable),
                                               self.repo.env))
        else:
            lacking = oids - blobs.present(self.repo.path, oids)
            self.unreadable.update(dict.fromkeys(lacking - set(self.unreadable),
                                                 "not in the repository"))
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
        """(target, up to a part of its (commit, touched paths, patch)) for every wanted
        pair; a commit git cannot show goes to ``unknown``."""
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
              progress: Progress) -> None:
        """Wait for ``check`` and keep what it says: true or false in the store, a blob
        git could not read in ``unknown``."""
        head = self.targets[target].head
        for commit, ok in check.result().items():
            if isinstance(ok, str):
                self.unknown[(commit, target)] = ok
            else:
                self.store.applies[f"{commit}:{head}"] = ok
            progress.add()


@contextmanager
def _pool(workers: int, stop: threading.Event) -> Iterator[ThreadPoolExecutor]:
    """Threads that, when the run stops (an interrupt, an error), are not waited for: ``stop``
    is set, so their loops start no new git, and what git they run ends with the run
    (`process.kill_running`)."""
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    try:
        yield pool
    except BaseException:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def _read_target(repo: RepoCache, name: str, head: str, since: int) -> Target:
    ref = f"{TRACKING}{name}"
    entries = history.tree_entries(repo.path, head)
    files = set(entries)
    return Target(name=name, head=head, commits=history.first_parent(repo.path, ref, since),
                  reachable=history.reachable(repo.path, ref, since), files=files,
                  folders=folders_of(files), entries=entries)


def _index(target: Target, store: Store, upstream: str, branches: Iterable[str]) -> None:
    for commit in reversed(target.commits):  # oldest first: the first to carry it is named
        pid = store.patch_ids.get(commit.sha, "")
        if pid:
            target.by_patch.setdefault(pid, commit.sha)
        own = squash_number(commit.message)
        if own is not None:
            target.own.setdefault(own, commit.sha)
        for number in carried(commit.message, upstream, target.name):
            target.carrying.setdefault(number, commit.sha)
        modified, added = store.files.get(commit.sha, [[], []])
        if modified or added:
            key = title_key(commit.message.split("\n", 1)[0], branches)
            target.titled.setdefault(key, []).append((frozenset([*modified, *added]), commit.sha))


def _similar_titles(targets: Mapping[str, Target], changes: Sequence[Change],
                    store: Store) -> None:
    """The similar-title rule (`similar.py`) on the cells still missing or not needed."""
    keys = {c.sha: title_key(c.message.split("\n", 1)[0], targets)
            for t in targets.values() for c in t.commits}
    files = {sha: [p for part in store.files.get(sha, [[], []]) for p in part] for sha in keys}
    indexes = {name: similar.TitleIndex([(c.sha, keys[c.sha], files[c.sha])
                                         for c in reversed(t.commits)])
               for name, t in targets.items()}
    similar.decide(indexes, keys, files, changes)


def _fill_added(repo: RepoCache, changes: Sequence[Change], store: Store,
                cannot: Mapping[str, str]) -> None:
    """The tests each change adds, kept by commit: read from the patches of those that touch
    a Python test file, a few hundred at a time (none for those in ``cannot``: a blob of
    theirs cannot be read)."""
    todo = [c.commit for c in changes if c.commit not in store.added
            and c.commit not in cannot
            and any(is_python_test(p) for part in store.files.get(c.commit, [[], []])
                    for p in part)]
    for change in changes:
        if change.commit not in todo:
            store.added.setdefault(change.commit, [])
    emails = history.patches_of(repo.path, todo, history.PYTHON_TESTS)  # their test files'
    while chunk := list(islice(emails, history.CHUNK)):
        store.added.update(history.tests_added(repo.path, chunk))
    for commit in todo:
        store.added.setdefault(commit, [])


def _decide(change: Change, branches: list[str], facts: Facts) -> None:
    """Fill ``change.on`` for every branch but its own."""
    for name in branches:
        if name != change.branch:
            change.on[name] = (classify(change, name, facts) if name in facts.targets
                               else Cell(BRANCH_MISSING))


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def changes_of(targets: Mapping[str, Target], since: int) -> list[Change]:
    """Every first-parent change since ``since`` of each branch, each once: a commit on
    several branches' first-parent history (before they parted) belongs to the newest."""
    seen: set[str] = set()
    found = []
    for name in newest_first(targets):
        for commit in targets[name].commits:
            if commit.time < since or commit.sha in seen:
                continue
            seen.add(commit.sha)
            found.append(Change(branch=name, commit=commit.sha,
                                pr=squash_number(commit.message),
                                title=commit.message.split("\n", 1)[0], date=_iso(commit.time),
                                author=commit.author, message=commit.message))
    return found


def run_audit(repo: RepoCache, heads: Mapping[str, str | None], *, since: int, since_text: str,
              upstream: str, ignore: Sequence[str], store: Store,
              open_prs: Callable[[], list[PullRequest]] | None,
              missing_why: Mapping[str, str], prs_unread: str = "",
              workers: int = 2, progress: Progress | None = None) -> Audit:
    """The audit of the branches of ``heads`` (None: not upstream, said by ``missing_why``);
    ``open_prs`` lists the forge's open PRs once (None: not read, why is ``prs_unread``)."""
    progress = progress or Progress()
    progress.phase("reading the branches' history")
    targets = {name: _read_target(repo, name, head, since - LOOKBACK)
               for name, head in heads.items() if head}
    facts = Facts(repo, targets, store, upstream, ignore)
    changes = _read_changes(facts, since, progress)
    if open_prs is not None:
        try:
            listed = open_prs()
        except BackportError as exc:
            listed, prs_unread = [], f"the forge did not list them ({exc.message})"
        for each in targets.values():
            each.open_prs = [pr for pr in listed if pr.base == each.name]
    store.save()  # what is known by commit, kept even if a later step fails
    _decide_all(facts, changes, list(heads), progress, workers)
    missing = [(c, t) for c in changes for t, cell in c.on.items() if cell.state == MISSING]
    facts.check(missing, progress, workers, threading.Event())  # fetches the touched blobs
    for change, name in missing:
        known = store.applies.get(f"{change.commit}:{targets[name].head}")
        change.on[name] = change.on[name].applying(
            known, "" if known is not None else facts.unknown.get((change.commit, name),
                                                                  "not checked"))
    progress.phase("looking for the same fix under a similar title or in other words")
    _similar_titles(targets, changes, store)
    content.decide(repo.path, {n: t.head for n, t in targets.items()},
                   {n: t.files for n, t in targets.items()}, changes, store, facts.readable)
    store.save()
    return Audit(since=since_text, branches=tuple(heads), changes=tuple(changes),
                 missing_branches=dict(missing_why), prs_unread=prs_unread)


def _read_changes(facts: Facts, since: int, progress: Progress) -> list[Change]:
    """The changes since ``since``, with what is kept by commit filled in the store (the
    blobs their diffs read fetched first in a blobless cache) and the targets indexed."""
    repo, store, targets = facts.repo, facts.store, facts.targets
    every = [c.sha for t in targets.values() for c in t.commits]
    todo = [sha for sha in dict.fromkeys(every) if sha not in store.patch_ids]
    progress.phase(f"fetching the blobs {len(todo):,} commits touch" if repo.blobless
                   else f"reading {len(todo):,} commits")
    cannot = blobs.unreadable_commits(repo.path, todo, repo.env, known=facts.unreadable,
                                      fetching=repo.blobless) if todo else {}
    for commit in cannot:
        store.patch_ids[commit] = ""  # git cannot make its patch: no patch-id
    progress.phase(f"reading {len(todo):,} commits' patch-ids, files and tests added")
    stop = threading.Event()
    with _pool(1, stop) as side:  # git's patch-ids while Python reads tests
        ids = side.submit(history.fill_patch_ids, repo.path, todo, store)
        history.fill_files(repo.path, every, store)
        changes = changes_of(targets, since)
        _fill_added(repo, changes, store, cannot)
        ids.result()
    for each in targets.values():
        _index(each, store, facts.upstream, targets)
    return changes


def _decide_all(facts: Facts, changes: Sequence[Change], branches: list[str],
                progress: Progress, workers: int) -> None:
    """Decide every change on every branch, a part at a time on ``workers`` threads."""
    store = facts.store
    for name, each in facts.targets.items():  # the test files the already-present rule reads
        facts.read_files(name, [node.split("::", 1)[0] for c in changes
                                if c.branch != name and c.commit not in each.reachable
                                and f"{c.commit}:{each.head}" not in store.present
                                for node in store.added.get(c.commit, [])])
    progress.phase("deciding", len(changes))
    with _pool(workers, threading.Event()) as deciding:
        for first in range(0, len(changes), history.CHUNK):
            part = changes[first:first + history.CHUNK]
            list(deciding.map(_decide, part, [branches] * len(part), [facts] * len(part)))
            progress.add(len(part))


def branch_heads(repo: RepoCache, branches: Sequence[str], *,
                 offline: bool) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each branch's head (fetched, or offline as the cache last fetched it; None where it is
    not there) and, for those, why."""
    why: dict[str, str] = {}
    if offline:
        heads: dict[str, str | None] = {}
        for name in branches:
            try:
                heads[name] = repo.local_heads([name])[name]
            except BackportError:
                heads[name] = None
                why[name] = "not in the cache (run without --offline to fetch it)"
        return heads, why
    remote = repo.remote_heads(branches)
    present = [name for name, sha in remote.items() if sha]
    fetched = repo.fetch(present) if present else {}
    heads = {name: fetched.get(name) for name in branches}
    for name, sha in heads.items():
        if not sha:
            why[name] = f"not a branch of {redact(repo.upstream_url)}"
    return heads, why
