"""`backport env probe` / `setup`: show and build branch environments (the rows:
`envs/probe.py` `probe_rows`; the build and its plan: `envs/setup.py`)."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from backport.commands.common import AppContext, echo, pass_app, print_json
from backport.config.model import Environment, Project
from backport.envs.model import NOT_FOUND
from backport.envs.probe import probe_rows
from backport.envs.setup import plan_lines, setup_env
from backport.errors import EXIT_BRANCH_FAILED, EXIT_OK, BackportError


def environments_for(project: Project, branches: tuple[str, ...]) -> list[Environment]:
    """The environments ``branches`` use (none given: all)."""
    bm = project.branch_map
    for branch in branches:
        if branch not in bm.targets:
            raise BackportError("usage", f"branch '{branch}' is not in {bm.path.name} "
                                f"(targets: {', '.join(bm.targets)})")
    names = [bm.targets[b].env for b in branches] if branches else list(bm.environments)
    return [bm.environments[n] for n in dict.fromkeys(names)]


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
    rows = probe_rows(project.branch_map, environments_for(project, branches))
    if as_json:
        print_json(rows)
    else:
        table = Table("env", "branches", "python", "torch", "torch_npu", "CANN", "NPU", "pins")
        for row in rows:
            if "error" in row:  # nothing was read: every column says so, the error says why
                table.add_row(row["env"], ", ".join(row["branches"]),
                              *(["[red]not read[/red]"] + ["-"] * 4),
                              f"[red]{escape(row['error'])}[/red]")
                continue
            packages = row.get("packages", {})
            read = (row.get("python"), packages.get("torch"), packages.get("torch_npu"),
                    row.get("cann"))
            npu = row.get("npu_model") or (
                f"none (torch_npu does not load: {row['torch_npu_error']})"
                if row.get("torch_npu_error") else NOT_FOUND)
            pins = "[green]ok[/green]" if row["ok"] else "[red]" + "; ".join(
                row["pin_mismatches"]) + "[/red]"
            table.add_row(row["env"], ", ".join(row["branches"]),
                          *(value or NOT_FOUND for value in read), npu, pins)
        app.console.print(table)
        for row in rows:
            options = row["options"]
            parts = [f"{row['env']}: {options['interpreter']}"]
            if options["no_deps"]:
                parts.append(f"without dependencies: {', '.join(options['no_deps'])}")
            if options["extra_index_urls"]:
                parts.append(f"extra index: {', '.join(options['extra_index_urls'])}")
            echo("; ".join([*parts, f"tests start as: {options['starts_as']}"]))
    raise SystemExit(EXIT_OK if all(r["ok"] for r in rows) else EXIT_BRANCH_FAILED)


@env_group.command("setup")
@click.argument("branches", nargs=-1, metavar="[BRANCH]...")
@click.option("--dry-run", "plan_only", is_flag=True,
              help="Show what would be installed, from where and roughly how many bytes; "
                   "install and change nothing.")
@pass_app
def setup_cmd(app: AppContext, branches: tuple[str, ...], plan_only: bool) -> None:
    """Build missing environments from their `requirements:` (uv when present, else pip).

    Each environment is a venv ($BACKPORT_ENVS/<name>, else ~/.local/share/backport/envs/<name>
    on Linux). `requirements` go first, then `no_deps` without their dependencies; then the
    `expect:` pins are checked (an environment meeting them is only checked). Give branches to
    build only theirs.
    """
    project = app.project()
    envs = environments_for(project, branches)
    if plan_only:
        for env in envs:
            for line in plan_lines(env, lambda line: echo(line, err=True)):
                echo(line)
        raise SystemExit(EXIT_OK)
    for env in envs:
        prefix = f"[{env.name}] "
        setup_env(env, log=lambda line: echo(prefix + line))  # noqa: B023 - called in the loop
    rows = probe_rows(project.branch_map, envs, versions_only=True)  # what setup promises: the pins
    for row in rows:
        state = "ok" if row["ok"] else row.get("error") or "; ".join(row["pin_mismatches"])
        echo(f"{row['env']}: {state}")
    raise SystemExit(EXIT_OK if all(r["ok"] for r in rows) else EXIT_BRANCH_FAILED)
