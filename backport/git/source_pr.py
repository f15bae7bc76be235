"""The commits an upstream PR carries, found in the cache repository.

A merged PR: what landed on its base branch — the forge's ``merge_commit_sha`` when it is on
the base, else the base commit whose GitCode squash message names ``!N`` (``!N merge <head>
into <base>`` … ``See merge request: <owner>/<repo>!N``); never the PR's own head commits, which
a squash merge may leave unserved. An open PR: its head ref ``refs/merge-requests/N/head``,
from where it leaves the base.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backport.errors import BackportError
from backport.git.cache import REMOTE, TRACKING, RepoCache
from backport.git.run import first_error_line, git, is_unreachable
from backport.redact import redact

FOUND_BY_MERGE_SHA = "merge_commit_sha"
FOUND_BY_SQUASH = "squash message"
FOUND_BY_HEAD = "head ref"
_PR_HEADS = "refs/backport/pr/"


@dataclass(frozen=True)
class SourceCommits:
    """What ``new --from-pr`` exports: ``rev`` (one sha or ``A..B``) and the commit it names."""

    rev: str
    commit: str  # the landed commit, or the open PR's head
    found_by: str


def squash_names(message: str, number: int) -> bool:
    """Whether a commit message is GitCode's squash message of PR ``number`` (not ``!N0``):
    its ``!N merge <head> into <base>`` line, or its last ``See merge request: …!N`` line."""
    n = re.escape(str(number))
    if re.search(rf"^\s*!{n} merge \S+ into \S+\s*$", message, re.MULTILINE):
        return True
    trailers = re.findall(r"^See merge request: \S+?!(\d+)\s*$", message, re.MULTILINE)
    return bool(trailers) and trailers[-1] == str(number)


def _is_commit(repo: RepoCache, sha: str) -> bool:
    """Whether ``sha`` is a commit here (a partial clone asks the upstream for it)."""
    return git(["cat-file", "-e", f"{sha}^{{commit}}"], cwd=repo.path, env=repo.env,
               check=False).ok


def _on_branch(repo: RepoCache, sha: str, base: str) -> bool:
    return git(["merge-base", "--is-ancestor", sha, f"{TRACKING}{base}"], cwd=repo.path,
               env=repo.env, check=False).ok


def _landed_rev(repo: RepoCache, sha: str) -> str:
    """``sha`` when it is one commit; for a merge commit, the commits it brought in."""
    parents = git(["rev-list", "--parents", "-1", sha, "--"], cwd=repo.path).stdout.split()[1:]
    if len(parents) < 2:
        return sha
    fork_point = git(["merge-base", parents[0], parents[1]], cwd=repo.path).stdout.strip()
    return f"{fork_point}..{parents[1]}"


def _by_squash_message(repo: RepoCache, base: str, number: int) -> str | None:
    """The newest commit on ``base`` whose message is PR ``number``'s squash message."""
    out = git(["log", "--format=%H%x00%B%x1e", "--fixed-strings", f"--grep=!{number}",
               f"{TRACKING}{base}", "--"], cwd=repo.path)
    for record in out.stdout.split("\x1e"):
        sha, _, message = record.strip("\n").partition("\x00")
        if sha and squash_names(message, number):
            return sha
    return None


def landed(repo: RepoCache, base: str, number: int, merge_commit_sha: str) -> SourceCommits:
    """What merged PR ``number`` put on ``base`` (fetched into ``repo`` first)."""
    sha = merge_commit_sha
    if sha and _is_commit(repo, sha) and _on_branch(repo, sha, base):
        return SourceCommits(_landed_rev(repo, sha), sha, FOUND_BY_MERGE_SHA)
    found = _by_squash_message(repo, base, number)
    if found is None:
        given = (f"its merge_commit_sha {sha[:12]} is not on '{base}' and " if sha else "")
        raise BackportError("usage", redact(
            f"PR !{number} is merged but {given}no commit on '{base}' of {repo.upstream_url} "
            f"names it in a squash message ('!{number} merge … into {base}')"))
    return SourceCommits(_landed_rev(repo, found), found, FOUND_BY_SQUASH)


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
