"""Run a shipped CI workflow the way its CI would, on this machine.

Reads a workflow file, expands each job's matrix (a literal `include:` list or `fromJSON` of an
earlier job's output) and runs every `run:` step in bash with the CI's documented variables,
step files and event file:

- GitHub Actions (`GITHUB_*`, `RUNNER_TEMP`, `CI=true`): a step's shell is `bash -e {0}`, or
  `bash --noprofile --norc -eo pipefail {0}` under `shell: bash`; `$GITHUB_OUTPUT`, `$GITHUB_ENV`,
  `$GITHUB_PATH`, `$GITHUB_STEP_SUMMARY` as documented.
- GitCode pipelines (`ATOMGIT_*` of the syntax reference, "variables"; `$ATOMGIT_OUTPUT`,
  `$ATOMGIT_ENV`, `$ATOMGIT_PATH`, `$ATOMGIT_STEP_SUMMARY` of "workflow commands"). GitCode does not
  document its default shell; the harness uses GitHub's `bash -e {0}`, which is why the shipped
  GitCode steps set `pipefail` themselves.

A step that uses a marketplace action is replaced by its documented effect: `actions/checkout`
clones the repository at the event's commit into the workspace, `actions/setup-python` puts a
Python with pip first on PATH (a copy of the one the run's tool cache holds, built once per
cache: :func:`tool_python`), `actions/upload-artifact` copies its path aside. A job's `if:`
may test the event (`github.event.…`, `startsWith`, `||`); a job it rules out is skipped, and so
are the jobs that need it. Any other action, expression or `if:` the harness does not know fails
the test: nothing is skipped silently.
Steps start from a clean environment (PATH of the system, a home of their own): nothing of the
test's own process leaks into them except what the caller passes in ``env``. When a job is over,
what it left running is ended, as a runner does (:func:`end_leftovers`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.helpers.processes import wait_gone, with_marker
from tests.helpers.venvs import venv_with_pip

_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# The runner image's `python3`: this Python's base interpreter.
RUNNER_PYTHON3 = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


@dataclass(frozen=True)
class Ci:
    """One CI's documented names."""

    name: str
    prefix: str  # GITHUB | ATOMGIT
    context: str  # github | atomgit


GITHUB = Ci("github", "GITHUB", "github")
GITCODE = Ci("gitcode", "ATOMGIT", "atomgit")


@dataclass
class StepRun:
    name: str
    ran: bool
    ok: bool
    output: str = ""
    secrets: tuple[str, ...] = ()  # the secrets (by name) its environment held
    runs_pr_code: bool = False  # its commands run code a branch or a PR wrote (runs_pr_code)


@dataclass
class JobRun:
    job: str
    matrix: dict[str, Any]
    steps: list[StepRun] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    summary: str = ""

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps if s.ran)

    def step(self, prefix: str) -> StepRun:
        (found,) = [s for s in self.steps if s.name.startswith(prefix)]
        return found

    @property
    def exposed(self) -> list[str]:
        """The steps that ran code from a branch or a PR while holding a secret."""
        return [f"{s.name}: {', '.join(s.secrets)}" for s in self.steps
                if s.ran and s.runs_pr_code and s.secrets]

    @property
    def log(self) -> str:
        return "\n".join(f"--- {s.name} (ran={s.ran}, ok={s.ok})\n{s.output}" for s in self.steps)


def load_workflow(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:  # PyYAML (YAML 1.1) reads the key `on` as True
        data["on"] = data.pop(True)
    return data


class WorkflowRun:
    """One run of one workflow file for one event."""

    def __init__(self, ci: Ci, workflow: Path, *, repo: Path, sha: str, repository: str,
                 event_name: str, event: dict[str, Any], tmp: Path,
                 secrets: dict[str, str] | None = None, inputs: dict[str, str] | None = None,
                 env: dict[str, str] | None = None, server_url: str = "",
                 tool_cache: Path | None = None) -> None:
        self.ci, self.data = ci, load_workflow(workflow)
        self.repo, self.sha, self.repository = repo, sha, repository
        self.event_name, self.tmp = event_name, tmp
        self.secrets, self.inputs = secrets or {}, inputs or {}
        self.extra_env, self.server_url = env or {}, server_url
        self.tool_cache = tool_cache or tmp / "toolcache"  # a runner's, shared by its jobs
        tmp.mkdir(parents=True, exist_ok=True)
        self.event_path = tmp / "event.json"
        self.event_path.write_text(json.dumps(event), encoding="utf-8")
        self.event = event
        self.skipped: set[str] = set()  # jobs whose `if:` was false, or whose needs were skipped
        self.outputs: dict[str, dict[str, str]] = {}  # job -> its outputs (last matrix job wins)
        self._jobs_started = 0

    # -- jobs and their matrix ---------------------------------------------------------------
    def run_all(self) -> list[JobRun]:
        """Every job, each after the jobs it needs, each matrix entry once."""
        done: list[JobRun] = []
        pending = list(self.data["jobs"])
        while pending:
            ready = [j for j in pending if set(self._needs(j)) <= set(self.outputs)]
            assert ready, f"jobs wait on each other: {pending}"
            for job_id in ready:
                pending.remove(job_id)
                if set(self._needs(job_id)) & self.skipped or \
                        not self._condition(self.data["jobs"][job_id].get("if")):
                    self.skipped.add(job_id)
                    self.outputs[job_id] = {}
                    continue
                runs = [self.run_job(job_id, entry) for entry in self.matrix(job_id)]
                done += runs
                self.outputs[job_id] = {k: v for r in runs for k, v in r.outputs.items()}
        return done

    def _needs(self, job_id: str) -> list[str]:
        needs = self.data["jobs"][job_id].get("needs", [])
        return [needs] if isinstance(needs, str) else list(needs)

    def matrix(self, job_id: str) -> list[dict[str, Any]]:
        """The job's matrix entries ([{}] without a matrix)."""
        strategy = self.data["jobs"][job_id].get("strategy") or {}
        matrix = strategy.get("matrix")
        if matrix is None:
            return [{}]
        if isinstance(matrix, str):
            match = _EXPR.fullmatch(matrix.strip())
            assert match, f"matrix: {matrix}"
            matrix = self._eval(match.group(1), {})
        keys = [k for k in matrix if k not in ("include", "exclude")]
        assert not keys, f"the harness expands include-only matrices, not {keys}"
        return list(matrix.get("include", []))

    # -- one job -------------------------------------------------------------------------------
    def run_job(self, job_id: str, entry: dict[str, Any]) -> JobRun:
        job = self.data["jobs"][job_id]
        run = JobRun(job_id, entry)
        self._jobs_started += 1
        where = self.tmp / "jobs" / f"{self._jobs_started}-{job_id}"
        workspace, temp, home = where / "workspace", where / "temp", where / "home"
        for folder in (workspace, temp, home):
            folder.mkdir(parents=True)
        steps_outputs: dict[str, dict[str, str]] = {}
        ctx = {"matrix": entry, "steps": steps_outputs, "temp": str(temp)}
        paths: list[str] = []
        job_env = {k: self._text(v, ctx) for k, v in {**(self.data.get("env") or {}),
                                                       **(job.get("env") or {})}.items()}
        shell = ((self.data.get("defaults") or {}).get("run") or {}).get("shell")
        failed = False
        for index, step in enumerate(job["steps"]):
            name = step.get("name") or step.get("uses") or step.get("run", "").split("\n")[0]
            if not self._wanted(step.get("if"), failed, ctx):
                run.steps.append(StepRun(name, False, True))
                continue
            files = {kind: where / f"step{index}.{kind}" for kind in
                     ("output", "env", "path", "summary")}
            for file in files.values():
                file.touch()
            env = self._base_env(workspace, temp, home, paths, files)
            env.update(job_env)
            env.update({k: self._text(v, ctx) for k, v in (step.get("env") or {}).items()})
            if "uses" in step:
                ok, out = self._action(step, env, workspace, paths, ctx)
            else:
                ok, out = self._run(step["run"], step.get("shell") or shell, env, workspace, where,
                                    index)
            held = tuple(sorted(key for key, value in self.secrets.items()
                                if value and value in env.values()))
            run.steps.append(StepRun(name, True, ok, out, held, runs_pr_code(step)))
            failed = failed or not ok
            if "id" in step:
                steps_outputs[step["id"]] = _read_pairs(files["output"])
            job_env.update(_read_pairs(files["env"]))
            paths[:0] = [p for p in files["path"].read_text().splitlines()[::-1] if p]
            run.summary += files["summary"].read_text(encoding="utf-8")
        for key, value in (job.get("outputs") or {}).items():
            run.outputs[key] = self._text(value, ctx)
        end_leftovers(where)
        return run

    def _base_env(self, workspace: Path, temp: Path, home: Path, paths: list[str],
                  files: dict[str, Path]) -> dict[str, str]:
        p = self.ci.prefix
        env = {"HOME": str(home), "PATH": ":".join([*paths, str(self._bin()), SYSTEM_PATH]),
               "LANG": "C.UTF-8", f"{p}_SHA": self.sha, f"{p}_REPOSITORY": self.repository,
               f"{p}_EVENT_NAME": self.event_name, f"{p}_EVENT_PATH": str(self.event_path),
               f"{p}_WORKSPACE": str(workspace), f"{p}_REF": "refs/heads/main",
               f"{p}_OUTPUT": str(files["output"]), f"{p}_ENV": str(files["env"]),
               f"{p}_PATH": str(files["path"]), f"{p}_STEP_SUMMARY": str(files["summary"])}
        if self.server_url:
            env[f"{p}_SERVER_URL"] = self.server_url
        if self.ci is GITHUB:
            env.update({"CI": "true", "GITHUB_ACTIONS": "true", "RUNNER_TEMP": str(temp)})
        else:  # the pipeline's own token: the shipped steps must not need it
            env["ATOMGIT_TOKEN"] = "pipeline-token-not-for-the-upstream"
        env.update(self.extra_env)
        return env

    def _bin(self) -> Path:
        """A folder with `python3` (this Python's base interpreter), as a runner image has."""
        folder = self.tmp / "bin"
        if not folder.exists():
            folder.mkdir()
            (folder / "python3").symlink_to(RUNNER_PYTHON3)
        return folder

    def _run(self, script: str, shell: str | None, env: dict[str, str], workspace: Path,
             where: Path, index: int) -> tuple[bool, str]:
        path = where / f"step{index}.sh"
        path.write_text(script, encoding="utf-8")
        if shell == "bash":
            argv = ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)]
        else:
            assert shell is None, f"the harness knows shell: bash only, not {shell}"
            argv = ["bash", "-e", str(path)]
        proc = subprocess.run(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, check=False)
        return proc.returncode == 0, proc.stdout + proc.stderr

    # -- marketplace actions, by their documented effect ---------------------------------------
    def _action(self, step: dict[str, Any], env: dict[str, str], workspace: Path,
                paths: list[str], ctx: dict[str, Any]) -> tuple[bool, str]:
        action = step["uses"].split("@")[0]
        given = {k: self._text(str(v), ctx) for k, v in (step.get("with") or {}).items()}
        if action == "actions/checkout":
            assert set(given) <= {"persist-credentials"}, f"checkout with {given} is not modelled"
            for args in (["clone", "-q", str(self.repo), "."], ["checkout", "-q", self.sha]):
                proc = subprocess.run(["git", *args], cwd=workspace, capture_output=True,
                                      text=True, check=False, env={**env, "GIT_TERMINAL_PROMPT": "0"})
                if proc.returncode:
                    return False, proc.stderr
            return True, ""
        if action == "actions/setup-python":
            folder = workspace.parent / "python"
            tool_python(self.tool_cache, folder)
            paths.insert(0, str(folder / "bin"))
            return True, f"python {given.get('python-version', '')} at {folder}"
        if action == "actions/upload-artifact":
            source = workspace / given["path"]
            if source.exists():  # if-no-files-found defaults to warn
                target = self.tmp / "artifacts" / given["name"]
                if source.is_dir():
                    shutil.copytree(source, target / source.name)
                else:
                    target.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, target / source.name)
                return True, ""
            return True, f"warning: no files found at {given['path']}"
        raise AssertionError(f"the harness does not model the action {step['uses']}")

    # -- expressions ---------------------------------------------------------------------------
    def _wanted(self, condition: Any, failed: bool, ctx: dict[str, Any]) -> bool:
        """A step's `if:`: a status function, or an expression (:meth:`_truth`) that also
        needs the steps before to have succeeded, as CI's implicit `success()`."""
        if condition is None:
            return not failed
        text = _EXPR.sub(r"\1", str(condition)).strip()
        if text in ("always()", "always"):
            return True
        if text in ("success()", "success"):
            return not failed
        if text in ("failure()", "failed"):
            return failed
        return not failed and self._truth(text, ctx)

    def _condition(self, condition: Any) -> bool:
        """A job's `if:` (:meth:`_truth`)."""
        if condition is None:
            return True
        return self._truth(_EXPR.sub(r"\1", str(condition)).strip(), {})

    def _truth(self, text: str, ctx: dict[str, Any]) -> bool:
        """Terms joined by `||`, each a context value (its truth), `X != ''`, `X == 'text'`,
        `startsWith(X, 'text')` or `contains(X, 'text')`; anything else fails the test."""
        for term in (t.strip() for t in text.split("||")):
            if m := re.fullmatch(r"(startsWith|contains)\((.+?),\s*'([^']*)'\)", term):
                value = self._eval(m.group(2).strip(), ctx)
                if isinstance(value, str) and (value.startswith(m.group(3))
                                               if m.group(1) == "startsWith"
                                               else m.group(3) in value):
                    return True
                continue
            if m := re.fullmatch(r"([\w.]+)\s*(==|!=)\s*'([^']*)'", term):
                value = self._eval(m.group(1), ctx)
                if ((value or "") == m.group(3)) == (m.group(2) == "=="):
                    return True
                continue
            assert re.fullmatch(r"[\w.]+", term), f"the harness does not evaluate if: {text}"
            if self._eval(term, ctx):
                return True
        return False

    def _text(self, text: str, ctx: dict[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            value = self._eval(match.group(1), ctx)
            return value if isinstance(value, str) else json.dumps(value)
        return _EXPR.sub(one, str(text))

    def _eval(self, expr: str, ctx: dict[str, Any]) -> Any:
        if m := re.fullmatch(r"fromJSON\((.*)\)", expr):
            return json.loads(self._eval(m.group(1).strip(), ctx))
        parts = expr.split(".")
        head = parts[0]
        if head == "matrix":
            return ctx["matrix"][parts[1]]
        if head == "secrets":
            return self.secrets.get(parts[1], "")
        if head == "inputs":
            return self.inputs[parts[1]]
        if expr == "runner.temp":
            return ctx["temp"]
        if head == "steps" and parts[2] == "outputs":
            return ctx["steps"].get(parts[1], {}).get(parts[3], "")
        if head == "needs" and parts[2] == "outputs":
            return self.outputs[parts[1]].get(parts[3], "")
        if head == self.ci.context and parts[1] == "event":  # the payload; null when absent
            node: Any = self.event
            for part in parts[2:]:
                node = node.get(part) if isinstance(node, dict) else None
            return node
        if head == self.ci.context and parts[1] in ("sha", "repository", "event_name"):
            return {"sha": self.sha, "repository": self.repository,
                    "event_name": self.event_name}[parts[1]]
        raise AssertionError(f"the harness does not evaluate ${{{{ {expr} }}}}")


def fill_tool_cache(cache: Path) -> Path:
    """The Python with pip a runner's tool cache holds (a venv of :data:`RUNNER_PYTHON3`, given
    this interpreter's pip: :func:`venv_with_pip`, no ensurepip; the workflows' own `python3
    -m venv` steps run ensurepip as a runner does), built unless ``cache`` has it. Two
    processes must not fill one cache at once."""
    template, ready = cache / "python", cache / "python.ready"
    if not ready.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(template, ignore_errors=True)
        venv_with_pip(template, RUNNER_PYTHON3,
                      env={"PATH": SYSTEM_PATH, "HOME": str(cache), "LANG": "C.UTF-8"})
        ready.touch()
    return template


def tool_python(cache: Path, dest: Path) -> None:
    """``dest``: a Python with pip of its own, as `actions/setup-python` takes one from a
    runner's tool cache: a copy of :func:`fill_tool_cache`'s, whose scripts and
    ``pyvenv.cfg`` name the copy, so what a job installs stays in it."""
    template = fill_tool_cache(cache)
    shutil.copytree(template, dest, symlinks=True)
    old, new = str(template).encode(), str(dest).encode()
    for file in [dest / "pyvenv.cfg", *(dest / "bin").iterdir()]:
        if file.is_file() and not file.is_symlink() and old in (data := file.read_bytes()):
            file.write_bytes(data.replace(old, new))


# What runs code a branch or a PR wrote: installing from a checkout (its build backend), and
# the backport commands that run tests or read a checkout's map (its environments' Pythons).
_PR_CODE = re.compile(
    r"pip[\w.]*\"?\s+install\b[^\n]*\s(\.|\./\S*)(\s|$)"  # pip install . / ./src
    r"|backport\s+(check|env\s+setup)\b"
    r"|backport\s+apply\b(?![^\n]*--skip-tests)"  # an apply that may run tests
    r"|backport\s+trigger\b(?![^\n]*--(plan|prepare))",  # the one-host trigger runs tests
    re.MULTILINE)


def end_leftovers(where: Path) -> None:
    """End what a job left running once it is over, as a runner does after each job (GitHub's
    runner "cleans up orphan processes"): every process whose command line names the job's
    folder (a step's own background process; `backport` leaves none)."""
    pids = with_marker(str(where))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert all(wait_gone(pid) for pid in pids), f"processes {pids} of {where} did not end"


def runs_pr_code(step: dict[str, Any]) -> bool:
    """Whether a step's commands run code from a branch or a PR (its tests, its build, its
    map's environments): such a step must hold no secret."""
    return bool(_PR_CODE.search(str(step.get("run", ""))))


def secret_holders(workflow: dict[str, Any]) -> dict[str, list[str]]:
    """Per job, the steps whose environment names a secret (workflow, job or step `env:`)."""
    found: dict[str, list[str]] = {}
    top = workflow.get("env") or {}
    for job_id, job in workflow["jobs"].items():
        job_env = {**top, **(job.get("env") or {})}
        for step in job["steps"]:
            env = {**job_env, **(step.get("env") or {})}
            if any("secrets." in str(value) for value in env.values()):
                found.setdefault(job_id, []).append(step.get("name") or step.get("uses", ""))
    return found


def pr_code_with_secrets(workflow: dict[str, Any]) -> list[str]:
    """The steps that run code from a branch or a PR and whose environment names a secret."""
    holders = secret_holders(workflow)
    return [f"{job_id}: {step.get('name')}" for job_id, job in workflow["jobs"].items()
            for step in job["steps"]
            if runs_pr_code(step) and (step.get("name") or step.get("uses", ""))
            in holders.get(job_id, [])]


def _read_pairs(path: Path) -> dict[str, str]:
    """``name=value`` and ``name<<DELIM`` … ``DELIM`` lines of an output or env file."""
    out: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out

