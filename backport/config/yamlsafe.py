"""YAML reading that keeps line numbers and cannot be blown up.

PyYAML's ``SafeLoader`` only composes the node graph; it is turned into plain values here, so
every key and value keeps its line (`YMap`, `YSeq`), a duplicate key is an error, only the
standard tags are accepted, and aliases count every use against `MAX_NODES` (a "billion laughs"
document fails early), nesting against `MAX_DEPTH`. A problem is a `LineProblem` with a
1-based line, which the caller turns into a ``ConfigError`` naming its file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_FILE_BYTES = 1 << 20  # 1 MiB
MAX_NODES = 10_000  # values produced, aliases counted every time they are used
MAX_DEPTH = 32

_T = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(_T + t for t in ("str", "int", "float", "bool", "null", "timestamp",
                                           "binary"))
_TEXT_TAGS = frozenset((_T + "value", _T + "merge"))  # no constructor: keep the text


class LineProblem(Exception):
    """A problem at a 1-based ``line`` of a file (``None`` when no line applies)."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Loc:
    """Where a value came from: its 1-based line and, for scalars, its source text."""

    line: int
    raw: str | None = None


class YMap(dict):
    """A mapping that remembers where its keys and values are."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_locs: dict[Any, Loc] = {}
        self.locs: dict[Any, Loc] = {}


class YSeq(list):
    """A list that remembers where its items are."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.locs: list[Loc] = []


class _Loader(yaml.SafeLoader):
    """SafeLoader whose composer refuses deep nesting (it recurses once per level)."""

    _depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise LineProblem(mark.line + 1,
                                  f"values are nested more than {MAX_DEPTH} levels deep")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _line(node: Node) -> int:
    return node.start_mark.line + 1


def _loc(node: Node) -> Loc:
    return Loc(_line(node), node.value if isinstance(node, ScalarNode) else None)


class _Builder:
    """Turns a composed node graph into `YMap` / `YSeq` / scalars."""

    def __init__(self) -> None:
        self.count = 0
        self.scalars = SafeConstructor()
        self.open: set[int] = set()  # collections being built (recursive alias check)

    def build(self, node: Node) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise LineProblem(_line(node), f"the document expands to more than {MAX_NODES} "
                                           "values (too many aliases?)")
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if node.tag not in (_T + "seq", _T + "map"):
            raise LineProblem(_line(node), f"unsupported YAML tag '{node.tag}'")
        if id(node) in self.open:
            raise LineProblem(_line(node), "an alias refers to the value that contains it")
        self.open.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return self.sequence(node)
            assert isinstance(node, MappingNode)
            return self.mapping(node)
        finally:
            self.open.discard(id(node))

    def scalar(self, node: ScalarNode) -> Any:
        if node.tag in _TEXT_TAGS:
            return node.value
        if node.tag not in _SCALAR_TAGS:
            raise LineProblem(_line(node), f"unsupported YAML tag '{node.tag}'")
        try:
            return self.scalars.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError, TypeError) as exc:
            kind = node.tag.rsplit(":", 1)[-1]
            text = node.value if len(node.value) <= 40 else node.value[:40] + "..."
            raise LineProblem(_line(node), f"'{text}' is not a valid {kind} "
                                           f"({type(exc).__name__})") from None

    def sequence(self, node: SequenceNode) -> YSeq:
        out = YSeq(_line(node))
        for item in node.value:
            out.append(self.build(item))
            out.locs.append(_loc(item))
        return out

    def mapping(self, node: MappingNode) -> YMap:
        out = YMap(_line(node))
        merges: list[Node] = []
        for key_node, value_node in node.value:
            if isinstance(key_node, ScalarNode) and key_node.tag == _T + "merge":
                merges.append(value_node)
                continue
            if not isinstance(key_node, ScalarNode):
                raise LineProblem(_line(key_node), "a mapping key must be a plain value, not a "
                                                   "list or mapping")
            key = self.build(key_node)
            if key in out:
                raise LineProblem(_line(key_node), f"duplicate key '{key}' (first given on "
                                                   f"line {out.key_locs[key].line})")
            out[key] = self.build(value_node)
            out.key_locs[key] = _loc(key_node)
            out.locs[key] = _loc(value_node)
        for merge in merges:  # explicit keys win; earlier merge sources win over later ones
            for source in merge.value if isinstance(merge, SequenceNode) else [merge]:
                if not isinstance(source, MappingNode):
                    raise LineProblem(_line(source), "a merge key '<<' needs a mapping or a list "
                                                     "of mappings")
                merged = self.build(source)
                for key in [key for key in merged if key not in out]:
                    out[key] = merged[key]
                    out.key_locs[key] = merged.key_locs[key]
                    out.locs[key] = merged.locs[key]
        return out


_OPENERS = {"{": "the flow mapping", "[": "the flow sequence", '"': "the quoted string",
            "'": "the quoted string"}


def _syntax_problem(exc: yaml.MarkedYAMLError, text: str) -> LineProblem:
    """The syntax error at the line that opened an unclosed ``{``, ``[`` or quote, else at the
    parser's own line (never past the last line)."""
    mark = exc.problem_mark or exc.context_mark
    problem = ", ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
    if mark is None:
        return LineProblem(None, f"YAML syntax error: {problem}")
    lines = text.splitlines()
    last = max(len(lines), 1)
    opened = exc.context_mark
    if opened is not None and opened.line < len(lines) and opened.line != mark.line:
        if (char := lines[opened.line][opened.column:opened.column + 1]) in _OPENERS:
            where = ("the file ends before it is closed" if mark.line + 1 > last else
                     f"on line {mark.line + 1}, column {mark.column + 1}: {exc.problem}")
            return LineProblem(opened.line + 1, f"YAML syntax error: {_OPENERS[char]} opened "
                               f"here with {char} (column {opened.column + 1}) is not closed: "
                               f"{where}")
    if mark.line + 1 > last:
        mark = opened if opened is not None and opened.line + 1 <= last else mark
        problem += "; the file ends before it is closed" if opened is not None else ""
    return LineProblem(min(mark.line + 1, last), f"YAML syntax error: {problem}")


def parse_yaml(text: str) -> Any:
    """One YAML document as plain values (``None`` when empty), or a `LineProblem`."""
    try:
        node = _Loader(text).get_single_node()
        return None if node is None else _Builder().build(node)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_problem(exc, text) from None
    except yaml.reader.ReaderError as exc:
        raise LineProblem(text.count("\n", 0, max(exc.position, 0)) + 1,
                          f"YAML cannot contain the character U+{exc.character:04X}") from None
    except yaml.YAMLError as exc:
        raise LineProblem(None, f"YAML syntax error: {exc}") from None
    except RecursionError:  # aliases nested in aliases: deeper when built than when read
        raise LineProblem(None, "values are nested too deeply") from None

