"""A `backport` process imports the modules of the command it runs, not every command's: in a
fresh interpreter, `--version` and `--help` load no command module and none of the heavy
libraries; `check --help` loads `check`'s module alone (no HTTP client: the map may name the
local forge), `status --help` no Jinja2 (only a PR body's rendering needs it), and
`trigger --help` not the apply and the from-PR flow it runs for a branch job."""

from __future__ import annotations

import json
import subprocess
import sys

# One fresh interpreter runs `main` several times, noting after each what is imported.
SCRIPT = """
import json, sys
from backport.cli import main

HEAVY = {"requests", "urllib3", "git", "gitdb", "jinja2", "rich", "yaml", "packaging",
         "sqlite3", "platformdirs"}
seen = []
for argv in (["--version"], ["--help"], ["check", "--help"], ["status", "--help"],
             ["trigger", "--help"]):
    try:
        main(argv)
    except SystemExit as exc:
        code = exc.code
    seen.append({"argv": argv, "code": code,
                 "heavy": sorted({m.split(".")[0] for m in sys.modules} & HEAVY),
                 "commands": sorted(m for m in sys.modules
                                    if m.startswith("backport.commands.")
                                    or m == "backport.pipeline.from_pr")})
print("RESULT " + json.dumps(seen))
"""


def test_version_and_help_import_no_command_and_a_commands_help_only_its_own() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    version, help_, check_help, status_help, trigger_help = json.loads(
        line.removeprefix("RESULT "))
    assert "backport, version" in done.stdout and "Commands:" in done.stdout
    for seen in (version, help_):
        assert seen["code"] == 0, seen
        assert seen["heavy"] == [], seen
        assert seen["commands"] == ["backport.commands.common"], seen
    assert check_help["code"] == 0
    assert "backport.commands.check" in check_help["commands"]
    assert not {"backport.commands.apply", "backport.commands.trigger", "backport.commands.demo",
                "backport.pipeline.from_pr"} & set(check_help["commands"]), check_help
    assert not {"requests", "urllib3", "jinja2"} & set(check_help["heavy"]), check_help
    assert status_help["code"] == 0 and "backport.commands.status" in status_help["commands"]
    assert not {"requests", "jinja2"} & set(status_help["heavy"]), status_help
    # a `/backport` comment's plan job runs `trigger`: it loads apply and the from-PR flow
    # only when it backports (a branch job), never to plan or reply
    assert trigger_help["code"] == 0 and "backport.commands.trigger" in trigger_help["commands"]
    assert not {"backport.commands.apply", "backport.pipeline.from_pr"} & \
        set(trigger_help["commands"]), trigger_help
