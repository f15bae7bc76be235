"""The one place git processes are started: argv lists, C locale, no prompts, timeouts, one-sentence errors.

Every git call of the tool goes through :func:`git`: GitPython's ``Git.execute`` (the mission's
git library) starts git, and `backport.process.finish` waits for it, so a git fetch or push in
flight ends with the run (an interrupt, a timeout) like every other child process.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import git as gitpython

from backport import process
from backport.config.refnames import refname_problem
from backport.config.validate import is_local_path
from backport.errors import BackportError, ErrorCode
from backport.redact import redact

# Forced on every git call: messages are parsed, and git must never wait for a password.
BASE_ENV: dict[str, str] = {
    "LANG": "C",
    "LC_ALL": "C",
    "LANGUAGE": "C",
    "GIT_TERMINAL_PROMPT": "0",
}
# Unless the caller brings its own (the push's token askpass), no askpass program is started.
NO_ASKPASS: dict[str, str] = {"GIT_ASKPASS": "", "SSH_ASKPASS": ""}
# Seconds a git call may take before it is killed with its children. Generous: in a blobless
# cache even a checkout or ``am`` may fetch objects from the upstream.
DEFAULT_TIMEOUT = 1800.0
# Git's auto maintenance of a repository runs after its fetches and commits, a process or more
# each, and after every blob a blobless cache fetches lazily: only the run's fetch of its
# branches (`cache.py`) starts it, once; every other call (and the children it starts, which
# inherit ``-c``) does not.
NO_MAINTENANCE = ("-c", "maintenance.auto=false")
# What every git process of a step that holds the forge token runs with (`token_git`): no
# transport that runs a command, no hook, no file-system monitor; given on the command line,
# they win over every config file git reads.
SEALED_OPTIONS = ("-c", "protocol.ext.allow=never", "-c", "core.hooksPath=/dev/null",
                  "-c", "core.fsmonitor=false")
# The transport of a URL: its scheme, or the helper of git's ``<helper>::<address>`` form.
_SCHEME = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9+.-]*)(?:://|::)")
# Options git takes before its subcommand; the ones in _WITH_VALUE consume the next argument.
_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path"})


@dataclass(frozen=True)
class GitOutput:
    """What one git process printed and how it exited."""

    args: tuple[str, ...]
    status: int
    raw: bytes  # stdout exactly as git wrote it
    stderr: str

    @property
    def stdout(self) -> str:
        """stdout as text (bytes that are not UTF-8 kept as surrogate escapes)."""
        return self.raw.decode("utf-8", "surrogateescape")

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def text(self) -> str:
        """stdout and stderr together, for parsing messages that may go to either."""
        return f"{self.stdout}\n{self.stderr}"

    @property
    def command(self) -> str:
        """The git subcommand, e.g. ``fetch`` for ``git -c x=y fetch ...``."""
        return subcommand(self.args)


def subcommand(args: Sequence[str]) -> str:
    """The first argument of ``args`` that is not one of git's own leading options."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _WITH_VALUE:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return args[0] if args else "git"


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment overrides for a git call: ``extra`` plus the forced locale and no prompts.

    GitPython lays them over this process's environment, so every secret of it is emptied
    (``process.blanked_secrets``); a token reaches git only in ``extra`` (the push's askpass).
    """
    env = {**NO_ASKPASS, **process.blanked_secrets()}
    env.update(extra or {})
    env.update(BASE_ENV)
    return env


def transport_of(url: str) -> str:
    """The git transport ``url`` uses: ``https``, ``file`` for a local path, ``ssh`` for
    ``host:path``."""
    found = _SCHEME.match(transport_url(url))
    name = found.group("name").lower() if found else "ssh"
    return "ssh" if name in ("git+ssh", "ssh+git") else name


def sealed_call(repo: Path | None, urls: Sequence[str], cwd: Path) -> tuple[list[str], dict[str, str]]:
    """The leading options and the environment of a `token_git` call run in ``cwd``.

    ``--git-dir`` names ``repo`` (None: ``/dev/null``, so git runs outside any repository);
    with it and ``GIT_CEILING_DIRECTORIES`` no repository is ever discovered. Only the
    transports of ``urls`` are allowed (``GIT_ALLOW_PROTOCOL``, never ``ext``).
    """
    allowed = sorted({transport_of(url) for url in urls} - {"ext"})
    options = ["--git-dir", str(Path(repo).absolute()) if repo is not None else os.devnull,
               *SEALED_OPTIONS]
    return options, {"GIT_ALLOW_PROTOCOL": ":".join(allowed),
                     "GIT_CEILING_DIRECTORIES": str(Path(cwd).absolute().parent)}


def token_git(args: Sequence[str], *, repo: Path | None, urls: Sequence[str],
              env: Mapping[str, str] | None = None, stdin: bytes | None = None,
              check: bool = True, code: ErrorCode | str = ErrorCode.GIT,
              timeout: float | None = DEFAULT_TIMEOUT) -> GitOutput:
    """`git` for a step that holds the forge token (push, ``ls-remote``, fetch, the publish
    check): it reads no repository but ``repo`` and runs nothing a config file names.

    Its folder is a new empty private one (`sealed_call` for the rest); ``env`` (the
    askpass, ``GIT_INDEX_FILE``) cannot undo the sealing. A failure names ``repo``.
    """
    with tempfile.TemporaryDirectory(prefix="backport-git-") as empty:
        options, sealed = sealed_call(repo, urls, Path(empty))
        out = git([*options, *args], cwd=Path(empty), env={**(env or {}), **sealed},
                  stdin=stdin, check=False, timeout=timeout)
    if check and not out.ok:
        raise failure(GitOutput(tuple(args), out.status, out.raw, out.stderr), code, repo)
    return GitOutput(tuple(args), out.status, out.raw, out.stderr)


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
    code: ErrorCode | str = ErrorCode.GIT,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> GitOutput:
    """Run ``git <args>`` in ``cwd`` and return its output.

    ``env`` is laid over the inherited environment (``LANG=C``, ``LC_ALL=C`` and
    ``GIT_TERMINAL_PROMPT=0`` always win; no askpass program unless ``env`` names one; no
    auto maintenance but after a fetch: `NO_MAINTENANCE`).
    ``stdin`` is fed through a pipe. After ``timeout`` seconds git and its children are killed
    and the call fails as "timed out". With ``check`` a non-zero exit raises
    ``BackportError(code, ...)`` whose message is one redacted sentence.
    """
    if cwd is not None and not Path(cwd).is_dir():
        # GitPython silently falls back to the process's own directory; never let it.
        raise BackportError(code, f"cannot run git {subcommand(args)}: directory {cwd} does not exist.")
    runner = gitpython.Git(str(cwd) if cwd is not None else None)
    argv = ["git", *(() if subcommand(args) == "fetch" else NO_MAINTENANCE), *args]
    try:
        started = runner.execute(
            argv,
            as_process=True,  # waited on by `process.finish`, so it ends with the run
            istream=process.PIPE if stdin is not None else None,
            env=git_env(env),
            start_new_session=True,  # no terminal to prompt on; killed with its children
        )
    except gitpython.GitCommandNotFound as exc:
        raise BackportError(code, f"cannot run git {subcommand(args)}: git is not installed "
                            "or not on PATH.") from exc
    assert started.proc is not None
    ended = process.finish(started.proc, argv, stdin=stdin, timeout=timeout)
    if ended.timed_out:
        result = GitOutput(tuple(args), -9, b"", f"fatal: timed out after {timeout:g} s")
    else:
        result = GitOutput(tuple(args), int(ended.returncode or 0), ended.stdout, ended.err)
    if check and not result.ok:
        raise failure(result, code, cwd)
    return result


def failure(result: GitOutput, code: ErrorCode | str = ErrorCode.GIT,
            cwd: Path | None = None) -> BackportError:
    """A BackportError describing a failed git call in one redacted sentence."""
    where = f" in {cwd}" if cwd is not None else ""
    reason = first_error_line(result.text).rstrip(".")
    message = redact(f"git {result.command} failed{where}: {reason}.")
    return BackportError(code, message, details={"exit": result.status})


def transport_url(url: str) -> str:
    """``url`` with a plain local path turned into a ``file://`` URL (so partial clone filters work)."""
    if is_local_path(url):
        return "file://" + os.path.abspath(os.path.expanduser(url))
    return url


def check_branch_name(branch: str) -> None:
    """Refuse what ``git check-ref-format --branch`` refuses (and ``@``), before git sees it."""
    problem = refname_problem(branch)
    if problem:
        raise BackportError(ErrorCode.USAGE, redact(f"invalid branch name {branch!r}: {problem}."))


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
