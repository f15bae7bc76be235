"""Fixtures shared by every test folder."""

from __future__ import annotations

import os

import pytest

# The demo's sandbox (built once a session, copied per test) and the fake GitCode server that
# branches.yaml points at, for every folder (a folder's conftest or a module may override them).
from tests.helpers.project import built_sandbox, gitcode, sandbox  # noqa: F401  (fixtures)


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch,
                  tmp_path_factory: pytest.TempPathFactory) -> None:
    """Give git an identity and keep the user's global config and caches out of the tests."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Maintainer\n\temail = maintainer@example.invalid\n"
        "[init]\n\tdefaultBranch = master\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("BACKPORT_CACHE", str(home / "cache"))
    (home / "cache").mkdir()
    for var in ("GITCODE_TOKEN", "BACKPORT_TOKEN", "BACKPORT_UPSTREAM_URL", "BACKPORT_FORK_URL",
                "BACKPORT_API_URL", "BACKPORT_CONFIG", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    # The stand-in servers keep no rate limit: a test of several runs would otherwise wait out
    # GitCode's 50-a-minute window. The tests of the pace set their own windows.
    monkeypatch.setenv("BACKPORT_GITCODE_RATE", "100000/60")
    os.environ.setdefault("LANG", "C")
