"""What a maintainer does on the web page of the local forge's PR (close, merge, reopen)."""

from __future__ import annotations

import sqlite3

from backport.forge.base import PullRequest
from backport.forge.local import LocalForge


def set_state(forge: LocalForge, number: int, state: str) -> PullRequest:
    """Close, merge or reopen PR ``number`` of ``forge``'s database, as the web page would."""
    assert state in ("open", "closed", "merged"), state
    with sqlite3.connect(forge.path) as db:
        changed = db.execute("UPDATE prs SET state = ? WHERE number = ?", (state, number))
        assert changed.rowcount == 1, f"no PR {number}"
        if state == "merged":
            db.execute("INSERT OR IGNORE INTO pr_merged (pr, merged_at) VALUES (?, "
                       "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))", (number,))
    return forge.get_pr(number)
