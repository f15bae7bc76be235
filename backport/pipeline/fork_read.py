"""Reading a fork branch's head; a dry run that cannot read it plans on as if it were absent."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from backport.errors import BackportError
from backport.git.push import remote_sha


def fork_head(url: str, branch: str, env: Mapping[str, str] | None, *, dry_run: bool,
              plan: Callable[[str], None]) -> str | None:
    """The sha of ``branch`` on the fork, None when it is not there. A dry run that cannot
    read the fork (no credentials yet, say) says so in its plan and takes the branch as not
    there yet, so it plans the push and the PR the real run would make."""
    try:
        return remote_sha(url, branch, env=env)
    except BackportError as exc:
        if not dry_run:
            raise
        plan(f"{exc.message.rstrip('.')}; the plan takes it as not there yet")
        return None
