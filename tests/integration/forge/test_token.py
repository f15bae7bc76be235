"""Token resolution (env, git credential helpers) and the askpass environment for git push."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from backport.forge.token import askpass_env, resolve_token, web_host
from backport.redact import redact


@pytest.fixture
def git_home(tmp_path: Path) -> dict[str, str]:
    """An environment whose git config is only a temp HOME (credential store in a file)."""
    home = tmp_path / "home"
    home.mkdir()
    store = home / "creds"
    store.write_text("https://lgxxx:stored-TOKEN-from-git-77@gitcode.com\n")
    store.chmod(0o600)
    (home / ".gitconfig").write_text(f"[credential]\n\thelper = store --file={store}\n")
    return {"HOME": str(home), "PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1",
            "XDG_CONFIG_HOME": str(home / ".config")}


def test_web_host() -> None:
    assert web_host("https://api.gitcode.com/api/v5") == ("https", "gitcode.com")
    assert web_host("https://gitcode.com/api/v5") == ("https", "gitcode.com")
    assert web_host("http://127.0.0.1:8080/api/v5") == ("http", "127.0.0.1:8080")


def test_env_vars_win_in_order(git_home: dict[str, str]) -> None:
    env = {**git_home, "GITCODE_TOKEN": "tok-gitcode-1", "BACKPORT_TOKEN": "tok-backport-2"}
    assert resolve_token("https://api.gitcode.com/api/v5", env) == "tok-gitcode-1"
    del env["GITCODE_TOKEN"]
    assert resolve_token("https://api.gitcode.com/api/v5", env) == "tok-backport-2"
    assert "tok-backport-2" not in redact("x tok-backport-2 y")


def test_git_credential_helper_is_asked(git_home: dict[str, str]) -> None:
    token = resolve_token("https://api.gitcode.com/api/v5", git_home)
    assert token == "stored-TOKEN-from-git-77"
    assert redact(f"echo {token}") == "echo ***"


def test_no_token_anywhere_returns_none_without_prompting(git_home: dict[str, str]) -> None:
    Path(git_home["HOME"], ".gitconfig").write_text("")
    env = {**git_home, "GIT_ASKPASS": "/bin/false-should-not-run", "SSH_ASKPASS": "/nope"}
    assert resolve_token("https://api.gitcode.com/api/v5", env) is None
    assert resolve_token("https://api.other.example/api/v5", git_home) is None


def test_askpass_script_holds_no_secret_and_git_uses_it(git_home: dict[str, str]) -> None:
    token = "push-TOKEN-abcdef-99"
    extra = askpass_env(token, "lgxxx", environ=git_home)
    script = Path(extra["GIT_ASKPASS"])
    assert token not in script.read_text()
    assert stat.S_IMODE(script.parent.stat().st_mode) == 0o700
    assert token not in " ".join(f"{k}={v}" for k, v in extra.items() if k != "BACKPORT_ASKPASS_TOKEN")
    # git itself asks the askpass program (the stored credential helper is switched off)
    env = {**git_home, **extra, "LANG": "C", "LC_ALL": "C"}
    proc = subprocess.run(["git", "credential", "fill"], input="protocol=https\nhost=gitcode.com\n\n",
                          capture_output=True, text=True, env=env, check=True, timeout=20)
    fields = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert fields["username"] == "lgxxx"
    assert fields["password"] == token
    assert askpass_env(token)["GIT_ASKPASS"] == str(script)  # one script per process


def test_askpass_appends_to_existing_git_config_env(git_home: dict[str, str]) -> None:
    env = {**git_home, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.x", "GIT_CONFIG_VALUE_0": "1"}
    extra = askpass_env("tok-xyz-1234", environ=env)
    assert extra["GIT_CONFIG_COUNT"] == "2"
    assert extra["GIT_CONFIG_KEY_1"] == "credential.helper"
    assert extra["BACKPORT_ASKPASS_USER"] == "oauth2"
