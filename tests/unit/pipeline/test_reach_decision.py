"""The reach of a run is decided once from `apply`'s flags, and its prerequisites follow it."""

from __future__ import annotations

import itertools

import pytest

from backport.pipeline.reach import Course, Need, Reach

# (--dry-run, --no-push, --no-pr) -> reach: --no-push wins over --no-pr; --dry-run keeps it.
TABLE = {
    (False, False, False): Reach.PR,
    (False, False, True): Reach.PUSH,
    (False, True, False): Reach.LOCAL,
    (False, True, True): Reach.LOCAL,
    (True, False, False): Reach.PR,
    (True, False, True): Reach.PUSH,
    (True, True, False): Reach.LOCAL,
    (True, True, True): Reach.LOCAL,
}


@pytest.mark.parametrize(("dry_run", "no_push", "no_pr"),
                         list(itertools.product((False, True), repeat=3)))
def test_every_combination_of_flags_has_one_reach(dry_run: bool, no_push: bool,
                                                  no_pr: bool) -> None:
    course = Course.of_flags(dry_run=dry_run, no_push=no_push, no_pr=no_pr)
    assert course == Course(TABLE[dry_run, no_push, no_pr], dry_run)
    assert course.pushes == (not no_push)
    assert course.opens_prs == (not no_push and not no_pr)


@pytest.mark.parametrize(("reach", "skip_tests", "needs"), [
    (Reach.LOCAL, False, (Need.ENVIRONMENTS,)),
    (Reach.LOCAL, True, ()),
    (Reach.PUSH, False, (Need.ENVIRONMENTS, Need.TOKEN, Need.FORK)),
    (Reach.PUSH, True, (Need.TOKEN, Need.FORK)),
    (Reach.PR, False, (Need.ENVIRONMENTS, Need.TOKEN, Need.FORK)),
    (Reach.PR, True, (Need.TOKEN, Need.FORK)),
])
def test_the_prerequisites_follow_the_reach_alone(reach: Reach, skip_tests: bool,
                                                  needs: tuple[Need, ...]) -> None:
    # dry or not, a reach needs the same: a real run refuses to start without it, a dry run
    # names it at its end as what the real run needs
    for dry_run in (False, True):
        assert Course(reach, dry_run).needs(skip_tests=skip_tests) == needs


def test_a_dry_run_that_does_not_push_plans_no_push_and_needs_no_token() -> None:
    course = Course.of_flags(dry_run=True, no_push=True)
    assert not course.pushes and not course.opens_prs
    assert Need.TOKEN not in course.needs(skip_tests=False)
