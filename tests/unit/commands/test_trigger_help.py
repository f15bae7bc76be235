"""`trigger --help` says what the command needs: the map's folder, a token, GitCode's event."""

from __future__ import annotations

from click.testing import CliRunner

from backport.cli import cli


def test_trigger_help_names_the_map_the_token_and_the_event() -> None:
    result = CliRunner().invoke(cli, ["trigger", "--help"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for needed in ("branches.yaml", "GITCODE_TOKEN", "$ATOMGIT_EVENT_PATH", "--event",
                   "first word is exactly /backport", "write permission"):
        assert needed in text, needed
