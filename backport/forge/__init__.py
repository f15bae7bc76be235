"""Forges: the protocol (:mod:`.base`), the GitCode v5 client, the embedded local forge, the
dry run's forge, and :func:`make_forge`, which builds the one a branch map asks for (the session
builds it once a run). The GitCode client and what only it needs (requests, urllib3, the
pacing, the token) are imported only for a map that names GitCode."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from backport.config.model import BranchMap
from backport.errors import ConfigError
from backport.forge.base import Comment, Forge, PrFile, PullRequest
from backport.forge.dryrun import DryRunForge
from backport.forge.local import LOCAL_USER_VARIABLE, LocalForge, copy_database

SETTLE_VAR = "BACKPORT_GITCODE_SETTLE"
RATE_VAR = "BACKPORT_GITCODE_RATE"

__all__ = ["Comment", "Forge", "PrFile", "PullRequest", "dry_run_of", "make_forge"]


def rate_windows(environ: Mapping[str, str] | None) -> tuple[tuple[int, float], ...]:
    """The GitCode client's request limits: ``$BACKPORT_GITCODE_RATE`` (requests/seconds, e.g.
    ``50/60,4000/3600``), default GitCode's documented 50 a minute and 4,000 an hour."""
    from backport.forge.pace import DEFAULT_WINDOWS, parse_windows
    text = (environ or {}).get(RATE_VAR, "").strip()
    if not text:
        return DEFAULT_WINDOWS
    try:
        return parse_windows(text)
    except ValueError:
        raise ConfigError(f"{RATE_VAR}={text!r} is not a list of requests/seconds such as "
                          "50/60,4000/3600.") from None


def settle_seconds(environ: Mapping[str, str] | None) -> float:
    """Seconds to let GitCode show a branch just pushed or a PR just created, between checks
    (``$BACKPORT_GITCODE_SETTLE``, default 2)."""
    text = (environ or {}).get(SETTLE_VAR, "").strip() or "2"
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 600.0:  # also refuses nan and inf
        raise ConfigError(f"{SETTLE_VAR}={text!r} is not a number of seconds from 0 to 600.")
    return value


def make_forge(branch_map: BranchMap, state_dir: Path, *, token: str | None = None,
               environ: Mapping[str, str] | None = None, timeout: float = 30.0,
               notify: Callable[[str], None] | None = None, pace_dir: Path | None = None,
               scratch: Path | None = None) -> Forge:
    """The forge of ``branch_map``. Local: ``state_dir / "forge.sqlite"``, or a copy of it in
    ``scratch`` (a dry run's folder). GitCode: ``token``, else the one ``environ`` holds;
    ``notify`` hears of rate-limit waits; ``pace_dir`` holds the token's request log shared by
    the host's processes (None: this process's)."""
    if branch_map.forge == "local":
        path = Path(state_dir) / "forge.sqlite"
        return LocalForge(path, upstream=branch_map.upstream, fork=branch_map.fork,
                          user=(environ or {}).get(LOCAL_USER_VARIABLE, "").strip(),
                          database=copy_database(path, scratch) if scratch else None)
    if branch_map.forge == "gitcode":
        from backport.forge.gitcode import GitCodeForge
        from backport.forge.http import ApiClient
        from backport.forge.token import resolve_token
        if token is None and environ is not None:
            token = resolve_token(branch_map.api_url, environ)
        client = ApiClient(branch_map.api_url, token, timeout=timeout,
                           windows=rate_windows(environ), notify=notify, pace_dir=pace_dir)
        return GitCodeForge(branch_map.api_url, branch_map.upstream, branch_map.fork, token,
                            web_url=branch_map.web_url, client=client,
                            settle=settle_seconds(environ))
    raise ConfigError(f"{branch_map.path}: forge {branch_map.forge!r} is not local or gitcode.")


def dry_run_of(forge: Forge, branch_map: BranchMap, plan: Callable[[str], None] | None,
               environ: Mapping[str, str] | None) -> Forge:
    """``forge`` for a dry run: its writes become lines sent to ``plan`` (GitCode without a
    token reads nothing either)."""
    gitcode = forge.name == "gitcode"
    skipped = gitcode and bool(forge.missing())
    return DryRunForge(None if skipped else forge, plan, upstream=branch_map.upstream,
                       fork=branch_map.fork, name=forge.name,
                       windows=rate_windows(environ) if gitcode else None)
