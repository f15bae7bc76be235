"""Token resolution (env, git credential helpers) and the askpass environment for git push."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from backport.forge.token import ASKPASS_PROGRAM, askpass_env, resolve_token
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
    assert script == ASKPASS_PROGRAM  # the package's file, never one written in a temp folder
    assert token not in " ".join(f"{k}={v}" for k, v in extra.items() if k != "BACKPORT_ASKPASS_TOKEN")
    # git itself asks the askpass program (the stored credential helper is switched off)
    env = {**git_home, **extra, "LANG": "C", "LC_ALL": "C"}
    proc = subprocess.run(["git", "credential", "fill"], input="protocol=https\nhost=gitcode.com\n\n",
                          capture_output=True, text=True, env=env, check=True, timeout=20)
    fields = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert fields["username"] == "lgxxx"
    assert fields["password"] == token
    assert askpass_env(token)["GIT_ASKPASS"] == str(script)  # one program for every push


def test_a_repository_around_the_folder_names_no_credential_helper(
        git_home: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`git credential fill` reads the user's helpers only: a repository planted where the
    command runs (a temp folder a test could write) is not consulted, and its helper never runs."""
    planted = tmp_path / "tmp"
    ran = tmp_path / "helper.ran"
    subprocess.run(["git", "init", "-q", str(planted)], check=True)
    subprocess.run(["git", "config", "--file", str(planted / ".git" / "config"), "credential.helper",
                    f"!touch '{ran}'; echo password=planted-99; :"], check=True)
    (planted / "work").mkdir()
    monkeypatch.chdir(planted / "work")
    assert resolve_token("https://api.gitcode.com/api/v5", git_home) == "stored-TOKEN-from-git-77"
    assert resolve_token("https://api.other.example/api/v5", git_home) is None  # none stored
    assert not ran.exists()
