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

from backport import __version__
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


PIN_VARIABLE = "BACKPORT_PIN"


def pinned() -> str:
    """The backport every shipped pipeline installs: this exact version, as a wheel from the
    package index (never the checkout's own code, which a PR may have changed)."""
    return f"backport=={__version__}"


GITCODE_HEADER = """\
# GitCode pipeline (copy to .gitcode/workflows/backport-apply.yml), written by
#   backport matrix --format gitcode {selection}
# from branches.yaml: run that again after changing the map or the patch sets. Started by hand
# (workflow_dispatch): one job per patch set and target branch, each on the runner tags (and
# container image) of its environment's `ci:` entry, where that branch's torch / torch_npu / CANN
# are installed. Each job tests its branch in a step without the token (`apply --no-push`), then
# publishes in a step that runs no test code (`apply --skip-tests` keeps the passing result of
# the tested commit): it pushes the fork branch and opens or refreshes that branch's PR; the PRs'
# evidence blocks are the shared state, so there is no fan-in job. The token, the repository
# secret {secret} (a user's token with write access to the fork and PR rights on the upstream),
# is held only by the fetch and the publish steps. backport is the pinned wheel {pin_var} (an
# exact version of your package index), never the checkout's own code. A `source:` of the
# environment (CANN's set_env.sh) is sourced by backport itself before each Python it starts.
name: backport apply

on:
  workflow_dispatch:

jobs:
"""


def _step(name: str, script: str, env: dict[str, str] | None = None, when: str = "") -> str:
    """One `run:` step; ``env`` only for the steps that hold the token."""
    out = [f"      - name: {_q(name)}\n"]
    if when:
        out.append(f"        if: {when}\n")
    if env:
        out.append("        env:\n")
        out += [f"          {key}: {value}\n" for key, value in env.items()]
    out.append("        run: |\n          set -euo pipefail\n")
    out += [f"          {line}\n" for line in script.splitlines()]
    return "".join(out)


TOKEN_ENV = {SECRET: SECRET_REF}


def _fetch(folder: str, what: str, source: str, extra: dict[str, str] | None = None) -> str:
    """Fetch ``source`` into ``folder`` with the token in a header (never in the URL); git
    only, so the token's step runs no code of what it fetches."""
    return _step(f"{what} (the token in a header, only in this step)", f"""\
auth=$(printf 'oauth2:%s' "$GITCODE_TOKEN" | base64 -w0)
export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader
export GIT_CONFIG_VALUE_0="Authorization: Basic $auth"
git init -q {folder}
git -C {folder} fetch -q --depth 1 {source}
git -C {folder} checkout -q FETCH_HEAD""", {**TOKEN_ENV, **(extra or {})})


INSTALL = _step("Install the pinned backport (never the checkout's own code)", f"""\
python3 -m venv .backport-venv
.backport-venv/bin/pip install --quiet --only-binary=:all: "${PIN_VARIABLE}\"""")


def _in(folder: str, name: str, command: str, env: dict[str, str] | None = None,
        when: str = "") -> str:
    return _step(name, f"cd {folder}\n../.backport-venv/bin/backport {command}", env, when)


GITCODE_STEPS = "    steps:\n" + "".join([
    _fetch("src", "Fetch the triggering commit",
           '"${ATOMGIT_SERVER_URL:-https://gitcode.com}/$ATOMGIT_REPOSITORY.git" "$ATOMGIT_SHA"'),
    INSTALL,
    _in("src", "Build the branch's test environment where it is missing",
        'env setup "$BRANCH"'),
    _in("src", "Apply and test (no token: nothing leaves this machine)",
        'apply --api "$API" --branch "$BRANCH" --no-push --json'),
    _in("src", "Publish the tested commit (the token; no test code runs)",
        'apply --api "$API" --branch "$BRANCH" --skip-tests --json', TOKEN_ENV),
])


def _gitcode_job(job_id: str, name: str, job: MatrixJob, env: dict[str, str],
                 extra: str = "") -> str:
    """A GitCode job's head: its id, name, runner tags, container image and variables."""
    out = [f"  {job_id}:\n", f"    name: {_q(name)}\n", extra,
           f"    runs-on: [{', '.join(_q(tag) for tag in job.runs_on)}]\n"]
    if job.image:
        out.append(f"    container:\n      image: {_q(job.image)}\n")
    out.append("    env:\n")
    out += [f"      {key}: {value}\n" for key, value in {PIN_VARIABLE: _q(pinned()), **env}.items()]
    return "".join(out)


def gitcode_pipeline(jobs: Sequence[MatrixJob], selection: str) -> str:
    """The whole GitCode apply pipeline for ``jobs``; ``selection`` is the command's options."""
    out = [GITCODE_HEADER.format(selection=selection, secret=SECRET, pin_var=PIN_VARIABLE)]
    for job in jobs:
        out.append(_gitcode_job(_job_id(job), f"{job.api} on {job.branch}", job, {
            "API": _q(job.api), "BRANCH": _q(job.branch)}))
        out.append(GITCODE_STEPS)
    return "".join(out)


GITCODE_TRIGGER_HEADER = """\
# GitCode pipeline for `/backport` (copy to the UPSTREAM repository's
# .gitcode/workflows/backport-trigger.yml: its PR comments and merges start it), written by
#   backport matrix --trigger --format gitcode
# from branches.yaml: run that again after changing the map. A `/backport [B…]` comment (its
# first word exactly /backport) from a user with write permission on the upstream backports a
# merged PR to the branches asked for (none named: every target but the PR's base); on an open
# PR the request is recorded and the merge runs it. The `plan` job runs first, on a small hosted
# runner: `backport trigger --plan` checks the commenter's permission before any environment is
# built or any comment listed, gives anyone else one reply, and names the branches asked for.
# Then one job per branch it named, on the runner tags (and container image) of its
# environment's `ci:` entry: `trigger --branch B --prepare` checks the permission again (and
# answers nobody) and makes the patch set from the PR; the PR's tests run in a step without the
# token (`apply --no-push`); the publish step (`apply --skip-tests`) runs no test code. The
# repository holding branches.yaml and patches/ is the secret {map_secret} (its clone URL); the
# token, the secret {secret} (a user's token: write access to the fork, PR rights on the
# upstream), is held only by the steps that run no code from the PR. backport is the pinned
# wheel {pin_var}, never code from a checkout.
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
MAP_ENV = {MAP_SECRET: f"${{{{ secrets.{MAP_SECRET} }}}}"}
PLAN_RUNNER = ("ubuntu-latest", "x64", "small")  # GitCode's default hosted runner tags

FETCH_MAP = _fetch("map", "Fetch the map repository", f'"${MAP_SECRET}" HEAD', MAP_ENV)

GITCODE_PLAN_JOB = "".join([
    "  plan:\n",
    '    name: "/backport: who asked, for which branches"\n',
    f"    runs-on: [{', '.join(PLAN_RUNNER)}]\n",
    "    outputs:\n",
    "      branches: ${{ steps.plan.outputs.branches }}\n",
    "    env:\n",
    f"      {PIN_VARIABLE}: {{pin}}\n",
    "    steps:\n",
    FETCH_MAP,
    INSTALL,
    _in("map", "Check the permission, answer a refused request, name the branches",
        "trigger --plan", TOKEN_ENV).replace("      - name:", "      - id: plan\n        name:", 1),
])

PREPARED = "${{ steps.prepare.outputs.api != '' }}"
API_ENV = {"API": "${{ steps.prepare.outputs.api }}"}

GITCODE_TRIGGER_STEPS = "    steps:\n" + "".join([
    FETCH_MAP,
    INSTALL,
    _in("map", "Check the permission again and make the patch set from the PR",
        'trigger --branch "$BRANCH" --prepare', TOKEN_ENV).replace(
        "      - name:", "      - id: prepare\n        name:", 1),
    _in("map", "Build the branch's test environment where it is missing", 'env setup "$BRANCH"',
        when=PREPARED),
    _in("map", "Apply and test the PR's change (no token: nothing leaves this machine)",
        'apply --api "$API" --branch "$BRANCH" --no-push --json', API_ENV, when=PREPARED),
    _in("map", "Publish the tested commit (the token; no test code runs)",
        'apply --api "$API" --branch "$BRANCH" --skip-tests --json', {**API_ENV, **TOKEN_ENV},
        when=PREPARED),
])


def gitcode_trigger_pipeline(jobs: Sequence[MatrixJob]) -> str:
    """The whole GitCode `/backport` pipeline: the `plan` job, then one job per target that
    runs only when the plan names its branch."""
    out = [GITCODE_TRIGGER_HEADER.format(secret=SECRET, map_secret=MAP_SECRET,
                                         pin_var=PIN_VARIABLE),
           GITCODE_PLAN_JOB.replace("{pin}", _q(pinned()))]
    for job in jobs:
        job_id = "trigger_" + re.sub(r"[^A-Za-z0-9_]", "_", job.branch)
        wanted = f"    needs: plan\n    if: ${{{{ contains(needs.plan.outputs.branches, " \
                 f"',{job.branch},') }}}}\n"
        out.append(_gitcode_job(job_id, f"/backport on {job.branch}", job,
                                {"BRANCH": _q(job.branch)}, wanted))
        out.append(GITCODE_TRIGGER_STEPS)
    return "".join(out)
