"""`apply --dry-run` needs no token, no fork and no built environment: it plans every branch,
exits 0 when the plan is whole, and ends with what the real run needs."""

from __future__ import annotations

from tests.helpers.project import edit_config, git, run_app

NO_TOKEN = {"GITCODE_TOKEN": "", "BACKPORT_TOKEN": "", "GIT_CONFIG_NOSYSTEM": "1"}
TARGETS = ("v2.7.1", "v2.11.0", "v2.12.0", "master")


def _without_fork(data: dict) -> None:
    data.pop("fork")
    data.pop("fork_url")  # on GitCode the fork's URL follows its name


def _unbuilt(data: dict) -> None:
    for env in data["environments"].values():
        env["python"] = "/nonexistent/venv/bin/python"


def _statuses(out: str) -> dict[str, str]:
    rows = [line.split("│") if "│" in line else line.split("|") for line in out.splitlines()]
    return {cells[1].strip(): cells[3].strip() for cells in rows
            if len(cells) > 3 and cells[1].strip() in TARGETS}


def test_a_dry_run_without_token_or_fork_plans_every_branch(sandbox, gitcode) -> None:
    edit_config(sandbox, _without_fork)
    env = {**NO_TOKEN, "HOME": str(sandbox.project)}
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--dry-run",
                  env=env)
    assert dry.code == 0, dry.out + dry.err
    assert _statuses(dry.out) == dict.fromkeys(TARGETS, "planned"), dry.out
    text = " ".join(dry.out.split())
    assert text.count("git push --force-with-lease=") == 4
    assert "for 4 new PR(s) in 1 patch set(s)" in text
    assert "fork branch 'test-put-metric-master' not read: the fork follows the token's login" in text
    needs = text.split("The real run:", 1)[1]
    assert "needs what this dry run does not: no GitCode token for " in needs
    assert ("needs what this dry run does not: the fork's name: it follows the token's login "
            "(<token's login>/pytorch), or set fork: in branches.yaml.") in needs
    assert gitcode.requests == []  # no token: nothing asked of the forge
    assert git(sandbox.fork, "for-each-ref") == ""
    assert not (sandbox.project / ".backport" / "runs" / "put_metric" / "journal.json").exists()


def test_a_dry_run_with_environments_not_built_plans_untested(sandbox, gitcode) -> None:
    edit_config(sandbox, _without_fork)
    edit_config(sandbox, _unbuilt)
    env = {**NO_TOKEN, "HOME": str(sandbox.project)}
    real = run_app(sandbox.project, "apply", "--api", "put_metric", env=env)
    assert real.code != 0 and "3 things are missing before the run can start" in real.err
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--dry-run", env=env)
    assert dry.code == 0, dry.out + dry.err
    assert _statuses(dry.out) == dict.fromkeys(TARGETS, "planned"), dry.out
    assert "not run (environments not built: dry run)" in dry.out  # never "--skip-tests"
    assert "--skip-tests" not in dry.out.split("The real run:", 1)[0]
    needs = " ".join(dry.out.split()).split("The real run:", 1)[1]
    assert "needs what this dry run does not: the test environment " in needs
    assert "is not built yet; run `backport env setup`" in needs
    assert "no GitCode token for " in needs and "the fork's name" in needs


def test_a_dry_run_that_does_not_push_needs_no_token(sandbox, gitcode) -> None:
    edit_config(sandbox, _without_fork)
    env = {**NO_TOKEN, "HOME": str(sandbox.project)}
    dry = run_app(sandbox.project, "apply", "--api", "put_metric", "--skip-tests", "--dry-run",
                  "--no-push", env=env)
    assert dry.code == 0, dry.out + dry.err
    assert "git push" not in dry.out and "POST " not in dry.out  # its mode plans nothing remote
    assert "token" not in dry.out
