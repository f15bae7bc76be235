"""The commits an upstream PR carries, found in the cache repository and proven to be its own.

A merged PR: what landed on its base branch. A commit there is PR N's only when the files it
changes are exactly the files the forge lists for PR N (``/pulls/N/files``) and it was committed
no earlier than the PR's merge time (less ``MERGE_CLOCK_SKEW``): the forge's
``merge_commit_sha`` when it is on the base and its files match, else the oldest such commit
whose GitCode squash message names ``!N`` (``!N merge <head> into <base>`` … ``See merge
request: <owner>/<repo>!N``). Every other commit whose message names ``!N`` that way is passed
over and reported by sha: anyone who gets a commit onto the base can quote ``!N``, so a message
alone proves nothing. Never the PR's own head commits, which a squash merge may leave
unserved. An open PR: its head ref ``refs/merge-requests/N/head``, from where it leaves the
base (only the PR's author moves that ref).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from backport.errors import BackportError
from backport.git.apply import patch_ids, same_change
from backport.git.cache import REMOTE, TRACKING, RepoCache
from backport.git.run import first_error_line, git, is_unreachable
from backport.git.source_message import GENERATED
from backport.numerals import DIGITS
from backport.numerals import number as bounded
from backport.redact import redact

FOUND_BY_MERGE_SHA = "merge_commit_sha"
FOUND_BY_SQUASH = "squash message"
FOUND_BY_HEAD = "head ref"
_PR_HEADS = "refs/backport/pr/"
# How much earlier than the forge's `merged_at` the landed commit may say it was committed: the
# squash commit is written a moment before the merge is recorded, by other hosts' clocks.
MERGE_CLOCK_SKEW = timedelta(minutes=10)
# Why a commit naming !N was not taken (the plan names it by sha with one of these).
FILES_DIFFER = "its files are not the PR's"
BEFORE_MERGE = "committed before the PR was merged"
LATER = "a later commit with the PR's files"
_SHOWN_FILES = 3  # files named in the sentence when no commit proves the source


@dataclass(frozen=True)
class PassedOver:
    """A commit on the base whose message names the PR but that was not taken, and why."""

    sha: str
    why: str


@dataclass(frozen=True)
class SourceCommits:
    """What ``new --from-pr`` exports: ``rev`` (one sha or ``A..B``) and the commit it names,
    with the commits naming the PR that were passed over."""

    rev: str
    commit: str  # the landed commit, or the open PR's head
    found_by: str
    passed_over: tuple[PassedOver, ...] = ()


_TRAILER = re.compile(rf"^See merge request: \S+?!({DIGITS})\s*$", re.MULTILINE)
_MERGE_LINE = re.compile(rf"^\s*!({DIGITS}) merge (\S+) into \S+\s*$", re.MULTILINE)


def squash_names(message: str, number: int) -> bool:
    """Whether a commit message is GitCode's squash message of PR ``number`` (not ``!N0``):
    its last ``See merge request: …!N`` trailer when it has one (GitCode writes it after the
    PR's own text, which may quote another PR's lines), else its ``!N merge <head> into
    <base>`` line."""
    trailers = _TRAILER.findall(message)
    if trailers:
        return trailers[-1] == str(number)
    n = re.escape(str(number))
    return bool(re.search(rf"^\s*!{n} merge \S+ into \S+\s*$", message, re.MULTILINE))


def squash_number(message: str) -> int | None:
    """The PR whose GitCode squash message ``message`` is (the number :func:`squash_names`
    accepts), or None when it is none."""
    trailers = _TRAILER.findall(message)
    said = [trailers[-1]] if trailers else [m.group(1) for m in _MERGE_LINE.finditer(message)]
    found = (bounded(digits) for digits in said)
    return next((n for n in found if n is not None and squash_names(message, n)), None)


def squash_head(message: str, number: int) -> str:
    """The head branch the squash message of PR ``number`` says it merged ("" when it says
    none): its merge line in GitCode's generated block when the message has one (the text
    before it is the author's, who may quote any line)."""
    generated = message.split(GENERATED, 1)
    for match in _MERGE_LINE.finditer(generated[-1]):
        if bounded(match.group(1)) == number:
            return match.group(2)
    return ""


def same_files(pr_paths: Iterable[str], commit_paths: Iterable[str]) -> bool:
    """The file rule: a commit is a PR's change only when it touches exactly the PR's paths
    (both names of a rename on each side), and the PR touches at least one."""
    wanted = frozenset(pr_paths)
    return bool(wanted) and wanted == frozenset(commit_paths)


def merge_bound(merged_at: str) -> int | None:
    """The earliest commit time (epoch seconds) a PR merged at ``merged_at`` (ISO 8601, as the
    forge writes it) may have landed with; None when the time is not given or not readable."""
    try:
        when = datetime.fromisoformat(merged_at.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        return None  # a time without its zone cannot be compared with a commit's
    return int((when - MERGE_CLOCK_SKEW).timestamp())


def _is_commit(repo: RepoCache, sha: str) -> bool:
    """Whether ``sha`` is a commit here (a partial clone asks the upstream for it)."""
    return git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo.path, env=repo.env,
               check=False).ok


def _on_branch(repo: RepoCache, sha: str, base: str) -> bool:
    return git(["merge-base", "--is-ancestor", sha, f"{TRACKING}{base}"], cwd=repo.path,
               env=repo.env, check=False).ok


def changed_paths(repo: RepoCache, sha: str) -> frozenset[str]:
    """Every path commit ``sha`` changes against its first parent (renames as both names; a
    root commit against nothing). Reads trees only: no blob of a blobless cache is fetched."""
    parents = git(["rev-list", "--parents", "-1", sha, "--"], cwd=repo.path,
                  env=repo.env).stdout.split()[1:]
    against = [parents[0], sha] if parents else ["--root", sha]
    out = git(["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--name-only",
               *against], cwd=repo.path, env=repo.env)
    return frozenset(p for p in out.stdout.split("\0") if p)


def _landed_rev(repo: RepoCache, sha: str) -> str:
    """``sha`` when it is one commit; for a merge commit, the commits it brought in."""
    parents = git(["rev-list", "--parents", "-1", sha, "--"], cwd=repo.path).stdout.split()[1:]
    if len(parents) < 2:
        return sha
    fork_point = git(["merge-base", parents[0], parents[1]], cwd=repo.path).stdout.strip()
    return f"{fork_point}..{parents[1]}"


@dataclass(frozen=True)
class NamedCommit:
    """A commit on the base whose message is PR N's squash message."""

    sha: str
    time: int  # committer time, epoch seconds


def _naming(repo: RepoCache, base: str, number: int) -> list[NamedCommit]:
    """The commits on ``base`` whose message is PR ``number``'s squash message, oldest first."""
    out = git(["log", "--format=%H%x00%ct%x00%B%x1e", "--fixed-strings", f"--grep=!{number}",
               f"{TRACKING}{base}", "--"], cwd=repo.path)
    found = []
    for order, record in enumerate(out.stdout.split("\x1e")):
        sha, _, rest = record.strip("\n").partition("\x00")
        time, _, message = rest.partition("\x00")
        if sha and time.isdigit() and squash_names(message, number):
            found.append((int(time), -order, NamedCommit(sha, int(time))))
    return [named for *_, named in sorted(found, key=lambda f: (f[0], f[1]))]


def choose(named: list[NamedCommit], files_of: dict[str, frozenset[str]], pr_paths: frozenset[str],
           bound: int | None) -> tuple[str | None, tuple[PassedOver, ...]]:
    """The rule, given the commits naming the PR (oldest first), the files each changes, the
    PR's files and the earliest time it may have landed: the oldest commit at or after that
    time with exactly the PR's files, and every other one with why it was not taken."""
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


def _files_said(paths: frozenset[str]) -> str:
    shown = sorted(paths)
    more = f" and {len(shown) - _SHOWN_FILES} more" if len(shown) > _SHOWN_FILES else ""
    return f"{len(shown)} file{'s' if len(shown) != 1 else ''} ({', '.join(shown[:_SHOWN_FILES])}{more})"


_SHOWN_COMMITS = 5  # commits named by sha in one sentence; the rest are counted


def passed_over_said(passed: Iterable[PassedOver]) -> str:
    """``abc123456789 (its files are not the PR's), …``: the commits not taken, by sha."""
    listed = list(passed)
    said = ", ".join(f"{p.sha[:12]} ({p.why})" for p in listed[:_SHOWN_COMMITS])
    more = len(listed) - _SHOWN_COMMITS
    return f"{said} and {more} more" if more > 0 else said


def landed(repo: RepoCache, base: str, number: int, merge_commit_sha: str, *,
           pr_paths: Iterable[str], merged_at: str) -> SourceCommits:
    """What merged PR ``number`` put on ``base`` (fetched into ``repo`` first), proven by the
    PR's files ``pr_paths`` (every path the forge lists for it, both names of a rename) and
    its merge time ``merged_at``; a BackportError ``source-unproven`` naming what was seen when
    no commit proves it."""
    paths = frozenset(pr_paths)
    if not paths:
        raise BackportError("source-unproven", f"PR !{number} is merged but the forge lists no "
                                               f"file it changes, so no commit on '{base}' can "
                                               f"be proven to be its change")
    sha = merge_commit_sha
    sha_seen = ""
    if sha and _is_commit(repo, sha) and _on_branch(repo, sha, base):
        if same_files(paths, changed_paths(repo, sha)):
            return SourceCommits(_landed_rev(repo, sha), sha, FOUND_BY_MERGE_SHA)
        sha_seen = f"its merge_commit_sha {sha[:12]} changes other files; "
    elif sha:
        sha_seen = f"its merge_commit_sha {sha[:12]} is not on '{base}'; "
    named = _naming(repo, base, number)
    files_of = {commit.sha: changed_paths(repo, commit.sha) for commit in named}
    bound = merge_bound(merged_at)
    found, passed = choose(named, files_of, paths, bound)
    if found is not None:
        return SourceCommits(_landed_rev(repo, found), found, FOUND_BY_SQUASH, passed)
    seen = (f"{len(named)} commit{'s name' if len(named) != 1 else ' names'} it but none is "
            f"its change: {passed_over_said(passed)}" if named
            else f"no commit names it in a squash message ('!{number} merge … into {base}')")
    raise BackportError("source-unproven", redact(
        f"PR !{number} is merged{f' at {merged_at}' if merged_at else ''} with "
        f"{_files_said(paths)}, but no commit on '{base}' of {repo.upstream_url} is proven to "
        f"be its change: {sha_seen}{seen}"))


def fetch_head(repo: RepoCache, number: int) -> str:
    """Fetch ``refs/merge-requests/N/head`` from the upstream; its sha."""
    local = f"{_PR_HEADS}{number}/head"
    refspec = f"+refs/merge-requests/{number}/head:{local}"
    with repo.lock():
        repo.ensure()
        filt = "--filter=blob:none" if repo.blobless else "--no-filter"
        out = git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", filt, "--", REMOTE,
                   refspec], cwd=repo.path, env=repo.env, check=False)
        if not out.ok:
            url = redact(repo.upstream_url)
            reason = redact(first_error_line(out.text).rstrip("."))
            code = "upstream-unreachable" if is_unreachable(out.text) else "git"
            raise BackportError(code, f"cannot fetch the commits of PR !{number} "
                                      f"(refs/merge-requests/{number}/head) from {url}: {reason}.")
        return git(["rev-parse", "--verify", f"{local}^{{commit}}"], cwd=repo.path).stdout.strip()


def open_commits(repo: RepoCache, base: str, number: int) -> SourceCommits:
    """Open PR ``number``'s own commits: from where its head leaves ``base`` to its head."""
    head = fetch_head(repo, number)
    fork_point = git(["merge-base", f"{TRACKING}{base}", head], cwd=repo.path,
                     check=False).stdout.strip()
    if not fork_point:
        raise BackportError("usage", f"the head of PR !{number} shares no history with '{base}'")
    if fork_point == head:
        raise BackportError("usage", f"PR !{number} has no commit that is not already on '{base}'")
    return SourceCommits(f"{fork_point}..{head}", head, FOUND_BY_HEAD)


MAX_CARRIER_COMMITS = 100  # a PR with more commits is not read for the change


def carries_change(repo: RepoCache, number: int, base: str, patches: Sequence[bytes]) -> bool:
    """Whether open or merged PR ``number`` into ``base`` carries the change ``patches`` (the
    set's format-patch files) make: each patch's ``patch-id --stable`` is that of one of the
    PR's own commits, or of all of them together (its head ref fetched first; a PR whose head
    cannot be fetched, or with more than ``MAX_CARRIER_COMMITS`` commits, does not)."""
    wanted = [patch_ids(repo.path, data, repo.env) for data in patches]
    if not wanted or not all(wanted):
        return False
    try:
        head = fetch_head(repo, number)
    except BackportError:
        return False
    fork_point = git(["merge-base", f"{TRACKING}{base}", head], cwd=repo.path, env=repo.env,
                     check=False).stdout.strip()
    if not fork_point or fork_point == head:
        return False
    count = git(["rev-list", "--count", f"{fork_point}..{head}", "--"], cwd=repo.path,
                env=repo.env).stdout.strip()
    if not count.isdigit() or int(count) > MAX_CARRIER_COMMITS:
        return False
    each = git(["log", "-p", "--no-color", "--no-ext-diff", "--format=commit %H",
                f"{fork_point}..{head}", "--"], cwd=repo.path, env=repo.env)
    whole = git(["diff", "--no-color", "--no-ext-diff", fork_point, head, "--"], cwd=repo.path,
                env=repo.env)
    found = (patch_ids(repo.path, each.stdout.encode("utf-8", "surrogateescape"), repo.env)
             | patch_ids(repo.path, whole.stdout.encode("utf-8", "surrogateescape"), repo.env))
    return same_change(wanted, found)
