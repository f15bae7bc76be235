"""Issue 16 item 6: credentials, preflight and dry-run live behind the Forge protocol."""

from __future__ import annotations

import inspect
from pathlib import Path

from backport.forge import make_forge
from backport.forge.dryrun import DryRunForge
from backport.forge.gitcode import GitCodeForge
from backport.forge.local import LocalForge
from backport.pipeline import pr_step, steps
from tests.fakes.forge import FORK, TOKEN, UPSTREAM, branch_map
from tests.fakes.gitcode import FakeGitCode

PIPELINE = Path(steps.__file__).parent


def test_gitcode_gives_push_credentials_for_https_only(server: FakeGitCode) -> None:
    forge = GitCodeForge(server.url, UPSTREAM, FORK, TOKEN)
    env = forge.push_credentials("https://gitcode.com/lgxxx/pytorch.git")
    assert env is not None and env["BACKPORT_ASKPASS_USER"] == "lgxxx"
    assert env["BACKPORT_ASKPASS_TOKEN"] == TOKEN and Path(env["GIT_ASKPASS"]).exists()
    assert TOKEN not in env["GIT_ASKPASS"]
    assert forge.push_credentials("/srv/fork.git") is None
    anonymous = GitCodeForge(server.url, UPSTREAM, FORK, None)
    assert anonymous.push_credentials("https://gitcode.com/lgxxx/pytorch.git") is None


def test_push_goes_as_the_tokens_own_login_not_the_fork_owner(server: FakeGitCode) -> None:
    # The fork belongs to an organisation; the token is a maintainer's.
    server.login = "maintainer-li"
    forge = GitCodeForge(server.url, UPSTREAM, FORK, TOKEN)
    env = forge.push_credentials("https://gitcode.com/lgxxx/pytorch.git")
    assert env is not None and env["BACKPORT_ASKPASS_USER"] == "maintainer-li"
    forge.preflight()
    assert forge.push_credentials("https://gitcode.com/x.git") == env
    assert [r.path for r in server.requests].count("/user") == 1  # read once


def test_local_and_dry_run_forges(tmp_path: Path, server: FakeGitCode) -> None:
    local = LocalForge(tmp_path / "forge.sqlite", upstream=UPSTREAM, fork=FORK)
    assert local.push_credentials("https://example.com/x.git") is None
    inner = GitCodeForge(server.url, UPSTREAM, FORK, TOKEN)
    dry = DryRunForge(inner, [].append, upstream=UPSTREAM, fork=FORK)
    assert dry.create_pr("b", "master", "t", "body").planned  # its answers say they are plans
    assert dry.push_credentials("https://gitcode.com/x.git") == inner.push_credentials(
        "https://gitcode.com/x.git")
    assert DryRunForge(None, [].append, upstream=UPSTREAM, fork=FORK).push_credentials(
        "https://gitcode.com/x.git") is None


def test_make_forge_finds_the_token_in_the_environment(tmp_path: Path, server: FakeGitCode) -> None:
    forge = make_forge(branch_map(tmp_path, "gitcode", server.url), tmp_path,
                       environ={"GITCODE_TOKEN": TOKEN, "HOME": str(tmp_path)})
    forge.preflight()  # the fake accepts only TOKEN
    assert forge.push_credentials("https://gitcode.com/x.git") is not None


def test_the_pipeline_names_no_forge_and_resolves_no_token() -> None:
    for path in PIPELINE.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert '"gitcode"' not in text, path.name
        assert "forge.token" not in text and "resolve_token" not in text, path.name
    assert "dry_run" not in inspect.getsource(pr_step)  # the dry forge's PRs say they are plans
