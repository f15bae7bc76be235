"""The one reader of ``git format-patch`` files: each is read and parsed once into a `Patch`
(its bytes, fed to ``git am`` as they are, subjects, author, touched paths, pre-image blobs and
hunks), which every later step takes. `read_diff` reads, best effort, the diff ``git am`` keeps
when it stops. The layout is git's mbox: a ``From <sha>`` line, mail headers (read by `email`),
the message, then ``diff --git`` sections whose hunk line counts are verified. Every path stays
inside the repository; a symbolic link must not point outside it or into ``.git``.
"""

from __future__ import annotations

import codecs
import contextlib
import email
import email.message
import email.policy
import email.utils
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from backport.config.validate import (
    config_error,
    display_path,
    read_bytes,
    repo_path,
    repo_path_problem,
)
from backport.config.yamlsafe import LineProblem

MAX_PATCH_BYTES = 16 << 20
SYMLINK_MODE = "120000"

_FROM_LINE = re.compile(r"From [0-9a-f]{40}(?:[0-9a-f]{24})? ")
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_INDEX_LINE = re.compile(r"index (?P<old>[0-9a-f]+)\.\.[0-9a-f]+(?: (?P<mode>[0-7]{6}))?$")
_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)


@dataclass(frozen=True)
class Hunk:
    """One hunk's lines, each with its tag (``" "``, ``"-"``, ``"+"``), without line ends."""

    lines: tuple[str, ...]
    old_start: int = 0  # the header's first old line (0: none, as for a new file)

    @property
    def preimage(self) -> tuple[str, ...]:
        return tuple(line[1:] for line in self.lines if line[:1] in (" ", "-"))

    @property
    def core(self) -> tuple[str, ...]:
        """The preimage from the first changed line to the last (inner context kept)."""
        changed = [i for i, line in enumerate(self.lines) if line[:1] in ("-", "+")]
        return Hunk(self.lines[changed[0]:changed[-1] + 1]).preimage if changed else ()


@dataclass(frozen=True)
class FileDiff:
    """One file's section of a diff: its old path (None for a new file), hunks, binary or not."""

    old: str | None
    hunks: tuple[Hunk, ...]
    binary: bool = False
    new: str | None = None  # the path after the patch; None for a deleted file
    old_blob: str | None = None  # the abbreviated pre-image blob id of the index line
    created: bool = False  # a ``new file mode`` section


@dataclass(frozen=True)
class Patch:
    """One checked format-patch file: its bytes and what they say, read once at load."""

    path: Path
    data: bytes = b""
    subjects: tuple[str, ...] = ()  # one per commit
    author: tuple[str, str] | None = None  # (name, email) of the first ``From:`` header
    paths: tuple[str, ...] = ()  # every path it touches (old and new names), sorted
    preimages: Mapping[str, str] = field(default_factory=dict, hash=False)  # path -> blob id
    files: tuple[FileDiff, ...] = ()  # every file section, in order, hunks included

    @property
    def name(self) -> str:
        return self.path.name


def unquote_git_path(text: str) -> tuple[str, int]:
    """Decode a C-quoted git path at the start of ``text``; returns it and the index after it."""
    if (quoted := _QUOTED.match(text)) is None:
        raise ValueError("unterminated quoted path")
    if not re.fullmatch(r'(?:[^\\]|\\[abtnvfr"\\]|\\[0-3][0-7][0-7])*', quoted.group(1), re.S):
        raise ValueError("bad escape in quoted path")
    raw = codecs.escape_decode(quoted.group(1).encode("utf-8", "surrogateescape"))[0]
    return raw.decode("utf-8", "surrogateescape"), quoted.end()


def _name(text: str) -> str:
    """A path token: C-quoted or plain (a trailing tab, as GNU diff writes, is dropped)."""
    if text.startswith('"'):
        name, end = unquote_git_path(text)
        if text[end:].strip():
            raise ValueError("text after a quoted path")
        return name
    return text.split("\t", 1)[0]


def _strip_prefix(name: str, prefix: str) -> str:
    if not name.startswith(prefix):
        raise ValueError(f"path '{name}' lacks the '{prefix}' prefix git format-patch writes")
    return name[len(prefix) :]


def _diff_git_names(rest: str) -> tuple[str, str] | None:
    """The a/ and b/ paths of a ``diff --git`` line, or ``None`` when they are ambiguous."""
    if rest.startswith('"'):
        a, end = unquote_git_path(rest)
        b = _name(rest[end:].lstrip(" "))
    elif rest.endswith('"') and ' "' in rest:
        cut = rest.index(' "')
        a, b = rest[:cut], _name(rest[cut + 1 :])
    else:
        half = (len(rest) - 1) // 2
        if len(rest) % 2 == 1 and rest[half] == " " and rest[2:half] == rest[half + 3 :]:
            a, b = rest[:half], rest[half + 1 :]
        elif rest.count(" b/") == 1:
            a, b = rest.split(" b/", 1)
            b = "b/" + b
        else:
            return None
    return _strip_prefix(a, "a/"), _strip_prefix(b, "b/")


@dataclass
class _Section:
    """One ``diff --git`` section being read."""

    line: int
    names: list[tuple[str, int]] = field(default_factory=list)  # (path, line)
    new_name: str | None = None  # None for a deleted file
    symlink: bool = False
    link_target: list[tuple[str, int]] = field(default_factory=list)
    old_blob: str | None = None  # from the index line; None for a new file
    old_path: str | None = None  # from the "--- a/…" line; None for a new file
    hunks: list[tuple[int, list[str]]] = field(default_factory=list)  # (first old line, lines)
    binary: bool = False
    created: bool = False


class _Parser:
    def __init__(self) -> None:
        self.subjects: list[str] = []
        self.paths: dict[str, None] = {}  # every path touched, in the order they appear
        self.preimages: dict[str, str] = {}
        self.section: _Section | None = None
        self.old = self.new = 0  # lines left in the current hunk
        self.state = "headers"
        self.msg_line = 1
        self.has_from = False
        self.headers: list[str] = []
        self.subject: str | None = None
        self.author: tuple[str, str] | None = None
        self.diffs = 0
        self.files: list[FileDiff] = []  # every section read, hunks included

    def parse(self, lines: list[str]) -> None:
        if not lines or not _FROM_LINE.match(lines[0]):
            raise LineProblem(1, "does not start with a 'From <sha>' line; make it with git "
                                 "format-patch")
        for number, line in enumerate(lines[1:], start=2):
            self.feed(number, line)
        if self.state == "hunk":
            raise LineProblem(len(lines), "ends inside a hunk (the patch is truncated)")
        self.end_message()

    def feed(self, n: int, line: str) -> None:
        if self.state == "hunk":
            self.hunk_line(n, line)
        elif _FROM_LINE.match(line) and self.state != "headers":
            self.end_message()
            self.msg_line, self.state = n, "headers"
            self.has_from, self.subject, self.diffs = False, None, 0
        elif self.state == "headers" and line:
            self.headers.append(line)
        elif self.state == "headers":
            self.state = "body"
            self.read_headers()
        elif line.startswith("diff --git "):
            self.start_section(n, line)
        elif self.state == "body":
            pass
        elif line == "-- ":
            self.end_section()
            self.state = "trailer"
        elif self.state == "diff":
            self.diff_line(n, line)
        # "binary" and "trailer": skip until the next section or message

    def read_headers(self) -> None:
        """``From:`` and ``Subject:`` (the first message's ``From:`` is the patch's author)."""
        text, self.headers = "\n".join(self.headers) + "\n\n", []
        message = email.message_from_string(text, policy=email.policy.default)
        self.has_from = "From" in message
        self.subject = None if message["Subject"] is None else str(message["Subject"]).strip()
        if self.has_from and not self.subjects:
            self.author = _author(message)

    def end_message(self) -> None:
        self.end_section()
        if self.state == "headers":
            self.read_headers()
        if not self.has_from:
            raise LineProblem(self.msg_line, "has no 'From:' header; make it with git format-patch")
        if self.subject is None:
            raise LineProblem(self.msg_line, "has no 'Subject:' header; make it with git "
                                             "format-patch")
        if self.diffs == 0:
            raise LineProblem(self.msg_line, "contains no diff (a cover letter or an empty "
                                             "commit?)")
        self.subjects.append(re.sub(r"^\[PATCH[^\]]*\]\s*", "", self.subject))

    def start_section(self, n: int, line: str) -> None:
        self.end_section()
        self.diffs += 1
        self.state = "diff"
        self.section = _Section(n)
        try:
            names = _diff_git_names(line[len("diff --git ") :])
        except ValueError as exc:
            raise LineProblem(n, f"has a bad diff header: {exc}") from None
        if names:
            self.section.names += [(names[0], n), (names[1], n)]
            self.section.new_name = names[1]

    def diff_line(self, n: int, line: str) -> None:
        sec = self.section
        assert sec is not None
        try:
            if line.startswith("@@"):
                if not (m := _HUNK.match(line)):
                    raise ValueError("malformed hunk header")
                self.old = int(m.group(2) or 1)
                self.new = int(m.group(4) or 1)
                sec.hunks.append((int(m.group(1)), []))
                self.state = "hunk" if self.old or self.new else "diff"
            elif line.startswith(("--- ", "+++ ")):
                name = _name(line[4:])
                if name != "/dev/null":
                    name = _strip_prefix(name, "a/" if line[0] == "-" else "b/")
                    sec.names.append((name, n))
                    if line[0] == "-":
                        sec.old_path = name
                    if line[0] == "+":
                        sec.new_name = name
                elif line[0] == "+":
                    sec.new_name = None
            elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
                _kind, direction, rest = line.split(" ", 2)
                name = _name(rest)
                sec.names.append((name, n))
                if direction == "to":
                    sec.new_name = name
            elif m := re.match(r"(?:new file mode|new mode) ([0-7]{6})$", line):
                sec.symlink = sec.symlink or m.group(1) == SYMLINK_MODE
                sec.created = sec.created or line.startswith("new file mode")
            elif m := _INDEX_LINE.match(line):
                sec.symlink = sec.symlink or m.group("mode") == SYMLINK_MODE
                if m.group("old").strip("0"):
                    sec.old_blob = m.group("old")
            elif line == "GIT binary patch" or line.startswith("Binary files "):
                sec.binary = True
                self.state = "binary" if line == "GIT binary patch" else self.state
        except ValueError as exc:
            raise LineProblem(n, f"has a bad diff line: {exc}") from None

    def hunk_line(self, n: int, line: str) -> None:
        tag = line[:1]
        if tag == "\\":  # "\ No newline at end of file"
            return
        if tag not in (" ", "", "-", "+"):
            raise LineProblem(n, "has a hunk that ends before its header's line count (corrupt "
                                 "patch)")
        if self.section is not None and self.section.hunks:
            self.section.hunks[-1][1].append(line or " ")
        self.old -= 0 if tag == "+" else 1
        self.new -= 0 if tag == "-" else 1
        if tag == "+" and self.section is not None and self.section.symlink:
            self.section.link_target.append((line[1:], n))
        if self.old < 0 or self.new < 0:
            raise LineProblem(n, "has a hunk longer than its header's line count (corrupt patch)")
        if self.old == 0 and self.new == 0:
            self.state = "diff"

    def end_section(self) -> None:
        sec, self.section = self.section, None
        if sec is None:
            return
        if not sec.names:
            raise LineProblem(sec.line, "has a diff header whose file names cannot be read")
        hunks = tuple(Hunk(tuple(lines), start) for start, lines in sec.hunks)
        self.files.append(FileDiff(sec.old_path, hunks, sec.binary, sec.new_name, sec.old_blob,
                                   sec.created))
        for name, n in sec.names:
            if problem := repo_path_problem(name):
                raise LineProblem(n, f"touches '{name}', which {problem}")
            self.paths.setdefault(repo_path(name))
        if sec.old_blob:
            self.preimages[repo_path(sec.names[0][0])] = sec.old_blob
        if sec.symlink and sec.link_target and sec.new_name:
            target, n = sec.link_target[-1]
            self.check_link(sec.new_name, target, n)

    @staticmethod
    def check_link(link: str, target: str, n: int) -> None:
        if target.startswith("/"):
            raise LineProblem(n, f"makes the symbolic link '{link}' point to the absolute path "
                                 f"'{target}'")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
        if resolved == ".." or resolved.startswith("../"):
            raise LineProblem(n, f"makes the symbolic link '{link}' point outside the repository")
        if any(p.lower().rstrip(". ") == ".git" for p in resolved.split("/")):
            raise LineProblem(n, f"makes the symbolic link '{link}' point into .git")


def read_patch(path: Path) -> Patch:
    """Read and check one ``NNNN-*.patch`` file; raises ``ConfigError`` naming the file and line."""
    data = read_bytes(path, MAX_PATCH_BYTES)
    if not data.strip():
        raise config_error(f"{display_path(path)} is empty")
    return parse_patch(data, path)


def parse_patch(data: bytes, path: Path) -> Patch:
    """The `Patch` of a format-patch file's bytes; ``ConfigError`` naming file and line."""
    parser = _Parser()
    try:
        parser.parse(_lines(data.decode("utf-8", "surrogateescape")))
    except LineProblem as exc:
        raise config_error(f"{display_path(path)}:{exc.line}: {exc.message}") from None
    return Patch(path, data, tuple(parser.subjects), parser.author, tuple(sorted(parser.paths)),
                 dict(parser.preimages), tuple(parser.files))


def _lines(text: str) -> list[str]:
    return [line.removesuffix("\r") for line in text.removesuffix("\n").split("\n")]


def read_diff(text: str) -> Patch:
    """Paths and pre-image blobs of a format-patch or plain ``git diff`` text, up to a problem."""
    lines = _lines(text)
    parser = _Parser()
    try:
        if lines and _FROM_LINE.match(lines[0]):
            parser.parse(lines)
        else:
            parser.state = "body"  # no mail headers: diff sections only
            for number, line in enumerate(lines, start=1):
                parser.feed(number, line)
            parser.end_section()
    except LineProblem:
        with contextlib.suppress(LineProblem):
            parser.end_section()
    return Patch(Path("patch"), paths=tuple(sorted(parser.paths)), preimages=parser.preimages)


def _author(message: email.message.Message) -> tuple[str, str] | None:
    """(name, email) of a message's ``From:`` header, when it names an address."""
    try:
        name, addr = email.utils.parseaddr(str(message["From"]))
    except (ValueError, IndexError, TypeError):
        return None
    return (name or addr.split("@", 1)[0], addr) if "@" in addr else None
