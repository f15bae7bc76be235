"""One PR per fix in a batch: `apply --from-pr A --from-pr B …` where two sets made from PRs
carry the same change into one target opens one PR. Right after a branch's series went in, its change (the
``patch-id --stable`` of the whole diff from the base to the commit made) is compared with
that of each set made from a PR run before it in this batch on the same target: where one is the same and has
a PR (or was itself found already proposed), this branch is `already-proposed`, naming it."""

from __future__ import annotations

from backport.git.apply import patch_ids
from backport.git.run import git
from backport.pipeline.job import BranchJob
from backport.pipeline.proposed import BACKPORT
from backport.pipeline.set_run import SetRun
from backport.records import BranchRecord, ProposedPr
from backport.states import Status


def _change(run: SetRun, rec: BranchRecord) -> set[str]:
    """The patch-id of ``rec``'s whole change on its base (empty when there is none)."""
    if not rec.base or not rec.commit or rec.base == rec.commit:
        return set()
    cache = run.session.cache
    out = git(["diff", "--no-color", "--no-ext-diff", rec.base, rec.commit, "--"],
              cwd=cache.path, env=cache.env, check=False)
    if not out.ok or not out.raw.strip():
        return set()
    return patch_ids(cache.path, out.raw, cache.env, memo=cache.memo)


def _carrier(earlier: BranchRecord) -> ProposedPr | None:
    """The PR an earlier set's branch stands for: its own, or the one it found carrying it."""
    if earlier.status == Status.ALREADY_PROPOSED and earlier.proposed is not None:
        return earlier.proposed
    if earlier.pr is not None:
        return ProposedPr(number=earlier.pr.number, url=earlier.pr.url, state="open",
                          kind=BACKPORT, title=earlier.pr.title or "")
    return None


def same_fix_step(run: SetRun, job: BranchJob) -> bool:
    """Stop the branch as already proposed when a set run before it in this batch carries the
    same change into its target and has a PR there; True (go on) otherwise."""
    if not run.earlier or job.patch_set.source is None or not run.options.course.opens_prs:
        return True
    mine = _change(run, job.record)
    if not mine:
        return True
    found = next(((other, pr) for other in run.earlier if other.patch_set.source is not None
                  and job.target in other.targets
                  and (pr := _carrier(theirs := other.job_for(job.target).record)) is not None
                  and _change(run, theirs) == mine), None)
    if found is None:
        return True
    other, pr = found
    message = (f"already proposed in PR !{pr.number} ({pr.url}) of {other.patch_set.name} in "
               f"this run: it carries the same change into {job.target}, so no PR is opened")
    job.stop(lambda r: r.already_proposed(pr, message))
    return False
