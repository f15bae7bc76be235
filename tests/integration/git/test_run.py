"""The one git runner on real git: stdin, C locale, no prompts, timeouts, one-sentence errors."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from backport.errors import BackportError
from backport.git.run import git, token_git
from tests.helpers.processes import alive


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_stdin_bytes_reach_git_whole(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB, every byte value: more than a pipe buffer holds
    out = git(["hash-object", "--stdin"], cwd=tmp_path, stdin=data)
    expected = git(["hash-object", "--", str(_write(tmp_path / "blob", data))], cwd=tmp_path)
    assert out.stdout.strip() == expected.stdout.strip()


def test_git_that_stops_reading_stdin_early_is_no_error(tmp_path: Path) -> None:
    out = git(["rev-parse", "--verify", "HEAD"], cwd=tmp_path, stdin=b"x" * (4 << 20), check=False)
    assert not out.ok and "not a git repository" in out.stderr


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_output_is_kept_as_bytes_and_text(tmp_path: Path) -> None:
    blob = "\u00e4\n".encode() + b"\xff raw\n"
    oid = git(["hash-object", "-w", "--stdin"], cwd=tmp_path / ".", stdin=blob, check=False,
              env={"GIT_DIR": str(tmp_path / "repo.git")})
    assert not oid.ok  # no repository yet: git says so, in English
    assert "not a git repository" in oid.stderr.lower()
    git(["init", "--quiet", "--bare", str(tmp_path / "repo.git")], cwd=tmp_path)
    oid = git(["hash-object", "-w", "--stdin"], cwd=tmp_path, stdin=blob,
              env={"GIT_DIR": str(tmp_path / "repo.git")}).stdout.strip()
    shown = git(["cat-file", "blob", oid], cwd=tmp_path, env={"GIT_DIR": str(tmp_path / "repo.git")})
    assert shown.raw == blob
    assert shown.stdout.startswith("\u00e4\n")


def test_messages_are_in_english_whatever_the_users_locale(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    monkeypatch.setenv("LANGUAGE", "de")
    with pytest.raises(BackportError) as info:
        git(["rev-parse", "--verify", "no-such-ref"], cwd=tmp_path)
    assert info.value.code == "git"
    assert info.value.message.startswith(f"git rev-parse failed in {tmp_path}: ")


def test_git_never_asks_for_a_password(tmp_path: Path, monkeypatch) -> None:
    # A user's askpass program (a desktop keyring prompt, an IDE's) must not be started.
    marker = tmp_path / "asked"
    askpass = _script(tmp_path / "askpass", f"touch '{marker}'\necho secret\n")
    monkeypatch.setenv("GIT_ASKPASS", str(askpass))
    monkeypatch.setenv("SSH_ASKPASS", str(askpass))
    out = git(["credential", "fill"], cwd=tmp_path, check=False,
              stdin=b"protocol=https\nhost=example.invalid\n\n")
    assert not out.ok
    assert not marker.exists()
    assert "terminal prompts disabled" in out.stderr


def test_a_caller_may_give_its_own_askpass(tmp_path: Path) -> None:
    askpass = _script(tmp_path / "askpass", "echo from-caller\n")
    out = git(["credential", "fill"], cwd=tmp_path, env={"GIT_ASKPASS": str(askpass)},
              stdin=b"protocol=https\nhost=example.invalid\nusername=u\n\n")
    assert "password=from-caller" in out.stdout.splitlines()


def test_a_hanging_git_is_killed_with_its_children(tmp_path: Path) -> None:
    pid_file = tmp_path / "ssh.pid"
    fake_ssh = _script(tmp_path / "ssh", f"echo $$ > '{pid_file}'\nexec sleep 60\n")
    with pytest.raises(BackportError) as info:
        git(["-c", f"core.sshCommand={fake_ssh}", "ls-remote", "ssh://example.invalid/r.git"],
            cwd=tmp_path, timeout=1.5)
    assert info.value.code == "git"
    assert info.value.message == f"git ls-remote failed in {tmp_path}: timed out after 1.5 s."
    pid = int(pid_file.read_text())
    for _ in range(50):  # the kill is sent; give the kernel a moment to reap it
        if not alive(pid):
            break
        time.sleep(0.1)
    assert not alive(pid)











def test_a_token_holding_call_runs_nothing_a_config_file_names(tmp_path: Path,
                                                               monkeypatch) -> None:
    """`token_git`'s own options win over every config file git reads: no ``ext::`` transport
    (an ``insteadOf`` turns the upstream's URL into one), no hook, no file-system monitor."""
    upstream = tmp_path / "upstream"
    git(["init", "--quiet", str(upstream)], cwd=tmp_path)
    git(["-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "--quiet",
         "--allow-empty", "-m", "base"], cwd=upstream)
    cache = tmp_path / "cache.git"
    git(["init", "--quiet", "--bare", str(cache)], cwd=tmp_path)
    ran = tmp_path / "ran"
    program = _script(tmp_path / "x.sh", f"echo \"$0\" >> '{ran}'\nexit 1\n")
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("reference-transaction", "post-checkout", "pre-push"):
        _script(hooks / hook, f"echo {hook} >> '{ran}'\n")
    config = tmp_path / "global.gitconfig"
    url = f"file://{upstream}"
    config.write_text(f"[protocol \"ext\"]\n\tallow = always\n[core]\n\thooksPath = {hooks}\n"
                      f"\tfsmonitor = {program}\n[url \"ext::{program} \"]\n\tinsteadOf = {url}\n",
                      encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    fetch = ["fetch", "--quiet", "--", url, "+refs/heads/*:refs/remotes/u/*"]
    out = token_git(fetch, repo=cache, urls=(url,), check=False)
    assert not out.ok and "transport 'ext' not allowed" in out.stderr
    assert not ran.exists()
    config.write_text(config.read_text(encoding="utf-8").split("[url")[0], encoding="utf-8")
    assert token_git(fetch, repo=cache, urls=(url,)).ok  # the same fetch, without the insteadOf
    assert git(["for-each-ref"], cwd=cache).stdout.strip()
    assert not ran.exists()
    # a transport the call's URLs do not use is not allowed either
    other = token_git(["ls-remote", "--", url], repo=None, urls=("https://gitcode.com/a/b.git",),
                      check=False)
    assert not other.ok and "transport 'file' not allowed" in other.stderr
