"""Where a sandbox looks for the user's credentials, and which of those places it covers."""

from __future__ import annotations

from pathlib import Path

from backport.envs.sandbox import SERVICE_SOCKETS, credential_places, helper_paths, places_to_cover


def test_the_places_follow_the_users_folders_and_variables() -> None:
    environ = {"HOME": "/h", "XDG_CONFIG_HOME": "/cfg", "XDG_CACHE_HOME": "/c",
               "XDG_RUNTIME_DIR": "/run/u", "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
               "NETRC": "/n/netrc", "GNUPGHOME": "/g"}
    places = credential_places(environ)
    assert places == ["/h/.git-credentials", "/cfg/git/credentials", "/c/git/credential",
                      "/h/.git-credential-cache", "/n/netrc", "/h/_netrc", "/h/.ssh",
                      "/tmp/ssh-x/agent.1", "/g", "/run/u", *SERVICE_SOCKETS]


def test_the_sockets_of_services_that_run_commands_for_root_are_covered() -> None:
    places = credential_places({"HOME": "/h"})
    for socket in ("/run/docker.sock", "/var/run/docker.sock", "/run/dbus/system_bus_socket",
                   "/run/containerd/containerd.sock", "/run/podman/podman.sock"):
        assert socket in places


def test_without_the_variables_the_defaults_of_git_ssh_and_the_runtime_folder() -> None:
    places = credential_places({"HOME": "/h"}, uid=1000)
    assert "/h/.config/git/credentials" in places and "/h/.cache/git/credential" in places
    assert "/h/.netrc" in places and "/h/.gnupg" in places and "/run/user/1000" in places
    assert "" not in places  # no SSH agent: nothing to cover


def test_helper_values_name_their_files_and_sockets() -> None:
    assert helper_paths("store --file /a/creds") == ["/a/creds"]
    assert helper_paths("store --file=/a/b") == ["/a/b"]
    assert helper_paths("cache --timeout 300 --socket /s/sock") == ["/s/sock"]
    assert helper_paths('store --file "/with space/c"') == ["/with space/c"]
    assert helper_paths("store --file ~/c")[0].endswith("/c")
    assert helper_paths("~/c") == []  # a path with no option names nothing
    assert helper_paths("store") == [] and helper_paths("store --file") == []
    assert helper_paths('!f() { echo "password=$TOKEN"; }; f') == []
    assert helper_paths('store --file "unclosed') == []  # not shell words: nothing named


def test_only_existing_places_are_covered_and_never_one_holding_a_writable_folder(
        tmp_path: Path) -> None:
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    creds = tmp_path / ".git-credentials"
    creds.write_text("https://u:t@gitcode.com\n")
    runtime = tmp_path / "run"
    (runtime / "work").mkdir(parents=True)
    link = tmp_path / "link-to-creds"
    link.symlink_to(creds)
    found = places_to_cover([str(ssh), str(creds), str(tmp_path / "missing"), str(runtime), str(link)],
                    keep=[str(runtime / "work")])
    assert found == tuple(sorted({str(ssh), str(creds)}))  # the link is its target


def test_a_place_holding_a_writable_folder_is_covered_around_it(tmp_path: Path) -> None:
    """A writable folder in the runtime folder (a $TMPDIR there): the agents and buses beside it
    are covered one by one; the way to it and the folder stay; a link is never walked."""
    runtime = tmp_path / "run"
    sockets = runtime / "backport" / "sockets"
    sockets.mkdir(parents=True)
    (runtime / "backport" / "notes").write_text("x")
    (runtime / "bus").write_text("a socket")
    (runtime / "gnupg").mkdir()
    (runtime / "to-root").symlink_to("/")
    (runtime / "to-bus").symlink_to(runtime / "bus")
    found = places_to_cover([str(runtime)], keep=[str(sockets)])
    assert found == tuple(sorted({str(runtime / "bus"), str(runtime / "gnupg"),
                                  str(runtime / "backport" / "notes")}))
