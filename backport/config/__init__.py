"""Configuration: branches.yaml and patches/<name>/ loaded into dataclasses."""

from backport.config.loader import load_branch_map, load_patch_set, load_project
from backport.config.model import (
    BranchMap,
    Environment,
    PatchSet,
    Project,
    PrOptions,
    Target,
    TestSpec,
)

__all__ = [
    "BranchMap",
    "Environment",
    "PatchSet",
    "PrOptions",
    "Project",
    "Target",
    "TestSpec",
    "load_branch_map",
    "load_patch_set",
    "load_project",
]
