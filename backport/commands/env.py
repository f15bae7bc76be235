"""`backport env probe` / `setup`: show and build branch environments (`envs/probe.py`,
`envs/setup.py`; a `--dry-run` plan's resolution kept a day: `envs/resolve_cache.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import click
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from rich.markup import escape
from rich.table import Table

from backport.codec import encode
from backport.commands.common import AppContext, echo, pass_app, print_json
from backport.config.branch_map import cache_root
from backport.config.model import Environment, Project
from backport.config.validate import home_as_tilde
from backport.envs.launch import shown_command
from backport.envs.model import NOT_FOUND
from backport.envs.probe import pin_mismatches, probe
from backport.envs.setup import Planned, human_size, plan_setup, setup_env
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


def options_of(env: Environment) -> dict:
    """The environment's installer and start options (home shown as ``~``)."""
    return {
        "interpreter": home_as_tilde(str(env.interpreter)),
        "requirements": list(env.requirements),
        "no_deps": list(env.no_deps),
        "extra_index_urls": list(env.extra_index_urls),
        "source": env.source_shown or None,
        "wrapper": list(env.wrapper_shown) or None,
        "starts_as": shown_command(env, ["TEST"], env.env),
    }


def probe_rows(project: Project, envs: list[Environment], *,
               versions_only: bool = False) -> list[dict]:
    """One row per environment: its probe and pins (``versions_only``: no torch_npu load
    check, no process imports torch)."""
    bm = project.branch_map
    rows = []
    for env in envs:
        row: dict = {"env": env.name,
                     "branches": [t.name for t in bm.targets.values() if t.env == env.name],
                     "options": options_of(env)}
        rows.append(row)
        try:
            found = probe(env, versions_only=versions_only)
        except BackportError as exc:
            row.update(ok=False, error=exc.message)
            continue
        mismatches = pin_mismatches(env, found)
        row.update(encode(found), ok=not mismatches, pin_mismatches=mismatches)
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
            if "error" in row:  # nothing was read: every column says so, the error says why
                table.add_row(row["env"], ", ".join(row["branches"]),
                              *(["[red]not read[/red]"] + ["-"] * 4),
                              f"[red]{escape(row['error'])}[/red]")
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
        for row in rows:
            echo(_options_line(row["env"], row["options"]))
    raise SystemExit(EXIT_OK if all(r["ok"] for r in rows) else EXIT_BRANCH_FAILED)


def _options_line(name: str, options: dict) -> str:
    parts = [f"{name}: {options['interpreter']}"]
    if options["no_deps"]:
        parts.append(f"without dependencies: {', '.join(options['no_deps'])}")
    if options["extra_index_urls"]:
        parts.append(f"extra index: {', '.join(options['extra_index_urls'])}")
    parts.append(f"tests start as: {options['starts_as']}")
    return "; ".join(parts)


@env_group.command("setup")
@click.argument("branches", nargs=-1, metavar="[BRANCH]...")
@click.option("--dry-run", "plan_only", is_flag=True,
              help="Show what would be installed, from where and roughly how many bytes; "
                   "install and change nothing. pip's resolution is kept in the cache folder "
                   "for a day and reused while the requirements, indexes and pip settings hold.")
@click.option("--refresh", is_flag=True,
              help="With --dry-run: resolve again instead of reusing a kept resolution.")
@pass_app
def setup_cmd(app: AppContext, branches: tuple[str, ...], plan_only: bool, refresh: bool) -> None:
    """Build missing environments from their `requirements:` (uv when present, else pip).

    Each environment is a venv (by default $BACKPORT_ENVS/<name>, else the per-user data
    folder, ~/.local/share/backport/envs/<name> on Linux). `requirements` are installed first,
    then `no_deps` without their dependencies; afterwards the `expect:` pins are checked. An
    environment that already meets its pins is only checked. Give branches to build only
    their environments.
    """
    project = app.project()
    envs = environments_for(project, branches)
    if refresh and not plan_only:
        raise BackportError("usage", "--refresh goes with --dry-run (a setup always installs "
                            "what pip resolves then)")
    if plan_only:
        for env in envs:
            _show_plan(env, cache_root(os.environ), refresh)
        raise SystemExit(EXIT_OK)
    for env in envs:
        prefix = f"[{env.name}] "
        setup_env(env, log=lambda line: echo(prefix + line))  # noqa: B023 - called in the loop
    rows = probe_rows(project, envs, versions_only=True)  # what setup promises: the pins
    for row in rows:
        state = "ok" if row["ok"] else row.get("error") or "; ".join(row["pin_mismatches"])
        echo(f"{row['env']}: {state}")
    raise SystemExit(EXIT_OK if all(r["ok"] for r in rows) else EXIT_BRANCH_FAILED)


def _show_plan(env: Environment, cache_dir: Path, refresh: bool) -> None:
    """Print ``env``'s plan; what is being resolved (slow) goes to stderr first."""
    action, plan = plan_setup(env, cache_dir=cache_dir, refresh=refresh,
                              note=lambda line: echo(line, err=True))
    echo(f"{env.name}: {action}")
    if not plan:
        return
    width = max(len(f"{p.name} {p.version}") for p in plan)
    for item in plan:
        size = human_size(item.size) if item.size is not None else "size unknown"
        note = f"  without dependencies{_unmet_note(item, plan)}" if item.no_deps else ""
        echo(f"  {f'{item.name} {item.version}':<{width}}  {size:>9}  {item.source}{note}")
    known = [p.size for p in plan if p.size is not None]
    unknown = len(plan) - len(known)
    echo(f"  {len(plan)} distribution{'' if len(plan) == 1 else 's'}, about {human_size(sum(known))} to download"
         + (f" ({unknown} of unknown size)" if unknown else ""))


def _unmet_note(item: Planned, plan: list[Planned]) -> str:
    """Which of ``item``'s own requirements the plan does not satisfy (why it is no_deps)."""
    versions = {canonicalize_name(p.name): p.version for p in plan}
    unmet = []
    for line in item.requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        have = versions.get(canonicalize_name(req.name))
        if have is not None and not req.specifier.contains(have, prereleases=True):
            unmet.append(f"it asks for {req}, installed next to {req.name} {have}")
    return f" ({'; '.join(unmet)})" if unmet else ""
