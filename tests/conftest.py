"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

# GitPython runs `git version` when first imported and fails without git; the unit layer runs
# with no git on PATH (tests/unit/conftest.py), so it is told to stay quiet there.
os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")

from backport.envs.kept import stop_kept_workers
from tests.helpers.project import built_sandbox  # noqa: F401  (the session's sandbox, copied per test)


@pytest.fixture(scope="session")
def kept_folder() -> Iterator[Path]:
    """The kept warm workers of this test process, as a user's runs share them; stopped at the end.

    Short on purpose: a Unix socket's path has a limit of about 100 bytes.
    """
    folder = Path(tempfile.mkdtemp(prefix="bpk-"))
    os.chmod(folder, 0o700)
    yield folder
    stop_kept_workers(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def probe_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stored probes of this test process, shared by every test's cache (see below)."""
    return tmp_path_factory.mktemp("probes")


@pytest.fixture(autouse=True)
def _isolated_git(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
                  kept_folder: Path, probe_store: Path) -> None:
    """Give git an identity and keep the user's global config and caches out of the tests."""
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test Maintainer\n\temail = maintainer@example.invalid\n"
        "[init]\n\tdefaultBranch = master\n", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("BACKPORT_CACHE", str(home / "cache"))
    # Each test has a cache of its own, but its stored probes are shared, as a user's runs
    # share them: a probe is reused only while its fingerprint holds, which no test here breaks
    # for a shared interpreter. The tests of the probe cache give it a cache of their own.
    (home / "cache").mkdir()
    (home / "cache" / "probes").symlink_to(probe_store, target_is_directory=True)
    for var in ("GITCODE_TOKEN", "BACKPORT_TOKEN", "BACKPORT_UPSTREAM_URL", "BACKPORT_FORK_URL",
                "BACKPORT_API_URL", "BACKPORT_CONFIG", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    # Runs keep warm workers between them, as by default, in a folder of this test process.
    monkeypatch.delenv("BACKPORT_KEEP_WORKERS", raising=False)
    monkeypatch.delenv("BACKPORT_WORKER_IDLE", raising=False)
    monkeypatch.setenv("BACKPORT_RUNTIME_DIR", str(kept_folder))
    os.environ.setdefault("LANG", "C")
