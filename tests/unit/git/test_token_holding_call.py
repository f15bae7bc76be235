"""The argv and environment of a git call of a step that holds the token (`sealed_call`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from backport.git.run import sealed_call


def _config(options: list[str]) -> dict[str, str]:
    values = [options[i + 1] for i, option in enumerate(options) if option == "-c"]
    return dict(value.split("=", 1) for value in values)


def test_it_names_its_repository_and_turns_off_what_runs_commands(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    options, env = sealed_call(tmp_path / "cache.git", ["https://gitcode.com/lgxxx/pytorch.git"],
                               empty)
    assert options[:2] == ["--git-dir", str(tmp_path / "cache.git")]
    assert _config(options) == {"protocol.ext.allow": "never", "core.hooksPath": "/dev/null",
                                "core.fsmonitor": "false"}
    assert env == {"GIT_ALLOW_PROTOCOL": "https", "GIT_CEILING_DIRECTORIES": str(tmp_path)}


def test_without_a_repository_it_names_none_rather_than_discovering_one(tmp_path: Path) -> None:
    options, _ = sealed_call(None, ["https://gitcode.com/a/b.git"], tmp_path / "empty")
    assert options[:2] == ["--git-dir", "/dev/null"]


def test_only_the_transports_of_the_urls_are_allowed_and_never_ext(tmp_path: Path) -> None:
    urls = ["/srv/upstream.git", "file:///srv/fork.git", "git@gitcode.com:a/b.git",
            "ssh+git://h/x", "HTTPS://gitcode.com/a/b.git", "ext::sh -c evil"]
    _, env = sealed_call(None, urls, tmp_path)
    assert env["GIT_ALLOW_PROTOCOL"] == "file:https:ssh"
    _, env = sealed_call(None, ["ext::sh -c evil"], tmp_path)
    assert env["GIT_ALLOW_PROTOCOL"] == ""  # git then allows no transport at all


@pytest.mark.parametrize(("url", "transport"), [
    ("https://gitcode.com/a/b.git", "https"), ("http://127.0.0.1:8080/a.git", "http"),
    ("/abs/path.git", "file"), ("relative/path.git", "file"), ("git@host:a/b.git", "ssh"),
    ("ssh://git@host/a.git", "ssh"), ("git+ssh://host/a.git", "ssh"), ("ext::x.sh", "ext"),
])
def test_the_transport_of_each_url(url: str, transport: str, tmp_path: Path) -> None:
    _, env = sealed_call(None, [url], tmp_path)
    assert env["GIT_ALLOW_PROTOCOL"] == ("" if transport == "ext" else transport)
