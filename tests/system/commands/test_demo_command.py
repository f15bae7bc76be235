"""`backport demo`: the offline sandbox end to end (then from a merged PR, replacing it), and an
explicit --python taken at its word. The demos run as CLI processes; the refusals, which start
nothing, run the same entry point in this process (`run_app`)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.helpers.project import TORCH_PYTHON, needs_torch, run_app, run_cli


def test_an_explicit_python_without_torch_is_refused_not_replaced(tmp_path: Path) -> None:
    # The tool's own interpreter has no torch; another one with torch may well exist here.
    result = run_app(tmp_path, "demo", "--dir", str(tmp_path / "sb"), "--python", sys.executable)
    assert result.code == 2, result.err
    assert result.err.strip() == f"error: --python {sys.executable} has no torch installed"
    assert not (tmp_path / "sb").exists()


@needs_torch
def test_demo_opens_four_prs_and_the_next_demo_from_a_pr_replaces_it(tmp_path: Path) -> None:
    assert TORCH_PYTHON is not None
    result = run_cli(tmp_path, "demo", "--dir", str(tmp_path / "sb"), "--python", TORCH_PYTHON)
    assert result.code == 0, result.err
    assert f"tests run under: {TORCH_PYTHON}" in result.out + result.err
    # Nothing of the run stays up: the last line is where the sandbox is, no worker talk.
    assert result.out.strip().splitlines()[-1].startswith("The sandbox stays in "), result.out
    assert "warm worker" not in result.out and "env stop" not in result.out
    with sqlite3.connect(tmp_path / "sb" / "project" / ".backport" / "forge.sqlite") as db:
        bases = sorted(base for (base,) in db.execute("SELECT base FROM prs"))
    assert bases == ["master", "v2.11.0", "v2.12.0", "v2.7.1"]
    # The commands it prints work as printed, from any shell: a re-run keeps what the demo did.
    printed = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
               for line in result.out.splitlines() if line.startswith("  ") and ":  " in line}
    again = subprocess.run(["bash", "-c", printed["run it again"]], capture_output=True,
                           text=True, check=False, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    said = again.stdout + again.stderr
    assert "finished earlier" in said and "applying again" not in said, said
    # The next demo, at the per-user place, replaces the previous demo's sandbox found there;
    # with --from-pr it backports the PR merged into its master to the three other branches.
    home = tmp_path / "cache" / "demo"
    shutil.copytree(tmp_path / "sb", home, symlinks=True)
    before = set(Path(tempfile.gettempdir()).glob("backport-demo-*"))
    again = run_cli(tmp_path, "demo", "--from-pr", "--python", TORCH_PYTHON,
                    env={"BACKPORT_CACHE": str(tmp_path / "cache")})
    assert again.code == 0, again.err
    assert f"sandbox: {home} (the previous demo's sandbox there was replaced)" in again.out
    assert set(Path(tempfile.gettempdir()).glob("backport-demo-*")) == before
    upstream = home / "upstream.git"
    message = subprocess.run(["git", "--git-dir", str(upstream), "log", "-1", "--format=%B",
                              "master"], capture_output=True, text=True, check=True).stdout
    assert "!1 merge test-put-metric-master into master" in message
    squash = subprocess.run(["git", "--git-dir", str(upstream), "rev-parse", "master"],
                            capture_output=True, text=True, check=True).stdout.strip()
    assert f"merged into master as {squash[:12]} (found by the squash message" in again.out
    with sqlite3.connect(home / "project" / ".backport" / "forge.sqlite") as db:
        rows = db.execute("SELECT number, base, state, body FROM prs ORDER BY number").fetchall()
    assert len(rows) == 4  # not 8: a new forge, its merged PR numbered 1
    assert [(n, b, s) for n, b, s, _ in rows[:1]] == [(1, "master", "merged")]
    opened = {base: body for _, base, state, body in rows[1:] if state == "open"}
    assert sorted(opened) == ["v2.11.0", "v2.12.0", "v2.7.1"]
    for body in opened.values():
        assert "[Ascend/pytorch!1]" in body
        assert f"SOURCE=Ascend/pytorch!1@{squash}" in body
        assert "PATCH_TESTS=test_put_metric ok" in body


def test_a_folder_that_is_not_a_demo_sandbox_is_left_alone(tmp_path: Path) -> None:
    home = tmp_path / "cache" / "demo"
    home.mkdir(parents=True)
    (home / "notes.txt").write_text("mine\n", encoding="utf-8")
    for args in (["demo"], ["demo", "--dir", str(home)]):
        result = run_app(tmp_path, *args, env={"BACKPORT_CACHE": str(tmp_path / "cache")})
        assert result.code == 2, result.err
        assert result.err.strip() == (f"error: {home} holds files that are not a demo sandbox; "
                                      "move them away or pass --dir with an empty folder")
        assert (home / "notes.txt").read_text(encoding="utf-8") == "mine\n"


def test_an_explicit_patches_folder_without_put_metric_is_refused(tmp_path: Path) -> None:
    # The demo takes the patch set the package ships, unless --patches names another folder.
    result = run_app(tmp_path, "--patches", str(tmp_path / "empty"), "demo",
                     "--dir", str(tmp_path / "sb"))
    assert result.code == 2, result.err
    assert result.err.strip() == (f"error: the put_metric patch set was not found in "
                                  f"{tmp_path / 'empty' / 'put_metric'} (--patches names the "
                                  "folder that holds put_metric/)")
    assert not (tmp_path / "sb").exists()
