"""`backport env probe` / `backport env setup`: show and build branch environments."""

from __future__ import annotations

import functools

import click
from rich.table import Table

from backport.commands.common import AppContext, echo, pass_app, print_json
from backport.config.model import Environment, Project
from backport.envs.model import NOT_FOUND
from backport.envs.pins import pin_mismatches
from backport.envs.probe import probe
from backport.envs.setup import setup_env
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK, BackportError


def environments_for(project: Project, branches: tuple[str, ...]) -> list[Environment]:
    """The environments the given branches use (all of them when none is given)."""
    bm = project.branch_map
    for branch in branches:
        if branch not in bm.targets:
            raise BackportError("usage", f"branch '{branch}' is not in {bm.path.name} "
                                f"(targets: {', '.join(bm.targets)})")
    names = [bm.targets[b].env for b in branches] if branches else list(bm.environments)
    return [bm.environments[n] for n in dict.fromkeys(names)]


def probe_rows(project: Project, envs: list[Environment]) -> list[dict]:
    bm = project.branch_map
    rows = []
    for env in envs:
        row: dict = {"env": env.name,
                     "branches": [t.name for t in bm.targets.values() if t.env == env.name]}
        try:
            found = probe(env)
        except BackportError as exc:
            row.update(ok=False, error=exc.message)
            rows.append(row)
            continue
        mismatches = pin_mismatches(env, found)
        row.update(found.to_dict())
        row.update(ok=not mismatches, pin_mismatches=mismatches)
        rows.append(row)
    return rows


@click.group("env")
def env_group() -> None:
    """Branch test environments: probe what is installed, build what is missing."""


@env_group.command("probe")
@click.argument("branches", nargs=-1, metavar="[BRANCH]...")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@pass_app
def probe_cmd(app: AppContext, branches: tuple[str, ...], as_json: bool) -> None:
    """Show each environment: platform, Python, torch, torch_npu, CANN, NPU, pins.

    Versions are read with importlib.metadata before anything imports torch_npu, so a
    machine without CANN still reports them.
    """
    project = app.project()
    rows = probe_rows(project, environments_for(project, branches))
    if as_json:
        print_json(rows)
    else:
        table = Table(title_justify="left")
        for column in ("env", "branches", "python", "torch", "torch_npu", "CANN", "NPU", "pins"):
            table.add_column(column)
        for row in rows:
            if "error" in row:
                table.add_row(row["env"], ", ".join(row["branches"]), "", "", "", "", "",
                              f"[red]{row['error']}[/red]")
                continue
            packages = row.get("packages", {})
            npu = row.get("npu_model") or (
                f"none (torch_npu does not load: {row['torch_npu_error']})"
                if row.get("torch_npu_error") else NOT_FOUND)
            pins = "[green]ok[/green]" if row["ok"] else "[red]" + "; ".join(
                row["pin_mismatches"]) + "[/red]"
            table.add_row(row["env"], ", ".join(row["branches"]), row.get("python") or NOT_FOUND,
                          packages.get("torch") or NOT_FOUND,
                          packages.get("torch_npu") or NOT_FOUND,
                          row.get("cann") or NOT_FOUND, npu, pins)
        app.console.print(table)
    raise SystemExit(EXIT_OK if all(r["ok"] for r in rows) else EXIT_BRANCH_FAILED)


def _echo_prefixed(prefix: str, line: str) -> None:
    echo(prefix + line)


@env_group.command("setup")
@click.argument("branches", nargs=-1, metavar="[BRANCH]...")
@pass_app
def setup_cmd(app: AppContext, branches: tuple[str, ...]) -> None:
    """Build missing environments from their `requirements:` (uv when present, else pip)."""
    project = app.project()
    envs = environments_for(project, branches)
    for env in envs:
        setup_env(env, log=functools.partial(_echo_prefixed, f"[{env.name}] "))
    rows = probe_rows(project, envs)
    for row in rows:
        state = "ok" if row["ok"] else row.get("error") or "; ".join(row["pin_mismatches"])
        echo(f"{row['env']}: {state}")
    raise SystemExit(EXIT_OK if all(r["ok"] for r in rows) else EXIT_BRANCH_FAILED)
