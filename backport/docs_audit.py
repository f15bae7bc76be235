"""The docs audit: which ``docs/zh/api/native_api/pytorch_<x-y-z>/`` versions list an API, and
its support table there, read from git objects (never a checkout: a blobless cache works). The
PR body reads it through `report.body.DocsFacts` (report/ does not import this module)."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from rich.console import Console
from rich.table import Column, Table

from backport.errors import BackportError
from backport.git.run import git, read_blobs

DOCS_ROOT = "docs/zh/api/native_api"
_VERSION_DIR = re.compile(r"^pytorch_(?P<v>[0-9][0-9A-Za-z-]*)$")
_HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<text>.*?)\s*#*\s*$")
_TAG = re.compile(r"<[^>]+>")
_NATIVE_LINK = re.compile(r"\*\*原生文档\*\*\s*[：:]\s*\[(?P<name>[^\]]+)\]")
_LIMITS = re.compile(r"^\*\*限制与说明\*\*\s*[：:]\s*(?P<text>.*)$")
_SEPARATOR_CELL = re.compile(r"^:?-{2,}:?$")

YES = "✔"
NO = "✘"
_YES_MARKS = frozenset({"✔", "✓", "√", "☑", "yes", "y", "是", "支持", "true"})
_NO_MARKS = frozenset({"✘", "✗", "×", "x", "no", "n", "否", "不支持", "false"})


class SupportRow(NamedTuple):
    """One row of a support table: hardware, its mark (✔, ✘ or the cell's text), other cells."""

    hardware: str
    mark: str
    note: str = ""

    @property
    def supported(self) -> bool | None:
        return True if self.mark == YES else False if self.mark == NO else None


@dataclass
class DocsEntry:
    """What one docs version says about one API."""

    version: str  # "2.7.1"
    path: str  # the file holding the entry (where there is none: the file it would be in)
    listed: bool
    support: list[SupportRow] = field(default_factory=list)
    summary: str = ""  # e.g. "是，暂不支持 Ascend 950DT"
    limits: str = ""  # the "限制与说明" text, if any

    def to_dict(self) -> dict:
        return {**asdict(self), "support": [{**row._asdict(), "supported": row.supported}
                                            for row in self.support]}


_FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def _resolve(repo: Path, ref: str) -> str:
    if _FULL_ID.fullmatch(ref):  # a commit id a caller read already: no git asked
        return ref
    out = git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
              cwd=repo, check=False)
    if not out.ok:
        raise BackportError("git", f"Ref {ref!r} does not name a commit in {repo}.")
    return out.stdout.strip()


def _docs_files(repo: Path, sha: str) -> dict[str, dict[str, str]]:
    """version folder -> {path: blob} of every ``.md`` file under the docs root."""
    out = git(["ls-tree", "-r", "-z", sha, "--", f"{DOCS_ROOT}/"], cwd=repo)
    found: dict[str, dict[str, str]] = {}
    for record in out.raw.split(b"\0"):
        meta, _, raw_path = record.partition(b"\t")
        path = raw_path.decode("utf-8", "surrogateescape")
        parts = PurePosixPath(path).relative_to(DOCS_ROOT).parts if path else ()
        if (len(parts) >= 2 and meta.split()[1] == b"blob" and path.endswith(".md")
                and _VERSION_DIR.match(parts[0])):
            found.setdefault(parts[0], {})[path] = meta.split()[2].decode()
    return found


def _missing_blobs(repo: Path, sha: str) -> set[str]:
    """Blobs under the docs root a partial clone has not fetched yet (none is fetched)."""
    out = git(["rev-list", "--objects", "--missing=print", f"{sha}:{DOCS_ROOT}"], cwd=repo,
              check=False)
    return {line[1:].split()[0] for line in out.stdout.splitlines() if line.startswith("?")}


def _prefetch(repo: Path, oids: Sequence[str]) -> None:
    """Fetch ``oids`` from the promisor remote in one request (best effort: ``cat-file`` still
    fetches each itself, or finds it missing)."""
    out = git(["config", "--get-regexp", r"^remote\..*\.promisor$"], cwd=repo, check=False)
    remote = next((key[len("remote."):-len(".promisor")] for key, _, value in
                   (line.partition(" ") for line in out.stdout.splitlines())
                   if value.lower() in ("true", "1", "yes", "on")), None)
    if oids and remote:
        git(["-c", "fetch.negotiationAlgorithm=noop", "fetch", "--quiet", "--no-tags",
             "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin",
             "--", remote], cwd=repo, stdin="".join(f"{o}\n" for o in oids).encode(),
            check=False)


def version_of(dir_name: str) -> str:
    """``pytorch_2-7-1`` -> ``2.7.1``."""
    return dir_name.removeprefix("pytorch_").replace("-", ".")


def version_key(version: str) -> tuple:
    """Numeric sort key: 2.10.0 sorts after 2.9.0; non-numeric parts sort after numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"[.\-]", version))


def preferred_files(api: str) -> list[str]:
    """File names the API would live in, most specific first (``torch-distributed-elastic.md``…)."""
    parts = api.split(".")
    return ["-".join(parts[:n]) + ".md" for n in range(len(parts) - 1, 0, -1)]


def clean_cell(text: str) -> str:
    """Decode HTML entities, drop tags and collapse whitespace."""
    text = html.unescape(_TAG.sub(" ", text))
    return " ".join(text.replace("\u00a0", " ").split())


def normalise_mark(text: str) -> str:
    """Map the many spellings of yes/no to ✔ / ✘; anything else is returned decoded."""
    cell = clean_cell(text)
    return YES if cell.lower() in _YES_MARKS else NO if cell.lower() in _NO_MARKS else cell


def _heading_name(text: str) -> str:
    return clean_cell(text).strip("`").strip().removeprefix("class ").split("(", 1)[0].strip()


def find_section(text: str, api: str) -> list[str] | None:
    """Lines of the entry documenting ``api`` (None: none): from a heading naming it
    (``### torch.x.y``, ``### <code><i>class</i></code> torch.x.Y``) or, for a member listed
    under a class, a ``**原生文档**：[torch.x.Y.m](…)`` line, to the next heading or member."""
    lines = text.splitlines()
    start = next((i + 1 for i, line in enumerate(lines)
                  if (m := _HEADING.match(line)) and _heading_name(m["text"]) == api), None)
    if start is None:
        start = next((i for i, line in enumerate(lines)
                      if (m := _NATIVE_LINK.search(line)) and clean_cell(m["name"]) == api), None)
    if start is None:
        return None
    end = start
    while end < len(lines) and not (_HEADING.match(lines[end].lstrip())
                                    or lines[end].lstrip().startswith("> <font")):
        end += 1
    return lines[start:end]


def _split_row(line: str) -> list[str]:
    body = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def parse_support(section: Sequence[str]) -> tuple[list[SupportRow], str]:
    """The first 硬件 / 是否支持 table of a section, and its 限制与说明 text."""
    limits = [clean_cell(m["text"]) for m in map(_LIMITS.match, (x.strip() for x in section)) if m]
    rows: list[SupportRow] = []
    header: list[str] | None = None
    for line in section:
        is_row = line.strip().startswith("|")
        if header is None:
            cells = _split_row(line) if is_row else []
            if any("硬件" in clean_cell(c) for c in cells):
                header = [clean_cell(c) for c in cells]
            continue
        if not is_row:
            break  # the table ended; only the first support table counts
        cells = _split_row(line)
        if all(_SEPARATOR_CELL.match(c.replace(" ", "")) for c in cells if c):
            continue
        hw_col = next((i for i, h in enumerate(header) if "硬件" in h), 0)
        mark_col = next((i for i, h in enumerate(header) if "支持" in h), 1)
        cells += [""] * (max(len(header), mark_col + 1) - len(cells))
        extra = [clean_cell(c) for i, c in enumerate(cells) if i not in (hw_col, mark_col)]
        rows.append(SupportRow(clean_cell(cells[hw_col]), normalise_mark(cells[mark_col]),
                               "; ".join(filter(None, extra))))
    return rows, " ".join(limits)


def summarize(support: Sequence[SupportRow]) -> str:
    """One phrase in the docs' own words for a listed entry: 是 / 否 / 是，暂不支持 X、Y."""
    if not support:
        return "已收录，无支持表"
    yes = [r.hardware for r in support if r.supported]
    no = [r.hardware for r in support if r.supported is False]
    other = [f"{r.hardware}: {r.mark}" for r in support if r.supported is None]
    if yes:
        text = "是，暂不支持 " + "、".join(no) if no else "是"
    else:
        text = "否" if no else "未知"
    return text + ("（" + "；".join(other) + "）" if other else "")


def parse_entry(text: str, api: str) -> tuple[bool, list[SupportRow], str]:
    """(listed, support rows, limits) of ``api`` in one markdown text."""
    section = find_section(text, api)
    return (True, *parse_support(section)) if section is not None else (False, [], "")


def _search(repo: Path, version: str, files: dict[str, str], paths: Sequence[str],
            api: str) -> DocsEntry | None:
    """The entry for ``api`` in the first of ``paths`` that has one (a blob missing: an error)."""
    oids = list(dict.fromkeys(files[p] for p in paths))
    texts = read_blobs(repo, oids)
    lost = next((oid for oid in oids if oid not in texts), None)
    if lost:
        raise BackportError("git", f"Blob {lost} is missing from {repo}.")
    for path in paths:
        text = texts[files[path]].decode("utf-8", "replace")
        listed, rows, limits = parse_entry(text, api)
        if listed:
            return DocsEntry(version, path, True, rows, summarize(rows), limits)
    return None


def audit_docs(repo_git_dir: Path, ref: str, api: str) -> list[DocsEntry]:
    """One entry per docs version at ``ref`` for ``api``, by version number. Files named after
    the API's module are read first, the others only when those have no entry; in a partial
    clone each of the two rounds fetches its missing blobs in one request."""
    repo = Path(repo_git_dir)
    sha = _resolve(repo, ref)
    versions = _docs_files(repo, sha)
    missing = _missing_blobs(repo, sha) if versions else set()
    names = preferred_files(api)
    rank = {name: i for i, name in enumerate(names)}
    plans: dict[str, tuple[list[str], list[str]]] = {}
    for dir_name, files in versions.items():
        ordered = sorted(files, key=lambda p: (rank.get(PurePosixPath(p).name, len(rank)), p))
        first = [p for p in ordered if PurePosixPath(p).name in rank]
        plans[dir_name] = (first, [p for p in ordered if p not in first])

    found: dict[str, DocsEntry | None] = {}
    for round_no in (0, 1):
        pending = [d for d in plans if found.get(d) is None]
        _prefetch(repo, [versions[d][p] for d in pending for p in plans[d][round_no]
                         if versions[d][p] in missing])
        for dir_name in pending:
            found[dir_name] = _search(repo, version_of(dir_name), versions[dir_name],
                                      plans[dir_name][round_no], api)

    entries = []
    for d, entry in found.items():  # not listed: the file it would be in
        default = (plans[d][0] or [f"{DOCS_ROOT}/{d}/{names[0] if names else ''}"])[0]
        entries.append(entry or DocsEntry(version_of(d), default, False, summary="未收录"))
    return sorted(entries, key=lambda e: version_key(e.version))


def render_docs_table(entries: Sequence[DocsEntry], console: Console) -> None:
    """Print a table on ``console``: one row per docs version, one column per hardware seen."""
    hardware = list(dict.fromkeys(row.hardware for entry in entries for row in entry.support))
    table = Table("version", "listed", *(Column(hw, justify="center") for hw in hardware),
                  "summary", "file")
    for entry in entries:
        marks = {r.hardware: r.mark for r in entry.support}
        table.add_row(entry.version, "yes" if entry.listed else "no",
                      *[marks.get(hw, "-") for hw in hardware], entry.summary, entry.path)
    console.print(table)
