"""No import cycle between the modules of `backport/`, read with ``ast`` (imports under
``if TYPE_CHECKING:`` count too: a cycle of names is still a cycle a reader follows)."""

from __future__ import annotations

import ast
from pathlib import Path

import backport
from tests.unit.conftest import nodes

PACKAGE = Path(backport.__file__).parent


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name (``pipeline.run``; a package by its folder) -> file."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        if "scripts" in rel.parts:  # run inside branch environments, never import the package
            continue
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        found[".".join(parts) or "__init__"] = path
    return found


def imports_of(path: Path, module: str, known: dict[str, Path], top: str) -> set[str]:
    """The modules of ``known`` that ``path`` imports (``from top.x import y`` names ``x.y``
    when that is a module, else ``x``)."""
    package = [top, *module.split(".")] if module != "__init__" else [top]
    if path.name != "__init__.py":
        package = package[:-1]
    names: set[str] = set()
    for node in nodes(path, ast.Import, ast.ImportFrom):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.update(f"{base}.{alias.name}" for alias in node.names)
            names.add(base)
    found = set()
    for name in names:
        if name != top and not name.startswith(top + "."):
            continue
        rel = name.removeprefix(top).lstrip(".") or "__init__"
        while rel not in known and "." in rel:
            rel = rel.rpartition(".")[0]
        if rel in known and rel != module:
            found.add(rel)
    return found


def cycles(root: Path, top: str) -> list[list[str]]:
    """Every import cycle between the modules under ``root`` (one path each, shortest first
    found by a depth-first walk); a package importing its own submodules does not count."""
    known = modules(root)
    graph = {m: {n for n in imports_of(p, m, known, top)
                 if not (m == "__init__" or n.startswith(m + "."))} for m, p in known.items()}
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_no_import_cycle_in_the_package() -> None:
    assert [" -> ".join(c) for c in cycles(PACKAGE, "backport")] == []


def test_the_cycle_walk_finds_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg import a\n")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\n"
                                      "if TYPE_CHECKING:\n    from ..a import thing\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    assert cycles(pkg, "pkg") == [["a", "sub.b", "a"]]
