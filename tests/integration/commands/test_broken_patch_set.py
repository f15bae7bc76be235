"""A broken patch set is a problem of that set: commands that do not use it go on."""

from __future__ import annotations

import shutil

from tests.helpers.project import run_app


def _break_a_second_set(sandbox) -> str:
    """Add patch set ``emptyp`` whose one patch file is empty; return the loader's sentence."""
    good = sandbox.project / "patches" / "put_metric"
    bad = sandbox.project / "patches" / "emptyp"
    bad.mkdir()
    shutil.copy(good / "patch.yaml", bad / "patch.yaml")
    (bad / "0001-fix.patch").write_text("", encoding="utf-8")
    return "patches/emptyp/0001-fix.patch is empty"


def test_commands_on_another_set_ignore_a_broken_one(sandbox):
    sentence = _break_a_second_set(sandbox)
    status = run_app(sandbox.project, "status", "--api", "put_metric")
    assert status.code == 0, status.err
    assert "not run yet" in status.out and sentence not in status.err
    matrix = run_app(sandbox.project, "matrix", "--api", "put_metric")
    assert matrix.code == 0, matrix.err
    assert {job["api"] for job in matrix.json()} == {"put_metric"}
    applied = run_app(sandbox.project, "apply", "--api", "put_metric", "--branch", "v2.7.1",
                      "--skip-tests", "--no-push")
    assert applied.code == 0, applied.err
    assert sentence not in applied.err
    named = run_app(sandbox.project, "apply", "--api", "emptyp")
    assert named.code == 2
    assert sentence in named.err and "Traceback" not in named.err
    every = run_app(sandbox.project, "matrix", "--all")
    assert every.code == 2 and sentence in every.err


def test_list_and_check_report_the_broken_set_and_go_on(sandbox):
    sentence = _break_a_second_set(sandbox)
    listed = run_app(sandbox.project, "list")
    assert listed.code == 2  # a configuration error, as for a broken branches.yaml
    assert "put_metric" in listed.out
    assert f"problem: patches/emptyp: {sentence}" in listed.err
    as_json = run_app(sandbox.project, "list", "--json")
    assert [row["name"] for row in as_json.json()] == ["put_metric"]
    checked = run_app(sandbox.project, "check", "--offline", "--json")
    assert checked.code == 2
    data = checked.json()
    assert data["problems"] == [f"patches/emptyp: {sentence}"]
    assert any(f["subject"] == "put_metric on v2.7.1" for f in data["findings"])
    text = run_app(sandbox.project, "check", "--offline")
    assert f"problem: patches/emptyp: {sentence}" in text.err


def test_status_names_a_broken_set_it_never_ran(sandbox):
    sentence = _break_a_second_set(sandbox)
    status = run_app(sandbox.project, "status")
    assert status.code == 2
    assert "No runs yet" in status.out
    assert f"problem: patches/emptyp: {sentence}" in status.err
    as_json = run_app(sandbox.project, "status", "--json")
    assert as_json.code == 2 and f"problem: patches/emptyp: {sentence}" in as_json.err
