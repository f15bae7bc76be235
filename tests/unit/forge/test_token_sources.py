"""Token resolution before git: the variables win in order, the web host of an API URL, and the
askpass environment added after a git config the environment already carries."""

from __future__ import annotations

from pathlib import Path

from backport.forge.token import askpass_env, resolve_token, web_host
from backport.redact import redact


def test_web_host() -> None:
    assert web_host("https://api.gitcode.com/api/v5") == ("https", "gitcode.com")
    assert web_host("https://gitcode.com/api/v5") == ("https", "gitcode.com")
    assert web_host("http://127.0.0.1:8080/api/v5") == ("http", "127.0.0.1:8080")


def test_env_vars_win_in_order(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "GITCODE_TOKEN": "tok-gitcode-1", "BACKPORT_TOKEN": "tok-backport-2"}
    assert resolve_token("https://api.gitcode.com/api/v5", env) == "tok-gitcode-1"
    del env["GITCODE_TOKEN"]
    assert resolve_token("https://api.gitcode.com/api/v5", env) == "tok-backport-2"
    assert "tok-backport-2" not in redact("x tok-backport-2 y")


def test_askpass_appends_to_existing_git_config_env(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.x", "GIT_CONFIG_VALUE_0": "1"}
    extra = askpass_env("tok-xyz-1234", environ=env)
    assert extra["GIT_CONFIG_COUNT"] == "2"
    assert extra["GIT_CONFIG_KEY_1"] == "credential.helper"
    assert extra["BACKPORT_ASKPASS_USER"] == "oauth2"
