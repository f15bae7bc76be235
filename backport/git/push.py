"""Read and move a branch of the fork: ``ls-remote`` and ``push --force-with-lease``, both
sealed (`token_git`: the token travels in the askpass environment, never in argv or a URL)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from backport.errors import BackportError, ErrorCode, ForkDiverged
from backport.git.run import (
    check_branch_name,
    first_error_line,
    is_unreachable,
    ls_remote,
    token_git,
    transport_url,
)
from backport.redact import redact

_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_LEASE_FAILED = ("stale info", "fetch first", "non-fast-forward", "[rejected]")
_NOISE = ("failed to push some refs", "could not read from remote repository")


def _check_sha(sha: str, what: str) -> None:
    if not _SHA.match(sha or ""):
        raise BackportError(ErrorCode.USAGE, f"{what} {sha!r} is not a full commit id.")


def remote_sha(url: str, branch: str, env: Mapping[str, str] | None = None) -> str | None:
    """The sha of ``refs/heads/<branch>`` on ``url``, or None when the branch does not exist."""
    return ls_remote(url, [branch], env, ErrorCode.FORK_UNREACHABLE,
                     f"cannot read branch '{branch}' from {redact(url)}")[branch]


def remote_shas(url: str, branches: list[str],
                env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The sha of each of ``branches`` on ``url`` in one ``ls-remote`` (None: no such branch)."""
    return ls_remote(url, branches, env, ErrorCode.FORK_UNREACHABLE,
                     f"cannot read the fork branches from {redact(url)}")


def push_branch(repo: Path, url: str, sha: str, branch: str, *, expect: str | None,
                env: Mapping[str, str] | None = None) -> None:
    """Set ``refs/heads/<branch>`` on ``url`` to ``sha`` if it is still at ``expect`` (None: not
    there yet); ``fork-diverged`` when someone else moved it (left alone)."""
    check_branch_name(branch)
    _check_sha(sha, "commit")
    if expect is not None:
        _check_sha(expect, "expected commit")
    ref = f"refs/heads/{branch}"
    out = token_git(
        ["push", "--porcelain", "--no-verify", f"--force-with-lease={ref}:{expect or ''}",
         "--", transport_url(url), f"{sha}:{ref}"],
        repo=Path(repo), urls=(url,), env=env, check=False)
    rejected = [line for line in out.stdout.splitlines()
                if line.startswith("!\t") and line.split("\t")[1].endswith(f":{ref}")]
    if out.ok and not rejected:
        return
    shown = redact(url)
    if any(marker in line for line in rejected for marker in _LEASE_FAILED):
        try:
            now = remote_sha(url, branch, env)
        except BackportError:
            now = None
        raise ForkDiverged(
            f"fork branch '{branch}' on {shown} was moved by someone else "
            f"(now at {now[:7] if now else 'absent'}, expected {expect[:7] if expect else 'absent'}); "
            "it was left untouched: inspect that commit, then delete the fork branch "
            "if it may be replaced and run again.",
            remote=now, expected=expect,
        )
    reasons = [rejected[0].split("\t")[-1].strip()] if rejected else []
    reasons += _causes(out.text) or ([] if reasons else [first_error_line(out.text).rstrip(".")])
    reason = redact("; ".join(dict.fromkeys(reasons)))
    code = ErrorCode.FORK_UNREACHABLE if is_unreachable(out.text) else ErrorCode.GIT
    raise BackportError(code, f"cannot push branch '{branch}' to {shown}: {reason}.",
                        details={"output": redact(out.text)})


def _causes(text: str) -> list[str]:
    """git's ``fatal:`` / ``error:`` / ``remote:`` lines: why a push was rejected."""
    causes = []
    for raw in text.splitlines():
        line = raw.strip()
        for prefix in ("fatal:", "error:", "remote: fatal:", "remote: error:", "remote:"):
            if line.startswith(prefix):
                cause = line[len(prefix):].strip().rstrip(".")
                if cause and not any(n in cause.lower() for n in _NOISE):
                    causes.append(cause)
                break
    return causes[:4]
