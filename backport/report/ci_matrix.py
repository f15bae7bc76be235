"""The CI job matrix (`backport matrix`, `--trigger`): one job per patch set and target branch,
on the runner tags of its environment's `ci:` entry in branches.yaml. GitHub reads the matrix
from a job output (`fromJSON`), so `github_matrix` is data. GitCode's documented expressions have
no `fromJSON`, so the whole pipeline is written from a template (templates/gitcode-*.yml.j2);
examples/ci/gitcode-apply.yml and gitcode-trigger.yml are its output for the bundled map.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backport import __version__
from backport.config.model import BranchMap, PatchSet

if TYPE_CHECKING:
    import jinja2


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
        return {**dataclasses.asdict(self), "runs_on": list(self.runs_on), "command": self.command}


def _job(bm: BranchMap, api: str, target: str) -> MatrixJob:
    env = bm.environments[bm.targets[target].env]
    return MatrixJob(api, target, env.name, env.ci.runs_on, env.ci.image)


def matrix_jobs(bm: BranchMap, patch_sets: Sequence[PatchSet]) -> list[MatrixJob]:
    """The jobs, in patch-set and target order."""
    return [_job(bm, ps.name, target) for ps in patch_sets for target in ps.branches]


def trigger_jobs(bm: BranchMap) -> list[MatrixJob]:
    """The `/backport` jobs: one per target of the map (`backport trigger --branch B`), each
    on its environment's runner; the job of a branch the event does not ask for does nothing."""
    return [_job(bm, "", target) for target in bm.targets]


def github_matrix(jobs: Sequence[MatrixJob]) -> str:
    """``{"include": [...]}`` on one line, for ``$GITHUB_OUTPUT`` and ``fromJSON``."""
    return json.dumps({"include": [j.to_dict() for j in jobs]}, separators=(",", ":"))


def _q(text: str) -> str:
    """A YAML scalar: a JSON string is a valid double-quoted YAML scalar."""
    return json.dumps(text, ensure_ascii=False)


@functools.cache
def _templates() -> jinja2.Environment:
    """The pipelines' templates: ``<< >>`` and ``<% %>``, so GitCode's ``${{ }}`` is text
    (Jinja2 loaded only to write a pipeline)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("backport.report", "templates"), autoescape=False,
        variable_start_string="<<", variable_end_string=">>", block_start_string="<%",
        block_end_string="%>", undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
        trim_blocks=True, lstrip_blocks=True)
    env.filters["q"] = _q  # `map("q")`
    return env


def _render(name: str, jobs: Sequence[MatrixJob], **more: str) -> str:
    # ``pin``: this exact version as a wheel from the index, never the checkout's own code
    return _templates().get_template(name).render(
        jobs=jobs, q=_q, pin=f"backport=={__version__}", ident=lambda text: re.sub(r"[^A-Za-z0-9_]", "_", text),
        **more)


def gitcode_pipeline(jobs: Sequence[MatrixJob], selection: str) -> str:
    """The GitCode apply pipeline (``selection``: the command's options): each job tests without
    the token (`apply --no-push`), then publishes in a step running no test code (`--skip-tests`)."""
    return _render("gitcode-apply.yml.j2", jobs, selection=selection)


def gitcode_trigger_pipeline(jobs: Sequence[MatrixJob]) -> str:
    """The whole GitCode `/backport` pipeline: the `plan` job (the commenter's permission, the
    branches asked for), then one job per target that runs only when the plan names it."""
    return _render("gitcode-trigger.yml.j2", jobs)
