"""`apply --dry-run` names every prerequisite the real run would (at its end: it plans without
them), and plans the PRs the real run opens even where it cannot read the fork."""

from __future__ import annotations

from tests.helpers.project import TOKEN, edit_config, run_app

FAST = {"GITCODE_TOKEN": TOKEN, "BACKPORT_GITCODE_SETTLE": "0.05"}

NO_TOKEN = {"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "", "GIT_CONFIG_NOSYSTEM": "1"}


def _unbuilt(sandbox) -> None:
    def change(data: dict) -> None:
        for env in data["environments"].values():
            env["python"] = "/nonexistent/venv/bin/python"
    edit_config(sandbox, change)


def test_a_dry_run_names_the_token_with_the_missing_environments(sandbox, gitcode):
    _unbuilt(sandbox)
    env = {**NO_TOKEN, "HOME": str(sandbox.project)}
    real = run_app(sandbox.project, "apply", "--api", "put_metric", env=env)
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--dry-run", env=env)
    assert real.code != 0 and dry.code == 0, dry.out + dry.err
    text = " ".join(real.err.split())
    assert "2 things are missing before the run can start: the test environment" in text, text
    assert "; and no GitCode token for " in text
    needs = " ".join(dry.out.split()).split("The real run:", 1)[1]  # the dry run plans, then names them
    assert "needs what this dry run does not: the test environment" in needs
    assert "needs what this dry run does not: no GitCode token for " in needs
    assert gitcode.requests == []


def test_a_dry_run_without_a_token_plans_and_names_the_token(sandbox, gitcode):
    env = {**NO_TOKEN, "HOME": str(sandbox.project)}
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--dry-run",
                  env=env)
    assert dry.code == 0, dry.err
    text = " ".join(dry.out.split())
    assert "The real run: needs what this dry run does not: no GitCode token for " in text, text
    assert "for 4 new PR(s)" in text


def test_a_fork_the_dry_run_cannot_read_still_plans_every_pr(sandbox, gitcode, tmp_path):
    missing = tmp_path / "no-such-fork.git"

    def unreachable(data: dict) -> None:
        data["fork_url"] = str(missing)
    edit_config(sandbox, unreachable)
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--dry-run",
                  env=FAST)
    assert dry.code == 0, dry.out + dry.err
    text = " ".join(dry.out.split())
    assert "for 4 new PR(s) in 1 patch set(s)" in text, text
    assert f"cannot read branch 'test-put-metric-v2.7.1' from {missing}" in text
    assert "the plan takes it as not there yet" in text
    assert "failed" not in " ".join(dry.out.split("The real run")[0].split())
