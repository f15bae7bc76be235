"""The source PR of a from-PR backport, read from the cache repository: the commits that are
proven its own, what its GitCode squash commit says (`git/squash_message.py`), and the commit
the backport exports.

A merged PR's change is the commit on its base with exactly the PR's files, committed no earlier
than its merge (less ``MERGE_CLOCK_SKEW``): the forge's ``merge_commit_sha``, else the oldest
whose squash message names it; anyone can quote ``!N``, so the others are passed over, named by
sha. An open PR's change runs from where its head ref leaves the base.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from backport.errors import BackportError
from backport.git.cache import TRACKING, RepoCache
from backport.git.run import changed_files, git
from backport.git.squash_message import merge_line, read_message, squash_names
from backport.redact import redact

# The squash commit is written a moment before the merge is recorded, by other hosts' clocks.
MERGE_CLOCK_SKEW = timedelta(minutes=10)
# Why a commit naming !N was not taken (the plan names it by sha with one of these).
FILES_DIFFER = "its files are not the PR's"
BEFORE_MERGE = "committed before the PR was merged"
LATER = "a later commit with the PR's files"


@dataclass(frozen=True)
class PassedOver:
    """A commit on the base whose message names the PR but that was not taken, and why."""

    sha: str
    why: str


@dataclass(frozen=True)
class SourceCommits:
    """What a from-PR set exports (one sha or ``A..B``), and the commits passed over."""

    rev: str
    commit: str  # the landed commit, or the open PR's head
    found_by: str
    passed_over: tuple[PassedOver, ...] = ()


@dataclass(frozen=True)
class NamedCommit:
    """A commit on the base whose message is PR N's squash message."""

    sha: str
    time: int  # committer time, epoch seconds


@dataclass(frozen=True)
class SquashMerge:
    """A PR as its squash commit on ``base`` tells it."""

    base: str
    head: str
    title: str
    body: str
    author: str
    merged_at: str  # the committer date, ISO 8601 with its zone
    files: tuple[tuple[str | None, str | None], ...]  # (old, new) per file, as a forge lists


def same_files(pr_paths: Iterable[str], commit_paths: Iterable[str]) -> bool:
    """A commit is a PR's change only when it touches exactly the PR's paths (at least one)."""
    wanted = frozenset(pr_paths)
    return bool(wanted) and wanted == frozenset(commit_paths)


def merge_bound(merged_at: str) -> int | None:
    """The earliest commit time a PR merged at ``merged_at`` (ISO 8601 with its zone) may have."""
    try:
        when = datetime.fromisoformat(merged_at.strip())
    except ValueError:
        return None
    return int((when - MERGE_CLOCK_SKEW).timestamp()) if when.tzinfo else None


def _git(repo: RepoCache, args: list[str]) -> str:
    return git(args, cwd=repo.path, env=repo.env).stdout


def _parents(repo: RepoCache, sha: str) -> list[str]:
    return _git(repo, ["rev-list", "--parents", "-1", sha, "--"]).split()[1:]


def _changes(repo: RepoCache, sha: str) -> list[tuple[str, str]]:
    """(status, path) of each file ``sha`` changes against its first parent (trees only)."""
    parents = _parents(repo, sha)
    return changed_files(repo.path, parents[0] if parents else None, sha, repo.env)


def _landed_rev(repo: RepoCache, sha: str) -> str:
    """``sha`` when it is one commit; for a merge commit, the commits it brought in."""
    parents = _parents(repo, sha)
    if len(parents) < 2:
        return sha
    return f"{_git(repo, ['merge-base', parents[0], parents[1]]).strip()}..{parents[1]}"


def _log(repo: RepoCache, *args: str) -> list[tuple[str, int, str, str, str]]:
    """(sha, committer time, its ISO form, author, message) of each commit ``log`` lists."""
    records = (record.strip("\n").split("\x00", 4) for record in
               _git(repo, ["log", "--format=%H%x00%ct%x00%cI%x00%an%x00%B%x1e", "--fixed-strings",
                          *args, "--"]).split("\x1e"))
    return [(f[0], int(f[1]), f[2], f[3], f[4]) for f in records if len(f) == 5 and f[1].isdigit()]


def choose(named: list[NamedCommit], files_of: dict[str, frozenset[str]], pr_paths: frozenset[str],
           bound: int | None) -> tuple[str | None, tuple[PassedOver, ...]]:
    """The oldest of ``named`` since ``bound`` with the PR's files; why each other was not."""
    taken: str | None = None
    passed = []
    for commit in named:
        if bound is not None and commit.time < bound:
            passed.append(PassedOver(commit.sha, BEFORE_MERGE))
        elif not same_files(pr_paths, files_of[commit.sha]):
            passed.append(PassedOver(commit.sha, FILES_DIFFER))
        elif taken is not None:
            passed.append(PassedOver(commit.sha, LATER))
        else:
            taken = commit.sha
    return taken, tuple(passed)


def _first_few(items: list[str], limit: int) -> str:
    """``a, b and 3 more``: the first ``limit`` items and how many are left."""
    more = f" and {len(items) - limit} more" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def describe_passed_over(passed: Iterable[PassedOver]) -> str:
    """``abc123456789 (its files are not the PR's), …``."""
    return _first_few([f"{p.sha[:12]} ({p.why})" for p in passed], 5)


def landed(repo: RepoCache, base: str, number: int, merge_commit_sha: str, *,
           pr_paths: Iterable[str], merged_at: str) -> SourceCommits:
    """What merged PR ``number`` put on ``base``, proven; else ``source-unproven``, saying why."""
    paths = frozenset(pr_paths)
    if not paths:
        raise BackportError("source-unproven", f"PR !{number} is merged but the forge lists no "
                                               f"file it changes, so no commit on '{base}' can "
                                               f"be proven to be its change")
    sha, sha_seen = merge_commit_sha, ""
    # a partial clone asks the upstream for a commit it lacks
    if sha and all(git(args, cwd=repo.path, env=repo.env, check=False).ok for args in (
            ["cat-file", "-e", f"{sha}^{{commit}}"],
            ["merge-base", "--is-ancestor", sha, f"{TRACKING}{base}"])):
        if same_files(paths, commit_paths(repo, sha)):
            return SourceCommits(_landed_rev(repo, sha), sha, "merge_commit_sha")
        sha_seen = f"its merge_commit_sha {sha[:12]} changes other files; "
    elif sha:
        sha_seen = f"its merge_commit_sha {sha[:12]} is not on '{base}'; "
    named = [NamedCommit(sha, time) for sha, time, _, _, message  # its squash commits, oldest first
             in reversed(_log(repo, f"--grep=!{number}", f"{TRACKING}{base}"))
             if squash_names(message, number)]
    named.sort(key=lambda commit: commit.time)
    files_of = {commit.sha: commit_paths(repo, commit.sha) for commit in named}
    found, passed = choose(named, files_of, paths, merge_bound(merged_at))
    if found is not None:
        return SourceCommits(_landed_rev(repo, found), found, "squash message", passed)
    seen = (f"{len(named)} commit{'s name' if len(named) != 1 else ' names'} it but none is "
            f"its change: {describe_passed_over(passed)}" if named
            else f"no commit names it in a squash message ('!{number} merge … into {base}')")
    raise BackportError("source-unproven", redact(
        f"PR !{number} is merged{f' at {merged_at}' if merged_at else ''} with "
        f"{len(paths)} file{'s' if len(paths) != 1 else ''} ({_first_few(sorted(paths), 3)}), "
        f"but no commit on '{base}' of {repo.upstream_url} is proven to be its change: "
        f"{sha_seen}{seen}"))


def commit_paths(repo: RepoCache, sha: str) -> frozenset[str]:
    """Every path commit ``sha`` changes against its first parent (a rename as both names)."""
    return frozenset(path for _, path in _changes(repo, sha))


def open_commits(repo: RepoCache, base: str, number: int) -> SourceCommits:
    """Open PR ``number``'s own commits: from where its head leaves ``base`` to its head."""
    head = repo.fetch_pr_head(number)
    out = git(["merge-base", f"{TRACKING}{base}", head], cwd=repo.path, check=False)
    fork_point = out.stdout.strip() if out.ok else ""
    if not fork_point:
        raise BackportError("usage", f"the head of PR !{number} shares no history with '{base}'")
    if fork_point == head:
        raise BackportError("usage", f"PR !{number} has no commit that is not already on '{base}'")
    return SourceCommits(f"{fork_point}..{head}", head, "head ref")


def find_squash_merge(repo: RepoCache, branches: Sequence[str],
                      number: int) -> SquashMerge | None:
    """PR ``number``'s oldest squash merge on one of ``branches`` (first parents only)."""
    found = [(time, sha, branch, line.group(2), when, author, message) for branch in branches
             for sha, time, when, author, message in _log(
                 repo, "--first-parent", f"--grep=!{number} merge", f"{TRACKING}{branch}")
             if (line := merge_line(message, number)) and line.group(3) == branch
             and squash_names(message, number)]
    if not found:
        return None
    _, sha, branch, head, when, author, message = min(found)
    title, body, login = read_message(message, number, author)
    files = tuple((None, path) if status == "A" else (path, None) if status == "D"
                  else (path, path) for status, path in _changes(repo, sha))
    return SquashMerge(base=branch, head=head, title=title, body=body, author=login,
                       merged_at=when, files=files)


def restate(repo: Path, sha: str, message: str) -> str:
    """A commit (on no branch) with ``sha``'s tree, parent, author and date and ``message``;
    the committer is the author too, so every host makes the same sha and needs no identity."""
    name, email, date = git(["log", "-1", "--date=raw", "--format=%an%x00%ae%x00%ad", sha],
                            cwd=repo).stdout.rstrip("\n").split("\x00")
    env = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", name), ("EMAIL", email), ("DATE", date))}
    return git(["commit-tree", f"{sha}^{{tree}}", "-p", f"{sha}^", "-F", "-"], cwd=repo,
               env=env, stdin=message.encode("utf-8")).stdout.strip()


def message_of(repo: Path, sha: str) -> str:
    return git(["log", "-1", "--format=%B", sha], cwd=repo).stdout
