"""Where the forge token comes from, and how git push gets it without argv or URLs."""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from backport import process
from backport.errors import BackportError
from backport.redact import register_secret

TOKEN_VARS = process.SECRET_VARS  # GITCODE_TOKEN first
CREDENTIAL_TIMEOUT = 10.0
ASKPASS_TOKEN_VAR = "BACKPORT_ASKPASS_TOKEN"
ASKPASS_USER_VAR = "BACKPORT_ASKPASS_USER"

# The askpass helper reads the secret from the environment; the script holds no secret.
_ASKPASS_SCRIPT = f"""#!/bin/sh
case "$1" in
  [Uu]sername*) printf '%s\\n' "${{{ASKPASS_USER_VAR}:-oauth2}}" ;;
  *) printf '%s\\n' "${ASKPASS_TOKEN_VAR}" ;;
esac
"""

_askpass_lock = threading.Lock()
_askpass_path: Path | None = None


def web_host(api_url: str) -> tuple[str, str]:
    """``(protocol, host[:port])`` of the forge's web/git host for an API URL.

    ``https://api.gitcode.com/api/v5`` -> ``("https", "gitcode.com")``.
    """
    parts = urlsplit(api_url)
    host = parts.hostname or ""
    if host.startswith("api."):
        host = host[len("api."):]
    if parts.port:
        host = f"{host}:{parts.port}"
    return (parts.scheme or "https"), host


def credential_fill(protocol: str, host: str, environ: Mapping[str, str] = os.environ,
                    timeout: float = CREDENTIAL_TIMEOUT) -> str | None:
    """The password git's credential helpers hold for ``protocol://host``, or None.

    The request goes through stdin; git never prompts (no terminal, no askpass program).
    """
    env = dict(environ)
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": "",
                "LANG": "C", "LC_ALL": "C"})
    request = f"protocol={protocol}\nhost={host}\n\n"
    try:
        done = process.run(["git", "credential", "fill"], stdin=request.encode(), env=env,
                           timeout=timeout)
    except BackportError:  # git cannot start
        return None
    if not done.ok:
        return None
    for line in done.out.splitlines():
        key, _, value = line.partition("=")
        if key == "password" and value:
            return value
    return None


def resolve_token(api_url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The forge token: ``GITCODE_TOKEN``, else ``BACKPORT_TOKEN``, else git's credential store.

    A token found is registered with :func:`backport.redact.register_secret`; one holding a
    control character is refused (exit 2) in a sentence that does not contain it.
    """
    token = None
    for var in TOKEN_VARS:
        value = (environ.get(var) or "").strip()
        if value:
            _refuse_control(value, var)
            token = value
            break
    if token is None:
        protocol, host = web_host(api_url)
        if host:
            token = credential_fill(protocol, host, environ)
            if token:
                _refuse_control(token, f"the password git credential fill gives for {host}")
    if token:
        register_secret(token)
    return token or None


def _refuse_control(token: str, where: str) -> None:
    """A token holding a control character (a newline, say) is refused, the token unsaid: it
    would split a header or a line of git's credential protocol."""
    bad = next((i for i, ch in enumerate(token) if ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0
                or ch in "\u2028\u2029"), None)
    if bad is not None:
        register_secret(token)
        raise BackportError(
            "config", f"{where} holds a control character at position {bad + 1} of "
                      f"{len(token)} (the token is not shown); set it again without it")


def _askpass_script() -> Path:
    """Create (once per process) a 0700 directory holding the secret-free askpass script."""
    global _askpass_path
    with _askpass_lock:
        if _askpass_path is not None and _askpass_path.exists():
            return _askpass_path
        directory = Path(tempfile.mkdtemp(prefix="backport-askpass-"))  # mode 0700
        os.chmod(directory, stat.S_IRWXU)
        script = directory / "askpass.sh"
        fd = os.open(script, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o700)
        with os.fdopen(fd, "w") as handle:
            handle.write(_ASKPASS_SCRIPT)
        atexit.register(shutil.rmtree, directory, True)
        _askpass_path = script
        return script


def askpass_env(token: str, username: str | None = None,
                environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Environment variables that let ``git push https://…`` authenticate with ``token``.

    The token travels in ``BACKPORT_ASKPASS_TOKEN``; ``GIT_ASKPASS`` points at a script that
    echoes it, so it is never in argv, a URL or a file. ``username`` should be the fork owner
    (GitCode accepts the token as the password of its owner's login); default ``oauth2``.
    Configured credential helpers are switched off for the call (``credential.helper=`` via
    ``GIT_CONFIG_COUNT``) so a stale stored password cannot win. Merge into the git env.
    """
    register_secret(token)
    count = int(environ.get("GIT_CONFIG_COUNT", "0") or 0)
    return {
        "GIT_ASKPASS": str(_askpass_script()),
        ASKPASS_TOKEN_VAR: token,
        ASKPASS_USER_VAR: username or "oauth2",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_COUNT": str(count + 1),
        f"GIT_CONFIG_KEY_{count}": "credential.helper",
        f"GIT_CONFIG_VALUE_{count}": "",
    }
