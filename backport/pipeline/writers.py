"""Who may write to the upstream, as the forge says (``collaborators/{login}/permission``),
asked once per login for a whole run however many branches ask."""

from __future__ import annotations

import threading

from backport.forge import Forge
from backport.forge.base import WRITE_PERMISSIONS


class Writers:
    """The run's answers of ``Forge.permission``, kept per login."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}
        self._lock = threading.Lock()  # held over the request: one request per login

    def can_write(self, forge: Forge, login: str) -> bool:
        """Whether ``login`` has write permission on the upstream (no login: no)."""
        if not login:
            return False
        with self._lock:
            if login not in self._known:
                self._known[login] = forge.permission(login) in WRITE_PERMISSIONS
            return self._known[login]
