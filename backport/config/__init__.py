"""Configuration: ``branches.yaml`` (`branch_map.py`) and every ``patches/<name>/``
(`patch_set.py`, its patch files read once by `patchfiles.py`) loaded into the frozen dataclasses
of `model.py`; every problem is a `ConfigError` of one sentence naming file, line and key.
`load_project` also refuses two patch sets whose fork branches would be the same."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from backport.config.branch_map import load_branch_map
from backport.config.model import PatchSet, Project
from backport.config.patch_set import PATCH_FILE, listdir, load_patch_set
from backport.config.validate import config_error, display_path
from backport.errors import ConfigError


def load_project(config_path: Path, patches_dir: Path | None = None,
                 environ: Mapping[str, str] = os.environ) -> Project:
    """The branch map and every ``patches/<name>/`` with a ``patch.yaml`` (one that does not load
    goes to ``Project.broken``; a bad branch map or patches folder fails the project)."""
    branch_map = load_branch_map(Path(config_path), environ)
    root = branch_map.path.parent
    pdir = Path(patches_dir) if patches_dir is not None else root / "patches"
    if pdir.exists() and not pdir.is_dir():
        raise config_error(f"patches directory {display_path(pdir)} is not a directory")
    if not pdir.exists() and patches_dir is not None:
        raise config_error(f"patches directory {display_path(pdir)} not found")
    sets: dict[str, PatchSet] = {}
    broken: dict[str, str] = {}
    for sub in listdir(pdir) if pdir.exists() else ():
        if not sub.is_dir() or sub.name.startswith("."):
            continue
        try:
            if (sub / "patch.yaml").is_file():
                sets[sub.name] = load_patch_set(sub, branch_map)
            elif any(PATCH_FILE.fullmatch(p.name) for p in listdir(sub)):
                raise config_error(f"{display_path(sub)} has patch files but no patch.yaml")
        except ConfigError as exc:
            broken[sub.name] = exc.message
    owner: dict[str, str] = {}
    for ps in sets.values():
        for branch in (ps.fork_branch(branch_map, target) for target in ps.branches):
            if branch in owner:
                raise config_error(
                    f"{display_path(branch_map.path)}: fork_branch renders '{branch}' for both "
                    f"patch sets '{owner[branch]}' and '{ps.name}'; include {{slug}} or {{name}}"
                )
            owner[branch] = ps.name
    return Project(root=root, branch_map=branch_map, patch_sets=sets, broken=broken)
