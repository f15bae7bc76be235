"""`backport preview`: the PR body `apply` would write, without any forge."""

from __future__ import annotations

from tests.helpers.project import run_app


def test_one_branch_prints_its_body_alone_and_every_branch_is_marked(sandbox) -> None:
    one = run_app(sandbox.project, "preview", "--api", "put_metric", "--branch", "master")
    assert one.code == 0, one.err
    assert "<!-- backport:preview" not in one.out
    assert "TARGET_BRANCH=master" in one.out and "RESULT: not run (pending)" in one.out
    every = run_app(sandbox.project, "preview", "--api", "put_metric")
    assert every.code == 0, every.err
    marks = [line for line in every.out.splitlines() if line.startswith("<!-- backport:preview")]
    assert marks == [f"<!-- backport:preview {t} -->"
                     for t in ("v2.7.1", "v2.11.0", "v2.12.0", "master")]
    assert not (sandbox.project / ".backport" / "runs" / "put_metric").exists()
