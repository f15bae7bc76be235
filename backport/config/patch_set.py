"""Loads ``patches/<name>/`` into a `PatchSet`: patch.yaml, the shared ``NNNN-*.patch`` series,
a variant series in a sub-folder named after a target, and body.md (the hand-written PR body).
Every patch file is read once here (`patchfiles.read_patch`); errors name file, line and key."""

from __future__ import annotations

import os
import re
from pathlib import Path

from backport.config.branch_map import MAX_BODY_CHARS, pr_options, render_fork_branches
from backport.config.model import BranchMap, PatchSet, SourcePr, TestSpec
from backport.config.patchfiles import Patch, read_patch
from backport.config.validate import (
    Doc,
    Val,
    config_error,
    display_path,
    kind,
    read_bytes,
    refname_problem,
    repo_path,
    repo_path_problem,
    suggest,
)
from backport.config.yamlsafe import YSeq

SOURCE_KEYS = ("source_pr", "source_base", "source_commit", "source_merged", "source_found_by")
PATCH_KEYS = ("api", "issue", "title", "tests", "device", "branches", "pr", *SOURCE_KEYS)
MAX_VARIANT_DIRS = 500
PATCH_FILE = re.compile(r"\d{4}-.+\.patch")


def patch_set_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a patch set (its directory, journal and fork branches), or None."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name) or name.endswith((".lock", ".")):
        return (f"patch set name '{name}' may use only letters, digits and '_.-', starting with "
                f"a letter or digit and not ending in '.' or '.lock'")
    return None


def load_patch_set(dir: Path, branch_map: BranchMap) -> PatchSet:
    """Read and check one patch set directory against ``branch_map``."""
    dir = Path(os.path.abspath(dir))
    if problem := patch_set_name_problem(dir.name):
        raise config_error(f"{display_path(dir)}: {problem}")
    doc = Doc(dir / "patch.yaml")
    root = doc.load()
    f = doc.mapping(root, PATCH_KEYS, required=("title", "tests"))
    for key in ("api", "issue"):  # only a set made from a PR may leave them out
        if key not in f and "source_pr" not in f:
            doc.fail(root, f"missing required key '{key}' (only a set made from a PR, with "
                           f"source_pr, may leave it out)")
    tests = tuple(_test_spec(doc, item) for item in doc.items(f["tests"], "list of tests", 100))
    if not tests and "source_pr" not in f:  # a PR that adds or changes no test has none
        doc.fail(f["tests"], "lists no test (only a set made from a PR, with source_pr, may "
                             "list none)")
    device = doc.choice(f["device"], ("none", "npu")) if "device" in f else "none"
    branches = (_patch_branches(doc, f["branches"], branch_map) if "branches" in f
                else tuple(branch_map.targets))
    api = doc.string(f["api"], max_len=200) if "api" in f else None
    if api is not None and not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", api, re.ASCII):
        doc.fail(f["api"], f"'{api}' is not a dotted API name like "
                           f"torch.distributed.elastic.metrics.put_metric")
    pr = pr_options(doc, f["pr"], branch_map.pr) if "pr" in f else branch_map.pr
    patches, variants, touched = _read_series(dir, branch_map, branches)
    patch_set = PatchSet(
        name=dir.name, dir=dir, api=api, issues=_issues(doc, f["issue"]) if "issue" in f else (),
        title=doc.string(f["title"], max_len=255), tests=tests, device=device, branches=branches,
        patches=patches, variants=variants, touched_paths=touched, body=_read_body(dir / "body.md"),
        pr=pr, source=_source(doc, f))
    try:
        render_fork_branches(branch_map.fork_branch, branches, patch_set.slug, patch_set.name,
                             api or "", of_set=patch_set.name)
    except ValueError as exc:
        raise config_error(f"{display_path(branch_map.path)}: {exc}") from None
    return patch_set


def _issues(doc: Doc, v: Val) -> tuple[int, ...]:
    """``issue``: one issue number, or a list of them (a PR linking several); never empty."""
    if not isinstance(v.value, YSeq):
        return (_number(doc, v),)
    numbers = tuple(_number(doc, item) for item in doc.items(v, "list of issue numbers", 50))
    if not numbers:
        doc.fail(v, "lists no issue (leave the key out instead, in a set made from a PR)")
    if len(set(numbers)) != len(numbers):
        doc.fail(v, "lists an issue twice")
    return numbers


def _number(doc: Doc, v: Val, what: str = "issue number like 3216") -> int:
    """A positive issue or PR number (``#3216`` and ``"3216"`` also read as 3216)."""
    value = v.value
    if isinstance(value, str) and re.fullmatch(r"\s*#?\d{1,12}\s*", value):
        value = int(value.strip().lstrip("#"))
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 2**31 - 1:
        shown = repr(value[:40]) if isinstance(value, str) else kind(value)
        doc.fail(v, f"must be a positive {what}, not {shown}")
    return value


def _source(doc: Doc, f: dict[str, Val]) -> SourcePr | None:
    """The ``source_*`` keys: none, or all five together."""
    given = [key for key in SOURCE_KEYS if key in f]
    if not given:
        return None
    if missing := [key for key in SOURCE_KEYS if key not in f]:
        doc.fail(f[given[0]], f"'{given[0]}' needs {', '.join(missing)} too (the source_* keys "
                              f"come together)")
    number = _number(doc, f["source_pr"], "PR number like 42810")
    base = doc.string(f["source_base"], max_len=255, allow_ints=True)
    if problem := refname_problem(base):
        doc.fail(f["source_base"], f"branch '{base}' {problem}")
    commit = doc.string(f["source_commit"], max_len=64, allow_ints=True)
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        doc.fail(f["source_commit"], f"'{commit[:64]}' is not a full 40-hex commit sha")
    found_by = doc.choice(f["source_found_by"], ("merge_commit_sha", "squash message", "head ref"))
    return SourcePr(number=number, base=base, commit=commit,
                    merged=doc.boolean(f["source_merged"]), found_by=found_by)


def _test_spec(doc: Doc, v: Val) -> TestSpec:
    f = {"path": v} if isinstance(v.value, str) else doc.mapping(v, ("path", "args"),
                                                                   required=("path",))
    text = doc.string(f["path"], max_len=1024)
    problem = "uses '\\' (write '/')" if "\\" in text else repo_path_problem(text)
    path = repo_path(text)
    if not problem and path.startswith("-"):
        problem = "starts with '-' (python would read it as an option)"
    if problem:
        doc.fail(f["path"], f"test path '{text}' {problem}")
    args = doc.str_list(f["args"], max_len=1024, allow_ints=True) if "args" in f else ()
    return TestSpec(path=path, args=args)


def _patch_branches(doc: Doc, v: Val, branch_map: BranchMap) -> tuple[str, ...]:
    chosen: set[str] = set()
    for item in doc.items(v, "list of target branches", 256):
        if (name := doc.string(item)) not in branch_map.targets:
            doc.fail(item, f"unknown target branch '{name}' (not in "
                           f"{display_path(branch_map.path)}){suggest(name, branch_map.targets)}")
        if name in chosen:
            doc.fail(item, f"lists '{name}' twice")
        chosen.add(name)
    if not chosen:
        doc.fail(v, "lists no target branch")
    return tuple(t for t in branch_map.targets if t in chosen)


def listdir(directory: Path) -> list[Path]:
    """The entries of ``directory`` in name order; ``ConfigError`` when it cannot be read."""
    try:
        return sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError as exc:
        raise config_error(f"{display_path(directory)} cannot be read "
                           f"({exc.strerror or exc})") from None


def _patch_files(directory: Path) -> tuple[Path, ...]:
    """The ``NNNN-*.patch`` files directly in ``directory``, in name order."""
    found = tuple(entry for entry in listdir(directory) if entry.name.endswith(".patch"))
    for entry in found:
        if not PATCH_FILE.fullmatch(entry.name):
            raise config_error(f"{display_path(entry)}: patch file names must look like "
                               "NNNN-name.patch")
        if not entry.is_file():
            raise config_error(f"{display_path(entry)} is not a regular file")
    return found


def _read_series(dir: Path, branch_map: BranchMap, branches: tuple[str, ...]) -> tuple[
        tuple[Patch, ...], dict[str, tuple[Patch, ...]], dict[str, tuple[str, ...]]]:
    """The shared series, each target's variant (a sub-directory named after it) and the paths
    each target's series touches."""
    shared_files = _patch_files(dir)
    files: dict[str, tuple[Path, ...]] = {}
    for seen, (current, subdirs, _files) in enumerate(os.walk(dir)):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith("."))
        if seen == 0:  # the set's own folder
            continue
        if seen > MAX_VARIANT_DIRS:
            raise config_error(f"{display_path(dir)} has more than {MAX_VARIANT_DIRS} "
                               "sub-directories")
        rel = Path(current).relative_to(dir).as_posix()
        found = _patch_files(Path(current))
        if rel in branch_map.targets:
            if not found:
                raise config_error(f"{display_path(Path(current))} is named after target '{rel}' "
                                   "but has no NNNN-*.patch file")
            if rel in branches:
                files[rel] = found
        elif found:
            raise config_error(f"{display_path(Path(current))} holds patch files but '{rel}' is "
                               f"not a target branch{suggest(rel, branch_map.targets)}")
    shared = tuple(map(read_patch, shared_files))
    variants = {target: tuple(map(read_patch, found)) for target, found in files.items()}
    touched: dict[str, tuple[str, ...]] = {}
    for target in branches:
        if not (series := variants.get(target, shared)):
            raise config_error(f"{display_path(dir)} has no NNNN-*.patch file for target "
                               f"'{target}'")
        touched[target] = tuple(sorted({path for patch in series for path in patch.paths}))
    return shared, variants, touched


def _read_body(path: Path) -> str | None:
    if not path.exists():
        return None
    try:
        text = read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise config_error(f"{display_path(path)} is not valid UTF-8") from None
    if len(text) > MAX_BODY_CHARS:
        raise config_error(f"{display_path(path)} is longer than {MAX_BODY_CHARS} characters")
    return text
