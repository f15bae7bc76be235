"""Without `fork:` the fork is `<token's login>/<upstream's repo name>`: one `GET /user` per
run names it, and `check` says which fork the real run will push to."""

from __future__ import annotations

from tests.helpers.project import TOKEN, edit_config, git, run_app

FAST = {"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.05"}


def _without_fork(data: dict) -> None:
    data.pop("fork")  # fork_url stays: the stand-in's fork lives in the sandbox


def test_apply_pushes_to_the_fork_of_the_tokens_login_asking_once(sandbox, gitcode) -> None:
    edit_config(sandbox, _without_fork)
    gitcode.login = "lgxxx"  # the token's user; their fork is lgxxx/pytorch
    result = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", env=FAST)
    assert result.code == 0, result.out + result.err
    assert [r.path for r in gitcode.requests].count("/user") == 1  # asked once, kept for the run
    prs = gitcode.open_prs()
    assert len(prs) == 4 and {pr.head_repo for pr in prs} == {"lgxxx/pytorch"}
    assert all("PR 源仓库为 `lgxxx/pytorch`" in pr.body for pr in prs)
    assert "refs/heads/test-put-metric-v2.7.1" in git(sandbox.fork, "for-each-ref")
    # `status --from-forge` reads the PRs of the token's fork.
    status = run_app(sandbox.project, "status", "--api", "put_metric", "--from-forge", "--json",
                     env=FAST)
    assert all(row["pr"] is not None for row in status.json()["branches"]), status.out


def test_a_dry_run_with_a_token_plans_for_the_tokens_fork(sandbox, gitcode) -> None:
    edit_config(sandbox, _without_fork)
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--dry-run",
                  env=FAST)
    assert dry.code == 0, dry.out + dry.err
    assert "head=lgxxx/pytorch:test-put-metric-master base=master" in dry.out
    assert [r.path for r in gitcode.requests].count("/user") == 1
    assert {r.method for r in gitcode.requests} == {"GET"}
    assert "The real run: needs" not in dry.out  # nothing missing


def test_check_names_the_fork_it_will_use(sandbox, gitcode) -> None:
    edit_config(sandbox, _without_fork)
    gitcode.login = "li-lei"
    online = run_app(sandbox.project, "check", "--json", env=FAST)
    assert online.code == 0, online.out + online.err
    (fork,) = [f for f in online.json()["findings"] if f["check"] == "pushed to"]
    assert fork["detail"] == "li-lei/pytorch (the token's login)"
    assert [r.path for r in gitcode.requests] == ["/user"]  # the one thing check asks the forge

    offline = run_app(sandbox.project, "check", "--offline", "--json", env=FAST)
    (fork,) = [f for f in offline.json()["findings"] if f["check"] == "pushed to"]
    assert fork["detail"] == "follows the token's login: <token's login>/pytorch (offline: not asked)"

    no_token = run_app(sandbox.project, "check", "--json",
                       env={"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "",
                            "HOME": str(sandbox.project)})
    (fork,) = [f for f in no_token.json()["findings"] if f["check"] == "pushed to"]
    assert fork["detail"] == ("follows the token's login: <token's login>/pytorch "
                              "(no token here to ask)")
    assert [r.path for r in gitcode.requests] == ["/user"]


def test_preview_names_the_fork_as_the_token_will_without_asking(sandbox, gitcode) -> None:
    edit_config(sandbox, _without_fork)
    result = run_app(sandbox.project, "preview", "--api", "put_metric", "--branch", "master",
                     env=FAST)
    assert result.code == 0, result.err
    assert "PR 源仓库为 `<token's login>/pytorch`" in result.out
    assert gitcode.requests == []
