"""Writing a patch set folder: what `new --from` and `new --from-pr` share."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import click
import yaml

from backport.commands.common import echo
from backport.config import load_patch_set
from backport.config.model import Project
from backport.config.validate import display_path
from backport.envs.device import infer_device
from backport.envs.model import AUTOLOAD
from backport.errors import BackportError, ConfigError
from backport.git.authoring import export_patch_set, file_at


def ask(value: str | None, prompt: str, option: str) -> str:
    """``value``, else the answer at a terminal prompt; off a terminal the option is required."""
    if value:
        return value
    if not sys.stdin.isatty():
        raise BackportError("usage", f"{option} is required off a terminal")
    try:
        return click.prompt(prompt)
    except click.exceptions.Abort as exc:  # click turns both EOF and Ctrl-C into Abort
        if isinstance(exc.__context__, EOFError):
            raise BackportError("usage", f"input ended at the {option} prompt, so no patch set "
                                f"was written; pass {option}") from None
        raise


def write_patch_set(project: Project, dest: Path, repo: Path, rev: str, tests: list[str],
                    spec: dict[str, object], say: Callable[[str], None] = echo) -> Path:
    """Export ``rev`` of ``repo`` and write ``dest`` (patches and patch.yaml: ``spec``, then the
    tests and the inferred device), whole or not at all; tells ``say`` what it wrote."""
    sources = {path: text for path in tests if (text := file_at(repo, rev, path)) is not None}
    device, reasons = infer_device(sources)
    spec = {**spec, "tests": [{"path": path, "args": ["-v"]} for path in tests], "device": device}
    if "branches" in spec:  # after tests and device, as a maintainer writes it
        spec["branches"] = spec.pop("branches")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging_root = Path(tempfile.mkdtemp(prefix=".new-", dir=dest.parent))
    staging = staging_root / dest.name
    try:
        export_patch_set(repo, rev, staging, force=True)
        (staging / "patch.yaml").write_text(
            yaml.safe_dump(spec, sort_keys=False, allow_unicode=True), encoding="utf-8")
        try:
            load_patch_set(staging, project.branch_map)
        except ConfigError as exc:
            message = exc.message.replace(str(staging), str(dest))
            raise ConfigError(message.replace(display_path(staging), display_path(dest))) from exc
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging_root, ignore_errors=True)
    files = sorted(p.name for p in dest.glob("*.patch"))
    say(f"wrote {dest}: {', '.join(files)} and patch.yaml (tests: {', '.join(tests)})")
    if device == "npu":
        say(f"device: npu, inferred because {'; '.join(reasons)}: the tests run only where "
             f"torch_npu loads and an NPU is visible (edit patch.yaml if they do not need one)")
    else:
        say("device: none, inferred because no test imports torch_npu or creates npu tensors: "
             f"the tests run with {AUTOLOAD}=0 where torch_npu cannot load")
    return dest
