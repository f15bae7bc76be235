"""The one git runner, and the reads every part shares (blobs, changed files, ``ls-remote``).

Every git call goes through :func:`git`, run by ``process.run`` (a timeout or an interrupt kills
it with its children): an argv list, ``LANG=C``, no prompt or askpass unless the caller names
one (the push's), auto maintenance only after a fetch, a failure one redacted sentence naming
the subcommand. A step that holds the token calls :func:`token_git`: ``--git-dir`` names the one
repository it reads, its folder is new and empty under ``GIT_CEILING_DIRECTORIES``, no ``ext::``,
hooks or fsmonitor, ``GIT_ALLOW_PROTOCOL`` only its URLs' transports; no config file undoes it.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from backport import process
from backport.config.validate import is_local_path, refname_problem
from backport.errors import BackportError, ErrorCode
from backport.redact import redact

# Forced on every git call: messages are parsed, and git never waits for a password.
BASE_ENV = {"LANG": "C", "LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0"}
NO_ASKPASS = {"GIT_ASKPASS": "", "SSH_ASKPASS": ""}  # unless the caller brings its own
# Auto maintenance (processes after each fetch and commit) runs only after a fetch.
NO_MAINTENANCE = ("-c", "maintenance.auto=false")
SEALED_OPTIONS = ("-c", "protocol.ext.allow=never", "-c", "core.hooksPath=/dev/null",
                  "-c", "core.fsmonitor=false")
# The transport of a URL: its scheme, or the helper of git's ``<helper>::<address>`` form.
_SCHEME = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9+.-]*)(?:://|::)")
# git's options before its subcommand that take the next argument.
_WITH_VALUE = frozenset({"-c", "-C", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_UNREACHABLE = ("could not read from remote repository", "does not appear to be a git repository",
                "unable to access", "could not resolve host", "connection refused",
                "connection timed out", "operation timed out", "authentication failed",
                "terminal prompts disabled", "could not read username", "permission denied",
                "repository not found", "the requested url returned error", "unable to connect",
                "no such file or directory")


@dataclass(frozen=True)
class GitOutput:
    """What one git process printed and how it exited."""

    args: tuple[str, ...]
    status: int
    raw: bytes  # stdout exactly as git wrote it
    stderr: str

    @property
    def stdout(self) -> str:  # bytes that are not UTF-8 kept as surrogate escapes
        return self.raw.decode("utf-8", "surrogateescape")

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def text(self) -> str:  # stdout and stderr: a message may go to either
        return f"{self.stdout}\n{self.stderr}"

    @property
    def reason(self) -> str:  # git's first ``fatal:``/``error:`` line, else its last, redacted
        lines = [line.strip() for line in self.text.splitlines() if line.strip()]
        found = [line.split(":", 1)[1].strip() for prefix in ("fatal:", "error:")
                 for line in lines if line.startswith(prefix)]
        return redact((found or lines[-1:] or ["no output"])[0].rstrip("."))


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


def git(args: Sequence[str], *, cwd: Path | None, env: Mapping[str, str] | None = None,
        stdin: bytes | None = None, check: bool = True,
        timeout: float | None = 1800.0) -> GitOutput:
    """Run ``git <args>`` in ``cwd`` for up to 30 minutes (a blobless checkout may fetch), ``env``
    over this process's environment less its secrets; ``check``: a non-zero exit raises."""
    command = subcommand(args)
    if cwd is not None and not Path(cwd).is_dir():
        raise BackportError(ErrorCode.GIT, f"cannot run git {command}: directory {cwd} does "
                                           "not exist.")
    argv = ["git", *(() if command == "fetch" else NO_MAINTENANCE), *args]
    ended = process.run(argv, cwd=cwd, stdin=stdin, timeout=timeout, code=ErrorCode.GIT,
                        shown=f"git {command}", unfiltered={**NO_ASKPASS, **(env or {}),
                                                           **BASE_ENV})
    result = (GitOutput(tuple(args), -9, b"", f"fatal: timed out after {timeout:g} s")
              if ended.timed_out else
              GitOutput(tuple(args), int(ended.returncode or 0), ended.stdout, ended.err))
    if check and not result.ok:
        raise failure(result, cwd)
    return result


def sealed_call(repo: Path | None, urls: Sequence[str],
                cwd: Path) -> tuple[list[str], dict[str, str]]:
    """The leading options and the environment of a `token_git` call run in ``cwd``."""
    found = [_SCHEME.match(transport_url(url)) for url in urls]
    names = {match.group("name").lower() if match else "ssh" for match in found}  # host:path
    allowed = sorted({"ssh" if n in ("git+ssh", "ssh+git") else n for n in names} - {"ext"})
    options = ["--git-dir", str(Path(repo).absolute()) if repo is not None else os.devnull,
               *SEALED_OPTIONS]
    return options, {"GIT_ALLOW_PROTOCOL": ":".join(allowed),
                     "GIT_CEILING_DIRECTORIES": str(Path(cwd).absolute().parent)}


def token_git(args: Sequence[str], *, repo: Path | None, urls: Sequence[str],
              env: Mapping[str, str] | None = None, stdin: bytes | None = None,
              check: bool = True) -> GitOutput:
    """`git` for a step that holds the forge token, in a new empty private folder; ``env``
    (the askpass, ``GIT_INDEX_FILE``) cannot undo the sealing. A failure names ``repo``."""
    with tempfile.TemporaryDirectory(prefix="backport-git-") as empty:
        options, sealed = sealed_call(repo, urls, Path(empty))
        out = git([*options, *args], cwd=Path(empty), env={**(env or {}), **sealed},
                  stdin=stdin, check=False)
    if check and not out.ok:
        raise failure(out, repo)
    return out


def failure(result: GitOutput, cwd: Path | None = None) -> BackportError:
    """``git <subcommand> failed in <cwd>: <reason>.``, redacted."""
    where = f" in {cwd}" if cwd is not None else ""
    message = redact(f"git {subcommand(result.args)} failed{where}: {result.reason}.")
    return BackportError(ErrorCode.GIT, message, details={"exit": result.status})


def remote_failure(out: GitOutput, what: str, unreachable: ErrorCode | str) -> BackportError:
    """``<what>: <reason>.``, coded ``unreachable`` when the remote could not be reached."""
    return BackportError(unreachable if is_unreachable(out.text) else ErrorCode.GIT,
                         f"{what}: {out.reason}.")


def transport_url(url: str) -> str:
    """``url``, a local path as a ``file://`` URL (so partial clone filters work)."""
    if is_local_path(url):
        return "file://" + os.path.abspath(os.path.expanduser(url))
    return url


def check_branch_name(*branches: str) -> list[str]:
    """``branches`` once each; refused as ``git check-ref-format --branch`` (and ``@``) would."""
    names = list(dict.fromkeys(branches))
    for branch in names:
        if problem := refname_problem(branch):
            raise BackportError(ErrorCode.USAGE,
                                redact(f"invalid branch name {branch!r}: {problem}."))
    return names


def is_unreachable(text: str) -> bool:
    """True when git's output says the remote could not be reached or read."""
    low = text.lower()
    return any(marker in low for marker in _UNREACHABLE) or (
        "repository" in low and "not found" in low)


def read_blob(cwd: Path, name: str) -> bytes | None:
    """The blob ``name`` (an id or ``<commit>:<path>``) names; None when none."""
    out = git(["cat-file", "blob", name], cwd=cwd, check=False)
    return out.raw if out.ok else None


def read_blobs(repo: Path, names: Iterable[str]) -> dict[str, bytes]:
    """name -> bytes of each of ``names`` that names a blob, in one ``cat-file --batch``."""
    wanted = [n for n in dict.fromkeys(names) if n and "\n" not in n]
    if not wanted:
        return {}
    out = git(["cat-file", "--batch"], cwd=repo, check=False, timeout=3600,
              stdin="".join(f"{n}\n" for n in wanted).encode("utf-8", "surrogateescape"))
    raw, pos, found = out.raw, 0, {}
    for name in wanted:
        end = raw.find(b"\n", pos)
        if end < 0:
            break
        header = raw[pos:end].split()
        pos = end + 1
        if len(header) != 3 or not header[2].isdigit():
            continue  # "<name> missing" / "ambiguous": no content follows
        size = int(header[2])
        if header[1] == b"blob":
            found[name] = raw[pos:pos + size]
        pos += size + 1  # the content and its closing line break
    return found


def changed_files(cwd: Path, base: str | None, commit: str,
                  env: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(status, path) of each file ``commit`` changes against ``base`` (None: root), from trees."""
    against = [base, commit] if base else ["--root", commit]
    out = git(["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--name-status",
               *against, "--"], cwd=cwd, env=env)
    items = [item for item in out.stdout.split("\0") if item]
    return list(zip(items[::2], items[1::2], strict=True))


def changed_paths(cwd: Path, base: str, commit: str) -> dict[str, bool]:
    """Every path ``base..commit`` changes -> whether ``commit`` still has it."""
    return {path: status != "D" for status, path in changed_files(cwd, base, commit)}


def ls_remote(url: str, branches: Sequence[str], env: Mapping[str, str] | None,
              unreachable: ErrorCode | str, failed: str) -> dict[str, str | None]:
    """branch -> sha on ``url`` (None: none), in one sealed ``ls-remote`` outside any repository."""
    names = check_branch_name(*branches)
    heads: dict[str, str | None] = dict.fromkeys(names)
    if not names:
        return heads
    out = token_git(["ls-remote", "--heads", "--", transport_url(url),
                     *(f"refs/heads/{b}" for b in names)], repo=None, urls=(url,), env=env,
                    check=False)
    if not out.ok:
        raise remote_failure(out, failed, unreachable)
    for line in out.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        branch = ref.strip().removeprefix("refs/heads/")
        if branch in heads and ref.strip() == f"refs/heads/{branch}":
            heads[branch] = sha.strip()
    return heads


def configured_helpers(cwd: Path | None = None) -> list[str]:
    """Every ``credential[.<url>].helper`` value git's configuration holds, seen from ``cwd``."""
    found = git(["config", "--get-regexp", r"^credential\..*helper$"], cwd=cwd, check=False)
    return [line.partition(" ")[2] for line in found.stdout.splitlines() if " " in line]
