"""The Python tests a series adds, whether a target already defines them, and test files it
leaves that hide a definition or do not compile; read with ``ast``, never run.

A test the series adds is a ``test*`` function whose ``def`` line a hunk adds, read from the file
as the patch leaves it (without its pre-image blob, from the hunks alone). A target defining
every one in the same class is ``already-present``. After the apply a test file must compile
and define no name twice in one body where the base did not.
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from backport.config.patchfiles import FileDiff, Hunk, Patch
from backport.git.apply import file_lines
from backport.git.run import git, read_blob

_DEF = re.compile(r"\s*(?:async\s+)?def\s+([^\W\d]\w*)\s*[(:]")
_CLASS = re.compile(r"\s*class\s+([^\W\d]\w*)\s*[(:]")
_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# CPython 3.11's parser fails when two threads parse at once: the branch threads take turns.
_PARSING = threading.Lock()


@dataclass(frozen=True)
class Definition:
    """A ``def`` or ``class`` directly in a body; ``scope``: its class ("" for the module)."""

    scope: str
    name: str
    line: int  # of the ``def``/``class`` keyword
    again: int = 0  # a redefinition's second line (it hides the first)


@functools.lru_cache(maxsize=16)  # a run reads each target's file several times
def parsed(text: str, filename: str) -> ast.Module:
    """The module's tree, shared by every caller with the same text: never change it."""
    with _PARSING:
        return ast.parse(text, filename=filename)


@functools.lru_cache(maxsize=16)
def compiled(text: str, filename: str) -> ast.Module:
    """The module's tree (:func:`parsed`), once it also compiles."""
    tree = parsed(text, filename)
    with _PARSING:
        compile(tree, filename, "exec", dont_inherit=True)
    return tree


def compile_problem(text: str, filename: str) -> str | None:
    """Why ``text`` does not compile (``line N: message``), else None."""
    try:
        compiled(text, filename)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except ValueError as exc:  # e.g. a NUL byte in the source
        return str(exc)
    return None


def _bodies(tree: ast.Module) -> Iterator[tuple[str, list[ast.stmt]]]:
    """(scope, statements) of the module and of every class, nested classes by dotted name."""
    stack: list[tuple[str, list[ast.stmt]]] = [("", tree.body)]
    while stack:
        scope, body = stack.pop(0)
        yield scope, body
        for node in body:
            if isinstance(node, ast.ClassDef):
                stack.append((f"{scope}.{node.name}" if scope else node.name, node.body))


def test_definitions(tree: ast.Module) -> list[Definition]:
    """The test functions: ``test*`` functions directly in the module or a class body."""
    return sorted((Definition(scope, node.name, node.lineno) for scope, body in _bodies(tree)
                   for node in body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                   and node.name.startswith("test")), key=lambda d: d.line)


def redefinitions(tree: ast.Module) -> list[Definition]:
    """Names defined twice in one module or class body, the later one hiding the earlier."""
    found = []
    for scope, body in _bodies(tree):
        seen: dict[str, int] = {}
        for node in (node for node in body if isinstance(node, _Def)):
            # a property's setter/getter/deleter, ``@overload``, ``@f.register`` rebind on purpose
            decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
            if node.name in seen and not any(
                    isinstance(d, ast.Name) and d.id == "overload" or isinstance(d, ast.Attribute)
                    and d.attr in ("setter", "getter", "deleter", "register", "overload")
                    for d in decorators):
                found.append(Definition(scope, node.name, seen[node.name], node.lineno))
            seen[node.name] = node.lineno
    return sorted(found, key=lambda r: r.again)


Blobs = Callable[[str], bytes | None]


@dataclass(frozen=True)
class AddedTest:
    """A test function a series adds: file, class ("" for the module; None: not known) and name."""

    path: str
    scope: str | None
    name: str

    @property
    def qualname(self) -> str:
        return f"{self.scope}.{self.name}" if self.scope else self.name

    @property
    def node_id(self) -> str:
        """``path::Class::name``, as pytest names a test."""
        return "::".join([self.path, *(self.scope.split(".") if self.scope else []), self.name])

    @classmethod
    def from_node_id(cls, node_id: str) -> AddedTest:
        path, *rest = node_id.split("::")
        return cls(path, ".".join(rest[:-1]), rest[-1] if rest else "")


@dataclass(frozen=True)
class PresentTest:
    """A test the series adds that the target already defines, and the commit that added it."""

    test: AddedTest
    line: int  # its line in the target's file
    commit: str | None  # abbreviated sha (9 characters); None when the history does not say
    subject: str = ""


def post_image(pre: list[str], hunks: Sequence[Hunk]) -> tuple[list[str], set[int]] | None:
    """The file as the hunks leave ``pre`` and the numbers of the lines they add, or None."""
    out: list[str] = []
    added: set[int] = set()
    pos = 0
    for hunk in hunks:
        start = hunk.old_start - 1 if hunk.preimage else hunk.old_start
        if start < pos or start > len(pre):
            return None
        out += pre[pos:start]
        pos = start
        for line in hunk.lines:
            tag, body = line[:1], line[1:]
            if tag in (" ", "-"):
                if pos >= len(pre) or pre[pos] != body:
                    return None
                pos += 1
                if tag == " ":
                    out.append(body)
            elif tag == "+":
                out.append(body)
                added.add(len(out))
    return out + pre[pos:], added


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _from_hunks(path: str, diff: FileDiff) -> list[AddedTest]:
    """The tests added lines define, the class from the hunk's nearest outer ``class`` line."""
    found = []
    for hunk in diff.hunks:
        new_side = [line for line in hunk.lines if line[:1] in (" ", "+")]
        for index, line in enumerate(new_side):
            name = _DEF.match(line[1:])
            if line[:1] != "+" or not name or not name.group(1).startswith("test"):
                continue
            depth = _indent(line[1:])
            scope: str | None = "" if depth == 0 else None
            for before in reversed(new_side[:index]):
                if before[1:].strip() and _indent(before[1:]) < depth:
                    outer = _CLASS.match(before[1:])
                    scope = outer.group(1) if outer else None
                    break
            found.append(AddedTest(path, scope, name.group(1)))
    return found


def is_python_test(path: str, test_paths: Sequence[str] = ()) -> bool:
    """A Python test file: one the patch set runs, or ``test_*.py`` / ``*_test.py``."""
    base = posixpath.basename(path)
    return path in test_paths or (base.endswith(".py") and (
        base.startswith("test_") or base.endswith("_test.py")))


def added_tests(repo: Path, patches: Sequence[Patch],
                blobs: Blobs | None = None) -> list[AddedTest]:
    """Every test the series adds, in patch order; ``blobs``: the pre-images read already."""
    found: dict[AddedTest, None] = {}
    posts: dict[str, list[str]] = {}  # each path as the earlier patches of the series left it
    for patch in patches:
        for diff in patch.files:
            path = diff.new
            if path is None or diff.binary or not is_python_test(path):
                continue
            tests = _read_post_image(repo, diff, posts, blobs)
            for test in tests if tests is not None else _from_hunks(path, diff):
                found.setdefault(test)
    return list(found)


def pre_images(patches: Sequence[Patch]) -> list[str]:
    """The blob ids `added_tests` reads: the pre-image of each Python test file changed."""
    return [d.old_blob for p in patches for d in p.files
            if d.new is not None and d.old is not None and d.old_blob and not d.binary
            and is_python_test(d.new)]


def _blob(repo: Path, name: str, blobs: Blobs | None) -> bytes | None:
    """The blob ``name`` names, from ``blobs`` when given."""
    return blobs(name) if blobs is not None else read_blob(repo, name)


def _read_post_image(repo: Path, diff: FileDiff, posts: dict[str, list[str]],
                     blobs: Blobs | None = None) -> list[AddedTest] | None:
    """The tests added to one file, from its post-image; None when that is not at hand."""
    path = diff.new
    assert path is not None
    candidates: list[list[str]] = [[]] if diff.old is None else []
    if diff.old is not None and diff.old in posts:
        candidates.append(posts[diff.old])
    data = _blob(repo, diff.old_blob, blobs) if diff.old is not None and diff.old_blob else None
    if data is not None:
        candidates.append(file_lines(data))
    made = next(filter(None, (post_image(pre, diff.hunks) for pre in candidates)), None)
    if made is None:
        return None
    posts[path], added = made
    try:
        tree = compiled("\n".join(posts[path]) + "\n", path)
    except (SyntaxError, ValueError):
        return None
    return [AddedTest(path, d.scope, d.name) for d in test_definitions(tree) if d.line in added]


def _tree_at(repo: Path, commit: str, path: str,
             blobs: Blobs | None = None) -> ast.Module | None:
    """The parsed ``path`` of ``commit``; None when it is not there or does not parse."""
    data = _blob(repo, f"{commit}:{path}", blobs)
    try:
        return None if data is None else parsed(data.decode("utf-8", "surrogateescape"), path)
    except (SyntaxError, ValueError):
        return None


def introduced_by(repo: Path, commit: str, path: str, name: str) -> tuple[str, str] | None:
    """(short sha, subject) of the newest commit that added ``def <name>(`` (``log -S``)."""
    out = git(["log", "-1", f"-Sdef {name}(", "--format=%H%x00%s", commit, "--", path],
              cwd=repo, check=False)
    if not out.ok or "\x00" not in out.stdout:
        return None
    sha, subject = out.stdout.strip().split("\x00", 1)
    return sha[:9], subject


def defined_tests(repo: Path, commit: str, tests: Sequence[AddedTest],
                  trees: dict[str, ast.Module | None] | None = None,
                  blobs: Blobs | None = None) -> list[tuple[AddedTest, int]]:
    """The ``tests`` ``commit`` defines in the same file and class, with their lines."""
    found = []
    trees = {} if trees is None else trees
    for test in tests:
        if test.path not in trees:
            trees[test.path] = _tree_at(repo, commit, test.path, blobs)
        if (tree := trees[test.path]) is None:
            continue
        match = next((d for d in test_definitions(tree) if d.name == test.name
                      and (test.scope is None or d.scope == test.scope)), None)
        if match is not None:
            found.append((AddedTest(test.path, match.scope, test.name), match.line))
    return found


def present_tests(repo: Path, commit: str, tests: Sequence[AddedTest],
                  blobs: Blobs | None = None) -> list[PresentTest]:
    """`defined_tests`, each with the commit that added it."""
    found = [(test, line, introduced_by(repo, commit, test.path, test.name))
             for test, line in defined_tests(repo, commit, tests, blobs=blobs)]
    return [PresentTest(test, line, *(by or (None, ""))) for test, line, by in found]


def all_present(added: Sequence[object], present: Sequence[object]) -> bool:
    """The already-present rule: the series adds tests and the target defines every one."""
    return bool(added) and len(present) == len(added)


def with_classes(repo: Path, base: str, head: str, tests: Sequence[AddedTest],
                 blobs: Blobs | None = None) -> list[AddedTest]:
    """``tests`` with each unknown class read from the one new definition ``head`` has."""
    out = []
    for test in tests:
        if test.scope is None:
            after = _tree_at(repo, head, test.path, blobs)
            before = _tree_at(repo, base, test.path, blobs)
            old = {(d.scope, d.name) for d in test_definitions(before)} if before else set()
            new = [d for d in (test_definitions(after) if after else [])
                   if d.name == test.name and (d.scope, d.name) not in old]
            if len(new) == 1:
                test = AddedTest(test.path, new[0].scope, test.name)
        out.append(test)
    return out


def left_paths(changes: Iterable[tuple[str | None, str | None]]) -> list[str]:
    """The files a series leaves, from its (path before, path after) changes in order: a path
    later deleted or renamed away is dropped, a rename's new path counts."""
    left: dict[str, None] = {}
    for old, new in changes:
        if old and old != new:
            left.pop(old, None)
        if new:
            left.setdefault(new)
    return list(left)


def changed_python_tests(patches: Sequence[Patch], test_paths: Sequence[str] = ()) -> list[str]:
    """The Python test files the series leaves (:func:`left_paths`), in order."""
    binary = {d.new for p in patches for d in p.files if d.binary and d.new}
    left = left_paths((d.old, d.new) for p in patches for d in p.files)
    return [path for path in left if path not in binary and is_python_test(path, test_paths)]


def source_problems(repo: Path, base: str, head: str | Path, paths: Sequence[str],
                    blobs: Blobs | None = None) -> list[str]:
    """One sentence per file of ``paths`` at ``head`` (a commit or a folder) that does not
    compile, or defines a name twice in one body where ``base`` did not."""
    problems = []
    for path in paths:
        try:
            data = ((head / path).read_bytes() if isinstance(head, Path)
                    else _blob(repo, f"{head}:{path}", blobs))
        except OSError:
            continue
        if data is None:
            continue
        text = data.decode("utf-8", "surrogateescape")
        broken = compile_problem(text, path)
        if broken:
            problems.append(f"{path} does not compile ({broken})")
            continue
        before = _tree_at(repo, base, path, blobs)
        before_names = {(r.scope, r.name) for r in redefinitions(before)} if before else set()
        problems += [f"{path} defines {'.'.join(filter(None, (again.scope, again.name)))} twice "
                     f"(lines {again.line} and {again.again}): the second definition hides the "
                     f"first, so one test would never run"
                     for again in redefinitions(parsed(text, path))
                     if (again.scope, again.name) not in before_names]
    return problems
