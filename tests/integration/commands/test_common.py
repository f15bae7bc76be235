"""What every command shares: output with secrets redacted, the project loaded once."""

from __future__ import annotations

import json

import pytest

import backport.config
from backport.commands import common
from backport.redact import register_secret

SECRET = "gc-common-secret-81d2c"


def test_json_and_text_output_never_show_a_registered_secret(capsys) -> None:
    register_secret(SECRET)
    common.print_json({"url": f"https://oauth2:{SECRET}@gitcode.com/x.git", "n": 1})
    common.echo(f"token {SECRET}", err=True)
    out, err = capsys.readouterr()
    assert SECRET not in out and SECRET not in err
    assert json.loads(out)["n"] == 1


def test_the_project_loads_once_per_invocation(sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    real, loads = backport.config.load_project, []

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        loads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(backport.config, "load_project", counting)  # common imports it at use
    app = common.AppContext(config=sandbox.config)
    assert app.project() is app.project()
    assert len(loads) == 1
