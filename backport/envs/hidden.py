"""Where the user's credentials live, and the services that run commands for root, hidden
from code from a branch or a PR.

Mounts inside a sandbox are read-only, not unreadable, and a test runs as the user: it could
read git's credential store, ask git's credential cache, read an SSH key or use the SSH agent,
as the user does, and push or find the forge token that way; run as root, it could ask a
container engine or the system bus (systemd) to start a command outside the sandbox. Each of
these places that exists is covered inside the sandbox (``scripts/sandbox_init.py --hide``):
an empty folder over a folder, the null device over a file or a socket.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping

HELPER_PATH_OPTIONS = ("--file", "--socket")  # git-credential-store's and -cache's
# Sockets of services that start commands for whoever may connect (root, or a group): the
# container engines' and the system bus, through which systemd starts units.
SERVICE_SOCKETS = (
    "/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock",
    "/run/podman/podman.sock", "/run/crio/crio.sock", "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket", "/run/systemd/private",
)


def credential_places(environ: Mapping[str, str], helpers: Iterable[str] = (),
                      uid: int | None = None) -> list[str]:
    """The places, existing or not, where credentials of the user of ``environ`` may be:
    git's credential store and cache (and the files its configured ``helpers`` name), netrc,
    SSH keys and agent, GnuPG, the runtime folder where agents and keyrings listen; and the
    service sockets (:data:`SERVICE_SOCKETS`)."""
    home = environ.get("HOME") or os.path.expanduser("~")
    config = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    cache = environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    runtime = environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid() if uid is None else uid}"
    places = [
        os.path.join(home, ".git-credentials"), os.path.join(config, "git", "credentials"),
        os.path.join(cache, "git", "credential"), os.path.join(home, ".git-credential-cache"),
        environ.get("NETRC") or os.path.join(home, ".netrc"), os.path.join(home, "_netrc"),
        os.path.join(home, ".ssh"), environ.get("SSH_AUTH_SOCK", ""),
        environ.get("GNUPGHOME") or os.path.join(home, ".gnupg"), runtime, *SERVICE_SOCKETS,
    ]
    for helper in helpers:
        places += helper_paths(helper)
    return [p for p in places if p]


def helper_paths(value: str) -> list[str]:
    """The ``--file`` / ``--socket`` paths one ``credential.helper`` value names."""
    try:
        words = shlex.split(value)
    except ValueError:
        return []
    found = []
    for index, word in enumerate(words):
        option, equals, rest = word.partition("=")
        if option in HELPER_PATH_OPTIONS:
            if equals:
                found.append(rest)
            elif index + 1 < len(words):
                found.append(words[index + 1])
    return [os.path.expanduser(p) for p in found]


def to_hide(places: Iterable[str], keep: Iterable[str]) -> tuple[str, ...]:
    """The existing ``places`` (real paths) to cover, where none holds a folder of ``keep``
    (the writable folders: a $TMPDIR in the runtime folder). A place that
    holds one is covered entry by entry instead, but for the entries on the way to it; a
    symbolic link inside is covered where it leads, unless that holds one too, and never
    walked through."""
    kept = [os.path.realpath(k) for k in keep]
    out: set[str] = set()

    def cover(path: str, descend: bool = True) -> None:
        if not os.path.lexists(path):
            return
        holding = [k for k in kept if k == path or k.startswith(path.rstrip("/") + "/")]
        if not holding:
            out.add(path)
            return
        if not descend or path in holding or not os.path.isdir(path):
            return  # the writable folder itself, or a link's target that holds one
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink():  # covered where it leads, never walked through
                cover(os.path.realpath(entry.path), descend=False)
            else:
                cover(entry.path)

    for place in places:
        cover(os.path.realpath(place))
    return tuple(sorted(out))
