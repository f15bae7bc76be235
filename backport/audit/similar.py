"""The similar-title rule: the same fix opened by hand on another branch under its title written
again ("fix batcnnorm check" / "fix batchnorm check"): a target's commit whose title, branch tags
removed, is `RATIO` alike (``difflib``), differs by a word or a typo, and shares a file (not a
test, where the change has one); a too general title is not compared. Asked of the cells still
`missing` or `not-needed` before the content rule; the most alike wins, then the oldest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from difflib import SequenceMatcher

from backport.audit.model import BY_SIMILAR, LANDED, MISSING, NOT_NEEDED, Cell, Change
from backport.audit.rules import is_test_path

RATIO = 0.85  # how alike two titles (branch tags removed) must be
SHORTEST = 12  # characters a title (tags removed) must have to be compared so
LONG_WORD = 12  # characters of a word that makes a short title specific
TYPO = 3  # characters two titles may differ by (else the words of one are among the other's)


class TitleIndex:
    """A target's first-parent commits by the files they touch: (title key, commit) of each."""

    def __init__(self, commits: Sequence[tuple[str, str, Sequence[str]]]) -> None:
        """``commits``: (commit, title key, its files), oldest first."""
        self.by_file: dict[str, list[tuple[str, str]]] = {}
        for sha, key, files in commits:
            for path in files:
                self.by_file.setdefault(path, []).append((key, sha))

    def alike(self, key: str, files: Sequence[str], commit: str) -> str:
        """The commit with a title alike ``key`` and a file among ``files`` ("" for none)."""
        words = key.split()  # four words or more, or an identifier
        if len(key) < SHORTEST or (len(words) < 4 and all(len(w) < LONG_WORD for w in words)):
            return ""
        code = [path for path in files if not is_test_path(path)]
        files = code or files  # a file in common other than a test, where it has one
        seen: set[str] = {commit}
        matcher = SequenceMatcher(None, "", key, autojunk=False)
        best, found = RATIO, ""
        for path in files:
            for theirs, sha in self.by_file.get(path, ()):
                if sha in seen or len(theirs) < SHORTEST:
                    continue
                seen.add(sha)
                matcher.set_seq1(theirs)
                if (matcher.real_quick_ratio() >= best and matcher.quick_ratio() >= best
                        and (ratio := matcher.ratio()) >= best and (ratio > best or not found)
                        and _written_again(theirs, key, matcher)):
                    best, found = ratio, sha
        return found


def _written_again(one: str, other: str, matcher: SequenceMatcher[str]) -> bool:
    """One title written again, not two fixes alike: the words of one among the other's, or at
    most `TYPO` characters apart ("batcnnorm" / "batchnorm"; not "op_alpha" / "op_beta")."""
    mine, theirs = set(one.split()), set(other.split())
    if mine <= theirs or theirs <= mine:
        return True
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
               if tag != "equal") <= TYPO


def decide(indexes: Mapping[str, TitleIndex], keys: Mapping[str, str],
           files: Mapping[str, Sequence[str]], changes: Sequence[Change]) -> None:
    """Make each `missing` or `not-needed` cell `landed` where a commit of its target has a
    title alike (``keys``: commit -> title key; ``files``: commit -> files)."""
    for change in changes:
        for target, cell in change.on.items():
            if cell.state in (MISSING, NOT_NEEDED) and target in indexes:
                found = indexes[target].alike(keys.get(change.commit, ""),
                                              files.get(change.commit, ()), change.commit)
                if found:
                    change.on[target] = Cell(LANDED, commit=found, why=BY_SIMILAR)
