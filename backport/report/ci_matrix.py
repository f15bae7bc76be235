"""The CI job matrix: one job per patch set and target branch, on the runner that holds its
environment (`ci:` of the environment in branches.yaml), for GitHub Actions and GitCode pipelines.

GitHub reads the matrix from a job output (`fromJSON`), so `github_matrix` is data. GitCode's
documented expressions have no `fromJSON`, so `gitcode_pipeline` writes the whole pipeline, one
job per target; examples/ci/gitcode-apply.yml is its output for the shipped map.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from backport.config.model import BranchMap, PatchSet

SECRET = "GITCODE_TOKEN"  # the repository secret both CIs read the token from
SECRET_REF = f"${{{{ secrets.{SECRET} }}}}"  # how a GitCode job reads it


@dataclass(frozen=True)
class MatrixJob:
    """One job: `backport apply --api API --branch BRANCH` on its environment's runner."""

    api: str
    branch: str
    env: str
    runs_on: tuple[str, ...]
    image: str

    @property
    def command(self) -> str:
        """What the job runs: `apply` of its set, or (no set: a `/backport` job) `trigger`."""
        if not self.api:
            return f"backport trigger --branch {self.branch}"
        return f"backport apply --api {self.api} --branch {self.branch}"

    def to_dict(self) -> dict:
        return {"api": self.api, "branch": self.branch, "env": self.env,
                "runs_on": list(self.runs_on), "image": self.image, "command": self.command}


def matrix_jobs(bm: BranchMap, patch_sets: Sequence[PatchSet]) -> list[MatrixJob]:
    """The jobs, in patch-set and target order."""
    jobs = []
    for ps in patch_sets:
        for target in ps.branches:
            env = bm.environments[bm.targets[target].env]
            jobs.append(MatrixJob(ps.name, target, env.name, env.ci.runs_on, env.ci.image))
    return jobs


def trigger_jobs(bm: BranchMap) -> list[MatrixJob]:
    """The `/backport` jobs: one per target of the map (`backport trigger --branch B`), each
    on its environment's runner; the job of a branch the event does not ask for does nothing."""
    jobs = []
    for target, spec in bm.targets.items():
        env = bm.environments[spec.env]
        jobs.append(MatrixJob("", target, env.name, env.ci.runs_on, env.ci.image))
    return jobs


def github_matrix(jobs: Sequence[MatrixJob]) -> str:
    """``{"include": [...]}`` on one line, for ``$GITHUB_OUTPUT`` and ``fromJSON``."""
    return json.dumps({"include": [j.to_dict() for j in jobs]}, separators=(",", ":"))


def _q(text: str) -> str:
    """A YAML scalar: a JSON string is a valid double-quoted YAML scalar."""
    return json.dumps(text, ensure_ascii=False)


def _job_id(job: MatrixJob) -> str:
    return "apply_" + re.sub(r"[^A-Za-z0-9_]", "_", f"{job.api}_{job.branch}")


GITCODE_HEADER = """\
# GitCode pipeline (copy to .gitcode/workflows/backport-apply.yml), written by
#   backport matrix --format gitcode {selection}
# from branches.yaml: run that again after changing the map or the patch sets. Started by hand
# (workflow_dispatch): one job per patch set and target branch, each on the runner tags (and
# container image) of its environment's `ci:` entry, where that branch's torch / torch_npu / CANN
# are installed. Each job runs `backport apply --api A --branch B`: it tests its branch, pushes the
# fork branch and opens or refreshes that branch's PR; the PRs' evidence blocks are the shared
# state, so there is no fan-in job. The token is the repository secret {secret} (a user's
# token with write access to the fork and PR rights on the upstream). A `source:` of the
# environment (CANN's set_env.sh) is sourced by backport itself before each Python it starts.
name: backport apply

on:
  workflow_dispatch:

jobs:
"""

def _gitcode_steps(folder: str, fetch: str, source: str, act: str, command: str) -> str:
    """The steps of every GitCode job: fetch ``source`` into ``folder`` with the token in a
    header (never in the URL), install backport from it (a self-hosted host has no tool cache),
    build the branch's environment where it is missing, then run ``command`` there."""
    return f"""\
    steps:
      - name: {fetch} (token in a header, never in the URL)
        run: |
          set -euo pipefail
          auth=$(printf 'oauth2:%s' "$GITCODE_TOKEN" | base64 -w0)
          export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader
          export GIT_CONFIG_VALUE_0="Authorization: Basic $auth"
          git init -q {folder}
          git -C {folder} fetch -q --depth 1 {source}
          git -C {folder} checkout -q FETCH_HEAD
      - name: Install backport (no tool cache on a self-hosted host)
        run: |
          set -euo pipefail
          python3 -m venv .backport-venv
          .backport-venv/bin/pip install --quiet ./{folder}
      - name: Build the branch's test environment where it is missing
        run: |
          set -euo pipefail
          cd {folder}
          ../.backport-venv/bin/backport env setup "$BRANCH"
      - name: {act}
        run: |
          set -euo pipefail
          cd {folder}
          ../.backport-venv/bin/backport {command}
"""


GITCODE_STEPS = _gitcode_steps(
    "src", "Fetch the triggering commit",
    '"${ATOMGIT_SERVER_URL:-https://gitcode.com}/$ATOMGIT_REPOSITORY.git" "$ATOMGIT_SHA"',
    "Apply, test, push and open the PR", 'apply --api "$API" --branch "$BRANCH" --json')


def _gitcode_job(job_id: str, name: str, job: MatrixJob, env: dict[str, str]) -> str:
    """A GitCode job's head: its id, name, runner tags, container image and variables."""
    out = [f"  {job_id}:\n", f"    name: {_q(name)}\n",
           f"    runs-on: [{', '.join(_q(tag) for tag in job.runs_on)}]\n"]
    if job.image:
        out.append(f"    container:\n      image: {_q(job.image)}\n")
    out.append("    env:\n")
    out += [f"      {key}: {value}\n" for key, value in env.items()]
    return "".join(out)


def gitcode_pipeline(jobs: Sequence[MatrixJob], selection: str) -> str:
    """The whole GitCode apply pipeline for ``jobs``; ``selection`` is the command's options."""
    out = [GITCODE_HEADER.format(selection=selection, secret=SECRET)]
    for job in jobs:
        out.append(_gitcode_job(_job_id(job), f"{job.api} on {job.branch}", job, {
            "API": _q(job.api), "BRANCH": _q(job.branch), "GITCODE_TOKEN": SECRET_REF}))
        out.append(GITCODE_STEPS)
    return "".join(out)


GITCODE_TRIGGER_HEADER = """\
# GitCode pipeline for `/backport` (copy to the UPSTREAM repository's
# .gitcode/workflows/backport-trigger.yml: its PR comments and merges start it), written by
#   backport matrix --trigger --format gitcode
# from branches.yaml: run that again after changing the map. One job per target branch, each on
# the runner tags (and container image) of its environment's `ci:` entry. A `/backport [B…]`
# comment from a user with write permission on the upstream backports a merged PR to the
# branches asked for (none named: every target but the PR's base); on an open PR the request is
# recorded and the merge runs it; anyone else gets one reply. The job of a branch not asked for
# does nothing. Each job fetches the repository that holds branches.yaml and patches/ (the
# secret {map_secret}: its clone URL) and runs `backport trigger --branch B` in it. The token is
# the secret {secret} (a user's token: write access to the fork, PR rights on the upstream).
name: backport trigger

on:
  pull_request_comment:
    types: [created]
    comments: ['^/backport']
  pr_comment:
    types: [created]
    keyword: '^/backport'
  pull_request:
    types: [merge]

jobs:
"""

MAP_SECRET = "BACKPORT_MAP"  # the clone URL of the repository holding branches.yaml, patches/

GITCODE_TRIGGER_STEPS = _gitcode_steps(
    "map", "Fetch the map repository", '"$BACKPORT_MAP" HEAD',
    "Act on the comment or the merge for this branch", 'trigger --branch "$BRANCH"')


def gitcode_trigger_pipeline(jobs: Sequence[MatrixJob]) -> str:
    """The whole GitCode `/backport` pipeline: one `trigger` job per target."""
    out = [GITCODE_TRIGGER_HEADER.format(secret=SECRET, map_secret=MAP_SECRET)]
    for job in jobs:
        job_id = "trigger_" + re.sub(r"[^A-Za-z0-9_]", "_", job.branch)
        out.append(_gitcode_job(job_id, f"/backport on {job.branch}", job, {
            "BRANCH": _q(job.branch), "GITCODE_TOKEN": SECRET_REF,
            "BACKPORT_MAP": f"${{{{ secrets.{MAP_SECRET} }}}}"}))
        out.append(GITCODE_TRIGGER_STEPS)
    return "".join(out)
