"""The run journal: per patch set, per target branch, the step reached and its results.

Stored as JSON at ``.backport/runs/<patch-set>/journal.json``; every update is written to a
temporary file, fsynced and renamed over the old one, so a kill at any moment leaves either the
old or the new journal, never a torn one.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from backport.errors import BackportError
from backport.states import Status

JOURNAL_VERSION = 1


def secure_dir(path: Path) -> Path:
    """Create ``path`` (and parents) with mode 0700 for the directories this tool owns."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically with mode 0600 (temp file + fsync + rename)."""
    secure_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def new_record(target: str, fork_branch: str) -> dict[str, Any]:
    """A branch record before anything was done."""
    return {
        "target": target,
        "fork_branch": fork_branch,
        "status": Status.PENDING.value,
        "base": None,
        "commit": None,
        "push_intent": None,
        "pushed_sha": None,
        "test": None,
        "env": None,
        "pr": None,
        "conflicts": [],
        "worktree": None,
        "message": "",
        # Which series went in: None for the branch's own, else {"branch": B, "kind":
        # "resolution" | "variant"} naming the sibling whose hand resolution (or saved variant)
        # applied where the own series conflicted.
        "series_source": None,
        "tried_sources": [],  # the siblings' series tried in vain, nearest first
        "merged_files": [],  # files that went in only through the 3-way merge
        "conflict_snapshot": None,  # {path: blob or None} of the conflicting files as am left them
    }


class Journal:
    """The journal of one patch set; thread-safe, persisted after every update."""

    def __init__(self, path: Path, patch_set: str, api: str, *, persist: bool = True) -> None:
        self.path = path
        self.persist = persist
        self._lock = threading.Lock()
        self._data: dict[str, Any] = {
            "version": JOURNAL_VERSION, "patch_set": patch_set, "api": api, "branches": {},
        }

    @classmethod
    def load(cls, state_dir: Path, patch_set: str, api: str, *, persist: bool = True) -> Journal:
        """Open the journal of ``patch_set`` (an empty one when there is none yet)."""
        journal = cls(state_dir / "runs" / patch_set / "journal.json", patch_set, api,
                      persist=persist)
        if journal.path.exists():
            try:
                data = json.loads(journal.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise BackportError(
                    "config", f"{journal.path}: the run journal cannot be read ({exc}); "
                    f"move it aside to start over") from exc
            if not isinstance(data, dict) or not isinstance(data.get("branches"), dict):
                raise BackportError(
                    "config", f"{journal.path}: not a backport journal; move it aside to start over")
            journal._data.update(data)
            journal._data["api"] = api
        return journal

    @property
    def run_dir(self) -> Path:
        return self.path.parent

    def record(self, target: str, fork_branch: str) -> dict[str, Any]:
        """A copy of the record of ``target``, created when missing."""
        with self._lock:
            branches = self._data["branches"]
            if target not in branches:
                branches[target] = new_record(target, fork_branch)
            branches[target]["fork_branch"] = fork_branch
            return copy.deepcopy(branches[target])

    def get(self, target: str) -> dict[str, Any] | None:
        with self._lock:
            rec = self._data["branches"].get(target)
            return copy.deepcopy(rec) if rec is not None else None

    def update(self, target: str, **fields: Any) -> dict[str, Any]:
        """Change fields of one record and persist the whole journal atomically."""
        with self._lock:
            rec = self._data["branches"][target]
            for key, value in fields.items():
                rec[key] = value.value if isinstance(value, Status) else value
            self._save_locked()
            return copy.deepcopy(rec)

    def records(self, targets: list[str] | None = None) -> list[dict[str, Any]]:
        """Copies of the records, in ``targets`` order when given."""
        with self._lock:
            branches = self._data["branches"]
            names = targets if targets is not None else list(branches)
            return [copy.deepcopy(branches[t]) for t in names if t in branches]

    def drop(self, target: str) -> None:
        with self._lock:
            self._data["branches"].pop(target, None)
            self._save_locked()

    def _save_locked(self) -> None:
        if not self.persist:
            return
        text = json.dumps(self._data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
        try:
            atomic_write_text(self.path, text)
        except OSError as exc:
            raise BackportError(
                "journal", f"cannot write the run journal {self.path}: {exc.strerror or exc}; "
                f"the previous journal is intact") from exc
