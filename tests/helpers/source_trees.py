"""Syntax trees of Python files, parsed and walked once per test process.

The unit layer's source scans (the import rule and the other rules of ``test_architecture``,
the error codes of ``test_errors``, the import cycles of ``test_import_cycles``) read the same
files of the package, and two of them every file of the tests: each file is parsed here once
and its nodes listed once per kind of node a scan asks for.

A file is parsed with the cyclic garbage collector paused: a syntax tree holds no reference
cycle (a node refers only to its children), so a collection during a parse frees nothing, yet
each one walked every tree parsed before it; that was more than half of the parsing time.
A tree is cached by its path: a scan of a file a test writes reads it after writing it.
"""

from __future__ import annotations

import ast
import functools
import gc
from pathlib import Path


@functools.cache
def tree(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once per test process."""
    text = path.read_text(encoding="utf-8")
    paused = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(text, filename=str(path))
    finally:
        if paused:
            gc.enable()


@functools.cache
def walked(path: Path) -> tuple[ast.AST, ...]:
    """Every node of ``path``'s tree, in ``ast.walk`` order."""
    return tuple(ast.walk(tree(path)))


@functools.cache
def nodes(path: Path, *kinds: type[ast.AST]) -> tuple[ast.AST, ...]:
    """The nodes of ``path``'s tree that are of one of ``kinds`` (every node when none is
    named), in ``ast.walk`` order: a scan looks at only the kinds it reads."""
    every = walked(path)
    return tuple(node for node in every if isinstance(node, kinds)) if kinds else every
