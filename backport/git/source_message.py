"""The message of a backport made from a merged PR: the change's own words, not GitCode's.

GitCode's squash merge writes the PR's own commit message, then a block it generates
(``# message auto-generated for no-merge-commit merge:``, ``!N merge X into Y``, the title
again, ``Created-by:``, ``Merged-by:``, the whole PR description after ``Description:``,
``See merge request: …!N``). A backport carries the PR's title as its subject, the change's
own message under it, and where it comes from: the source PR and git's ``(cherry picked from
commit <sha>)`` line. Author and date stay the source commit's (:func:`restate`).
"""

from __future__ import annotations

import re
from pathlib import Path

from backport.git.run import git

GENERATED = "# message auto-generated for no-merge-commit merge:"
_TRAILER = re.compile(r"^See merge request: \S+!\d+\s*$")
# A line in one of this tool's trailer forms: only the tool writes them in a backport.
_TOOL_FORM = re.compile(r"^\s*(?:Backport of \S*!\S*|\(cherry picked from commit \S*\))\s*$")


def one_line(text: str) -> str:
    """``text`` (a title from outside) as one line: whitespace and control characters folded."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def own_message(message: str) -> str:
    """The part of a commit message its author wrote: everything before GitCode's generated
    block (the whole message when it has none, less a ``See merge request:`` line)."""
    own = message.split(GENERATED, 1)[0]
    lines = [line.rstrip() for line in own.splitlines() if not _TRAILER.match(line)]
    return "\n".join(lines).strip()


def backport_message(message: str, *, title: str, sha: str, source_ref: str) -> str:
    """The message of the backport of ``sha`` (a squash commit whose message is ``message``)
    from PR ``source_ref`` (``Ascend/pytorch!N``) titled ``title``. The author's lines that
    take the tool's trailer forms (``Backport of …!N.``, ``(cherry picked from commit …)``)
    are left out: the only trailer in the tool's place is the tool's."""
    own = "\n".join(line for line in own_message(message).splitlines()
                    if not _TOOL_FORM.match(line)).strip()
    subject, _, rest = own.partition("\n")
    heading = one_line(title) or one_line(subject) or f"Backport of {source_ref}"
    body = rest.strip() if one_line(subject) == heading else own
    parts = [heading, body] if body else [heading]
    parts.append(f"Backport of {source_ref}.\n(cherry picked from commit {sha})")
    return "\n\n".join(parts) + "\n"


def restate(repo: Path, sha: str, message: str) -> str:
    """A commit of ``repo`` with ``sha``'s tree, parent, author and date and ``message`` (on no
    branch: only its patch is exported); its sha, the same on every host."""
    fields = git(["log", "-1", "--date=raw", "--format=%an%x00%ae%x00%ad", sha],
                 cwd=repo).stdout.rstrip("\n").split("\x00")
    name, email, date = fields
    # The committer is the author too: no identity of this machine is needed (a CI runner
    # has none) or shown, and every host restates the commit to the same sha.
    env = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER")
           for what, value in (("NAME", name), ("EMAIL", email), ("DATE", date))}
    out = git(["commit-tree", f"{sha}^{{tree}}", "-p", f"{sha}^", "-F", "-"], cwd=repo,
              env=env, stdin=message.encode("utf-8"))
    return out.stdout.strip()


def message_of(repo: Path, sha: str) -> str:
    return git(["log", "-1", "--format=%B", sha], cwd=repo).stdout
