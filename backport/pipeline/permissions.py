"""Who may write to the upstream (one login's permission, the collaborators listing), each
asked of the forge once a run; the already-proposed step and `trigger` share it."""

from __future__ import annotations

import threading

from backport.forge import Forge
from backport.forge.base import WRITE_PERMISSIONS


class WritePermissions:
    """The run's answers of ``Forge.permission`` (per login) and ``Forge.collaborators``."""

    def __init__(self) -> None:
        self._asked: dict[str, bool] = {}
        self._listed: dict[str, bool] | None = None
        self._lock = threading.Lock()  # held over the request: one request per answer

    def can_write(self, forge: Forge, login: str) -> bool:
        """Whether ``login`` may write: the listing's answer if read, else one request."""
        if not login:
            return False
        with self._lock:
            if self._listed is not None and login in self._listed:
                return self._listed[login]
            if login not in self._asked:
                self._asked[login] = forge.permission(login) in WRITE_PERMISSIONS
            return self._asked[login]

    def listed(self, forge: Forge) -> dict[str, bool]:
        """The collaborators listing, each member with whether it may write; read once."""
        with self._lock:
            if self._listed is None:
                self._listed = forge.collaborators()
            return self._listed
