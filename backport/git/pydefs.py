"""What a Python source defines, read with the standard library's ``ast``: test functions by
class, names a later definition hides, and whether the file compiles. Nothing is executed."""

from __future__ import annotations

import ast
import functools
import threading
from collections.abc import Iterator
from dataclasses import dataclass

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
# CPython 3.11's parser keeps its AST recursion depth in shared state: two threads parsing at
# once can fail with "SystemError: AST constructor recursion depth mismatch". The branch
# threads of a run parse here, so one at a time.
_PARSING = threading.Lock()


@dataclass(frozen=True)
class Definition:
    """A ``def`` or ``class`` directly in a module or class body; ``scope`` is the enclosing
    class name ("" for the module)."""

    scope: str
    name: str
    line: int  # the line of the ``def``/``class`` keyword (decorators above it)

    @property
    def qualname(self) -> str:
        return f"{self.scope}.{self.name}" if self.scope else self.name


@dataclass(frozen=True)
class Redefinition:
    """A second definition of one name in one body: the first (``line``) is hidden."""

    scope: str
    name: str
    line: int
    again: int

    @property
    def qualname(self) -> str:
        return f"{self.scope}.{self.name}" if self.scope else self.name


# A run reads each target's file at its base and after the series several times (the tests it
# adds, the tests already there, what hides one): each text is parsed once, its tree shared
# (every caller only reads it). A few files per target, a few targets per run.
_KEPT = 16


@functools.lru_cache(maxsize=_KEPT)
def tree_of(text: str, filename: str) -> ast.Module:
    """The module's tree; ``SyntaxError`` (with ``lineno``) or ``ValueError`` otherwise. The
    same tree for the same text: read it, never change it."""
    with _PARSING:
        return ast.parse(text, filename=filename)


@functools.lru_cache(maxsize=_KEPT)
def parse(text: str, filename: str) -> ast.Module:
    """The module's tree (:func:`tree_of`), once it also compiles; ``SyntaxError`` (with
    ``lineno``) otherwise."""
    tree = tree_of(text, filename)
    with _PARSING:
        compile(tree, filename, "exec", dont_inherit=True)
    return tree


def compile_problem(text: str, filename: str) -> str | None:
    """Why ``text`` does not compile (``line N: message``), else None."""
    try:
        parse(text, filename)
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
    found = []
    for scope, body in _bodies(tree):
        found += [Definition(scope, node.name, node.lineno) for node in body
                  if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.name.startswith("test")]
    return sorted(found, key=lambda d: d.line)


def _rebinds_on_purpose(node: _Def) -> bool:
    """``@x.setter``/``@x.getter``/``@x.deleter``, ``@overload`` and ``@f.register`` redefine
    a name on purpose."""
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Attribute) and target.attr in (
                "setter", "getter", "deleter", "register", "overload"):
            return True
        if isinstance(target, ast.Name) and target.id == "overload":
            return True
    return False


def redefinitions(tree: ast.Module) -> list[Redefinition]:
    """Names defined twice in one module or class body, the later one hiding the earlier."""
    found = []
    for scope, body in _bodies(tree):
        seen: dict[str, int] = {}
        for node in body:
            if not isinstance(node, _Def):
                continue
            if node.name in seen and not _rebinds_on_purpose(node):
                found.append(Redefinition(scope, node.name, seen[node.name], node.lineno))
            seen[node.name] = node.lineno
    return sorted(found, key=lambda r: r.again)
