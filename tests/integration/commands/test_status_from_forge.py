"""`status --from-forge`: the set as GitCode shows it, read from the records its PRs carry."""

from __future__ import annotations

from tests.helpers.project import TOKEN, run_app

TARGETS = ["v2.7.1", "v2.11.0", "v2.12.0", "master"]
ENV = {"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.1"}


def test_each_branch_shows_its_pr_and_result_and_one_without_pr_fails(sandbox, gitcode):
    applied = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests",
                      "--branch", "master", "--branch", "v2.12.0", env=ENV)
    assert applied.code == 0, applied.err
    requests = len(gitcode.requests)
    shown = run_app(sandbox.project, "status", "--api", "put_metric", "--from-forge", "--json",
                    env=ENV)
    assert shown.code == 1  # two branches have no open PR
    rows = {row["target"]: row for row in shown.json()["branches"]}
    assert [r["target"] for r in shown.json()["branches"]] == TARGETS
    for target in ("master", "v2.12.0"):
        (pr,) = gitcode.open_prs(base=target)
        assert rows[target]["pr"]["number"] == pr.number
        assert rows[target]["result"] == "not run (--skip-tests)"
        assert (rows[target]["test_state"], rows[target]["skipped_because"]) == (
            "skipped", "--skip-tests")
        assert rows[target]["head_commit"] == pr.head_sha
    for target in ("v2.7.1", "v2.11.0"):
        assert rows[target]["pr"] is None and rows[target]["result"] == "no open PR"
        assert rows[target]["test_state"] is None
    assert all(r.method == "GET" for r in gitcode.requests[requests:])  # it only reads
    only = run_app(sandbox.project, "status", "--api", "put_metric", "--from-forge",
                   "--branch", "master", env=ENV)
    assert only.code == 0 and "master" in only.out and "v2.7.1" not in only.out


def test_without_a_patch_set_or_with_a_bad_token_one_sentence(sandbox, gitcode):
    none = run_app(sandbox.project, "status", "--from-forge", env=ENV)
    assert none.code == 2 and "--api" in none.err and "Traceback" not in none.err
    bad = run_app(sandbox.project, "status", "--api", "put_metric", "--from-forge",
                  env={**ENV, "GITCODE_TOKEN": "wrong-token-1"})
    assert bad.code == 1 and "401" in bad.err and "Traceback" not in bad.err
    assert "wrong-token-1" not in bad.err + bad.out
