"""Loads a whole project: ``branches.yaml`` (branch_map.py) and every ``patches/<name>/``
(patch_set.py), then checks what only the two together can tell (fork branch collisions).

YAML is read by :mod:`backport.config.yamlsafe`: aliases are allowed, but a document whose
alias expansion exceeds ``MAX_NODES`` values (a "billion laughs" bomb) is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from backport.config.branch_map import ENV_KEYS, PR_KEYS, TOP_KEYS, load_branch_map
from backport.config.model import PatchSet, Project
from backport.config.patch_set import (
    PATCH_FILE,
    PATCH_KEYS,
    fork_branches,
    listdir,
    load_patch_set,
)
from backport.config.validate import config_error, display_path
from backport.errors import ConfigError

__all__ = ["ENV_KEYS", "PATCH_KEYS", "PR_KEYS", "TOP_KEYS", "load_branch_map", "load_patch_set",
           "load_project"]


def _fail(message: str) -> ConfigError:
    return config_error(message)


# -- project ----------------------------------------------------------------------------------------


def load_project(
    config_path: Path, patches_dir: Path | None = None, environ: Mapping[str, str] = os.environ
) -> Project:
    """Load the branch map and every ``patches/<name>/`` holding a ``patch.yaml``.

    A patch set that does not load is kept in ``Project.broken`` with its error sentence; the
    branch map, the patches folder and fork branch collisions still fail the whole project.
    """
    branch_map = load_branch_map(Path(config_path), environ)
    root = branch_map.path.parent
    pdir = Path(patches_dir) if patches_dir is not None else root / "patches"
    sets: dict[str, PatchSet] = {}
    broken: dict[str, str] = {}
    if pdir.exists() and not pdir.is_dir():
        raise _fail(f"patches directory {display_path(pdir)} is not a directory")
    if not pdir.exists():
        if patches_dir is not None:
            raise _fail(f"patches directory {display_path(pdir)} not found")
        return Project(root=root, branch_map=branch_map, patch_sets=sets)
    for sub in listdir(pdir):
        if not sub.is_dir() or sub.name.startswith("."):
            continue
        try:
            if (sub / "patch.yaml").is_file():
                sets[sub.name] = load_patch_set(sub, branch_map)
            elif any(PATCH_FILE.fullmatch(p.name) for p in listdir(sub)):
                raise _fail(f"{display_path(sub)} has patch files but no patch.yaml")
        except ConfigError as exc:
            broken[sub.name] = exc.message
    owner: dict[str, str] = {}
    for ps in sets.values():
        for branch in fork_branches(branch_map, ps).values():
            if branch in owner:
                raise _fail(
                    f"{display_path(branch_map.path)}: fork_branch renders '{branch}' for both "
                    f"patch sets '{owner[branch]}' and '{ps.name}'; include {{slug}} or {{name}}"
                )
            owner[branch] = ps.name
    return Project(root=root, branch_map=branch_map, patch_sets=sets, broken=broken)
