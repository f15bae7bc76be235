"""A run names the files git's configured credential helpers keep secrets in, so that its
sandboxes cover them (tests/system/envs/test_credentials_hidden.py shows the covering)."""

from __future__ import annotations

import os
from pathlib import Path

from backport.envs import sandbox as sandboxes
from tests.helpers.project import run_app


def test_a_run_hides_the_store_its_git_names(sandbox, tmp_path: Path) -> None:
    store = tmp_path / "elsewhere" / "creds"
    store.parent.mkdir()
    store.write_text("https://lgxxx:secret@gitcode.com\n", encoding="utf-8")
    config = Path(os.environ["GIT_CONFIG_GLOBAL"])
    config.write_text(config.read_text(encoding="utf-8")
                      + f"[credential]\n\thelper = store --file {store}\n", encoding="utf-8")
    try:
        assert str(store) not in sandboxes.covered_places()
        result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                         "--dry-run")
        assert result.code == 0, result.err
        assert str(store) in sandboxes.covered_places()
    finally:
        sandboxes.cover_also([])
