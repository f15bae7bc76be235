"""Where the forge token comes from (``GITCODE_TOKEN``, ``BACKPORT_TOKEN``, git's credential
store), and how ``git push`` gets it without argv, URLs or files (askpass)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from backport import process
from backport.errors import BackportError
from backport.redact import register_secret

# git's askpass program, a file of the package: it echoes the token from git's environment.
ASKPASS_PROGRAM = Path(__file__).with_name("askpass.sh")


def web_host(api_url: str) -> tuple[str, str]:
    """``(protocol, host[:port])`` of the forge's web/git host for an API URL
    (``https://api.gitcode.com/api/v5`` -> ``("https", "gitcode.com")``)."""
    parts = urlsplit(api_url)
    host = (parts.hostname or "").removeprefix("api.")
    if parts.port:
        host = f"{host}:{parts.port}"
    return (parts.scheme or "https"), host


def resolve_token(api_url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The forge token: ``GITCODE_TOKEN``, else ``BACKPORT_TOKEN``, else the password git's
    credential helpers hold for the web host (git never prompts, and runs outside any repository,
    so only the user's and system's helpers answer); registered as a secret, refused (the token
    unsaid) if it holds a control character."""
    for var in process.SECRET_VARS:  # GITCODE_TOKEN first
        value = (environ.get(var) or "").strip()
        if value:
            _checked(value, var)
            return value
    protocol, host = web_host(api_url)
    if not host:
        return None
    env = {**environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
           "LANG": "C", "LC_ALL": "C", "GIT_DIR": os.devnull}
    try:
        done = process.run(["git", "credential", "fill"],
                           stdin=f"protocol={protocol}\nhost={host}\n\n".encode(), env=env,
                           timeout=10.0)
    except BackportError:  # git cannot start
        return None
    lines = (line.partition("=") for line in done.out.splitlines())
    token = next((value for key, _, value in lines if key == "password" and value), "")
    if not done.ok or not token:
        return None
    _checked(token, f"the password git credential fill gives for {host}")
    return token


def _checked(token: str, where: str) -> None:
    """Register the token as a secret; refuse one with a control character (it splits lines)."""
    register_secret(token)
    bad = next((i for i, ch in enumerate(token) if ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0
                or ch in "\u2028\u2029"), None)
    if bad is not None:
        raise BackportError(
            "config", f"{where} holds a control character at position {bad + 1} of "
                      f"{len(token)} (the token is not shown); set it again without it")


def askpass_env(token: str, username: str | None = None,
                environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Environment that lets ``git push https://…`` authenticate with ``token`` through the
    askpass program (made executable where an install lost its mode bit), as ``username``
    (default ``oauth2``); credential helpers are off so a stale stored password cannot win."""
    if not os.access(ASKPASS_PROGRAM, os.X_OK):
        with contextlib.suppress(OSError):
            os.chmod(ASKPASS_PROGRAM, ASKPASS_PROGRAM.stat().st_mode | 0o555)
    if not os.access(ASKPASS_PROGRAM, os.R_OK | os.X_OK):
        raise BackportError("config", f"git's askpass program {ASKPASS_PROGRAM} of the installed "
                                      "package is missing or not executable; install backport "
                                      "again")
    register_secret(token)
    count = int(environ.get("GIT_CONFIG_COUNT", "0") or 0)
    return {
        "GIT_ASKPASS": str(ASKPASS_PROGRAM),
        "BACKPORT_ASKPASS_TOKEN": token,
        "BACKPORT_ASKPASS_USER": username or "oauth2",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": "credential.helper",
        f"GIT_CONFIG_VALUE_{count}": "",
    }
