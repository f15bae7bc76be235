"""What the audit keeps between runs, by commit (a commit's patch-id and files never change)
and by commit and target head (whether it applies there, its tests or its content there): one JSON file in the cache folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from backport.jsonfile import read_json, write_json

STORE_VERSION = 1
CONTENT_RULE = 4  # the content rule's version: answers of another are asked again


class Store:
    """By commit: ``patch_ids`` ("" for a change git cannot read), ``files`` ([changed or
    deleted, added]), ``added`` (its tests); by commit and head: ``applies``, ``present``, ``content``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.patch_ids: dict[str, str] = {}
        self.files: dict[str, list[list[str]]] = {}
        self.applies: dict[str, bool] = {}
        self.added: dict[str, list[str]] = {}  # commit -> the tests it adds (path::Class::name)
        self.present: dict[str, str] = {}  # "<commit>:<head>" -> the already-present commit
        # "<commit>:<head>" -> the commit that brought its content there ("" for none)
        self.content: dict[str, str] = {}
        data: Any = read_json(path, None)  # none yet, or unreadable: computed again
        if isinstance(data, dict) and data.get("version") == STORE_VERSION:
            self.patch_ids = dict(data.get("patch_ids") or {})
            self.files = dict(data.get("files") or {})
            self.applies = dict(data.get("applies") or {})
            self.added = dict(data.get("added") or {})
            self.present = dict(data.get("present") or {})
            if data.get("content_rule") == CONTENT_RULE:
                self.content = dict(data.get("content") or {})

    def save(self) -> None:
        """Write the file whole (``write_json``); a folder that cannot be written keeps nothing."""
        data = {"version": STORE_VERSION, "patch_ids": self.patch_ids, "files": self.files,
                "applies": self.applies, "added": self.added, "present": self.present,
                "content": self.content, "content_rule": CONTENT_RULE}
        try:
            write_json(self.path, data)
        except OSError:
            return
