"""The one place git processes are started: argv lists, C locale, no prompts, one-sentence errors."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import git as gitpython

from backport.errors import BackportError
from backport.redact import redact

# Forced on every git call: messages are parsed, and git must never wait for a password.
BASE_ENV: dict[str, str] = {
    "LANG": "C",
    "LC_ALL": "C",
    "LANGUAGE": "C",
    "GIT_TERMINAL_PROMPT": "0",
}


@dataclass(frozen=True)
class GitOutput:
    """What one git process printed and how it exited."""

    args: tuple[str, ...]
    status: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def text(self) -> str:
        """stdout and stderr together, for parsing messages that may go to either."""
        return f"{self.stdout}\n{self.stderr}"


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment overrides for a git call: ``extra`` plus the forced locale and no prompts."""
    env = dict(extra or {})
    env.update(BASE_ENV)
    return env


def first_error_line(text: str) -> str:
    """The most telling line of git's output: the first ``fatal:``/``error:`` line, else the last."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for prefix in ("fatal:", "error:"):
        for line in lines:
            if line.startswith(prefix):
                return line[len(prefix):].strip()
    return lines[-1] if lines else "no output"


def git(
    args: Sequence[str],
    *,
    cwd: Path | None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
    check: bool = True,
    code: str = "git",
    timeout: float | None = None,
) -> GitOutput:
    """Run ``git <args>`` in ``cwd`` and return its output.

    ``env`` is laid over the inherited environment (``LANG=C``, ``LC_ALL=C`` and
    ``GIT_TERMINAL_PROMPT=0`` always win). With ``check`` a non-zero exit raises
    ``BackportError(code, ...)`` whose message is one redacted sentence.
    """
    argv = ["git", *args]
    if cwd is not None and not Path(cwd).is_dir():
        # GitPython silently falls back to the process's own directory; never let it.
        raise BackportError(code, f"cannot run git {args[0]}: directory {cwd} does not exist.")
    runner = gitpython.Git(str(cwd) if cwd is not None else None)
    stdin_file = None
    try:
        if stdin is not None:
            stdin_file = tempfile.TemporaryFile()
            stdin_file.write(stdin)
            stdin_file.flush()
            stdin_file.seek(0)
        status, out, err = runner.execute(
            argv,
            istream=stdin_file,
            with_extended_output=True,
            with_exceptions=False,
            env=git_env(env),
            strip_newline_in_stdout=False,
            kill_after_timeout=timeout,
        )
    except gitpython.GitCommandNotFound as exc:
        raise BackportError(code, "git is not installed or not on PATH.") from exc
    finally:
        if stdin_file is not None:
            stdin_file.close()
    result = GitOutput(tuple(args), int(status), str(out), str(err))
    if check and not result.ok:
        raise failure(result, code, cwd)
    return result


def failure(result: GitOutput, code: str = "git", cwd: Path | None = None) -> BackportError:
    """A BackportError describing a failed git call in one redacted sentence."""
    where = f" in {cwd}" if cwd is not None else ""
    reason = first_error_line(result.text).rstrip(".")
    message = redact(f"git {result.args[0]} failed{where}: {reason}.")
    return BackportError(code, message, details={"exit": result.status})


def is_local_path(url: str) -> bool:
    """True when ``url`` names a repository on this machine by plain path (not a URL or scp form)."""
    if "://" in url:
        return False
    colon, slash = url.find(":"), url.find("/")
    # git reads "host:path" as ssh when the colon comes before any slash.
    return colon == -1 or (slash != -1 and slash < colon)


def transport_url(url: str) -> str:
    """``url`` with a plain local path turned into a ``file://`` URL (so partial clone filters work)."""
    if is_local_path(url):
        return "file://" + os.path.abspath(os.path.expanduser(url))
    return url


def check_branch_name(branch: str) -> None:
    """Reject names git would read as an option or that are not valid branch names."""
    bad = (
        not branch
        or branch.startswith("-")
        or branch.startswith("/")
        or branch.endswith((".", "/", ".lock"))
        or ".." in branch
        or "//" in branch
        or "@{" in branch
        or any(ch in branch for ch in " ~^:?*[\\")
        or any(ord(ch) < 32 or ord(ch) == 127 for ch in branch)
    )
    if bad:
        raise BackportError("usage", redact(f"invalid branch name {branch!r}."))


_UNREACHABLE = (
    "could not read from remote repository",
    "does not appear to be a git repository",
    "unable to access",
    "could not resolve host",
    "connection refused",
    "connection timed out",
    "operation timed out",
    "authentication failed",
    "terminal prompts disabled",
    "could not read username",
    "permission denied",
    "repository not found",
    "the requested url returned error",
    "unable to connect",
    "no such file or directory",
)


def is_unreachable(text: str) -> bool:
    """True when git's output says the remote could not be reached or read."""
    low = text.lower()
    return any(marker in low for marker in _UNREACHABLE) or (
        "repository" in low and "not found" in low
    )
