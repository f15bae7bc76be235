"""How far a run goes is decided once from `apply`'s flags (`RunMode`), and its prerequisites
follow from it."""

from __future__ import annotations

import itertools

import pytest

from backport.pipeline.session import Effects, Prerequisite, RunMode

# (--dry-run, --no-push, --no-pr) -> effects: --no-push wins over --no-pr; --dry-run keeps it.
TABLE = {
    (False, False, False): Effects.PR,
    (False, False, True): Effects.PUSH,
    (False, True, False): Effects.LOCAL,
    (False, True, True): Effects.LOCAL,
    (True, False, False): Effects.PR,
    (True, False, True): Effects.PUSH,
    (True, True, False): Effects.LOCAL,
    (True, True, True): Effects.LOCAL,
}


@pytest.mark.parametrize(("dry_run", "no_push", "no_pr"),
                         list(itertools.product((False, True), repeat=3)))
def test_every_combination_of_flags_has_one_mode(dry_run: bool, no_push: bool,
                                                 no_pr: bool) -> None:
    mode = RunMode.of_flags(dry_run=dry_run, no_push=no_push, no_pr=no_pr)
    assert mode == RunMode(TABLE[dry_run, no_push, no_pr], dry_run)
    assert mode.pushes == (not no_push)
    assert mode.opens_prs == (not no_push and not no_pr)


ENVS, TOKEN, FORK = Prerequisite.ENVIRONMENTS, Prerequisite.TOKEN, Prerequisite.FORK


@pytest.mark.parametrize(("effects", "skip_tests", "needs"), [
    (Effects.LOCAL, False, (ENVS,)),
    (Effects.LOCAL, True, ()),
    (Effects.PUSH, False, (ENVS, TOKEN, FORK)),
    (Effects.PUSH, True, (TOKEN, FORK)),
    (Effects.PR, False, (ENVS, TOKEN, FORK)),
    (Effects.PR, True, (TOKEN, FORK)),
])
def test_the_prerequisites_follow_the_effects_alone(effects: Effects, skip_tests: bool,
                                                    needs: tuple[Prerequisite, ...]) -> None:
    # dry or not, a mode needs the same: a real run refuses to start without it, a dry run
    # names it at its end as what the real run needs
    for dry_run in (False, True):
        assert RunMode(effects, dry_run).prerequisites(skip_tests=skip_tests) == needs


def test_a_dry_run_that_does_not_push_plans_no_push_and_needs_no_token() -> None:
    mode = RunMode.of_flags(dry_run=True, no_push=True)
    assert not mode.pushes and not mode.opens_prs
    assert TOKEN not in mode.prerequisites(skip_tests=False)
