"""The audit's run (`audit_project`): read each branch once (`facts.py`), decide every change
on every other branch (`rules.classify`), check whether the missing ones apply, then look for
the same fix under a similar title or in other words (`similar.py`, `content.py`).

A target's first-parent commits are read from the start less ``LOOKBACK`` (a change may have
landed there before it landed on its own branch); its open PRs come from one forge listing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from itertools import islice

from backport.audit import blobs, content, history, similar
from backport.audit.facts import Facts, Target, pool
from backport.audit.history import Store
from backport.audit.model import BRANCH_MISSING, MISSING, Audit, Cell, Change
from backport.audit.rules import classify, folders_of
from backport.config.model import Project, newest_first
from backport.config.validate import suggest
from backport.errors import BackportError, ErrorCode
from backport.forge import PullRequest
from backport.git.cache import TRACKING, RepoCache
from backport.git.python_tests import is_python_test
from backport.git.squash_message import squash_number
from backport.pipeline.proposed import commit_carries as carried
from backport.pipeline.session import Session
from backport.redact import redact
from backport.report.progress import PhaseProgress
from backport.titles import title_key

LOOKBACK = 180 * 24 * 3600  # seconds before the start a target's carriers are looked for
DEFAULT_DAYS = 90


def parse_since(text: str | None, today: date) -> date:
    """The start date: ``YYYY-MM-DD``, not after ``today``; default ``DEFAULT_DAYS`` ago."""
    default = today - timedelta(days=DEFAULT_DAYS)  # a date prints as YYYY-MM-DD
    if text is None:
        return default
    try:
        when = date.fromisoformat(text.strip())
    except ValueError:
        raise BackportError("usage", f"--since {text!r} is not a date; give it as YYYY-MM-DD, "
                                     f"e.g. --since {default}") from None
    if when > today:
        raise BackportError("usage", f"--since {when} lies in the future (today is {today}); "
                                     f"give a past date, e.g. --since {default}")
    return when


def chosen_branches(mapped: list[str], asked: tuple[str, ...], config: str,
                    option: str = "--branch") -> list[str]:
    """The branches to audit: those asked (each mapped), else every mapped one, in map order."""
    for name in asked:
        if name not in mapped:
            raise BackportError("usage", f"{option} {name} is not a branch of {config} "
                                         f"({', '.join(mapped)}){suggest(name, mapped)}")
    return [name for name in mapped if name in asked] if asked else mapped


def unknown_warning(audit: Audit) -> str:
    """One sentence on the missing cells whose `applies` is unknown (a blob unread), or ""."""
    unknown = [(change, target, cell.why) for change in audit.changes
               for target, cell in change.on.items()
               if cell.state == MISSING and cell.applies is None]
    if not unknown:
        return ""
    change, target, why = unknown[0]
    return (f"whether {len(unknown)} missing change(s) apply is not known (`applies: null`): a "
            f"blob they need could not be read; e.g. {change.commit[:9]} on {target}: {why}")


def audit_project(project: Project, since_text: str | None, asked: tuple[str, ...], *,
                  offline: bool, missing_on: str | None) -> Audit:
    """`backport audit`: the branches asked (default every mapped one) since ``since_text``,
    its progress on a terminal's stderr; ``missing_on`` must be one of them."""
    since = parse_since(since_text, datetime.now(UTC).date())
    bm = project.branch_map
    chosen = chosen_branches(list(bm.targets), asked, bm.path.name)
    if missing_on is not None:
        chosen_branches(chosen, (missing_on,), bm.path.name, "--missing-on")
    session = Session(project)
    repo = session.cache
    start = int(datetime(since.year, since.month, since.day, tzinfo=UTC).timestamp())
    store = Store(repo.root / "audit" / f"{repo.path.name}.json")
    with PhaseProgress() as progress:
        progress.phase("reading the branches from the cache" if offline
                       else "fetching the branches")
        heads, why = branch_heads(repo, chosen, offline=offline)
        if offline and not any(heads.values()):
            raise BackportError(ErrorCode.USAGE, f"--offline: the cache holds none of "
                                f"{', '.join(chosen)}; run `backport audit` once without "
                                f"--offline to fetch them")
        unread, open_prs = "offline", None
        if not offline:
            forge = session.forge.real()
            lacking = forge.missing()
            unread = "; ".join(lacking)
            open_prs = None if lacking else (lambda: forge.list_prs("open"))
        return run_audit(repo, heads, since=start, since_text=since.isoformat(),
                         upstream=bm.upstream, ignore=bm.audit_ignore, store=store,
                         open_prs=open_prs, missing_why=why, prs_unread=unread,
                         progress=progress)


def _read_target(repo: RepoCache, name: str, head: str, since: int) -> Target:
    ref = f"{TRACKING}{name}"
    entries = history.tree_entries(repo.path, head)
    return Target(name=name, head=head, commits=history.first_parent(repo.path, ref, since),
                  reachable=history.reachable(repo.path, ref, since), entries=entries,
                  folders=folders_of(entries))


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
        paths = store.paths(commit.sha)
        if paths:
            key = title_key(commit.message.split("\n", 1)[0], branches)
            target.titled.setdefault(key, []).append((frozenset(paths), commit.sha))


def _similar_titles(targets: Mapping[str, Target], changes: Sequence[Change],
                    store: Store) -> None:
    """The similar-title rule (`similar.py`) on the cells still missing or not needed."""
    keys = {c.sha: title_key(c.message.split("\n", 1)[0], targets)
            for t in targets.values() for c in t.commits}
    files = {sha: store.paths(sha) for sha in keys}
    indexes = {name: similar.TitleIndex([(c.sha, keys[c.sha], files[c.sha])
                                         for c in reversed(t.commits)])
               for name, t in targets.items()}
    similar.decide(indexes, keys, files, changes)


def _fill_added(repo: RepoCache, changes: Sequence[Change], store: Store,
                cannot: Mapping[str, str]) -> None:
    """The tests each change adds, kept by commit (none where its blobs are in ``cannot``)."""
    todo = [c.commit for c in changes if c.commit not in store.added
            and c.commit not in cannot
            and any(is_python_test(p) for p in store.paths(c.commit))]
    emails = history.patches_of(repo.path, todo, history.PYTHON_TESTS)  # their test files'
    while chunk := list(islice(emails, history.CHUNK)):
        store.added.update(history.tests_added(repo.path, chunk))
    for change in changes:
        store.added.setdefault(change.commit, [])


def _decide(change: Change, branches: list[str], facts: Facts) -> None:
    change.on.update({name: classify(change, name, facts) if name in facts.targets
                      else Cell(BRANCH_MISSING) for name in branches if name != change.branch})


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
            when = datetime.fromtimestamp(commit.time, UTC).isoformat().replace("+00:00", "Z")
            found.append(Change(branch=name, commit=commit.sha, pr=squash_number(commit.message),
                                title=commit.message.split("\n", 1)[0], date=when,
                                author=commit.author, message=commit.message))
    return found


def run_audit(repo: RepoCache, heads: Mapping[str, str | None], *, since: int, since_text: str,
              upstream: str, ignore: Sequence[str], store: Store,
              open_prs: Callable[[], list[PullRequest]] | None,
              missing_why: Mapping[str, str], prs_unread: str = "",
              progress: PhaseProgress, workers: int = 2) -> Audit:
    """The audit of the branches of ``heads`` (None: not upstream, said by ``missing_why``);
    ``open_prs`` lists the forge's open PRs once (None: not read, why is ``prs_unread``)."""
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
    facts.check(missing, progress, workers)  # fetches the touched blobs
    for change, name in missing:
        known = store.applies.get(f"{change.commit}:{targets[name].head}")
        why = "" if known is not None else facts.unknown.get((change.commit, name), "not checked")
        change.on[name] = replace(change.on[name], applies=known, why=why)
    progress.phase("looking for the same fix under a similar title or in other words")
    _similar_titles(targets, changes, store)
    content.decide(facts, changes)
    store.save()
    return Audit(since=since_text, branches=tuple(heads), changes=tuple(changes),
                 missing_branches=dict(missing_why), prs_unread=prs_unread)


def _read_changes(facts: Facts, since: int, progress: PhaseProgress) -> list[Change]:
    """The changes since ``since``; what is kept by commit filled in the store (the blobs read
    fetched first), the targets indexed."""
    repo, store, targets = facts.repo, facts.store, facts.targets
    every = [c.sha for t in targets.values() for c in t.commits]
    todo = [sha for sha in dict.fromkeys(every) if sha not in store.patch_ids]
    progress.phase(f"fetching the blobs {len(todo):,} commits touch" if repo.blobless
                   else f"reading {len(todo):,} commits")
    cannot = blobs.unreadable_commits(repo, todo, facts.unreadable) if todo else {}
    for commit in cannot:
        store.patch_ids[commit] = ""  # git cannot make its patch: no patch-id
    progress.phase(f"reading {len(todo):,} commits' patch-ids, files and tests added")
    stop = threading.Event()
    with pool(1, stop) as side:  # git's patch-ids while Python reads tests
        ids = side.submit(history.fill_patch_ids, repo.path, todo, store)
        history.fill_files(repo.path, every, store)
        changes = changes_of(targets, since)
        _fill_added(repo, changes, store, cannot)
        ids.result()
    for each in targets.values():
        _index(each, store, facts.upstream, targets)
    return changes


def _decide_all(facts: Facts, changes: Sequence[Change], branches: list[str],
                progress: PhaseProgress, workers: int) -> None:
    """Decide every change on every branch, a part at a time on ``workers`` threads."""
    store = facts.store
    for name, each in facts.targets.items():  # the test files the already-present rule reads
        facts.read_files(name, [node.split("::", 1)[0] for c in changes
                                if c.branch != name and c.commit not in each.reachable
                                and f"{c.commit}:{each.head}" not in store.present
                                for node in store.added.get(c.commit, [])])
    progress.phase("deciding", len(changes))
    with pool(workers, threading.Event()) as deciding:
        for first in range(0, len(changes), history.CHUNK):
            part = changes[first:first + history.CHUNK]
            list(deciding.map(_decide, part, [branches] * len(part), [facts] * len(part)))
            progress.add(len(part))


def branch_heads(repo: RepoCache, branches: Sequence[str], *,
                 offline: bool) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each branch's head, fetched or (offline) as last fetched, None where it is not there; and
    for those, why."""
    heads: dict[str, str | None] = {}
    if offline:
        for name in branches:
            try:
                heads[name] = repo.local_heads([name])[name]
            except BackportError:
                heads[name] = None
        why = "not in the cache (run without --offline to fetch it)"
    else:
        present = [name for name, sha in repo.remote_heads(branches).items() if sha]
        fetched = repo.fetch(present) if present else {}
        heads = {name: fetched.get(name) for name in branches}
        why = f"not a branch of {redact(repo.upstream_url)}"
    return heads, {name: why for name, sha in heads.items() if not sha}
